//! The Linux mechanisms (`linux_rto`, `timestamps`, `rack`) on the test
//! network, each against a case where the RFC-style transport behaves
//! differently, with the numbers worked out by hand.

use super::testnet::Net;
use super::TcpConfig;
use crate::time::{Time, MS, SEC};

const MSS: u64 = 1000;

fn cfg(sack: bool, linux: bool) -> TcpConfig {
    TcpConfig {
        mss: MSS,
        delayed_ack: false,
        sndbuf: 2 << 20,
        rcvbuf: 2 << 20,
        sack,
        tail_loss_probe: sack && linux,
        linux_rto: linux,
        timestamps: linux,
        rack: linux,
        prr: linux,
        ..Default::default()
    }
}

/// 100 Mbit/s, 1 ms each way: RTT ~2.1 ms, far below rto_min (200 ms).
fn net(c: &TcpConfig) -> Net {
    Net::new(c, 100_000_000, MS)
}

fn run(c: &TcpConfig, bytes: u64, drops: &[(u64, u32)]) -> (Net, Time) {
    let mut n = net(c);
    for &(seq, nth) in drops {
        n.drop_nth(seq, nth);
    }
    n.write(bytes);
    assert!(n.run(60 * SEC), "transfer stuck");
    let t = n.now;
    (n, t)
}

#[test]
fn rack_repairs_a_lost_retransmission_without_a_timeout() {
    // Segment 10 is lost twice: its first copy and its fast retransmission.
    let drops = [(10 * MSS, 1), (10 * MSS, 2)];
    let (sack, t_sack) = run(&cfg(true, false), 200 * MSS, &drops);
    let (rack, t_rack) = run(&cfg(true, true), 200 * MSS, &drops);
    // RFC 6675 resends a hole once per episode: the second loss waits for the RTO.
    assert_eq!(sack.tx.stats().timeouts, 1);
    assert!(t_sack > 200 * MS);
    // RACK sees data sent after the retransmission delivered, an RTT later: resend at once.
    assert_eq!(rack.tx.stats().timeouts, 0);
    assert_eq!(rack.sends_of(10 * MSS).len(), 3);
    assert!(t_rack < 50 * MS, "{t_rack}");
}

#[test]
fn tail_loss_probe_then_rack_repairs_a_lost_tail() {
    // The last two segments of a 20-segment write are lost: no dupACKs come back.
    let drops = [(18 * MSS, 1), (19 * MSS, 1)];
    let (rfc, _) = run(&cfg(true, false), 20 * MSS, &drops);
    let (linux, t) = run(&cfg(true, true), 20 * MSS, &drops);
    assert_eq!(rfc.tx.stats().timeouts, 1);
    assert_eq!(linux.tx.stats().timeouts, 0);
    assert_eq!(linux.tx.stats().tail_loss_probes, 1);
    // The probe resends segment 19 at 2 SRTT + 2 ms after the last send, its SACK
    // lets RACK declare 18 lost after the reordering window and timer (+2 ms).
    let last = linux.sends_of(19 * MSS);
    assert_eq!(last.len(), 2);
    let srtt = linux.tx.srtt().unwrap();
    let pto = last[1] - last[0];
    assert!(pto >= 2 * srtt + 2 * MS && pto <= 2 * srtt + 2 * MS + 3 * MS, "pto {pto} srtt {srtt}");
    assert_eq!(linux.sends_of(18 * MSS).len(), 2);
    assert!(t < 30 * MS, "{t}");
}

#[test]
fn linux_probe_timeout_is_not_earlier_than_two_srtt_plus_2ms() {
    // Lossless: probes may still fire (spuriously), but never sooner than 2 SRTT + 2 ms after a send.
    let (n, _) = run(&cfg(true, true), 300 * MSS, &[]);
    assert_eq!(n.tx.stats().timeouts, 0);
    let srtt = n.tx.srtt().unwrap();
    let mut prev: Option<Time> = None;
    for &(t, seg) in &n.sent {
        if seg.retransmission {
            let p = prev.expect("a probe follows a send");
            assert!(t - p >= 2 * srtt, "probe {t} only {} after the previous send", t - p);
        }
        prev = Some(t);
    }
}

