//! Tail loss probe (RFC 8985 §7): when the ACK clock stops with data
//! outstanding, send one segment after a probe timeout (PTO) of about two
//! round trips, so that the ACK it draws can start fast recovery instead of
//! waiting for the retransmission timeout.
//!
//! This type keeps the PTO timer and the episode state (TLP.end_seq,
//! TLP.is_retrans); the sender decides when a probe may be armed and builds
//! the probe segment.
//!
//! Choices, following the RFC rather than Linux:
//! * PTO = 2·SRTT, plus the peer's worst-case ACK delay when one segment (or
//!   less) is in flight; 1 s before any RTT sample; never later than the
//!   pending RTO. The worst-case ACK delay is the configured delayed-ACK
//!   timeout, or 0 when delayed ACKs are off (the simulated receiver then
//!   acks every segment at once). Linux adds 2 jiffies (or `rto_min` when one
//!   packet is out) instead, and older kernels had a 10 ms floor.
//! * After the PTO fires, whether or not a probe went out, the RTO is
//!   re-armed from now (§7.3).
//! * At most one probe per silence: after a probe, none until an ACK
//!   advances snd_una or an RTO fires. The RFC (and Linux) wait instead
//!   until the probe itself is acknowledged (TLP.end_seq); with the RFC's
//!   short PTO an early probe whose data is lost in the same burst would
//!   then block the probe that matters. The episode (`end_seq`) is still
//!   kept, for the congestion response of §7.4.
//! * There is no D-SACK, so a probe that resent data counts as having
//!   repaired a loss when an ACK passes `end_seq` (§7.4.2), unless a pure
//!   duplicate ACK shows that both copies arrived first.

use crate::time::{Time, SEC};

#[derive(Clone, Debug)]
pub struct Tlp {
    /// WCDelAckT of RFC 8985.
    max_ack_delay: Time,
    /// Linux's PTO instead (`tcp_schedule_loss_probe()`): rto_min, added when one segment is out.
    linux_rto_min: Option<Time>,
    /// The PTO timer.
    deadline: Option<Time>,
    /// TLP.end_seq: snd_max after the episode's probe; `None` = no episode.
    end_seq: Option<u64>,
    /// TLP.is_retrans: the probe resent old data.
    is_retrans: bool,
    /// The PTO fired and a probe may go out at the next transmit.
    due: bool,
    /// A probe went out and snd_una has not advanced since.
    probed: bool,
}

impl Tlp {
    pub fn new(max_ack_delay: Time) -> Tlp {
        Tlp {
            max_ack_delay,
            linux_rto_min: None,
            deadline: None,
            end_seq: None,
            is_retrans: false,
            due: false,
            probed: false,
        }
    }

    /// Linux's PTO (net/ipv4/tcp_output.c, `tcp_schedule_loss_probe()`):
    /// 2·SRTT + 2 ms (TCP_TIMEOUT_MIN_US), or 2·SRTT + rto_min when one
    /// segment is out (the delayed-ACK allowance); 1 s before any sample.
    pub fn linux(rto_min: Time) -> Tlp {
        Tlp { linux_rto_min: Some(rto_min), ..Tlp::new(0) }
    }

    /// RFC 8985 TLP_calc_PTO (or Linux's), without the clamp to the RTO expiry.
    pub fn pto(&self, srtt: Option<Time>, one_segment_in_flight: bool) -> Time {
        if let (Some(rto_min), Some(srtt)) = (self.linux_rto_min, srtt) {
            let extra = if one_segment_in_flight { rto_min } else { crate::transport::recovery::rack::TIMEOUT_MIN };
            return srtt.saturating_mul(2).saturating_add(extra);
        }
        match srtt {
            None => SEC,
            Some(srtt) => {
                let pto = srtt.saturating_mul(2);
                if one_segment_in_flight {
                    pto.saturating_add(self.max_ack_delay)
                } else {
                    pto
                }
            }
        }
    }

    /// (Re)starts the PTO timer at `now + PTO`, but no later than the RTO.
    pub fn arm(&mut self, now: Time, srtt: Option<Time>, one_segment_in_flight: bool, rto_deadline: Option<Time>) {
        let at = now.saturating_add(self.pto(srtt, one_segment_in_flight));
        self.deadline = Some(rto_deadline.map_or(at, |r| at.min(r)));
    }

    pub fn cancel(&mut self) {
        self.deadline = None;
    }

    pub fn deadline(&self) -> Option<Time> {
        self.deadline
    }

    /// The PTO expired: a probe is due unless one went out since snd_una
    /// last advanced.
    pub fn on_expiry(&mut self) {
        self.deadline = None;
        self.due = !self.probed;
    }

