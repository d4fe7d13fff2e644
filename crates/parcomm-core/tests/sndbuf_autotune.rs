//! Linux-style send-buffer autotuning (`tcp.sndbuf_initial_bytes`), on a
//! whole simulated platform: off by default; on, a large message enters the
//! socket in pieces (its `Sent` comes later) while the buffer grows.

use parcomm_core::{CompletionKind, Simulation};

fn platform(sndbuf_initial: Option<u64>) -> String {
    let extra = sndbuf_initial.map(|b| format!(r#", "sndbuf_initial_bytes": {b}"#)).unwrap_or_default();
    let tcp = format!(
        r#"{{"rto_min_s": 0.2, "rto_max_s": 120.0, "rto_initial_s": 3.0, "clock_granularity_s": 0.001,
            "initial_cwnd_segments": 3, "sndbuf_bytes": 131072, "rcvbuf_bytes": 174760,
            "delayed_ack": true, "delayed_ack_timeout_s": 0.04, "dupack_threshold": 3{extra}}}"#
    );
    format!(
        r#"{{"hosts":[{{"name":"h0","tcp":{tcp}}},{{"name":"h1","tcp":{tcp}}}],
            "switches":[{{"name":"s0","buffer":{{"size":131072,"unit":"bytes"}}}}],
            "links":[{{"a":"h0","b":"s0","rate_bps":1e9}},{{"a":"h1","b":"s0","rate_bps":1e9}}]}}"#
    )
}

/// (Sent time, Arrived time) of one message h0 -> h1.
fn send_one(text: &str, bytes: u64) -> (u64, u64) {
    let mut sim = Simulation::from_json(text, 1).unwrap();
    let op = sim.send(0, 1, bytes).unwrap();
    let (mut sent, mut arrived) = (None, None);
    while arrived.is_none() {
        let done = sim.run_until_completion(u64::MAX);
        assert!(!done.is_empty(), "ran dry");
        for c in done.iter().filter(|c| c.op == op) {
            match c.kind {
                CompletionKind::Sent => sent = Some(c.time),
                CompletionKind::Arrived => arrived = Some(c.time),
                _ => {}
            }
        }
    }
    (sent.unwrap(), arrived.unwrap())
}

#[test]
fn off_by_default_and_explicit_zero_is_the_same() {
    let a = send_one(&platform(None), 100_000);
    let b = send_one(&platform(Some(0)), 100_000);
    assert_eq!(a, b);
    // A message that fits the fixed buffer is `Sent` at once (no network wait).
    assert!(a.0 < 1_000, "sent at {} ns", a.0);
}

#[test]
fn a_message_larger_than_the_initial_buffer_is_sent_in_pieces() {
    let (sent_fixed, arr_fixed) = send_one(&platform(None), 100_000);
    let (sent_auto, arr_auto) = send_one(&platform(Some(16384)), 100_000);
    // With 16 KiB to start, the writer waits for ACKs to free and grow the
    // buffer: its `Sent` comes after several round trips, not at once.
    assert!(sent_auto > 100 * sent_fixed.max(1), "sent {sent_auto} vs {sent_fixed}");
    assert!(sent_auto < arr_auto);
    // The transfer itself is cwnd-limited either way; the buffer must not
    // make it much slower once it has grown.
    assert!(arr_auto >= arr_fixed);
    assert!((arr_auto as f64) < 1.5 * arr_fixed as f64, "{arr_auto} vs {arr_fixed}");
    // Deterministic.
    assert_eq!(send_one(&platform(Some(16384)), 100_000), (sent_auto, arr_auto));
}

#[test]
fn initial_buffer_out_of_range_is_rejected_with_the_field_name() {
    for bad in [100u64, 200_000] {
        let err = Simulation::from_json(&platform(Some(bad)), 1).err().expect("must be rejected");
        assert!(err.contains("hosts.h0.tcp.sndbuf_initial_bytes"), "{err}");
    }
}
