//! Congestion control: how large the window is, and nothing about losses.
//!
//! A controller is told loss-agnostic events, as quinn-proto's `Controller`
//! is: bytes were acknowledged while the window may grow ([`CongestionControl::on_ack`]),
//! a congestion event happened ([`CongestionEvent`]: a loss found by ACKs, or a
//! retransmission timeout), a reduction was spurious ([`CongestionControl::on_spurious`]).
//! Which ACK is a duplicate, and how the window is inflated and deflated while
//! lost data is repaired (NewReno's dupack inflation, partial-ACK deflation,
//! the return to ssthresh), belong to loss recovery (`transport/recovery/`),
//! as ns-3 splits `TcpCongestionOps` from `TcpRecoveryOps`: recovery writes
//! the shared [`Window`] directly, as ns-3's recovery writes `m_cWnd`.
//!
//! Adding a controller is one file here and one line in [`REGISTRY`]; its
//! name is then accepted by `tcp.congestion_control` (`transport/choice.rs`).

pub mod cubic;
pub mod hystart;
pub mod reno;
#[cfg(test)]
mod toy;

use super::TcpConfig;
use crate::time::Time;
use std::fmt::Debug;

/// Builds a controller for one sender.
pub type Build = fn(&TcpConfig) -> Box<dyn CongestionControl>;

/// Every congestion control by the name a platform gives it.
pub const REGISTRY: &[(&str, Build)] = &[
    ("reno", reno::build),
    ("cubic", cubic::build),
    #[cfg(test)]
    ("toy", toy::build),
];

/// The registered name equal to `name` (a `'static` copy), if any.
pub fn registered(name: &str) -> Option<&'static str> {
    REGISTRY.iter().map(|(n, _)| *n).find(|n| *n == name)
}

/// The builder registered as `name`.
pub fn builder(name: &str) -> Option<Build> {
    REGISTRY.iter().find(|(n, _)| *n == name).map(|(_, b)| *b)
}

/// The window state every controller keeps and loss recovery may write
/// (all amounts in bytes).
#[derive(Clone, Debug)]
pub struct Window {
    pub mss: u64,
    pub cwnd: u64,
    pub ssthresh: u64,
}

impl Window {
    /// The initial window: `initial_cwnd_segments` segments, ssthresh
    /// "arbitrarily high" (RFC 5681 §3.1).
    pub fn new(mss: u64, initial_cwnd_segments: u64) -> Window {
        let mss = mss.max(1);
        Window { mss, cwnd: mss.saturating_mul(initial_cwnd_segments.max(1)), ssthresh: u64::MAX }
    }

    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Slow start with byte counting, L = 2*SMSS (RFC 3465), so that a
    /// delayed ACK still grows the window by two segments while a huge
    /// cumulative jump (after go-back-N) cannot cause a burst.
    pub fn slow_start(&mut self, acked: u64) {
        self.cwnd = self.cwnd.saturating_add(acked.min(2 * self.mss));
    }

    /// Linux's tcp_cwnd_restart(): ssthresh keeps 3/4 of the old window,
    /// cwnd halves once per idle RTO, never below the restart window
    /// min(initial window, cwnd).
    pub fn restart_after_idle(&mut self, idle_rtos: u64, restart_window: u64) {
        self.ssthresh = self.ssthresh.max(self.cwnd / 2 + self.cwnd / 4);
        let floor = restart_window.min(self.cwnd);
        let mut w = self.cwnd;
        for _ in 0..idle_rtos {
            if w <= floor {
                break;
            }
            w >>= 1;
        }
        self.cwnd = w.max(floor);
    }

    /// tcp_undo_cwnd_reduction(): cwnd back to at least `prior_cwnd`
    /// (tcp_reno_undo_cwnd(), which CUBIC uses too), ssthresh to at least
    /// `prior_ssthresh`.
    pub fn undo(&mut self, prior_cwnd: u64, prior_ssthresh: u64) {
        self.cwnd = self.cwnd.max(prior_cwnd);
        self.ssthresh = self.ssthresh.max(prior_ssthresh);
    }
}

