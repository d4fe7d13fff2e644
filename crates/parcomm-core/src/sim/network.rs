//! Moving packets: ports, buses and routers, and forwarding at switches.

use super::{Event, NodeKind, Simulation, NO_PORT};
use crate::net::bus::{Bus, BusAction};
use crate::net::packet::Packet;
use crate::net::port::Offer;
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
                    Offer::Dropped => false,
                }
            }
            Iface::Bus { bus, station, .. } => {
                let b = &mut self.buses[bus as usize];
                let admitted = !matches!(
                    b.stations[station as usize].queue.offer(now, pkt),
                    crate::net::queue::Admission::Dropped
                );
                if admitted {
                    self.bus_step(bus, |b, now, out| b.ready(now, station, out));
                }
                admitted
            }
            Iface::None => false,
        }
    }

    pub(crate) fn start_port(&mut self, p: u32) {
        if let Some(t) = self.ports[p as usize].try_start() {
            self.q.schedule_in(t, Event::PortDone(p));
        }
    }

    fn arrival_delay(&self, node: u32, propagation: Time) -> Time {
        match self.nodes[node as usize] {
            NodeKind::Switch { latency } => propagation + latency,
            _ => propagation,
        }
    }

    pub(crate) fn port_done(&mut self, p: u32) {
        let now = self.q.now();
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
        if let Some(pkt) = pkt {
            let delay = self.arrival_delay(peer, prop);
            if delay == 0 {
                // Same instant, and nothing else can happen in between: arrive
                // now rather than through the queue (half the events on a
                // machine-room star, where propagation is zero).
                self.q.note_handled_in_place();
                self.arrive(peer, pkt, p);
            } else {
                self.q.schedule(now + delay, Event::Arrive { node: peer, pkt, from_port: p });
            }
        }
    }

    pub(crate) fn arrive(&mut self, node: u32, pkt: Packet, from_port: u32) {
        match self.nodes[node as usize] {
            NodeKind::Host(h) => self.host_receive(h, pkt),
            NodeKind::Switch { .. } => {
                let iface = self.routes.next(node, pkt.dst);
                self.enqueue(iface, pkt, from_port);
            }
            NodeKind::Router(r) => {
                let now = self.q.now();
                let router = &mut self.routers[r as usize];
                if !matches!(router.input.offer(now, pkt), crate::net::queue::Admission::Dropped) {
                    if let Some(t) = router.try_start() {
                        self.q.schedule_in(t, Event::RouterDone(r));
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
        let iface = self.routes.next(node, pkt.dst);
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
        if let Iface::Bus { to, .. } = self.routes.next(owner, pkt.dst) {
            let peer = self.buses[b as usize].stations[to as usize].owner;
            self.q.schedule_in(prop, Event::Arrive { node: peer, pkt, from_port: NO_PORT });
        }
        if let NodeKind::Host(h) = self.nodes[owner as usize] {
            self.pump(h);
        }
    }
}
