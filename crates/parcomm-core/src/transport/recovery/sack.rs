//! SACK-based loss recovery (RFC 6675): a scoreboard of what the receiver
//! holds decides what is lost and what to resend, and `pipe` (not an
//! inflated window) limits sending in recovery. Options, as Linux has them:
//! RACK (RFC 8985 §6, `tcp_recovery.c`) declares segments lost by time, which
//! also finds lost retransmissions; PRR (RFC 6937) paces sending in recovery
//! by what the ACKs deliver.

use super::prr::Prr;
use super::rack::Rack;
use super::{Ctx, Episode, Next, Recovery, SackNews};
use crate::time::Time;
use crate::transport::sack::Scoreboard;
use crate::transport::seqspace::SeqSpace;
use crate::transport::txlog::{Outstanding, Verdict};
use crate::transport::Ack;

#[derive(Debug)]
pub struct SackRecovery {
    mss: u64,
    dupack_threshold: u64,
    ep: Episode,
    sb: Scoreboard,
    /// RACK loss detection (needs the sender's `TxLog`); `None` when off.
    rack: Option<Rack>,
    /// Proportional rate reduction in fast recovery.
    use_prr: bool,
    /// Its state while in fast recovery.
    prr: Option<Prr>,
    /// Walk the sender's log for SACKed segments (RACK, or F-RTO's evidence).
    track_sacked: bool,
}

impl SackRecovery {
    pub fn new(mss: u64, dupack_threshold: u64, rack: bool, prr: bool, frto: bool) -> Self {
        SackRecovery {
            mss,
            dupack_threshold,
            ep: Episode::default(),
            sb: Scoreboard::new(mss, dupack_threshold),
            rack: rack.then(Rack::new),
            use_prr: prr,
            prr: None,
            track_sacked: rack || frto,
        }
    }

    /// PRR: what this ACK lets recovery send (nothing to do outside it).
    /// `grow`: the ACK advanced snd_una and nothing was newly marked lost.
    fn prr_on_ack(&mut self, seq: &SeqSpace, ssthresh: u64, delivered: u64, grow: bool) {
        if !self.ep.in_recovery {
            return;
        }
        if let Some(prr) = self.prr.as_mut() {
            prr.on_ack(delivered, self.sb.pipe(seq.snd_una, seq.snd_max), ssthresh, self.mss, grow);
        }
    }

    /// `tcp_rack_detect_loss()`: every hole sent before the most recently
    /// delivered segment, and more than RACK.rtt + reo_wnd ago, is lost; a
    /// lost retransmission may go again. Arms the reordering timer for the
    /// holes not yet due. Returns how many segments it marked lost.
    fn rack_detect(&mut self, cx: &mut Ctx) -> u64 {
        let (Some(rack), Some(log)) = (self.rack.as_mut(), cx.log.as_deref_mut()) else {
            return 0;
        };
        let now = cx.now;
        let reo = rack.reo_wnd(self.ep.in_recovery || self.ep.rto_recovery, log.sacked_segments(), cx.rto.srtt());
        let high_rxt = self.sb.high_rxt();
        let sb = &mut self.sb;
        let rack_ro = &*rack;
        let mut lost_rtx = 0;
        let mut lost = 0;
        let wait = log.rack_walk(
            |seg| match rack_ro.time_to_loss(now, seg.sent, seg.end, reo) {
                None => Verdict::NotYet,
                Some(0) => Verdict::Lost,
                Some(t) => Verdict::Wait(t),
            },
            |seg| {
                lost += 1;
                if seg.retransmitted && seg.start < high_rxt {
                    sb.reopen(seg.start, seg.end); // a lost retransmission: it may go again
                    lost_rtx += 1;
                } else {
                    sb.mark_lost_below(seg.end);
                }
            },
        );
        rack.lost_retransmits += lost_rtx;
        match wait {
            Some(w) => rack.arm(now, w, cx.rto_deadline),
            None => rack.cancel(),
        }
        lost
    }

