//! HyStart, CUBIC's hybrid slow start, as Linux's tcp_cubic.c has it
//! (`hystart = 1`, `hystart_detect = 3`: both detectors, the defaults):
//! slow start ends (ssthresh = cwnd) once the window is at least
//! `hystart_low_window` = 16 segments and, within one round (from the ACK
//! of the data outstanding at the round's start, `bictcp_hystart_reset()`),
//!
//! * ACK train (`HYSTART_ACK_TRAIN`): ACKs arriving no more than
//!   `hystart_ack_delta_us` = 2 ms apart have spanned more than half of
//!   (the minimum RTT + an ACK-delay allowance, `hystart_ack_delay()`:
//!   four 64 KB GSO packets at the pacing rate, at most 1 ms): the pipe
//!   is about full; or
//! * delay (`HYSTART_DELAY`): after `HYSTART_MIN_SAMPLES` = 8 RTT samples
//!   in the round, the round's minimum RTT exceeds the minimum RTT by
//!   more than min RTT / 8, clamped to 4..16 ms (`HYSTART_DELAY_THRESH`):
//!   a queue is building.
//!
//! `hystart_update()` and `cubictcp_acked()`; the detection is off again
//! after it fired until a timeout (`cubictcp_state()` on TCP_CA_Loss).
//! The minimum RTT is HyStart's own here (tcp_cubic.c shares `delay_min`
//! with the cubic curve, which the simulator takes from SRTT).

use crate::time::{Time, MS, US};

/// hystart_low_window: no detection below 16 segments.
pub const LOW_WINDOW: u64 = 16;
/// hystart_ack_delta_us: ACKs this close belong to one train.
pub const ACK_DELTA: Time = 2 * MS;
/// HYSTART_MIN_SAMPLES: RTT samples per round before the delay test.
pub const MIN_SAMPLES: u32 = 8;
/// HYSTART_DELAY_MIN / _MAX: the clamp of the delay threshold.
pub const DELAY_MIN: Time = 4 * MS;
pub const DELAY_MAX: Time = 16 * MS;
/// GSO_LEGACY_MAX_SIZE (include/linux/netdevice.h): the GSO packet size
/// hystart_ack_delay() allows four of.
const GSO_MAX_SIZE: u64 = 65_536;

#[derive(Clone, Debug, Default)]
pub struct HyStart {
    found: bool,
    /// bictcp_hystart_reset()'s round: when it began, the latest ACK of
    /// the train, the sequence that ends it, the round's minimum RTT and
    /// how many samples it has.
    round_start: Time,
    last_ack: Time,
    end_seq: u64,
    curr_rtt: Option<Time>,
    sample_cnt: u32,
    /// `delay_min`: the smallest RTT sample seen.
    delay_min: Option<Time>,
}

impl HyStart {
    pub fn new() -> Self {
        HyStart::default()
    }

    /// A timeout (CA_Loss): detection starts over (bictcp_reset() clears
    /// `found` and `delay_min`, bictcp_hystart_reset() the round).
    pub fn on_loss_state(&mut self) {
        *self = HyStart::new();
    }

    fn reset_round(&mut self, now: Time, snd_nxt: u64) {
        self.round_start = now;
        self.last_ack = now;
        self.end_seq = snd_nxt;
        self.curr_rtt = None;
        self.sample_cnt = 0;
    }

    /// cubictcp_acked() and hystart_update() for one RTT sample;
    /// `cwnd_segs` the window in segments, `pacing` the pacing rate
    /// (bytes/s) if known. Returns true when slow start should end.
    #[allow(clippy::too_many_arguments)]
    pub fn on_sample(
        &mut self,
        now: Time,
        rtt: Time,
        in_slow_start: bool,
        snd_una: u64,
        snd_nxt: u64,
        cwnd_segs: u64,
        pacing: Option<u64>,
    ) -> bool {
        let delay = rtt.max(US); // "if (delay == 0) delay = 1" (in microseconds)
        let delay_min = self.delay_min.map_or(delay, |d| d.min(delay));
        self.delay_min = Some(delay_min);
        if self.found || !in_slow_start {
            return false;
        }
        if snd_una > self.end_seq {
            self.reset_round(now, snd_nxt);
        }
        if cwnd_segs < LOW_WINDOW {
            return false;
        }
        // ACK train.
        if now.saturating_sub(self.last_ack) <= ACK_DELTA {
            self.last_ack = now;
            let threshold = (delay_min + ack_delay(pacing)) / 2; // SK_PACING_NONE: halved
            if now.saturating_sub(self.round_start) > threshold {
                self.found = true;
                return true;
            }
        }
        // Delay increase.
        let curr = self.curr_rtt.map_or(delay, |c| c.min(delay));
        self.curr_rtt = Some(curr);
        if self.sample_cnt < MIN_SAMPLES {
            self.sample_cnt += 1;
        } else if curr > delay_min + (delay_min / 8).clamp(DELAY_MIN, DELAY_MAX) {
            self.found = true;
            return true;
        }
        false
    }
}

