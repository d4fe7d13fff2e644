//! Fast retransmit and NewReno fast recovery (RFC 5681 §3.2, RFC 6582):
//! the third duplicate ACK resends the first unacknowledged segment; each
//! partial ACK resends the next hole; a timeout goes back to snd_una and
//! resends everything (go-back-N).

use super::{Ctx, Episode, Next, Recovery, SackNews};
use crate::transport::seqspace::SeqSpace;
use crate::transport::Ack;

#[derive(Debug)]
pub struct NewRenoRecovery {
    dupack_threshold: u64,
    ep: Episode,
}

impl NewRenoRecovery {
    pub fn new(dupack_threshold: u64) -> Self {
        NewRenoRecovery { dupack_threshold, ep: Episode::default() }
    }
}

impl Recovery for NewRenoRecovery {
    fn on_sack_info(&mut self, _cx: &mut Ctx, _ack: &Ack) -> SackNews {
        SackNews::default()
    }

    fn on_duplicate_ack(&mut self, cx: &mut Ctx, _newly_sacked: u64) {
        let seq = &*cx.seq;
        if seq.snd_una == seq.snd_max {
            return; // nothing outstanding: a pure window update
        }
        self.ep.dupacks += 1;
        if self.ep.in_recovery {
            cx.cc.on_recovery_dupack();
            return;
        }
        // RFC 6582 §3.2 step 1: only if the ACK covers more than `recover`,
        // so that dupacks caused by go-back-N after a timeout, or by the
        // previous recovery, do not halve the window again.
        let ack = seq.snd_una;
        if self.ep.dupacks == self.dupack_threshold && self.ep.recover.is_none_or(|r| ack > r) {
            cx.stats.fast_retransmits += 1;
            self.ep.in_recovery = true;
            self.ep.recover = Some(seq.snd_max);
            cx.cc.on_enter_recovery(seq.snd_nxt - seq.snd_una);
            self.ep.rtx_pending = Some(seq.snd_una);
        }
    }

    fn on_cumulative_ack(&mut self, cx: &mut Ctx, acked: u64) {
        self.ep.dupacks = 0;
        let una = cx.seq.snd_una;
        if self.ep.in_recovery {
            if self.ep.covers_recover(una) {
                self.ep.in_recovery = false;
                self.ep.rtx_pending = None;
                cx.cc.on_exit_recovery();
            } else {
                // Partial ACK: the next hole is lost too; resend it now.
                cx.cc.on_partial_ack(acked);
                self.ep.rtx_pending = Some(una);
            }
        } else {
            cx.cc.on_ack_at(acked, cx.now, cx.srtt());
        }
        if self.ep.rto_recovery && self.ep.covers_recover(una) {
            self.ep.rto_recovery = false;
        }
    }

    fn after_cumulative_ack(&mut self, _cx: &mut Ctx, _delivered: u64) {}

    fn on_rto(&mut self, cx: &mut Ctx) {
        self.ep.on_rto(cx.seq.snd_max);
        cx.seq.snd_nxt = cx.seq.snd_una; // go-back-N
    }

    fn on_undo(&mut self, cx: &mut Ctx) {
        self.ep.undo();
        cx.seq.snd_nxt = cx.seq.snd_max; // nothing is lost any more: go-back-N stops
    }

    fn take_fast_retransmit(&mut self, seq: &SeqSpace) -> Option<(u64, u64)> {
        let start = self.ep.rtx_pending.take()?;
        (start >= seq.snd_una && start < seq.snd_max).then(|| (start, seq.mss.min(seq.snd_max - start)))
    }

    fn poll_recovery(&mut self, _cx: &mut Ctx) -> Option<Next> {
        None // new data and go-back-N resends follow the sender's rules
    }

    fn in_fast_recovery(&self) -> bool {
        self.ep.in_recovery
    }

    fn probe_allowed(&self) -> bool {
        self.ep.open()
    }

    fn uses_go_back_n(&self) -> bool {
        true
    }
}
