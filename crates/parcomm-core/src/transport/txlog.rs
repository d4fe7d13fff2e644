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
    start: u64,
    end: u64,
    at: Time,
    retransmitted: bool,
    sacked: bool,
    /// RACK declared this transmission lost; cleared when it is sent again.
    lost: bool,
}

/// What RACK makes of one outstanding segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Lost,
    /// Lost in this long unless delivered first.
    Wait(Time),
    /// Nothing sent after it was delivered yet.
    NotYet,
}

/// An outstanding segment, as RACK sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outstanding {
    pub start: u64,
    pub end: u64,
    /// Last (re)transmission.
    pub sent: Time,
    pub retransmitted: bool,
}

#[derive(Debug, Default)]
pub struct TxLog {
    /// Outstanding segments in sequence order (each ends where the next begins).
    segs: VecDeque<Sent>,
    /// Below this sequence number every segment is SACKed or marked lost and
    /// not yet resent: RACK's walk starts here (Linux keeps such segments off
    /// its time-sorted list for the same reason).
    settled: u64,
    /// How many logged segments are SACKed (Linux's `sacked_out`), kept as they change.
    sacked: u64,
}

impl TxLog {
    pub fn new() -> Self {
        TxLog::default()
    }

    /// New data `[start, end)` left at `at`.
    pub fn on_new(&mut self, start: u64, end: u64, at: Time) {
        if self.segs.back().is_none_or(|s| s.end < end) {
            self.segs.push_back(Sent { start, end, at, retransmitted: false, sacked: false, lost: false });
        }
    }

    /// `[start, end)` was sent again at `at`: every logged segment it overlaps.
    pub fn on_retransmit(&mut self, start: u64, end: u64, at: Time) {
        let first = self.first_ending_above(start);
        // Segments are contiguous: from the first ending after `start`, each
        // overlaps until (and including) the first that ends at or after `end`.
        self.settled = self.settled.min(start);
        for s in self.segs.iter_mut().skip(first) {
            s.at = at;
            s.retransmitted = true;
            s.lost = false;
            if s.end >= end {
                break;
            }
        }
    }

    /// Everything below `ack` was acknowledged at `now`: the RTT sample Linux takes, if any.
    pub fn on_ack(&mut self, ack: u64, now: Time, timestamps: bool) -> Option<Time> {
        self.on_ack_with(ack, now, timestamps, |_| {})
    }

