//! The sender's clocks: when to retransmit (RFC 6298 or Linux's rules, one
//! estimator each behind `RtoEstimator`) and when to probe a silent tail.

pub mod linux_rto;
pub mod rto;
pub mod tlp;
