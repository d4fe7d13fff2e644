//! Selective acknowledgements: the blocks an ACK carries (RFC 2018) and the
//! sender's scoreboard for SACK-based loss recovery (RFC 6675).
//!
//! The scoreboard only answers questions about sequence space (what is
//! SACKed, what is lost, how much is in the pipe, what to resend next); the
//! sender decides when recovery starts and ends and does the sending.

use super::ranges::RangeSet;

/// Blocks per ACK. A SACK option takes 2 + 8n bytes of the 40 option bytes,
/// so 4 fit (RFC 2018 §3); our headers carry no timestamp option, which is
/// what limits Linux to 3.
pub const MAX_SACK_BLOCKS: usize = 4;

/// Up to [`MAX_SACK_BLOCKS`] ranges `[start, end)` of data held above the
/// cumulative ACK, most recently changed first (RFC 2018 §4). `Copy`, so
/// that ACKs stay plain values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlocks {
    ranges: [(u64, u64); MAX_SACK_BLOCKS],
    len: u8,
}

impl SackBlocks {
    /// Appends `[start, end)`; returns false (and keeps nothing) when full.
    pub fn push(&mut self, start: u64, end: u64) -> bool {
        let n = self.len as usize;
        if n == MAX_SACK_BLOCKS {
            return false;
        }
        self.ranges[n] = (start, end);
        self.len += 1;
        true
    }

    pub fn as_slice(&self) -> &[(u64, u64)] {
        &self.ranges[..self.len as usize]
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn is_full(&self) -> bool {
        self.len as usize == MAX_SACK_BLOCKS
    }

    /// TCP option bytes on the wire: kind, length and 8 bytes per block,
    /// padded with NOPs to a multiple of 4 (12, 20, 28 or 36).
    pub fn option_bytes(&self) -> u64 {
        match self.len {
            0 => 0,
            n => (2 + 8 * n as u64).div_ceil(4) * 4,
        }
    }
}

/// The sender's view of what the receiver holds above `snd_una`, plus the
/// per-episode retransmission marks of RFC 6675 (HighRxt, RescueRxt).
///
/// Sequence numbers are bytes. `HighRxt` and `RescueRxt` are kept as
/// exclusive ends (one past the highest octet retransmitted).
#[derive(Clone, Debug)]
pub struct Scoreboard {
    mss: u64,
    dupthresh: u64,
    /// SACKed ranges above snd_una.
    sacked: RangeSet,
    /// Every unSACKed byte below this is lost, whatever the SACKs say: set
    /// by a retransmission timeout (everything outstanding was presumed lost).
    lost_floor: u64,
    /// RFC 6675 HighRxt (exclusive): bytes below it were resent this episode.
    high_rxt: u64,
    /// RFC 6675 RescueRxt (exclusive); `None` = undefined.
    rescue_rxt: Option<u64>,
    /// Every unSACKed byte below this was declared lost by RACK (`recovery/rack.rs`).
    rack_lost: u64,
}

impl Scoreboard {
    pub fn new(mss: u64, dupthresh: u64) -> Scoreboard {
        Scoreboard {
            mss: mss.max(1),
            dupthresh: dupthresh.max(1),
            sacked: RangeSet::new(),
            lost_floor: 0,
            high_rxt: 0,
            rescue_rxt: None,
            rack_lost: 0,
        }
    }

    /// RFC 6675 Update(): forget what `snd_una` now covers and record the
    /// ACK's blocks. A block must start above `snd_una` (one that does not
    /// is stale, a D-SACK or nonsense: ignored) and is cut at `snd_max`
    /// (never sent). Returns the bytes newly SACKed by this ACK.
    pub fn update(&mut self, snd_una: u64, blocks: &[(u64, u64)], snd_max: u64) -> u64 {
        self.sacked.remove_below(snd_una);
        let mut newly = 0;
        for &(s, end) in blocks {
            let e = end.min(snd_max);
            if s > snd_una && s < e {
                newly += self.sacked.insert(s, e);
            }
        }
        newly
    }