    /// Whether a probe is due; clears it.
    pub fn take_due(&mut self) -> bool {
        std::mem::take(&mut self.due)
    }

    /// A probe went out; `end_seq` is snd_max after it.
    pub fn on_probe_sent(&mut self, end_seq: u64, is_retrans: bool) {
        self.end_seq = Some(end_seq);
        self.is_retrans = is_retrans;
        self.probed = true;
    }

    /// RFC 8985 §7.4.2 for an acceptable ACK with cumulative point `ack`;
    /// `advanced`: it acks new data; `pure_dupack`: it acks nothing new and
    /// carries no SACK blocks. Returns true when the probe repaired a loss,
    /// to which congestion control must respond.
    pub fn on_ack(&mut self, ack: u64, advanced: bool, pure_dupack: bool) -> bool {
        if advanced {
            self.probed = false;
        }
        let Some(end) = self.end_seq else {
            return false;
        };
        if ack < end {
            return false;
        }
        if !self.is_retrans {
            self.end_seq = None; // new data probed; the ACK clock is back
            false
        } else if ack > end {
            self.end_seq = None;
            true
        } else if pure_dupack {
            self.end_seq = None; // the original and the probe both arrived
            false
        } else {
            false
        }
    }

    /// A retransmission timeout ends any episode and pending probe.
    pub fn on_rto(&mut self) {
        self.deadline = None;
        self.end_seq = None;
        self.due = false;
        self.probed = false;
    }
}

#[cfg(test)]
mod linux_tests {
    use super::*;
    use crate::time::{MS, US};

