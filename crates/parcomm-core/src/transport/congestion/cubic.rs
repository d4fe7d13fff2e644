//! CUBIC congestion control (RFC 9438; Linux's default, net/ipv4/tcp_cubic.c).
//!
//! After a loss the window follows W(t) = C (t - K)^3 + W_max, a cubic in
//! the time since the reduction that plateaus at the window where the loss
//! happened, with the Reno-friendly estimate W_est as a floor. Constants as
//! Linux: C = 0.4, beta = 717/1024 (~0.7), fast convergence on. Slow start
//! and the timeout rules are Reno's (`reno.rs`), with CUBIC's reduction
//! (ssthresh = beta * cwnd, `bictcp_recalc_ssthresh()`). HyStart
//! (`hystart.rs`, `tcp.hystart`) optionally ends slow start early, as Linux's does.

use super::hystart::HyStart;
use super::{CongestionControl, CongestionEvent, RttSample, Window};
use crate::time::Time;
use crate::transport::TcpConfig;

pub fn build(cfg: &TcpConfig) -> Box<dyn CongestionControl> {
    let cubic = Cubic::new(cfg.mss, cfg.initial_cwnd_segments);
    Box::new(if cfg.hystart { cubic.with_hystart() } else { cubic })
}

/// C of RFC 9438 §4.2 (tcp_cubic.c: bic_scale 41 / 1024 * 10 = 0.4).
pub const C: f64 = 0.4;
/// beta_cubic (tcp_cubic.c: beta = 717 / 1024).
pub const BETA: f64 = 717.0 / 1024.0;

#[derive(Clone, Debug)]
pub struct Cubic {
    w: Window,
    /// Window (segments) before the last reduction, and the one before that.
    w_max: f64,
    w_last_max: f64,
    /// Start of the current avoidance epoch, and its K and origin (segments).
    epoch: Option<Time>,
    k: f64,
    origin: f64,
    /// Reno-friendly estimate W_est (segments), RFC 9438 §4.3.
    w_est: f64,
    /// Smallest SRTT seen: the delay tcp_cubic adds to t (delay_min).
    min_rtt: Option<Time>,
    /// HyStart, when on.
    hystart: Option<HyStart>,
}

impl Cubic {
    pub fn new(mss: u64, initial_cwnd_segments: u64) -> Self {
        Cubic {
            w: Window::new(mss, initial_cwnd_segments),
            w_max: 0.0,
            w_last_max: 0.0,
            epoch: None,
            k: 0.0,
            origin: 0.0,
            w_est: 0.0,
            min_rtt: None,
            hystart: None,
        }
    }

    /// With HyStart (tcp_cubic.c, `hystart = 1`, Linux's default).
    pub fn with_hystart(mut self) -> Self {
        self.hystart = Some(HyStart::new());
        self
    }

    fn segs(&self) -> f64 {
        self.w.cwnd as f64 / self.w.mss as f64
    }

    /// W_cubic(t) of RFC 9438 eq. 1, `t` seconds into the epoch (segments).
    pub fn w_cubic(&self, t: f64) -> f64 {
        C * (t - self.k).powi(3) + self.origin
    }

    /// K of RFC 9438 eq. 2 (seconds).
    pub fn k(&self) -> f64 {
        self.k
    }

    /// A loss: remember where it happened (with fast convergence) and cut to beta.
    fn reduce(&mut self) {
        let w = self.segs();
        self.w_max = if w < self.w_last_max { w * (1.0 + BETA) / 2.0 } else { w };
        self.w_last_max = w;
        self.epoch = None;
        self.w.ssthresh = ((self.w.cwnd as f64 * BETA) as u64).max(2 * self.w.mss);
    }

    fn start_epoch(&mut self, now: Time) {
        self.epoch = Some(now);
        let w = self.segs();
        if w < self.w_max {
            self.k = ((self.w_max - w) / C).cbrt();
            self.origin = self.w_max;
        } else {
            self.k = 0.0;
            self.origin = w;
        }
        self.w_est = w;
    }
}

impl CongestionControl for Cubic {
    fn window(&self) -> &Window {
        &self.w
    }

    fn window_mut(&mut self) -> &mut Window {
        &mut self.w
    }

