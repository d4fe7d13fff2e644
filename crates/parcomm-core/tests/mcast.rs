//! The multicast simulator against closed forms: exact lossless latency,
//! the single-lossy-hop repair formula, the window, duplicate suppression,
//! determinism, scale, and errors for malformed trees.

use parcomm_core::mcast::{simulate_json, Report};
use parcomm_core::time::tx_time;
use serde_json::{json, Value};

/// A chain source -> r1 -> ... -> receiver; `hops` = (delay_s, loss, rate_bps).
fn chain(hops: &[(f64, f64, f64)], repair: &[bool]) -> Value {
    let n = hops.len();
    let name = |i: usize| match i {
        0 => "src".to_string(),
        i if i == n => "rcv".to_string(),
        i => format!("r{i}"),
    };
    let mut nodes = vec![json!({"name": "src", "kind": "source"})];
    for i in 1..n {
        nodes.push(json!({"name": name(i), "kind": "router", "repair": repair.get(i - 1).copied().unwrap_or(false)}));
    }
    nodes.push(json!({"name": "rcv", "kind": "receiver"}));
    let networks: Vec<Value> = hops
        .iter()
        .enumerate()
        .map(|(i, &(d, l, r))| json!({"name": format!("N{}", i + 1), "parent": name(i), "child": name(i + 1), "delay_s": d, "loss": l, "rate_bps": r}))
        .collect();
    json!({"name": "chain", "source": "src", "packet_bytes": 1000, "nodes": nodes, "networks": networks})
}

fn run(tree: &Value, params: Value) -> Report {
    simulate_json(&tree.to_string(), &params.to_string()).unwrap_or_else(|e| panic!("{e}"))
}

fn ns(s: f64) -> u64 {
    (s * 1e9).round() as u64
}

fn close(got: f64, want: f64, rel: f64, what: &str) {
    assert!((got / want - 1.0).abs() <= rel, "{what}: got {got}, model {want} (tolerance {rel})");
}

#[test]
fn lossless_chain_delay_is_sum_of_delays_and_serializations() {
    let hops = [(1e-3, 0.0, 1e9), (5e-3, 0.0, 100e6), (2e-3, 0.0, 10e6)];
    let expect: u64 = hops.iter().map(|&(d, _, r)| ns(d) + tx_time(1000, r)).sum();
    for repair in ["none", "all"] {
        // 1000 packets/s: slower than the 10 Mbit/s bottleneck (800 us per packet), so nothing queues.
        let r = run(&chain(&hops, &[]), json!({"packets": 200, "rate_pps": 1000, "repair": repair}));
        assert!(r.complete);
        for (s, &d) in r.packet_delay_s.iter().enumerate() {
            assert_eq!(ns(d), expect, "packet {s}, repair {repair}");
        }
        assert_eq!(ns(r.packet_first_tx_s[7]), 7_000_000);
        assert_eq!(ns(r.delay.max_s), expect);
        assert!(r.networks.iter().all(|n| n.data_retransmitted == 0 && n.data_redundant == 0 && n.data_sent == 200));
        assert!(r.buffers.iter().all(|b| b.timeouts == 0));
    }
}

#[test]
fn tree_delay_is_the_slowest_receivers_path() {
    let tree = json!({"source": "s", "packet_bytes": 500,
        "nodes": [{"name": "s", "kind": "source"}, {"name": "r", "kind": "router"},
                  {"name": "a", "kind": "receiver"}, {"name": "b", "kind": "receiver"}],
        "networks": [{"name": "up", "parent": "s", "child": "r", "delay_s": 0.01, "loss": 0.0, "rate_bps": 1e8},
                     {"name": "la", "parent": "r", "child": "a", "delay_s": 0.002, "loss": 0.0, "rate_bps": 1e9},
                     {"name": "lb", "parent": "r", "child": "b", "delay_s": 0.004, "loss": 0.0, "rate_bps": 1e7}]});
    let r = run(&tree, json!({"packets": 50, "rate_pps": 100}));
    let up = ns(0.01) + tx_time(500, 1e8);
    let a = up + ns(0.002) + tx_time(500, 1e9);
    let b = up + ns(0.004) + tx_time(500, 1e7);
    assert_eq!(ns(r.delay.mean_s), b);
    assert_eq!(ns(r.receivers[0].mean_delay_s), a);
    assert_eq!(ns(r.receivers[1].mean_delay_s), b);
}

