//! Repair points: nodes that keep a copy of every packet until all their
//! children hold it, run a retransmission timer per packet and retransmit to
//! the children that still lack it. The source is always one (Comet RM: the
//! only one); routers marked `repair` are the others (§3).
//!
//! A repair router takes custody: it acknowledges a packet upstream as soon as
//! it holds it, so its parent's buffer and timer cover only the hop to it —
//! the paper's buffer per repair router is "bandwidth x round trip to the next
//! repair router or receivers" (§4, study 4).

use super::children::ChildTable;
use super::msg::{Ack, Out};
use super::seqset::SeqSet;
use crate::time::Time;
use std::collections::VecDeque;

/// Buffer, timers and per-child table of one repair point.
#[derive(Clone, Debug)]
pub struct RepairPoint {
    table: ChildTable,
    rto: Time,
    /// (deadline, seq) in deadline order: every entry is pushed at now + rto.
    deadlines: VecDeque<(Time, u64)>,
    completed: Vec<u64>,
    /// Packets held: sent to the children and not yet held by all of them.
    pub held: u64,
    /// Timer expiries that retransmitted something.
    pub timeouts: u64,
    /// Copies retransmitted (one per child network).
    pub retransmissions: u64,
}

impl RepairPoint {
    pub fn new(children: usize, rto: Time) -> RepairPoint {
        RepairPoint {
            table: ChildTable::new(children),
            rto: rto.max(1),
            deadlines: VecDeque::new(),
            completed: Vec::new(),
            held: 0,
            timeouts: 0,
            retransmissions: 0,
        }
    }

    pub fn rto(&self) -> Time {
        self.rto
    }

    /// Every child holds every packet below this one.
    pub fn base(&self) -> u64 {
        self.table.base()
    }

    /// Take packet `seq` into the buffer and send it to every child lacking it.
    pub fn take(&mut self, now: Time, seq: u64, out: &mut Vec<Out>) {
        self.held += 1;
        for slot in 0..self.table.len() {
            if self.table.lacks(slot, seq) {
                out.push(Out::Data { slot: slot as u32, seq, retx: false });
            }
        }
        self.deadlines.push_back((now.saturating_add(self.rto), seq));
    }

    /// Record an ACK from the child in `slot`; see `completed` for its effect.
    pub fn on_ack(&mut self, slot: usize, ack: Ack) {
        self.completed.clear();
        self.table.on_ack(slot, ack, &mut self.completed);
        self.held = self.held.saturating_sub(self.completed.len() as u64);
    }

    /// The packets the last `on_ack` released (now held by every child).
    pub fn completed(&self) -> &[u64] {
        &self.completed
    }

    /// The earliest timer deadline, if any packet is still timed.
    pub fn poll_timeout(&self) -> Option<Time> {
        self.deadlines.front().map(|d| d.0)
    }

    /// Expire every deadline up to `now`: packets some child still lacks go
    /// again to those children, with a fresh deadline. Early calls are no-ops.
    pub fn on_timeout(&mut self, now: Time, out: &mut Vec<Out>) {
        // Only the entries present now: re-armed ones are due later (or, at
        // the end of time, never).
        for _ in 0..self.deadlines.len() {
            let Some(&(deadline, seq)) = self.deadlines.front() else { break };
            if deadline > now {
                break;
            }
            self.deadlines.pop_front();
            if self.table.complete(seq) {
                continue;
            }
            let before = out.len();
            for slot in 0..self.table.len() {
                if self.table.lacks(slot, seq) {
                    out.push(Out::Data { slot: slot as u32, seq, retx: true });
                }
            }
            self.retransmissions += (out.len() - before) as u64;
            self.timeouts += 1;
            self.deadlines.push_back((now.saturating_add(self.rto), seq));
        }
    }
}

/// A router that repairs (§3): custody, buffer, timers.
#[derive(Clone, Debug)]
pub struct RepairRouter {
    have: SeqSet,
    pub point: RepairPoint,
}

impl RepairRouter {
    pub fn new(children: usize, rto: Time) -> RepairRouter {
        RepairRouter { have: SeqSet::default(), point: RepairPoint::new(children, rto) }
    }

    /// Data packet `seq` arrived from the parent. Always acknowledged (a
    /// duplicate means our earlier ACK was lost or late); a new packet is
    /// buffered and forwarded. Our own timers, not upstream's, repair the subtree.
    /// Returns whether the packet was new here.
    pub fn on_data(&mut self, now: Time, seq: u64, out: &mut Vec<Out>) -> bool {
        let new = self.have.insert(seq);
        out.push(Out::Ack(Ack { cum: self.have.cum(), seq }));
        if new {
            self.point.take(now, seq, out);
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retransmits_only_to_children_lacking_the_packet() {
        let mut p = RepairPoint::new(2, 10);
        let mut out = vec![];
        p.take(0, 0, &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(p.held, 1);
        out.clear();
        p.on_ack(0, Ack { cum: 1, seq: 0 });
        p.on_timeout(9, &mut out);
        assert!(out.is_empty(), "early");
        p.on_timeout(10, &mut out);
        assert_eq!(out, vec![Out::Data { slot: 1, seq: 0, retx: true }]);
        assert_eq!(p.poll_timeout(), Some(20));
        p.on_ack(1, Ack { cum: 1, seq: 0 });
        assert_eq!(p.held, 0);
        out.clear();
        p.on_timeout(20, &mut out);
        assert!(out.is_empty());
        assert_eq!(p.poll_timeout(), None);
    }
}