    /// `on_ack`, telling `delivered` of each newly acknowledged segment not SACKed before.
    pub fn on_ack_with(
        &mut self,
        ack: u64,
        now: Time,
        timestamps: bool,
        mut delivered: impl FnMut(Outstanding),
    ) -> Option<Time> {
        let mut oldest_fresh: Option<Time> = None;
        let mut latest_retransmission: Option<Time> = None;
        let mut any_retransmitted = false;
        while let Some(s) = self.segs.front() {
            if s.end > ack {
                break;
            }
            if s.sacked {
                self.sacked -= 1;
            } else {
                delivered(Outstanding { start: s.start, end: s.end, sent: s.at, retransmitted: s.retransmitted });
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

    /// Index of the first logged segment ending above `seq`. Usually the
    /// head (nothing settled, a SACK or resend near snd_una): answered from
    /// it without a binary search, which on a long log touches a cache line
    /// per probe on every ACK.
    fn first_ending_above(&self, seq: u64) -> usize {
        if self.segs.front().is_none_or(|s| s.end > seq) {
            return 0;
        }
        self.segs.partition_point(|s| s.end <= seq)
    }

    /// When the first outstanding segment (the head, at snd_una) was last sent.
    pub fn head_sent(&self) -> Option<Time> {
        self.segs.front().map(|s| s.at)
    }

    /// Marks as SACKed every segment inside `[start, end)` that was not,
    /// telling `delivered` of each.
    pub fn on_sacked(&mut self, start: u64, end: u64, mut delivered: impl FnMut(Outstanding)) {
        let first = self.first_ending_above(start);
        for s in self.segs.iter_mut().skip(first) {
            if s.start >= end {
                break;
            }
            if !s.sacked && s.start >= start && s.end <= end {
                s.sacked = true;
                self.sacked += 1;
                s.lost = false;
                delivered(Outstanding { start: s.start, end: s.end, sent: s.at, retransmitted: s.retransmitted });
            }
        }
    }

    /// RACK's walk (`tcp_rack_detect_loss()`): `judge` sees each segment not
    /// SACKed and not already lost, in sequence order, from the settled
    /// prefix up; `Lost` marks it, and the walk stops at the first fresh
    /// segment judged `NotYet` (fresh data leaves in sequence order, so
    /// nothing above it was sent earlier). `on_lost` hears of each newly lost one.
    pub fn rack_walk(
        &mut self,
        mut judge: impl FnMut(Outstanding) -> Verdict,
        mut on_lost: impl FnMut(Outstanding),
    ) -> Option<Time> {
        let first = self.first_ending_above(self.settled);
        let mut prefix = true;
        let mut wait: Option<Time> = None;
        for s in self.segs.iter_mut().skip(first) {
            let o = Outstanding { start: s.start, end: s.end, sent: s.at, retransmitted: s.retransmitted };
            if !(s.sacked || s.lost) {
                match judge(o) {
                    Verdict::Lost => {
                        s.lost = true;
                        on_lost(o);
                    }
                    Verdict::Wait(t) => wait = Some(wait.map_or(t, |w: Time| w.max(t))),
                    Verdict::NotYet if !s.retransmitted => break,
                    Verdict::NotYet => {}
                }
            }
            if prefix && (s.sacked || s.lost) {
                self.settled = s.end;
            } else {
                prefix = false;
            }
        }
        wait
    }

    /// A timeout was undone: no segment is marked lost any more (RACK walks
    /// from the bottom again).
    pub fn unmark_lost(&mut self) {
        for s in self.segs.iter_mut() {
            s.lost = false;
        }
        self.settled = 0;
    }

    /// Retransmissions in flight (Linux's `retrans_out`): outstanding
    /// segments resent and neither SACKed nor declared lost since.
    pub fn retrans_out(&self) -> u64 {
        self.segs.iter().filter(|s| s.retransmitted && !s.sacked && !s.lost).count() as u64
    }

    /// SACKed segments still above the cumulative ACK (Linux's `sacked_out`).
    pub fn sacked_segments(&self) -> u64 {
        self.sacked
    }

    /// Cache hints for both ends of the log: ACKs take from the front, new
    /// data goes on the back.
    pub fn prefetch(&self) {
        if let (Some(f), Some(b)) = (self.segs.front(), self.segs.back()) {
            // An ACK usually covers two segments: the line after the head's too.
            crate::prefetch::span((f as *const Sent).cast(), 2 * std::mem::size_of::<Sent>());
            crate::prefetch::line(b);
        }
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
        l.on_new(0, 1000, 10);
        l.on_new(1000, 2000, 20);
        l.on_new(2000, 3000, 30);
        assert_eq!(l.on_ack(2000, 100, false), Some(90));
        assert_eq!(l.len(), 1);
        assert_eq!(l.on_ack(2500, 110, false), None); // a partly acked segment is not yet acked
    }

    #[test]
    fn retransmitted_data_is_timed_only_through_timestamps() {
        let mut l = TxLog::new();
        l.on_new(0, 1000, 10);
        l.on_new(1000, 2000, 20);
        l.on_retransmit(0, 1000, 500);
        let mut l2 = TxLog::new();
        l2.on_new(0, 1000, 10);
        l2.on_new(1000, 2000, 20);
        l2.on_retransmit(0, 1000, 500);
        assert_eq!(l.on_ack(2000, 600, false), None); // Karn
        assert_eq!(l2.on_ack(2000, 600, true), Some(100)); // the echo of the retransmission
    }

    #[test]
    fn the_sacked_count_follows_sacks_and_cumulative_acks() {
        let mut l = TxLog::new();
        for i in 0..5 {
            l.on_new(i * 1000, (i + 1) * 1000, i);
        }
        l.on_sacked(2000, 4000, |_| {});
        l.on_sacked(2000, 4000, |_| {}); // the same block again counts once
        assert_eq!(l.sacked_segments(), 2);
        l.on_ack(3000, 10, true);
        assert_eq!(l.sacked_segments(), 1);
        l.on_ack(5000, 10, true);
        assert_eq!(l.sacked_segments(), 0);
    }

    #[test]
    fn a_retransmission_marks_every_segment_it_overlaps() {
        let mut l = TxLog::new();
        l.on_new(0, 500, 1);
        l.on_new(500, 1500, 2);
        l.on_new(1500, 2500, 3);
        l.on_retransmit(400, 1460, 9);
        assert_eq!(l.on_ack(1500, 10, true), Some(1));
        assert_eq!(l.on_ack(2500, 10, true), Some(7)); // untouched segment: fresh
    }
}