#[test]
fn window_of_one_sends_once_per_round_trip() {
    let hops = [(1e-3, 0.0, 1e9), (2e-3, 0.0, 1e8)];
    let r = run(&chain(&hops, &[]), json!({"packets": 20, "window": 1, "ack_bytes": 40}));
    let rtt: u64 = hops.iter().map(|&(d, _, rate)| 2 * ns(d) + tx_time(1000, rate) + tx_time(40, rate)).sum();
    for (s, &t) in r.packet_first_tx_s.iter().enumerate() {
        assert_eq!(ns(t), s as u64 * rtt, "packet {s}");
    }
    let b = &r.buffers[0];
    assert_eq!((b.kind.as_str(), b.peak_packets, ns(b.rto_s)), ("source", 1, rtt));
}

/// Expected delay with one lossy network of loss e: the one-way delay, plus
/// e / (1 - e) expected failures, each costing one timeout (= the round trip
/// from the repair point that serves the lossy network).
#[test]
fn one_lossy_hop_matches_the_closed_form() {
    let e = 0.1;
    let hops = [(1e-3, 0.0, 1e9), (3e-3, e, 1e9)];
    let oneway: u64 = hops.iter().map(|&(d, _, r)| ns(d) + tx_time(1000, r)).sum();
    let rtt = |hs: &[(f64, f64, f64)]| -> u64 {
        hs.iter().map(|&(d, _, r)| 2 * ns(d) + tx_time(1000, r) + tx_time(40, r)).sum()
    };
    let failures = e / (1.0 - e);
    let packets = 20_000u64;
    // The tree marks r1 as a repair router; "none" overrides it (Comet RM).
    for (repair, rto) in [("tree", rtt(&hops[1..])), ("none", rtt(&hops))] {
        let r = run(&chain(&hops, &[true]), json!({"packets": packets, "rate_pps": 1000, "repair": repair, "seed": 3}));
        assert!(r.complete, "{repair}");
        let model = (oneway as f64 + failures * rto as f64) * 1e-9;
        close(r.delay.mean_s, model, 0.01, &format!("mean delay, repair {repair}"));
        // Every retransmission crosses the lossy network; with repair at r1, only it.
        let retx = r.networks[1].data_retransmitted as f64;
        close(retx, packets as f64 * failures, 0.05, "retransmissions on N2");
        let upstream = r.networks[0].data_retransmitted;
        if repair == "tree" {
            assert_eq!(upstream, 0);
            // r1 takes custody: the source is done one lossless round trip later.
            assert_eq!(ns(r.release.max_s), rtt(&hops[..1]));
            // Little's law: r1 holds each packet for rto / (1 - e) on average.
            close(r.buffers[1].mean_packets, 1000.0 * rto as f64 * 1e-9 / (1.0 - e), 0.03, "r1 mean buffer");
        } else {
            // No spurious timeouts: each loss on N2 costs exactly one retransmission from the source.
            assert_eq!(upstream, r.networks[1].data_lost);
            assert_eq!(upstream, r.networks[1].data_retransmitted);
            assert_eq!(r.buffers[1].peak_packets, 0, "Comet RM routers buffer nothing");
            // The source learns of delivery after rto / (1 - e) on average.
            close(r.release.mean_s, rto as f64 * 1e-9 / (1.0 - e), 0.01, "release delay");
        }
    }
}

#[test]
fn routers_suppress_retransmissions_to_children_that_have_the_packet() {
    // Two equal branches, one lossy; the source's timeout equals the round
    // trip, so the lossless branch's ACK arrives exactly at the deadline and must count.
    let tree = json!({"source": "s",
        "nodes": [{"name": "s", "kind": "source"}, {"name": "r", "kind": "router"},
                  {"name": "a", "kind": "receiver"}, {"name": "b", "kind": "receiver"}],
        "networks": [{"name": "up", "parent": "s", "child": "r", "delay_s": 0.005, "loss": 0.0, "rate_bps": 1e9},
                     {"name": "la", "parent": "r", "child": "a", "delay_s": 0.002, "loss": 0.0, "rate_bps": 1e9},
                     {"name": "lb", "parent": "r", "child": "b", "delay_s": 0.002, "loss": 0.2, "rate_bps": 1e9}]});
    let r = run(&tree, json!({"packets": 2000, "rate_pps": 500}));
    assert!(r.complete);
    let by = |n: &str| r.networks.iter().find(|x| x.name == n).unwrap().clone();
    assert_eq!(by("la").data_retransmitted, 0);
    assert_eq!(by("la").data_sent, 2000);
    assert!(by("lb").data_retransmitted > 300);
    assert_eq!(by("up").data_retransmitted, by("lb").data_retransmitted, "retransmissions cross 'up' once each");
    assert_eq!(r.receivers[0].duplicates + r.receivers[1].duplicates, 0);
    assert!(r.networks.iter().all(|n| n.data_redundant == 0));
}

