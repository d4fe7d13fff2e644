//! A finite packet buffer measured in bytes, packets or ATM cells, with
//! time-weighted occupancy statistics; what it admits is its policy's
//! decision (`net::policy`). Used by switch ports, host NICs, router
//! interfaces and bus stations.

use super::packet::Packet;
use super::policy::{Policy, QueuePolicy, Verdict};
use crate::spec::BufferUnit;
use crate::time::Time;
use std::collections::VecDeque;

#[derive(Clone, Debug, Default)]
pub struct QueueStats {
    pub enqueued: u64,
    pub drops: u64,
    /// ATM: cells refused (a packet with any refused cell is lost).
    pub cell_drops: u64,
    pub max_occupancy: u64,
    /// Integral of occupancy over time (unit·ns), for the time-weighted mean.
    pub occupancy_integral: f64,
    pub last_change: Time,
}

pub struct PacketQueue {
    pub capacity: u64,
    pub policy: Policy,
    pub packets: VecDeque<Packet>,
    pub occupancy: u64,
    pub stats: QueueStats,
}

pub enum Admission {
    Accepted,
    /// Accepted but with cells missing: the packet will fail AAL5 reassembly.
    Truncated,
    /// Refused: the packet comes back so its owner can release what it holds
    /// (an ACK's SACK blocks wait in the simulation's side table).
    Dropped(Packet),
}

impl PacketQueue {
    pub fn new(capacity: u64, unit: BufferUnit, epd_threshold: Option<u64>) -> PacketQueue {
        let policy = Policy::for_buffer(unit, epd_threshold);
        PacketQueue { capacity, policy, packets: VecDeque::new(), occupancy: 0, stats: QueueStats::default() }
    }

    pub fn unit(&self) -> BufferUnit {
        self.policy.unit()
    }

    /// ATM early packet discard threshold (cells), if enabled.
    pub fn epd_threshold(&self) -> Option<u64> {
        self.policy.epd_threshold()
    }

    fn size_of(&self, p: &Packet) -> u64 {
        self.policy.size_of(p)
    }

    pub fn has_room_for(&self, p: &Packet) -> bool {
        self.occupancy + self.size_of(p) <= self.capacity
    }

    fn account(&mut self, now: Time) {
        let dt = now.saturating_sub(self.stats.last_change) as f64;
        self.stats.occupancy_integral += dt * self.occupancy as f64;
        self.stats.last_change = now;
    }

    fn grow(&mut self, now: Time, amount: u64) {
        self.account(now);
        self.occupancy += amount;
        self.stats.max_occupancy = self.stats.max_occupancy.max(self.occupancy);
    }

    /// Admission by the queue's policy: drop-tail, or for cells the cells that
    /// fit (a packet may enter with cells missing) unless EPD refuses it whole.
    pub fn offer(&mut self, now: Time, p: Packet) -> Admission {
        match self.policy.admit(self.occupancy, self.capacity, &p) {
            Verdict::Accept => {
                self.push_unchecked(now, p);
                Admission::Accepted
            }
            Verdict::AcceptCellsLost(lost) => self.admit_with_cell_loss(now, p, lost),
            Verdict::Drop => {
                self.stats.drops += 1;
                if self.unit() == BufferUnit::Cells {
                    self.stats.cell_drops += p.cells;
                }
                Admission::Dropped(p)
            }
        }
    }

    /// Append without a capacity check (used for flow-controlled admission,
    /// where the caller has already waited for room).
    pub fn push_unchecked(&mut self, now: Time, p: Packet) {
        let size = self.size_of(&p);
        self.grow(now, size);
        self.packets.push_back(p);
        self.stats.enqueued += 1;
        // Cache hint for where the next packet goes: on a long queue that
        // slot was last touched a whole ring ago.
        let (a, b) = self.packets.as_slices();
        let next = if b.is_empty() { a.as_ptr_range().end } else { b.as_ptr_range().end };
        crate::prefetch::span(next.cast(), std::mem::size_of::<Packet>());
    }

