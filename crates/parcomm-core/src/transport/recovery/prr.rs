//! Proportional Rate Reduction (RFC 6937), as Linux's `tcp_cwnd_reduction()`
//! (net/ipv4/tcp_input.c, 6.x): during SACK fast recovery, what may be sent
//! on each ACK is proportional to what the ACK delivered, so the window
//! comes down to ssthresh smoothly instead of in one step, and, once the
//! pipe is below ssthresh, grows back no faster than the ACKs deliver, with
//! one extra segment only on an ACK that advanced snd_una and revealed no
//! new loss (Linux's conservative reduction bound; RFC 6937's SSRB adds it
//! on every ACK). A burst of retransmissions into the port that just
//! overflowed is what loses them again. Linux scales by the window before
//! the reduction (`prior_cwnd`) where RFC 6937 uses RecoverFS.

#[derive(Clone, Debug, Default)]
pub struct Prr {
    /// The congestion window when recovery began (`prior_cwnd`).
    recover_fs: u64,
    /// prr_delivered: bytes the receiver got (acked or SACKed) since then.
    delivered: u64,
    /// prr_out: bytes sent since then.
    out: u64,
    /// The window the last delivering ACK set: what was in the pipe then
    /// plus what it allowed (Linux: `cwnd = in_flight + sndcnt`). Sending
    /// goes on while the pipe is below it, so segments marked lost later (by
    /// the RACK timer) open room without an ACK, as in Linux.
    window: u64,
}

impl Prr {
    /// Recovery begins with a congestion window of `prior_cwnd` bytes.
    pub fn start(prior_cwnd: u64) -> Prr {
        Prr { recover_fs: prior_cwnd.max(1), ..Prr::default() }
    }

    /// An ACK in recovery delivered `delivered` bytes; `pipe` and `ssthresh`
    /// after it. Sets what may be sent until the next ACK (RFC 6937 §3.1).
    /// `grow` (snd_una advanced, nothing newly marked lost) allows the one
    /// extra segment of `mss` bytes below ssthresh. An ACK that delivered
    /// nothing changes nothing.
    pub fn on_ack(&mut self, delivered: u64, pipe: u64, ssthresh: u64, mss: u64, grow: bool) {
        if delivered == 0 {
            return;
        }
        self.delivered += delivered;
        let sndcnt = if pipe > ssthresh {
            // Proportional: ceil(prr_delivered * ssthresh / RecoverFS) - prr_out.
            let target = (self.delivered as u128 * ssthresh as u128).div_ceil(self.recover_fs as u128) as u64;
            target.saturating_sub(self.out)
        } else {
            // No faster than the ACKs deliver (plus one on real progress), up to ssthresh.
            let limit = self.delivered.saturating_sub(self.out).max(delivered);
            (ssthresh - pipe).min(if grow { limit.saturating_add(mss) } else { limit })
        };
        self.window = pipe + sndcnt;
    }

    /// Whether a segment may go now, with `pipe` bytes in flight
    /// (`tcp_cwnd_test()`: in flight below the window).
    pub fn may_send(&self, pipe: u64) -> bool {
        pipe < self.window
    }

    /// `len` bytes went out (retransmission or new data).
    pub fn on_sent(&mut self, len: u64) {
        self.out += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proportional_part_sends_ssthresh_over_recover_fs_of_what_was_delivered() {
        // RFC 6937 example: prior window 20 segments, ssthresh = 10: one segment per two delivered.
        let mss = 1000;
        let mut p = Prr::start(20 * mss);
        p.on_ack(mss, 18 * mss, 10 * mss, mss, false);
        assert_eq!(p.window, 18 * mss + 500); // ceil(1000 * 10 / 20) - 0 beyond the pipe
        assert!(p.may_send(18 * mss));
        p.on_sent(mss);
        assert!(!p.may_send(19 * mss));
        p.on_ack(mss, 17 * mss, 10 * mss, mss, false);
        assert_eq!(p.window, 17 * mss); // ceil(2000 * 10 / 20) - 1000 = 0
        assert!(!p.may_send(17 * mss));
        p.on_ack(mss, 16 * mss, 10 * mss, mss, false);
        assert_eq!(p.window, 16 * mss + 500);
    }

    #[test]
    fn below_ssthresh_it_sends_what_the_acks_deliver_plus_one_on_progress() {
        let mss = 1000;
        let mut p = Prr::start(20 * mss);
        // Heavy loss: pipe 2 segments, ssthresh 10. A duplicate ACK SACKing one segment allows one.
        p.on_ack(mss, 2 * mss, 10 * mss, mss, false);
        assert_eq!(p.window, 3 * mss);
        p.on_sent(mss);
        // An ACK that advanced snd_una and found no new loss allows one more (Linux's sndcnt++).
        p.on_ack(mss, 2 * mss, 10 * mss, mss, true);
        assert_eq!(p.window, 4 * mss); // max(2000 - 1000, 1000) + 1000
        p.on_sent(2 * mss);
        // An ACK delivering nothing changes nothing.
        p.on_ack(0, 4 * mss, 10 * mss, mss, true);
        assert_eq!(p.window, 4 * mss);
        // Never beyond ssthresh.
        p.on_ack(5 * mss, 9 * mss, 10 * mss, mss, true);
        assert_eq!(p.window, 10 * mss);
    }

    #[test]
    fn segments_marked_lost_later_open_room_without_an_ack() {
        let mss = 1000;
        let mut p = Prr::start(10 * mss);
        p.on_ack(mss, 4 * mss, 5 * mss, mss, false);
        p.on_sent(mss);
        assert!(!p.may_send(5 * mss));
        // The RACK timer marks two more segments lost: the pipe shrinks by two.
        assert!(p.may_send(3 * mss));
    }
}