#[test]
fn a_timeout_shorter_than_the_round_trip_retransmits_each_packet_once() {
    // Timeout = half the round trip: every packet goes again after rtt/2,
    // uselessly; the copy's own deadline falls exactly when the first ACK
    // returns, which counts, so there is no third copy.
    let hops = [(2e-3, 0.0, 1e9)];
    let r = run(&chain(&hops, &[]), json!({"packets": 100, "rate_pps": 100, "rto_factor": 0.5}));
    let n = &r.networks[0];
    assert_eq!((n.data_sent, n.data_retransmitted, n.data_redundant), (200, 100, 100));
    assert_eq!(r.receivers[0].duplicates, 100);
    let rtt = 2 * ns(2e-3) + tx_time(1000, 1e9) + tx_time(40, 1e9);
    assert_eq!(ns(r.release.mean_s), rtt, "released when the first copy's ACK returns");
}

#[test]
fn ack_loss_is_survived_and_only_costs_duplicates() {
    let hops = [(1e-3, 0.05, 1e9), (2e-3, 0.05, 1e9), (1e-3, 0.05, 1e9)];
    for repair in ["none", "all"] {
        let r = run(
            &chain(&hops, &[]),
            json!({"packets": 2000, "rate_pps": 2000, "ack_loss": true, "seed": 9, "repair": repair}),
        );
        assert!(r.complete, "{repair}");
        assert!(r.networks.iter().any(|n| n.acks_lost > 0));
        assert!(r.buffers.iter().all(|b| b.mean_packets >= 0.0));
    }
}

#[test]
fn same_seed_same_result_different_seed_differs() {
    let hops = [(3e-3, 0.05, 1e9), (30e-3, 0.002, 622e6), (3e-3, 0.05, 1e9)];
    let tree = chain(&hops, &[true]);
    let p = |seed: u64| json!({"packets": 3000, "rate_pps": 5000, "seed": seed, "ack_loss": true});
    let mut a = run(&tree, p(1));
    let mut b = run(&tree, p(1));
    let mut c = run(&tree, p(2));
    a.wall_s = 0.0;
    b.wall_s = 0.0;
    c.wall_s = 0.0;
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
    assert_ne!(a.delay, c.delay);
}

#[test]
fn ten_thousand_receivers_run() {
    // Fan-out 10, four router levels below the source: 10,000 receivers.
    let mut nodes =
        vec![json!({"name": "s", "kind": "source"}), json!({"name": "t", "kind": "router", "repair": true})];
    let mut networks =
        vec![json!({"name": "n-t", "parent": "s", "child": "t", "delay_s": 0.01, "loss": 0.002, "rate_bps": 622e6})];
    let mut level = vec!["t".to_string()];
    for depth in 1..=4 {
        let mut next = vec![];
        for p in &level {
            for i in 0..10 {
                let name = format!("{p}.{i}");
                let kind = if depth == 4 { "receiver" } else { "router" };
                nodes.push(json!({"name": name, "kind": kind, "repair": depth == 3}));
                let loss = if depth == 4 { 0.01 } else { 0.002 };
                networks.push(json!({"name": format!("n-{name}"), "parent": p, "child": name, "delay_s": 0.001, "loss": loss, "rate_bps": 1e9}));
                next.push(name);
            }
        }
        level = next;
    }
    let tree = json!({"source": "s", "nodes": nodes, "networks": networks});
    let r = run(&tree, json!({"packets": 20, "rate_pps": 1000}));
    assert!(r.complete);
    assert_eq!(r.receivers.len(), 10_000);
    assert!(r.receivers.iter().all(|x| x.received == 20));
}

fn error(tree: Value, params: Value) -> String {
    match simulate_json(&tree.to_string(), &params.to_string()) {
        Ok(_) => panic!("accepted a bad input: {tree} {params}"),
        Err(e) => e,
    }
}