    /// Admission decided elsewhere: a cell-switching ATM port's fluid buffer
    /// (`cell_queue`) has already dropped `lost` of the packet's cells, so the
    /// packet enters with the rest (corrupt if any is missing), or not at all.
    /// The packet FIFO then only orders transmission; its count is not checked.
    pub fn admit_with_cell_loss(&mut self, now: Time, mut p: Packet, lost: u64) -> Admission {
        if lost >= p.cells {
            self.stats.drops += 1;
            self.stats.cell_drops += p.cells;
            return Admission::Dropped(p);
        }
        let truncated = lost > 0;
        if truncated {
            self.stats.drops += 1;
            self.stats.cell_drops += lost;
            p.cells -= lost;
            p.corrupt = true;
        }
        self.push_unchecked(now, p);
        if truncated {
            Admission::Truncated
        } else {
            Admission::Accepted
        }
    }

    pub fn front(&self) -> Option<&Packet> {
        self.packets.front()
    }

    pub fn pop(&mut self, now: Time) -> Option<Packet> {
        let p = self.packets.pop_front()?;
        // Cache hint for the packet that will be at the head after this one's
        // successor: queued long ago on a long queue.
        if let Some(n) = self.packets.get(1) {
            crate::prefetch::value(n);
        }
        self.account(now);
        self.occupancy -= self.size_of(&p);
        Some(p)
    }

    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    pub fn len(&self) -> usize {
        self.packets.len()
    }

    pub fn mean_occupancy(&self, now: Time) -> f64 {
        let tail = now.saturating_sub(self.stats.last_change) as f64 * self.occupancy as f64;
        if now == 0 {
            0.0
        } else {
            (self.stats.occupancy_integral + tail) / now as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::Segment;

    fn pkt(len: u64) -> Packet {
        Packet::data(0, 1, 0, Segment { seq: 0, len, retransmission: false, tsval: 0 })
    }

    #[test]
    fn bytes_drop_tail() {
        let mut q = PacketQueue::new(3000, BufferUnit::Bytes, None);
        assert!(matches!(q.offer(0, pkt(1460)), Admission::Accepted));
        assert!(matches!(q.offer(0, pkt(1460)), Admission::Accepted));
        assert!(matches!(q.offer(0, pkt(1460)), Admission::Dropped(_)));
        assert_eq!(q.stats.drops, 1);
        q.pop(10);
        assert!(matches!(q.offer(10, pkt(1460)), Admission::Accepted));
    }

    #[test]
    fn a_dropped_cell_loses_the_whole_packet() {
        // 9180-byte IP packet = 192 cells; room for 100 leaves the packet corrupt.
        let mut q = PacketQueue::new(100, BufferUnit::Cells, None);
        let p = pkt(9140);
        assert_eq!(p.cells, 192);
        assert!(matches!(q.offer(0, p), Admission::Truncated));
        let out = q.pop(1).unwrap();
        assert!(out.corrupt);
        assert_eq!(out.cells, 100);
        assert_eq!(q.stats.cell_drops, 92);
    }

    #[test]
    fn admission_with_cell_loss_counts_like_drop_tail() {
        let mut q = PacketQueue::new(10, BufferUnit::Cells, None);
        assert!(matches!(q.admit_with_cell_loss(0, pkt(9140), 0), Admission::Accepted));
        assert!(matches!(q.admit_with_cell_loss(0, pkt(9140), 150), Admission::Truncated));
        assert!(matches!(q.admit_with_cell_loss(0, pkt(9140), 192), Admission::Dropped(_)));
        assert_eq!((q.stats.drops, q.stats.cell_drops, q.stats.enqueued), (2, 342, 2));
        assert_eq!(q.occupancy, 192 + 42);
        q.pop(1);
        let out = q.pop(1).unwrap();
        assert!(out.corrupt);
        assert_eq!(out.cells, 42);
    }

    #[test]
    fn early_packet_discard_refuses_whole_packets() {
        let mut q = PacketQueue::new(400, BufferUnit::Cells, Some(150));
        assert!(matches!(q.offer(0, pkt(9140)), Admission::Accepted));
        assert!(matches!(q.offer(0, pkt(9140)), Admission::Dropped(_)));
        assert_eq!(q.occupancy, 192);
    }
}
