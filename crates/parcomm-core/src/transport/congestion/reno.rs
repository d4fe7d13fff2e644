//! Reno window growth and reduction (RFC 5681 §3.1): slow start with byte
//! counting, congestion avoidance of about one segment per window, halving
//! on loss. NewReno's recovery rules (RFC 6582) are loss recovery's
//! (`recovery/dupack.rs`), so this controller serves every recovery.

use super::{CongestionControl, CongestionEvent, Window};
use crate::time::Time;
use crate::transport::TcpConfig;

pub fn build(cfg: &TcpConfig) -> Box<dyn CongestionControl> {
    Box::new(Reno::new(cfg.mss, cfg.initial_cwnd_segments))
}

#[derive(Clone, Debug)]
pub struct Reno {
    w: Window,
}

impl Reno {
    pub fn new(mss: u64, initial_cwnd_segments: u64) -> Self {
        Reno { w: Window::new(mss, initial_cwnd_segments) }
    }

    /// RFC 5681 eq. (4).
    fn halve(&mut self, flight: u64) {
        self.w.ssthresh = (flight / 2).max(2 * self.w.mss);
    }
}

impl CongestionControl for Reno {
    fn window(&self) -> &Window {
        &self.w
    }

    fn window_mut(&mut self) -> &mut Window {
        &mut self.w
    }

    fn on_ack(&mut self, _now: Time, bytes: u64, _srtt: Option<Time>) {
        if self.w.in_slow_start() {
            self.w.slow_start(bytes);
        } else {
            // Congestion avoidance: about one MSS per window of ACKs.
            let inc = (self.w.mss * self.w.mss / self.w.cwnd).max(1);
            self.w.cwnd = self.w.cwnd.saturating_add(inc);
        }
    }

    fn on_congestion_event(&mut self, _now: Time, event: CongestionEvent) {
        match event {
            CongestionEvent::Loss { flight } => {
                self.halve(flight);
                self.w.cwnd = self.w.ssthresh;
            }
            CongestionEvent::Timeout { flight, repeated } => {
                if !repeated {
                    self.halve(flight);
                }
                self.w.cwnd = self.w.mss; // loss window
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timeout(cc: &mut Reno, flight: u64, repeated: bool) {
        cc.on_congestion_event(0, CongestionEvent::Timeout { flight, repeated });
    }

    #[test]
    fn slow_start_then_avoidance() {
        let mut cc = Reno::new(1000, 2);
        assert_eq!(cc.cwnd(), 2000);
        cc.on_ack(0, 1000, None);
        assert_eq!(cc.cwnd(), 3000);
        cc.on_ack(0, 5000, None); // byte counting capped at 2 MSS
        assert_eq!(cc.cwnd(), 5000);
        timeout(&mut cc, 20_000, false);
        assert_eq!((cc.cwnd(), cc.ssthresh()), (1000, 10_000));
        timeout(&mut cc, 1000, true); // repeated: ssthresh held
        assert_eq!((cc.cwnd(), cc.ssthresh()), (1000, 10_000));
        while cc.cwnd() < cc.ssthresh() {
            cc.on_ack(0, 1000, None);
        }
        assert_eq!(cc.cwnd(), 10_000);
        cc.on_ack(0, 1000, None); // CA: mss*mss/cwnd = 100
        assert_eq!(cc.cwnd(), 10_100);
    }

    #[test]
    fn avoidance_increment_is_at_least_one_byte() {
        let mut cc = Reno::new(10, 1);
        timeout(&mut cc, 20, false); // ssthresh = 2*mss = 20
        cc.w.cwnd = 1000;
        cc.on_ack(0, 10, None);
        assert_eq!(cc.cwnd(), 1001);
    }

    #[test]
    fn a_loss_halves_the_flight_with_a_floor_of_two_segments() {
        let mut cc = Reno::new(1000, 10);
        cc.on_congestion_event(0, CongestionEvent::Loss { flight: 40_000 });
        assert_eq!((cc.cwnd(), cc.ssthresh()), (20_000, 20_000));
        cc.on_congestion_event(0, CongestionEvent::Loss { flight: 1000 });
        assert_eq!((cc.cwnd(), cc.ssthresh()), (2000, 2000));
    }

    #[test]
    fn a_spurious_reduction_is_undone_to_the_prior_window() {
        let mut cc = Reno::new(1000, 10);
        cc.on_congestion_event(0, CongestionEvent::Loss { flight: 40_000 });
        cc.on_spurious(30_000, u64::MAX);
        assert_eq!((cc.cwnd(), cc.ssthresh()), (30_000, u64::MAX));
    }
}
