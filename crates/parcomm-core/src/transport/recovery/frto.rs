//! F-RTO (RFC 5682) and the undo of a spurious retransmission timeout, as
//! Linux does them with `net.ipv4.tcp_frto = 2` (its default,
//! Documentation/networking/ip-sysctl.rst), in net/ipv4/tcp_input.c:
//!
//! * `tcp_enter_loss()`: a timeout saves the window it is about to cut
//!   (`tcp_init_undo()`: prior cwnd and ssthresh) unless a recovery of the
//!   same window already did, remembers `high_seq` (snd_max then), and
//!   arms F-RTO for a new episode or a repeated timeout of the same one.
//! * `tcp_process_loss()`, on each ACK while the timeout's recovery lasts:
//!   `tcp_try_undo_loss()` undoes when the ACK shows the original
//!   transmission arrived (timestamps: `tcp_packet_delayed()`, the echo is
//!   older than the first retransmission) or, with F-RTO, when data never
//!   retransmitted is (S)ACKed (step 3b); the first ACK that advances
//!   snd_una without covering `high_seq` sends new data instead of more
//!   retransmissions (step 2b, `REXMIT_NEW`); a duplicate ACK or SACK after
//!   that says the loss was real (step 3a) and recovery goes on.
//! * `tcp_undo_cwnd_reduction()`: cwnd back to at least the prior cwnd
//!   (`tcp_reno_undo_cwnd()`, which CUBIC uses too), ssthresh to at least
//!   the prior ssthresh, the loss marks cleared.
//!
//! The same timestamp test undoes a fast recovery (`tcp_try_undo_partial()`,
//! `tcp_try_undo_recovery()` in the Recovery state): a cumulative ACK whose
//! echo predates the episode's first retransmission filled the hole with
//! the original, so the reduction is undone once no retransmission is in
//! flight (until then no more are sent). This matters after an undone
//! timeout too: RACK, timing the acked retransmission, may declare the
//! delayed originals lost at once, as Linux's does.
//!
//! With timestamps, the sender also keeps RACK from timing a cumulatively
//! acked segment by its retransmission when the echo shows the original
//! was acked (tcp_clean_rtx_queue(): `tcp_skb_spurious_retrans()`); here
//! that rule is switched on with the rest of this module.
//!
//! Not modelled: DSACK-based undo (`undo_retrans`, `tcp_try_undo_dsack()`),
//! and the reordering estimate an undo raises (`tcp_check_sack_reordering()`).
//! The sending rule of step 2b needs SACK here (the
//! simulator's non-SACK recovery resends by go-back-N); without SACK only
//! the timestamp undo applies.

use crate::time::{Time, MS};

/// Linux's TCP timestamp clock runs at 1 kHz (TCP_TS_HZ, include/net/tcp.h):
/// an echo is "before" the first retransmission only by whole milliseconds.
const TS_TICK: Time = MS;

/// tcp_tsopt_ecr_before(): the ACK echoes a timestamp older than `when`.
pub fn echo_before(tsecr: Option<Time>, when: Time) -> bool {
    tsecr.is_some_and(|echo| echo / TS_TICK < when / TS_TICK)
}

/// The window a reduction replaced (`prior_cwnd`, `prior_ssthresh`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prior {
    pub cwnd: u64,
    pub ssthresh: u64,
}

/// What one ACK brought, as the flags `tcp_process_loss()` reads.
#[derive(Clone, Copy, Debug, Default)]
pub struct AckFlags {
    /// snd_una after the ACK, and snd_max.
    pub una: u64,
    pub snd_max: u64,
    /// FLAG_SND_UNA_ADVANCED.
    pub una_advanced: bool,
    /// The lowest end among newly (S)ACKed segments that were never
    /// retransmitted (FLAG_ORIG_SACK_ACKED if at or below `high_seq`).
    pub orig_end: Option<u64>,
    /// FLAG_DATA_SACKED: new data SACKed.
    pub data_sacked: bool,
    /// A duplicate ACK (num_dupack > 0).
    pub dupack: bool,
    /// New data is queued and the peer's window admits it at snd_max.
    pub new_data_ready: bool,
    /// The ACK's timestamp echo.
    pub tsecr: Option<Time>,
}

