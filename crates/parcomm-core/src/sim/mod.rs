//! `Simulation`: one value holding a whole simulated platform (no globals).
//!
//! Callers submit message-level operations — send `bytes` from host i to host
//! j, compute for a while on a host, wait — and run the simulation until some
//! operation completes. Packets never leave the core.

mod build;
mod counters;
pub mod footprint;
mod hosts;
mod network;
mod trace;

pub use counters::{BusCounters, Counters, HostCounters, PortCounters, RouterCounters};
pub use trace::{TraceEvent, TraceSample};

use crate::engine::EventQueue;
use crate::net::bus::Bus;
use crate::net::packet::Packet;
use crate::net::port::Port;
use crate::net::router::Router;
use crate::net::routing::{Iface, Routes};
use crate::spec::{Overhead, PlatformSpec, SpecError};
use crate::time::{from_secs, Time};
use crate::transport::{Receiver, Sender, TcpConfig};
use std::collections::{HashMap, VecDeque};

pub type OpId = u64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompletionKind {
    /// The sender may reuse its buffer: every byte is in its socket buffer.
    Sent,
    /// The message's last byte is at the receiving host.
    Arrived,
    /// The application took a message and paid the receive overhead.
    Received,
    Computed,
    Timer,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    pub op: OpId,
    pub kind: CompletionKind,
    pub host: u32,
    pub time: Time,
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum CpuThen {
    Complete(OpId, CompletionKind),
    Write { stream: u32, op: OpId, bytes: u64 },
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Event {
    PortDone(u32),
    Arrive {
        node: u32,
        pkt: Packet,
        from_port: u32,
    },
    /// Cell interleaving: the first cell of the frame `from_port` is sending
    /// reaches switch output `port`; `cells` follow evenly over `duration`.
    CellsStart {
        port: u32,
        from_port: u32,
        cells: u64,
        duration: Time,
    },
    /// Cell interleaving: the frame from `from_port` into `port` was lost on
    /// the wire; its arrival ends now all the same.
    CellsLost {
        port: u32,
        from_port: u32,
    },
    BusResolve(u32),
    BusTxDone(u32, u32),
    BusIdle(u32),
    BusBackoff(u32, u32),
    RouterDone(u32),
    SenderTimer(u32),
    ReceiverTimer(u32),
    CpuDone {
        host: u32,
        then: CpuThen,
    },
}

pub(crate) const NO_PORT: u32 = u32::MAX;

pub(crate) enum NodeKind {
    Host(u32),
    Switch { latency: Time, cell_interleaving: bool },
    Router(u32),
}

pub(crate) struct Host {
    pub name: String,
    pub tcp: TcpConfig,
    pub send_overhead: Overhead,
    pub recv_overhead: Overhead,
    pub nic: Iface,
    pub cpu_free: Time,
    pub cpu_busy: Time,
    /// Streams that may have a segment to transmit, served round-robin.
    pub ready: VecDeque<u32>,
    pub corrupt_discards: u64,
    /// Draws for the host's overhead jitter.
    pub rng: crate::rng::Rng,
    /// Clock interrupt period (0: exact timers) and this host's tick phase.
    pub timer_tick: Time,
    pub timer_phase: Time,
}

impl Host {
    /// When a kernel timer due at `deadline` runs: the host's next clock tick.
    pub fn on_tick(&self, deadline: Time) -> Time {
        if self.timer_tick == 0 {
            return deadline;
        }
        let ticks = deadline.saturating_sub(self.timer_phase).div_ceil(self.timer_tick);
        self.timer_phase + ticks * self.timer_tick
    }
}

/// One direction of a host pair. In declaration order (`repr(C)`): what the
/// sending side touches, then what the receiving side touches, so that the
/// cache hints for either (`prefetch_stream`) cover few lines.
#[repr(C)]
pub(crate) struct Stream {
    pub sender: Sender,
    /// Messages (op, bytes not yet in the socket buffer), in order.
    pub pending: VecDeque<(OpId, u64)>,
    pub sender_timer: Option<Time>,
    /// TCP option bytes on every packet besides SACK blocks (timestamps).
    pub tcp_options: u64,
    pub src: u32,
    pub dst: u32,
    pub in_ready: bool,
    pub receiver: Receiver,
    /// Messages in flight: (stream offset of their last byte + 1, op, bytes).
    pub deliveries: VecDeque<(u64, OpId, u64)>,
    pub receiver_timer: Option<Time>,
    pub enqueued: u64,
}

pub struct Simulation {
    pub(crate) q: EventQueue<Event>,
    pub(crate) nodes: Vec<NodeKind>,
    pub(crate) node_names: Vec<String>,
    pub(crate) hosts: Vec<Host>,
    pub(crate) ports: Vec<Port>,
    pub(crate) buses: Vec<Bus>,
    pub(crate) bus_names: Vec<String>,
    pub(crate) routers: Vec<Router>,
    pub(crate) routes: Routes,
    pub(crate) streams: Vec<Stream>,
    pub(crate) stream_of: HashMap<(u32, u32), u32>,
    pub(crate) next_op: OpId,
    pub(crate) completions: Vec<Completion>,
    pub(crate) bus_actions: Vec<crate::net::bus::BusAction>,
    /// SACK blocks of ACKs in flight (see `net::packet::AckHeader`).
    pub(crate) sack_table: Vec<crate::transport::SackBlocks>,
    pub(crate) sack_free: Vec<u32>,
    /// Per-stream sender states, when asked for (`enable_trace`).
    pub(crate) trace: Option<trace::StreamTrace>,
}

impl Simulation {
    pub fn new(spec: &PlatformSpec, seed: u64) -> Result<Simulation, SpecError> {
        spec.validate()?;
        footprint::check_fits(&footprint::estimate(spec), footprint::available_bytes())?;
        build::build(spec, seed)
    }

    pub fn from_json(text: &str, seed: u64) -> Result<Simulation, SpecError> {
        Simulation::new(&PlatformSpec::from_json(text)?, seed)
    }

    pub fn now(&self) -> Time {
        self.q.now()
    }

    pub fn events_processed(&self) -> u64 {
        self.q.processed()
    }

    pub fn host_count(&self) -> usize {
        self.hosts.len()
    }

    pub fn host_index(&self, name: &str) -> Option<u32> {
        self.hosts.iter().position(|h| h.name == name).map(|i| i as u32)
    }

    pub fn host_name(&self, host: u32) -> &str {
        &self.hosts[host as usize].name
    }

    fn check_host(&self, host: u32, what: &str) -> Result<(), String> {
        if (host as usize) < self.hosts.len() {
            Ok(())
        } else {
            Err(format!("{what}: no host {host} (the platform has {})", self.hosts.len()))
        }
    }

    fn new_op(&mut self) -> OpId {
        self.next_op += 1;
        self.next_op
    }

    /// Send a message of `bytes` (at least 1) from `src` to `dst`. Completes
    /// twice: `Sent` at the sender and `Arrived` at the receiving host.
    pub fn send(&mut self, src: u32, dst: u32, bytes: u64) -> Result<OpId, String> {
        self.check_host(src, "send.src")?;
        self.check_host(dst, "send.dst")?;
        if bytes == 0 {
            return Err("send.bytes must be at least 1 (a message carries at least its envelope)".into());
        }
        let op = self.new_op();
        self.start_send(op, src, dst, bytes)?;
        Ok(op)
    }

    /// The application on `host` takes an arrived message of `bytes`;
    /// completes (`Received`) once the host's receive overhead is paid.
    pub fn receive(&mut self, host: u32, bytes: u64) -> Result<OpId, String> {
        self.check_host(host, "receive.host")?;
        let op = self.new_op();
        self.start_receive(op, host, bytes);
        Ok(op)
    }

    /// Occupy `host`'s CPU for `seconds` after whatever it is already doing.
    pub fn compute(&mut self, host: u32, seconds: f64) -> Result<OpId, String> {
        self.check_host(host, "compute.host")?;
        if !(seconds.is_finite() && seconds >= 0.0) {
            return Err(format!("compute.seconds must be a non-negative number, got {seconds}"));
        }
        let op = self.new_op();
        self.cpu_run(host, from_secs(seconds), CpuThen::Complete(op, CompletionKind::Computed));
        Ok(op)
    }

    /// Complete after `seconds` of simulated time, without using the CPU.
    pub fn sleep(&mut self, host: u32, seconds: f64) -> Result<OpId, String> {
        self.check_host(host, "sleep.host")?;
        if !(seconds.is_finite() && seconds >= 0.0) {
            return Err(format!("sleep.seconds must be a non-negative number, got {seconds}"));
        }
        let op = self.new_op();
        let at = self.now() + from_secs(seconds);
        // A zero-cost CPU job scheduled at `at` would queue behind compute; use the event directly.
        self.q.schedule(at, Event::CpuDone { host, then: CpuThen::Complete(op, CompletionKind::Timer) });
        Ok(op)
    }

    /// Run until at least one operation completes (returning all that complete
    /// at that instant), the queue is empty, or the clock would pass `limit`.
    pub fn run_until_completion(&mut self, limit: Time) -> Vec<Completion> {
        loop {
            match self.q.peek_time() {
                None => break,
                Some(t) if t > limit => break,
                Some(t) if !self.completions.is_empty() && t > self.q.now() => break,
                Some(_) => {}
            }
            let (_, ev) = self.q.pop().expect("peeked");
            self.prefetch_next_event();
            self.dispatch(ev);
        }
        std::mem::take(&mut self.completions)
    }

    /// Run every event up to `limit` (inclusive); returns completions on the way.
    pub fn run_until(&mut self, limit: Time) -> Vec<Completion> {
        while let Some(t) = self.q.peek_time() {
            if t > limit {
                break;
            }
            let (_, ev) = self.q.pop().expect("peeked");
            self.prefetch_next_event();
            self.dispatch(ev);
        }
        std::mem::take(&mut self.completions)
    }

    pub fn is_idle(&self) -> bool {
        self.q.is_empty()
    }

    fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::PortDone(p) => self.port_done(p),
            Event::Arrive { node, pkt, from_port } => self.arrive(node, pkt, from_port),
            Event::CellsStart { port, from_port, cells, duration } => {
                self.cells_start(port, from_port, cells, duration)
            }
            Event::CellsLost { port, from_port } => self.cells_lost(port, from_port),
            Event::BusResolve(b) => self.bus_step(b, |bus, now, out| bus.resolve(now, out)),
            Event::BusTxDone(b, st) => self.bus_tx_done(b, st),
            Event::BusIdle(b) => self.bus_step(b, |bus, now, out| bus.medium_idle(now, out)),
            Event::BusBackoff(b, st) => self.bus_step(b, |bus, now, out| bus.backoff_done(now, st, out)),
            Event::RouterDone(r) => self.router_done(r),
            Event::SenderTimer(s) => self.sender_timer(s),
            Event::ReceiverTimer(s) => self.receiver_timer(s),
            Event::CpuDone { host, then } => self.cpu_done(host, then),
        }
    }
}
