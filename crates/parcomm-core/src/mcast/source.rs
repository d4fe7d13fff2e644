//! The source: a repair point that also generates packets 0..n, paced at a
//! fixed rate and held back by an ACK-based sliding window (§2.2: "the
//! sending node has a TCP-like sliding window").

use super::repair::RepairPoint;
use crate::time::Time;

#[derive(Clone, Debug)]
pub struct Source {
    pub point: RepairPoint,
    packets: u64,
    window: u64,
    /// Gap between first transmissions (0: unpaced).
    interval: Time,
    next_seq: u64,
    next_slot: Time,
}

impl Source {
    pub fn new(children: usize, rto: Time, packets: u64, window: u64, interval: Time) -> Source {
        Source { point: RepairPoint::new(children, rto), packets, window, interval, next_seq: 0, next_slot: 0 }
    }

    fn may_send(&self) -> bool {
        self.next_seq < self.packets && self.next_seq < self.point.base().saturating_add(self.window)
    }

    /// The next new packet to transmit now, if pacing and the window allow.
    pub fn poll_new(&mut self, now: Time) -> Option<u64> {
        if !self.may_send() || now < self.next_slot {
            return None;
        }
        let s = self.next_seq;
        self.next_seq += 1;
        self.next_slot = now.saturating_add(self.interval);
        Some(s)
    }

    /// When the next new packet may go, unless the window is closed or all are sent.
    pub fn next_send_at(&self) -> Option<Time> {
        self.may_send().then_some(self.next_slot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcast::msg::Ack;

    #[test]
    fn paces_and_respects_the_window() {
        let mut s = Source::new(1, 100, 10, 2, 5);
        let mut out = vec![];
        assert_eq!(s.poll_new(0), Some(0));
        s.point.take(0, 0, &mut out);
        assert_eq!(s.poll_new(0), None);
        assert_eq!(s.next_send_at(), Some(5));
        assert_eq!(s.poll_new(5), Some(1));
        s.point.take(5, 1, &mut out);
        assert_eq!(s.next_send_at(), None, "window of 2 is full");
        s.point.on_ack(0, Ack { cum: 1, seq: 0 });
        assert_eq!(s.next_send_at(), Some(10));
        assert_eq!(s.point.held, 1);
    }
}