#[derive(Debug)]
pub struct LossUndo {
    /// F-RTO's new-data step may run (SACK on).
    frto_allowed: bool,
    /// Timestamps on: echoes can tell an original from a retransmission.
    pub timestamps: bool,
    /// In the timeout's recovery (Linux's CA_Loss) until snd_una reaches this.
    high_seq: Option<u64>,
    /// `tp->frto` of this episode.
    frto: bool,
    /// `REXMIT_NEW`: this ACK chose new data over retransmissions.
    send_new: bool,
    /// tcp_try_undo_partial() returned true: the original filled the hole
    /// but retransmissions are in flight; none more on this ACK.
    hold: bool,
    /// `undo_marker` (set) with the window to restore.
    prior: Option<Prior>,
    /// `tp->retrans_stamp`: the first retransmission of the episode.
    retrans_stamp: Option<Time>,
}

/// What tcp_try_undo_partial() / tcp_try_undo_recovery() decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecoveryUndo {
    /// Nothing to undo: recovery goes on.
    No,
    /// Spurious, but retransmissions are in flight: send no more for now.
    Hold,
    /// Spurious: restore this window and leave recovery.
    Undo(Prior),
}

impl LossUndo {
    pub fn new(frto_allowed: bool, timestamps: bool) -> Self {
        LossUndo {
            frto_allowed,
            timestamps,
            high_seq: None,
            frto: false,
            send_new: false,
            hold: false,
            prior: None,
            retrans_stamp: None,
        }
    }

    /// In a timeout's recovery (CA_Loss).
    pub fn in_loss(&self) -> bool {
        self.high_seq.is_some()
    }

    /// F-RTO step 2b chose new data: nothing else may go until the next ACK.
    pub fn send_new(&self) -> bool {
        self.send_new
    }

    /// No retransmission may go on this ACK (a fast recovery found spurious,
    /// retransmissions still in flight).
    pub fn hold(&self) -> bool {
        self.hold
    }

    /// An ACK in fast recovery (tcp_fastretrans_alert(), TCP_CA_Recovery):
    /// one that advanced snd_una (`advanced`) tries tcp_try_undo_partial()
    /// (or, covering the recovery point, tcp_try_undo_recovery(): the same
    /// test here). `retrans_out`: retransmitted segments in flight, asked
    /// only when an undo is possible (counting them walks the send log).
    pub fn on_recovery_ack(
        &mut self,
        advanced: bool,
        tsecr: Option<Time>,
        retrans_out: impl FnOnce() -> u64,
    ) -> RecoveryUndo {
        self.hold = false;
        if !advanced || self.prior.is_none() || !self.packet_delayed(tsecr) {
            return RecoveryUndo::No;
        }
        if retrans_out() > 0 {
            self.hold = true;
            return RecoveryUndo::Hold;
        }
        match self.prior.take() {
            Some(p) => RecoveryUndo::Undo(p),
            None => RecoveryUndo::No,
        }
    }

    /// Step 2b found no new data to send: F-RTO gives way to conventional
    /// recovery (tcp_xmit_recovery()). Returns false when new data went
    /// (snd_max passed `high_seq`): wait for the next ACK.
    pub fn new_data_exhausted(&mut self, snd_max: u64) -> bool {
        self.send_new = false;
        if self.high_seq.is_some_and(|h| snd_max > h) {
            return false;
        }
        self.frto = false;
        true
    }

    /// A retransmission (not a loss probe) left at `now`.
    pub fn on_retransmit(&mut self, now: Time) {
        self.retrans_stamp.get_or_insert(now);
    }

    /// Every ACK: the previous ACK's hold is over (a duplicate ACK in
    /// recovery may retransmit again); if the connection is `open` (no
    /// recovery of any kind), the episode's first-retransmission stamp is
    /// forgotten (tcp_fastretrans_alert(), step D).
    pub fn on_ack_start(&mut self, open: bool) {
        self.hold = false;
        if open {
            self.retrans_stamp = None;
        }
    }

    /// A fast recovery began (tcp_enter_recovery(), tcp_init_undo()), with the
    /// window before its reduction.
    pub fn on_enter_recovery(&mut self, prior: Prior) {
        self.prior = Some(prior);
    }