/// hystart_ack_delay(): four GSO packets at the pacing rate, at most 1 ms
/// (0 without a pacing rate).
fn ack_delay(pacing: Option<u64>) -> Time {
    match pacing {
        Some(rate) if rate > 0 => {
            let t = (GSO_MAX_SIZE as u128 * 4 * crate::time::SEC as u128) / rate as u128;
            (t.min(MS as u128)) as Time
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One round of `n` ACKs `gap` apart, each with RTT `rtt`, starting at `t0`;
    /// returns the index of the ACK that ended slow start, if any.
    fn round(h: &mut HyStart, t0: Time, n: u64, gap: Time, rtt: Time, segs: u64, una0: u64) -> Option<u64> {
        (0..n).find(|&i| h.on_sample(t0 + i * gap, rtt, true, una0 + i + 1, una0 + 10 * n, segs, None))
    }

    #[test]
    fn an_ack_train_longer_than_half_the_min_rtt_ends_slow_start() {
        // min RTT 10 ms, no pacing rate known: threshold 5 ms. ACKs 0.5 ms apart
        // span 5 ms after 10 of them; the 11th (5.5 ms into the round) fires.
        let mut h = HyStart::new();
        assert_eq!(round(&mut h, 0, 40, 500 * US, 10 * MS, 20, 0), Some(11));
        // Below 16 segments nothing fires.
        let mut h = HyStart::new();
        assert_eq!(round(&mut h, 0, 40, 500 * US, 10 * MS, 15, 0), None);
        // ACKs more than 2 ms apart are no train (and the RTT does not grow).
        let mut h = HyStart::new();
        assert_eq!(round(&mut h, 0, 40, 3 * MS, 10 * MS, 20, 0), None);
        // The allowance for GSO-sized ACK delays: 4 x 64 KB at 1 GB/s = 262 us; at
        // 100 MB/s it would be 2.6 ms, capped at 1 ms.
        assert_eq!(ack_delay(Some(1_000_000_000)), 262_144);
        assert_eq!(ack_delay(Some(100_000_000)), MS);
        assert_eq!(ack_delay(None), 0);
    }

    #[test]
    fn a_rise_in_the_rounds_minimum_rtt_ends_slow_start() {
        // ACKs 3 ms apart (no train). Round 1 at 40 ms RTT sets delay_min; in
        // round 2 every sample is 40 + 5 + 1 = 46 ms: above 40 + clamp(40/8 = 5 ms, 4, 16).
        let mut h = HyStart::new();
        assert_eq!(round(&mut h, 0, 12, 3 * MS, 40 * MS, 20, 0), None);
        let fired = (0..12).find(|&i| h.on_sample(100 * MS + i * 3 * MS, 46 * MS, true, 1000 + i, 2000, 20, None));
        assert_eq!(fired, Some(8)); // after the 8 samples that fix the round's minimum
                                    // 44 ms is within the threshold (40 + 5): nothing.
        let mut h = HyStart::new();
        round(&mut h, 0, 12, 3 * MS, 40 * MS, 20, 0);
        assert_eq!(
            (0..12).find(|&i| h.on_sample(100 * MS + i * 3 * MS, 44 * MS, true, 1000 + i, 2000, 20, None)),
            None
        );
        // On a short path the threshold is at least 4 ms: 1 ms -> 4.5 ms does not fire, 5.5 ms does.
        for (rtt, fires) in [(4_500 * US, false), (5_500 * US, true)] {
            let mut h = HyStart::new();
            round(&mut h, 0, 12, 3 * MS, MS, 20, 0);
            let f = (0..12).any(|i| h.on_sample(100 * MS + i * 3 * MS, rtt, true, 1000 + i, 2000, 20, None));
            assert_eq!(f, fires, "{rtt}");
        }
    }

    #[test]
    fn once_found_it_stays_quiet_until_a_timeout() {
        let mut h = HyStart::new();
        assert!(round(&mut h, 0, 40, 500 * US, 10 * MS, 20, 0).is_some());
        assert_eq!(round(&mut h, SEC_, 40, 500 * US, 10 * MS, 20, 1000), None);
        h.on_loss_state();
        assert!(round(&mut h, 2 * SEC_, 40, 500 * US, 10 * MS, 20, 2000).is_some());
    }

    const SEC_: Time = crate::time::SEC;
}
