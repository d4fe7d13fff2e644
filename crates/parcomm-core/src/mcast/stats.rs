//! What a multicast run reports, as plain data (columns and summaries).

use crate::time::{to_secs, Time};

/// Occupancy over time of one buffer: peak and time integral.
#[derive(Clone, Debug, Default)]
pub struct Probe {
    cur: u64,
    peak: u64,
    area: u128,
    last: Time,
}

impl Probe {
    pub fn set(&mut self, now: Time, v: u64) {
        if v == self.cur {
            return;
        }
        self.area += self.cur as u128 * (now - self.last) as u128;
        self.last = now;
        self.cur = v;
        self.peak = self.peak.max(v);
    }

    pub fn peak(&self) -> u64 {
        self.peak
    }

    /// When the occupancy last changed.
    pub fn last_change(&self) -> Time {
        self.last
    }

    /// Time-mean over [0, end].
    pub fn mean(&self, end: Time) -> f64 {
        if end == 0 {
            return 0.0;
        }
        let area = self.area + self.cur as u128 * end.saturating_sub(self.last) as u128;
        area as f64 / end as f64
    }
}

/// Mean and tail of a set of delays (seconds). Percentiles are nearest-rank:
/// the smallest value with at least p % of the values at or below it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DelaySummary {
    pub count: u64,
    pub mean_s: f64,
    pub p50_s: f64,
    pub p95_s: f64,
    pub p99_s: f64,
    pub max_s: f64,
}

impl DelaySummary {
    pub fn of(mut ns: Vec<Time>) -> DelaySummary {
        if ns.is_empty() {
            let nan = f64::NAN;
            return DelaySummary { count: 0, mean_s: nan, p50_s: nan, p95_s: nan, p99_s: nan, max_s: nan };
        }
        ns.sort_unstable();
        let n = ns.len();
        let rank = |p: f64| to_secs(ns[((p / 100.0 * n as f64).ceil() as usize).clamp(1, n) - 1]);
        let sum: u128 = ns.iter().map(|&x| x as u128).sum();
        DelaySummary {
            count: n as u64,
            mean_s: sum as f64 / n as f64 * 1e-9,
            p50_s: rank(50.0),
            p95_s: rank(95.0),
            p99_s: rank(99.0),
            max_s: to_secs(ns[n - 1]),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ReceiverStats {
    pub name: String,
    /// Mean over the packets it received of (its arrival - first transmission).
    pub mean_delay_s: f64,
    pub received: u64,
    pub duplicates: u64,
}

/// The retransmission buffer of the source or a router (plain routers hold none).
#[derive(Clone, Debug, PartialEq)]
pub struct BufferStats {
    pub name: String,
    pub kind: String,
    pub repair: bool,
    /// Retransmission timeout (s); NaN for a plain router.
    pub rto_s: f64,
    pub peak_packets: u64,
    pub peak_bytes: u64,
    pub mean_packets: f64,
    pub mean_bytes: f64,
    pub timeouts: u64,
    pub retransmissions: u64,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct NetworkStats {
    pub name: String,
    pub parent: String,
    pub child: String,
    /// Data copies sent down, retransmitted copies among them, and losses.
    pub data_sent: u64,
    pub data_retransmitted: u64,
    pub data_lost: u64,
    /// Copies that arrived where nobody needed them: the child already held
    /// the packet (for a plain router: every child below it did). Spurious
    /// timeouts show up here.
    pub data_redundant: u64,
    pub acks_sent: u64,
    pub acks_lost: u64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Every packet reached every receiver.
    pub complete: bool,
    /// Empty if the run went to its end; else which limit stopped it and why
    /// (`time_limit_s: ...`, `queue_limit_packets: ...`).
    pub stopped: String,
    pub packets: u64,
    /// Packets that reached every receiver.
    pub delivered: u64,
    /// Per packet: from its first transmission at the source until the last
    /// receiver has it (NaN if some receiver never got it).
    pub delay: DelaySummary,
    /// Per packet: from its first transmission until the source released it
    /// (every child of the source acknowledged it; under Comet RM that is
    /// every receiver, confirmed back at the source).
    pub release: DelaySummary,
    pub packet_first_tx_s: Vec<f64>,
    pub packet_delay_s: Vec<f64>,
    pub packet_release_s: Vec<f64>,
    pub receivers: Vec<ReceiverStats>,
    pub buffers: Vec<BufferStats>,
    pub networks: Vec<NetworkStats>,
    /// When the last buffer drained (every packet delivered and acknowledged
    /// to every repair point), or when the time limit stopped the run. Buffer
    /// time-means are over [0, end_time_s].
    pub end_time_s: f64,
    /// Discrete events handled (packet arrivals at the end of a network,
    /// source ticks, timer expiries).
    pub events: u64,
    /// Wall-clock time of the run (the only field that differs between identical runs).
    pub wall_s: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let d = DelaySummary::of((1..=100).rev().map(|x| x * 1_000_000_000).collect());
        assert_eq!((d.count, d.p50_s, d.p95_s, d.p99_s, d.max_s), (100, 50.0, 95.0, 99.0, 100.0));
        assert_eq!(d.mean_s, 50.5);
        assert!(DelaySummary::of(vec![]).mean_s.is_nan());
    }

    #[test]
    fn probe_time_mean_and_peak() {
        let mut p = Probe::default();
        p.set(10, 4);
        p.set(20, 2);
        p.set(30, 0);
        assert_eq!((p.peak(), p.last_change()), (4, 30));
        assert_eq!(p.mean(40), (4.0 * 10.0 + 2.0 * 10.0) / 40.0);
    }
}
