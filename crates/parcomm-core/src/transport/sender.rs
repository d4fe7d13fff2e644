//! The sending end: sequence space and buffering, the retransmission timer,
//! RTT sampling, tail loss probes (RFC 8985 §7, timer in `timers/tlp.rs`),
//! and transmission. The strategies come from one factory (`strategies.rs`):
//! loss detection and recovery (`recovery/`: duplicate ACKs or SACK, with
//! RACK and PRR as choices), the window (`congestion/`: Reno, CUBIC) and the
//! RTO estimator (`timers/`).

use super::congestion::{CongestionControl, CongestionEvent, RttSample};
use super::recovery::frto::{echo_before, AckFlags, LossUndo, Prior, RecoveryUndo};
use super::recovery::{Ctx, Next, Recovery, SackNews};
use super::seqspace::SeqSpace;
use super::strategies;
use super::timers::rto::RtoEstimator;
use super::timers::tlp::Tlp;
use super::txlog::TxLog;
use super::{Ack, Segment, SenderStats, TcpConfig};
use crate::time::Time;

/// Sender state that only Linux-like profiles use: tail loss probes, and
/// F-RTO with its undo. Kept in one allocation made only when the profile
/// enables any of them, so that a sender without them (the RFC profile, what
/// large fabrics run) carries none of their bytes (issue 20). The send log
/// is not here but in the sender itself (`Sender::txlog`): every ACK and
/// every segment sent touch it, and there its ends can be prefetched
/// without first waiting for this allocation (`Sender::prefetch`).
#[derive(Debug)]
struct SenderExtras {
    /// Tail loss probe state; `None` when TLP is off.
    tlp: Option<Tlp>,
    /// F-RTO and the undo of spurious timeouts (`recovery/frto.rs`); `None` when off.
    undo: Option<LossUndo>,
}

impl SenderExtras {
    fn for_config(cfg: &TcpConfig, max_ack_delay: Time) -> Option<Box<SenderExtras>> {
        let extras = SenderExtras {
            tlp: cfg.tail_loss_probe.then(|| {
                if cfg.rack {
                    Tlp::linux(super::timers::linux_rto::kernel_rto_min(cfg.rto_min, cfg.clock_granularity))
                } else {
                    Tlp::new(max_ack_delay)
                }
            }),
            undo: cfg.frto.then(|| LossUndo::new(cfg.sack, cfg.timestamps)),
        };
        let any = extras.tlp.is_some() || extras.undo.is_some();
        any.then(|| Box::new(extras))
    }

    /// The send log, for the profiles that use it: every outstanding
    /// segment's send time, a sample per advancing ACK (`linux_rto`); also
    /// what RACK walks, and F-RTO's and the congestion control's RTT samples (HyStart).
    fn txlog_for(cfg: &TcpConfig, cc_samples: bool) -> Option<TxLog> {
        let wants_log = cfg.linux_rto || (cfg.rack && cfg.sack) || cfg.frto || cc_samples;
        wants_log.then(TxLog::new)
    }
}

/// Access to the parts of `SenderExtras`, each `None` when off. A trait on
/// the field (not methods on `Sender`) so that borrowing one part leaves the
/// sender's other fields free.
trait Extras {
    fn tlp(&self) -> Option<&Tlp>;
    fn tlp_mut(&mut self) -> Option<&mut Tlp>;
    fn undo(&self) -> Option<&LossUndo>;
    fn undo_mut(&mut self) -> Option<&mut LossUndo>;
}

impl Extras for Option<Box<SenderExtras>> {
    fn tlp(&self) -> Option<&Tlp> {
        self.as_ref()?.tlp.as_ref()
    }
    fn tlp_mut(&mut self) -> Option<&mut Tlp> {
        self.as_mut()?.tlp.as_mut()
    }
    fn undo(&self) -> Option<&LossUndo> {
        self.as_ref()?.undo.as_ref()
    }
    fn undo_mut(&mut self) -> Option<&mut LossUndo> {
        self.as_mut()?.undo.as_mut()
    }
}

#[derive(Debug)]
pub struct Sender {
    seq: SeqSpace,
    /// Send buffer now; grows up to `sndbuf_max` when autotuning.
    sndbuf: u64,
    sndbuf_max: u64,
    dupack_threshold: u64,
    cc: Box<dyn CongestionControl>,
    recovery: Box<dyn Recovery>,
    rto: Box<dyn RtoEstimator>,
    rto_deadline: Option<Time>,
    /// The one segment being timed: (end seq, send time). BSD style.
    rtt_probe: Option<(u64, Time)>,
    /// RFC 7323 timestamps: retransmitted data can be timed (with `txlog`).
    timestamps: bool,
    /// RTT samples from `txlog` (Linux) rather than `rtt_probe` (BSD), and
    /// Linux's timer rules (`linux_rto`).
    linux_sampling: bool,
    /// A timeout happened and no new data was acked since (RFC 5681 §3.1).
    timed_out_unrepaired: bool,
    /// Start of the highest segment of new data sent (what a probe resends).
    last_seg_start: u64,
    /// RFC 2861 restart after idle: the window to fall back to, if enabled.
    restart_window: Option<u64>,
    /// When the last data segment left (Linux's `lsndtime`).
    last_data_sent: Option<Time>,
    /// Every outstanding segment's send time (`SenderExtras::txlog_for`);
    /// `None`: BSD timing (`rtt_probe`).
    txlog: Option<TxLog>,
    /// Tail loss probes and F-RTO (`SenderExtras`); `None` when the profile
    /// uses neither.
    extras: Option<Box<SenderExtras>>,
    /// Tell the congestion control each ACK's RTT sample (HyStart).
    rtt_samples_to_cc: bool,
    stats: SenderStats,
}

impl Sender {
    pub fn new(cfg: &TcpConfig) -> Sender {
        Sender::with_strategies(cfg, strategies::congestion_control(cfg), strategies::rto_estimator(cfg))
    }

