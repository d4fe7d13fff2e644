//! The driver: builds the state machines from a tree, carries their packets
//! over the networks as events, and collects the statistics.

use super::link::{Lane, Sent};
use super::msg::{Ack, Out};
use super::params::Params;
use super::receiver::Receiver;
use super::repair::{RepairPoint, RepairRouter};
use super::router::Router;
use super::source::Source;
use super::stats::{BufferStats, DelaySummary, NetworkStats, Probe, ReceiverStats, Report};
use super::timeout::{repair_flags, timeouts};
use super::tree::{NodeKind, Tree};
use crate::engine::EventQueue;
use crate::rng::Rng;
use crate::time::{from_secs, to_secs, tx_time, Time};

#[derive(Clone, Copy, Debug)]
enum Ev {
    /// The head data packet of `net`'s down lane reaches the child end.
    Down(u32),
    /// The head ACK of `net`'s up lane reaches the parent end.
    Up(u32),
    /// The source may send its next new packet.
    Tick,
    /// A repair point's earliest deadline is due.
    Timer(u32),
    /// Same, after every other event of this instant (see `on_timer`).
    TimerCheck(u32),
}

/// The receivers are most of a large tree; boxing the big variants keeps
/// the per-node array small (the run is bound by memory traffic).
enum Role {
    Source(Box<Source>),
    Router(Router),
    Repair(Box<RepairRouter>),
    Receiver(Receiver, u32),
}

impl Role {
    fn point(&self) -> Option<&RepairPoint> {
        match self {
            Role::Source(s) => Some(&s.point),
            Role::Repair(r) => Some(&r.point),
            _ => None,
        }
    }

    fn point_mut(&mut self) -> Option<&mut RepairPoint> {
        match self {
            Role::Source(s) => Some(&mut s.point),
            Role::Repair(r) => Some(&mut r.point),
            _ => None,
        }
    }
}

/// A data packet in flight: its sequence number and whether a timer sent it.
#[derive(Clone, Copy, Debug)]
struct Data {
    seq: u64,
    retx: bool,
}

pub struct Driver<'a> {
    tree: &'a Tree,
    roles: Vec<Role>,
    /// Per network: data lane (parent to child) and ACK lane (back).
    down: Vec<Lane<Data>>,
    up: Vec<Lane<Ack>>,
    /// Per network: retransmitted copies sent, and copies nobody needed.
    retransmitted: Vec<u64>,
    redundant: Vec<u64>,
    q: EventQueue<Ev>,
    out: Vec<Out>,
    /// A Timer or TimerCheck event is pending for this node.
    armed: Vec<bool>,
    tick_at: Option<Time>,
    probes: Vec<Probe>,
    receivers: u32,
    first_tx: Vec<Time>,
    got: Vec<u32>,
    last: Vec<Time>,
    released: Vec<Option<Time>>,
    delivered: u64,
    rx_delay_ns: Vec<u128>,
    time_limit: Time,
    queue_limit: u64,
    /// Why the run stopped early, if it did.
    stopped: Option<String>,
}

