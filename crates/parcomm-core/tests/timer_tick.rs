//! Kernel timers on clock ticks (`tcp.timer_tick_s`): a retransmission timer
//! runs on the first tick of its host's clock at or after its deadline, and
//! each host's ticks have their own phase. Off by default.

use parcomm_core::{CompletionKind, Simulation};

const MS: u64 = 1_000_000;

fn platform(tick_s: Option<f64>) -> String {
    let extra = tick_s.map(|t| format!(r#", "timer_tick_s": {t}"#)).unwrap_or_default();
    let tcp = format!(
        r#"{{"rto_min_s": 0.2, "rto_max_s": 60.0, "rto_initial_s": 3.0, "clock_granularity_s": 0.001,
            "initial_cwnd_segments": 3, "sndbuf_bytes": 65536, "rcvbuf_bytes": 65536,
            "delayed_ack": false, "delayed_ack_timeout_s": 0.05, "dupack_threshold": 3{extra}}}"#
    );
    // The first packet h0 sends is lost: only the retransmission timer recovers it.
    format!(
        r#"{{"hosts":[{{"name":"h0","tcp":{tcp}}},{{"name":"h1","tcp":{tcp}}}],
            "switches":[{{"name":"s0","buffer":{{"size":131072,"unit":"bytes"}}}}],
            "links":[{{"a":"h0","b":"s0","rate_bps":1e9,"drop_nth":[1]}},{{"a":"h1","b":"s0","rate_bps":1e9}}]}}"#
    )
}

fn arrival(text: &str, seed: u64) -> u64 {
    let mut sim = Simulation::from_json(text, seed).unwrap();
    let op = sim.send(0, 1, 1000).unwrap();
    loop {
        let done = sim.run_until_completion(u64::MAX);
        assert!(!done.is_empty(), "ran dry");
        if let Some(c) = done.iter().find(|c| c.op == op && c.kind == CompletionKind::Arrived) {
            return c.time;
        }
    }
}

#[test]
fn off_by_default_and_zero_is_exact() {
    let exact = arrival(&platform(None), 1);
    assert_eq!(exact, arrival(&platform(Some(0.0)), 1));
    // Recovered by the timer: at least one RTO (>= 200 ms) after the send.
    assert!(exact > 200 * MS && exact < 210 * MS, "{exact}");
}

#[test]
fn the_retransmission_waits_for_the_next_tick() {
    let exact = arrival(&platform(None), 1);
    let mut seen = std::collections::BTreeSet::new();
    for seed in 1..=8 {
        let ticked = arrival(&platform(Some(0.01)), seed);
        // Never early, and at most one 10 ms tick late.
        assert!(ticked >= exact && ticked < exact + 10 * MS, "seed {seed}: {ticked} vs {exact}");
        assert_eq!(ticked, arrival(&platform(Some(0.01)), seed), "deterministic for a seed");
        seen.insert(ticked);
    }
    // The phase of a host's clock is drawn per run: different seeds, different ticks.
    assert!(seen.len() > 4, "{seen:?}");
}

#[test]
fn a_negative_tick_is_refused_by_name() {
    let err = Simulation::from_json(&platform(Some(-0.01)), 1).err().expect("must fail");
    assert!(err.contains("tcp.timer_tick_s"), "{err}");
}
