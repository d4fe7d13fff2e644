//! The optional loss recovery mechanisms (SACK, tail loss probe) on whole
//! simulated platforms, and the guarantee that with both off every result
//! is what it was before they existed.

use parcomm_core::time::MS;
use parcomm_core::{CompletionKind, Simulation};

fn tcp(rto_min: f64, delayed_ack: bool, sack: bool, tlp: bool) -> String {
    tcp_fields(rto_min, delayed_ack, &format!(r#", "sack": {sack}, "tail_loss_probe": {tlp}"#))
}

/// A tcp table with the fields every platform had before SACK and TLP, plus `extra`.
fn tcp_fields(rto_min: f64, delayed_ack: bool, extra: &str) -> String {
    format!(
        r#"{{"rto_min_s": {rto_min}, "rto_max_s": 120.0, "rto_initial_s": 1.0, "clock_granularity_s": 0.001,
            "initial_cwnd_segments": 10, "sndbuf_bytes": 262144, "rcvbuf_bytes": 262144,
            "delayed_ack": {delayed_ack}, "delayed_ack_timeout_s": 0.04, "dupack_threshold": 3{extra}}}"#
    )
}

/// `n` senders and one receiver (h0) on a 100 Mbit/s switch with a byte
/// buffer per port; `tcp_of(i)` gives host i's tcp table.
fn incast(n: usize, buffer: u64, loss: f64, tcp_of: impl Fn(usize) -> String) -> String {
    let hosts: Vec<String> = (0..=n).map(|i| format!(r#"{{"name":"h{i}","tcp":{}}}"#, tcp_of(i))).collect();
    let links: Vec<String> =
        (0..=n).map(|i| format!(r#"{{"a":"h{i}","b":"sw","rate_bps":1e8,"loss":{loss}}}"#)).collect();
    format!(
        r#"{{"hosts":[{}],"switches":[{{"name":"sw","buffer":{{"size":{buffer},"unit":"bytes"}}}}],"links":[{}]}}"#,
        hosts.join(","),
        links.join(",")
    )
}

/// Every sender sends `bytes` to h0; returns (end time, events, per-host
/// (bytes_sent, bytes_retransmitted, segments_sent, segments_retransmitted,
/// timeouts, fast_retransmits), total tail loss probes).
type Hosts = Vec<(u64, u64, u64, u64, u64, u64)>;
fn gather(json: &str, n: usize, bytes: u64) -> (u64, u64, Hosts, u64) {
    let mut sim = Simulation::from_json(json, 1).unwrap();
    for i in 1..=n as u32 {
        sim.send(i, 0, bytes).unwrap();
    }
    let mut arrived = 0;
    while arrived < n {
        let done = sim.run_until_completion(u64::MAX);
        assert!(!done.is_empty(), "the simulation ran dry");
        arrived += done.iter().filter(|c| c.kind == CompletionKind::Arrived).count();
    }
    let c = sim.counters();
    let hosts = c
        .hosts
        .iter()
        .map(|h| {
            (
                h.bytes_sent,
                h.bytes_retransmitted,
                h.segments_sent,
                h.segments_retransmitted,
                h.timeouts,
                h.fast_retransmits,
            )
        })
        .collect();
    (sim.now(), sim.events_processed(), hosts, c.hosts.iter().map(|h| h.tail_loss_probes).sum())
}

#[test]
fn options_off_match_the_recorded_baseline() {
    // Recorded before SACK and TLP existed (200 kB from each sender).
    // (senders, rto_min, buffer, delayed ACK, loss) -> (end, events, hosts)
    type Case = ((usize, f64, u64, bool, f64), (u64, u64, Hosts));
    #[rustfmt::skip]
    let cases: [Case; 3] = [
        ((2, 0.2, 32768, false, 0.0), (219723520, 2256, vec![(0, 0, 0, 0, 0, 0), (243800, 43800, 167, 30, 1, 0), (201440, 1440, 138, 1, 1, 0)])),
        ((4, 0.2, 32768, false, 0.0), (622691520, 4579, vec![(0, 0, 0, 0, 0, 0), (227740, 27740, 156, 19, 2, 1), (205840, 5840, 141, 4, 0, 1), (229200, 29200, 157, 20, 1, 3), (230660, 30660, 158, 21, 1, 3)])),
        ((8, 0.2, 65536, true, 0.01), (1023314400, 7793, vec![(0, 0, 0, 0, 0, 0), (221900, 21900, 152, 15, 1, 2), (232120, 32120, 159, 22, 2, 1), (218980, 18980, 150, 13, 1, 3), (218980, 18980, 150, 13, 0, 1), (214600, 14600, 147, 10, 2, 2), (214600, 14600, 147, 10, 0, 1), (229200, 29200, 157, 20, 4, 4), (226280, 26280, 155, 18, 1, 4)])),
    ];
    for ((n, rto, buffer, delack, loss), want) in cases {
        let json = incast(n, buffer, loss, |_| tcp(rto, delack, false, false));
        let (t, events, hosts, probes) = gather(&json, n, 200_000);
        assert_eq!((t, events, hosts), want, "n={n}");
        assert_eq!(probes, 0);
        // Omitting the fields is the same as false (serde default).
        let omitted = incast(n, buffer, loss, |_| tcp_fields(rto, delack, ""));
        assert!(!omitted.contains("sack"));
        assert_eq!(gather(&omitted, n, 200_000).0, t);
    }
}

#[test]
fn sack_is_used_only_when_both_ends_enable_it() {
    let off = gather(&incast(4, 32768, 0.0, |_| tcp(0.2, false, false, false)), 4, 200_000);
    // Only the receiver, or only the senders: no SACK, same run.
    let rx_only = gather(&incast(4, 32768, 0.0, |i| tcp(0.2, false, i == 0, false)), 4, 200_000);
    let tx_only = gather(&incast(4, 32768, 0.0, |i| tcp(0.2, false, i != 0, false)), 4, 200_000);
    assert_eq!(rx_only, off);
    assert_eq!(tx_only, off);
    let both = gather(&incast(4, 32768, 0.0, |_| tcp(0.2, false, true, false)), 4, 200_000);
    assert_ne!(both.0, off.0);
}

#[test]
fn losing_the_last_segment_costs_a_probe_timeout_not_an_rto() {
    // h0 -> h1 through one switch; 10 segments fit the initial window and
    // the 10th (the last) is lost on the first link.
    let run = |tlp: bool, drops: &str| {
        let t = tcp(0.2, false, true, tlp);
        let json = format!(
            r#"{{"hosts":[{{"name":"h0","tcp":{t}}},{{"name":"h1","tcp":{t}}}],
            "switches":[{{"name":"sw","buffer":{{"size":1000000,"unit":"bytes"}}}}],
            "links":[{{"a":"h0","b":"sw","rate_bps":1e9,"propagation_s":1e-4,"drop_nth":{drops}}},
                     {{"a":"sw","b":"h1","rate_bps":1e9,"propagation_s":1e-4}}]}}"#
        );
        let mut sim = Simulation::from_json(&json, 1).unwrap();
        sim.send(0, 1, 10 * 1460).unwrap();
        let end = loop {
            let done = sim.run_until_completion(u64::MAX);
            if let Some(c) = done.iter().find(|c| c.kind == CompletionKind::Arrived) {
                break c.time;
            }
        };
        (end, sim.counters().hosts[0].clone())
    };
    let (clean, _) = run(true, "[]");
    let (with_rto, h) = run(false, "[10]");
    assert_eq!((h.timeouts, h.tail_loss_probes), (1, 0));
    assert!(with_rto - clean > 199 * MS);
    let (with_tlp, h) = run(true, "[10]");
    assert_eq!((h.timeouts, h.tail_loss_probes, h.segments_retransmitted), (0, 1, 1));
    // RTT here is about 0.5 ms: the probe goes 2·SRTT after the last ACK.
    let penalty = with_tlp - clean;
    assert!(penalty < 3 * MS, "penalty {penalty} ns");
}

#[test]
fn incast_with_sack_and_tlp_completes() {
    for n in [2, 8, 16] {
        for rto in [0.2, 0.005] {
            let json = incast(n, 32768, 0.0, |_| tcp(rto, false, true, true));
            let (t, _, hosts, _) = gather(&json, n, 65568);
            assert!(t > 0 && hosts.iter().skip(1).all(|h| h.0 >= 65568));
        }
    }
}

#[test]
fn lost_acks_give_their_sack_slots_back() {
    // 2 % loss on every link: ACKs carrying SACK blocks are lost too. Once every
    // transfer is done and the network has drained, no ACK is in flight, so no
    // slot of the side table may still be held.
    let n = 8;
    let json = incast(n, 32768, 0.02, |_| tcp(0.2, true, true, true));
    let mut sim = Simulation::from_json(&json, 3).unwrap();
    for i in 1..=n as u32 {
        sim.send(i, 0, 400_000).unwrap();
    }
    let mut arrived = 0;
    while arrived < n {
        let done = sim.run_until_completion(u64::MAX);
        assert!(!done.is_empty(), "the simulation ran dry");
        arrived += done.iter().filter(|c| c.kind == CompletionKind::Arrived).count();
    }
    let lost: u64 = sim.counters().ports.iter().map(|p| p.wire_losses).sum();
    assert!(lost > 0, "the links lost nothing: the test tests nothing");
    sim.run_until(sim.now() + 10_000 * MS);
    assert_eq!(sim.sack_slots_in_use(), 0);
}