    /// A sender with another congestion control or RTO estimator.
    pub fn with_strategies(cfg: &TcpConfig, cc: Box<dyn CongestionControl>, rto: Box<dyn RtoEstimator>) -> Sender {
        let mss = cfg.mss.max(1);
        let dupack_threshold = cfg.dupack_threshold.max(1);
        // The peer's worst-case ACK delay, for the PTO (both ends share the config).
        let max_ack_delay = if cfg.delayed_ack { cfg.delayed_ack_timeout } else { 0 };
        let recovery = strategies::recovery(cfg);
        let rtt_samples_to_cc = cc.wants_rtt_samples();
        Sender {
            seq: SeqSpace {
                mss,
                written: 0,
                snd_una: 0,
                snd_nxt: 0,
                snd_max: 0,
                peer_wnd: cfg.rcvbuf, // both ends share the config
            },
            sndbuf: if cfg.sndbuf_initial > 0 { cfg.sndbuf_initial.min(cfg.sndbuf) } else { cfg.sndbuf },
            sndbuf_max: cfg.sndbuf,
            dupack_threshold,
            cc,
            recovery,
            rto,
            rto_deadline: None,
            rtt_probe: None,
            timestamps: cfg.timestamps,
            linux_sampling: cfg.linux_rto,
            timed_out_unrepaired: false,
            last_seg_start: 0,
            restart_window: cfg.cwnd_restart_after_idle.then(|| mss.saturating_mul(cfg.initial_cwnd_segments.max(1))),
            last_data_sent: None,
            txlog: SenderExtras::txlog_for(cfg, rtt_samples_to_cc),
            extras: SenderExtras::for_config(cfg, max_ack_delay),
            rtt_samples_to_cc,
            stats: SenderStats::default(),
        }
    }

    /// Cache hints for what an ACK will touch: the strategies' state and the
    /// Linux extras, each its own allocation, and both ends of the send log
    /// (`crate::prefetch`). Reads the sender's own fields: best called once
    /// they are in cache.
    #[inline]
    pub fn prefetch(&self) {
        use crate::prefetch;
        prefetch::value(self.cc.as_ref());
        prefetch::value(self.recovery.as_ref());
        prefetch::value(self.rto.as_ref());
        if let Some(x) = self.extras.as_deref() {
            prefetch::value(x);
        }
        if let Some(log) = self.txlog.as_ref() {
            log.prefetch();
        }
    }

    /// Cache hints one pointer further than `prefetch` (the scoreboard's
    /// ranges): best called once `prefetch`'s lines are in.
    #[inline]
    pub fn prefetch_deep(&self) {
        self.recovery.prefetch();
    }

    /// The recovery strategy and what it may see and change, for one event at `now`.
    fn split(&mut self, now: Time) -> (&mut dyn Recovery, Ctx<'_>) {
        let cx = Ctx {
            now,
            seq: &mut self.seq,
            cc: self.cc.as_mut(),
            stats: &mut self.stats,
            log: self.txlog.as_mut(),
            rto: self.rto.as_ref(),
            rto_deadline: self.rto_deadline,
            new_data_only: false,
        };
        (self.recovery.as_mut(), cx)
    }

    /// The round trip of the connection's handshake (SYN, SYN-ACK): the
    /// first RTT sample a real connection has before it sends data, so the
    /// RTO starts from the path instead of the 1 s initial value. Only
    /// before any other sample.
    pub fn seed_handshake_rtt(&mut self, rtt: Time) {
        if self.rto.srtt().is_none() {
            self.rto.on_rtt_sample(rtt);
        }
        self.recovery.seed_min_rtt(rtt);
    }

    /// The send buffer's size now (bytes of payload).
    pub fn sndbuf(&self) -> u64 {
        self.sndbuf
    }

    /// Linux's send-buffer autotuning, `tcp_new_space()` (net/ipv4/tcp_input.c,
    /// 2.6.11), which `tcp_check_space()` calls after an ACK shrank the write
    /// queue while a writer found the buffer full (SOCK_NOSPACE): if fewer
    /// than cwnd segments are in flight, the buffer grows to hold
    /// 2 * max(cwnd, tcp_reordering + 1) segments, up to tcp_wmem[2].
    /// Linux counts each segment's whole skb (`truesize`); here a segment
    /// counts as its payload, so the growth in segments is Linux's. The caller
    /// says when a writer is blocked; a no-op unless autotuning is on.
    pub fn expand_sndbuf(&mut self) {
        if self.sndbuf >= self.sndbuf_max {
            return;
        }
        let cwnd = self.cc.cwnd();
        if self.seq.outstanding() >= cwnd {
            return; // packets_out >= snd_cwnd: the window, not the buffer, limits
        }
        let mss = self.seq.mss;
        let demanded = (cwnd / mss).max(self.dupack_threshold + 1);
        let want = (2 * demanded * mss).min(self.sndbuf_max);
        self.sndbuf = self.sndbuf.max(want);
    }

    pub fn buffer_space(&self) -> u64 {
        self.sndbuf.saturating_sub(self.seq.written - self.seq.snd_una)
    }

    /// Appends `bytes` from the application, clamped to `buffer_space()`.
    pub fn write(&mut self, bytes: u64) {
        self.seq.written += bytes.min(self.buffer_space());
    }

    pub fn written(&self) -> u64 {
        self.seq.written
    }

    pub fn acked(&self) -> u64 {
        self.seq.snd_una
    }