    fn on_ack(&mut self, now: Time, acked: u64, srtt: Option<Time>) {
        if let Some(r) = srtt {
            self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        }
        if self.w.in_slow_start() {
            self.w.slow_start(acked); // as Reno
            return;
        }
        if self.epoch.is_none() {
            self.start_epoch(now);
        }
        let epoch = self.epoch.unwrap_or(now);
        let rtt = self.min_rtt.unwrap_or(0) as f64 * 1e-9;
        let t = now.saturating_sub(epoch) as f64 * 1e-9 + rtt; // the window one RTT ahead (bictcp_update)
        let w = self.segs();
        let acked_segs = acked as f64 / self.w.mss as f64;
        // RFC 9438 §4.3: W_est += alpha_cubic * segments acked / cwnd, alpha = 3 (1 - beta) / (1 + beta).
        self.w_est += 3.0 * (1.0 - BETA) / (1.0 + BETA) * acked_segs / w.max(1.0);
        // §4.4: the target a round trip ahead, no more than 1.5 cwnd.
        let target = self.w_cubic(t).clamp(w, 1.5 * w).max(self.w_est.min(1.5 * w));
        let inc_segs = (target - w) / w.max(1.0) * acked_segs;
        let inc = (inc_segs * self.w.mss as f64) as u64;
        self.w.cwnd = self.w.cwnd.saturating_add(inc.max(1));
    }

    fn on_congestion_event(&mut self, _now: Time, event: CongestionEvent) {
        match event {
            CongestionEvent::Loss { .. } => {
                self.reduce();
                self.w.cwnd = self.w.ssthresh;
            }
            CongestionEvent::Timeout { repeated, .. } => {
                if !repeated {
                    self.reduce();
                }
                self.epoch = None;
                self.w.cwnd = self.w.mss;
                if let Some(h) = self.hystart.as_mut() {
                    h.on_loss_state(); // cubictcp_state(TCP_CA_Loss): bictcp_reset(), bictcp_hystart_reset()
                }
            }
        }
    }

    fn wants_rtt_samples(&self) -> bool {
        self.hystart.is_some()
    }

    fn on_rtt_sample(&mut self, now: Time, sample: &RttSample) {
        let (Some(h), Some(rtt)) = (self.hystart.as_mut(), sample.rtt) else {
            return;
        };
        // cubictcp_acked(): no samples within a second of an avoidance epoch's start.
        if self.epoch.is_some_and(|e| now.saturating_sub(e) < crate::time::SEC) {
            return;
        }
        let in_slow_start = self.w.in_slow_start();
        let segs = self.w.cwnd / self.w.mss;
        let pacing = sample.srtt.map(|r| pacing_rate_ss(self.w.cwnd, r));
        if h.on_sample(now, rtt, in_slow_start, sample.snd_una, sample.snd_nxt, segs, pacing) {
            self.w.ssthresh = self.w.cwnd; // found: slow start ends at this window
        }
    }

    fn on_idle_restart(&mut self, idle_rtos: u64, restart_window: u64) {
        self.w.restart_after_idle(idle_rtos, restart_window);
        self.epoch = None; // tcp_cubic's CA_EVENT_TX_START shifts the epoch; restarting it is the simple equivalent
    }

    fn on_spurious(&mut self, prior_cwnd: u64, prior_ssthresh: u64) {
        self.w.undo(prior_cwnd, prior_ssthresh);
        self.epoch = None; // the avoidance epoch restarts from the restored window
    }
}

