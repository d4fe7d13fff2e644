//! The one factory: a sender's strategies from its (negotiated) config.
//! Congestion control by registered name (`congestion::REGISTRY`), loss
//! detection and recovery by `loss_detection`/`recovery_rate`, the RTO
//! estimator by `rto_rules`; nothing else in the transport picks a variant.

use super::choice::{LossDetection, RecoveryRate, RtoRules};
use super::congestion::{self, CongestionControl};
use super::recovery::dupack::DupAckRecovery;
use super::recovery::sack::SackRecovery;
use super::recovery::Recovery;
use super::timers::linux_rto::LinuxRto;
use super::timers::rto::{Rfc6298Rto, RtoEstimator};
use super::TcpConfig;

impl TcpConfig {
    /// The loss detector this stream runs: SACK's only if both ends permit
    /// SACK (`sack` is the negotiated answer).
    pub fn loss_detection(&self) -> LossDetection {
        match (self.sack, self.rack) {
            (false, _) => LossDetection::Dupack,
            (true, false) => LossDetection::Sack,
            (true, true) => LossDetection::Rack,
        }
    }

    pub fn recovery_rate(&self) -> RecoveryRate {
        if self.prr {
            RecoveryRate::Prr
        } else {
            RecoveryRate::Rfc6675
        }
    }

    pub fn rto_rules(&self) -> RtoRules {
        if self.linux_rto {
            RtoRules::Linux
        } else {
            RtoRules::Rfc6298
        }
    }
}

/// The congestion control registered as `cfg.congestion` (Reno if the name
/// is unknown, which a parsed platform never gives).
pub fn congestion_control(cfg: &TcpConfig) -> Box<dyn CongestionControl> {
    congestion::builder(cfg.congestion).unwrap_or(congestion::reno::build)(cfg)
}

pub fn recovery(cfg: &TcpConfig) -> Box<dyn Recovery> {
    let mss = cfg.mss.max(1);
    let dupack_threshold = cfg.dupack_threshold.max(1);
    let prr = cfg.recovery_rate() == RecoveryRate::Prr;
    match cfg.loss_detection() {
        LossDetection::Dupack => Box::new(DupAckRecovery::new(dupack_threshold)),
        LossDetection::Sack => Box::new(SackRecovery::new(mss, dupack_threshold, false, prr, cfg.frto)),
        LossDetection::Rack => Box::new(SackRecovery::new(mss, dupack_threshold, true, prr, cfg.frto)),
    }
}

pub fn rto_estimator(cfg: &TcpConfig) -> Box<dyn RtoEstimator> {
    match cfg.rto_rules() {
        RtoRules::Rfc6298 => {
            Box::new(Rfc6298Rto::new(cfg.rto_min, cfg.rto_max, cfg.rto_initial, cfg.clock_granularity))
        }
        RtoRules::Linux => Box::new(LinuxRto::new(cfg.rto_min, cfg.rto_max, cfg.rto_initial, cfg.clock_granularity)),
    }
}