    /// RFC 6675 §5: enter loss recovery on DupThresh duplicate ACKs, or as
    /// soon as the scoreboard declares the first unacked segment lost.
    /// `recover` holds RecoveryPoint + 1 (exclusive), so "HighACK beyond
    /// RecoveryPoint" is `snd_una >= recover`: a loss in data sent after the
    /// previous episode's data is a new episode. Returns true if entered.
    fn maybe_enter_recovery(&mut self, cx: &mut Ctx) -> bool {
        let (una, max) = (cx.seq.snd_una, cx.seq.snd_max);
        if self.ep.in_recovery || self.ep.rto_recovery || una == max {
            return false;
        }
        if self.ep.dupacks < self.dupack_threshold && !self.sb.is_lost(una) {
            return false;
        }
        if self.ep.recover.is_some_and(|r| una < r) {
            return false;
        }
        cx.stats.fast_retransmits += 1;
        self.ep.in_recovery = true;
        self.ep.recover = Some(max);
        let prior_cwnd = cx.cc.cwnd();
        cx.enter_reduction(max - una); // RFC 6675 §5 step (4.2): cwnd = ssthresh, no inflation
        if self.use_prr {
            self.prr = Some(Prr::start(prior_cwnd));
        }
        // Step (4.3): resend the first hole at once, whatever pipe says.
        self.sb.start_episode((una + self.mss).min(self.sb.hole_end(una, max)));
        self.ep.rtx_pending = Some(una);
        true
    }

    /// RFC 6675 NextSeg() while recovering (fast recovery, or after a
    /// timeout), sending only while `cwnd - pipe >= 1 SMSS` (or, with PRR in
    /// fast recovery, as the ACKs' deliveries allow).
    fn next_segment(&mut self, cx: &mut Ctx) -> Next {
        let seq = &*cx.seq;
        let (una, max) = (seq.snd_una, seq.snd_max);
        match self.prr.as_ref() {
            Some(p) if self.ep.in_recovery => {
                if !p.may_send(self.sb.pipe(una, max)) {
                    return Next::Wait;
                }
            }
            _ => {
                if cx.cc.cwnd().saturating_sub(self.sb.pipe(una, max)) < self.mss {
                    return Next::Wait;
                }
            }
        }
        if cx.new_data_only {
            return match seq.new_data_in_window() {
                Some((_, len)) => Next::NewData { len },
                None => Next::Wait,
            };
        }
        // (1) The first lost hole not yet resent.
        if let Some((s, e)) = self.sb.next_lost(una, max) {
            let len = self.mss.min(e - s);
            self.sb.on_retransmit(s + len);
            return Next::Retransmit { seq: s, len };
        }
        // (2) New data, as the receiver's window allows.
        if let Some((_, len)) = seq.new_data_in_window() {
            return Next::NewData { len };
        }
        if !self.ep.in_recovery {
            return Next::Wait; // rules 3 and 4 belong to fast recovery
        }
        // (3) A hole below the highest SACKed byte, even if not yet lost.
        if let Some((s, e)) = self.sb.next_unsacked(una, max) {
            let len = self.mss.min(e - s);
            self.sb.on_retransmit(s + len);
            return Next::Retransmit { seq: s, len };
        }
        // (4) One rescue retransmission of the tail per episode.
        let Some((s, e)) = self.sb.rescue(una, max) else {
            return Next::Wait;
        };
        self.sb.on_rescue(self.ep.recover.unwrap_or(max));
        Next::Retransmit { seq: s, len: e - s }
    }
}

impl Recovery for SackRecovery {
    fn on_sack_info(&mut self, cx: &mut Ctx, ack: &Ack) -> SackNews {
        let max = cx.seq.snd_max;
        let bytes = self.sb.update(ack.ack, ack.sack.as_slice(), max);
        let mut oldest_sent: Option<Time> = None;
        let mut orig_end: Option<u64> = None;
        // RACK: segments inside this ACK's SACK blocks were delivered.
        if let (true, Some(log)) = (self.track_sacked, cx.log.as_deref_mut()) {
            let now = cx.now;
            let mut rack = self.rack.as_mut();
            for &(s, e) in ack.sack.as_slice() {
                log.on_sacked(s, e.min(max), |seg| {
                    if let Some(r) = rack.as_deref_mut() {
                        r.on_delivered(now, seg.sent, seg.end, seg.retransmitted);
                    }
                    if !seg.retransmitted {
                        oldest_sent = Some(oldest_sent.map_or(seg.sent, |t| t.min(seg.sent)));
                        orig_end = Some(orig_end.map_or(seg.end, |x| x.min(seg.end)));
                    }
                });
            }
        }
        SackNews { bytes, oldest_sent, orig_end }
    }

    fn on_duplicate_ack(&mut self, cx: &mut Ctx, newly_sacked: u64) {
        self.rack_detect(cx);
        if cx.seq.snd_una != cx.seq.snd_max {
            if newly_sacked > 0 {
                self.ep.dupacks += 1; // only ACKs with new SACK info count (RFC 6675 §2)
            }
            self.maybe_enter_recovery(cx);
        }
        let ssthresh = cx.cc.ssthresh();
        self.prr_on_ack(cx.seq, ssthresh, newly_sacked, false);
    }

