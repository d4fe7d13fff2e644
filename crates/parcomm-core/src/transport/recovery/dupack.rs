//! Fast retransmit and NewReno fast recovery (RFC 5681 §3.2, RFC 6582):
//! the third duplicate ACK resends the first unacknowledged segment; each
//! partial ACK resends the next hole; a timeout goes back to snd_una and
//! resends everything (go-back-N). The window follows RFC 5681 §3.2: inflated
//! by the segments the duplicate ACKs say have left the network, deflated by
//! what each partial ACK acks (RFC 6582 §3.2 step 3).

use super::{Ctx, Episode, Next, Recovery, SackNews};
use crate::transport::congestion::Window;
use crate::transport::seqspace::SeqSpace;
use crate::transport::Ack;

/// RFC 5681 §3.2 step 4: after the reduction, inflate by the three segments
/// that left the network (the dupacks that triggered it).
fn inflate_on_entry(w: &mut Window) {
    w.cwnd = w.ssthresh + 3 * w.mss;
}

/// Step 5: each further duplicate ACK is one more segment gone.
fn inflate_on_dupack(w: &mut Window) {
    w.cwnd = w.cwnd.saturating_add(w.mss);
}

/// RFC 6582 §3.2 step 3: minus the newly acked amount, plus one MSS if at
/// least one MSS was acked.
fn deflate_on_partial_ack(w: &mut Window, acked: u64) {
    let mut cwnd = w.cwnd.saturating_sub(acked);
    if acked >= w.mss {
        cwnd += w.mss;
    }
    w.cwnd = cwnd.max(w.mss);
}

#[derive(Debug)]
pub struct DupAckRecovery {
    dupack_threshold: u64,
    ep: Episode,
}

impl DupAckRecovery {
    pub fn new(dupack_threshold: u64) -> Self {
        DupAckRecovery { dupack_threshold, ep: Episode::default() }
    }
}

impl Recovery for DupAckRecovery {
    fn on_sack_info(&mut self, _cx: &mut Ctx, _ack: &Ack) -> SackNews {
        SackNews::default()
    }

    fn on_duplicate_ack(&mut self, cx: &mut Ctx, _newly_sacked: u64) {
        let (una, nxt, max) = (cx.seq.snd_una, cx.seq.snd_nxt, cx.seq.snd_max);
        if una == max {
            return; // nothing outstanding: a pure window update
        }
        self.ep.dupacks += 1;
        if self.ep.in_recovery {
            inflate_on_dupack(cx.cc.window_mut());
            return;
        }
        // RFC 6582 §3.2 step 1: only if the ACK covers more than `recover`,
        // so that dupacks caused by go-back-N after a timeout, or by the
        // previous recovery, do not halve the window again.
        if self.ep.dupacks == self.dupack_threshold && self.ep.recover.is_none_or(|r| una > r) {
            cx.stats.fast_retransmits += 1;
            self.ep.in_recovery = true;
            self.ep.recover = Some(max);
            cx.enter_reduction(nxt - una);
            inflate_on_entry(cx.cc.window_mut());
            self.ep.rtx_pending = Some(una);
        }
    }

    fn on_cumulative_ack(&mut self, cx: &mut Ctx, acked: u64) {
        self.ep.dupacks = 0;
        let una = cx.seq.snd_una;
        if self.ep.in_recovery {
            if self.ep.covers_recover(una) {
                self.ep.in_recovery = false;
                self.ep.rtx_pending = None;
                cx.end_reduction();
            } else {
                // Partial ACK: the next hole is lost too; resend it now.
                deflate_on_partial_ack(cx.cc.window_mut(), acked);
                self.ep.rtx_pending = Some(una);
            }
        } else {
            cx.grow(acked);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_recovery_inflates_deflates_and_returns_to_ssthresh() {
        let mut w = Window { mss: 1000, cwnd: 20_000, ssthresh: 20_000 }; // after the reduction of a 40 000-byte flight
        inflate_on_entry(&mut w);
        assert_eq!(w.cwnd, 23_000);
        inflate_on_dupack(&mut w);
        assert_eq!(w.cwnd, 24_000);
        deflate_on_partial_ack(&mut w, 5000); // 24000 - 5000 + 1000
        assert_eq!(w.cwnd, 20_000);
        deflate_on_partial_ack(&mut w, 500); // no add-back below one MSS
        assert_eq!(w.cwnd, 19_500);
        deflate_on_partial_ack(&mut w, 1_000_000); // never below one segment
        assert_eq!(w.cwnd, 1000);
    }
}
