//! Loss detection and recovery: a strategy behind one narrow trait, apart
//! from the sender's sequence space, buffering and timers (`sender.rs`).
//!
//! * [`dupack::DupAckRecovery`] (`loss_detection = "dupack"`): RFC 5681
//!   fast retransmit and RFC 6582 NewReno partial-ACK recovery, with the
//!   window inflation and deflation that go with them; go-back-N after a timeout.
//! * [`sack::SackRecovery`] (`"sack"`, `"rack"`): RFC 6675 scoreboard
//!   recovery, with RACK (RFC 8985 §6, `rack.rs`) as the time-based loss
//!   detector of `"rack"`, and PRR (RFC 6937, `prr.rs`,
//!   `recovery_rate = "prr"`) instead of RFC 6675's cwnd - pipe.
//! * `frto.rs`: F-RTO and the undo of spurious reductions, a sender option.
//!
//! Tail loss probes (RFC 8985 §7) stay in the sender: they act on the
//! sender's timers and ask the strategy only whether a probe is allowed.
//! Congestion control is told loss-agnostic events by the strategy
//! (`CongestionEvent::Loss` on entry); what the window does during the
//! repair (inflation, deflation, the return to ssthresh) is the strategy's,
//! as in ns-3's `TcpRecoveryOps`. So every strategy works with every controller.

pub mod dupack;
pub mod frto;
pub mod prr;
pub mod rack;
pub mod sack;

use super::congestion::{CongestionControl, CongestionEvent};
use super::seqspace::SeqSpace;
use super::timers::rto::RtoEstimator;
use super::txlog::{Outstanding, TxLog};
use super::{Ack, SenderStats};
use crate::time::Time;
use std::fmt::Debug;

/// What a recovery strategy sees of the sender during one event.
pub struct Ctx<'a> {
    pub now: Time,
    pub seq: &'a mut SeqSpace,
    pub cc: &'a mut dyn CongestionControl,
    pub stats: &'a mut SenderStats,
    /// Every outstanding segment's send time, when the sender keeps it
    /// (Linux RTT sampling or RACK).
    pub log: Option<&'a mut TxLog>,
    /// The RTO estimator, for SRTT (read only where needed: it is per ACK).
    pub rto: &'a dyn RtoEstimator,
    /// The retransmission timer now (a RACK timer never outlives it).
    pub rto_deadline: Option<Time>,
    /// F-RTO step 2b (`frto.rs`): only new data may go, no retransmissions.
    pub new_data_only: bool,
}

/// What an ACK's SACK blocks brought.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackNews {
    /// Bytes SACKed for the first time.
    pub bytes: u64,
    /// The earliest send time among the newly SACKed segments that were
    /// never retransmitted (Linux's `first_sackt`, an RTT sample), when the
    /// strategy tracks send times (RACK).
    pub oldest_sent: Option<Time>,
    /// The lowest end among the newly SACKed segments never retransmitted
    /// (F-RTO's evidence, `frto.rs`), when the strategy tracks segments.
    pub orig_end: Option<u64>,
}

impl Ctx<'_> {
    pub fn srtt(&self) -> Option<Time> {
        self.rto.srtt()
    }

    /// Loss found by ACKs: the controller reduces the window.
    fn enter_reduction(&mut self, flight: u64) {
        self.cc.on_congestion_event(self.now, CongestionEvent::Loss { flight });
    }

    /// The repair is over: the window is what the reduction set (RFC 6582
    /// §3.2 step 5; RFC 6675 ends the same way).
    fn end_reduction(&mut self) {
        let w = self.cc.window_mut();
        w.cwnd = w.ssthresh;
    }

    /// Bytes acked outside a reduction: the controller may grow the window.
    fn grow(&mut self, acked: u64) {
        let srtt = self.srtt();
        self.cc.on_ack(self.now, acked, srtt);
    }
}

/// What recovery wants sent next, when it is in charge of sending.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Resend `len` bytes from `seq`.
    Retransmit { seq: u64, len: u64 },
    /// Send one segment of new data at `snd_max`, `len` bytes.
    NewData { len: u64 },
    /// Nothing may go now.
    Wait,
}

