//! The receiving end: reassembly, cumulative ACKs, delayed ACK, and
//! optionally SACK blocks (RFC 2018).

use super::ranges::RangeSet;
use super::sack::{SackBlocks, MAX_SACK_BLOCKS};
use super::{Ack, Segment, TcpConfig};
use crate::time::Time;
use std::collections::VecDeque;

#[derive(Clone, Debug)]
pub struct Receiver {
    mss: u64,
    rcvbuf: u64,
    delayed_ack: bool,
    delayed_ack_timeout: Time,
    /// Next byte expected; everything below was delivered to the application.
    rcv_nxt: u64,
    /// Out-of-order data, all above rcv_nxt.
    ooo: RangeSet,
    ooo_bytes: u64,
    /// In-order bytes received since the last ACK (delayed ACK).
    unacked_bytes: u64,
    delack_deadline: Option<Time>,
    /// ACKs generated but not yet polled, each with the state at its creation.
    pending: VecDeque<Ack>,
    acks_sent: u64,
    /// Report SACK blocks in ACKs.
    sack: bool,
    /// Starts of the latest out-of-order arrivals, newest first: the blocks
    /// holding them are reported first (RFC 2018 §4).
    recent: VecDeque<u64>,
    /// Linux's quick-ACK mode (`tcp.quickack`): segments still to ACK at once
    /// although ACKs are delayed; refilled at start and after an idle gap.
    quick: u64,
    /// Refill `quick` when data arrives after this long without any (Linux: the RTO).
    quick_idle: Option<Time>,
    last_arrival: Option<Time>,
    /// SACK blocks per ACK: fewer when timestamps share the option space.
    max_sack_blocks: usize,
    /// RFC 7323 TS.Recent, echoed in every ACK (TSecr).
    ts_recent: Option<Time>,
    /// rcv_nxt when the last ACK was sent (Linux's `rcv_wup`).
    rcv_wup: u64,
}

/// TCP_MAX_QUICKACKS (include/net/tcp.h): quick ACKs at start and after idle.
pub const MAX_QUICKACKS: u64 = 16;

impl Receiver {
    pub fn new(cfg: &TcpConfig) -> Receiver {
        Receiver {
            mss: cfg.mss.max(1),
            rcvbuf: cfg.rcvbuf,
            delayed_ack: cfg.delayed_ack,
            delayed_ack_timeout: cfg.delayed_ack_timeout,
            rcv_nxt: 0,
            ooo: RangeSet::new(),
            ooo_bytes: 0,
            unacked_bytes: 0,
            delack_deadline: None,
            pending: VecDeque::new(),
            acks_sent: 0,
            sack: cfg.sack,
            recent: VecDeque::new(),
            quick: if cfg.quickack { MAX_QUICKACKS } else { 0 },
            quick_idle: cfg.quickack.then_some(cfg.rto_min),
            last_arrival: None,
            max_sack_blocks: if cfg.timestamps { super::MAX_SACK_BLOCKS_WITH_TIMESTAMPS } else { MAX_SACK_BLOCKS },
            ts_recent: None,
            rcv_wup: 0,
        }
    }

