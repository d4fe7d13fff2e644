//! One direction of a TCP-like reliable byte stream, as sans-IO state machines.
//!
//! A [`Sender`] lives at one host and a [`Receiver`] at the other. Neither does
//! any I/O or reads a clock: the driver passes `now` in, hands over arriving
//! segments/ACKs, and asks what to transmit and when to wake up next.
//! Sequence numbers are byte offsets from 0; segments carry no payload bytes,
//! only `(seq, len)`.
//!
//! Driver contract (both sides):
//! * after any input (`write`, `on_ack`, `on_segment`, `on_timeout`) drain the
//!   outputs: call `Sender::poll_transmit` / `Receiver::poll_ack` until `None`;
//! * call `on_timeout(now)` once `now >= poll_timeout()`; re-read
//!   `poll_timeout()` after every call, as deadlines move. A spurious
//!   `on_timeout` (early or disarmed) is a no-op.

pub mod choice;
#[cfg(test)]
mod choice_tests;
pub mod congestion;
#[cfg(test)]
mod linux_tests;
pub mod ranges;
pub mod receiver;
pub mod recovery;
pub mod sack;
pub mod sender;
pub mod seqspace;
pub mod strategies;
#[cfg(test)]
mod testnet;
pub mod timers;
pub mod txlog;

pub use congestion::CongestionControl;
pub use receiver::Receiver;
pub use sack::{SackBlocks, MAX_SACK_BLOCKS};
pub use sender::Sender;
pub use timers::rto::{Rfc6298Rto, RtoEstimator};

use crate::time::{Time, MS, SEC};

/// The timestamps option on the wire: kind, length, two 4-byte stamps, and
/// two NOPs for alignment (RFC 7323 §3 and Appendix A; Linux's
/// TCPOLEN_TSTAMP_ALIGNED).
pub const TIMESTAMP_OPTION_BYTES: u64 = 12;

/// SACK blocks that fit the 40 bytes of TCP options beside timestamps
/// (RFC 2018 §3: 3 with timestamps, 4 without; Linux's TCP_NUM_SACKS = 4).
pub const MAX_SACK_BLOCKS_WITH_TIMESTAMPS: usize = 3;

#[derive(Clone, Debug)]
pub struct TcpConfig {
    /// Payload bytes per segment.
    pub mss: u64,
    pub rto_min: Time,
    pub rto_max: Time,
    pub rto_initial: Time,
    /// G in RFC 6298: lower bound of the variance term of the RTO.
    pub clock_granularity: Time,
    pub initial_cwnd_segments: u64,
    /// Bytes the application may have written but not yet had acknowledged.
    pub sndbuf: u64,
    /// Receiver buffer: advertised window = rcvbuf - bytes held out of order.
    pub rcvbuf: u64,
    pub delayed_ack: bool,
    pub delayed_ack_timeout: Time,
    /// Duplicate ACKs that trigger fast retransmit (3 normally).
    pub dupack_threshold: u64,
    /// Selective acknowledgements: the receiver reports out-of-order blocks
    /// (RFC 2018) and the sender recovers with a scoreboard (RFC 6675).
    /// Both ends must enable it (the driver negotiates, as the SYN does).
    pub sack: bool,
    /// Tail loss probe (RFC 8985 §7): one probe segment after 2·SRTT of
    /// silence instead of waiting for the retransmission timeout.
    pub tail_loss_probe: bool,
    /// 0: the send buffer is `sndbuf`, fixed. Otherwise Linux-style
    /// autotuning: it starts at `sndbuf_initial` bytes and grows up to
    /// `sndbuf` (see `Sender::expand_sndbuf`).
    pub sndbuf_initial: u64,
    /// RFC 2861 congestion window validation as Linux does it
    /// (tcp_cwnd_restart): a connection that sends after being idle for
    /// more than one RTO restarts from a reduced window.
    pub cwnd_restart_after_idle: bool,
    /// Linux's RTO rules (`timers/linux_rto.rs`) and RTT sampling (`txlog.rs`):
    /// SRTT + rttvar with rttvar >= rto_min, a sample per advancing ACK,
    /// each sample clearing the backoff; the timer restarts when the head
    /// segment is resent, and (with RACK) on SACKs of data older than the
    /// head's last send. Off: RFC 6298 with BSD timing.
    pub linux_rto: bool,
    /// RFC 7323 timestamps: with `linux_rto`, ACKs of retransmitted data
    /// give RTT samples too. When both ends enable them, every segment and
    /// ACK carries [`TIMESTAMP_OPTION_BYTES`] more header (the simulator
    /// takes them from the payload, as Linux's mss_cache does: 1448 of 1460)
    /// and at most 3 SACK blocks fit the 40 option bytes.
    pub timestamps: bool,
    /// RACK loss detection (RFC 8985 §6, as Linux's tcp_recovery.c) with
    /// SACK, and Linux's PTO for tail loss probes.
    pub rack: bool,
    /// Proportional rate reduction (RFC 6937, Linux's tcp_cwnd_reduction())
    /// in SACK fast recovery, instead of RFC 6675's cwnd - pipe.
    pub prr: bool,
    /// The congestion control, by its name in `congestion::REGISTRY`
    /// (`reno`; `cubic`: RFC 9438, Linux's default).
    pub congestion: &'static str,
    /// Linux's quick-ACK mode: with delayed ACKs, the first 16 segments (and
    /// the first after an idle gap longer than rto_min) are ACKed at once.
    pub quickack: bool,
    /// F-RTO (RFC 5682) and the undo of a spurious retransmission timeout,
    /// as Linux with `net.ipv4.tcp_frto = 2` (`tcp_enter_loss()`,
    /// `tcp_process_loss()`, `tcp_try_undo_loss()`): after a timeout, new
    /// data goes out before more retransmissions, and an ACK of data never
    /// retransmitted (or, with `timestamps`, an echo older than the first
    /// retransmission: `tcp_packet_delayed()`) restores cwnd and ssthresh.
    /// The F-RTO sending rule needs SACK; the timestamp undo works without.
    pub frto: bool,
    /// CUBIC's HyStart (`congestion/hystart.rs`, tcp_cubic.c): slow start ends early on
    /// an ACK train as long as half the minimum RTT, or on a rise of the
    /// round's minimum RTT, from 16 segments on. Only with `congestion = "cubic"`.
    pub hystart: bool,
}