    pub fn on_ack(&mut self, now: Time, ack: Ack) {
        // Old (reordered) ACKs and ACKs of data never sent carry nothing we
        // can trust, not even their window.
        if ack.ack < self.seq.snd_una || ack.ack > self.seq.snd_max {
            return;
        }
        self.seq.peer_wnd = ack.window;
        let una_before = self.seq.snd_una;
        if let Some(u) = self.extras.undo_mut() {
            let open = !u.in_loss() && !self.recovery.in_fast_recovery();
            u.on_ack_start(open);
        }
        let news = {
            let (rec, mut cx) = self.split(now);
            rec.on_sack_info(&mut cx, &ack)
        };
        let newly_sacked = news.bytes;
        self.tlp_on_ack(now, &ack);
        if ack.ack == self.seq.snd_una {
            self.rearm_on_old_sack(now, news);
            self.process_loss(now, &ack, false, news.orig_end, newly_sacked);
            let before = self.recovery_entry_point();
            {
                let (rec, mut cx) = self.split(now);
                rec.on_duplicate_ack(&mut cx, newly_sacked);
            }
            self.note_recovery_entry(before);
            if !self.probe_allowed() {
                self.cancel_probe();
            }
            return;
        }

        let acked = ack.ack - self.seq.snd_una;
        self.seq.snd_una = ack.ack;
        self.seq.snd_nxt = self.seq.snd_nxt.max(ack.ack); // the receiver acked ahead of go-back-N
        self.timed_out_unrepaired = false;

        let mut orig_end = news.orig_end;
        // tcp_skb_spurious_retrans(): with timestamps (and `frto`), a resent
        // segment whose original the echo shows acked does not time RACK.
        let echo_check = self.extras.undo().is_some_and(|u| u.timestamps);
        // The newest segment acked never retransmitted, and whether any
        // retransmitted one was (tcp_clean_rtx_queue()'s last_ackt, FLAG_RETRANS_DATA_ACKED).
        let (mut newest_fresh, mut any_resent) = (None, false);
        if let Some(log) = self.txlog.as_mut() {
            let rec = &mut self.recovery;
            let sample = log.on_ack_with(ack.ack, now, self.timestamps, |seg| {
                if !seg.retransmitted {
                    orig_end = Some(orig_end.map_or(seg.end, |e| e.min(seg.end)));
                    newest_fresh = Some(seg.sent);
                } else {
                    any_resent = true;
                    if echo_check && echo_before(ack.tsecr, seg.sent) {
                        return;
                    }
                }
                rec.on_delivered(now, &seg)
            });
            if let (true, Some(rtt)) = (self.linux_sampling, sample) {
                self.rto.on_rtt_sample_seq(rtt, self.seq.snd_una, self.seq.snd_max);
            }
        }
        if self.rtt_samples_to_cc {
            // The ACK sample's rtt_us (ca_rtt_us): from the newest fresh segment, if no resent one was acked.
            let rtt = newest_fresh.filter(|_| !any_resent).map(|t| now.saturating_sub(t));
            let srtt = self.rto.srtt();
            let sample = RttSample { rtt, snd_una: self.seq.snd_una, snd_nxt: self.seq.snd_nxt, srtt };
            self.cc.on_rtt_sample(now, &sample);
        }
        if self.linux_sampling {
            // Timed above.
        } else if let Some((end, sent)) = self.rtt_probe {
            if ack.ack >= end {
                self.rto.on_rtt_sample(now.saturating_sub(sent));
                self.rtt_probe = None;
            }
        }
        self.process_loss(now, &ack, true, orig_end, newly_sacked);
        self.process_recovery_undo(now, &ack);
        {
            let (rec, mut cx) = self.split(now);
            rec.on_cumulative_ack(&mut cx, acked);
        }

        // RFC 6298 (5.2)/(5.3).
        self.rto_deadline =
            if self.seq.snd_una == self.seq.snd_max { None } else { Some(now.saturating_add(self.rto.rto())) };
        let before = self.recovery_entry_point();
        {
            let (rec, mut cx) = self.split(now);
            rec.after_cumulative_ack(&mut cx, ack.ack - una_before + newly_sacked);
        }
        self.note_recovery_entry(before);
        self.arm_probe(now);
    }

    /// Linux's tcp_current_ssthresh() and cwnd now, and whether in fast
    /// recovery: what a reduction about to happen would be undone to.
    fn undo_point(&self) -> (bool, Prior) {
        let (cwnd, ssthresh) = (self.cc.cwnd(), self.cc.ssthresh());
        let in_recovery = self.recovery.in_fast_recovery();
        let current = if in_recovery { ssthresh } else { ssthresh.max(cwnd / 2 + cwnd / 4) };
        (in_recovery, Prior { cwnd, ssthresh: current })
    }

    /// Before a call that may enter fast recovery: the window it would be
    /// undone to, if undo is on and the connection is not in recovery yet.
    fn recovery_entry_point(&self) -> Option<Prior> {
        if self.extras.undo().is_none() || self.recovery.in_fast_recovery() {
            return None;
        }
        Some(self.undo_point().1)
    }

    /// A fast recovery began in the call just made (tcp_enter_recovery():
    /// tcp_init_undo() with the window before it).
    fn note_recovery_entry(&mut self, before: Option<Prior>) {
        let Some(prior) = before else {
            return;
        };
        if self.recovery.in_fast_recovery() {
            if let Some(u) = self.extras.undo_mut() {
                u.on_enter_recovery(prior);
            }
        }
    }

    /// tcp_process_loss() (`recovery/frto.rs`) for an ACK during a timeout's
    /// recovery: undo a spurious timeout, or choose F-RTO's new data.
    fn process_loss(&mut self, now: Time, ack: &Ack, advanced: bool, orig_end: Option<u64>, newly_sacked: u64) {
        let Some(u) = self.extras.undo_mut() else {
            return;
        };
        if !u.in_loss() {
            return;
        }
        let flags = AckFlags {
            una: self.seq.snd_una,
            snd_max: self.seq.snd_max,
            una_advanced: advanced,
            orig_end,
            data_sacked: newly_sacked > 0,
            dupack: !advanced,
            new_data_ready: self.seq.new_data_in_window().is_some(),
            tsecr: ack.tsecr,
        };
        let Some(prior) = u.on_ack(&flags) else {
            return;
        };
        self.stats.rto_undos += 1;
        self.timed_out_unrepaired = false; // icsk_retransmits = 0
        self.undo_window(now, prior);
    }

    /// tcp_try_undo_partial() / tcp_try_undo_recovery() (`recovery/frto.rs`) for an
    /// ACK that advanced snd_una in fast recovery.
    fn process_recovery_undo(&mut self, now: Time, ack: &Ack) {
        if self.extras.undo().is_none() || !self.recovery.in_fast_recovery() {
            return;
        }
        let Some(extras) = self.extras.as_deref_mut() else {
            return;
        };
        let log = self.txlog.as_ref();
        let retrans_out = || log.map_or(0, TxLog::retrans_out);
        let verdict = extras.undo.as_mut().map(|u| u.on_recovery_ack(true, ack.tsecr, retrans_out));
        if let Some(RecoveryUndo::Undo(prior)) = verdict {
            self.stats.recovery_undos += 1;
            self.undo_window(now, prior);
        }
    }

    /// tcp_undo_cwnd_reduction(): the window back, no loss marks, the open state.
    fn undo_window(&mut self, now: Time, prior: Prior) {
        self.cc.on_spurious(prior.cwnd, prior.ssthresh);
        let (rec, mut cx) = self.split(now);
        rec.on_undo(&mut cx);
    }

