//! Turning a validated `PlatformSpec` into a `Simulation`.

use super::{Host, NodeKind, Simulation};
use crate::engine::EventQueue;
use crate::net::bus::Bus;
use crate::net::cell_queue::CellQueue;
use crate::net::port::Port;
use crate::net::queue::PacketQueue;
use crate::net::router::Router;
use crate::net::routing::{Iface, Routes};
use crate::rng::Rng;
use crate::spec::{atm_cells, BufferSpec, BufferUnit, Framing, PlatformSpec, SpecError};
use crate::time::{from_secs, Time};
use crate::transport::TcpConfig;
use std::collections::{HashMap, VecDeque};

fn tcp_config(h: &crate::spec::HostSpec) -> TcpConfig {
    let t = &h.tcp;
    TcpConfig {
        mss: h.mtu - crate::net::packet::HEADER_BYTES,
        rto_min: from_secs(t.rto_min_s),
        rto_max: from_secs(t.rto_max_s),
        rto_initial: from_secs(t.rto_initial_s),
        clock_granularity: from_secs(t.clock_granularity_s),
        initial_cwnd_segments: t.initial_cwnd_segments,
        sndbuf: t.sndbuf_bytes,
        rcvbuf: t.rcvbuf_bytes,
        delayed_ack: t.delayed_ack,
        delayed_ack_timeout: from_secs(t.delayed_ack_timeout_s),
        dupack_threshold: t.dupack_threshold,
        sack: t.sack,
        tail_loss_probe: t.tail_loss_probe,
        sndbuf_initial: t.sndbuf_initial_bytes,
        cwnd_restart_after_idle: t.cwnd_restart_after_idle,
        linux_rto: t.linux_rto,
        timestamps: t.timestamps,
        rack: t.rack,
        prr: t.prr,
        cubic: t.cubic,
        quickack: t.quickack,
        frto: t.frto,
        hystart: t.hystart,
    }
}

pub(super) fn build(spec: &PlatformSpec, seed: u64) -> Result<Simulation, SpecError> {
    let (g, routers) = Graph::new(spec, seed);
    let mut adjacent: Vec<Vec<(u32, Iface)>> = vec![Vec::new(); g.names.len()];
    let ports = g.ports(&mut adjacent);
    let (buses, bus_names) = g.buses(&mut adjacent);
    let hosts = g.hosts(&adjacent)?;
    let routes = Routes::compute(&adjacent, spec.hosts.len());
    g.check_routes(&routes)?;
    Ok(Simulation {
        q: EventQueue::default(),
        nodes: g.nodes,
        node_names: g.names,
        hosts,
        ports,
        buses,
        bus_names,
        routers,
        routes,
        streams: Vec::new(),
        stream_of: HashMap::new(),
        next_op: 0,
        completions: Vec::new(),
        bus_actions: Vec::new(),
        sack_table: Vec::new(),
        sack_free: Vec::new(),
        trace: None,
    })
}

/// The platform's nodes, numbered: hosts first (node i is host i), then switches,
/// then routers; what the interfaces of each kind are built from.
struct Graph<'a> {
    spec: &'a PlatformSpec,
    seed: u64,
    names: Vec<String>,
    nodes: Vec<NodeKind>,
    index: HashMap<String, u32>,
    switch_of: HashMap<&'a str, &'a crate::spec::SwitchSpec>,
    router_of: HashMap<&'a str, &'a crate::spec::RouterSpec>,
    host_of: HashMap<&'a str, &'a crate::spec::HostSpec>,
    max_mtu: u64,
}