impl Default for TcpConfig {
    /// Linux-like values: RFC 6928 initial window, 200 ms minimum RTO,
    /// 1 s initial RTO (RFC 6298), 40 ms delayed ACK.
    fn default() -> Self {
        TcpConfig {
            mss: 1460,
            rto_min: 200 * MS,
            rto_max: 60 * SEC,
            rto_initial: SEC,
            clock_granularity: MS,
            initial_cwnd_segments: 10,
            sndbuf: 4 << 20,
            rcvbuf: 4 << 20,
            delayed_ack: true,
            delayed_ack_timeout: 40 * MS,
            dupack_threshold: 3,
            sack: false,
            tail_loss_probe: false,
            sndbuf_initial: 0,
            cwnd_restart_after_idle: false,
            linux_rto: false,
            timestamps: false,
            rack: false,
            prr: false,
            congestion: "reno",
            quickack: false,
            frto: false,
            hystart: false,
        }
    }
}

/// A data segment: bytes `[seq, seq + len)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub seq: u64,
    pub len: u64,
    /// Set when any byte of the segment was sent before.
    pub retransmission: bool,
    /// When the sender sent it: the RFC 7323 TSval (the simulator's clock,
    /// read at the kernel's 1 ms timestamp granularity where it matters).
    pub tsval: Time,
}

/// A cumulative acknowledgement: `ack` is the next byte expected; `window` is
/// the receive window counted from `ack`; `sack` lists out-of-order blocks
/// held above `ack` (empty unless SACK is on).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ack {
    pub ack: u64,
    pub window: u64,
    pub sack: SackBlocks,
    /// The RFC 7323 TSecr: the TSval of the latest segment that advanced the
    /// receiver (`ts_recent`, Linux's tcp_replace_ts_recent()).
    pub tsecr: Option<Time>,
}

impl Ack {
    /// A plain cumulative ACK without SACK blocks.
    pub fn new(ack: u64, window: u64) -> Ack {
        Ack { ack, window, sack: SackBlocks::default(), tsecr: None }
    }
}

/// Counters of a [`Sender`]; `*_sent` include retransmissions.
#[derive(Clone, Debug, Default)]
pub struct SenderStats {
    pub bytes_sent: u64,
    pub bytes_retransmitted: u64,
    pub segments_sent: u64,
    pub segments_retransmitted: u64,
    pub timeouts: u64,
    /// Loss recoveries entered: NewReno fast retransmits, or RFC 6675
    /// recoveries when SACK is on.
    pub fast_retransmits: u64,
    /// Tail loss probes sent (RFC 8985 §7); also counted in `segments_sent`,
    /// and in `segments_retransmitted` when the probe resends old data.
    pub tail_loss_probes: u64,
    /// Retransmission timeouts undone as spurious (`frto`; Linux's TCPLossUndo).
    pub rto_undos: u64,
    /// Fast recoveries undone as spurious (`frto`, with timestamps; Linux's
    /// TCPPartialUndo and TCPFullUndo).
    pub recovery_undos: u64,
}
