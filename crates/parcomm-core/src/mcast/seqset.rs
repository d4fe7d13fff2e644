//! Which sequence numbers a node holds (or is known to hold): everything
//! below a cumulative point, plus a sparse tail above it.

use std::collections::VecDeque;

/// Invariant: `cum` itself is not held; `above[i]` says whether `cum + i` is.
#[derive(Clone, Debug, Default)]
pub struct SeqSet {
    cum: u64,
    above: VecDeque<bool>,
}

impl SeqSet {
    /// Every sequence number below this one is held.
    pub fn cum(&self) -> u64 {
        self.cum
    }

    pub fn has(&self, s: u64) -> bool {
        s < self.cum || self.above.get((s - self.cum) as usize).copied().unwrap_or(false)
    }

    /// Add `s`; true if it was not held before.
    pub fn insert(&mut self, s: u64) -> bool {
        if s < self.cum {
            return false;
        }
        if s == self.cum && self.above.is_empty() {
            self.cum += 1; // in order: the common case
            return true;
        }
        let i = (s - self.cum) as usize;
        if i >= self.above.len() {
            self.above.resize(i + 1, false);
        }
        if self.above[i] {
            return false;
        }
        self.above[i] = true;
        self.settle();
        true
    }

    /// Mark every sequence number below `c` held, calling `newly` for each
    /// one that was not held before (in increasing order).
    pub fn advance_to(&mut self, c: u64, mut newly: impl FnMut(u64)) {
        if c <= self.cum {
            return;
        }
        let span = c - self.cum;
        for s in self.cum..c {
            if !self.above.get((s - self.cum) as usize).copied().unwrap_or(false) {
                newly(s);
            }
        }
        if span as usize >= self.above.len() {
            self.above.clear();
        } else {
            self.above.drain(..span as usize);
        }
        self.cum = c;
        self.settle();
    }

    fn settle(&mut self) {
        while self.above.front() == Some(&true) {
            self.above.pop_front();
            self.cum += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holes_and_cumulative_point() {
        let mut s = SeqSet::default();
        assert!(s.insert(2));
        assert!(!s.insert(2));
        assert_eq!(s.cum(), 0);
        assert!(s.has(2) && !s.has(1) && !s.has(0));
        assert!(s.insert(0));
        assert_eq!(s.cum(), 1);
        assert!(s.insert(1));
        assert_eq!(s.cum(), 3);
        let mut newly = vec![];
        s.insert(5);
        s.advance_to(7, |x| newly.push(x));
        assert_eq!(newly, vec![3, 4, 6]);
        assert_eq!(s.cum(), 7);
        s.advance_to(4, |_| panic!("nothing new below the cumulative point"));
    }
}