/// Loss detection and recovery. The sender calls these in a fixed order per
/// ACK: `on_sack_info`, then either `on_duplicate_ack`, or (snd_una having
/// advanced) `on_delivered` per newly acked segment, `on_cumulative_ack`,
/// and after the retransmission timer is re-armed, `after_cumulative_ack`.
pub trait Recovery: Debug + Send + Sync {
    /// The ACK's SACK blocks: what they newly SACKed (nothing without SACK).
    fn on_sack_info(&mut self, cx: &mut Ctx, ack: &Ack) -> SackNews;
    /// An ACK that did not advance snd_una.
    fn on_duplicate_ack(&mut self, cx: &mut Ctx, newly_sacked: u64);
    /// A segment the cumulative ACK delivered (for time-based detection).
    fn on_delivered(&mut self, _now: Time, _seg: &Outstanding) {}
    /// snd_una advanced by `acked` bytes (already in `cx.seq`): leave or
    /// continue recovery, or grow the window outside it.
    fn on_cumulative_ack(&mut self, cx: &mut Ctx, acked: u64);
    /// The rest of an advancing ACK, after the RTO timer was re-armed;
    /// `delivered` bytes were newly acked or SACKed.
    fn after_cumulative_ack(&mut self, cx: &mut Ctx, delivered: u64);
    /// The retransmission timer fired: everything outstanding is presumed lost.
    fn on_rto(&mut self, cx: &mut Ctx);
    /// The timeout or the fast recovery was spurious (`frto.rs`, Linux's
    /// tcp_try_undo_loss(), tcp_try_undo_partial()): back to the open state
    /// with no segment marked lost, the window left to the caller.
    fn on_undo(&mut self, cx: &mut Ctx);
    /// A detector's own timer (RACK's reordering timer), if armed.
    fn timer(&self) -> Option<Time> {
        None
    }
    /// That timer fired; returns true if loss recovery was entered.
    fn on_timer(&mut self, _cx: &mut Ctx) -> bool {
        false
    }
    /// The fast retransmission due now, outside the congestion window
    /// (RFC 5681 §3.2): `(seq, len)`.
    fn take_fast_retransmit(&mut self, seq: &SeqSpace) -> Option<(u64, u64)>;
    /// While this strategy is in charge of sending (SACK recovery), what goes
    /// next; `None` leaves sending to the sender's normal rules.
    fn poll_recovery(&mut self, cx: &mut Ctx) -> Option<Next>;
    /// In fast recovery (not counting recovery after a timeout).
    fn in_fast_recovery(&self) -> bool;
    /// RFC 8985 §7.2, recovery's part: open state, nothing delivered out of order.
    fn probe_allowed(&self) -> bool;
    /// The handshake's RTT sample (RACK's min-RTT filter starts from it).
    fn seed_min_rtt(&mut self, _rtt: Time) {}
    /// After a timeout, NewReno resends by go-back-N (moving snd_nxt back);
    /// SACK recovery picks holes from its scoreboard instead.
    fn uses_go_back_n(&self) -> bool;
    /// Cache hints for state kept outside the strategy's own allocation.
    fn prefetch(&self) {}
}

/// State both strategies keep for one loss episode.
#[derive(Debug, Default)]
pub struct Episode {
    /// Duplicate ACKs since the last advance (with SACK, only those that
    /// SACKed new data, RFC 6675 §2).
    pub dupacks: u64,
    pub in_recovery: bool,
    /// RFC 6582 `recover`, as an exclusive bound (snd_max at the event).
    pub recover: Option<u64>,
    /// Segment start to retransmit next, outside the cwnd.
    pub rtx_pending: Option<u64>,
    /// A timeout happened and snd_una has not reached `recover` yet.
    pub rto_recovery: bool,
}

impl Episode {
    /// The ACK covers `recover` (or there is none): the episode is over.
    fn covers_recover(&self, una: u64) -> bool {
        self.recover.is_none_or(|r| una >= r)
    }

    /// Common to both strategies at a timeout.
    /// A reduction found spurious (F-RTO or the timestamp undo): no episode at all.
    fn undo(&mut self) {
        self.in_recovery = false;
        self.rtx_pending = None;
        self.rto_recovery = false;
        self.recover = None;
        self.dupacks = 0;
    }

    fn on_rto(&mut self, snd_max: u64) {
        self.rto_recovery = true;
        self.in_recovery = false;
        self.rtx_pending = None;
        self.dupacks = 0;
        self.recover = Some(snd_max);
    }

    /// The part of RFC 8985 §7.2 both strategies share.
    fn open(&self) -> bool {
        !self.in_recovery && !self.rto_recovery && self.dupacks == 0
    }
}
