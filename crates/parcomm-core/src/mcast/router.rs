//! A Comet RM router (§2.2): no retransmission buffer and no timers. It
//! remembers how far each child has received, forwards a packet only to the
//! children that lack it (so a retransmission from upstream reaches only the
//! subtrees that need it), and sends an ACK for `s` upstream only once every
//! child has acknowledged `s`.

use super::children::ChildTable;
use super::msg::{Ack, Out};

#[derive(Clone, Debug)]
pub struct Router {
    table: ChildTable,
    completed: Vec<u64>,
}

impl Router {
    pub fn new(children: usize) -> Router {
        Router { table: ChildTable::new(children), completed: Vec::new() }
    }

    /// Data packet `seq` arrived from the parent. Returns whether any child
    /// needed it.
    pub fn on_data(&mut self, seq: u64, retx: bool, out: &mut Vec<Out>) -> bool {
        let before = out.len();
        for slot in 0..self.table.len() {
            if self.table.lacks(slot, seq) {
                out.push(Out::Data { slot: slot as u32, seq, retx });
            }
        }
        if out.len() == before {
            // Every child already holds it: the upstream copy of our ACK was
            // lost (or is late). Answer again, or the sender would retry forever.
            out.push(Out::Ack(Ack { cum: self.table.base(), seq }));
            return false;
        }
        true
    }

    /// An ACK arrived from the child in `slot`.
    pub fn on_ack(&mut self, slot: usize, ack: Ack, out: &mut Vec<Out>) {
        self.completed.clear();
        self.table.on_ack(slot, ack, &mut self.completed);
        aggregate(self.table.base(), &self.completed, out);
    }
}

/// The ACKs that report `completed` (packets now held by every child) upstream:
/// one per packet above the cumulative point `base`, or a single cumulative one.
pub(crate) fn aggregate(base: u64, completed: &[u64], out: &mut Vec<Out>) {
    let mut sent = false;
    for &s in completed.iter().filter(|&&s| s >= base) {
        out.push(Out::Ack(Ack { cum: base, seq: s }));
        sent = true;
    }
    if !sent {
        if let Some(&s) = completed.iter().max() {
            out.push(Out::Ack(Ack { cum: base, seq: s }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregates_and_suppresses() {
        let mut r = Router::new(2);
        let mut out = vec![];
        r.on_data(0, false, &mut out);
        assert_eq!(out.len(), 2);
        out.clear();
        r.on_ack(0, Ack { cum: 1, seq: 0 }, &mut out);
        assert!(out.is_empty(), "one child is not an aggregate");
        r.on_ack(1, Ack { cum: 1, seq: 0 }, &mut out);
        assert_eq!(out, vec![Out::Ack(Ack { cum: 1, seq: 0 })]);
        out.clear();
        r.on_data(1, false, &mut out);
        out.clear();
        r.on_ack(0, Ack { cum: 2, seq: 1 }, &mut out);
        // A retransmission of 1 goes only to child 1.
        r.on_data(1, true, &mut out);
        assert_eq!(out, vec![Out::Data { slot: 1, seq: 1, retx: true }]);
        out.clear();
        r.on_ack(1, Ack { cum: 2, seq: 1 }, &mut out);
        out.clear();
        // A duplicate that nobody needs is answered with an ACK.
        r.on_data(1, true, &mut out);
        assert_eq!(out, vec![Out::Ack(Ack { cum: 2, seq: 1 })]);
    }
}
