//! The platform description the core accepts: plain data, usually produced by
//! `parcomm.platform` in Python and passed across as JSON.
//!
//! Every quantity is in SI units (seconds, bits per second, bytes). Validation
//! returns an error naming the offending field; nothing here panics.

use serde::{Deserialize, Serialize};
use std::collections::HashSet;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PlatformSpec {
    #[serde(default)]
    pub name: String,
    pub hosts: Vec<HostSpec>,
    #[serde(default)]
    pub switches: Vec<SwitchSpec>,
    #[serde(default)]
    pub links: Vec<LinkSpec>,
    #[serde(default)]
    pub segments: Vec<SegmentSpec>,
    #[serde(default)]
    pub routers: Vec<RouterSpec>,
}

/// Per-message software cost: fixed + per_byte * size, in seconds, plus a
/// uniform random part in [0, jitter_s) for operating-system noise
/// (interrupt coalescing, scheduling) that makes identical hosts drift apart.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Overhead {
    #[serde(default)]
    pub fixed_s: f64,
    #[serde(default)]
    pub per_byte_s: f64,
    #[serde(default)]
    pub jitter_s: f64,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    pub name: String,
    /// Largest IP packet the host sends (bytes); MSS = mtu - 40.
    #[serde(default = "default_mtu")]
    pub mtu: u64,
    /// NIC transmit queue (packets), like Linux txqueuelen.
    #[serde(default = "default_nic_queue")]
    pub nic_queue_packets: u64,
    #[serde(default)]
    pub send_overhead: Overhead,
    #[serde(default)]
    pub recv_overhead: Overhead,
    #[serde(default)]
    pub tcp: TcpSpec,
    /// Timing noise of the host's transmissions (interrupts, softirq batches,
    /// scheduling): each frame the host sends on a point-to-point link reaches
    /// the far end up to this much later than an ideal NIC would deliver it,
    /// uniform in [0, timing_noise_s), drawn per frame, never reordering the
    /// host's frames. 0: an ideal host. Not for ATM links (a cell switch takes
    /// a frame's cells as they come); shared segments have their own contention.
    #[serde(default)]
    pub timing_noise_s: f64,
}

