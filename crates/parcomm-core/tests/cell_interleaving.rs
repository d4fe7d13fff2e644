//! Cell interleaving at an ATM switch (`SwitchSpec.cell_interleaving`): a
//! synchronized burst of frames corrupts nearly every frame instead of
//! admitting a few whole ones, a frame lost on the wire still ends its
//! arrival, and runs are deterministic.

use parcomm_core::time::MS;
use parcomm_core::{CompletionKind, Simulation};

/// 149.76 Mbit/s of cells: one 192-cell frame (9140 bytes of TCP payload,
/// 9180-byte IP packet) takes ceil(192*53*8 / 149.76e6 s) = 543,590 ns.
const OC3_CELLS_BPS: f64 = 149.76e6;
const SEGMENT: u64 = 9140;

/// `n` hosts h0.. on one ATM switch of 2048 cells per port, no software
/// overheads, Linux TCP defaults (RTO min 200 ms, initial 1 s), MTU 9180.
fn atm(n: usize, interleave: bool, drop_nth_h1: &str) -> String {
    let hosts: Vec<String> = (0..n).map(|i| format!(r#"{{"name":"h{i}","mtu":9180}}"#)).collect();
    let links: Vec<String> = (0..n)
        .map(|i| {
            let drop = if i == 1 { drop_nth_h1 } else { "[]" };
            format!(r#"{{"a":"h{i}","b":"sw","rate_bps":{OC3_CELLS_BPS},"framing":"atm","drop_nth":{drop}}}"#)
        })
        .collect();
    format!(
        r#"{{"hosts":[{}],"switches":[{{"name":"sw","buffer":{{"size":2048,"unit":"cells"}},"cell_interleaving":{interleave}}}],"links":[{}]}}"#,
        hosts.join(","),
        links.join(",")
    )
}

fn port<'a>(c: &'a parcomm_core::sim::Counters, name: &str) -> &'a parcomm_core::sim::PortCounters {
    c.ports.iter().find(|p| p.name == name).unwrap()
}

/// Hosts 1..n each send one 192-cell frame to h0 at t = 0; the counters
/// after 100 ms (before any retransmission timeout).
fn one_frame_each(n: usize, interleave: bool) -> parcomm_core::sim::Counters {
    let mut sim = Simulation::from_json(&atm(n, interleave, "[]"), 0).unwrap();
    for i in 1..n as u32 {
        sim.send(i, 0, SEGMENT).unwrap();
    }
    sim.run_until(100 * MS);
    sim.counters()
}

#[test]
fn store_and_forward_admits_ten_whole_frames_of_a_burst() {
    // 32 frames arrive whole at one instant: 10 fit (1920 cells), the 11th
    // gets the last 128 cells, the other 21 are refused.
    let c = one_frame_each(33, false);
    let p = port(&c, "sw->h0");
    assert_eq!((p.drops, p.cell_drops), (22, 64 + 21 * 192));
    assert_eq!(c.hosts[0].corrupt_discards, 1);
}

#[test]
fn cell_interleaving_corrupts_every_frame_of_a_burst() {
    // 32 frames of 192 cells, each at the link's cell rate, into 2048 cells
    // drained at that rate: in one frame time 32*192 cells come, 192 leave,
    // so 31*192 - 2048 = 3904 overflow, 122 from every frame.
    let c = one_frame_each(33, true);
    let p = port(&c, "sw->h0");
    assert_eq!((p.drops, p.cell_drops), (32, 32 * 122));
    assert_eq!(p.max_occupancy, 2048);
    // Every frame reached h0 truncated and failed its AAL5 check.
    assert_eq!(c.hosts[0].corrupt_discards, 32);
}

#[test]
fn cells_leaving_while_a_burst_arrives_make_room() {
    // 11 frames: whole at one instant they need 2112 cells, so store-and-
    // forward truncates one by 64; interleaved, 192 cells leave while they
    // arrive and 10*192 = 1920 fit.
    let c = one_frame_each(12, false);
    assert_eq!((port(&c, "sw->h0").drops, port(&c, "sw->h0").cell_drops), (1, 64));
    let c = one_frame_each(12, true);
    assert_eq!((port(&c, "sw->h0").drops, port(&c, "sw->h0").cell_drops), (0, 0));
    assert_eq!(c.hosts[0].corrupt_discards, 0);
}

/// h1 sends `bytes` to h0; returns (arrival time, counters).
fn one_stream(interleave: bool, drop_nth: &str, bytes: u64) -> (u64, parcomm_core::sim::Counters) {
    let mut sim = Simulation::from_json(&atm(3, interleave, drop_nth), 0).unwrap();
    sim.send(1, 0, bytes).unwrap();
    loop {
        let done = sim.run_until_completion(u64::MAX);
        assert!(!done.is_empty(), "the simulation ran dry");
        if let Some(c) = done.iter().find(|c| c.kind == CompletionKind::Arrived) {
            return (c.time, sim.counters());
        }
    }
}

#[test]
fn a_frame_lost_on_the_wire_ends_its_arrival() {
    // The first frame from h1 is lost on the wire. Had its arrival at the
    // switch never ended, its cells would keep flowing in at the link rate,
    // the port would stay full and every later frame would lose cells.
    let bytes = 20 * SEGMENT;
    let (t, c) = one_stream(true, "[1]", bytes);
    let p = port(&c, "sw->h0");
    assert_eq!(c.ports.iter().map(|p| p.wire_losses).sum::<u64>(), 1);
    assert_eq!((p.drops, p.cell_drops), (0, 0));
    assert!(p.max_occupancy <= 192, "max occupancy {}", p.max_occupancy);
    // A single stream fits the port, so it times exactly like store-and-forward.
    let (t_sf, c_sf) = one_stream(false, "[1]", bytes);
    assert_eq!(t, t_sf);
    assert_eq!(c.hosts[1].bytes_sent, c_sf.hosts[1].bytes_sent);
}

#[test]
fn interleaving_is_deterministic() {
    let run = || {
        let mut sim = Simulation::from_json(&atm(20, true, "[]"), 7).unwrap();
        for i in 1..20 {
            sim.send(i, 0, 4 * SEGMENT).unwrap();
        }
        sim.run_until(5000 * MS);
        let c = sim.counters();
        let ports: Vec<_> =
            c.ports.iter().map(|p| (p.drops, p.cell_drops, p.max_occupancy, p.mean_occupancy.to_bits())).collect();
        (c.events, ports)
    };
    assert_eq!(run(), run());
}

#[test]
fn interleaving_needs_a_cell_buffer_and_no_flow_control() {
    let bytes = atm(2, true, "[]").replace(r#""unit":"cells""#, r#""unit":"bytes""#).replace("2048", "20000");
    let e = Simulation::from_json(&bytes, 0).err().unwrap();
    assert!(e.contains("switches.sw.cell_interleaving"), "{e}");
    let fc = atm(2, true, "[]").replace(r#""cell_interleaving""#, r#""flow_control":true,"cell_interleaving""#);
    let e = Simulation::from_json(&fc, 0).err().unwrap();
    assert!(e.contains("switches.sw.cell_interleaving"), "{e}");
}