    /// Linux's tcp_clean_rtx_queue(): an ACK that acks nothing new but SACKs
    /// never-retransmitted data sent before the head was last (re)sent
    /// (an RTT sample older than the head's) re-arms the RTO from now
    /// (FLAG_SET_XMIT_TIMER). So while a repair is under way and SACKs of
    /// older data keep arriving, the timer keeps out of the way; SACKs of
    /// data sent after the head do not extend it.
    fn rearm_on_old_sack(&mut self, now: Time, news: SackNews) {
        if !self.linux_sampling || self.rto_deadline.is_none() {
            return;
        }
        let head_sent = self.txlog.as_ref().and_then(TxLog::head_sent);
        if let (Some(sacked), Some(head)) = (news.oldest_sent, head_sent) {
            if sacked < head {
                self.rto_deadline = Some(now.saturating_add(self.rto.rto()));
            }
        }
    }

    /// Must be called when `now >= poll_timeout()`; otherwise a no-op.
    pub fn on_timeout(&mut self, now: Time) {
        if self.recovery.timer().is_some_and(|d| now >= d) {
            let before = self.recovery_entry_point();
            let entered = {
                let (rec, mut cx) = self.split(now);
                rec.on_timer(&mut cx)
            };
            self.note_recovery_entry(before);
            if entered {
                self.cancel_probe();
            }
            return;
        }
        if self.extras.tlp().and_then(Tlp::deadline).is_some_and(|d| now >= d) {
            return self.on_probe_timeout(now);
        }
        match self.rto_deadline {
            Some(d) if now >= d => {}
            _ => return,
        }
        if self.seq.snd_una == self.seq.snd_max {
            self.rto_deadline = None;
            return;
        }
        self.stats.timeouts += 1;
        let (in_recovery, prior) = self.undo_point();
        if let Some(u) = self.extras.undo_mut() {
            u.on_rto(self.seq.snd_max, prior, in_recovery, self.timed_out_unrepaired);
        }
        let (flight, repeated) = (self.seq.snd_nxt - self.seq.snd_una, self.timed_out_unrepaired);
        self.cc.on_congestion_event(now, CongestionEvent::Timeout { flight, repeated });
        self.rto.on_timeout_backoff();
        self.timed_out_unrepaired = true;
        // Everything outstanding is presumed lost (like Linux's loss state).
        {
            let (rec, mut cx) = self.split(now);
            rec.on_rto(&mut cx);
        }
        if let Some(tlp) = self.extras.tlp_mut() {
            tlp.on_rto();
        }
        self.rtt_probe = None; // Karn: the timed segment will be resent
        self.rto_deadline = Some(now.saturating_add(self.rto.rto())); // (5.6)
    }

    /// The PTO fired: a probe goes out at the next transmit if the episode
    /// rules allow, and the RTO is re-armed from now (RFC 8985 §7.3).
    fn on_probe_timeout(&mut self, now: Time) {
        if let Some(tlp) = self.extras.tlp_mut() {
            tlp.on_expiry();
        }
        if self.seq.snd_una < self.seq.snd_max {
            self.rto_deadline = Some(now.saturating_add(self.rto.rto()));
        }
    }

    /// The next segment to put on the wire now, if any.
    pub fn poll_transmit(&mut self, now: Time) -> Option<Segment> {
        // Fast-recovery retransmissions are not limited by cwnd (RFC 5681 §3.2).
        // F-RTO step 2b (tcp_xmit_recovery() with REXMIT_NEW), or a fast
        // recovery found spurious with retransmissions in flight: new data
        // as the window allows, no retransmission until the next ACK.
        let (send_new, hold) = self.extras.undo().map_or((false, false), |u| (u.send_new(), u.hold()));
        if !hold {
            if let Some((seq, len)) = self.recovery.take_fast_retransmit(&self.seq) {
                return Some(self.retransmit(now, seq, len));
            }
        }
        if self.extras.tlp_mut().is_some_and(Tlp::take_due) {
            if let Some(seg) = self.send_probe(now) {
                return Some(seg);
            }
        }
        if send_new || hold {
            let next = {
                let (rec, mut cx) = self.split(now);
                cx.new_data_only = true;
                rec.poll_recovery(&mut cx)
            };
            match next {
                Some(Next::NewData { len }) => return Some(self.send_new(now, len)),
                None if hold => {} // NewReno: the rules below send only new data in fast recovery
                _ if hold => return None,
                _ => {
                    let snd_max = self.seq.snd_max;
                    if !self.extras.undo_mut().is_some_and(|u| u.new_data_exhausted(snd_max)) {
                        return None;
                    }
                }
            }
        }
        let next = {
            let (rec, mut cx) = self.split(now);
            rec.poll_recovery(&mut cx)
        };
        if let Some(next) = next {
            return match next {
                Next::Retransmit { seq, len } => Some(self.retransmit(now, seq, len)),
                Next::NewData { len } => Some(self.send_new(now, len)),
                Next::Wait => None,
            };
        }

        let seq = self.seq.snd_nxt;
        let resend = seq < self.seq.snd_max; // go-back-N after a timeout
        let mut len = self.seq.mss.min(self.seq.written - seq);
        if resend {
            len = len.min(self.seq.snd_max - seq); // keep resends apart from new data
        }
        if len == 0 {
            return None;
        }
        if !resend && seq == self.seq.snd_una {
            self.maybe_restart_after_idle(now);
        }
        // Only whole segments fit the window (sender-side SWS avoidance), but
        // with nothing in flight one segment may always go: this also serves
        // as a probe when the window is smaller than a segment.
        let in_flight = seq - self.seq.snd_una;
        let allowed = self.cc.cwnd().min(self.seq.peer_wnd);
        if in_flight > 0 && in_flight + len > allowed {
            return None;
        }
        if !resend {
            let seg = self.send_new(now, len);
            self.arm_probe(now);
            return Some(seg);
        }
        self.seq.snd_nxt += len;
        Some(self.retransmit(now, seq, len))
    }

    /// A retransmission by loss recovery (not a loss probe): Linux's
    /// tcp_retransmit_skb() stamps the episode's first (`retrans_stamp`).
    fn retransmit(&mut self, now: Time, seq: u64, len: u64) -> Segment {
        if let Some(u) = self.extras.undo_mut() {
            u.on_retransmit(now);
        }
        self.emit(now, seq, len, true)
    }

    /// `len` bytes of new data at snd_max.
    fn send_new(&mut self, now: Time, len: u64) -> Segment {
        let start = self.seq.snd_max;
        self.seq.snd_nxt = start + len;
        self.seq.snd_max = start + len;
        self.last_seg_start = start;
        self.emit(now, start, len, false)
    }

