//! Named counters, returned as data (never printed): per host, per port, per
//! bus and per router.

use super::Simulation;
use crate::net::routing::Iface;
use crate::spec::BufferUnit;
use crate::time::to_secs;

#[derive(Clone, Debug, Default)]
pub struct HostCounters {
    pub name: String,
    pub bytes_sent: u64,
    pub bytes_retransmitted: u64,
    pub segments_sent: u64,
    pub segments_retransmitted: u64,
    pub timeouts: u64,
    pub fast_retransmits: u64,
    pub tail_loss_probes: u64,
    pub nic_drops: u64,
    pub corrupt_discards: u64,
    pub cpu_busy_s: f64,
}

#[derive(Clone, Debug, Default)]
pub struct PortCounters {
    /// "owner->peer"
    pub name: String,
    pub unit: String,
    pub capacity: u64,
    pub tx_packets: u64,
    pub drops: u64,
    pub cell_drops: u64,
    pub wire_losses: u64,
    pub max_occupancy: u64,
    pub mean_occupancy: f64,
}

#[derive(Clone, Debug, Default)]
pub struct BusCounters {
    pub name: String,
    pub frames: u64,
    pub collisions: u64,
    pub drops: u64,
    pub utilization: f64,
}

#[derive(Clone, Debug, Default)]
pub struct RouterCounters {
    pub name: String,
    pub forwarded: u64,
    pub drops: u64,
    pub max_occupancy: u64,
}

#[derive(Clone, Debug, Default)]
pub struct Counters {
    pub time_s: f64,
    pub events: u64,
    pub hosts: Vec<HostCounters>,
    pub ports: Vec<PortCounters>,
    pub buses: Vec<BusCounters>,
    pub routers: Vec<RouterCounters>,
}

fn unit_name(u: BufferUnit) -> &'static str {
    match u {
        BufferUnit::Bytes => "bytes",
        BufferUnit::Packets => "packets",
        BufferUnit::Cells => "cells",
    }
}

impl Simulation {
    pub fn counters(&self) -> Counters {
        let now = self.q.now();
        let mut hosts: Vec<HostCounters> = self
            .hosts
            .iter()
            .map(|h| HostCounters {
                name: h.name.clone(),
                corrupt_discards: h.corrupt_discards,
                cpu_busy_s: to_secs(h.cpu_busy),
                ..Default::default()
            })
            .collect();
        for st in &self.streams {
            let c = &mut hosts[st.src as usize];
            let s = st.sender.stats();
            c.bytes_sent += s.bytes_sent;
            c.bytes_retransmitted += s.bytes_retransmitted;
            c.segments_sent += s.segments_sent;
            c.segments_retransmitted += s.segments_retransmitted;
            c.timeouts += s.timeouts;
            c.fast_retransmits += s.fast_retransmits;
            c.tail_loss_probes += s.tail_loss_probes;
        }
        for (i, h) in self.hosts.iter().enumerate() {
            hosts[i].nic_drops = match h.nic {
                Iface::Port(p) => self.ports[p as usize].queue.stats.drops,
                Iface::Bus { bus, station, .. } => {
                    self.buses[bus as usize].stations[station as usize].queue.stats.drops
                }
                Iface::None => 0,
            };
        }
        let ports = self
            .ports
            .iter()
            .map(|p| PortCounters {
                name: format!("{}->{}", self.node_names[p.owner as usize], self.node_names[p.peer as usize]),
                unit: unit_name(p.queue.unit()).into(),
                capacity: p.queue.capacity,
                tx_packets: p.tx_packets,
                drops: p.queue.stats.drops,
                cell_drops: p.queue.stats.cell_drops,
                wire_losses: p.wire_losses,
                // A cell-interleaving port's buffer is its fluid of cells.
                max_occupancy: match &p.cell_buffer {
                    Some(b) => b.max_occupancy().round() as u64,
                    None => p.queue.stats.max_occupancy,
                },
                mean_occupancy: match &p.cell_buffer {
                    Some(b) => b.mean_occupancy(now),
                    None => p.queue.mean_occupancy(now),
                },
            })
            .collect();
        let buses = self
            .buses
            .iter()
            .zip(&self.bus_names)
            .map(|(b, name)| BusCounters {
                name: name.clone(),
                frames: b.stats.frames,
                collisions: b.stats.collisions,
                drops: b.stats.excessive_collision_drops + b.stations.iter().map(|s| s.queue.stats.drops).sum::<u64>(),
                utilization: if now == 0 { 0.0 } else { (b.stats.busy_ns as f64 / now as f64).min(1.0) },
            })
            .collect();
        let routers = self
            .routers
            .iter()
            .map(|r| RouterCounters {
                name: self.node_names[r.node as usize].clone(),
                forwarded: r.forwarded,
                drops: r.input.stats.drops,
                max_occupancy: r.input.stats.max_occupancy,
            })
            .collect();
        Counters { time_s: to_secs(now), events: self.q.processed(), hosts, ports, buses, routers }
    }
}