impl<'a> Driver<'a> {
    pub fn new(tree: &'a Tree, p: &Params) -> Driver<'a> {
        let repair = repair_flags(tree, p.repair);
        let rtos = timeouts(tree, &repair, p);
        let rto = |n: usize| rtos[n];
        let interval = p.rate_pps.map_or(0, |r| from_secs(1.0 / r));
        let mut receivers = 0;
        let roles = tree
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let k = n.children.len();
                match n.kind {
                    NodeKind::Source => Role::Source(Box::new(Source::new(k, rto(i), p.packets, p.window, interval))),
                    NodeKind::Router if repair[i] => Role::Repair(Box::new(RepairRouter::new(k, rto(i)))),
                    NodeKind::Router => Role::Router(Router::new(k)),
                    NodeKind::Receiver => {
                        receivers += 1;
                        Role::Receiver(Receiver::default(), receivers - 1)
                    }
                }
            })
            .collect();
        let lane_rng = |n: &str, dir: &str| Rng::new(p.seed, &format!("mcast:{n}:{dir}"));
        let down = tree
            .networks
            .iter()
            .map(|n| Lane::new(tx_time(tree.packet_bytes, n.rate_bps), n.delay, n.loss, lane_rng(&n.name, "down")))
            .collect();
        let ack_loss = |n: &super::tree::Network| if p.ack_loss { n.loss } else { 0.0 };
        let up = tree
            .networks
            .iter()
            .map(|n| Lane::new(tx_time(p.ack_bytes, n.rate_bps), n.delay, ack_loss(n), lane_rng(&n.name, "up")))
            .collect();
        let nn = tree.networks.len();
        let packets = p.packets as usize;
        Driver {
            tree,
            roles,
            down,
            up,
            retransmitted: vec![0; nn],
            redundant: vec![0; nn],
            q: EventQueue::default(),
            out: Vec::new(),
            armed: vec![false; tree.nodes.len()],
            tick_at: None,
            probes: vec![Probe::default(); tree.nodes.len()],
            receivers,
            first_tx: vec![0; packets],
            got: vec![0; packets],
            last: vec![0; packets],
            released: vec![None; packets],
            delivered: 0,
            rx_delay_ns: vec![0; receivers as usize],
            time_limit: p.time_limit,
            queue_limit: p.queue_limit_packets,
            stopped: None,
        }
    }

    /// Run until every packet is delivered and every buffer drained (or the
    /// time limit), and report.
    pub fn run(mut self) -> Report {
        let wall = std::time::Instant::now();
        self.q.schedule(0, Ev::Tick);
        self.tick_at = Some(0);
        while let Some(t) = self.q.peek_time() {
            if t > self.time_limit {
                self.stopped = Some(format!("time_limit_s: stopped at {} s", to_secs(self.time_limit)));
                break;
            }
            if self.stopped.is_some() {
                break;
            }
            let Some((_, ev)) = self.q.pop() else { break };
            match ev {
                Ev::Down(net) => {
                    if let Some((d, next)) = self.down[net as usize].arrive() {
                        if let Some(at) = next {
                            self.q.schedule(at, Ev::Down(net));
                        }
                        self.on_data(net, d.seq, d.retx);
                    }
                }
                Ev::Up(net) => {
                    if let Some((ack, next)) = self.up[net as usize].arrive() {
                        if let Some(at) = next {
                            self.q.schedule(at, Ev::Up(net));
                        }
                        self.on_ack(net, ack);
                    }
                }
                Ev::Tick => {
                    if self.tick_at == Some(t) {
                        self.tick_at = None;
                    }
                    self.pump_source();
                }
                Ev::Timer(node) => self.on_timer(node),
                Ev::TimerCheck(node) => self.on_timer_check(node),
            }
        }
        self.report(wall.elapsed().as_secs_f64())
    }

    fn on_data(&mut self, net: u32, seq: u64, retx: bool) {
        let now = self.q.now();
        let node = self.tree.networks[net as usize].child;
        let needed = match &mut self.roles[node as usize] {
            Role::Router(r) => r.on_data(seq, retx, &mut self.out),
            Role::Repair(r) => {
                let new = r.on_data(now, seq, &mut self.out);
                self.probes[node as usize].set(now, r.point.held);
                new
            }
            Role::Receiver(r, idx) => {
                let (ack, new) = r.on_data(seq);
                self.out.push(Out::Ack(ack));
                if new {
                    let s = seq as usize;
                    self.rx_delay_ns[*idx as usize] += (now - self.first_tx[s]) as u128;
                    self.got[s] += 1;
                    self.last[s] = now;
                    if self.got[s] == self.receivers {
                        self.delivered += 1;
                    }
                }
                new
            }
            Role::Source(_) => true, // the source is never a child (validated)
        };
        if !needed {
            self.redundant[net as usize] += 1;
        }
        self.flush(node);
        self.arm(node);
    }

    fn on_ack(&mut self, net: u32, ack: Ack) {
        let now = self.q.now();
        let n = &self.tree.networks[net as usize];
        let (node, slot) = (n.parent, n.slot as usize);
        match &mut self.roles[node as usize] {
            Role::Router(r) => r.on_ack(slot, ack, &mut self.out),
            Role::Repair(r) => {
                r.point.on_ack(slot, ack);
                self.probes[node as usize].set(now, r.point.held);
            }
            Role::Source(s) => {
                s.point.on_ack(slot, ack);
                for &seq in s.point.completed() {
                    self.released[seq as usize] = Some(now);
                }
                self.probes[node as usize].set(now, s.point.held);
                self.pump_source();
            }
            Role::Receiver(..) => {} // receivers have no children (validated)
        }
        self.flush(node);
    }

    /// Send every new packet the source may send now; wake it when it may next.
    fn pump_source(&mut self) {
        let now = self.q.now();
        let src = self.tree.source;
        let Role::Source(s) = &mut self.roles[src as usize] else { return };
        while let Some(seq) = s.poll_new(now) {
            self.first_tx[seq as usize] = now;
            s.point.take(now, seq, &mut self.out);
        }
        self.probes[src as usize].set(now, s.point.held);
        if let Some(t) = s.next_send_at() {
            if self.tick_at.is_none_or(|x| t < x) {
                self.q.schedule(t, Ev::Tick);
                self.tick_at = Some(t);
            }
        }
        self.flush(src);
        self.arm(src);
    }

    /// A deadline fell due. ACKs that arrive at this very instant must count
    /// (a timeout equal to the round trip is the model's assumption), so if
    /// other events share the instant, look again after them.
    fn on_timer(&mut self, node: u32) {
        if self.q.peek_time() == Some(self.q.now()) {
            self.q.schedule(self.q.now(), Ev::TimerCheck(node));
        } else {
            self.on_timer_check(node);
        }
    }

    fn on_timer_check(&mut self, node: u32) {
        let now = self.q.now();
        self.armed[node as usize] = false;
        if let Some(p) = self.roles[node as usize].point_mut() {
            p.on_timeout(now, &mut self.out);
        }
        self.flush(node);
        self.arm(node);
    }

    /// Keep one timer event pending per repair point, at its earliest deadline
    /// (deadlines only grow, so it is never too late).
    fn arm(&mut self, node: u32) {
        if self.armed[node as usize] {
            return;
        }
        if let Some(d) = self.roles[node as usize].point().and_then(|p| p.poll_timeout()) {
            self.q.schedule_timer(d, Ev::Timer(node));
            self.armed[node as usize] = true;
        }
    }

    /// Put the transmissions `node` asked for onto its networks.
    fn flush(&mut self, node: u32) {
        let now = self.q.now();
        let mut out = std::mem::take(&mut self.out);
        let n = &self.tree.nodes[node as usize];
        for o in out.drain(..) {
            match o {
                Out::Data { slot, seq, retx } => {
                    let net = n.children[slot as usize];
                    if retx {
                        self.retransmitted[net as usize] += 1;
                    }
                    let lane = &mut self.down[net as usize];
                    if let Sent::Head(at) = lane.send(now, Data { seq, retx }) {
                        self.q.schedule(at, Ev::Down(net));
                    }
                    if retx && lane.backlog(now) > self.queue_limit && self.stopped.is_none() {
                        self.stopped = Some(format!(
                            "queue_limit_packets: network '{}' queued more than {} packets at {} s \
                             (retransmissions outran the link: is the timeout shorter than the queueing delay?)",
                            self.tree.networks[net as usize].name,
                            self.queue_limit,
                            to_secs(now)
                        ));
                    }
                }
                Out::Ack(ack) => {
                    let Some(net) = n.parent_net else { continue };
                    if let Sent::Head(at) = self.up[net as usize].send(now, ack) {
                        self.q.schedule(at, Ev::Up(net));
                    }
                }
            }
        }
        self.out = out;
    }

    fn report(self, wall_s: f64) -> Report {
        // The run is over when the last buffer drained (idle timers may fire
        // later); if the time limit cut it short, when it stopped.
        let drained = self.probes.iter().map(|p| p.last_change()).chain(self.last.iter().copied()).max().unwrap_or(0);
        let end = if self.q.is_empty() { drained } else { self.q.now() };
        let pb = self.tree.packet_bytes;
        let mut delays = Vec::with_capacity(self.delivered as usize);
        let mut packet_delay_s = Vec::with_capacity(self.got.len());
        for s in 0..self.got.len() {
            if self.got[s] == self.receivers {
                let d = self.last[s] - self.first_tx[s];
                delays.push(d);
                packet_delay_s.push(to_secs(d));
            } else {
                packet_delay_s.push(f64::NAN);
            }
        }
        let packet_first_tx_s = self.first_tx.iter().map(|&t| to_secs(t)).collect();
        let mut releases = Vec::with_capacity(self.released.len());
        let mut packet_release_s = Vec::with_capacity(self.released.len());
        for (s, r) in self.released.iter().enumerate() {
            match r {
                Some(t) => {
                    releases.push(t - self.first_tx[s]);
                    packet_release_s.push(to_secs(t - self.first_tx[s]));
                }
                None => packet_release_s.push(f64::NAN),
            }
        }
        let mut receivers = Vec::with_capacity(self.receivers as usize);
        let mut buffers = Vec::new();
        for (i, (node, role)) in self.tree.nodes.iter().zip(&self.roles).enumerate() {
            match role {
                Role::Receiver(r, idx) => receivers.push(ReceiverStats {
                    name: node.name.clone(),
                    mean_delay_s: if r.received == 0 {
                        f64::NAN
                    } else {
                        self.rx_delay_ns[*idx as usize] as f64 / r.received as f64 * 1e-9
                    },
                    received: r.received,
                    duplicates: r.duplicates,
                }),
                _ => {
                    let probe = &self.probes[i];
                    let p = role.point();
                    let mean = probe.mean(end);
                    buffers.push(BufferStats {
                        name: node.name.clone(),
                        kind: node.kind.as_str().to_string(),
                        repair: matches!(role, Role::Repair(_)),
                        rto_s: p.map_or(f64::NAN, |p| to_secs(p.rto())),
                        peak_packets: probe.peak(),
                        peak_bytes: probe.peak() * pb,
                        mean_packets: mean,
                        mean_bytes: mean * pb as f64,
                        timeouts: p.map_or(0, |p| p.timeouts),
                        retransmissions: p.map_or(0, |p| p.retransmissions),
                    })
                }
            }
        }
        let networks = (self.tree.networks.iter().enumerate())
            .map(|(i, n)| NetworkStats {
                name: n.name.clone(),
                parent: self.tree.nodes[n.parent as usize].name.clone(),
                child: self.tree.nodes[n.child as usize].name.clone(),
                data_sent: self.down[i].sent,
                data_retransmitted: self.retransmitted[i],
                data_lost: self.down[i].lost,
                data_redundant: self.redundant[i],
                acks_sent: self.up[i].sent,
                acks_lost: self.up[i].lost,
            })
            .collect();
        Report {
            complete: self.delivered == self.got.len() as u64,
            stopped: self.stopped.unwrap_or_default(),
            packets: self.got.len() as u64,
            delivered: self.delivered,
            delay: DelaySummary::of(delays),
            release: DelaySummary::of(releases),
            packet_first_tx_s,
            packet_delay_s,
            packet_release_s,
            receivers,
            buffers,
            networks,
            end_time_s: to_secs(end),
            events: self.q.processed(),
            wall_s,
        }
    }
}