#[test]
fn malformed_trees_are_rejected_with_the_field_named() {
    let good = chain(&[(1e-3, 0.0, 1e9), (1e-3, 0.0, 1e9)], &[]);
    let with = |f: &dyn Fn(&mut Value)| {
        let mut t = good.clone();
        f(&mut t);
        t
    };
    let p = json!({});
    let cases: Vec<(Value, &str)> = vec![
        (with(&|t| t["networks"][1]["loss"] = json!(1.0)), "networks[1].loss"),
        (with(&|t| t["networks"][0]["loss"] = json!(-0.1)), "networks[0].loss"),
        (with(&|t| t["networks"][1]["rate_bps"] = json!(0)), "networks[1].rate_bps"),
        (with(&|t| t["networks"][1]["delay_s"] = json!(-1)), "networks[1].delay_s"),
        (with(&|t| t["networks"][1]["child"] = json!("nobody")), "networks[1].child: unknown node 'nobody'"),
        (with(&|t| t["source"] = json!("r1")), "source"),
        (with(&|t| t["nodes"][1]["name"] = json!("src")), "nodes[1].name: duplicate"),
        (with(&|t| t["networks"][1]["name"] = json!("N1")), "networks[1].name: duplicate"),
        (with(&|t| t["nodes"][2]["repair"] = json!(true)), "nodes[2].repair"),
        (
            with(&|t| t["nodes"][1]["kind"] = json!("switch")),
            "nodes[1].kind: expected \"source\", \"router\" or \"receiver\", got \"switch\"",
        ),
        (with(&|t| t["networks"][0]["delay_s"] = json!("3ms")), "networks[0].delay_s: expected a number, got \"3ms\""),
        (with(&|t| t["networks"][0]["los"] = json!(0.1)), "networks[0].los: unknown field"),
        (
            with(&|t| t["networks"][1].as_object_mut().unwrap().remove("rate_bps").map(|_| ()).unwrap()),
            "networks[1].rate_bps: missing field",
        ),
        (
            with(&|t| t["networks"].as_array_mut().unwrap().remove(1).as_null().unwrap_or(())),
            "nodes[1]: router 'r1' has no child network",
        ),
        (
            with(&|t| {
                t["nodes"].as_array_mut().unwrap().push(json!({"name": "lost", "kind": "receiver"}));
            }),
            "receiver 'lost' is unreachable",
        ),
        (
            with(&|t| {
                t["networks"].as_array_mut().unwrap().push(
                    json!({"name": "N3", "parent": "rcv", "child": "r1", "delay_s": 0, "loss": 0, "rate_bps": 1e9}),
                );
            }),
            "networks[2].parent: receiver 'rcv' must be a leaf",
        ),
        (
            with(&|t| {
                t["networks"].as_array_mut().unwrap().push(
                    json!({"name": "N3", "parent": "src", "child": "rcv", "delay_s": 0, "loss": 0, "rate_bps": 1e9}),
                );
            }),
            "networks[2].child: 'rcv' already has a parent",
        ),
    ];
    for (tree, want) in cases {
        let e = error(tree, p.clone());
        assert!(e.contains(want), "expected '{want}' in: {e}");
    }

    // A loop of routers hanging off nothing: every node has a parent, but
    // the walk from the source never reaches them.
    let cyc = json!({"source": "s",
        "nodes": [{"name": "s", "kind": "source"}, {"name": "r", "kind": "router"}, {"name": "x", "kind": "router"},
                  {"name": "y", "kind": "router"}, {"name": "h", "kind": "receiver"}],
        "networks": [{"name": "a", "parent": "s", "child": "r", "delay_s": 0, "loss": 0, "rate_bps": 1e9},
                     {"name": "b", "parent": "r", "child": "h", "delay_s": 0, "loss": 0, "rate_bps": 1e9},
                     {"name": "c", "parent": "x", "child": "y", "delay_s": 0, "loss": 0, "rate_bps": 1e9},
                     {"name": "d", "parent": "y", "child": "x", "delay_s": 0, "loss": 0, "rate_bps": 1e9}]});
    let e = error(cyc, p.clone());
    assert!(e.contains("networks: cycle through") && (e.contains("x -> y -> x") || e.contains("y -> x -> y")), "{e}");

    for (params, want) in [
        (json!({"rate_pps": 1, "rate_bps": 1}), "rate_pps and rate_bps"),
        (json!({"window": 0}), "window"),
        (json!({"rto_factor": 0}), "rto_factor"),
        (json!({"repair": "some"}), "repair: expected \"tree\", \"none\" or \"all\", got \"some\""),
        (json!({"packets": -1}), "packets: expected a non-negative integer, got -1"),
        (json!({"pakets": 5}), "pakets: unknown field"),
        (json!([1]), "top level: expected an object"),
    ] {
        let e = error(good.clone(), params);
        assert!(e.contains(want), "expected '{want}' in: {e}");
    }
}

