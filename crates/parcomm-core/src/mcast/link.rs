//! One direction of a network: a FIFO served at the network's rate, then the
//! one-way delay; each packet is lost independently with the network's loss
//! rate (drawn from the direction's own seeded stream).
//!
//! The queue is unbounded and work-conserving, so it needs no events of its
//! own: a packet's departure is max(now, previous departure) + serialization.
//! Arrivals leave a lane in the order they entered it, so a lane keeps its
//! packets in flight itself and asks for one event at a time (for its head):
//! the event queue holds one entry per busy lane, not one per packet.

use crate::rng::Rng;
use crate::time::Time;
use std::collections::VecDeque;

#[derive(Clone, Debug)]
pub struct Lane<P> {
    free_at: Time,
    /// Serialization time of one packet.
    tx: Time,
    delay: Time,
    loss: f64,
    rng: Rng,
    flight: VecDeque<(Time, P)>,
    /// Packets sent into the lane, and lost in it.
    pub sent: u64,
    pub lost: u64,
}

/// What became of a packet handed to a lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    /// The network lost it (it still took its turn on the wire).
    Lost,
    /// In flight behind others: the lane's pending event covers it.
    Queued,
    /// In flight at the head: schedule the lane's event at this time.
    Head(Time),
}

impl<P> Lane<P> {
    /// Every packet takes `tx` to serialize, then `delay`; lost with probability `loss`.
    pub fn new(tx: Time, delay: Time, loss: f64, rng: Rng) -> Lane<P> {
        Lane { free_at: 0, tx, delay, loss, rng, flight: VecDeque::new(), sent: 0, lost: 0 }
    }

    /// Queue packet `p`.
    pub fn send(&mut self, now: Time, p: P) -> Sent {
        self.free_at = self.free_at.max(now).saturating_add(self.tx);
        self.sent += 1;
        if self.rng.bernoulli(self.loss) {
            self.lost += 1;
            return Sent::Lost;
        }
        let at = self.free_at.saturating_add(self.delay);
        self.flight.push_back((at, p));
        if self.flight.len() == 1 {
            Sent::Head(at)
        } else {
            Sent::Queued
        }
    }

    /// Packets waiting to be serialized at `now` (the one on the wire included).
    pub fn backlog(&self, now: Time) -> u64 {
        self.free_at.saturating_sub(now).div_ceil(self.tx.max(1))
    }

    /// The head packet arrives (call at its time): it, and when the next one
    /// arrives, if any (schedule the lane's event then).
    pub fn arrive(&mut self) -> Option<(P, Option<Time>)> {
        let (_, p) = self.flight.pop_front()?;
        Some((p, self.flight.front().map(|f| f.0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_serializes_then_delays() {
        let mut l = Lane::new(10, 100, 0.0, Rng::new(1, "x"));
        assert_eq!(l.send(0, 'a'), Sent::Head(110));
        assert_eq!(l.send(5, 'b'), Sent::Queued);
        assert_eq!((l.backlog(5), l.backlog(10), l.backlog(20)), (2, 1, 0));
        assert_eq!(l.arrive(), Some(('a', Some(120))));
        assert_eq!(l.arrive(), Some(('b', None)));
        assert_eq!(l.arrive(), None);
        assert_eq!(l.send(500, 'c'), Sent::Head(610));
        assert_eq!((l.sent, l.lost), (3, 0));
    }
}
