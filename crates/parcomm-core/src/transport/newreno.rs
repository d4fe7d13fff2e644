//! Congestion control: the window side of loss recovery.
//!
//! The sender decides *when* something happened (new ACK, third dupack,
//! partial/full ACK, timeout) and does the retransmitting; a
//! [`CongestionControl`] only decides what that does to the window.

use crate::time::Time;
use std::fmt::Debug;

/// Strategy interface for congestion control. All amounts are in bytes.
pub trait CongestionControl: Debug + Send + Sync {
    fn cwnd(&self) -> u64;
    fn ssthresh(&self) -> u64;
    /// An ACK of `acked` new bytes outside fast recovery.
    fn on_ack(&mut self, acked: u64);
    /// The same, told the time and the smoothed RTT (for window growth that
    /// depends on time, as CUBIC's); the default ignores both.
    fn on_ack_at(&mut self, acked: u64, _now: Time, _srtt: Option<Time>) {
        self.on_ack(acked);
    }
    /// Fast retransmit: entering fast recovery with `flight` bytes outstanding.
    fn on_enter_recovery(&mut self, flight: u64);
    /// Entering SACK loss recovery (RFC 6675) with `flight` bytes
    /// outstanding. The sender limits itself by `pipe`, so the window is
    /// reduced without fast-recovery inflation, and neither dupacks nor
    /// partial ACKs change it until [`Self::on_exit_recovery`].
    fn on_enter_sack_recovery(&mut self, flight: u64);
    /// A further duplicate ACK while in fast recovery.
    fn on_recovery_dupack(&mut self);
    /// An ACK of `acked` new bytes that does not yet cover `recover`.
    fn on_partial_ack(&mut self, acked: u64);
    /// An ACK covering `recover`: fast recovery is over.
    fn on_exit_recovery(&mut self);
    /// Retransmission timeout with `flight` bytes outstanding. `repeated` is
    /// true when the previous timeout's retransmission was not acked yet.
    fn on_timeout(&mut self, flight: u64, repeated: bool);
    /// Data is sent after the connection was idle (nothing outstanding) for
    /// `idle_rtos` whole retransmission timeouts or more (RFC 2861 §3).
    fn on_idle_restart(&mut self, idle_rtos: u64, restart_window: u64);
    /// A reduction turned out needless (Linux's tcp_undo_cwnd_reduction()):
    /// cwnd back to at least `prior_cwnd` (tcp_reno_undo_cwnd(), which
    /// CUBIC uses too) and ssthresh to at least `prior_ssthresh`.
    fn undo_reduction(&mut self, prior_cwnd: u64, prior_ssthresh: u64);
    /// Linux's `pkts_acked` hook, on an ACK that advanced snd_una: `rtt` is
    /// the RTT of the newest segment it acked that was never retransmitted
    /// (the ACK sample's `rtt_us`), `snd_una` and `snd_nxt` after it. For
    /// HyStart; the default ignores it.
    fn on_acked_sample(&mut self, _now: Time, _rtt: Option<Time>, _snd_una: u64, _snd_nxt: u64, _srtt: Option<Time>) {}
}

/// tcp_undo_cwnd_reduction() on a (cwnd, ssthresh) pair (shared with CUBIC).
pub(super) fn undo(cwnd: u64, ssthresh: u64, prior_cwnd: u64, prior_ssthresh: u64) -> (u64, u64) {
    (cwnd.max(prior_cwnd), ssthresh.max(prior_ssthresh))
}

/// RFC 6582 §3.2 step 3, the partial-ACK deflation (shared with CUBIC): minus
/// the newly acked amount, plus one MSS if at least one MSS was acked.
pub(super) fn deflate_on_partial_ack(cwnd: u64, acked: u64, mss: u64) -> u64 {
    let mut cwnd = cwnd.saturating_sub(acked);
    if acked >= mss {
        cwnd += mss;
    }
    cwnd.max(mss)
}

/// Linux's tcp_cwnd_restart() (shared with CUBIC): ssthresh keeps 3/4 of the
/// old window, cwnd halves once per idle RTO, never below the restart
/// window min(initial window, cwnd). Returns (cwnd, ssthresh).
pub(super) fn restart_after_idle(cwnd: u64, ssthresh: u64, idle_rtos: u64, restart_window: u64) -> (u64, u64) {
    let ssthresh = ssthresh.max(cwnd / 2 + cwnd / 4);
    let floor = restart_window.min(cwnd);
    let mut w = cwnd;
    for _ in 0..idle_rtos {
        if w <= floor {
            break;
        }
        w >>= 1;
    }
    (w.max(floor), ssthresh)
}

/// NewReno: RFC 5681 slow start / congestion avoidance / fast recovery with
/// the RFC 6582 partial-ACK rules.
#[derive(Clone, Debug)]
pub struct NewReno {
    mss: u64,
    cwnd: u64,
    ssthresh: u64,
}

impl NewReno {
    pub fn new(mss: u64, initial_cwnd_segments: u64) -> Self {
        let mss = mss.max(1);
        NewReno {
            mss,
            cwnd: mss.saturating_mul(initial_cwnd_segments.max(1)),
            ssthresh: u64::MAX, // "arbitrarily high" (RFC 5681 §3.1)
        }
    }

    /// RFC 5681 eq. (4).
    fn halve(&mut self, flight: u64) {
        self.ssthresh = (flight / 2).max(2 * self.mss);
    }
}