fn default_mtu() -> u64 {
    1500
}
fn default_nic_queue() -> u64 {
    1000
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TcpSpec {
    pub rto_min_s: f64,
    pub rto_max_s: f64,
    pub rto_initial_s: f64,
    /// Timer granularity G of RFC 6298 (RTO >= SRTT + max(G, 4 RTTVAR)).
    pub clock_granularity_s: f64,
    pub initial_cwnd_segments: u64,
    pub sndbuf_bytes: u64,
    pub rcvbuf_bytes: u64,
    pub delayed_ack: bool,
    pub delayed_ack_timeout_s: f64,
    /// Duplicate ACKs that trigger fast retransmit.
    pub dupack_threshold: u64,
    /// SACK (RFC 2018) with RFC 6675 loss recovery; a stream uses it only
    /// when both of its hosts enable it.
    #[serde(default)]
    pub sack: bool,
    /// Tail loss probe (RFC 8985 §7), on the sending host.
    #[serde(default)]
    pub tail_loss_probe: bool,
    /// Send-buffer autotuning, as Linux does for a socket whose SO_SNDBUF
    /// the application did not set. 0 (the default): every stream's send
    /// buffer is `sndbuf_bytes`, fixed. Otherwise a stream's buffer starts
    /// at this many bytes (Linux: net.ipv4.tcp_wmem[1]) and grows to hold
    /// two congestion windows (tcp_new_space()) when an ACK frees room
    /// that a blocked writer waits for, up to `sndbuf_bytes` (tcp_wmem[2]).
    #[serde(default)]
    pub sndbuf_initial_bytes: u64,
    /// RFC 2861 window restart after idle, as Linux's tcp_cwnd_restart():
    /// when a stream sends data with nothing outstanding and its last data
    /// left more than one RTO ago, cwnd is halved per idle RTO down to
    /// min(initial window, cwnd), and ssthresh keeps 3/4 of the old cwnd.
    #[serde(default)]
    pub cwnd_restart_after_idle: bool,
    /// Period of the host's clock interrupt (s). TCP's timers (retransmission,
    /// delayed ACK) are kernel callouts that run on the first tick at or after
    /// their deadline; each host's ticks have their own phase, drawn once per
    /// run. 0 (the default): timers fire exactly at their deadline.
    #[serde(default)]
    pub timer_tick_s: f64,
    /// Linux's RTO rules instead of RFC 6298's: RTO = SRTT + rttvar with
    /// rttvar >= rto_min (tcp_rtt_estimator(), __tcp_set_rto()), an RTT
    /// sample on every ACK that advances snd_una, each clearing the backoff.
    #[serde(default)]
    pub linux_rto: bool,
    /// RFC 7323 timestamps (Linux: net.ipv4.tcp_timestamps = 1): with
    /// `linux_rto`, ACKs of retransmitted data give RTT samples too.
    #[serde(default)]
    pub timestamps: bool,
    /// RACK loss detection as Linux has it (RFC 8985 §6, tcp_recovery.c),
    /// with SACK: a hole is lost once data sent after it was delivered and
    /// an RTT has passed, lost retransmissions included; tail loss probes
    /// then use Linux's PTO (2 SRTT + 2 ms, or + rto_min for one segment).
    #[serde(default)]
    pub rack: bool,
    /// Proportional rate reduction in SACK fast recovery (RFC 6937, as
    /// Linux's tcp_cwnd_reduction()): sending follows what ACKs deliver.
    #[serde(default)]
    pub prr: bool,
    /// CUBIC congestion control (RFC 9438, Linux's tcp_cubic.c; HyStart is
    /// `hystart`) instead of NewReno's window growth and halving.
    #[serde(default)]
    pub cubic: bool,
    /// Linux's quick-ACK mode (tcp_enter_quickack_mode, TCP_MAX_QUICKACKS = 16):
    /// with delayed ACKs, ACK the first 16 segments at once, and again after
    /// an idle gap longer than rto_min.
    #[serde(default)]
    pub quickack: bool,
    /// F-RTO (RFC 5682) and the undo of spurious retransmission timeouts,
    /// as Linux with net.ipv4.tcp_frto = 2 (tcp_process_loss(),
    /// tcp_try_undo_loss(); with `timestamps`, tcp_packet_delayed()). The
    /// F-RTO step that sends new data needs SACK; the undo works without.
    #[serde(default)]
    pub frto: bool,
    /// CUBIC's HyStart (tcp_cubic.c hystart_update(), `hystart = 1`): slow
    /// start ends early on an ACK train or a rise in delay, from 16
    /// segments on. Only with `cubic`.
    #[serde(default)]
    pub hystart: bool,
}

impl Default for TcpSpec {
    /// Linux-like defaults: RTO min 200 ms (TCP_RTO_MIN), max 120 s (TCP_RTO_MAX),
    /// initial 1 s (RFC 6298), IW10 (RFC 6928), 1 ms timer granularity.
    fn default() -> Self {
        TcpSpec {
            rto_min_s: 0.2,
            rto_max_s: 120.0,
            rto_initial_s: 1.0,
            clock_granularity_s: 0.001,
            initial_cwnd_segments: 10,
            sndbuf_bytes: 256 * 1024,
            rcvbuf_bytes: 256 * 1024,
            delayed_ack: false,
            delayed_ack_timeout_s: 0.04,
            dupack_threshold: 3,
            sack: false,
            tail_loss_probe: false,
            sndbuf_initial_bytes: 0,
            cwnd_restart_after_idle: false,
            timer_tick_s: 0.0,
            linux_rto: false,
            timestamps: false,
            rack: false,
            prr: false,
            cubic: false,
            quickack: false,
            frto: false,
            hystart: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BufferUnit {
    Bytes,
    Packets,
    Cells,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BufferSpec {
    pub size: u64,
    pub unit: BufferUnit,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchSpec {
    pub name: String,
    /// Per output port.
    pub buffer: BufferSpec,
    /// IEEE 802.3x-style backpressure: a full port pauses its senders instead of dropping.
    #[serde(default)]
    pub flow_control: bool,
    /// ATM early packet discard: refuse a whole packet whose first cell finds
    /// the port fuller than `epd_threshold_cells`.
    #[serde(default)]
    pub early_packet_discard: bool,
    #[serde(default)]
    pub epd_threshold_cells: Option<u64>,
    /// Fixed switching latency per packet (s).
    #[serde(default)]
    pub latency_s: f64,
    /// ATM cell switching: frames arriving at an output port from several
    /// inputs interleave their cells, and a full buffer drops cells of every
    /// frame still arriving (`net::cell_queue`). False: a frame is admitted
    /// or truncated as a whole when its last bit arrives (store-and-forward).
    #[serde(default)]
    pub cell_interleaving: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Framing {
    /// Ethernet II: 14 header + 4 FCS + 8 preamble + 12 inter-frame gap, 64-byte minimum frame.
    Ethernet,
    /// IP over ATM, AAL5 with LLC/SNAP (RFC 2684): 8 + 8 trailer, padded to 48-byte cell payloads, 53-byte cells.
    Atm,
    /// Bytes on the wire equal IP bytes (for closed-form tests).
    Raw,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub a: String,
    pub b: String,
    pub rate_bps: f64,
    #[serde(default)]
    pub propagation_s: f64,
    #[serde(default)]
    pub loss: f64,
    /// Timing noise: each frame arrives up to this much later than propagation
    /// alone would have it (uniform in [0, jitter_s)), in order. 0: an ideal wire.
    #[serde(default)]
    pub jitter_s: f64,
    #[serde(default = "default_framing")]
    pub framing: Framing,
    /// Fault injection: lose the n-th packets (1-based) sent from `a` to `b`.
    #[serde(default)]
    pub drop_nth: Vec<u64>,
}

fn default_framing() -> Framing {
    Framing::Ethernet
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SegmentSpec {
    pub name: String,
    pub rate_bps: f64,
    /// Hosts and routers attached to this shared medium.
    pub members: Vec<String>,
    #[serde(default)]
    pub propagation_s: f64,
    /// Model CSMA/CD collisions and binary exponential backoff; false gives an
    /// ideal FIFO medium.
    #[serde(default = "yes")]
    pub collisions: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RouterSpec {
    pub name: String,
    pub forward_pps: f64,
    pub backplane_bps: f64,
    /// Buffer of each output interface.
    pub buffer: BufferSpec,
}

pub type SpecError = String;

fn positive(v: f64, field: &str) -> Result<(), SpecError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(format!("{field} must be a positive number, got {v}"))
    }
}

fn non_negative(v: f64, field: &str) -> Result<(), SpecError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(format!("{field} must be a non-negative number, got {v}"))
    }
}

/// Bytes one IP packet of `ip_bytes` occupies on a link with this framing.
pub fn wire_bytes(framing: Framing, ip_bytes: u64) -> u64 {
    match framing {
        Framing::Raw => ip_bytes,
        Framing::Ethernet => (ip_bytes + 18).max(64) + 20,
        Framing::Atm => atm_cells(ip_bytes) * 53,
    }
}

/// ATM cells carrying one IP packet in AAL5 with LLC/SNAP encapsulation.
pub fn atm_cells(ip_bytes: u64) -> u64 {
    (ip_bytes + 8 + 8).div_ceil(48)
}

impl PlatformSpec {
    /// Parse and validate; every error names the field (`spec_check::parse`).
    pub fn from_json(text: &str) -> Result<PlatformSpec, SpecError> {
        crate::spec_check::parse(text)
    }

    /// Every field checked, in the order an author reads a platform: limits, names,
    /// hosts, switches, routers, links, segments, wiring. The first error is returned.
    pub fn validate(&self) -> Result<(), SpecError> {
        crate::spec_check::check_limits(self)?;
        if self.hosts.is_empty() {
            return Err("hosts: a platform needs at least one host".into());
        }
        let names = self.check_names()?;
        self.check_hosts()?;
        let max_mtu = self.hosts.iter().map(|h| h.mtu).max().unwrap_or(1500);
        self.check_switches(max_mtu)?;
        self.check_routers(max_mtu)?;
        let segment_names: HashSet<&String> = self.segments.iter().map(|s| &s.name).collect();
        self.check_links(&names, &segment_names)?;
        self.check_segments(&names, &segment_names)?;
        crate::spec_check::check_wiring(self)
    }

    /// Every node and segment named, each name once; returns the names.
    fn check_names(&self) -> Result<HashSet<String>, SpecError> {
        let mut names = HashSet::new();
        let all_names = self
            .hosts
            .iter()
            .map(|h| ("hosts", &h.name))
            .chain(self.switches.iter().map(|s| ("switches", &s.name)))
            .chain(self.segments.iter().map(|s| ("segments", &s.name)))
            .chain(self.routers.iter().map(|r| ("routers", &r.name)));
        for (kind, name) in all_names {
            if name.is_empty() {
                return Err(format!("{kind}: empty name"));
            }
            if !names.insert(name.clone()) {
                return Err(format!("{kind}.{name}: duplicate name '{name}'"));
            }
        }
        Ok(names)
    }

    fn check_hosts(&self) -> Result<(), SpecError> {
        for h in &self.hosts {
            let f = |x: &str| format!("hosts.{}.{}", h.name, x);
            if h.mtu < 128 {
                return Err(format!("{} must be at least 128 bytes, got {}", f("mtu"), h.mtu));
            }
            if h.nic_queue_packets == 0 {
                return Err(format!("{} must be at least 1", f("nic_queue_packets")));
            }
            for (o, n) in [(&h.send_overhead, "send_overhead"), (&h.recv_overhead, "recv_overhead")] {
                non_negative(o.fixed_s, &f(&format!("{n}.fixed_s")))?;
                non_negative(o.per_byte_s, &f(&format!("{n}.per_byte_s")))?;
                non_negative(o.jitter_s, &f(&format!("{n}.jitter_s")))?;
            }
            non_negative(h.timing_noise_s, &f("timing_noise_s"))?;
            let t = &h.tcp;
            positive(t.rto_min_s, &f("tcp.rto_min_s"))?;
            positive(t.rto_max_s, &f("tcp.rto_max_s"))?;
            positive(t.rto_initial_s, &f("tcp.rto_initial_s"))?;
            non_negative(t.clock_granularity_s, &f("tcp.clock_granularity_s"))?;
            non_negative(t.delayed_ack_timeout_s, &f("tcp.delayed_ack_timeout_s"))?;
            non_negative(t.timer_tick_s, &f("tcp.timer_tick_s"))?;
            if t.rto_max_s < t.rto_min_s {
                return Err(format!(
                    "{} ({}) must not be below tcp.rto_min_s ({})",
                    f("tcp.rto_max_s"),
                    t.rto_max_s,
                    t.rto_min_s
                ));
            }
            if t.initial_cwnd_segments == 0 {
                return Err(format!("{} must be at least 1", f("tcp.initial_cwnd_segments")));
            }
            if t.dupack_threshold == 0 {
                return Err(format!("{} must be at least 1", f("tcp.dupack_threshold")));
            }
            let mss = h.mtu - 40;
            if t.sndbuf_bytes < mss || t.rcvbuf_bytes < mss {
                return Err(format!(
                    "{}: sndbuf_bytes and rcvbuf_bytes must hold at least one segment ({mss} bytes)",
                    f("tcp")
                ));
            }
            let init = t.sndbuf_initial_bytes;
            if init != 0 && (init < mss || init > t.sndbuf_bytes) {
                return Err(format!(
                "{} ({init}) must be 0 (no autotuning) or between one segment ({mss} bytes) and tcp.sndbuf_bytes ({})",
                f("tcp.sndbuf_initial_bytes"),
                t.sndbuf_bytes
            ));
            }
        }
        Ok(())
    }

    fn check_switches(&self, max_mtu: u64) -> Result<(), SpecError> {
        for s in &self.switches {
            let f = |x: &str| format!("switches.{}.{}", s.name, x);
            let one_packet = match s.buffer.unit {
                BufferUnit::Bytes => max_mtu,
                BufferUnit::Packets => 1,
                BufferUnit::Cells => atm_cells(max_mtu),
            };
            if s.buffer.size < one_packet {
                return Err(format!(
                    "{} ({} {:?}) is smaller than one MTU-sized packet ({} {:?})",
                    f("buffer.size"),
                    s.buffer.size,
                    s.buffer.unit,
                    one_packet,
                    s.buffer.unit
                )
                .to_lowercase());
            }
            non_negative(s.latency_s, &f("latency_s"))?;
            if s.early_packet_discard && s.buffer.unit != BufferUnit::Cells {
                return Err(format!("{} needs buffer.unit = \"cells\"", f("early_packet_discard")));
            }
            if s.cell_interleaving && s.buffer.unit != BufferUnit::Cells {
                return Err(format!("{} needs buffer.unit = \"cells\"", f("cell_interleaving")));
            }
            if s.cell_interleaving && s.flow_control {
                // Cell loss is the point of the model; flow control loses nothing.
                return Err(format!(
                    "{}: cell_interleaving models a lossy (UBR) switch, turn off flow_control",
                    f("cell_interleaving")
                ));
            }
        }
        Ok(())
    }

    fn check_routers(&self, max_mtu: u64) -> Result<(), SpecError> {
        for r in &self.routers {
            let f = |x: &str| format!("routers.{}.{}", r.name, x);
            positive(r.forward_pps, &f("forward_pps"))?;
            positive(r.backplane_bps, &f("backplane_bps"))?;
            let one_packet = if r.buffer.unit == BufferUnit::Bytes { max_mtu } else { 1 };
            if r.buffer.unit == BufferUnit::Cells {
                return Err(format!("{}: routers buffer bytes or packets, not cells", f("buffer.unit")));
            }
            if r.buffer.size < one_packet {
                return Err(format!("{} is smaller than one MTU-sized packet", f("buffer.size")));
            }
        }
        Ok(())
    }

    fn check_links(&self, names: &HashSet<String>, segment_names: &HashSet<&String>) -> Result<(), SpecError> {
        let is_node = |n: &str| names.contains(n);
        for (i, l) in self.links.iter().enumerate() {
            let f = |x: &str| format!("links[{i}].{x}");
            for (end, n) in [("a", &l.a), ("b", &l.b)] {
                if !is_node(n) {
                    return Err(format!("{}: unknown node '{n}'", f(end)));
                }
                if segment_names.contains(n) {
                    return Err(format!("{}: '{n}' is a segment; list members in segments instead", f(end)));
                }
            }
            if l.a == l.b {
                return Err(format!("{}: a link joins two different nodes, got '{}' twice", f("b"), l.a));
            }
            positive(l.rate_bps, &f("rate_bps"))?;
            non_negative(l.propagation_s, &f("propagation_s"))?;
            non_negative(l.jitter_s, &f("jitter_s"))?;
            if l.jitter_s > 0.0 && l.framing == Framing::Atm {
                // A cell-interleaving switch takes a frame's cells as they arrive; timing noise
                // on frames would not move its cells.
                return Err(format!("{}: timing noise is for frame links, not ATM", f("jitter_s")));
            }
            if l.framing == Framing::Atm {
                let noisy = self.hosts.iter().find(|h| h.timing_noise_s > 0.0 && (h.name == l.a || h.name == l.b));
                if let Some(h) = noisy {
                    return Err(format!(
                        "hosts.{}.timing_noise_s: timing noise is for frame links, but {} is on ATM link links[{i}]; set it to 0",
                        h.name, h.name
                    ));
                }
            }
            if l.drop_nth.contains(&0) {
                return Err(format!("{} counts packets from 1, got 0", f("drop_nth")));
            }
            if !(0.0..1.0).contains(&l.loss) {
                return Err(format!("{} must be in [0, 1), got {}", f("loss"), l.loss));
            }
        }
        Ok(())
    }

    fn check_segments(&self, names: &HashSet<String>, segment_names: &HashSet<&String>) -> Result<(), SpecError> {
        let is_node = |n: &str| names.contains(n);
        for s in &self.segments {
            let f = |x: &str| format!("segments.{}.{}", s.name, x);
            positive(s.rate_bps, &f("rate_bps"))?;
            non_negative(s.propagation_s, &f("propagation_s"))?;
            if s.members.len() < 2 {
                return Err(format!("{} needs at least two members", f("members")));
            }
            let mut seen = HashSet::new();
            for m in &s.members {
                if !is_node(m) || segment_names.contains(m) {
                    return Err(format!("{}: unknown host or router '{m}'", f("members")));
                }
                if self.switches.iter().any(|sw| &sw.name == m) {
                    return Err(format!(
                        "{}: '{m}' is a switch; only hosts and routers attach to a segment",
                        f("members")
                    ));
                }
                if !seen.insert(m) {
                    return Err(format!("{}: '{m}' listed twice", f("members")));
                }
            }
        }
        Ok(())
    }
}
