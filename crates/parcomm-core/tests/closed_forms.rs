//! The simulator against closed forms: rates, latencies and the repair paths
//! of the transport, each checked on a whole simulated platform.

use parcomm_core::time::{tx_time, MS, SEC};
use parcomm_core::{CompletionKind, Simulation};

fn tcp(rto_min: f64, rto_max: f64) -> String {
    format!(
        r#"{{"rto_min_s": {rto_min}, "rto_max_s": {rto_max}, "rto_initial_s": 1.0, "clock_granularity_s": 0.001,
            "initial_cwnd_segments": 10, "sndbuf_bytes": 4194304, "rcvbuf_bytes": 4194304,
            "delayed_ack": false, "delayed_ack_timeout_s": 0.04, "dupack_threshold": 3}}"#
    )
}

/// Two hosts joined through a chain of `switches` switches; every link 1 Gbit/s.
fn chain(switches: usize, framing: &str, drop_nth: &[u64], rto_max: f64) -> String {
    let hosts = format!(r#"{{"name":"h0","tcp":{t}}},{{"name":"h1","tcp":{t}}}"#, t = tcp(0.2, rto_max));
    let sw: Vec<String> =
        (0..switches).map(|i| format!(r#"{{"name":"s{i}","buffer":{{"size":10000000,"unit":"bytes"}}}}"#)).collect();
    let mut names = vec!["h0".to_string()];
    names.extend((0..switches).map(|i| format!("s{i}")));
    names.push("h1".into());
    let links: Vec<String> = names
        .windows(2)
        .enumerate()
        .map(|(i, w)| {
            let drops = if i == 0 { format!("{drop_nth:?}") } else { "[]".into() };
            format!(
                r#"{{"a":"{}","b":"{}","rate_bps":1e9,"propagation_s":1e-6,"framing":"{framing}","drop_nth":{drops}}}"#,
                w[0], w[1]
            )
        })
        .collect();
    format!(r#"{{"hosts":[{hosts}],"switches":[{}],"links":[{}]}}"#, sw.join(","), links.join(","))
}

/// Send `bytes` from h0 to h1 and return the time it arrives.
fn arrival(sim: &mut Simulation, bytes: u64) -> u64 {
    let op = sim.send(0, 1, bytes).unwrap();
    loop {
        let done = sim.run_until_completion(u64::MAX);
        assert!(!done.is_empty(), "simulation ran dry before the message arrived");
        if let Some(c) = done.iter().find(|c| c.op == op && c.kind == CompletionKind::Arrived) {
            return c.time;
        }
    }
}

#[test]
fn bulk_flow_reaches_link_rate_times_payload_efficiency() {
    let mut sim = Simulation::from_json(&chain(1, "ethernet", &[], 60.0), 1).unwrap();
    let bytes = 200_000_000;
    let t = arrival(&mut sim, bytes);
    let goodput = bytes as f64 * 8.0 / (t as f64 * 1e-9);
    // MSS 1460 in a 1538-byte Ethernet frame (1500 + 18 header/FCS + 20 preamble/IFG).
    let ideal = 1e9 * 1460.0 / 1538.0;
    assert!((goodput / ideal - 1.0).abs() < 0.02, "goodput {goodput:.4e} vs ideal {ideal:.4e}");
    let c = sim.counters();
    assert_eq!(c.hosts[0].segments_retransmitted, 0);
}

#[test]
fn store_and_forward_latency_through_k_hops_is_exact() {
    for switches in [0usize, 1, 3, 7] {
        let mut sim = Simulation::from_json(&chain(switches, "raw", &[], 60.0), 1).unwrap();
        let t = arrival(&mut sim, 960); // one 1000-byte IP packet
        let hops = switches as u64 + 1;
        let expect = hops * (tx_time(1000, 1e9) + 1_000);
        assert_eq!(t, expect, "{switches} switches");
    }
}

#[test]
fn a_single_mid_stream_drop_is_repaired_by_fast_retransmit() {
    let mut sim = Simulation::from_json(&chain(1, "ethernet", &[50], 60.0), 1).unwrap();
    arrival(&mut sim, 2_000_000);
    let h = &sim.counters().hosts[0];
    assert_eq!(h.fast_retransmits, 1);
    assert_eq!(h.timeouts, 0);
    assert_eq!(h.segments_retransmitted, 1);
}

#[test]
fn losing_the_last_segment_costs_exactly_one_rto_min() {
    // 10 segments fit the initial window; the 10th is lost and nothing follows it.
    let bytes = 10 * 1460;
    let mut clean = Simulation::from_json(&chain(1, "ethernet", &[], 60.0), 1).unwrap();
    let t_clean = arrival(&mut clean, bytes);
    let mut sim = Simulation::from_json(&chain(1, "ethernet", &[10], 60.0), 1).unwrap();
    let t = arrival(&mut sim, bytes);
    let h = &sim.counters().hosts[0];
    assert_eq!(h.timeouts, 1);
    assert_eq!(h.fast_retransmits, 0);
    // The timer restarts on the 9th segment's ACK, about one RTT before the
    // clean run's arrival, and fires RTO min = 200 ms later.
    let penalty = t - t_clean;
    assert!(penalty > 199 * MS && penalty < 201 * MS, "penalty {penalty} ns");
}

#[test]
fn repeated_timeouts_double_the_rto_up_to_rto_max() {
    let bytes = 10 * 1460;
    let mut clean = Simulation::from_json(&chain(1, "ethernet", &[], 1.0), 1).unwrap();
    let t_clean = arrival(&mut clean, bytes);
    // The last segment and its next four retransmissions are lost.
    let mut sim = Simulation::from_json(&chain(1, "ethernet", &[10, 11, 12, 13, 14], 1.0), 1).unwrap();
    let t = arrival(&mut sim, bytes);
    assert_eq!(sim.counters().hosts[0].timeouts, 5);
    // 200 + 400 + 800 + 1000 (capped) + 1000 ms, plus one extra RTT per retransmission at most.
    let waits = (200 + 400 + 800 + 1000 + 1000) * MS;
    let penalty = t - t_clean;
    assert!(penalty > waits - MS && penalty < waits + 5 * MS, "penalty {penalty} ns vs {waits}");
    assert!(t < 4 * SEC);
}

#[test]
fn atm_a_dropped_cell_loses_its_whole_packet() {
    // Two senders into one ATM port of 300 cells: 9180-byte packets are 192
    // cells, so bursts overflow mid-packet and the receiver discards the torn packets.
    let t = tcp(0.2, 60.0);
    let json = format!(
        r#"{{"hosts":[{{"name":"h0","mtu":9180,"tcp":{t}}},{{"name":"h1","mtu":9180,"tcp":{t}}},{{"name":"h2","mtu":9180,"tcp":{t}}}],
        "switches":[{{"name":"sw","buffer":{{"size":300,"unit":"cells"}}}}],
        "links":[{{"a":"h0","b":"sw","rate_bps":155.52e6,"framing":"atm"}},{{"a":"h1","b":"sw","rate_bps":155.52e6,"framing":"atm"}},
                 {{"a":"h2","b":"sw","rate_bps":155.52e6,"framing":"atm"}}]}}"#
    );
    let mut sim = Simulation::from_json(&json, 1).unwrap();
    let a = sim.send(0, 2, 2_000_000).unwrap();
    let b = sim.send(1, 2, 2_000_000).unwrap();
    let mut arrived = 0;
    while arrived < 2 {
        let done = sim.run_until_completion(u64::MAX);
        assert!(!done.is_empty());
        arrived += done.iter().filter(|c| (c.op == a || c.op == b) && c.kind == CompletionKind::Arrived).count();
    }
    let c = sim.counters();
    let port = c.ports.iter().find(|p| p.name == "sw->h2").unwrap();
    assert!(port.cell_drops > 0, "the port must overflow");
    // Every packet that lost a cell but got some in was carried and discarded at h2.
    assert!(c.hosts[2].corrupt_discards > 0);
    assert!(c.hosts[2].corrupt_discards <= port.drops);
    let retx = c.hosts[0].segments_retransmitted + c.hosts[1].segments_retransmitted;
    assert!(retx >= port.drops, "each lost packet is sent again");
}

#[test]
fn same_seed_same_run_different_seed_different_run() {
    let json = chain(1, "ethernet", &[], 60.0).replace("\"drop_nth\":[]", "\"loss\":0.001,\"drop_nth\":[]");
    let run = |seed| {
        let mut sim = Simulation::from_json(&json, seed).unwrap();
        let t = arrival(&mut sim, 20_000_000);
        let h = sim.counters().hosts[0].clone();
        (t, h.segments_retransmitted, h.timeouts, sim.events_processed())
    };
    assert_eq!(run(7), run(7));
    assert_ne!(run(7), run(8));
}