    /// RFC 8985 §7.3 TLP_send(): new data if the receiver's window allows,
    /// else the last segment sent again. Not limited by cwnd.
    fn send_probe(&mut self, now: Time) -> Option<Segment> {
        let (una, max) = (self.seq.snd_una, self.seq.snd_max);
        if una == max {
            return None;
        }
        let seg = match self.seq.new_data_in_window() {
            Some((_, len)) if self.seq.snd_nxt == max => self.send_new(now, len),
            _ => {
                let start = self.last_seg_start.clamp(una, max - 1);
                self.emit(now, start, (max - start).min(self.seq.mss), true)
            }
        };
        self.stats.tail_loss_probes += 1;
        if let Some(tlp) = self.extras.tlp_mut() {
            tlp.on_probe_sent(self.seq.snd_max, seg.retransmission);
        }
        Some(seg)
    }

    /// RFC 8985 §7.2: a probe may be scheduled only in the open state, with
    /// data outstanding and nothing delivered out of order.
    fn probe_allowed(&self) -> bool {
        self.seq.snd_una < self.seq.snd_max && self.recovery.probe_allowed()
    }

    /// (Re)starts the PTO after new data or a cumulative ACK, if allowed.
    fn arm_probe(&mut self, now: Time) {
        if self.extras.tlp().is_none() {
            return;
        }
        let allowed = self.probe_allowed();
        let one_segment = self.seq.outstanding() <= self.seq.mss;
        let (srtt, rto_deadline) = (self.rto.srtt(), self.rto_deadline);
        let tlp = self.extras.tlp_mut().unwrap();
        if allowed {
            tlp.arm(now, srtt, one_segment, rto_deadline);
        } else {
            tlp.cancel();
        }
    }

    fn cancel_probe(&mut self) {
        if let Some(tlp) = self.extras.tlp_mut() {
            tlp.cancel();
        }
    }

    /// RFC 8985 §7.4: the probe's episode, and the congestion response
    /// when the probe turns out to have repaired a loss.
    fn tlp_on_ack(&mut self, now: Time, ack: &Ack) {
        let Some(tlp) = self.extras.tlp_mut() else {
            return;
        };
        let advanced = ack.ack > self.seq.snd_una;
        let pure_dupack = !advanced && ack.sack.is_empty();
        if tlp.on_ack(ack.ack, advanced, pure_dupack) && !self.recovery.in_fast_recovery() {
            // As Linux does (CWR): the reduction of an entered-and-finished recovery.
            let flight = self.seq.outstanding();
            self.cc.on_congestion_event(now, CongestionEvent::Loss { flight });
        }
    }

    /// Linux's tcp_event_data_sent(): new data with nothing outstanding,
    /// more than one RTO after the last data segment, shrinks the window
    /// (tcp_cwnd_restart(), RFC 2861 §3) -- one halving per further RTO.
    fn maybe_restart_after_idle(&mut self, now: Time) {
        let (Some(window), Some(last)) = (self.restart_window, self.last_data_sent) else {
            return;
        };
        let idle = now.saturating_sub(last);
        let rto = self.rto.rto().max(1);
        if idle > rto {
            self.cc.on_idle_restart((idle - 1) / rto, window);
        }
    }

