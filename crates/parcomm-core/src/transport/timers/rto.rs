//! Retransmission timeout estimation.

use crate::time::Time;
use std::fmt::Debug;

/// Strategy interface for RTO computation, so that other estimators can be
/// swapped in. Implementations decide everything about the value; the sender
/// only feeds samples and timeouts.
pub trait RtoEstimator: Debug + Send + Sync {
    /// A valid RTT measurement (the sender already applied Karn's rule).
    fn on_rtt_sample(&mut self, rtt: Time);
    /// The same, with the sequence state estimators that track round trips need
    /// (Linux's `rtt_seq`); the default ignores it.
    fn on_rtt_sample_seq(&mut self, rtt: Time, _snd_una: u64, _snd_nxt: u64) {
        self.on_rtt_sample(rtt);
    }
    /// The retransmission timer expired: back the timer off.
    fn on_timeout_backoff(&mut self);
    /// The timeout to arm the retransmission timer with now.
    fn rto(&self) -> Time;
    /// Smoothed RTT, if the estimator keeps one (for tracing and tests).
    fn srtt(&self) -> Option<Time> {
        None
    }
}

/// RFC 6298: SRTT/RTTVAR with alpha = 1/8, beta = 1/4,
/// RTO = SRTT + max(G, 4 * RTTVAR), clamped to [min, max]; doubling backoff.
#[derive(Clone, Debug)]
pub struct Rfc6298Rto {
    min: Time,
    max: Time,
    granularity: Time,
    srtt: Option<Time>,
    rttvar: Time,
    /// Current RTO including any backoff. A new sample recomputes it from
    /// SRTT/RTTVAR, which is what resets the backoff.
    rto: Time,
}

impl Rfc6298Rto {
    pub fn new(min: Time, max: Time, initial: Time, granularity: Time) -> Self {
        Rfc6298Rto { min, max, granularity, srtt: None, rttvar: 0, rto: clamp(initial, min, max) }
    }

    pub fn rttvar(&self) -> Time {
        self.rttvar
    }
}

/// Like `Ord::clamp`, but never panics on min > max (max wins).
fn clamp(x: Time, min: Time, max: Time) -> Time {
    x.max(min).min(max)
}

impl RtoEstimator for Rfc6298Rto {
    fn on_rtt_sample(&mut self, r: Time) {
        match self.srtt {
            // (2.2) first measurement.
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            // (2.3) RTTVAR first, using the old SRTT; one rounding per update.
            Some(srtt) => {
                let err = srtt.abs_diff(r);
                self.rttvar = ((3 * self.rttvar as u128 + err as u128) / 4) as Time;
                self.srtt = Some(((7 * srtt as u128 + r as u128) / 8) as Time);
            }
        }
        let srtt = self.srtt.unwrap_or(r);
        let var = self.granularity.max(self.rttvar.saturating_mul(4));
        self.rto = clamp(srtt.saturating_add(var), self.min, self.max);
    }

    fn on_timeout_backoff(&mut self) {
        // (5.5) double, bounded by the maximum.
        self.rto = clamp(self.rto.saturating_mul(2), self.min, self.max);
    }

    fn rto(&self) -> Time {
        self.rto
    }

    fn srtt(&self) -> Option<Time> {
        self.srtt
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{MS, SEC};

    #[test]
    fn initial_value_is_clamped() {
        assert_eq!(Rfc6298Rto::new(200 * MS, 60 * SEC, SEC, MS).rto(), SEC);
        assert_eq!(Rfc6298Rto::new(200 * MS, 500 * MS, SEC, MS).rto(), 500 * MS);
        assert_eq!(Rfc6298Rto::new(2 * SEC, 60 * SEC, SEC, MS).rto(), 2 * SEC);
    }

    #[test]
    fn hand_computed_samples() {
        let mut e = Rfc6298Rto::new(0, 60 * SEC, SEC, MS);
        // First sample R=100ms: SRTT=100, RTTVAR=50, RTO=100+4*50=300.
        e.on_rtt_sample(100 * MS);
        assert_eq!(e.srtt(), Some(100 * MS));
        assert_eq!(e.rttvar(), 50 * MS);
        assert_eq!(e.rto(), 300 * MS);
        // R=200ms: RTTVAR=3/4*50+1/4*|100-200|=62.5, SRTT=7/8*100+1/8*200=112.5,
        // RTO=112.5+250=362.5.
        e.on_rtt_sample(200 * MS);
        assert_eq!(e.rttvar(), 62_500_000);
        assert_eq!(e.srtt(), Some(112_500_000));
        assert_eq!(e.rto(), 362_500_000);
        // R=112.5ms: RTTVAR=3/4*62.5=46.875, SRTT unchanged, RTO=112.5+187.5=300.
        e.on_rtt_sample(112_500_000);
        assert_eq!(e.rttvar(), 46_875_000);
        assert_eq!(e.srtt(), Some(112_500_000));
        assert_eq!(e.rto(), 300 * MS);
    }

    #[test]
    fn granularity_and_min_bound() {
        // Constant RTT: RTTVAR decays towards 0, so G takes over as the variance term.
        let mut e = Rfc6298Rto::new(0, 60 * SEC, SEC, 10 * MS);
        for _ in 0..100 {
            e.on_rtt_sample(50 * MS);
        }
        assert_eq!(e.rto(), 60 * MS);
        // With RTO_min = 200ms the same estimator reports the floor.
        let mut e = Rfc6298Rto::new(200 * MS, 60 * SEC, SEC, MS);
        e.on_rtt_sample(10 * MS);
        assert_eq!(e.rto(), 200 * MS);
    }

    #[test]
    fn backoff_doubles_caps_and_resets_on_sample() {
        let mut e = Rfc6298Rto::new(200 * MS, 3 * SEC, SEC, MS);
        e.on_rtt_sample(10 * MS);
        let mut expect = 200 * MS;
        for _ in 0..6 {
            e.on_timeout_backoff();
            expect = (expect * 2).min(3 * SEC);
            assert_eq!(e.rto(), expect);
        }
        assert_eq!(e.rto(), 3 * SEC);
        // A fresh valid sample recomputes the RTO: SRTT=10ms, RTTVAR=3/4*5=3.75ms.
        e.on_rtt_sample(10 * MS);
        assert_eq!(e.rto(), 200 * MS);
    }

    #[test]
    fn extreme_values_do_not_panic() {
        let mut e = Rfc6298Rto::new(5, 1, Time::MAX, Time::MAX);
        e.on_rtt_sample(Time::MAX);
        e.on_rtt_sample(0);
        e.on_timeout_backoff();
        assert_eq!(e.rto(), 1);
        let mut e = Rfc6298Rto::new(0, Time::MAX, Time::MAX, 0);
        e.on_rtt_sample(Time::MAX);
        e.on_timeout_backoff();
        assert_eq!(e.rto(), Time::MAX);
    }
}
