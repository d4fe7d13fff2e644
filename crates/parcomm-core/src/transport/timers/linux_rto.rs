//! Linux's RTO rules (net/ipv4/tcp_input.c): `tcp_rtt_estimator()` and
//! `__tcp_set_rto()`, not RFC 6298's clamp.
//!
//! Linux keeps SRTT scaled by 8 and the mean deviation scaled by 4
//! (`mdev_us`), tracks the largest deviation of the current round trip
//! (`mdev_max_us`, never below rto_min) and smooths that into `rttvar_us`,
//! which may fall only once per round trip (when snd_una passes
//! `rtt_seq`). RTO = SRTT + rttvar, so rto_min bounds the *variance term*:
//! RTO >= SRTT + rto_min, where RFC 6298 gives max(SRTT + 4 RTTVAR, rto_min).
//! Every valid sample recomputes the RTO, which is how Linux clears the
//! backoff (`tcp_ack_update_rtt()`: "only reset backoff on valid RTT
//! measurement"); a timeout doubles it (`tcp_retransmit_timer()`), up to the maximum.

use super::rto::RtoEstimator;
use crate::time::Time;

#[derive(Clone, Debug)]
pub struct LinuxRto {
    rto_min: Time,
    rto_max: Time,
    /// One jiffy: `usecs_to_jiffies()` rounds the RTO up to it.
    jiffy: Time,
    /// SRTT << 3 (`srtt_us`); 0 before the first sample.
    srtt8: i64,
    /// Mean deviation << 2 (`mdev_us`).
    mdev4: i64,
    /// Largest `mdev4` of this round trip, at least rto_min (`mdev_max_us`).
    mdev_max: i64,
    /// Smoothed `mdev_max` (`rttvar_us`).
    rttvar: i64,
    /// snd_nxt when the current round trip began (`rtt_seq`).
    rtt_seq: u64,
    /// `icsk_rto`, backoff included.
    rto: Time,
}

/// The RTO minimum as the kernel holds it: in whole jiffies, rounded up
/// (`tcp_rto_min()` reads the route's `rto_min` with `dst_metric_rtt()`, i.e.
/// `msecs_to_jiffies()`). At HZ = 250, `rto_min 5ms` is 8 ms and `1ms` is 4 ms,
/// which the kernel shows: RTO 12 ms at SRTT 60 us with `rto_min 5ms` (the
/// conformance suite's socket samples, `ss -ti`).
pub fn kernel_rto_min(rto_min: Time, jiffy: Time) -> Time {
    let jiffy = jiffy.max(1);
    rto_min.div_ceil(jiffy).saturating_mul(jiffy)
}

impl LinuxRto {
    pub fn new(rto_min: Time, rto_max: Time, rto_initial: Time, jiffy: Time) -> Self {
        LinuxRto {
            rto_min: kernel_rto_min(rto_min, jiffy),
            rto_max,
            jiffy: jiffy.max(1),
            srtt8: 0,
            mdev4: 0,
            mdev_max: 0,
            rttvar: 0,
            rtt_seq: 0,
            rto: rto_initial.min(rto_max), // TCP_TIMEOUT_INIT, bounded as tcp_bound_rto() does
        }
    }

    /// `rttvar_us` (for tests).
    pub fn rttvar(&self) -> Time {
        self.rttvar as Time
    }

    /// `__tcp_set_rto()` then `tcp_bound_rto()`.
    fn set_rto(&mut self) {
        let raw = (self.srtt8 >> 3) as u64 + self.rttvar as u64;
        self.rto = raw.div_ceil(self.jiffy).saturating_mul(self.jiffy).min(self.rto_max);
    }
}

impl RtoEstimator for LinuxRto {
    fn on_rtt_sample(&mut self, rtt: Time) {
        // Without sequence numbers every sample opens a new round trip.
        let seq = self.rtt_seq + 1;
        self.on_rtt_sample_seq(rtt, seq, seq);
    }

    /// `tcp_rtt_estimator(sk, mrtt_us)`, arithmetic kept as in the kernel.
    fn on_rtt_sample_seq(&mut self, rtt: Time, snd_una: u64, snd_nxt: u64) {
        let m0 = rtt.min(i64::MAX as u64 / 16) as i64;
        let rto_min = self.rto_min as i64;
        if self.srtt8 != 0 {
            let mut m = m0 - (self.srtt8 >> 3); // m is now the error in the estimate
            let srtt8 = self.srtt8 + m; // rtt = 7/8 rtt + 1/8 new
            if m < 0 {
                m = -m - (self.mdev4 >> 2);
                // A smaller RTT than expected: let the deviation grow only slowly.
                if m > 0 {
                    m >>= 3;
                }
            } else {
                m -= self.mdev4 >> 2;
            }
            self.mdev4 += m; // mdev = 3/4 mdev + 1/4 new
            if self.mdev4 > self.mdev_max {
                self.mdev_max = self.mdev4;
                if self.mdev_max > self.rttvar {
                    self.rttvar = self.mdev_max;
                }
            }
            if snd_una > self.rtt_seq {
                // A round trip ended: rttvar may decay towards this trip's largest deviation.
                if self.mdev_max < self.rttvar {
                    self.rttvar -= (self.rttvar - self.mdev_max) >> 2;
                }
                self.rtt_seq = snd_nxt;
                self.mdev_max = rto_min;
            }
            self.srtt8 = srtt8.max(1);
        } else {
            // No previous measurement: rto = 3 rtt, but the variance term at least rto_min.
            self.srtt8 = (m0 << 3).max(1);
            self.mdev4 = m0 << 1;
            self.rttvar = self.mdev4.max(rto_min);
            self.mdev_max = self.rttvar;
            self.rtt_seq = snd_nxt;
        }
        self.set_rto();
    }