impl<'a> Graph<'a> {
    fn new(spec: &'a PlatformSpec, seed: u64) -> (Graph<'a>, Vec<Router>) {
        let mut names: Vec<String> = Vec::new();
        let mut nodes = Vec::new();
        for (i, h) in spec.hosts.iter().enumerate() {
            names.push(h.name.clone());
            nodes.push(NodeKind::Host(i as u32));
        }
        let mut switch_of = HashMap::new();
        for s in &spec.switches {
            switch_of.insert(s.name.as_str(), s);
            names.push(s.name.clone());
            nodes.push(NodeKind::Switch { latency: from_secs(s.latency_s), cell_interleaving: s.cell_interleaving });
        }
        let mut router_of = HashMap::new();
        let mut routers = Vec::new();
        for (i, r) in spec.routers.iter().enumerate() {
            router_of.insert(r.name.as_str(), r);
            let node = names.len() as u32;
            names.push(r.name.clone());
            nodes.push(NodeKind::Router(i as u32));
            routers.push(Router {
                node,
                forward_pps: r.forward_pps,
                backplane_bps: r.backplane_bps,
                input: PacketQueue::new(r.buffer.size, r.buffer.unit, None),
                busy: false,
                forwarded: 0,
            });
        }
        let index = names.iter().enumerate().map(|(i, n)| (n.clone(), i as u32)).collect();
        let max_mtu = spec.hosts.iter().map(|h| h.mtu).max().unwrap_or(1500);
        let host_of = spec.hosts.iter().map(|h| (h.name.as_str(), h)).collect();
        (Graph { spec, seed, names, nodes, index, switch_of, router_of, host_of, max_mtu }, routers)
    }

    /// The output queue a node keeps towards one of its interfaces, and whether it
    /// holds packets back (802.3x) instead of dropping them.
    fn queue_for(&self, node: &str) -> (PacketQueue, bool) {
        if let Some(s) = self.switch_of.get(node) {
            let epd = if s.early_packet_discard {
                Some(s.epd_threshold_cells.unwrap_or(s.buffer.size.saturating_sub(atm_cells(self.max_mtu))))
            } else {
                None
            };
            return (PacketQueue::new(s.buffer.size, s.buffer.unit, epd), s.flow_control);
        }
        if let Some(r) = self.router_of.get(node) {
            return (PacketQueue::new(r.buffer.size, r.buffer.unit, None), false);
        }
        let h = self.host_of[node]; // a validated name: not a switch or router, so a host
        let nic = BufferSpec { size: h.nic_queue_packets, unit: BufferUnit::Packets };
        (PacketQueue::new(nic.size, nic.unit, None), false)
    }

    /// The timing noise a host adds to the frames it sends (`HostSpec::timing_noise_s`;
    /// validation keeps it off ATM links); 0 for switches and routers.
    fn host_noise(&self, node: &str, framing: Framing) -> Time {
        match self.spec.hosts.iter().find(|h| h.name == node) {
            Some(h) if framing != Framing::Atm => from_secs(h.timing_noise_s),
            _ => 0,
        }
    }

    /// Two ports per link, one per direction, each with the sender's output queue.
    fn ports(&self, adjacent: &mut [Vec<(u32, Iface)>]) -> Vec<Port> {
        let mut ports = Vec::new();
        for l in &self.spec.links {
            for (dir, (from, to)) in [(&l.a, &l.b), (&l.b, &l.a)].into_iter().enumerate() {
                let mut drop_nth = if dir == 0 { l.drop_nth.clone() } else { Vec::new() };
                drop_nth.sort_unstable();
                let (queue, flow_control) = self.queue_for(from);
                // The ATM ports of a cell-interleaving switch lose cells in a fluid buffer.
                let cell_buffer = self
                    .switch_of
                    .get(from.as_str())
                    .filter(|s| s.cell_interleaving && l.framing == Framing::Atm)
                    .map(|s| CellQueue::new(s.buffer.size, l.rate_bps));
                let pid = ports.len() as u32;
                let (owner, peer) = (self.index[from.as_str()], self.index[to.as_str()]);
                ports.push(Port {
                    owner,
                    peer,
                    rate_bps: l.rate_bps,
                    propagation: from_secs(l.propagation_s),
                    jitter: from_secs(l.jitter_s),
                    host_noise: self.host_noise(from, l.framing),
                    last_arrival: 0,
                    loss: l.loss,
                    framing: l.framing,
                    queue,
                    flow_control,
                    held: VecDeque::new(),
                    busy: false,
                    paused_by: 0,
                    rng: Rng::new(self.seed, &format!("port:{from}->{to}")),
                    tx_packets: 0,
                    tx_wire_bytes: 0,
                    wire_losses: 0,
                    drop_nth,
                    cell_buffer,
                });
                adjacent[owner as usize].push((peer, Iface::Port(pid)));
            }
        }
        ports
    }

