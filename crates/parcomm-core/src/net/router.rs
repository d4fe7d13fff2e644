//! A router's forwarding engine: one FIFO served at the slower of its packet
//! rate (packets/s) and its backplane rate (bits/s). Output interfaces are
//! ordinary ports or bus stations owned by the router.

use super::packet::Packet;
use super::queue::PacketQueue;
use crate::time::{tx_time, Time};

pub struct Router {
    pub node: u32,
    pub forward_pps: f64,
    pub backplane_bps: f64,
    pub input: PacketQueue,
    pub busy: bool,
    pub forwarded: u64,
}

impl Router {
    pub fn service_time(&self, p: &Packet) -> Time {
        let per_packet = (1e9 / self.forward_pps).ceil() as Time;
        per_packet.max(tx_time(p.ip_bytes, self.backplane_bps))
    }

    pub fn try_start(&mut self) -> Option<Time> {
        if self.busy {
            return None;
        }
        let t = self.service_time(self.input.front()?);
        self.busy = true;
        Some(t)
    }

    pub fn finish(&mut self, now: Time) -> Packet {
        self.busy = false;
        self.forwarded += 1;
        self.input.pop(now).expect("router finished with an empty queue")
    }
}
