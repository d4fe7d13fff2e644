//! The discrete-event engine: a queue of events ordered by (time, sequence).
//!
//! The sequence number breaks ties in scheduling order, so two events at the
//! same nanosecond always run in the same order and runs are reproducible.

mod wheel;

use crate::time::Time;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use wheel::Wheel;

/// A heap entry: the (time, sequence) key packed into one integer, and the
/// slot of the event in the slab. Events stay put in the slab, so the heap
/// only moves 32-byte entries (u128 is 16-byte aligned), however large an
/// event is.
#[derive(Clone, Copy, PartialEq, Eq)]
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

#[derive(Clone, Copy)]
enum Source {
    Immediate,
    Wheel,
    Heap,
    Timers,
}

pub struct EventQueue<E> {
    /// Events due within a few milliseconds (every packet event): a calendar queue.
    wheel: Wheel,
    /// Ordinary events beyond the wheel's horizon.
    heap: BinaryHeap<Entry>,
    /// Far-future timers (retransmission, delayed ACK) live apart, so that
    /// the thousands a large run arms do not deepen the main heap. Both heaps
    /// share one sequence counter, so the merged order is still (time, seq).
    timers: BinaryHeap<Entry>,
    /// Events for the current instant (zero-delay hops) in a plain FIFO: their
    /// keys only grow, so they need no heap.
    immediate: VecDeque<Entry>,
    /// The earliest entry and where it is, once found (`None`: look again). A
    /// run asks for it three times per event (peek, pop, the cache hints).
    next: Option<(Entry, Source)>,
    slab: Vec<Option<E>>,
    free: Vec<u32>,
    next_seq: u64,
    now: Time,
    processed: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            wheel: Wheel::default(),
            heap: BinaryHeap::new(),
            timers: BinaryHeap::new(),
            immediate: VecDeque::new(),
            next: None,
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
        let source = if at <= self.now {
            self.immediate.push_back(entry);
            Source::Immediate
        } else if let Err(entry) = self.wheel.push(entry, self.now) {
            self.heap.push(entry);
            Source::Heap
        } else {
            Source::Wheel
        };
        self.note_scheduled(entry, source);
    }

    /// Like `schedule`, for timers that are usually cancelled or moved before they fire.
    pub fn schedule_timer(&mut self, at: Time, event: E) {
        let entry = self.entry(at, event);
        self.timers.push(entry);
        self.note_scheduled(entry, Source::Timers);
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

    /// A new entry is the next one only if it is earlier than the known next one.
    fn note_scheduled(&mut self, entry: Entry, source: Source) {
        if let Some((next, _)) = self.next {
            if entry.key < next.key {
                self.next = Some((entry, source));
            }
        }
    }

    /// The earliest entry of the four structures and which one holds it.
    fn next_entry(&mut self) -> Option<(Entry, Source)> {
        if self.next.is_none() {
            self.next = self.find_next();
        }
        self.next
    }

    fn find_next(&mut self) -> Option<(Entry, Source)> {
        // Pairwise, not through an iterator: called for every event.
        fn earlier(a: Option<(Entry, Source)>, b: Option<(Entry, Source)>) -> Option<(Entry, Source)> {
            match (a, b) {
                (Some(x), Some(y)) => Some(if y.0.key < x.0.key { y } else { x }),
                (x, y) => x.or(y),
            }
        }
        let immediate = self.immediate.front().map(|e| (*e, Source::Immediate));
        let wheel = self.wheel.front().map(|e| (*e, Source::Wheel));
        let heap = self.heap.peek().map(|e| (*e, Source::Heap));
        let timers = self.timers.peek().map(|e| (*e, Source::Timers));
        earlier(earlier(immediate, wheel), earlier(heap, timers))
    }

    /// The event `pop` would return next, without taking it.
    pub fn peek(&mut self) -> Option<&E> {
        let (e, _) = self.next_entry()?;
        self.slab.get(e.slot as usize)?.as_ref()
    }

    pub fn peek_time(&mut self) -> Option<Time> {
        self.next_entry().map(|(e, _)| (e.key >> 64) as Time)
    }

    /// Pop the next event and advance the clock to its time.
    pub fn pop(&mut self) -> Option<(Time, E)> {
        let (_, source) = self.next_entry()?;
        self.next = None;
        let e = match source {
            Source::Immediate => self.immediate.pop_front().expect("peeked"),
            Source::Wheel => self.wheel.pop_front(),
            Source::Heap => self.heap.pop().expect("peeked"),
            Source::Timers => self.timers.pop().expect("peeked"),
        };
        self.now = (e.key >> 64) as Time;
        self.processed += 1;
        let event = self.slab[e.slot as usize].take().expect("a scheduled slot holds its event");
        self.free.push(e.slot);
        Some((self.now, event))
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn len(&self) -> usize {
        self.wheel.len() + self.heap.len() + self.timers.len() + self.immediate.len()
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
    fn near_far_and_timer_events_come_out_in_time_then_insertion_order() {
        // Random delays from 0 to far beyond the wheel's horizon, pops interleaved with
        // schedules, against a plain sort of (time, sequence).
        let mut rng = crate::rng::Rng::new(35, "engine:test");
        let mut q = EventQueue::default();
        let mut expected: Vec<(Time, u64)> = Vec::new();
        let mut got: Vec<(Time, u64)> = Vec::new();
        let mut id = 0u64;
        for round in 0..20_000 {
            if rng.below(2) == 0 {
                q.peek_time(); // the queue then knows its next entry while more are scheduled
            }
            for _ in 0..rng.below(4) {
                let delay = match rng.below(5) {
                    0 => 0,
                    1 => rng.below(300),
                    2 => rng.below(20_000),
                    3 => rng.below(10_000_000),
                    _ => 4_000_000 + rng.below(1_000),
                };
                let at = q.now() + delay;
                if round % 7 == 0 {
                    q.schedule_timer(at, id);
                } else {
                    q.schedule(at, id);
                }
                expected.push((at, id));
                id += 1;
            }
            // Up to four pops a round against 1.5 schedules: the wheel often runs dry
            // while far events wait in the heaps.
            for _ in 0..rng.below(5) {
                if let Some((t, e)) = q.pop() {
                    got.push((t, e));
                }
            }
        }
        while let Some((t, e)) = q.pop() {
            got.push((t, e));
        }
        // Every event once, at its time, in (time, sequence) order: ids are handed out in
        // scheduling order, so that is the sorted list.
        expected.sort();
        assert_eq!(got, expected, "events left the queue out of (time, sequence) order");
        assert!(q.is_empty());
    }

    #[test]
    fn a_heap_entry_is_32_bytes() {
        // What the comment on Entry says: key (16, 16-aligned) + slot (4), padded.
        assert_eq!(std::mem::size_of::<Entry>(), 32);
    }
}