/// Why the window must shrink.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CongestionEvent {
    /// Loss found by ACKs (fast retransmit, SACK or RACK recovery, a tail
    /// loss probe that repaired a loss) with `flight` bytes outstanding:
    /// ssthresh is set and cwnd drops to it; recovery may then inflate it.
    Loss { flight: u64 },
    /// Retransmission timeout with `flight` bytes outstanding: cwnd is one
    /// segment. `repeated`: the previous timeout's retransmission was not
    /// acked yet, so ssthresh is held (RFC 5681 §3.1).
    Timeout { flight: u64, repeated: bool },
}

/// What an ACK that advanced snd_una tells a delay-based detector (Linux's
/// `pkts_acked`, for HyStart): `rtt` is the RTT of the newest segment it
/// acked that was never retransmitted; `snd_una`, `snd_nxt` after it.
#[derive(Clone, Copy, Debug)]
pub struct RttSample {
    pub rtt: Option<Time>,
    pub snd_una: u64,
    pub snd_nxt: u64,
    pub srtt: Option<Time>,
}

/// Strategy interface for congestion control.
pub trait CongestionControl: Debug + Send + Sync {
    fn window(&self) -> &Window;
    /// Loss recovery writes the window here (inflation, deflation, exit).
    fn window_mut(&mut self) -> &mut Window;

    fn cwnd(&self) -> u64 {
        self.window().cwnd
    }

    fn ssthresh(&self) -> u64 {
        self.window().ssthresh
    }

    /// `bytes` newly acknowledged while the window may grow (not during a
    /// reduction), at `now`, with the smoothed RTT when there is one.
    fn on_ack(&mut self, now: Time, bytes: u64, srtt: Option<Time>);

    fn on_congestion_event(&mut self, now: Time, event: CongestionEvent);

    /// The last reduction turned out needless (F-RTO, the timestamp undo).
    fn on_spurious(&mut self, prior_cwnd: u64, prior_ssthresh: u64) {
        self.window_mut().undo(prior_cwnd, prior_ssthresh);
    }

    /// Data is sent after the connection was idle (nothing outstanding) for
    /// `idle_rtos` whole retransmission timeouts or more (RFC 2861 §3).
    fn on_idle_restart(&mut self, idle_rtos: u64, restart_window: u64) {
        self.window_mut().restart_after_idle(idle_rtos, restart_window);
    }

    /// True if the controller reads [`Self::on_rtt_sample`] (the sender
    /// then keeps a send log to take the samples from).
    fn wants_rtt_samples(&self) -> bool {
        false
    }

    /// Every ACK that advanced snd_una, in recovery or not, before the
    /// window is grown for it.
    fn on_rtt_sample(&mut self, _now: Time, _sample: &RttSample) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_restart_halves_per_rto_down_to_the_restart_window() {
        let mut w = Window { mss: 1000, cwnd: 40_000, ssthresh: 20_000 };
        w.restart_after_idle(1, 2000);
        assert_eq!((w.cwnd, w.ssthresh), (20_000, 30_000)); // max(ssthresh, 3/4 w)
        w.restart_after_idle(0, 2000);
        assert_eq!(w.cwnd, 20_000); // zero halvings: only ssthresh is touched
        w.restart_after_idle(30, 2000);
        assert_eq!(w.cwnd, 2000);
    }

    #[test]
    fn every_registered_name_builds_a_controller_at_the_initial_window() {
        let cfg = TcpConfig::default();
        for (name, build) in REGISTRY {
            let cc = build(&cfg);
            assert_eq!(cc.cwnd(), cfg.mss * cfg.initial_cwnd_segments, "{name}");
            assert_eq!(registered(name), Some(*name));
        }
        assert!(builder("bbr").is_none() && registered("Reno").is_none());
    }
}