    /// One bus per shared segment; every member reaches every other through it.
    fn buses(&self, adjacent: &mut [Vec<(u32, Iface)>]) -> (Vec<Bus>, Vec<String>) {
        let mut buses = Vec::new();
        let mut bus_names = Vec::new();
        for s in &self.spec.segments {
            let b = buses.len() as u32;
            let members: Vec<u32> = s.members.iter().map(|m| self.index[m.as_str()]).collect();
            let stations =
                s.members.iter().zip(&members).map(|(m, &node)| Bus::station(node, self.queue_for(m).0)).collect();
            for (i, &u) in members.iter().enumerate() {
                for (j, &v) in members.iter().enumerate() {
                    if i != j {
                        adjacent[u as usize].push((v, Iface::Bus { bus: b, station: i as u32, to: j as u32 }));
                    }
                }
            }
            buses.push(Bus::new(
                s.rate_bps,
                from_secs(s.propagation_s),
                s.collisions,
                stations,
                Rng::new(self.seed, &format!("bus:{}", s.name)),
            ));
            bus_names.push(s.name.clone());
        }
        (buses, bus_names)
    }

    /// The hosts, each with its one network interface (a port or a bus station).
    fn hosts(&self, adjacent: &[Vec<(u32, Iface)>]) -> Result<Vec<Host>, SpecError> {
        let n_hosts = self.spec.hosts.len();
        let mut hosts = Vec::new();
        for (i, h) in self.spec.hosts.iter().enumerate() {
            let mut ifaces: Vec<Iface> = Vec::new();
            for &(_, iface) in &adjacent[i] {
                let same = ifaces.iter().any(|&k| match (k, iface) {
                    (Iface::Bus { bus: a, .. }, Iface::Bus { bus: b, .. }) => a == b,
                    (a, b) => a == b,
                });
                if !same {
                    ifaces.push(iface);
                }
            }
            if ifaces.len() > 1 {
                return Err(format!(
                    "hosts.{}: a host has one network interface, this one has {}",
                    h.name,
                    ifaces.len()
                ));
            }
            if ifaces.is_empty() && n_hosts > 1 {
                return Err(format!("hosts.{}: not connected to any link or segment", h.name));
            }
            let timer_tick = crate::time::from_secs(h.tcp.timer_tick_s);
            hosts.push(Host {
                name: h.name.clone(),
                tcp: tcp_config(h),
                send_overhead: h.send_overhead,
                recv_overhead: h.recv_overhead,
                nic: ifaces.first().copied().unwrap_or(Iface::None),
                cpu_free: 0,
                cpu_busy: 0,
                ready: VecDeque::new(),
                corrupt_discards: 0,
                rng: Rng::new(self.seed, &format!("host:{}", h.name)),
                timer_tick,
                // A separate stream, so that hosts without ticks draw as before.
                timer_phase: if timer_tick > 0 {
                    Rng::new(self.seed, &format!("tick:{}", h.name)).below(timer_tick)
                } else {
                    0
                },
            });
        }
        Ok(hosts)
    }

    /// Every host reaches every other.
    fn check_routes(&self, routes: &Routes) -> Result<(), SpecError> {
        let n_hosts = self.spec.hosts.len() as u32;
        // Per row first; the pair to name is then looked for from that host only.
        if let Some(s) = routes.first_host_missing_a_route() {
            for d in 0..n_hosts {
                if s != d && !routes.reaches(s, d) {
                    return Err(format!(
                        "no route from host '{}' to host '{}'",
                        self.names[s as usize], self.names[d as usize]
                    ));
                }
            }
        }
        Ok(())
    }
}