    pub fn is_empty(&self) -> bool {
        self.sacked.is_empty()
    }

    /// Cache hint for the SACKed ranges.
    pub fn prefetch(&self) {
        self.sacked.prefetch();
    }

    /// Total SACKed bytes above snd_una.
    pub fn sacked_bytes(&self) -> u64 {
        self.sacked.as_slice().iter().map(|&(s, e)| e - s).sum()
    }

    pub fn is_sacked(&self, seq: u64) -> bool {
        self.sacked.containing(seq).is_some()
    }

    /// One past the highest SACKed byte (0 when nothing is SACKed).
    pub fn highest_sacked(&self) -> u64 {
        self.sacked.last().map_or(0, |(_, e)| e)
    }

    /// RFC 6675 IsLost(seq): more than (DupThresh - 1)·SMSS bytes, or
    /// DupThresh discontiguous SACKed blocks, lie above `seq` (and `seq`
    /// itself is not SACKed). Also true below a timeout's `lost_floor`.
    pub fn is_lost(&self, seq: u64) -> bool {
        seq < self.lost_edge() && !self.is_sacked(seq)
    }

    /// Every unSACKed byte below this is lost. SACKed bytes above a byte
    /// only shrink as the byte rises, so the lost bytes are the holes below
    /// one edge: the start of the block where the count from the top first
    /// passes the threshold.
    pub fn lost_edge(&self) -> u64 {
        let threshold = (self.dupthresh - 1).saturating_mul(self.mss);
        let (mut bytes, mut blocks) = (0u64, 0u64);
        let mut edge = 0;
        for &(s, e) in self.sacked.as_slice().iter().rev() {
            bytes += e - s;
            blocks += 1;
            if bytes > threshold || blocks >= self.dupthresh {
                edge = s;
                break;
            }
        }
        edge.max(self.lost_floor).max(self.rack_lost)
    }

    /// RACK declared the segment ending at `end` lost (and every hole below it,
    /// all sent earlier: the simulated network does not reorder).
    pub fn mark_lost_below(&mut self, end: u64) {
        self.rack_lost = self.rack_lost.max(end);
    }

    /// RACK found the retransmission of `[start, ..)` lost too: it may be sent again.
    pub fn reopen(&mut self, start: u64, end: u64) {
        self.mark_lost_below(end);
        self.high_rxt = self.high_rxt.min(start);
    }

    /// One past the highest byte retransmitted in this episode (RFC 6675 HighRxt).
    pub fn high_rxt(&self) -> u64 {
        self.high_rxt
    }

    /// RFC 6675 SetPipe(): over the unSACKed bytes of `[snd_una, snd_max)`,
    /// one for each byte not lost plus one for each byte retransmitted.
    pub fn pipe(&self, snd_una: u64, snd_max: u64) -> u64 {
        if snd_una >= snd_max {
            return 0;
        }
        let edge = self.lost_edge().clamp(snd_una, snd_max);
        let not_lost = (snd_max - edge) - self.sacked_between(edge, snd_max);
        let hr = self.high_rxt.clamp(snd_una, snd_max);
        let resent = (hr - snd_una) - self.sacked_between(snd_una, hr);
        not_lost + resent
    }

    /// NextSeg() rule 1: the first lost hole above HighRxt, as `[s, e)`
    /// (the caller cuts it to one segment).
    pub fn next_lost(&self, snd_una: u64, snd_max: u64) -> Option<(u64, u64)> {
        let limit = self.lost_edge().min(snd_max);
        self.hole_from(self.high_rxt.max(snd_una), limit)
    }

    /// NextSeg() rule 3: the first unSACKed hole above HighRxt and below the
    /// highest SACKed byte, lost or not.
    pub fn next_unsacked(&self, snd_una: u64, snd_max: u64) -> Option<(u64, u64)> {
        let limit = self.highest_sacked().min(snd_max);
        self.hole_from(self.high_rxt.max(snd_una), limit)
    }

