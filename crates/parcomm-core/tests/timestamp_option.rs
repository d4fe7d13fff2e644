//! RFC 7323 timestamps on the wire (`tcp.timestamps`): when both ends enable
//! them, every segment carries 12 more header bytes and 12 fewer payload
//! bytes (1448 of a 1500-byte MTU, as Linux's mss_cache), so a bulk transfer
//! needs more packets, each the same size on the wire.

use parcomm_core::{CompletionKind, Simulation};

fn platform(ts_h0: bool, ts_h1: bool) -> String {
    let tcp = |ts: bool| {
        format!(
            r#"{{"rto_min_s": 0.2, "rto_max_s": 60.0, "rto_initial_s": 1.0, "clock_granularity_s": 0.001,
                "initial_cwnd_segments": 10, "sndbuf_bytes": 4194304, "rcvbuf_bytes": 4194304,
                "delayed_ack": false, "delayed_ack_timeout_s": 0.04, "dupack_threshold": 3, "timestamps": {ts}}}"#
        )
    };
    format!(
        r#"{{"hosts":[{{"name":"h0","tcp":{}}},{{"name":"h1","tcp":{}}}],
            "switches":[{{"name":"s0","buffer":{{"size":4194304,"unit":"bytes"}}}}],
            "links":[{{"a":"h0","b":"s0","rate_bps":1e8}},{{"a":"h1","b":"s0","rate_bps":1e8}}]}}"#,
        tcp(ts_h0),
        tcp(ts_h1)
    )
}

/// Arrival time of `bytes` from h0 at h1, and h0's data segments sent.
fn bulk(text: &str, bytes: u64) -> (u64, u64) {
    let mut sim = Simulation::from_json(text, 1).unwrap();
    let op = sim.send(0, 1, bytes).unwrap();
    loop {
        let done = sim.run_until_completion(u64::MAX);
        assert!(!done.is_empty(), "ran dry");
        if let Some(c) = done.iter().find(|c| c.op == op && c.kind == CompletionKind::Arrived) {
            return (c.time, sim.counters().hosts[0].segments_sent);
        }
    }
}

#[test]
fn timestamps_take_twelve_bytes_of_every_segment() {
    let bytes = 1448 * 1460; // a whole number of segments either way
    let (plain, n_plain) = bulk(&platform(false, false), bytes);
    let (ts, n_ts) = bulk(&platform(true, true), bytes);
    assert_eq!(n_plain, 1448);
    assert_eq!(n_ts, 1460);
    // Same wire size per full segment, 12 more segments: longer by their share.
    let ratio = ts as f64 / plain as f64;
    assert!((ratio - 1460.0 / 1448.0).abs() < 0.002, "{ratio}");
}

#[test]
fn timestamps_need_both_ends() {
    let bytes = 1448 * 1460;
    let (_, one_sided) = bulk(&platform(true, false), bytes);
    assert_eq!(one_sided, 1448, "not negotiated: no option, full payload");
}