#[test]
fn timestamps_clear_the_backoff_on_the_first_ack_after_a_timeout() {
    // No SACK: segment 5 lost twice, so two RTOs back off to ~4 x RTO.
    let drops = [(5 * MSS, 1), (5 * MSS, 2), (5 * MSS, 3)];
    let karn = TcpConfig { timestamps: false, ..cfg(false, true) };
    let (k, _) = run(&karn, 40 * MSS, &drops);
    let (ts, _) = run(&cfg(false, true), 40 * MSS, &drops);
    assert_eq!(k.tx.stats().timeouts, ts.tx.stats().timeouts);
    assert!(ts.tx.stats().timeouts >= 2);
    // With timestamps the ACK of the retransmission is timed: RTO = SRTT + rto_min again.
    let base = ts.tx.srtt().unwrap() + 200 * MS;
    assert!(ts.tx.rto() <= base + MS && ts.tx.rto() >= 200 * MS, "{}", ts.tx.rto());
    // Without, only the ACK of data sent after the timeouts clears it; the
    // remaining segments after 5 were retransmitted (go-back-N), so it stays backed off.
    assert!(k.tx.rto() >= 2 * ts.tx.rto(), "karn {} ts {}", k.tx.rto(), ts.tx.rto());
}

#[test]
fn a_whole_lost_tail_is_repaired_after_the_probe_without_a_timeout() {
    // 45 segments; the last 25 are all lost at their first transmission (a port overflowed).
    let drops: Vec<(u64, u32)> = (20..45).map(|i| (i * MSS, 1)).collect();
    let (linux, t) = run(&cfg(true, true), 45 * MSS, &drops);
    assert_eq!(linux.tx.stats().tail_loss_probes, 1);
    assert_eq!(linux.tx.stats().timeouts, 0, "finished at {t}");
    assert!(t < 50 * MS, "{t}");
}

/// `cfg(true, true)` with F-RTO and the undo (`frto`), loss probes off so
/// that a stall or an outage ends in a retransmission timeout.
fn frto(timestamps: bool, on: bool) -> TcpConfig {
    TcpConfig { frto: on, timestamps, tail_loss_probe: false, ..cfg(true, true) }
}

/// 200 segments; the path stalls from 5 ms to 305 ms and then delivers
/// everything it held, in order: the RTO (~205 ms) fires while nothing
/// was lost, and its retransmission of the head arrives after the original.
fn stalled(c: &TcpConfig) -> Net {
    let mut n = net(c);
    n.stall(5 * MS, 305 * MS);
    n.write(200 * MSS);
    assert!(n.run(60 * SEC), "transfer stuck");
    n
}

#[test]
fn a_spurious_timeout_is_undone_by_the_timestamp_echo() {
    let off = stalled(&frto(true, false));
    let on = stalled(&frto(true, true));
    for n in [&off, &on] {
        assert_eq!(n.tx.stats().timeouts, 1);
        assert_eq!(n.rx.delivered(), 200 * MSS);
    }
    // Off: the timeout halved ssthresh for good and every outstanding segment was sent again.
    assert_eq!(off.tx.stats().rto_undos, 0);
    assert!(off.tx.ssthresh() < u64::MAX);
    assert!(off.tx.stats().segments_retransmitted > 5, "{}", off.tx.stats().segments_retransmitted);
    // On: the first ACK after the stall echoes the original head's timestamp, older than
    // its retransmission (tcp_packet_delayed()): undone, ssthresh back to "infinite"
    // (never reduced before), and nothing but the head was resent, by the timeout.
    // (RACK does not time that ACK by the retransmission either, tcp_skb_spurious_retrans(),
    // or it would declare every original still in flight lost at once.)
    assert_eq!((on.tx.stats().rto_undos, on.tx.stats().recovery_undos, on.tx.stats().fast_retransmits), (1, 0, 0));
    assert_eq!(on.tx.ssthresh(), u64::MAX);
    let resent: Vec<Time> = on.sent.iter().filter(|(_, s)| s.retransmission).map(|(t, _)| *t).collect();
    assert_eq!(resent.len(), 1);
    assert!(resent[0] > 200 * MS && resent[0] < 305 * MS, "{resent:?}");
}

