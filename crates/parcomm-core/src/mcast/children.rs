//! What a node knows about its children: per child, which packets it has
//! acknowledged (Comet RM's per-child table, §2.2), and per packet how many
//! children hold it. This is the whole of ACK aggregation and duplicate
//! suppression: forward `s` only to children that lack it; a packet is
//! complete below a node once every child holds it.

use super::msg::Ack;
use super::seqset::SeqSet;
use std::collections::VecDeque;

#[derive(Clone, Debug)]
pub struct ChildTable {
    kids: Vec<SeqSet>,
    /// `count[i]`: children known to hold packet `base + i`.
    count: VecDeque<u32>,
    /// Every child holds every packet below `base`.
    base: u64,
}

impl ChildTable {
    pub fn new(children: usize) -> ChildTable {
        ChildTable { kids: vec![SeqSet::default(); children], count: VecDeque::new(), base: 0 }
    }

    pub fn len(&self) -> usize {
        self.kids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.kids.is_empty()
    }

    /// Every child holds every packet below this one.
    pub fn base(&self) -> u64 {
        self.base
    }

    pub fn lacks(&self, child: usize, s: u64) -> bool {
        !self.kids[child].has(s)
    }

    pub fn complete(&self, s: u64) -> bool {
        s < self.base || self.count.get((s - self.base) as usize).is_some_and(|&c| c as usize == self.kids.len())
    }

    /// Record an ACK from `child`; append to `completed` every packet that
    /// this ACK makes held by all children.
    pub fn on_ack(&mut self, child: usize, ack: Ack, completed: &mut Vec<u64>) {
        let k = self.kids.len() as u32;
        let (kids, count, base) = (&mut self.kids, &mut self.count, self.base);
        let mut bump = |s: u64| {
            // A child newly holding s means s was not yet complete, so s >= base.
            let i = (s - base) as usize;
            if i >= count.len() {
                count.resize(i + 1, 0);
            }
            count[i] += 1;
            if count[i] == k {
                completed.push(s);
            }
        };
        let kid = &mut kids[child];
        kid.advance_to(ack.cum, &mut bump);
        if kid.insert(ack.seq) {
            bump(ack.seq);
        }
        while self.count.front() == Some(&k) {
            self.count.pop_front();
            self.base += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_when_the_last_child_acks() {
        let mut t = ChildTable::new(2);
        let mut done = vec![];
        t.on_ack(0, Ack { cum: 1, seq: 0 }, &mut done);
        assert!(done.is_empty() && t.lacks(1, 0) && !t.lacks(0, 0));
        t.on_ack(1, Ack { cum: 0, seq: 1 }, &mut done);
        assert!(done.is_empty());
        t.on_ack(0, Ack { cum: 2, seq: 1 }, &mut done);
        assert_eq!(done, vec![1]);
        assert_eq!(t.base(), 0);
        assert!(t.complete(1) && !t.complete(0));
        done.clear();
        t.on_ack(1, Ack { cum: 2, seq: 0 }, &mut done);
        assert_eq!(done, vec![0]);
        assert_eq!(t.base(), 2);
    }
}