/// Linux's pacing rate in slow start (tcp_update_pacing_rate(), tcp_input.c):
/// cwnd / SRTT times net.ipv4.tcp_pacing_ss_ratio = 200 %, in bytes per second.
/// Only HyStart's ACK-delay allowance reads it (no qdisc paces here).
fn pacing_rate_ss(cwnd: u64, srtt: Time) -> u64 {
    let per_s = (cwnd as u128 * 2 * crate::time::SEC as u128) / (srtt.max(1) as u128);
    per_s.min(u64::MAX as u128) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    /// A loss found by ACKs: cwnd drops to the new ssthresh at once.
    fn loss(cc: &mut Cubic) {
        cc.on_congestion_event(0, CongestionEvent::Loss { flight: 0 });
    }

    #[test]
    fn w_cubic_follows_rfc_9438_eq_1_after_a_loss_at_100_segments() {
        let mss = 1000;
        let mut cc = Cubic::new(mss, 10);
        cc.w.cwnd = 100 * mss;
        cc.w.ssthresh = 50 * mss; // in avoidance
        loss(&mut cc);
        assert_eq!(cc.ssthresh(), 70_019); // 100 000 * 717 / 1024
        cc.on_ack(0, mss, Some(0)); // the epoch starts here
                                    // K = cbrt(W_max (1 - beta) / C) with W_max = 100, cwnd 70.02 (eq. 2).
        let k = ((100.0 - 70.019) / C).cbrt();
        assert!((cc.k() - k).abs() < 1e-3, "{} vs {k}", cc.k());
        assert!((cc.w_cubic(0.0) - 70.019).abs() < 0.02); // starts at beta * W_max
        assert!((cc.w_cubic(k) - 100.0).abs() < 1e-9); // plateau at W_max after K
        assert!((cc.w_cubic(k + 1.0) - 100.4).abs() < 1e-9); // C * 1^3 above it
        assert!((cc.w_cubic(k - 2.0) - (100.0 - 3.2)).abs() < 1e-9);
    }

    /// Window after `secs` of avoidance following a loss at 100 segments, one ACK per segment.
    fn grow(rtt: Time, secs: f64) -> (Cubic, Option<f64>) {
        let mss = 1000;
        let mut cc = Cubic::new(mss, 10);
        cc.w.cwnd = 100 * mss;
        cc.w.ssthresh = 50 * mss;
        loss(&mut cc);
        let (mut now, mut back) = (0, None);
        while (now as f64) < secs * 1e9 {
            let per_rtt = (cc.cwnd() / mss).max(1);
            for i in 0..per_rtt {
                cc.on_ack(now + i * rtt / per_rtt, mss, Some(rtt));
            }
            now += rtt;
            if back.is_none() && cc.cwnd() >= 100 * mss {
                back = Some(now as f64 * 1e-9);
            }
        }
        (cc, back)
    }

    #[test]
    fn on_a_long_path_the_window_is_back_at_w_max_after_about_k_then_grows_convexly() {
        // RTT 100 ms: the cubic curve, not the Reno-friendly estimate, decides.
        let (cc, back) = grow(100 * MS, 7.0);
        let k = cc.k();
        let t = back.expect("back at W_max");
        // W(t + RTT) is the target, so W_max is reached about one RTT before K.
        assert!(t > k - 0.5 && t < k + 0.3, "W_max reached at {t} s, K = {k} s");
        // Past W_max it follows the convex part, a little behind W(t + RTT) (109.8 at 7 s).
        let segs = cc.cwnd() as f64 / 1000.0;
        let w7 = cc.w_cubic(7.1);
        assert!(segs > 105.0 && segs <= w7 + 0.5 && segs > w7 - 3.0, "{segs} segments, W(7.1 s) = {w7}");
    }

    #[test]
    fn on_a_short_path_it_is_reno_friendly() {
        // RTT 10 ms: the cubic curve is nearly flat for seconds, and W_est's
        // alpha = 3 (1 - beta) / (1 + beta) ~ 0.53 segments per RTT leads (RFC 9438 §4.3).
        let (cc, _) = grow(10 * MS, 0.5);
        let segs = cc.cwnd() as f64 / 1000.0;
        let reno = 70.02 + 0.53 * 50.0;
        assert!((segs - reno).abs() < 3.0, "{segs} segments, Reno-friendly estimate {reno}");
    }

    #[test]
    fn fast_convergence_releases_bandwidth_when_losses_come_below_the_last_maximum() {
        let mss = 1000;
        let mut cc = Cubic::new(mss, 10);
        cc.w.cwnd = 100 * mss;
        cc.w.ssthresh = 50 * mss;
        loss(&mut cc);
        assert_eq!(cc.w_max, 100.0);
        cc.w.cwnd = 80 * mss; // lost again below the previous maximum
        loss(&mut cc);
        assert!((cc.w_max - 80.0 * (1.0 + BETA) / 2.0).abs() < 1e-9);
        // A repeated timeout does not cut again.
        let before = cc.ssthresh();
        cc.on_congestion_event(0, CongestionEvent::Timeout { flight: 0, repeated: true });
        assert_eq!((cc.cwnd(), cc.ssthresh()), (mss, before));
    }
}