    pub fn on_segment(&mut self, now: Time, seg: Segment) {
        // RFC 7323 §4.3 as Linux's tcp_replace_ts_recent(): TS.Recent takes the
        // TSval of a segment that starts at or below the last ACKed point
        // (rcv_wup) and is not wholly below it (tcp_sequence()), never moving
        // back (PAWS). So an ACK echoes the segment that advanced the receiver:
        // the original if it arrives first, the retransmission if it repairs.
        if seg.seq <= self.rcv_wup
            && seg.seq.saturating_add(seg.len) >= self.rcv_wup
            && self.ts_recent.is_none_or(|t| seg.tsval >= t)
        {
            self.ts_recent = Some(seg.tsval);
        }
        // Keep only the part that is new and fits the buffer, which spans
        // [rcv_nxt, rcv_nxt + rcvbuf): out-of-order bytes then never exceed rcvbuf.
        let start = seg.seq.max(self.rcv_nxt);
        let end = seg.seq.saturating_add(seg.len).min(self.rcv_nxt.saturating_add(self.rcvbuf));
        if start >= end {
            // Duplicate, empty or beyond the window: an immediate ACK tells
            // the sender where we are (RFC 793 / RFC 5681 §4.2).
            return self.ack_now();
        }
        if start > self.rcv_nxt {
            // Out of order: buffer it and send a duplicate ACK at once.
            self.insert_ooo(start, end);
            if self.sack {
                self.recent.push_front(start);
                self.recent.truncate(2 * MAX_SACK_BLOCKS);
            }
            return self.ack_now();
        }
        let filled_hole = !self.ooo.is_empty();
        self.rcv_nxt = end;
        self.pull_in_order();
        // tcp_event_data_recv(): data after an idle gap longer than the RTO
        // re-enters quick-ACK mode (tcp_incr_quickack).
        if let (Some(idle), Some(last)) = (self.quick_idle, self.last_arrival) {
            if now.saturating_sub(last) > idle {
                self.quick = MAX_QUICKACKS;
            }
        }
        self.last_arrival = Some(now);
        if filled_hole || !self.delayed_ack {
            return self.ack_now();
        }
        if self.quick > 0 {
            // tcp_in_quickack_mode(): ACK at once, one quick ACK used (tcp_dec_quickack_mode).
            self.quick -= 1;
            return self.ack_now();
        }
        // Delayed ACK (RFC 1122 §4.2.3.2, RFC 5681 §4.2): at least every
        // second full-sized segment, else when the timer fires.
        self.unacked_bytes += end - start;
        if self.unacked_bytes >= 2 * self.mss {
            self.ack_now();
        } else if self.delack_deadline.is_none() {
            self.delack_deadline = Some(now.saturating_add(self.delayed_ack_timeout));
        }
    }

    /// Cache hints for the buffers a segment's arrival touches.
    pub fn prefetch(&self) {
        // Where the next ACK goes (the queue is usually empty between packets).
        crate::prefetch::span(self.pending.as_slices().0.as_ptr().cast(), std::mem::size_of::<Ack>());
        self.ooo.prefetch();
        if let Some(r) = self.recent.front() {
            crate::prefetch::line(r);
        }
    }

    /// Bytes delivered in order to the application (rcv_nxt).
    pub fn delivered(&self) -> u64 {
        self.rcv_nxt
    }

    /// Advertised window: the buffer minus what out-of-order data occupies
    /// (the application reads in-order data instantly).
    pub fn window(&self) -> u64 {
        self.rcvbuf.saturating_sub(self.ooo_bytes)
    }

    pub fn ooo_bytes(&self) -> u64 {
        self.ooo_bytes
    }

    pub fn acks_sent(&self) -> u64 {
        self.acks_sent
    }

    /// The next ACK to send; call until `None` after each input.
    pub fn poll_ack(&mut self, _now: Time) -> Option<Ack> {
        let a = self.pending.pop_front()?;
        self.acks_sent += 1;
        Some(a)
    }

    /// Delayed-ACK timer deadline.
    pub fn poll_timeout(&self) -> Option<Time> {
        self.delack_deadline
    }

    /// Must be called when `now >= poll_timeout()`; otherwise a no-op.
    pub fn on_timeout(&mut self, now: Time) {
        if matches!(self.delack_deadline, Some(d) if now >= d) {
            self.ack_now();
        }
    }

    /// Queue a cumulative ACK; it covers everything, so the delayed-ACK
    /// state is cleared.
    fn ack_now(&mut self) {
        self.pending.push_back(Ack {
            ack: self.rcv_nxt,
            window: self.window(),
            sack: self.sack_blocks(),
            tsecr: self.ts_recent,
        });
        self.rcv_wup = self.rcv_nxt;
        self.unacked_bytes = 0;
        self.delack_deadline = None;
    }

    /// The out-of-order blocks, as many as fit: first those holding the most
    /// recent arrivals, newest first (RFC 2018 §4), then the lowest others.
    fn sack_blocks(&self) -> SackBlocks {
        let mut out = SackBlocks::default();
        if !self.sack || self.ooo.is_empty() {
            return out;
        }
        let recent = self.recent.iter().filter_map(|&seq| self.ooo.containing(seq));
        for (s, e) in recent.chain(self.ooo.as_slice().iter().copied()) {
            if out.len() >= self.max_sack_blocks {
                break;
            }
            if !out.as_slice().iter().any(|b| b.0 == s) {
                out.push(s, e);
            }
        }
        out
    }