impl CongestionControl for NewReno {
    fn cwnd(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn on_ack(&mut self, acked: u64) {
        let inc = if self.cwnd < self.ssthresh {
            // Slow start with byte counting, L = 2*SMSS (RFC 3465) so that
            // a delayed ACK still grows the window by two segments while a
            // huge cumulative jump (after go-back-N) cannot cause a burst.
            acked.min(2 * self.mss)
        } else {
            // Congestion avoidance: about one MSS per window of ACKs.
            (self.mss * self.mss / self.cwnd).max(1)
        };
        self.cwnd = self.cwnd.saturating_add(inc);
    }

    fn on_enter_recovery(&mut self, flight: u64) {
        self.halve(flight);
        // Inflate by the three segments that left the network (the dupacks).
        self.cwnd = self.ssthresh + 3 * self.mss;
    }

    fn on_enter_sack_recovery(&mut self, flight: u64) {
        // RFC 6675 §5 step (4.2): cwnd = ssthresh = FlightSize / 2.
        self.halve(flight);
        self.cwnd = self.ssthresh;
    }

    fn on_recovery_dupack(&mut self) {
        self.cwnd = self.cwnd.saturating_add(self.mss);
    }

    fn on_partial_ack(&mut self, acked: u64) {
        self.cwnd = deflate_on_partial_ack(self.cwnd, acked, self.mss);
    }

    fn on_exit_recovery(&mut self) {
        self.cwnd = self.ssthresh;
    }

    fn on_timeout(&mut self, flight: u64, repeated: bool) {
        // RFC 5681 §3.1: ssthresh is held constant when the retransmission
        // itself timed out again.
        if !repeated {
            self.halve(flight);
        }
        self.cwnd = self.mss; // loss window
    }

    fn on_idle_restart(&mut self, idle_rtos: u64, restart_window: u64) {
        (self.cwnd, self.ssthresh) = restart_after_idle(self.cwnd, self.ssthresh, idle_rtos, restart_window);
    }

    fn undo_reduction(&mut self, prior_cwnd: u64, prior_ssthresh: u64) {
        (self.cwnd, self.ssthresh) = undo(self.cwnd, self.ssthresh, prior_cwnd, prior_ssthresh);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_restart_halves_per_rto_down_to_the_restart_window() {
        let mut cc = NewReno::new(1000, 2);
        cc.on_timeout(40_000, false); // ssthresh 20000
        for _ in 0..40 {
            cc.on_ack(1000);
        }
        let w = cc.cwnd();
        assert!(w > 20_000);
        cc.on_idle_restart(1, 2000);
        assert_eq!((cc.cwnd(), cc.ssthresh()), (w / 2, 20_000)); // max(ssthresh, 3/4 w)
        cc.on_idle_restart(0, 2000);
        assert_eq!(cc.cwnd(), w / 2); // zero halvings: only ssthresh is touched
        cc.on_idle_restart(30, 2000);
        assert_eq!(cc.cwnd(), 2000);
    }

    #[test]
    fn slow_start_then_avoidance() {
        let mut cc = NewReno::new(1000, 2);
        assert_eq!(cc.cwnd(), 2000);
        cc.on_ack(1000);
        assert_eq!(cc.cwnd(), 3000);
        cc.on_ack(5000); // byte counting capped at 2 MSS
        assert_eq!(cc.cwnd(), 5000);
        cc.on_timeout(20_000, false);
        assert_eq!((cc.cwnd(), cc.ssthresh()), (1000, 10_000));
        cc.on_timeout(1000, true); // repeated: ssthresh held
        assert_eq!((cc.cwnd(), cc.ssthresh()), (1000, 10_000));
        while cc.cwnd() < cc.ssthresh() {
            cc.on_ack(1000);
        }
        assert_eq!(cc.cwnd(), 10_000);
        cc.on_ack(1000); // CA: mss*mss/cwnd = 100
        assert_eq!(cc.cwnd(), 10_100);
    }

    #[test]
    fn avoidance_increment_is_at_least_one_byte() {
        let mut cc = NewReno::new(10, 1);
        cc.on_timeout(20, false); // ssthresh = 2*mss = 20
        cc.cwnd = 1000;
        cc.on_ack(10);
        assert_eq!(cc.cwnd(), 1001);
    }

    #[test]
    fn fast_recovery_cycle() {
        let mut cc = NewReno::new(1000, 10);
        cc.on_enter_recovery(40_000);
        assert_eq!((cc.cwnd(), cc.ssthresh()), (23_000, 20_000));
        cc.on_recovery_dupack();
        assert_eq!(cc.cwnd(), 24_000);
        cc.on_partial_ack(5000); // 24000 - 5000 + 1000
        assert_eq!(cc.cwnd(), 20_000);
        cc.on_partial_ack(500); // no add-back below one MSS
        assert_eq!(cc.cwnd(), 19_500);
        cc.on_exit_recovery();
        assert_eq!(cc.cwnd(), 20_000);
        // Small flight: ssthresh floor of 2 MSS.
        cc.on_enter_recovery(1000);
        assert_eq!(cc.ssthresh(), 2000);
        cc.on_partial_ack(1_000_000);
        assert_eq!(cc.cwnd(), 1000);
    }

    #[test]
    fn sack_recovery_halves_without_inflation() {
        let mut cc = NewReno::new(1000, 10);
        cc.on_enter_sack_recovery(40_000);
        assert_eq!((cc.cwnd(), cc.ssthresh()), (20_000, 20_000));
        cc.on_exit_recovery();
        assert_eq!(cc.cwnd(), 20_000);
        cc.on_enter_sack_recovery(1000);
        assert_eq!((cc.cwnd(), cc.ssthresh()), (2000, 2000));
    }
}