    /// tcp_enter_loss(). `prior`: the window before the timeout's cut
    /// (ssthresh as tcp_current_ssthresh()); `repeated`: no new data was
    /// acked since the previous timeout (icsk_retransmits > 0).
    pub fn on_rto(&mut self, snd_max: u64, prior: Prior, in_fast_recovery: bool, repeated: bool) {
        let in_loss = self.in_loss();
        self.hold = false;
        // "Reduce ssthresh if it has not yet been made inside this window":
        // a timeout inside a fast recovery keeps that recovery's undo point.
        if !in_fast_recovery && (!in_loss || !repeated) {
            self.prior = Some(prior);
        }
        let new_recovery = !in_fast_recovery && !in_loss;
        self.high_seq = Some(snd_max);
        self.send_new = false;
        // RFC 5682 §3.1 step 1 / §3.2: a new episode, or the same snd_una timing out again.
        self.frto = self.frto_allowed && (new_recovery || repeated);
    }

    /// tcp_packet_delayed(): the echo is older than the first retransmission,
    /// so the original transmission arrived.
    fn packet_delayed(&self, tsecr: Option<Time>) -> bool {
        match (self.retrans_stamp, tsecr) {
            (Some(stamp), echo) => self.timestamps && echo_before(echo, stamp),
            (None, _) => true, // nothing retransmitted yet: merely delayed
        }
    }

    /// tcp_try_undo_loss(): the window to restore if the timeout is undone.
    fn try_undo_loss(&mut self, frto_undo: bool, tsecr: Option<Time>) -> Option<Prior> {
        let prior = self.prior?; // undo_marker
        if !(frto_undo || self.packet_delayed(tsecr)) {
            return None;
        }
        self.prior = None;
        self.high_seq = None;
        self.frto = false;
        self.send_new = false;
        Some(prior)
    }