    /// Adds [start, end) to the out-of-order set, merging overlapping and
    /// adjacent ranges.
    fn insert_ooo(&mut self, start: u64, end: u64) {
        self.ooo_bytes += self.ooo.insert(start, end);
    }

    /// Moves buffered ranges that became contiguous to the application.
    fn pull_in_order(&mut self) {
        let (bytes, end) = self.ooo.take_up_to(self.rcv_nxt);
        self.ooo_bytes -= bytes;
        self.rcv_nxt = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    fn cfg(delayed_ack: bool) -> TcpConfig {
        TcpConfig { mss: 100, rcvbuf: 1000, delayed_ack, delayed_ack_timeout: 40 * MS, ..Default::default() }
    }

    fn seg(seq: u64, len: u64) -> Segment {
        Segment { seq, len, retransmission: false, tsval: 0 }
    }

    fn acks(r: &mut Receiver) -> Vec<(u64, u64)> {
        std::iter::from_fn(|| r.poll_ack(0)).map(|a| (a.ack, a.window)).collect()
    }

    #[test]
    fn reassembly_and_window() {
        let mut r = Receiver::new(&cfg(false));
        r.on_segment(0, seg(0, 100));
        r.on_segment(0, seg(200, 100));
        r.on_segment(0, seg(400, 100));
        r.on_segment(0, seg(250, 100)); // overlaps and extends [200,300)
        r.on_segment(0, seg(200, 50)); // already held
        assert_eq!(acks(&mut r), vec![(100, 1000), (100, 900), (100, 800), (100, 750), (100, 750)]);
        assert_eq!(r.ooo_bytes(), 250);
        r.on_segment(0, seg(100, 100)); // fills the hole up to 350
        assert_eq!(acks(&mut r), vec![(350, 900)]);
        r.on_segment(0, seg(350, 50)); // adjacent to [400,500)
        assert_eq!(acks(&mut r), vec![(500, 1000)]);
        r.on_segment(0, seg(0, 500)); // pure duplicate
        assert_eq!(acks(&mut r), vec![(500, 1000)]);
        assert_eq!(r.delivered(), 500);
    }

    #[test]
    fn data_beyond_buffer_is_trimmed_or_dropped() {
        let mut r = Receiver::new(&cfg(false));
        r.on_segment(0, seg(1500, 100)); // entirely beyond rcv_nxt + rcvbuf
        r.on_segment(0, seg(950, 100)); // half fits
        assert_eq!(acks(&mut r), vec![(0, 1000), (0, 950)]);
        r.on_segment(0, seg(0, 950));
        assert_eq!(r.delivered(), 1000);
        r.on_segment(0, seg(1000, 100)); // the trimmed half, resent
        assert_eq!(r.delivered(), 1100);
        r.on_segment(0, seg(u64::MAX - 5, 100)); // no overflow
        r.on_segment(0, seg(0, 0));
        assert_eq!(r.delivered(), 1100);
    }

    #[test]
    fn quickack_mode_acks_the_first_16_segments_at_once_and_again_after_idle() {
        let c = TcpConfig { quickack: true, rto_min: 200 * MS, mss: 1000, rcvbuf: 1 << 20, ..cfg(true) };
        let mut r = Receiver::new(&c);
        let mut t = 0;
        for i in 0..20u64 {
            t += MS;
            r.on_segment(t, Segment { seq: i * 1000, len: 1000, retransmission: false, tsval: 0 });
        }
        // 16 quick ACKs, then one ACK per two full segments: 16 + 2.
        let mut acks = 0;
        while r.poll_ack(t).is_some() {
            acks += 1;
        }
        assert_eq!(acks, 18);
        // Idle longer than the RTO: quick again for the next segment.
        t += 300 * MS;
        r.on_segment(t, Segment { seq: 20_000, len: 1000, retransmission: false, tsval: 0 });
        assert!(r.poll_ack(t).is_some());
        // Without quick-ACK mode the first lone segment waits for the timer.
        let mut d = Receiver::new(&TcpConfig { quickack: false, ..c });
        d.on_segment(MS, Segment { seq: 0, len: 1000, retransmission: false, tsval: 0 });
        assert!(d.poll_ack(MS).is_none());
    }

    #[test]
    fn delayed_ack_every_second_segment_and_timer() {
        let mut r = Receiver::new(&cfg(true));
        r.on_segment(0, seg(0, 100));
        assert_eq!(acks(&mut r), vec![]);
        assert_eq!(r.poll_timeout(), Some(40 * MS));
        r.on_segment(MS, seg(100, 100));
        assert_eq!(acks(&mut r), vec![(200, 1000)]);
        assert_eq!(r.poll_timeout(), None);
        // A lone segment is acked by the timer, and not before.
        r.on_segment(10 * MS, seg(200, 100));
        r.on_timeout(49 * MS);
        assert_eq!(acks(&mut r), vec![]);
        r.on_timeout(50 * MS);
        assert_eq!(acks(&mut r), vec![(300, 1000)]);
        assert_eq!(r.poll_timeout(), None);
        // Out-of-order, hole-filling and duplicate segments are acked at once.
        r.on_segment(60 * MS, seg(400, 100));
        r.on_segment(60 * MS, seg(300, 100));
        r.on_segment(60 * MS, seg(0, 100));
        assert_eq!(acks(&mut r), vec![(300, 900), (500, 1000), (500, 1000)]);
        assert_eq!(r.acks_sent(), 5);
    }

    fn sack_of(r: &mut Receiver) -> Vec<Vec<(u64, u64)>> {
        std::iter::from_fn(|| r.poll_ack(0)).map(|a| a.sack.as_slice().to_vec()).collect()
    }

    #[test]
    fn with_timestamps_three_sack_blocks_fit() {
        let mut r = Receiver::new(&TcpConfig { sack: true, timestamps: true, rcvbuf: 10_000, ..cfg(false) });
        for start in [200, 400, 600, 800] {
            r.on_segment(0, seg(start, 100));
        }
        let last = sack_of(&mut r).pop().unwrap();
        assert_eq!(last, vec![(800, 900), (600, 700), (400, 500)]);
    }

    #[test]
    fn sack_blocks_most_recent_first() {
        let mut r = Receiver::new(&TcpConfig { sack: true, rcvbuf: 10_000, ..cfg(false) });
        r.on_segment(0, seg(0, 100));
        r.on_segment(0, seg(200, 100));
        r.on_segment(0, seg(600, 100));
        r.on_segment(0, seg(400, 100));
        r.on_segment(0, seg(300, 100)); // joins [200,300) and [400,500)
        assert_eq!(
            sack_of(&mut r),
            vec![
                vec![],
                vec![(200, 300)],
                vec![(600, 700), (200, 300)],
                vec![(400, 500), (600, 700), (200, 300)],
                vec![(200, 500), (600, 700)],
            ]
        );
        // At most four blocks; the oldest reported one drops out, and a
        // duplicate segment's ACK still reports the blocks.
        for start in [800, 1000, 1200, 1400] {
            r.on_segment(0, seg(start, 100));
        }
        let last = sack_of(&mut r).pop().unwrap();
        assert_eq!(last, vec![(1400, 1500), (1200, 1300), (1000, 1100), (800, 900)]);
        r.on_segment(0, seg(0, 100));
        assert_eq!(sack_of(&mut r)[0].len(), 4);
        // Filling the holes delivers [100, 700): those blocks vanish, the
        // others keep their most-recent-first order.
        r.on_segment(0, seg(100, 100));
        r.on_segment(0, seg(500, 100));
        let acks: Vec<_> = std::iter::from_fn(|| r.poll_ack(0)).collect();
        assert_eq!(acks[1].ack, 700);
        assert_eq!(acks[1].sack.as_slice(), &[(1400, 1500), (1200, 1300), (1000, 1100), (800, 900)]);
    }

    #[test]
    fn no_sack_blocks_when_off() {
        let mut r = Receiver::new(&cfg(false));
        r.on_segment(0, seg(200, 100));
        assert!(sack_of(&mut r).iter().all(|b| b.is_empty()));
    }
}
