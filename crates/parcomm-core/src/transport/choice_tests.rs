//! The named strategy choices on whole platforms: every combination that
//! cannot work is refused naming both fields, the named form runs exactly as
//! its legacy booleans did, and a controller plugs in by its registry line.

use crate::sim::{CompletionKind, Simulation};
use serde_json::{json, Value};

/// Four senders into h0 through a 32 KiB switch port (incast: losses, fast
/// recoveries and timeouts), every host with the same `tcp` table.
fn incast(tcp: &Value) -> Value {
    let hosts: Vec<Value> = (0..5).map(|i| json!({"name": format!("h{i}"), "tcp": tcp})).collect();
    let links: Vec<Value> = (0..5).map(|i| json!({"a": format!("h{i}"), "b": "sw", "rate_bps": 1e8})).collect();
    json!({"hosts": hosts, "switches": [{"name": "sw", "buffer": {"size": 32768, "unit": "bytes"}}], "links": links})
}

fn tcp(fields: Value) -> Value {
    let mut t = serde_json::to_value(crate::spec::TcpSpec::default()).unwrap();
    for (k, v) in fields.as_object().unwrap() {
        t[k] = v.clone();
    }
    t
}

fn refused(fields: Value) -> String {
    Simulation::from_json(&incast(&tcp(fields)).to_string(), 1).err().expect("refused")
}

/// (end time, events, per host (segments sent, retransmitted, timeouts, recoveries, probes)).
type Run = (u64, u64, Vec<(u64, u64, u64, u64, u64)>);

fn run(fields: Value) -> Run {
    let mut sim = Simulation::from_json(&incast(&tcp(fields)).to_string(), 1).unwrap();
    for i in 1..5 {
        sim.send(i, 0, 300_000).unwrap();
    }
    let mut arrived = 0;
    while arrived < 4 {
        let done = sim.run_until_completion(u64::MAX);
        assert!(!done.is_empty(), "the simulation ran dry");
        arrived += done.iter().filter(|c| c.kind == CompletionKind::Arrived).count();
    }
    let counters = sim.counters();
    let hosts = counters
        .hosts
        .iter()
        .map(|h| (h.segments_sent, h.segments_retransmitted, h.timeouts, h.fast_retransmits, h.tail_loss_probes));
    (sim.now(), sim.events_processed(), hosts.collect())
}

#[test]
fn combinations_that_cannot_work_are_refused_naming_both_fields() {
    let cases = [
        (json!({"hystart": true}), ["hosts.h0.tcp.hystart", "tcp.cubic"]),
        (json!({"hystart": true, "congestion_control": "reno"}), ["tcp.hystart", "tcp.congestion_control"]),
        (json!({"prr": true}), ["hosts.h0.tcp.prr", "tcp.sack"]),
        (json!({"recovery_rate": "prr", "loss_detection": "dupack"}), ["tcp.recovery_rate", "tcp.loss_detection"]),
        (json!({"recovery_rate": "prr", "sack": false}), ["tcp.recovery_rate", "tcp.sack"]),
        (json!({"rack": true}), ["tcp.rack", "tcp.sack"]),
        (json!({"loss_detection": "dupack", "sack": true}), ["tcp.sack", "tcp.loss_detection"]),
        (json!({"loss_detection": "sack", "rack": true, "sack": true}), ["tcp.rack", "tcp.loss_detection"]),
        (json!({"congestion_control": "reno", "cubic": true}), ["tcp.cubic", "tcp.congestion_control"]),
        (json!({"recovery_rate": "rfc6675", "prr": true, "sack": true}), ["tcp.prr", "tcp.recovery_rate"]),
        (json!({"rto_rules": "rfc6298", "linux_rto": true}), ["tcp.linux_rto", "tcp.rto_rules"]),
    ];
    for (fields, names) in cases {
        let e = refused(fields.clone());
        assert!(e.starts_with("hosts.h0.tcp."), "{fields}: {e}");
        assert!(names.iter().all(|n| e.contains(n)), "{fields}: {e} should name {names:?}");
        assert!(!e.contains('\n') && e.len() < 200, "{e}");
    }
    // Each side as the user wrote it: the named field with its value, or the legacy boolean.
    assert_eq!(
        refused(json!({"hystart": true})),
        r#"hosts.h0.tcp.hystart is CUBIC's option, but tcp.cubic = false (set tcp.congestion_control = "cubic")"#
    );
    assert_eq!(
        refused(json!({"recovery_rate": "prr", "loss_detection": "dupack"})),
        r#"hosts.h0.tcp.recovery_rate = "prr" paces SACK recovery, but tcp.loss_detection = "dupack" (set tcp.loss_detection = "sack" or "rack")"#
    );
    let e = refused(json!({"congestion_control": "bbr"}));
    assert!(e.contains("tcp.congestion_control: unknown \"bbr\" (known: reno, cubic"), "{e}");
    // Whatever the value holds, the message is one line.
    let e = refused(json!({"congestion_control": "a\nb\u{1}"}));
    assert!(e.ends_with(r#"tcp.congestion_control: unknown "a\nb\u{1}" (known: reno, cubic, toy)"#), "{e}");
    let e = refused(json!({"recovery_rate": "x\ny"}));
    assert!(!e.contains('\n') && e.contains(r"unknown variant `x\ny`"), "{e}");
    let e = refused(json!({"loss_detection": "fack"}));
    assert!(e.starts_with("hosts.h0.tcp.loss_detection: unknown variant `fack`"), "{e}");
}

#[test]
fn the_named_form_runs_exactly_as_its_legacy_booleans() {
    let pairs = [
        (
            json!({}),
            json!({"congestion_control": "reno", "loss_detection": "dupack", "recovery_rate": "rfc6675", "rto_rules": "rfc6298"}),
        ),
        (json!({"sack": true}), json!({"loss_detection": "sack"})),
        (
            json!({"sack": true, "rack": true, "prr": true, "linux_rto": true, "tail_loss_probe": true, "timestamps": true, "frto": true}),
            json!({"loss_detection": "rack", "recovery_rate": "prr", "rto_rules": "linux", "tail_loss_probe": true, "timestamps": true, "frto": true}),
        ),
        (
            json!({"cubic": true, "hystart": true, "sack": true, "linux_rto": true}),
            json!({"congestion_control": "cubic", "hystart": true, "loss_detection": "sack", "rto_rules": "linux"}),
        ),
    ];
    for (legacy, named) in pairs {
        let (a, b) = (run(legacy.clone()), run(named));
        assert_eq!(a, b, "{legacy}");
        assert!(a.2.iter().any(|h| h.1 > 0), "{legacy}: the incast should lose segments");
    }
    // Both spellings of one choice together are fine when they agree.
    assert_eq!(run(json!({"cubic": true})), run(json!({"cubic": true, "congestion_control": "cubic"})));
}

#[test]
fn a_controller_plugs_in_by_its_file_and_registry_line_alone() {
    // `congestion/toy.rs` and its line in `congestion::REGISTRY` (test builds
    // only) are all there is of it: the platform check and the factory find it.
    let toy = run(json!({"congestion_control": "toy", "sack": true}));
    let reno = run(json!({"congestion_control": "reno", "sack": true}));
    assert_ne!(toy, reno, "the toy's fixed window is not Reno's");
    assert!(toy.2.iter().skip(1).all(|h| h.0 >= 300_000 / 1460), "every sender delivered");
}
