//! Queue admission policies: what a finite buffer does with an arriving
//! packet, one type per policy behind the `QueuePolicy` trait. The queue
//! (`net::queue`) keeps the packets, the occupancy and the statistics; a
//! policy only measures a packet in the buffer's unit and decides.
//!
//! * `DropTail`: a buffer of bytes or packets refuses what does not fit.
//! * `CellDrop`: an ATM buffer of cells admits cells while they fit, so a
//!   packet may enter with cells missing (carried, wasting bandwidth, then
//!   discarded by AAL5 reassembly), unless early packet discard (EPD)
//!   refuses it whole once occupancy is above a threshold (Romanow & Floyd,
//!   "Dynamics of TCP traffic over ATM networks", 1995).
//!
//! Room for more: a marking policy (ECN with a RED-like or step threshold,
//! RFC 3168) is another type whose verdict accepts the packet and marks it.

use super::packet::Packet;
use crate::spec::BufferUnit;

/// A policy's decision on one arriving packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Accept,
    /// Accept with this many of the packet's cells lost (it arrives corrupt).
    AcceptCellsLost(u64),
    Drop,
}

pub trait QueuePolicy {
    /// The room `p` takes in the buffer's unit.
    fn size_of(&self, p: &Packet) -> u64;
    /// The decision for `p` arriving at a buffer holding `occupancy` of `capacity`.
    fn admit(&self, occupancy: u64, capacity: u64, p: &Packet) -> Verdict;
}

/// Refuse a packet that does not fit, whole.
#[derive(Clone, Copy, Debug)]
pub struct DropTail {
    pub unit: BufferUnit,
}

impl QueuePolicy for DropTail {
    fn size_of(&self, p: &Packet) -> u64 {
        match self.unit {
            BufferUnit::Bytes => p.ip_bytes,
            BufferUnit::Packets => 1,
            BufferUnit::Cells => p.cells,
        }
    }

    fn admit(&self, occupancy: u64, capacity: u64, p: &Packet) -> Verdict {
        if occupancy + self.size_of(p) <= capacity {
            Verdict::Accept
        } else {
            Verdict::Drop
        }
    }
}

/// ATM cells: admit the cells that fit; with EPD, refuse whole packets above the threshold.
#[derive(Clone, Copy, Debug)]
pub struct CellDrop {
    pub epd_threshold: Option<u64>,
}

impl QueuePolicy for CellDrop {
    fn size_of(&self, p: &Packet) -> u64 {
        p.cells
    }

    fn admit(&self, occupancy: u64, capacity: u64, p: &Packet) -> Verdict {
        if self.epd_threshold.is_some_and(|th| occupancy > th) {
            return Verdict::Drop;
        }
        let lost = p.cells - p.cells.min(capacity - occupancy);
        match lost {
            0 => Verdict::Accept,
            l if l >= p.cells => Verdict::Drop,
            l => Verdict::AcceptCellsLost(l),
        }
    }
}

/// The policies a platform can name, dispatched statically (no virtual call per packet).
#[derive(Clone, Copy, Debug)]
pub enum Policy {
    DropTail(DropTail),
    Cells(CellDrop),
}

impl Policy {
    /// The policy of a buffer measured in `unit` (cells: `CellDrop`, with EPD at `epd_threshold`).
    pub fn for_buffer(unit: BufferUnit, epd_threshold: Option<u64>) -> Policy {
        match unit {
            BufferUnit::Cells => Policy::Cells(CellDrop { epd_threshold }),
            unit => Policy::DropTail(DropTail { unit }),
        }
    }

    pub fn unit(&self) -> BufferUnit {
        match self {
            Policy::DropTail(d) => d.unit,
            Policy::Cells(_) => BufferUnit::Cells,
        }
    }

    pub fn epd_threshold(&self) -> Option<u64> {
        match self {
            Policy::DropTail(_) => None,
            Policy::Cells(c) => c.epd_threshold,
        }
    }
}

impl QueuePolicy for Policy {
    fn size_of(&self, p: &Packet) -> u64 {
        match self {
            Policy::DropTail(d) => d.size_of(p),
            Policy::Cells(c) => c.size_of(p),
        }
    }

    fn admit(&self, occupancy: u64, capacity: u64, p: &Packet) -> Verdict {
        match self {
            Policy::DropTail(d) => d.admit(occupancy, capacity, p),
            Policy::Cells(c) => c.admit(occupancy, capacity, p),
        }
    }
}