#[test]
fn absurd_but_valid_inputs_do_not_panic() {
    let tree = chain(&[(1e15, 0.5, 1e-300), (0.0, 0.0, 1e300)], &[true]);
    let r = run(&tree, json!({"packets": 2, "rate_pps": 1e-30, "window": u64::MAX, "rto_factor": 1e300}));
    assert!(r.packets == 2);
    let r = run(&tree, json!({"packets": 3, "time_limit_s": 1e-9, "ack_bytes": u64::MAX}));
    assert!(!r.complete && r.stopped.starts_with("time_limit_s"));
}

#[test]
fn retransmissions_outrunning_a_link_stop_the_run_instead_of_eating_memory() {
    // An unpaced burst, a timeout far below the queueing delay and no
    // backoff: every timeout adds copies to an ever longer queue.
    let tree = chain(&[(1e-4, 0.1, 1e6), (1e-4, 0.1, 1e6)], &[]);
    let r = run(
        &tree,
        json!({"packets": 500, "window": 500, "rto_factor": 0.5, "queue_limit_packets": 2000, "repair": "all"}),
    );
    assert!(!r.complete);
    assert!(r.stopped.starts_with("queue_limit_packets: network 'N1'"), "{}", r.stopped);
    let ok = run(&tree, json!({"packets": 500, "rate_pps": 50, "rto_factor": 1.5}));
    assert!(ok.complete && ok.stopped.is_empty());
}

/// Random trees, losses (data and ACKs), repair flags and windows, paced at
/// under half the slowest network's rate: every receiver gets every packet,
/// and the run is reproducible.
#[test]
fn random_trees_deliver_everything() {
    let mut rng = parcomm_core::rng::Rng::new(11, "random trees");
    for case in 0..60 {
        let mut nodes = vec![json!({"name": "s", "kind": "source"})];
        let mut networks = vec![];
        let mut parents = vec!["s".to_string()];
        let mut leafless = vec!["s".to_string()];
        let rates = [1e7, 1e8, 1e9];
        for i in 0..1 + rng.below(25) {
            let parent = parents[rng.below(parents.len() as u64) as usize].clone();
            leafless.retain(|p| *p != parent);
            let router = rng.uniform() < 0.4;
            let name = format!("x{i}");
            nodes.push(json!({"name": name, "kind": if router { "router" } else { "receiver" }, "repair": router && rng.uniform() < 0.5}));
            let loss = [0.0, 0.01, 0.1, 0.3][rng.below(4) as usize];
            let delay = [0.0, 1e-3, 3e-2][rng.below(3) as usize];
            networks
                .push(json!({"name": format!("n{i}"), "parent": parent, "child": name, "delay_s": delay, "loss": loss,
                                 "rate_bps": rates[rng.below(3) as usize]}));
            if router {
                parents.push(name.clone());
                leafless.push(name);
            }
        }
        for (j, p) in leafless.iter().enumerate() {
            nodes.push(json!({"name": format!("y{j}"), "kind": "receiver"}));
            networks.push(json!({"name": format!("m{j}"), "parent": p, "child": format!("y{j}"), "delay_s": 1e-3, "loss": 0.05, "rate_bps": 1e7}));
        }
        let tree = json!({"source": "s", "nodes": nodes, "networks": networks});
        let packets = 1 + rng.below(200);
        let window = [1, 8, 1024][rng.below(3) as usize];
        let repair = ["tree", "none", "all"][rng.below(3) as usize];
        let params = json!({"packets": packets, "rate_pps": 1e7 / 8192.0 / 2.0, "window": window,
                            "ack_loss": rng.uniform() < 0.5, "repair": repair, "rto_factor": 1.0 + rng.uniform(), "seed": case});
        let r = run(&tree, params.clone());
        assert!(r.complete, "case {case}: {} {params}", r.stopped);
        assert!(r.receivers.iter().all(|x| x.received == packets), "case {case}");
        assert!(r
            .buffers
            .iter()
            .all(|b| b.mean_packets >= 0.0 && (b.repair || b.kind == "source" || b.peak_packets == 0)));
        let mut again = run(&tree, params);
        again.wall_s = r.wall_s;
        assert!(format!("{again:?}") == format!("{r:?}"), "case {case} is not reproducible");
        // NaN != NaN
    }
}