    /// tcp_process_loss(), for an ACK in the timeout's recovery. Returns the
    /// window to restore when the timeout turned out spurious.
    pub fn on_ack(&mut self, f: &AckFlags) -> Option<Prior> {
        let high = self.high_seq?;
        self.send_new = false;
        self.hold = false;
        let recovered = f.una >= high;
        if f.una_advanced {
            if let Some(p) = self.try_undo_loss(false, f.tsecr) {
                return Some(p);
            }
        }
        if self.frto {
            // Step 3b: never-retransmitted data was (S)ACKed, so not everything was lost.
            if f.orig_end.is_some_and(|e| e <= high) {
                if let Some(p) = self.try_undo_loss(true, f.tsecr) {
                    return Some(p);
                }
            }
            if f.snd_max > high {
                if f.data_sacked || f.dupack {
                    self.frto = false; // step 3a: the loss was real
                }
            } else if f.una_advanced && !recovered {
                self.high_seq = Some(f.snd_max);
                // Step 2b: new data if any may go, else conventional recovery.
                if f.new_data_ready {
                    self.send_new = true;
                    return None;
                }
                self.frto = false;
            }
        }
        if recovered {
            // The timeout's recovery is over (tcp_try_undo_recovery() found
            // nothing to undo: its test is the one that just failed).
            self.high_seq = None;
            self.frto = false;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: Prior = Prior { cwnd: 20_000, ssthresh: u64::MAX };

    fn flags(una: u64, snd_max: u64) -> AckFlags {
        AckFlags { una, snd_max, una_advanced: true, ..Default::default() }
    }

    #[test]
    fn an_echo_older_than_the_first_retransmission_undoes_the_timeout() {
        let mut u = LossUndo::new(false, true);
        u.on_rto(10_000, P, false, false);
        u.on_retransmit(200 * MS);
        // The echo of the retransmission (sent at 200 ms): a real loss.
        assert_eq!(u.on_ack(&AckFlags { tsecr: Some(200 * MS), ..flags(1000, 10_000) }), None);
        assert!(u.in_loss());
        // An echo from before it: the original arrived, the timeout was spurious.
        let mut u = LossUndo::new(false, true);
        u.on_rto(10_000, P, false, false);
        u.on_retransmit(200 * MS);
        assert_eq!(u.on_ack(&AckFlags { tsecr: Some(199 * MS), ..flags(1000, 10_000) }), Some(P));
        assert!(!u.in_loss());
        // Within the same millisecond (TCP_TS_HZ = 1000) it cannot tell.
        let mut u = LossUndo::new(false, true);
        u.on_rto(10_000, P, false, false);
        u.on_retransmit(200 * MS + 900_000);
        assert_eq!(u.on_ack(&AckFlags { tsecr: Some(200 * MS + 100_000), ..flags(1000, 10_000) }), None);
        // Without timestamps there is no echo to judge by.
        let mut u = LossUndo::new(false, false);
        u.on_rto(10_000, P, false, false);
        u.on_retransmit(200 * MS);
        assert_eq!(u.on_ack(&AckFlags { tsecr: Some(MS), ..flags(1000, 10_000) }), None);
    }

    #[test]
    fn frto_sends_new_data_then_decides_on_the_next_ack() {
        // Spurious: after new data, data never retransmitted is acked.
        let mut u = LossUndo::new(true, false);
        u.on_rto(10_000, P, false, false);
        u.on_retransmit(200 * MS);
        assert_eq!(u.on_ack(&AckFlags { new_data_ready: true, ..flags(1000, 10_000) }), None);
        assert!(u.send_new());
        assert!(!u.new_data_exhausted(12_000)); // two new segments went
        let orig = AckFlags { orig_end: Some(3000), ..flags(3000, 12_000) };
        assert_eq!(u.on_ack(&orig), Some(P));
        // Real: the next ACK is a duplicate SACKing the new data; F-RTO ends, recovery goes on.
        let mut u = LossUndo::new(true, false);
        u.on_rto(10_000, P, false, false);
        u.on_retransmit(200 * MS);
        u.on_ack(&AckFlags { new_data_ready: true, ..flags(1000, 10_000) });
        u.new_data_exhausted(12_000);
        let dup = AckFlags { una_advanced: false, dupack: true, data_sacked: true, ..flags(1000, 12_000) };
        assert_eq!(u.on_ack(&dup), None);
        assert!(u.in_loss() && !u.frto && !u.send_new());
        // Original data SACKed later no longer counts as proof.
        assert_eq!(u.on_ack(&AckFlags { orig_end: Some(5000), ..dup }), None);
        // No new data to send: conventional recovery at once.
        let mut u = LossUndo::new(true, false);
        u.on_rto(10_000, P, false, false);
        u.on_ack(&flags(1000, 10_000));
        assert!(!u.send_new() && !u.frto);
    }

    #[test]
    fn a_fast_recovery_is_undone_once_no_retransmission_is_in_flight() {
        let mut u = LossUndo::new(true, true);
        u.on_enter_recovery(P);
        u.on_retransmit(50 * MS);
        // The echo of a retransmission: a real loss.
        assert_eq!(u.on_recovery_ack(true, Some(50 * MS), || 0), RecoveryUndo::No);
        // Older than it, but a retransmission is still out: hold.
        assert_eq!(u.on_recovery_ack(true, Some(10 * MS), || 1), RecoveryUndo::Hold);
        assert!(u.hold());
        // The hold lasts one ACK: the next (say, a duplicate) starts without it.
        u.on_ack_start(false);
        assert!(!u.hold());
        // Duplicate ACKs never undo.
        assert_eq!(u.on_recovery_ack(false, Some(10 * MS), || 0), RecoveryUndo::No);
        assert!(!u.hold());
        assert_eq!(u.on_recovery_ack(true, Some(10 * MS), || 0), RecoveryUndo::Undo(P));
        assert_eq!(u.on_recovery_ack(true, Some(10 * MS), || 0), RecoveryUndo::No);
        // once
    }

    #[test]
    fn a_timeout_inside_a_fast_recovery_keeps_its_undo_point_and_skips_frto() {
        let mut u = LossUndo::new(true, true);
        let before_recovery = Prior { cwnd: 40_000, ssthresh: 30_000 };
        u.on_enter_recovery(before_recovery);
        u.on_retransmit(50 * MS);
        u.on_rto(10_000, Prior { cwnd: 20_000, ssthresh: 20_000 }, true, false);
        assert!(!u.frto);
        assert_eq!(u.on_ack(&AckFlags { tsecr: Some(10 * MS), ..flags(1000, 10_000) }), Some(before_recovery));
        // Once undone, nothing is left to undo.
        u.on_rto(10_000, P, false, false);
        u.prior = None;
        assert_eq!(u.on_ack(&AckFlags { tsecr: Some(0), ..flags(2000, 10_000) }), None);
    }
}
