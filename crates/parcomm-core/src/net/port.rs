//! One direction of a point-to-point link: an output queue at `owner` and a
//! transmitter of fixed rate, then propagation to `peer`. With link-level
//! flow control a full queue holds arriving packets back and pauses the ports
//! that sent them (IEEE 802.3x PAUSE), so nothing is dropped.

use super::cell_queue::CellQueue;
use super::packet::Packet;
use super::queue::{Admission, PacketQueue};
use crate::rng::Rng;
use crate::spec::{wire_bytes, Framing};
use crate::time::{tx_time, Time};
use std::collections::VecDeque;

pub struct Port {
    pub owner: u32,
    pub peer: u32,
    pub rate_bps: f64,
    pub propagation: Time,
    pub loss: f64,
    pub framing: Framing,
    pub queue: PacketQueue,
    pub flow_control: bool,
    /// Packets waiting for room under flow control, with the port that sent each.
    pub held: VecDeque<(Packet, u32)>,
    pub busy: bool,
    /// Number of downstream ports currently pausing this one.
    pub paused_by: u32,
    pub rng: Rng,
    pub tx_packets: u64,
    pub tx_wire_bytes: u64,
    pub wire_losses: u64,
    /// Fault injection: transmission counts (1-based) whose packet is lost, ascending.
    pub drop_nth: Vec<u64>,
    /// A cell-interleaving ATM switch port: this fluid buffer, not `queue`,
    /// decides which cells are lost (see `cell_queue`).
    pub cell_buffer: Option<CellQueue>,
}

pub enum Offer {
    Queued,
    Dropped,
    /// Flow control: held until room frees; the sending port must pause.
    Held,
}

impl Port {
    pub fn wire_time(&self, p: &Packet) -> Time {
        let bytes = match self.framing {
            Framing::Atm => p.cells * 53,
            f => wire_bytes(f, p.ip_bytes),
        };
        tx_time(bytes, self.rate_bps)
    }

    pub fn offer(&mut self, now: Time, p: Packet, from_port: Option<u32>) -> Offer {
        if self.flow_control {
            if let Some(from) = from_port {
                if !self.held.is_empty() || !self.queue.has_room_for(&p) {
                    self.held.push_back((p, from));
                    return Offer::Held;
                }
                self.queue.push_unchecked(now, p);
                return Offer::Queued;
            }
        }
        match self.queue.offer(now, p) {
            Admission::Accepted | Admission::Truncated => Offer::Queued,
            Admission::Dropped => Offer::Dropped,
        }
    }

    /// Start sending the head packet if idle and not paused; returns its wire time.
    pub fn try_start(&mut self) -> Option<Time> {
        if self.busy || self.paused_by > 0 {
            return None;
        }
        let t = self.wire_time(self.queue.front()?);
        self.busy = true;
        Some(t)
    }

    /// The head packet has left the wire. Returns it (None if lost on the wire)
    /// and the held packets' senders that may resume.
    pub fn finish(&mut self, now: Time) -> (Option<Packet>, Vec<u32>) {
        self.busy = false;
        let p = self.queue.pop(now).expect("port finished with an empty queue");
        self.tx_packets += 1;
        self.tx_wire_bytes += match self.framing {
            Framing::Atm => p.cells * 53,
            f => wire_bytes(f, p.ip_bytes),
        };
        let mut resumed = Vec::new();
        while let Some((h, _)) = self.held.front() {
            if !self.queue.has_room_for(h) {
                break;
            }
            let (h, from) = self.held.pop_front().unwrap();
            self.queue.push_unchecked(now, h);
            resumed.push(from);
        }
        let injected = self.drop_nth.binary_search(&self.tx_packets).is_ok();
        if injected || self.rng.bernoulli(self.loss) {
            self.wire_losses += 1;
            return (None, resumed);
        }
        (Some(p), resumed)
    }
}