#[test]
fn without_timestamps_frto_finds_the_spurious_timeout_from_the_next_ack() {
    let n = stalled(&frto(false, true));
    assert_eq!((n.tx.stats().timeouts, n.tx.stats().rto_undos), (1, 1));
    assert_eq!(n.tx.ssthresh(), u64::MAX);
    // The first ACK acks the retransmitted head: step 2b sends new data, not
    // retransmissions; the next ACK covers a segment never resent (step 3b): undone.
    assert_eq!(n.tx.stats().segments_retransmitted, 1);
}

#[test]
fn a_real_loss_after_a_timeout_is_not_undone() {
    // Everything sent between 5 and 25 ms is lost; the RTO repairs it.
    let run_outage = |c: &TcpConfig| {
        let mut n = net(c);
        n.outage(5 * MS, 25 * MS);
        n.write(300 * MSS);
        assert!(n.run(60 * SEC), "transfer stuck");
        n
    };
    for ts in [true, false] {
        let n = run_outage(&frto(ts, true));
        assert_eq!(n.rx.delivered(), 300 * MSS);
        assert_eq!((n.tx.stats().timeouts, n.tx.stats().rto_undos), (1, 0), "timestamps {ts}");
        assert!(n.tx.ssthresh() < u64::MAX);
        // F-RTO step 2b: after the head's retransmission was acked, the next two
        // segments out are new data (above everything sent before the timeout),
        // and their SACKs prove the loss real: then the holes are resent.
        let rto = n.sent.iter().position(|(t, s)| s.retransmission && *t > 25 * MS).unwrap();
        let high = n.sent[..rto].iter().map(|(_, s)| s.seq + s.len).max().unwrap();
        let next: Vec<(u64, bool)> = n.sent[rto + 1..rto + 4].iter().map(|(_, s)| (s.seq, s.retransmission)).collect();
        assert_eq!(next[..2], [(high, false), (high + MSS, false)], "timestamps {ts}");
        assert!(next[2].1, "then retransmissions: {next:?}");
    }
}

#[test]
fn hystart_leaves_slow_start_near_the_path_bdp_without_a_loss() {
    // 100 Mbit/s, 10 ms each way: BDP = 250 segments of 1000 bytes; the FIFO
    // never drops, so without HyStart slow start only ends with the transfer.
    let c = |hystart: bool| TcpConfig { congestion: "cubic", hystart, tail_loss_probe: false, ..cfg(true, true) };
    let run = |c: &TcpConfig| {
        let mut n = Net::new(c, 100_000_000, 10 * MS);
        n.write(2000 * MSS);
        assert!(n.run(60 * SEC));
        n
    };
    let off = run(&c(false));
    let on = run(&c(true));
    for n in [&off, &on] {
        let st = n.tx.stats();
        assert_eq!((st.timeouts, st.fast_retransmits, st.segments_retransmitted), (0, 0, 0));
    }
    assert_eq!(off.tx.ssthresh(), u64::MAX);
    // The window doubles per round from 10: 10, 20, 40, 80, 160. In the 160-segment
    // round the ACKs come 80 us apart (the bottleneck's pace), a train; it passes
    // (min RTT ~20.1 ms + the 1 ms ACK-delay allowance) / 2 = 10.5 ms at about its
    // 132nd ACK, with the window at 160 + 132 segments: ssthresh = cwnd there.
    let exit = on.tx.ssthresh() / MSS;
    assert!((285..=300).contains(&exit), "left slow start at {exit} segments");
}

#[test]
fn without_sack_the_timestamp_echo_still_undoes_and_stops_go_back_n() {
    // NewReno recovery resends everything after a timeout (go-back-N); the undo on the
    // first ACK after the stall clears the loss, so nothing past the head goes again.
    let c = |on: bool| TcpConfig { frto: on, tail_loss_probe: false, ..cfg(false, true) };
    let off = stalled(&c(false));
    let on = stalled(&c(true));
    assert_eq!((off.tx.stats().timeouts, off.tx.stats().rto_undos), (1, 0));
    assert!(off.tx.stats().segments_retransmitted > 5, "{}", off.tx.stats().segments_retransmitted);
    assert_eq!((on.tx.stats().timeouts, on.tx.stats().rto_undos), (1, 1));
    assert_eq!(on.tx.stats().segments_retransmitted, 1);
    assert_eq!(on.tx.ssthresh(), u64::MAX);
}
