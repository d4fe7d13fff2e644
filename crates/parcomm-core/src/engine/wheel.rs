//! Near-future events in time buckets, a calendar queue (Brown 1988) beside
//! the heap. A packet-level run keeps one pending event per busy port, all
//! due within a frame time or two; at data-center scale that is tens of
//! thousands of events, and a binary heap pays a sift through ~15 levels
//! (each a cache miss once the heap outgrows L1) for every one of them.
//! Here scheduling is an append to the bucket of the event's time, and
//! popping takes the next entry of the one bucket being consumed, which is
//! sorted once when it comes up.
//!
//! The wheel holds only events whose bucket is within `BUCKETS` of the
//! cursor, so a bucket's position names one time slot; anything else is
//! refused and goes to the caller's heap, which is merged by key, so the
//! order is exactly (time, sequence) whatever goes where.

use super::Entry;

/// log2 of the nanoseconds a bucket spans (256 ns: a few 1 Gbit/s ACKs).
const BUCKET_SHIFT: u32 = 8;
/// Buckets in the ring (a horizon of 4.2 ms ahead of the cursor).
const BUCKETS: usize = 1 << 14;
const WORDS: usize = BUCKETS / 64;
/// Spent bucket storage kept for reuse: more than the buckets a run fills at once.
const SPARES: usize = 256;

pub(super) struct Wheel {
    buckets: Vec<Vec<Entry>>,
    /// Storage of spent buckets, handed to the next bucket that fills: a bucket
    /// keeps no memory once consumed (16,384 buckets that each kept the
    /// capacity of their busiest moment held 100 MB on a 1,024-host fabric).
    spare: Vec<Vec<Entry>>,
    /// Bit i set: bucket i holds live entries.
    occupied: Vec<u64>,
    /// Absolute bucket number (time >> BUCKET_SHIFT) no entry may precede: the
    /// bucket of the clock when the last entry was popped (never later than now).
    cursor: u64,
    /// Absolute number of the bucket the next entry comes from. It is sorted from
    /// `head` on; entries before `head` were popped. No live entry is in an
    /// earlier bucket (at or after `cursor`).
    front: u64,
    head: usize,
    len: usize,
}

fn bucket_of(e: &Entry) -> u64 {
    ((e.key >> 64) as u64) >> BUCKET_SHIFT
}

fn slot(abs: u64) -> usize {
    abs as usize & (BUCKETS - 1)
}

impl Default for Wheel {
    fn default() -> Self {
        Wheel {
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            spare: Vec::new(),
            occupied: vec![0; WORDS],
            cursor: 0,
            front: 0,
            head: 0,
            len: 0,
        }
    }
}

impl Wheel {
    pub fn len(&self) -> usize {
        self.len
    }

    /// Take `e` (due at or after `now`) if its time is within the horizon;
    /// otherwise hand it back for the heap.
    pub fn push(&mut self, e: Entry, now: u64) -> Result<(), Entry> {
        if self.len == 0 {
            // Empty: restart the window at the clock (the front bucket is cleared on exhaustion).
            self.cursor = now >> BUCKET_SHIFT;
            self.front = self.cursor;
            self.head = 0;
        }
        let b = bucket_of(&e);
        if b < self.cursor || b - self.cursor >= BUCKETS as u64 {
            return Err(e);
        }
        if b < self.front {
            // Earlier than every live entry, so its bucket is empty: it becomes the front.
            debug_assert!(self.buckets[slot(b)].is_empty());
            self.front = b;
            self.head = 0;
        }
        let i = slot(b);
        let v = &mut self.buckets[i];
        if v.capacity() == 0 {
            if let Some(storage) = self.spare.pop() {
                *v = storage;
            }
        }
        if b == self.front {
            // The front bucket stays sorted; new keys are usually the largest, so little moves.
            let pos = self.head + v[self.head..].partition_point(|x| x.key < e.key);
            v.insert(pos, e);
        } else {
            v.push(e);
        }
        self.occupied[i / 64] |= 1 << (i % 64);
        self.len += 1;
        Ok(())
    }

    /// The earliest entry, bringing the next non-empty bucket to the front (and
    /// sorting it) if the front one is spent.
    pub fn front(&mut self) -> Option<&Entry> {
        if self.len == 0 {
            return None;
        }
        if self.head == self.buckets[slot(self.front)].len() {
            let next = self.next_occupied(self.front);
            self.front = next;
            self.head = 0;
            self.buckets[slot(next)].sort_unstable_by_key(|e| e.key);
        }
        self.buckets[slot(self.front)].get(self.head)
    }

    /// Remove the earliest entry (the wheel must not be empty).
    pub fn pop_front(&mut self) -> Entry {
        // The caller may know the entry without having asked `front` to bring its bucket up.
        self.front();
        let i = slot(self.front);
        let v = &mut self.buckets[i];
        let e = Entry { key: v[self.head].key, slot: v[self.head].slot };
        self.head += 1;
        self.len -= 1;
        self.cursor = self.front;
        if self.head == v.len() {
            let mut storage = std::mem::take(v);
            storage.clear();
            if self.spare.len() < SPARES {
                self.spare.push(storage);
            }
            self.head = 0;
            self.occupied[i / 64] &= !(1 << (i % 64));
        }
        e
    }

    /// The first occupied bucket after `from` (absolute), within the window.
    fn next_occupied(&self, from: u64) -> u64 {
        let start = slot(from);
        for step in 0..=WORDS {
            let w = (start / 64 + step) % WORDS;
            let mut bits = self.occupied[w];
            if step == 0 {
                bits &= !0u64 << (start % 64); // at or after `start` in its own word
            }
            if step == WORDS {
                bits &= !(!0u64 << (start % 64)); // the wrap-around: only before `start`
            }
            if bits != 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                return from + ((i + BUCKETS - start) % BUCKETS) as u64;
            }
        }
        unreachable!("next_occupied called on an empty wheel")
    }
}
