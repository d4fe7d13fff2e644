//! When each outstanding segment was last sent, for Linux's RTT sampling.
//!
//! The BSD sender times one segment per round trip and takes no sample
//! while retransmitted data is acknowledged (Karn). Linux samples on every
//! ACK that advances snd_una (`tcp_clean_rtx_queue()`): from the oldest
//! newly acknowledged segment that was never retransmitted, or, when
//! retransmitted data is acknowledged, from the echoed timestamp (RFC 7323,
//! `tcp_rtt_tsopt_us()`) if timestamps are on: the echo carries the send
//! time of the segment that advanced the receiver, which after a loss is the
//! retransmission itself. This log keeps what both rules need.

use crate::time::Time;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sent {
    end: u64,
    at: Time,
    retransmitted: bool,
}

#[derive(Debug, Default)]
pub struct TxLog {
    /// Outstanding segments in sequence order (each ends where the next begins).
    segs: VecDeque<Sent>,
}

impl TxLog {
    pub fn new() -> Self {
        TxLog::default()
    }

    /// New data `[start, end)` left at `at`.
    pub fn on_new(&mut self, end: u64, at: Time) {
        if self.segs.back().is_none_or(|s| s.end < end) {
            self.segs.push_back(Sent { end, at, retransmitted: false });
        }
    }

    /// `[start, end)` was sent again at `at`: every logged segment it overlaps.
    pub fn on_retransmit(&mut self, start: u64, end: u64, at: Time) {
        let first = self.segs.partition_point(|s| s.end <= start);
        // Segments are contiguous: from the first ending after `start`, each
        // overlaps until (and including) the first that ends at or after `end`.
        for s in self.segs.iter_mut().skip(first) {
            s.at = at;
            s.retransmitted = true;
            if s.end >= end {
                break;
            }
        }
    }

    /// Everything below `ack` was acknowledged at `now`: the RTT sample Linux takes, if any.
    pub fn on_ack(&mut self, ack: u64, now: Time, timestamps: bool) -> Option<Time> {
        let mut oldest_fresh: Option<Time> = None;
        let mut latest_retransmission: Option<Time> = None;
        let mut any_retransmitted = false;
        while let Some(s) = self.segs.front() {
            if s.end > ack {
                break;
            }
            if s.retransmitted {
                any_retransmitted = true;
                latest_retransmission = Some(latest_retransmission.map_or(s.at, |t: Time| t.max(s.at)));
            } else if oldest_fresh.is_none() {
                oldest_fresh = Some(s.at);
            }
            self.segs.pop_front();
        }
        let sent = if any_retransmitted {
            // FLAG_RETRANS_DATA_ACKED: the sequence sample is ambiguous (Karn);
            // only a timestamp echo can time it.
            if timestamps {
                latest_retransmission
            } else {
                None
            }
        } else {
            oldest_fresh
        };
        sent.map(|t| now.saturating_sub(t))
    }

    pub fn len(&self) -> usize {
        self.segs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_data_is_timed_from_the_oldest_newly_acked_segment() {
        let mut l = TxLog::new();
        l.on_new(1000, 10);
        l.on_new(2000, 20);
        l.on_new(3000, 30);
        assert_eq!(l.on_ack(2000, 100, false), Some(90));
        assert_eq!(l.len(), 1);
        assert_eq!(l.on_ack(2500, 110, false), None); // a partly acked segment is not yet acked
    }

    #[test]
    fn retransmitted_data_is_timed_only_through_timestamps() {
        let mut l = TxLog::new();
        l.on_new(1000, 10);
        l.on_new(2000, 20);
        l.on_retransmit(0, 1000, 500);
        let mut l2 = TxLog::new();
        l2.on_new(1000, 10);
        l2.on_new(2000, 20);
        l2.on_retransmit(0, 1000, 500);
        assert_eq!(l.on_ack(2000, 600, false), None); // Karn
        assert_eq!(l2.on_ack(2000, 600, true), Some(100)); // the echo of the retransmission
    }

    #[test]
    fn a_retransmission_marks_every_segment_it_overlaps() {
        let mut l = TxLog::new();
        l.on_new(500, 1);
        l.on_new(1500, 2);
        l.on_new(2500, 3);
        l.on_retransmit(400, 1460, 9);
        assert_eq!(l.on_ack(1500, 10, true), Some(1));
        assert_eq!(l.on_ack(2500, 10, true), Some(7)); // untouched segment: fresh
    }
}
