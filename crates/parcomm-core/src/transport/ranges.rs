//! A set of byte ranges: what a receiver holds out of order, and what a
//! sender's scoreboard knows SACKed.
//!
//! Both hold a handful of ranges (a SACK option reports 3 or 4; a hole needs
//! a loss), and both are consulted on every ACK, so the ranges live in a
//! sorted vector: one cache line for the usual few, binary search, and a
//! buffer kept across loss episodes instead of a tree's node allocated and
//! freed with each.

/// Disjoint, non-adjacent ranges `[start, end)`, sorted by start.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeSet {
    ranges: Vec<(u64, u64)>,
}

impl RangeSet {
    pub fn new() -> Self {
        RangeSet::default()
    }

    pub fn as_slice(&self) -> &[(u64, u64)] {
        &self.ranges
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Cache hint for the first ranges (`crate::prefetch`).
    pub fn prefetch(&self) {
        if !self.ranges.is_empty() {
            crate::prefetch::line(self.ranges.as_ptr());
        }
    }

    /// The highest range.
    pub fn last(&self) -> Option<(u64, u64)> {
        self.ranges.last().copied()
    }

    /// Index of the first range starting at or above `seq` (`len` if none).
    pub fn first_at_or_above(&self, seq: u64) -> usize {
        self.ranges.partition_point(|&(s, _)| s < seq)
    }

    /// The range holding `seq`, if any.
    pub fn containing(&self, seq: u64) -> Option<(u64, u64)> {
        let i = self.ranges.partition_point(|&(s, _)| s <= seq).checked_sub(1)?;
        Some(self.ranges[i]).filter(|&(_, e)| e > seq)
    }

    /// Adds `[start, end)`, merging overlapping and adjacent ranges; returns
    /// the bytes it newly covers.
    pub fn insert(&mut self, mut start: u64, mut end: u64) -> u64 {
        let mut lo = self.ranges.partition_point(|&(s, _)| s <= start);
        if let Some(prev) = lo.checked_sub(1) {
            let (s, e) = self.ranges[prev];
            if e >= start {
                if e >= end {
                    return 0; // already held
                }
                start = s;
                lo = prev;
            }
        }
        // Every range from `lo` starting at or below `end` merges in.
        let (mut hi, mut held) = (lo, 0);
        while let Some(&(s, e)) = self.ranges.get(hi) {
            if s > end {
                break;
            }
            end = end.max(e);
            held += e - s;
            hi += 1;
        }
        self.ranges.splice(lo..hi, [(start, end)]);
        (end - start) - held
    }

    /// Forgets everything below `seq` (a range across it keeps its top).
    pub fn remove_below(&mut self, seq: u64) {
        let below = self.first_at_or_above(seq);
        let Some(last) = below.checked_sub(1) else {
            return;
        };
        let (_, e) = self.ranges[last];
        if e > seq {
            self.ranges[last] = (seq, e);
            self.ranges.drain(..last);
        } else {
            self.ranges.drain(..below);
        }
    }

    /// Removes the ranges that start at or below `seq`, and returns the
    /// bytes they held and the highest end among them (`seq` if none): what
    /// becomes contiguous once everything up to `seq` is in.
    pub fn take_up_to(&mut self, seq: u64) -> (u64, u64) {
        let n = self.ranges.partition_point(|&(s, _)| s <= seq);
        let (mut bytes, mut end) = (0, seq);
        for &(s, e) in &self.ranges[..n] {
            bytes += e - s;
            end = end.max(e);
        }
        self.ranges.drain(..n);
        (bytes, end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserts_merge_overlapping_and_adjacent_ranges() {
        let mut r = RangeSet::new();
        assert_eq!(r.insert(100, 200), 100);
        assert_eq!(r.insert(300, 400), 100);
        assert_eq!(r.insert(150, 180), 0);
        assert_eq!(r.insert(200, 250), 50); // adjacent: merges
        assert_eq!(r.as_slice(), &[(100, 250), (300, 400)]);
        assert_eq!(r.insert(50, 500), 450 - 250);
        assert_eq!(r.as_slice(), &[(50, 500)]);
        assert_eq!(r.containing(499), Some((50, 500)));
        assert_eq!(r.containing(500), None);
    }

    #[test]
    fn removing_below_cuts_a_straddling_range() {
        let mut r = RangeSet::new();
        r.insert(100, 200);
        r.insert(300, 400);
        r.insert(500, 600);
        r.remove_below(350);
        assert_eq!(r.as_slice(), &[(350, 400), (500, 600)]);
        r.remove_below(450);
        assert_eq!(r.as_slice(), &[(500, 600)]);
        r.remove_below(0);
        assert_eq!(r.as_slice(), &[(500, 600)]);
    }

    #[test]
    fn taking_up_to_a_point_takes_what_starts_there() {
        let mut r = RangeSet::new();
        r.insert(100, 200);
        r.insert(300, 400);
        assert_eq!(r.take_up_to(99), (0, 99));
        assert_eq!(r.take_up_to(100), (100, 200));
        assert_eq!(r.as_slice(), &[(300, 400)]);
    }
}
