//! Moving packets: ports, buses and routers, and forwarding at switches.

use super::{Event, NodeKind, Simulation, NO_PORT};
use crate::net::bus::{Bus, BusAction};
use crate::net::packet::Packet;
use crate::net::port::Offer;
use crate::net::queue::Admission;
use crate::net::routing::Iface;
use crate::time::Time;

impl Simulation {
    /// Put `pkt` into `node`'s output interface `iface`. Returns false if it was dropped.
    pub(crate) fn enqueue(&mut self, iface: Iface, pkt: Packet, from_port: u32) -> bool {
        let now = self.q.now();
        match iface {
            Iface::Port(p) => {
                let from = (from_port != NO_PORT).then_some(from_port);
                match self.ports[p as usize].offer(now, pkt, from) {
                    Offer::Queued => {
                        self.start_port(p);
                        true
                    }
                    Offer::Held => {
                        self.ports[from_port as usize].paused_by += 1;
                        true
                    }
                    Offer::Dropped(pkt) => {
                        self.lost(pkt);
                        false
                    }
                }
            }
            Iface::Bus { bus, station, .. } => {
                let b = &mut self.buses[bus as usize];
                match b.stations[station as usize].queue.offer(now, pkt) {
                    Admission::Dropped(pkt) => {
                        self.lost(pkt);
                        false
                    }
                    _ => {
                        self.bus_step(bus, |b, now, out| b.ready(now, station, out));
                        true
                    }
                }
            }
            Iface::None => {
                self.lost(pkt);
                false
            }
        }
    }

    /// A packet the network lost (a full queue, no route, a corrupt frame):
    /// an ACK's SACK blocks leave the side table with it.
    pub(crate) fn lost(&mut self, pkt: Packet) {
        if let crate::net::packet::Payload::Ack(h) = pkt.payload {
            self.release_sack(h.sack_slot);
        }
    }

    pub(crate) fn start_port(&mut self, p: u32) {
        if let Some(t) = self.ports[p as usize].try_start() {
            self.q.schedule_in(t, Event::PortDone(p));
            let port = &self.ports[p as usize];
            if let (NodeKind::Host(_), Some(pkt)) = (&self.nodes[port.peer as usize], port.queue.front()) {
                self.prefetch_stream(pkt); // handled there when this frame is in
            }
            // Into a cell-interleaving switch the frame starts arriving (and
            // taking buffer) with its first cell, not its last.
            if let Some(out) = self.cell_port_fed_by(p) {
                let port = &self.ports[p as usize];
                let cells = port.queue.front().expect("a frame is starting").cells;
                let delay = self.arrival_delay(port.peer, port.propagation);
                self.q.schedule_in(delay, Event::CellsStart { port: out, from_port: p, cells, duration: t });
            }
        }
    }

    /// The cell-interleaving output port that the head frame of port `p`
    /// goes to at the switch at the far end, if any.
    fn cell_port_fed_by(&self, p: u32) -> Option<u32> {
        let port = &self.ports[p as usize];
        if !matches!(self.nodes[port.peer as usize], NodeKind::Switch { cell_interleaving: true, .. }) {
            return None;
        }
        match self.routes.next(port.peer, port.queue.front()?) {
            Iface::Port(out) if self.ports[out as usize].cell_buffer.is_some() => Some(out),
            _ => None,
        }
    }

    pub(crate) fn cells_start(&mut self, out: u32, from_port: u32, cells: u64, duration: Time) {
        let now = self.q.now();
        let port = &mut self.ports[out as usize];
        let epd = port.queue.epd_threshold();
        port.cell_buffer.as_mut().expect("a cell-interleaving port").start(now, from_port, cells, duration, epd);
    }

    pub(crate) fn cells_lost(&mut self, out: u32, from_port: u32) {
        let now = self.q.now();
        self.ports[out as usize].cell_buffer.as_mut().expect("a cell-interleaving port").finish(now, from_port);
    }

    /// The frame's last cell is in: admit what survived of it to the packet
    /// FIFO, which then only orders transmission on the output link.
    fn cells_end(&mut self, out: u32, pkt: Packet, from_port: u32) {
        let now = self.q.now();
        let port = &mut self.ports[out as usize];
        let lost = port.cell_buffer.as_mut().expect("a cell-interleaving port").finish(now, from_port);
        // Every frame into the switch announced its start; keep going regardless.
        debug_assert!(lost.is_some(), "a frame ended at a cell-interleaving port without starting");
        let Some(lost) = lost else {
            self.enqueue(Iface::Port(out), pkt, from_port);
            return;
        };
        match port.queue.admit_with_cell_loss(now, pkt, lost) {
            Admission::Dropped(pkt) => self.lost(pkt),
            _ => self.start_port(out),
        }
    }

    fn arrival_delay(&self, node: u32, propagation: Time) -> Time {
        match self.nodes[node as usize] {
            NodeKind::Switch { latency, .. } => propagation + latency,
            _ => propagation,
        }
    }