    fn on_timeout_backoff(&mut self) {
        self.rto = self.rto.saturating_mul(2).min(self.rto_max);
    }

    fn rto(&self) -> Time {
        self.rto
    }

    fn srtt(&self) -> Option<Time> {
        (self.srtt8 != 0).then_some((self.srtt8 >> 3) as Time)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{MS, SEC, US};

    #[test]
    fn first_sample_gives_three_rtts_or_srtt_plus_rto_min() {
        // 100 ms: mdev4 = 200 ms > rto_min, RTO = 100 + 200 = 300 ms ("make sure rto = 3*rtt").
        let mut e = LinuxRto::new(200 * MS, 120 * SEC, SEC, MS);
        assert_eq!(e.rto(), SEC);
        e.on_rtt_sample_seq(100 * MS, 0, 1000);
        assert_eq!(e.rto(), 300 * MS);
        // 100 us on a LAN: the variance term is rto_min, RTO = 200.1 ms rounded up to a jiffy.
        let mut e = LinuxRto::new(200 * MS, 120 * SEC, SEC, MS);
        e.on_rtt_sample_seq(100 * US, 0, 1000);
        assert_eq!(e.srtt(), Some(100 * US));
        assert_eq!(e.rttvar(), 200 * MS);
        assert_eq!(e.rto(), 201 * MS);
        // At rto_min 1 ms the RFC clamp would give 1 ms; Linux gives SRTT + max(2 SRTT, 1 ms).
        let mut e = LinuxRto::new(MS, 120 * SEC, SEC, MS);
        e.on_rtt_sample_seq(100 * US, 0, 1000);
        assert_eq!(e.rto(), 2 * MS); // 1.1 ms rounded up to the next jiffy
    }

    #[test]
    fn rto_min_is_whole_jiffies_as_the_kernel_reads_the_route() {
        // HZ = 250 (4 ms jiffies), `ip route ... rto_min 5ms`, SRTT 60 us: the kernel's
        // rto_min is 2 jiffies (8 ms), RTO = 8.06 ms rounded up = 12 ms, as `ss -ti` shows.
        let jiffy = 4 * MS;
        assert_eq!(kernel_rto_min(5 * MS, jiffy), 8 * MS);
        assert_eq!(kernel_rto_min(MS, jiffy), 4 * MS);
        assert_eq!(kernel_rto_min(200 * MS, jiffy), 200 * MS);
        let mut e = LinuxRto::new(5 * MS, 120 * SEC, SEC, jiffy);
        e.on_rtt_sample_seq(60 * US, 0, 1000);
        assert_eq!(e.rttvar(), 8 * MS);
        assert_eq!(e.rto(), 12 * MS);
    }

    #[test]
    fn hand_computed_second_sample() {
        // First 100 ms: srtt8 = 800, mdev4 = 200, rttvar = 200 (ms).
        // Then 200 ms: m = 200 - 100 = 100; srtt8 = 900 (srtt 112.5); m -= 200/4 -> 50; mdev4 = 250;
        // mdev_max 200 -> 250 and rttvar -> 250; a new round trip (una 1000 > rtt_seq 1000? no).
        let mut e = LinuxRto::new(200 * MS, 120 * SEC, SEC, MS);
        e.on_rtt_sample_seq(100 * MS, 0, 1000);
        e.on_rtt_sample_seq(200 * MS, 500, 2000);
        assert_eq!(e.srtt(), Some(112_500_000));
        assert_eq!(e.rttvar(), 250 * MS);
        assert_eq!(e.rto(), 363 * MS); // 362.5 ms rounded up to the jiffy
    }

    #[test]
    fn rttvar_decays_once_per_round_trip_and_never_below_rto_min() {
        let mut e = LinuxRto::new(200 * MS, 120 * SEC, SEC, MS);
        e.on_rtt_sample_seq(100 * MS, 0, 1000); // rttvar 200 ms
        e.on_rtt_sample_seq(300 * MS, 10, 1000); // deviation jumps: rttvar up
        let high = e.rttvar();
        assert!(high > 200 * MS);
        // Many samples in the same round trip (snd_una below rtt_seq): no decay.
        for _ in 0..20 {
            e.on_rtt_sample_seq(100 * MS, 20, 1000);
        }
        assert_eq!(e.rttvar(), high);
        // New round trips: decays by a quarter of the gap each, towards rto_min.
        let mut una = 1000;
        for _ in 0..200 {
            una += 1000;
            e.on_rtt_sample_seq(100 * MS, una, una);
        }
        assert!(e.rttvar() < high && e.rttvar() >= 200 * MS);
        assert!(e.rttvar() - 200 * MS < MS);
    }

    #[test]
    fn backoff_doubles_to_the_cap_and_a_sample_clears_it() {
        let mut e = LinuxRto::new(200 * MS, SEC, SEC, MS);
        e.on_rtt_sample_seq(100 * US, 0, 1000);
        e.on_timeout_backoff();
        assert_eq!(e.rto(), 402 * MS);
        e.on_timeout_backoff();
        e.on_timeout_backoff();
        assert_eq!(e.rto(), SEC);
        e.on_rtt_sample_seq(100 * US, 2000, 3000);
        assert_eq!(e.rto(), 201 * MS);
    }
}