    /// NextSeg() rule 4, the rescue retransmission: at most once per
    /// episode, once snd_una is past RescueRxt, up to one segment ending at
    /// the highest unSACKed outstanding byte.
    pub fn rescue(&self, snd_una: u64, snd_max: u64) -> Option<(u64, u64)> {
        if snd_una >= snd_max || self.rescue_rxt.is_some_and(|r| snd_una < r) {
            return None;
        }
        // The highest unSACKed byte is just below the top block when that
        // block reaches snd_max, else snd_max - 1.
        let mut end = snd_max;
        if let Some((s, e)) = self.sacked.last() {
            if e >= snd_max {
                end = s;
            }
        }
        if end <= snd_una {
            return None;
        }
        let below = self.sacked.first_at_or_above(end).checked_sub(1).map_or(0, |i| self.sacked.as_slice()[i].1);
        let start = snd_una.max(below).max(end.saturating_sub(self.mss));
        Some((start, end))
    }

    /// End of the unSACKed run starting at `seq` (which is not SACKed):
    /// the next SACKed block's start, or `snd_max`.
    pub fn hole_end(&self, seq: u64, snd_max: u64) -> u64 {
        self.block_from(seq).map_or(snd_max, |(s, _)| s.min(snd_max))
    }

    /// Recovery begins with a retransmission ending at `first_rtx_end`
    /// (RFC 6675 step 4.3: HighRxt = RescueRxt = that end).
    pub fn start_episode(&mut self, first_rtx_end: u64) {
        self.high_rxt = first_rtx_end;
        self.rescue_rxt = Some(first_rtx_end);
    }

    /// A rule 1 or 3 retransmission of `[seq, end)` (HighRxt moves up).
    pub fn on_retransmit(&mut self, end: u64) {
        self.high_rxt = self.high_rxt.max(end);
    }

    /// The rescue retransmission was sent: no other until `recovery_point`.
    pub fn on_rescue(&mut self, recovery_point: u64) {
        self.rescue_rxt = Some(recovery_point);
    }

    /// A retransmission timeout: every unSACKed byte below `snd_max` is lost
    /// and nothing counts as resent any more. The SACKed blocks are kept
    /// (as Linux does; the simulated receiver never reneges).
    pub fn on_timeout(&mut self, snd_una: u64, snd_max: u64) {
        self.lost_floor = snd_max;
        self.high_rxt = snd_una;
        self.rescue_rxt = None;
    }

    /// A timeout was undone (Linux's tcp_undo_cwnd_reduction() with
    /// unmark_loss): no byte is lost by the timeout's or RACK's verdict.
    pub fn unmark_lost(&mut self) {
        self.lost_floor = 0;
        self.rack_lost = 0;
    }

    /// Recovery after a timeout is over: losses are SACK-detected again.
    pub fn end_timeout_recovery(&mut self) {
        self.lost_floor = 0;
    }

    /// First unSACKed range at or above `from` and below `limit`.
    fn hole_from(&self, from: u64, limit: u64) -> Option<(u64, u64)> {
        let start = self.sacked.containing(from).map_or(from, |(_, e)| e);
        if start >= limit {
            return None;
        }
        let end = self.block_from(start).map_or(limit, |(s, _)| s.min(limit));
        Some((start, end))
    }

    /// The first SACKed block starting at or above `seq`.
    fn block_from(&self, seq: u64) -> Option<(u64, u64)> {
        self.sacked.as_slice().get(self.sacked.first_at_or_above(seq)).copied()
    }

