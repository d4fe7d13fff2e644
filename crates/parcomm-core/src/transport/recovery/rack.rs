//! RACK loss detection as Linux has it (net/ipv4/tcp_recovery.c, RFC 8985 §6):
//! a segment is lost once a segment *sent after it* has been delivered and
//! more than one RTT (plus a reordering window) has passed since it left.
//! Because time, not a count of SACKed segments, decides, it detects what
//! DupThresh cannot: a lost retransmission, and a tail with fewer than three
//! segments SACKed above the hole (after a tail loss probe).
//!
//! This type keeps RACK's state (`rack.mstamp`, `rack.end_seq`,
//! `rack.rtt_us`, min RTT) and answers when a segment sent at a given time is
//! lost; the sender walks its outstanding segments (`TxLog`) and marks them
//! in the scoreboard.
//!
//! Simplifications: the simulated networks never reorder packets, so no
//! reordering is ever seen (`reord_seen` stays 0) and the reordering window
//! does not adapt (no D-SACK); the window is min_rtt/4, capped at SRTT, and
//! 0 in recovery or once three segments are SACKed (`tcp_rack_reo_wnd()`).

use crate::time::Time;

/// TCP_TIMEOUT_MIN_US: Linux adds 2 ms to the reordering timer (and to the PTO).
pub const TIMEOUT_MIN: Time = 2_000_000;

#[derive(Clone, Debug, Default)]
pub struct Rack {
    /// Send time and end of the most recently sent segment known delivered.
    xmit: Option<(Time, u64)>,
    /// RTT of the most recently delivered segment (`rack.rtt_us`).
    rtt: Time,
    /// Smallest RTT seen on never-retransmitted segments.
    min_rtt: Option<Time>,
    /// The reordering timer (ICSK_TIME_REO_TIMEOUT).
    deadline: Option<Time>,
    /// Lost retransmissions detected (Linux's TCPLostRetransmit).
    pub lost_retransmits: u64,
}

/// `sent_after(t1, seq1, t2, seq2)` of tcp_recovery.c.
fn sent_after(a: (Time, u64), b: (Time, u64)) -> bool {
    a.0 > b.0 || (a.0 == b.0 && a.1 > b.1)
}

impl Rack {
    pub fn new() -> Rack {
        Rack::default()
    }

    /// `tcp_rack_advance()`: a segment ending at `end`, last sent at `xmit`,
    /// was (S)ACKed at `now`.
    pub fn on_delivered(&mut self, now: Time, xmit: Time, end: u64, retransmitted: bool) {
        let rtt = now.saturating_sub(xmit);
        if retransmitted {
            // Ambiguous: an ACK faster than any real round trip is for the original.
            if self.min_rtt.is_some_and(|m| rtt < m) {
                return;
            }
        } else {
            self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        }
        self.rtt = rtt;
        if self.xmit.is_none_or(|x| sent_after((xmit, end), x)) {
            self.xmit = Some((xmit, end));
        }
    }

    /// An RTT sample from the handshake (`tcp_update_rtt_min()` sees it too).
    pub fn seed_min_rtt(&mut self, rtt: Time) {
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
    }

    /// `tcp_rack_reo_wnd()` with no reordering ever seen.
    pub fn reo_wnd(&self, in_recovery: bool, sacked_segments: u64, srtt: Option<Time>) -> Time {
        if in_recovery || sacked_segments >= 3 {
            return 0;
        }
        let w = self.min_rtt.unwrap_or(0) / 4;
        srtt.map_or(w, |s| w.min(s))
    }

    /// For a segment sent at `xmit` (ending at `end`): `Some(0)` if lost now,
    /// `Some(t)` if it will be in `t` unless delivered first, `None` if
    /// nothing sent after it was delivered yet.
    pub fn time_to_loss(&self, now: Time, xmit: Time, end: u64, reo_wnd: Time) -> Option<Time> {
        let last = self.xmit?;
        if !sent_after(last, (xmit, end)) {
            return None;
        }
        let due = xmit.saturating_add(self.rtt).saturating_add(reo_wnd);
        Some(due.saturating_sub(now))
    }

    /// Arm the reordering timer `wait` from now (+2 ms), no later than `cap`.
    pub fn arm(&mut self, now: Time, wait: Time, cap: Option<Time>) {
        let at = now.saturating_add(wait).saturating_add(TIMEOUT_MIN);
        self.deadline = Some(cap.map_or(at, |c| at.min(c)));
    }

    pub fn cancel(&mut self) {
        self.deadline = None;
    }

    pub fn deadline(&self) -> Option<Time> {
        self.deadline
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{MS, US};

    #[test]
    fn a_segment_is_lost_one_rtt_after_it_left_once_a_later_one_arrived() {
        let mut r = Rack::new();
        // Segments A (sent at 0, end 1000) and B (sent at 10 us, end 2000); B is SACKed at 110 us.
        assert_eq!(r.time_to_loss(110 * US, 0, 1000, 0), None);
        r.on_delivered(110 * US, 10 * US, 2000, false);
        // RTT of B = 100 us: A is lost at 0 + 100 us + reo_wnd.
        assert_eq!(r.time_to_loss(110 * US, 0, 1000, 0), Some(0));
        assert_eq!(r.time_to_loss(50 * US, 0, 1000, 0), Some(50 * US));
        // Fewer than 3 SACKed and not in recovery: wait min_rtt/4 more.
        let w = r.reo_wnd(false, 1, Some(100 * US));
        assert_eq!(w, 25 * US);
        assert_eq!(r.time_to_loss(110 * US, 0, 1000, w), Some(15 * US));
        assert_eq!(r.reo_wnd(true, 1, Some(100 * US)), 0);
        assert_eq!(r.reo_wnd(false, 3, Some(100 * US)), 0);
    }

    #[test]
    fn a_lost_retransmission_is_detected_by_its_own_send_time() {
        let mut r = Rack::new();
        r.on_delivered(100 * US, 0, 1000, false); // min_rtt 100 us
                                                  // Hole H retransmitted at 1 ms; new data N sent at 1.01 ms is SACKed at 1.11 ms.
        r.on_delivered(1110 * US, 1010 * US, 9000, false);
        assert_eq!(r.time_to_loss(1110 * US, 1000 * US, 2000, 0), Some(0)); // H's copy is lost too
                                                                            // A retransmission acked faster than min_rtt is taken for its original: no advance.
        let mut r2 = r.clone();
        r2.on_delivered(1150 * US, 1100 * US, 3000, true);
        assert_eq!(r2.xmit, r.xmit);
    }

    #[test]
    fn the_timer_adds_two_ms_and_never_passes_the_cap() {
        let mut r = Rack::new();
        r.arm(0, 25 * US, None);
        assert_eq!(r.deadline(), Some(2025 * US));
        r.arm(0, 25 * US, Some(MS));
        assert_eq!(r.deadline(), Some(MS));
    }
}
