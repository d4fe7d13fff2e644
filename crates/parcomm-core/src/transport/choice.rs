//! The named strategy choices of a TCP profile, one per slot, and the rules
//! on combining them. `spec.rs` parses and checks them (`TcpSpec::choices`);
//! `strategies.rs` builds from them. Independent features (timestamps,
//! quick-ACK, tail loss probes, F-RTO) stay flags: each works with any choice.

use serde::{Deserialize, Serialize};

/// How losses are found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LossDetection {
    /// Three duplicate ACKs, NewReno partial ACKs, go-back-N after a timeout
    /// (RFC 5681, RFC 6582).
    Dupack,
    /// The RFC 6675 SACK scoreboard (the peer must permit SACK too).
    Sack,
    /// The SACK scoreboard with RACK's time-based detection (RFC 8985 §6).
    Rack,
}

/// How much may be sent while a loss is repaired (SACK recovery only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RecoveryRate {
    /// RFC 6675: cwnd - pipe.
    Rfc6675,
    /// Proportional rate reduction (RFC 6937, Linux's tcp_cwnd_reduction()).
    Prr,
}

/// How the retransmission timeout is computed and sampled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RtoRules {
    /// RFC 6298 with BSD timing (one timed segment per round trip).
    Rfc6298,
    /// Linux's tcp_rtt_estimator()/__tcp_set_rto(), a sample per advancing ACK.
    Linux,
}

/// One choice per slot, checked: what a host's transport is built from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpChoices {
    /// A name of `congestion::REGISTRY`.
    pub congestion: &'static str,
    /// CUBIC's HyStart.
    pub hystart: bool,
    pub loss_detection: LossDetection,
    pub recovery_rate: RecoveryRate,
    pub rto_rules: RtoRules,
}

impl Default for TcpChoices {
    /// The RFC transport: Reno, duplicate ACKs, RFC 6675's rate, RFC 6298.
    fn default() -> Self {
        TcpChoices {
            congestion: "reno",
            hystart: false,
            loss_detection: LossDetection::Dupack,
            recovery_rate: RecoveryRate::Rfc6675,
            rto_rules: RtoRules::Rfc6298,
        }
    }
}

/// A choice as a platform writes it, quoted (`"rack"`), for messages.
pub fn quoted<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}