    fn sacked_between(&self, a: u64, b: u64) -> u64 {
        if a >= b {
            return 0;
        }
        // From the last block starting below `a` (it may reach into
        // `[a, b)`) through the last starting below `b`.
        let from = self.sacked.first_at_or_above(a).saturating_sub(1);
        self.sacked.as_slice()[from..]
            .iter()
            .take_while(|&&(s, _)| s < b)
            .map(|&(s, e)| e.min(b).saturating_sub(s.max(a)))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(blocks: &[(u64, u64)]) -> Scoreboard {
        let mut sb = Scoreboard::new(100, 3);
        sb.update(0, blocks, 10_000);
        sb
    }

    #[test]
    fn blocks_and_option_bytes() {
        let mut b = SackBlocks::default();
        assert_eq!((b.len(), b.option_bytes()), (0, 0));
        for (i, want) in [12, 20, 28, 36].into_iter().enumerate() {
            assert!(b.push(i as u64 * 10, i as u64 * 10 + 5));
            assert_eq!(b.option_bytes(), want);
        }
        assert!(!b.push(100, 200));
        assert_eq!(b.as_slice().len(), MAX_SACK_BLOCKS);
        assert!(b.is_full());
    }

    #[test]
    fn update_merges_clips_and_counts_new_bytes() {
        let mut sb = Scoreboard::new(100, 3);
        assert_eq!(sb.update(100, &[(300, 400), (500, 600)], 1000), 200);
        assert_eq!(sb.update(100, &[(350, 500)], 1000), 100); // bridges both
        assert_eq!(sb.sacked_bytes(), 300);
        // Below or at snd_una: ignored; beyond snd_max: cut; inverted: ignored.
        assert_eq!(sb.update(100, &[(0, 200), (100, 150), (900, 5000), (700, 600)], 1000), 100);
        assert_eq!(sb.sacked_bytes(), 400);
        assert_eq!(sb.update(350, &[], 1000), 0); // cumulative ACK cuts the block
        assert_eq!(sb.sacked_bytes(), 350);
        assert!(sb.is_sacked(350) && !sb.is_sacked(349) && !sb.is_sacked(600));
        assert_eq!(sb.highest_sacked(), 1000);
        assert_eq!(sb.update(2000, &[], 3000), 0);
        assert!(sb.is_empty());
    }

    #[test]
    fn is_lost_by_bytes_or_blocks() {
        // 300 bytes above 0..100 is more than (3-1)*100: lost.
        let sb = board(&[(100, 400)]);
        assert!(sb.is_lost(0) && sb.is_lost(99));
        assert!(!sb.is_lost(100));
        // Exactly 200 bytes above: not yet.
        let sb = board(&[(100, 300)]);
        assert!(!sb.is_lost(0));
        // Three discontiguous small blocks above: lost.
        let sb = board(&[(100, 110), (200, 210), (300, 310)]);
        assert!(sb.is_lost(50));
        assert!(!sb.is_lost(150)); // only two blocks, 20 bytes above
        assert_eq!(sb.lost_edge(), 100);
    }

    #[test]
    fn pipe_counts_unsacked_not_lost_plus_retransmitted() {
        // Holes: [0,100) lost, [400,500) lost? 500 bytes above 400: yes.
        // [1000,1200): 0 above, not lost.
        let mut sb = board(&[(100, 400), (500, 1000)]);
        assert_eq!(sb.lost_edge(), 500);
        assert_eq!(sb.pipe(0, 1200), 200);
        assert_eq!(sb.next_lost(0, 1200), Some((0, 100)));
        sb.start_episode(100);
        assert_eq!(sb.pipe(0, 1200), 300);
        assert_eq!(sb.next_lost(0, 1200), Some((400, 500)));
        sb.on_retransmit(500);
        assert_eq!(sb.pipe(0, 1200), 400);
        assert_eq!(sb.next_lost(0, 1200), None);
        // Rule 3: nothing unSACKed below the top of the SACKed data is left.
        assert_eq!(sb.next_unsacked(0, 1200), None);
        // Rescue: not before snd_una passes RescueRxt (= 100), then the
        // last segment of the tail hole [1000, 1200).
        assert_eq!(sb.rescue(0, 1200), None);
        assert_eq!(sb.rescue(100, 1200), Some((1100, 1200)));
        sb.on_rescue(1200);
        assert_eq!(sb.rescue(100, 1200), None);
    }

    #[test]
    fn rule_three_and_rescue_below_top_block() {
        let mut sb = board(&[(100, 200), (300, 400)]);
        assert_eq!(sb.next_lost(0, 400), None); // 200 bytes above: not lost
        assert_eq!(sb.next_unsacked(0, 400), Some((0, 100)));
        sb.start_episode(100);
        assert_eq!(sb.next_unsacked(0, 400), Some((200, 300)));
        // Top block reaches snd_max: rescue the hole below it.
        assert_eq!(sb.rescue(100, 400), Some((200, 300)));
    }

    #[test]
    fn timeout_marks_everything_lost_and_keeps_sacks() {
        let mut sb = board(&[(200, 300)]);
        sb.start_episode(100);
        sb.on_timeout(0, 1000);
        assert!(sb.is_lost(0) && sb.is_lost(150) && sb.is_lost(999));
        assert!(!sb.is_lost(250) && !sb.is_lost(1000));
        assert_eq!(sb.pipe(0, 1000), 0);
        assert_eq!(sb.next_lost(0, 1000), Some((0, 200)));
        sb.on_retransmit(100);
        assert_eq!(sb.next_lost(0, 1000), Some((100, 200)));
        assert_eq!(sb.pipe(0, 1200), 300); // 100 resent + 200 new
        sb.end_timeout_recovery();
        assert!(!sb.is_lost(500));
    }

    // --- the sender and receiver with SACK on, over the test network ---

    use super::super::testnet::Net;
    use super::super::{Ack, Sender, TcpConfig};
    use crate::time::{Time, MS, SEC};

    const RATE: u64 = 100_000_000;

    fn cfg(sack: bool) -> TcpConfig {
        TcpConfig {
            mss: 1000,
            rto_min: 200 * MS,
            rto_max: 2 * SEC,
            delayed_ack: false,
            sndbuf: 2 << 20,
            rcvbuf: 2 << 20,
            sack,
            ..Default::default()
        }
    }

    /// Runs a transfer with the given first transmissions lost; returns the
    /// network and the span between the first and the last retransmission.
    fn transfer(sack: bool, drops: &[u64], total: u64) -> (Net, Time) {
        let mut net = Net::new(&cfg(sack), RATE, MS);
        for &d in drops {
            net.drop_nth(d, 1);
        }
        net.write(total);
        assert!(net.run(20 * SEC));
        assert_eq!(net.rx.delivered(), total);
        let resent: Vec<Time> = drops.iter().map(|&d| net.sends_of(d)[1]).collect();
        let span = resent.iter().max().unwrap() - resent.iter().min().unwrap();
        (net, span)
    }

    #[test]
    fn three_drops_in_one_window_three_retransmissions_no_timeout() {
        let drops = [300_000, 305_000, 310_000];
        let (net, span) = transfer(true, &drops, 2_000_000);
        let st = net.tx.stats();
        assert_eq!((st.fast_retransmits, st.timeouts, st.segments_retransmitted), (1, 0, 3));
        assert_eq!(st.bytes_retransmitted, 3000);
        // NewReno needs one round trip per hole (partial ACKs); SACK sends
        // the later holes together.
        let (reno, reno_span) = transfer(false, &drops, 2_000_000);
        assert_eq!(reno.tx.stats().segments_retransmitted, 3);
        assert!(2 * span < reno_span, "sack {span} ns vs newreno {reno_span} ns");
    }

    #[test]
    fn burst_of_ten_repaired_in_about_one_round_trip() {
        let drops: Vec<u64> = (0..10).map(|i| 300_000 + 1000 * i).collect();
        let (net, span) = transfer(true, &drops, 2_000_000);
        let st = net.tx.stats();
        assert_eq!((st.fast_retransmits, st.timeouts, st.segments_retransmitted), (1, 0, 10));
        // NewReno: a partial ACK per hole, nine more round trips.
        let (reno, reno_span) = transfer(false, &drops, 2_000_000);
        assert_eq!(reno.tx.stats().timeouts, 0);
        let srtt = net.tx.srtt().unwrap();
        assert!(span < 2 * srtt, "span {span} ns, srtt {srtt} ns");
        assert!(reno_span > 5 * span, "sack {span} ns vs newreno {reno_span} ns");
    }

    #[test]
    fn acks_carry_the_blocks_and_packets_grow_by_the_option() {
        let (net, _) = transfer(true, &[300_000, 310_000], 1_000_000);
        let with_blocks: Vec<&Ack> = net.acked.iter().map(|a| &a.1).filter(|a| !a.sack.is_empty()).collect();
        assert!(!with_blocks.is_empty());
        assert!(with_blocks.iter().any(|a| a.sack.len() == 2));
        for a in with_blocks {
            assert!(a.sack.as_slice().iter().all(|&(s, e)| s > a.ack && s < e));
            let p = crate::net::packet::Packet::ack(0, 1, 0, *a);
            assert_eq!(p.ip_bytes, 40 + a.sack.option_bytes());
        }
    }

    #[test]
    fn after_a_timeout_only_the_holes_are_resent() {
        let mut s = Sender::new(&TcpConfig { initial_cwnd_segments: 10, ..cfg(true) });
        s.write(10_000);
        let first: Vec<_> = std::iter::from_fn(|| s.poll_transmit(0)).collect();
        assert_eq!(first.len(), 10);
        // [0, 2000) lost; the receiver holds the rest: one dupack SACKing it.
        let mut blocks = SackBlocks::default();
        blocks.push(2000, 10_000);
        s.on_ack(MS, Ack { ack: 0, window: 1 << 20, sack: blocks, tsecr: None });
        // 8 segments SACKed above both holes: they are lost, recovery starts.
        assert!(s.in_recovery());
        let rtx: Vec<_> = std::iter::from_fn(|| s.poll_transmit(MS)).map(|g| (g.seq, g.len)).collect();
        assert_eq!(rtx, vec![(0, 1000), (1000, 1000)]);
        // Both retransmissions are lost too: timeout. The SACKed data is not
        // resent (the scoreboard is kept), the holes go as cwnd allows.
        let t = s.poll_timeout().unwrap();
        s.on_timeout(t);
        assert_eq!(s.stats().timeouts, 1);
        let rtx: Vec<_> = std::iter::from_fn(|| s.poll_transmit(t)).map(|g| (g.seq, g.len)).collect();
        assert_eq!(rtx, vec![(0, 1000)]); // cwnd = 1 MSS
        s.on_ack(t + MS, Ack { ack: 1000, window: 1 << 20, sack: blocks, tsecr: None });
        let rtx: Vec<_> = std::iter::from_fn(|| s.poll_transmit(t + MS)).map(|g| (g.seq, g.len)).collect();
        assert_eq!(rtx, vec![(1000, 1000)]);
        s.on_ack(t + 2 * MS, Ack::new(10_000, 1 << 20));
        assert_eq!((s.acked(), s.poll_timeout()), (10_000, None));
        assert_eq!(s.stats().segments_retransmitted, 4);
    }

    #[test]
    fn only_acks_with_new_sack_information_count_as_duplicates() {
        let mut s = Sender::new(&cfg(true));
        s.write(10_000);
        while s.poll_transmit(0).is_some() {}
        let mut blocks = SackBlocks::default();
        blocks.push(1000, 2000);
        for _ in 0..5 {
            s.on_ack(MS, Ack { ack: 0, window: 1 << 20, sack: blocks, tsecr: None });
            // same block again
        }
        assert!(!s.in_recovery());
        blocks.push(3000, 4000);
        s.on_ack(MS, Ack { ack: 0, window: 1 << 20, sack: blocks, tsecr: None });
        assert!(!s.in_recovery());
        blocks.push(5000, 6000);
        s.on_ack(MS, Ack { ack: 0, window: 1 << 20, sack: blocks, tsecr: None });
        assert!(s.in_recovery()); // third ACK with news (also 3 blocks above 0)
        assert_eq!(s.stats().fast_retransmits, 1);
    }
}