    /// Bookkeeping common to every transmission.
    fn emit(&mut self, now: Time, seq: u64, len: u64, retransmission: bool) -> Segment {
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += len;
        self.last_data_sent = Some(now);
        if let Some(log) = self.txlog.as_mut() {
            if retransmission {
                log.on_retransmit(seq, seq + len, now);
            } else {
                log.on_new(seq, seq + len, now);
            }
        }
        if retransmission {
            self.stats.segments_retransmitted += 1;
            self.stats.bytes_retransmitted += len;
            self.rtt_probe = None; // Karn: no samples while resending
        } else if self.rtt_probe.is_none() {
            self.rtt_probe = Some((seq + len, now));
        }
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now.saturating_add(self.rto.rto())); // (5.1)
        } else if retransmission && self.linux_sampling && seq == self.seq.snd_una {
            // Linux restarts the RTO when it resends the head of the
            // retransmission queue (tcp_xmit_retransmit_queue(): rearm_timer;
            // if the RACK reordering timer holds the slot instead, its expiry
            // re-arms the RTO from the head's send time, tcp_rearm_rto() with
            // tcp_rto_delta_us(): the same deadline). So a repair in progress
            // waits a full RTO from its own send, not from the last advancing
            // ACK (RFC 6298 (5.3) restarts only on ACKs).
            self.rto_deadline = Some(now.saturating_add(self.rto.rto()));
        }
        Segment { seq, len, retransmission, tsval: now }
    }

    /// The next timer deadline (probe, retransmission, or the recovery's
    /// own); `None` when nothing is outstanding.
    pub fn poll_timeout(&self) -> Option<Time> {
        // Pairwise rather than as an iterator over an array: called after
        // every event of the stream, and the iterator chain, inlined into the
        // simulator's timer arming, compiled to hundreds of instructions.
        let earlier = |a: Option<Time>, b: Option<Time>| match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        };
        earlier(earlier(self.extras.tlp().and_then(Tlp::deadline), self.rto_deadline), self.recovery.timer())
    }

    pub fn stats(&self) -> &SenderStats {
        &self.stats
    }

    /// Current RTO, including backoff.
    pub fn rto(&self) -> Time {
        self.rto.rto()
    }

    pub fn cwnd(&self) -> u64 {
        self.cc.cwnd()
    }

    pub fn ssthresh(&self) -> u64 {
        self.cc.ssthresh()
    }

    pub fn srtt(&self) -> Option<Time> {
        self.rto.srtt()
    }

    /// Bytes sent in the current round and not acked (`snd_nxt - snd_una`).
    pub fn in_flight(&self) -> u64 {
        self.seq.snd_nxt - self.seq.snd_una
    }

    pub fn in_recovery(&self) -> bool {
        self.recovery.in_fast_recovery()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testnet::Net;
    use super::super::{SackBlocks, MAX_SACK_BLOCKS};
    use super::*;
    use crate::time::{MS, SEC};

    const RATE: u64 = 100_000_000;

    /// RTT of about 2 ms, far below rto_min = 200 ms.
    fn cfg() -> TcpConfig {
        TcpConfig {
            mss: 1000,
            rto_min: 200 * MS,
            rto_max: 2 * SEC,
            delayed_ack: false,
            sndbuf: 2 << 20,
            rcvbuf: 2 << 20,
            ..Default::default()
        }
    }

    fn ack(ack: u64) -> Ack {
        Ack::new(ack, 1 << 20)
    }

    fn drain(s: &mut Sender, now: Time) -> Vec<(u64, u64, bool)> {
        std::iter::from_fn(|| s.poll_transmit(now)).map(|g| (g.seq, g.len, g.retransmission)).collect()
    }

    #[test]
    fn sndbuf_autotuning_grows_to_two_windows_up_to_the_ceiling() {
        // Off (the default): the buffer is fixed and expand_sndbuf does nothing.
        let mut fixed = Sender::new(&TcpConfig { sndbuf: 64_000, ..cfg() });
        fixed.expand_sndbuf();
        assert_eq!(fixed.sndbuf(), 64_000);
        // On: starts at tcp_wmem[1]; a writer blocked on it can queue no more.
        let mut s =
            Sender::new(&TcpConfig { sndbuf: 64_000, sndbuf_initial: 16_000, initial_cwnd_segments: 3, ..cfg() });
        assert_eq!(s.sndbuf(), 16_000);
        s.write(100_000);
        assert_eq!((s.written(), s.buffer_space()), (16_000, 0));
        // cwnd 3 segments in flight = cwnd: the window limits, no growth.
        assert_eq!(drain(&mut s, 0).len(), 3);
        s.expand_sndbuf();
        assert_eq!(s.sndbuf(), 16_000);
        // One segment acked: cwnd 4 (slow start), 2 in flight < 4:
        // 2 * max(4, dupthresh + 1 = 4) segments of 1000 = 8000 < 16000, no change.
        s.on_ack(MS, ack(1000));
        s.expand_sndbuf();
        assert_eq!(s.sndbuf(), 16_000);
        // Grow cwnd to 10 segments: 2 * 10 * 1000 = 20000.
        let mut acked = 1000;
        for _ in 0..6 {
            drain(&mut s, 2 * MS);
            acked += 1000;
            s.on_ack(2 * MS, ack(acked));
        }
        assert_eq!(s.cc.cwnd(), 10_000);
        s.expand_sndbuf();
        assert_eq!(s.sndbuf(), 20_000);
        // Never past the ceiling (tcp_wmem[2]).
        for _ in 0..40 {
            drain(&mut s, 3 * MS);
            acked = (acked + 1000).min(s.seq.snd_max);
            s.on_ack(3 * MS, ack(acked));
            let w = 100_000 - s.written();
            s.write(w);
            s.expand_sndbuf();
        }
        assert_eq!(s.sndbuf(), 64_000);
    }

    /// Open the window to 16 segments, then go idle with nothing outstanding.
    fn warmed(restart: bool) -> (Sender, u64, Time) {
        let mut s = Sender::new(&TcpConfig { initial_cwnd_segments: 2, cwnd_restart_after_idle: restart, ..cfg() });
        let (mut acked, mut t) = (0, 0);
        while s.cwnd() < 16_000 {
            s.write(1000);
            drain(&mut s, t);
            t += MS;
            acked += 1000;
            s.on_ack(t, ack(acked));
        }
        assert_eq!((s.cwnd(), s.in_flight()), (16_000, 0));
        (s, acked, t)
    }

    #[test]
    fn window_restarts_after_an_idle_rto_as_linux_tcp_cwnd_restart() {
        // Off: the window survives any idle time.
        let (mut s, _, t) = warmed(false);
        s.write(1000);
        drain(&mut s, t + 10 * SEC);
        assert_eq!(s.cwnd(), 16_000);
        // Idle for less than one RTO (200 ms): unchanged.
        let (mut s, acked, t) = warmed(true);
        s.write(1000);
        drain(&mut s, t + 150 * MS);
        assert_eq!(s.cwnd(), 16_000);
        s.on_ack(t + 151 * MS, ack(acked + 1000));
        let (w, t) = (s.cwnd(), t + 151 * MS);
        // 2.5 RTOs idle: delta = 500 ms; the loop halves while
        // (delta -= 200) > 0, i.e. twice; ssthresh = max(ssthresh, 3/4 cwnd)
        // stays "infinite" as no loss ever set it, so slow start regrows it.
        s.write(1000);
        drain(&mut s, t + 500 * MS);
        assert_eq!(s.cwnd(), w / 4);
        assert_eq!(s.ssthresh(), u64::MAX);
        // Ten RTOs idle: never below the restart window (2 segments).
        let (mut s, _, t) = warmed(true);
        s.write(1000);
        drain(&mut s, t + 2 * SEC);
        assert_eq!(s.cwnd(), 2000);
    }

    #[test]
    fn segmentation_and_flight_limit() {
        let mut s = Sender::new(&TcpConfig { initial_cwnd_segments: 2, ..cfg() });
        s.write(2500);
        assert_eq!(drain(&mut s, 0), vec![(0, 1000, false), (1000, 1000, false)]);
        assert_eq!(s.poll_timeout(), Some(SEC)); // rto_initial, no sample yet
        s.on_ack(MS, ack(1000)); // cwnd 3000: one short tail segment may go
        assert_eq!(drain(&mut s, MS), vec![(2000, 500, false)]);
        assert_eq!(s.rto(), 200 * MS);
        assert_eq!(s.poll_timeout(), Some(201 * MS));
        s.on_ack(2 * MS, ack(2500));
        assert_eq!((s.acked(), s.poll_timeout()), (2500, None));
        assert_eq!(s.buffer_space(), 2 << 20);
    }

    #[test]
    fn peer_window_limits_flight() {
        let mut s = Sender::new(&cfg());
        s.write(20_000);
        assert_eq!(drain(&mut s, 0).len(), 10);
        s.on_ack(MS, Ack::new(1000, 2500));
        assert_eq!(drain(&mut s, MS), vec![]); // 9000 in flight > 2500
        s.on_ack(MS, Ack::new(9000, 2500));
        assert_eq!(drain(&mut s, MS), vec![(10_000, 1000, false)]);
        s.on_ack(MS, Ack::new(10_000, 500));
        assert_eq!(drain(&mut s, MS), vec![]);
        // Nothing in flight: one segment may go even though the window is smaller.
        s.on_ack(MS, Ack::new(11_000, 500));
        assert_eq!(drain(&mut s, MS), vec![(11_000, 1000, false)]);
    }

    #[test]
    fn bogus_acks_are_ignored() {
        let mut s = Sender::new(&cfg());
        s.write(5000);
        drain(&mut s, 0);
        s.on_ack(MS, ack(7000)); // beyond snd_max
        s.on_ack(MS, ack(3000));
        s.on_ack(MS, Ack::new(1000, 0)); // old: must not shrink the window
        assert_eq!(s.acked(), 3000);
        s.write(10_000);
        assert!(!drain(&mut s, MS).is_empty());
        s.on_timeout(MS); // not due: no-op
        assert_eq!(s.stats().timeouts, 0);
    }

    #[test]
    fn no_fast_retransmit_below_recover_after_timeout() {
        let mut s = Sender::new(&cfg());
        s.write(10_000);
        drain(&mut s, 0);
        for _ in 0..3 {
            s.on_ack(MS, ack(0));
        }
        assert_eq!(s.stats().fast_retransmits, 1);
        assert_eq!(drain(&mut s, MS), vec![(0, 1000, true)]);
        let t = s.poll_timeout().unwrap();
        s.on_timeout(t);
        assert_eq!((s.stats().timeouts, s.cwnd(), s.in_recovery()), (1, 1000, false));
        assert_eq!(drain(&mut s, t), vec![(0, 1000, true)]); // go-back-N, cwnd = 1 MSS
        for _ in 0..5 {
            s.on_ack(t, ack(0)); // ack <= recover: stale, not a new loss
        }
        assert_eq!(s.stats().fast_retransmits, 1);
        // The receiver held the rest: the ACK jumps, new data goes out.
        s.write(10_000);
        s.on_ack(t, ack(10_000));
        assert_eq!(drain(&mut s, t).len(), 3); // cwnd 1000 + 2000 (byte counting, L=2)
        for _ in 0..3 {
            s.on_ack(t, ack(10_000)); // == recover: still not "more than recover"
        }
        assert_eq!(s.stats().fast_retransmits, 1);
        s.on_ack(t, ack(11_000));
        for _ in 0..3 {
            s.on_ack(t, ack(11_000)); // a loss above recover
        }
        assert_eq!(s.stats().fast_retransmits, 2);
    }

    #[test]
    fn single_drop_repaired_by_fast_retransmit() {
        let mut net = Net::new(&cfg(), RATE, MS);
        net.drop_nth(300_000, 1);
        net.write(1_000_000);
        assert!(net.run(10 * SEC));
        assert_eq!(net.rx.delivered(), 1_000_000);
        let st = net.tx.stats();
        assert_eq!((st.fast_retransmits, st.timeouts, st.segments_retransmitted), (1, 0, 1));
        assert_eq!(st.bytes_retransmitted, 1000);
        assert_eq!(st.bytes_sent, 1_001_000);
        assert_eq!(st.segments_sent, 1001);
    }

    #[test]
    fn multiple_drops_in_one_window_use_partial_acks() {
        let mut net = Net::new(&cfg(), RATE, MS);
        for seq in [300_000, 305_000, 310_000] {
            net.drop_nth(seq, 1);
        }
        net.write(2_000_000);
        assert!(net.run(10 * SEC));
        assert_eq!(net.rx.delivered(), 2_000_000);
        let st = net.tx.stats();
        assert_eq!((st.fast_retransmits, st.timeouts, st.segments_retransmitted), (1, 0, 3));
    }

    #[test]
    fn tail_drop_repaired_by_timeout_after_rto_min() {
        let c = cfg();
        let mut net = Net::new(&c, RATE, MS);
        net.drop_nth(4000, 1);
        net.write(5000);
        assert!(net.run(10 * SEC));
        let st = net.tx.stats();
        assert_eq!((st.timeouts, st.fast_retransmits, st.segments_retransmitted), (1, 0, 1));
        let sends = net.sends_of(4000);
        assert_eq!(sends.len(), 2);
        let gap = sends[1] - sends[0];
        assert!(gap >= c.rto_min && gap < c.rto_min + 5 * MS, "gap {gap}");
    }

    #[test]
    fn repeated_timeouts_back_off_exponentially() {
        let c = cfg();
        let mut net = Net::new(&c, RATE, MS);
        for n in 1..=7 {
            net.drop_nth(4000, n);
        }
        net.write(5000);
        assert!(net.run(60 * SEC));
        assert_eq!(net.tx.stats().timeouts, 7);
        let sends = net.sends_of(4000);
        assert_eq!(sends.len(), 8);
        assert!(sends[1] - sends[0] >= c.rto_min);
        let gaps: Vec<Time> = sends.windows(2).skip(1).map(|w| w[1] - w[0]).collect();
        let want: Vec<Time> = (1..7).map(|i| (c.rto_min << i).min(c.rto_max)).collect();
        assert_eq!(gaps, want); // 400, 800, 1600, then capped at 2000 ms
    }

    /// An ACK of `una` SACKing `[start, end)`.
    fn sack(una: u64, start: u64, end: u64) -> Ack {
        let mut a = ack(una);
        a.sack.push(start, end);
        a
    }

    /// Ten segments out at t = 0, then segments 1..=3 SACKed at `t`: the third
    /// duplicate starts recovery and the head goes again at `t`.
    fn head_resent(c: &TcpConfig, t: Time) -> Sender {
        let mut s = Sender::new(c);
        s.seed_handshake_rtt(MS);
        s.write(10_000);
        assert_eq!(drain(&mut s, 0).len(), 10);
        for k in 2..=4 {
            s.on_ack(t, sack(0, 1000, k * 1000));
        }
        assert_eq!(drain(&mut s, t).first(), Some(&(0, 1000, true)));
        s
    }

    #[test]
    fn linux_restarts_the_rto_when_the_head_is_resent() {
        let rfc = TcpConfig { sack: true, ..cfg() };
        let linux = TcpConfig { linux_rto: true, ..rfc.clone() };
        let t = 30 * MS;
        // RFC 6298: the timer runs from the first transmission (5.1); dupACKs do not move it.
        let s = head_resent(&rfc, t);
        assert_eq!(s.rto_deadline, Some(s.rto()));
        // Linux (tcp_xmit_retransmit_queue()): the head's retransmission restarts it.
        let s = head_resent(&linux, t);
        assert_eq!(s.rto_deadline, Some(t + s.rto()));
    }

    #[test]
    fn linux_sacks_of_data_older_than_the_resent_head_restart_the_rto() {
        let c = TcpConfig { sack: true, linux_rto: true, rack: true, ..cfg() };
        let t = 30 * MS;
        let mut s = head_resent(&c, t);
        let armed = s.rto_deadline.unwrap();
        assert_eq!(armed, t + s.rto());
        // Segment 5, sent at 0 (before the head's resend at t), is SACKed at 2t: re-armed from 2t.
        s.on_ack(2 * t, sack(0, 1000, 5000));
        s.on_ack(2 * t, sack(0, 1000, 6000));
        assert_eq!(s.rto_deadline, Some(2 * t + s.rto()));
        // Data sent with the head, not before it, SACKed later does not extend it.
        let mut s = Sender::new(&c);
        s.seed_handshake_rtt(MS);
        s.write(10_000);
        drain(&mut s, 0);
        let armed = s.rto_deadline;
        s.on_ack(t, sack(0, 1000, 2000));
        assert_eq!(s.rto_deadline, armed);
    }

    #[test]
    fn karn_ignores_ambiguous_sample() {
        let c = cfg();
        let mut net = Net::new(&c, RATE, MS);
        net.drop_nth(4000, 1);
        net.write(5000);
        assert!(net.run(10 * SEC));
        // The retransmission was acked ~2 ms after it was resent, ~202 ms
        // after the original: neither may be used, so SRTT stays at the
        // first samples and the backed-off RTO is kept.
        let srtt = net.tx.srtt().unwrap();
        assert!(srtt < 5 * MS, "srtt {srtt}");
        assert_eq!(net.tx.rto(), 2 * c.rto_min);
        // A fresh segment gives a valid sample, which ends the backoff.
        net.write(1000);
        assert!(net.run(20 * SEC));
        assert!(net.tx.srtt().unwrap() < 5 * MS);
        assert_eq!(net.tx.rto(), c.rto_min);
    }

    /// Random operations, including nonsense, must never panic and must
    /// keep the sequence-space invariants.
    #[test]
    fn fuzz_never_panics() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut rnd = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m.max(1)
        };
        for round in 0..200 {
            let c = TcpConfig {
                mss: 1 + rnd(3000),
                rcvbuf: rnd(20_000),
                sndbuf: rnd(50_000),
                dupack_threshold: rnd(4),
                delayed_ack: round % 2 == 0,
                ..Default::default()
            };
            let mut s = Sender::new(&c);
            let mut r = super::super::Receiver::new(&c);
            let mut now = 0;
            for _ in 0..300 {
                now += rnd(300 * MS);
                match rnd(6) {
                    0 => s.write(rnd(100_000)),
                    1 => s.on_ack(now, Ack::new(rnd(s.written() + 10), rnd(30_000))),
                    2 => s.on_timeout(now),
                    3 => {
                        r.on_segment(now, Segment { seq: rnd(60_000), len: rnd(5000), retransmission: false, tsval: 0 })
                    }
                    4 => r.on_timeout(now),
                    _ => {
                        while let Some(g) = s.poll_transmit(now) {
                            assert!(g.len > 0 && g.seq + g.len <= s.written());
                            r.on_segment(now, g);
                        }
                        while let Some(a) = r.poll_ack(now) {
                            s.on_ack(now, a);
                        }
                    }
                }
                assert!(s.acked() <= s.written() && s.in_flight() <= s.written() - s.acked());
            }
        }
    }

    /// The same with SACK and TLP on, ACKs carrying random (often
    /// nonsensical) SACK blocks, and the receiver's real ones.
    #[test]
    fn fuzz_with_sack_and_tlp_never_panics() {
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut rnd = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m.max(1)
        };
        for round in 0..600 {
            let c = TcpConfig {
                mss: 1 + rnd(3000),
                rcvbuf: rnd(20_000),
                sndbuf: rnd(50_000),
                dupack_threshold: rnd(4),
                delayed_ack: round % 2 == 0,
                sack: round % 3 != 2,
                tail_loss_probe: round % 3 != 1,
                // Linux's rules in every other round (RACK needs SACK: some rounds ask without).
                linux_rto: round % 2 == 1,
                timestamps: round % 4 == 1,
                rack: round % 5 < 3,
                prr: round % 3 == 0,
                congestion: if round % 4 == 2 { "cubic" } else { "reno" },
                frto: round % 7 < 4,
                hystart: round % 2 == 0,
                ..Default::default()
            };
            let mut s = Sender::new(&c);
            if round % 4 == 0 {
                s.seed_handshake_rtt(rnd(5 * MS));
            }
            let mut r = super::super::Receiver::new(&c);
            let mut now = 0;
            for _ in 0..300 {
                now += rnd(if round % 2 == 0 { 300 * MS } else { MS });
                match rnd(8) {
                    0 => s.write(rnd(100_000)),
                    1 | 6 => {
                        let base = rnd(s.written() + 10);
                        let mut sack = SackBlocks::default();
                        for _ in 0..rnd(6) {
                            let a = base.saturating_add(rnd(60_000)).saturating_sub(rnd(3000));
                            sack.push(a, a.saturating_add(rnd(8000)).saturating_sub(rnd(2000)));
                        }
                        s.on_ack(now, Ack { ack: base, window: rnd(30_000), sack, tsecr: None });
                    }
                    2 => s.on_timeout(now),
                    3 => {
                        if let Some(t) = s.poll_timeout() {
                            now = now.max(t);
                            s.on_timeout(now);
                        }
                    }
                    4 => {
                        r.on_segment(now, Segment { seq: rnd(60_000), len: rnd(5000), retransmission: false, tsval: 0 })
                    }
                    5 => r.on_timeout(now),
                    _ => {
                        while let Some(g) = s.poll_transmit(now) {
                            assert!(g.len > 0 && g.seq + g.len <= s.written());
                            if rnd(4) != 0 {
                                r.on_segment(now, g); // some are lost
                            }
                        }
                        while let Some(a) = r.poll_ack(now) {
                            assert!(a.sack.len() <= MAX_SACK_BLOCKS);
                            s.on_ack(now, a);
                        }
                    }
                }
                let q = &s.seq;
                assert!(q.snd_una <= q.snd_nxt && q.snd_nxt <= q.snd_max && q.snd_max <= q.written);
                assert!(s.recovery.uses_go_back_n() || q.snd_nxt == q.snd_max);
                assert!(q.snd_una == q.snd_max || s.poll_timeout().is_some(), "data outstanding, no timer");
            }
        }
    }
}
