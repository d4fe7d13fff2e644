//! The discrete-event engine: a queue of events ordered by (time, sequence).
//!
//! The sequence number breaks ties in scheduling order, so two events at the
//! same nanosecond always run in the same order and runs are reproducible.

use crate::time::Time;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

/// A heap entry: the (time, sequence) key packed into one integer, and the
/// slot of the event in the slab. Events stay put in the slab, so the heap
/// only moves 32-byte entries (u128 is 16-byte aligned), however large an
/// event is.
#[derive(PartialEq, Eq)]
struct Entry {
    key: u128,
    slot: u32,
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap and we want the earliest event first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

pub struct EventQueue<E> {
    heap: BinaryHeap<Entry>,
    /// Far-future timers (retransmission, delayed ACK) live apart, so that
    /// the thousands a large run arms do not deepen the main heap. Both heaps
    /// share one sequence counter, so the merged order is still (time, seq).
    timers: BinaryHeap<Entry>,
    /// Events for the current instant (zero-delay hops) in a plain FIFO: their
    /// keys only grow, so they need no heap.
    immediate: VecDeque<Entry>,
    slab: Vec<Option<E>>,
    free: Vec<u32>,
    next_seq: u64,
    now: Time,
    processed: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            timers: BinaryHeap::new(),
            immediate: VecDeque::new(),
            slab: Vec::new(),
            free: Vec::new(),
            next_seq: 0,
            now: 0,
            processed: 0,
        }
    }
}

impl<E> EventQueue<E> {
    pub fn now(&self) -> Time {
        self.now
    }

    /// Events handled so far (for the speed benchmarks): popped from the
    /// queue, plus those handled in place at the current instant.
    pub fn processed(&self) -> u64 {
        self.processed
    }

    /// Count an event that its producer handled at once instead of queueing it.
    pub fn note_handled_in_place(&mut self) {
        self.processed += 1;
    }

    /// Schedule `event` at absolute time `at` (never in the past).
    pub fn schedule(&mut self, at: Time, event: E) {
        let entry = self.entry(at, event);
        if at <= self.now {
            self.immediate.push_back(entry);
        } else {
            self.heap.push(entry);
        }
    }

    /// Like `schedule`, for timers that are usually cancelled or moved before they fire.
    pub fn schedule_timer(&mut self, at: Time, event: E) {
        let entry = self.entry(at, event);
        self.timers.push(entry);
    }

    fn entry(&mut self, at: Time, event: E) -> Entry {
        let time = at.max(self.now);
        let slot = match self.free.pop() {
            Some(s) => {
                self.slab[s as usize] = Some(event);
                s
            }
            None => {
                self.slab.push(Some(event));
                (self.slab.len() - 1) as u32
            }
        };
        let key = ((time as u128) << 64) | self.next_seq as u128;
        self.next_seq += 1;
        Entry { key, slot }
    }

    pub fn schedule_in(&mut self, delay: Time, event: E) {
        self.schedule(self.now.saturating_add(delay), event);
    }

    fn next_key(&self) -> Option<u128> {
        [self.immediate.front(), self.heap.peek(), self.timers.peek()].into_iter().flatten().map(|e| e.key).min()
    }

    /// The event `pop` would return next, without taking it.
    pub fn peek(&self) -> Option<&E> {
        // Pairwise, not through `next_key`'s iterator: called for every event.
        fn earlier<'a>(a: Option<&'a Entry>, b: Option<&'a Entry>) -> Option<&'a Entry> {
            match (a, b) {
                (Some(x), Some(y)) => Some(if y.key < x.key { y } else { x }),
                (x, y) => x.or(y),
            }
        }
        let e = earlier(earlier(self.immediate.front(), self.heap.peek()), self.timers.peek())?;
        self.slab.get(e.slot as usize)?.as_ref()
    }

    pub fn peek_time(&self) -> Option<Time> {
        self.next_key().map(|k| (k >> 64) as Time)
    }

    /// Pop the next event and advance the clock to its time.
    pub fn pop(&mut self) -> Option<(Time, E)> {
        let key = self.next_key()?;
        let e = if self.immediate.front().is_some_and(|e| e.key == key) {
            self.immediate.pop_front()
        } else if self.timers.peek().is_some_and(|t| t.key == key) {
            self.timers.pop()
        } else {
            self.heap.pop()
        }
        .expect("peeked");
        self.now = (e.key >> 64) as Time;
        self.processed += 1;
        let event = self.slab[e.slot as usize].take().expect("a scheduled slot holds its event");
        self.free.push(e.slot);
        Some((self.now, event))
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty() && self.timers.is_empty() && self.immediate.is_empty()
    }

    pub fn len(&self) -> usize {
        self.heap.len() + self.timers.len() + self.immediate.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_time_then_insertion() {
        let mut q = EventQueue::default();
        q.schedule(10, "b");
        q.schedule(5, "a");
        q.schedule(10, "c");
        q.schedule(7, "x");
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!["a", "x", "b", "c"]);
        assert_eq!(q.now(), 10);
    }

    #[test]
    fn timers_merge_with_events_in_time_then_insertion_order() {
        let mut q = EventQueue::default();
        q.schedule_timer(10, "t10");
        q.schedule(10, "e10");
        q.schedule_timer(3, "t3");
        q.schedule(5, "e5");
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!["t3", "e5", "t10", "e10"]);
    }

    #[test]
    fn never_schedules_in_the_past() {
        let mut q = EventQueue::default();
        q.schedule(100, 1);
        q.pop();
        q.schedule(50, 2);
        assert_eq!(q.pop(), Some((100, 2)));
    }

    #[test]
    fn a_heap_entry_is_32_bytes() {
        // What the comment on Entry says: key (16, 16-aligned) + slot (4), padded.
        assert_eq!(std::mem::size_of::<Entry>(), 32);
    }
}