    pub(crate) fn port_done(&mut self, p: u32) {
        let now = self.q.now();
        // Before `finish` pops the frame: where its cells were going.
        let cell_port = self.cell_port_fed_by(p);
        let (pkt, resumed) = self.ports[p as usize].finish(now);
        for up in resumed {
            let port = &mut self.ports[up as usize];
            port.paused_by -= 1;
            if port.paused_by == 0 {
                self.start_port(up);
            }
        }
        let port = &self.ports[p as usize];
        let (peer, owner, prop) = (port.peer, port.owner, port.propagation);
        self.start_port(p);
        if let NodeKind::Host(h) = self.nodes[owner as usize] {
            self.pump(h);
        }
        let pkt = match pkt {
            Ok(pkt) => Some(pkt),
            Err(lost) => {
                self.lost(lost);
                None
            }
        };
        if let Some(pkt) = pkt {
            let delay = self.arrival_delay(peer, prop);
            let at = self.ports[p as usize].arrival(now, delay);
            if at == now {
                // Same instant, and nothing else can happen in between: arrive
                // now rather than through the queue (half the events on a
                // machine-room star, where propagation is zero).
                self.q.note_handled_in_place();
                self.arrive(peer, pkt, p);
            } else {
                self.q.schedule(at, Event::Arrive { node: peer, pkt, from_port: p });
            }
        } else if let Some(out) = cell_port {
            // Lost on the wire: its cells stop arriving at the switch all the same.
            let delay = self.arrival_delay(peer, prop);
            self.q.schedule(now + delay, Event::CellsLost { port: out, from_port: p });
        }
    }

    pub(crate) fn arrive(&mut self, node: u32, pkt: Packet, from_port: u32) {
        match self.nodes[node as usize] {
            NodeKind::Host(h) => self.host_receive(h, pkt),
            NodeKind::Switch { cell_interleaving, .. } => {
                let iface = self.routes.next(node, &pkt);
                match iface {
                    Iface::Port(out) if cell_interleaving && self.ports[out as usize].cell_buffer.is_some() => {
                        self.cells_end(out, pkt, from_port)
                    }
                    _ => {
                        self.enqueue(iface, pkt, from_port);
                    }
                }
            }
            NodeKind::Router(r) => {
                let now = self.q.now();
                let router = &mut self.routers[r as usize];
                match router.input.offer(now, pkt) {
                    Admission::Dropped(pkt) => self.lost(pkt),
                    _ => {
                        if let Some(t) = router.try_start() {
                            self.q.schedule_in(t, Event::RouterDone(r));
                        }
                    }
                }
            }
        }
    }

    pub(crate) fn router_done(&mut self, r: u32) {
        let now = self.q.now();
        let router = &mut self.routers[r as usize];
        let pkt = router.finish(now);
        let node = router.node;
        if let Some(t) = router.try_start() {
            self.q.schedule_in(t, Event::RouterDone(r));
        }
        let iface = self.routes.next(node, &pkt);
        self.enqueue(iface, pkt, NO_PORT);
    }

    /// Run one bus state transition and schedule what it asks for.
    pub(crate) fn bus_step(&mut self, b: u32, f: impl FnOnce(&mut Bus, Time, &mut Vec<BusAction>)) {
        let now = self.q.now();
        let mut out = std::mem::take(&mut self.bus_actions);
        f(&mut self.buses[b as usize], now, &mut out);
        for a in out.drain(..) {
            match a {
                BusAction::ResolveAt(t) => self.q.schedule(t, Event::BusResolve(b)),
                BusAction::TxDoneAt(t, st) => self.q.schedule(t, Event::BusTxDone(b, st)),
                BusAction::IdleAt(t) => self.q.schedule(t, Event::BusIdle(b)),
                BusAction::BackoffDoneAt(t, st) => self.q.schedule(t, Event::BusBackoff(b, st)),
                BusAction::Lost(pkt) => self.lost(pkt),
            }
        }
        self.bus_actions = out;
    }

    pub(crate) fn bus_tx_done(&mut self, b: u32, st: u32) {
        let mut pkt = None;
        self.bus_step(b, |bus, now, out| pkt = Some(bus.tx_done(now, st, out)));
        let pkt = pkt.expect("set by tx_done");
        let bus = &self.buses[b as usize];
        let owner = bus.stations[st as usize].owner;
        let prop = bus.propagation;
        if let Iface::Bus { to, .. } = self.routes.next(owner, &pkt) {
            let peer = self.buses[b as usize].stations[to as usize].owner;
            self.q.schedule_in(prop, Event::Arrive { node: peer, pkt, from_port: NO_PORT });
        } else {
            self.lost(pkt);
        }
        if let NodeKind::Host(h) = self.nodes[owner as usize] {
            self.pump(h);
        }
    }
}