    fn on_delivered(&mut self, now: Time, seg: &Outstanding) {
        if let Some(r) = self.rack.as_mut() {
            r.on_delivered(now, seg.sent, seg.end, seg.retransmitted);
        }
    }

    fn on_cumulative_ack(&mut self, cx: &mut Ctx, acked: u64) {
        self.ep.dupacks = 0;
        let una = cx.seq.snd_una;
        if self.ep.in_recovery {
            // A partial ACK changes nothing: pipe and the scoreboard decide
            // what goes next (RFC 6675 step B).
            if self.ep.covers_recover(una) {
                self.ep.in_recovery = false;
                self.prr = None;
                self.ep.rtx_pending = None;
                cx.end_reduction();
            }
        } else {
            cx.grow(acked);
        }
        if self.ep.rto_recovery && self.ep.covers_recover(una) {
            self.ep.rto_recovery = false;
            self.sb.end_timeout_recovery();
        }
    }

    fn after_cumulative_ack(&mut self, cx: &mut Ctx, delivered: u64) {
        let newly_lost = self.rack_detect(cx);
        self.maybe_enter_recovery(cx);
        let ssthresh = cx.cc.ssthresh();
        self.prr_on_ack(cx.seq, ssthresh, delivered, newly_lost == 0);
    }

    fn on_rto(&mut self, cx: &mut Ctx) {
        self.ep.on_rto(cx.seq.snd_max);
        self.prr = None;
        // The holes are resent as cwnd and pipe allow.
        self.sb.on_timeout(cx.seq.snd_una, cx.seq.snd_max);
        if let Some(r) = self.rack.as_mut() {
            r.cancel();
        }
    }

    fn on_undo(&mut self, cx: &mut Ctx) {
        self.ep.undo();
        self.prr = None;
        self.sb.unmark_lost();
        if let Some(log) = cx.log.as_deref_mut() {
            log.unmark_lost();
        }
        // tcp_undo_cwnd_reduction() sets rack.advanced: RACK looks again on
        // this ACK (after_cumulative_ack / on_duplicate_ack).
    }

    fn timer(&self) -> Option<Time> {
        self.rack.as_ref().and_then(Rack::deadline)
    }

    /// `tcp_rack_reo_timeout()`: mark what is now due, and recover.
    fn on_timer(&mut self, cx: &mut Ctx) -> bool {
        if let Some(r) = self.rack.as_mut() {
            r.cancel();
        }
        self.rack_detect(cx);
        let entered = self.maybe_enter_recovery(cx);
        if entered {
            // tcp_rack_reo_timeout(): entering recovery here reduces the window
            // as if one segment had been delivered (tcp_cwnd_reduction(sk, 1, 0, 0)).
            let ssthresh = cx.cc.ssthresh();
            self.prr_on_ack(cx.seq, ssthresh, self.mss, false);
        }
        entered
    }

    fn take_fast_retransmit(&mut self, seq: &SeqSpace) -> Option<(u64, u64)> {
        let start = self.ep.rtx_pending.take()?;
        if start < seq.snd_una || start >= seq.snd_max {
            return None;
        }
        let len = self.mss.min(self.sb.hole_end(start, seq.snd_max) - start); // not into SACKed data
        if len == 0 {
            return None;
        }
        if let Some(p) = self.prr.as_mut() {
            p.on_sent(len); // RFC 6937: the first retransmission counts in prr_out
        }
        Some((start, len))
    }

    fn poll_recovery(&mut self, cx: &mut Ctx) -> Option<Next> {
        if !(self.ep.in_recovery || self.ep.rto_recovery) {
            return None;
        }
        let next = self.next_segment(cx);
        if let (Next::Retransmit { len, .. } | Next::NewData { len }, Some(p)) = (next, self.prr.as_mut()) {
            p.on_sent(len);
        }
        Some(next)
    }

    fn in_fast_recovery(&self) -> bool {
        self.ep.in_recovery
    }

    fn probe_allowed(&self) -> bool {
        self.ep.open() && self.sb.is_empty()
    }

    fn seed_min_rtt(&mut self, rtt: Time) {
        if let Some(r) = self.rack.as_mut() {
            r.seed_min_rtt(rtt); // Linux's min_rtt filter starts from the SYN-ACK's sample too
        }
    }

    fn uses_go_back_n(&self) -> bool {
        false
    }

    fn prefetch(&self) {
        self.sb.prefetch();
    }
}