    #[test]
    fn linux_pto_is_two_srtt_plus_2ms_or_plus_rto_min_for_one_segment() {
        let t = Tlp::linux(200 * MS);
        assert_eq!(t.pto(Some(100 * US), false), 2200 * US);
        assert_eq!(t.pto(Some(100 * US), true), 200_200 * US);
        assert_eq!(t.pto(None, false), SEC);
        // Never later than the RTO.
        let mut t = Tlp::linux(200 * MS);
        t.arm(0, Some(100 * US), false, Some(MS));
        assert_eq!(t.deadline(), Some(MS));
        t.arm(0, Some(100 * US), false, Some(10 * MS));
        assert_eq!(t.deadline(), Some(2200 * US));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::MS;

    #[test]
    fn pto_values_and_clamp() {
        let mut t = Tlp::new(40 * MS);
        assert_eq!(t.pto(None, false), SEC);
        assert_eq!(t.pto(Some(3 * MS), false), 6 * MS);
        assert_eq!(t.pto(Some(3 * MS), true), 46 * MS);
        t.arm(100 * MS, Some(3 * MS), false, Some(300 * MS));
        assert_eq!(t.deadline(), Some(106 * MS));
        t.arm(100 * MS, Some(3 * MS), true, Some(120 * MS));
        assert_eq!(t.deadline(), Some(120 * MS)); // not after the RTO
        t.cancel();
        assert_eq!(t.deadline(), None);
    }

    #[test]
    fn one_probe_until_an_ack_advances() {
        let mut t = Tlp::new(0);
        t.arm(0, Some(MS), false, None);
        t.on_expiry();
        assert!(t.take_due() && !t.take_due());
        t.on_probe_sent(5000, true);
        t.on_expiry();
        assert!(!t.take_due()); // no second probe yet
        assert!(!t.on_ack(3000, false, true)); // a duplicate does not reopen
        t.on_expiry();
        assert!(!t.take_due());
        assert!(!t.on_ack(4000, true, false)); // snd_una advanced: may probe again
        t.on_expiry();
        assert!(t.take_due());
        t.on_probe_sent(5000, true);
        t.on_rto(); // so does a timeout
        t.on_expiry();
        assert!(t.take_due());
    }

    #[test]
    fn loss_repaired_by_a_retransmitted_probe() {
        let mut t = Tlp::new(0);
        t.on_probe_sent(5000, true);
        assert!(!t.on_ack(4000, true, false));
        assert!(!t.on_ack(5000, true, false)); // ack == end_seq: still open (RFC)
        assert!(t.on_ack(6000, true, false)); // past it: the probe repaired a loss
        assert!(!t.on_ack(7000, true, false)); // once
                                               // New-data probe acked, or both copies arrived: no loss.
        t.on_probe_sent(8000, false);
        assert!(!t.on_ack(9000, true, false));
        t.on_probe_sent(9000, true);
        assert!(!t.on_ack(9000, false, true));
        assert!(!t.on_ack(9500, true, false));
    }

    // --- the sender with TLP on, over the test network ---

    use crate::transport::testnet::Net;
    use crate::transport::TcpConfig;

    fn cfg(sack: bool, delayed_ack: bool) -> TcpConfig {
        TcpConfig {
            mss: 1000,
            rto_min: 200 * MS,
            rto_max: 2 * SEC,
            delayed_ack,
            sndbuf: 2 << 20,
            rcvbuf: 2 << 20,
            sack,
            tail_loss_probe: true,
            ..Default::default()
        }
    }

    /// A 5-segment write whose last segment is lost `losses` times, over a
    /// 1 ms one-way path. Returns the network and the send times of the
    /// last segment minus the arrival of the last ACK before the silence.
    fn tail_loss(c: &TcpConfig, losses: u32) -> (Net, Vec<Time>) {
        let mut net = Net::new(c, 100_000_000, MS);
        for n in 1..=losses {
            net.drop_nth(4000, n);
        }
        net.write(5000);
        assert!(net.run(20 * SEC));
        assert_eq!(net.rx.delivered(), 5000);
        let last_ack = net.acked.iter().find(|a| a.1.ack == 4000).unwrap().0 + MS;
        let sends = net.sends_of(4000).iter().map(|&t| t.saturating_sub(last_ack)).collect();
        (net, sends)
    }

    #[test]
    fn lost_last_segment_repaired_by_the_probe_after_two_srtt() {
        for sack in [false, true] {
            let (net, sends) = tail_loss(&cfg(sack, false), 1);
            let st = net.tx.stats();
            assert_eq!((st.timeouts, st.tail_loss_probes, st.segments_retransmitted), (0, 1, 1));
            assert_eq!(st.fast_retransmits, 0);
            // Nothing new to send: the probe resends the last segment, 2·SRTT
            // after the last ACK (no sample since: Karn), far below rto_min.
            let srtt = net.tx.srtt().unwrap();
            assert_eq!(sends[1], 2 * srtt, "sack {sack}");
            assert!(net.now < 20 * MS);
        }
    }

    #[test]
    fn one_segment_in_flight_waits_for_a_delayed_ack_too() {
        let c = cfg(true, true);
        let (net, sends) = tail_loss(&c, 1);
        assert_eq!((net.tx.stats().timeouts, net.tx.stats().tail_loss_probes), (0, 1));
        assert_eq!(sends[1], 2 * net.tx.srtt().unwrap() + c.delayed_ack_timeout);
    }

    #[test]
    fn a_lost_probe_falls_back_to_the_rto() {
        let c = cfg(true, false);
        let (net, sends) = tail_loss(&c, 2);
        let st = net.tx.stats();
        assert_eq!((st.timeouts, st.tail_loss_probes, st.segments_retransmitted), (1, 1, 2));
        // The RTO is re-armed when the probe goes (RFC 8985 §7.3).
        assert_eq!(sends[2] - sends[1], c.rto_min);
    }

    #[test]
    fn probe_sends_new_data_when_there_is_some() {
        // The whole first flight (2 segments) is lost and more data waits
        // behind the window: the probe is the next new segment.
        let c = TcpConfig { initial_cwnd_segments: 2, ..cfg(true, false) };
        let mut net = Net::new(&c, 100_000_000, MS);
        net.tx.seed_handshake_rtt(2 * MS);
        net.drop_nth(0, 1).drop_nth(1000, 1);
        net.write(5000);
        assert!(net.run(20 * SEC));
        assert_eq!(net.rx.delivered(), 5000);
        let probe = net.sent[2];
        assert_eq!((probe.0, probe.1.seq, probe.1.retransmission), (4 * MS, 2000, false));
        // Its SACK is one segment, too few to call the first two lost (no
        // RACK): the RTO, re-armed at the probe, repairs them.
        let st = net.tx.stats();
        assert_eq!((st.tail_loss_probes, st.timeouts, st.fast_retransmits), (1, 1, 0));
        assert_eq!(net.sends_of(0)[1], 4 * MS + c.rto_min);
        assert_eq!(net.sends_of(2000).len(), 1); // SACKed: not resent after the RTO
    }

    #[test]
    fn lossless_transfer_sends_no_probe() {
        let mut net = Net::new(&cfg(true, false), 100_000_000, 5 * MS);
        net.write(5_000_000);
        assert!(net.run(10 * SEC));
        let st = net.tx.stats();
        assert_eq!((st.tail_loss_probes, st.segments_retransmitted, st.timeouts), (0, 0, 0));
    }
}
