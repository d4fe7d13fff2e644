//! The parts of platform validation that are not per-field rules in `spec.rs`:
//! reading JSON with the failing field named (type errors included), upper
//! bounds on every quantity, the wiring rules (one interface per host, every
//! host reaches every other), and the schema summary Python reads its
//! defaults and limits from. `spec.rs` stays the single definition of the
//! fields; this module is the single definition of what is acceptable.

use crate::spec::{
    BufferUnit, Framing, HostSpec, LinkSpec, PlatformSpec, RouterSpec, SegmentSpec, SpecError, SwitchSpec, TcpSpec,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// Hosts in one platform: a k = 64 fat-tree has 65,536, so two of them fit. The real bound
/// is memory, checked from the description's size before the build (`sim::footprint`); this
/// one keeps a typo from reaching it (the Python builders make a dict per host first).
pub const MAX_HOSTS: usize = 1 << 17;
/// Switches, routers or segments (each): a k = 64 fat-tree has 5,120 switches. (Hosts on
/// segments each have a route row and column of their own, so their count is what costs.)
pub const MAX_ELEMENTS: usize = 1 << 13;
/// Links: a full mesh of the largest element counts is never needed; a tree of hosts and
/// switches needs one link per element (a k = 64 fat-tree: 196,608 links).
pub const MAX_LINKS: usize = MAX_HOSTS + 4 * MAX_ELEMENTS;
/// IP MTU: an IPv4 datagram is at most 65,535 bytes; Linux's loopback uses 65,536.
pub const MAX_MTU: u64 = 65536;
/// Interface queue: Linux's txqueuelen is 1000 and 10 GbE drivers suggest 10,000 packets.
pub const MAX_NIC_QUEUE_PACKETS: u64 = 1 << 20;
/// Initial window (RFC 6928: 10) and duplicate-ACK threshold (Linux caps reordering at 300):
/// 65,535 segments is already a window beyond any socket buffer below.
pub const MAX_SEGMENTS: u64 = 65535;
/// Socket buffers: TCP's window stops at 1 GiB (RFC 7323 window scale 14), Linux's at 2 GiB.
pub const MAX_SOCKET_BUFFER_BYTES: u64 = 1 << 32;
/// Port buffers: real ones hold MBs to a few GBs; 1 TiB, or 2^32 packets or cells.
pub const MAX_PORT_BUFFER_BYTES: u64 = 1 << 40;
pub const MAX_PORT_BUFFER_UNITS: u64 = 1 << 32;
/// Fault-injection drop lists: a million dropped packets is more than any run sends by hand.
pub const MAX_DROP_NTH: usize = 1 << 20;
/// Packet numbers: integers a double holds exactly (2^53), as everywhere in the user interface.
pub const MAX_WHOLE: u64 = 1 << 53;
/// Names appear in messages, counters and tables: one printable line of reasonable length.
pub const MAX_NAME_CHARS: usize = 256;
/// Durations: 10^9 s (32 years) is beyond any simulated run; the clock is u64 nanoseconds.
pub const MAX_DURATION_S: f64 = 1e9;
/// Rates (bit/s, packets/s): 1 Pbit/s is beyond any link or router built.
pub const MAX_RATE: f64 = 1e15;

/// Parse and validate a platform; every error starts with the field path
/// (`hosts.h3.tcp.rto_min_s`, `links[2].rate_bps`), type errors included.
pub fn parse(text: &str) -> Result<PlatformSpec, SpecError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let spec: PlatformSpec = match serde_path_to_error::deserialize(&mut de) {
        Ok(spec) => spec,
        Err(e) => {
            let path = named_path(e.path(), text);
            let inner = e.into_inner();
            // A syntax error inside a field (a number beyond f64) still has its path.
            let known = !path.is_empty() && path != ".";
            if (inner.is_syntax() || inner.is_eof()) && !known {
                return Err(format!("platform: not valid JSON: {inner}"));
            }
            let msg = shorten(&strip_position(&inner.to_string()));
            return Err(if known { format!("{path}: {msg}") } else { format!("platform: {msg}") });
        }
    };
    de.end().map_err(|e| format!("platform: not valid JSON: {e}"))?;
    spec.validate()?;
    Ok(spec)
}

/// serde quotes the offending value whole; keep a message one readable line (its head, which
/// shows the value, and its tail, which says what was expected).
fn shorten(msg: &str) -> String {
    const HEAD: usize = 120;
    const TAIL: usize = 60;
    let chars: Vec<char> = msg.chars().collect();
    if chars.len() <= HEAD + TAIL + 20 {
        return msg.to_string();
    }
    let head: String = chars[..HEAD].iter().collect();
    let tail: String = chars[chars.len() - TAIL..].iter().collect();
    format!("{head} ... ({} characters) ... {tail}", chars.len())
}

/// serde_json appends " at line L column C" to data errors; the path says more.
fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

/// The serde path with top-level elements named as `PlatformSpec::validate`
/// names them (`hosts[3]` becomes `hosts.h3`; links keep their index).
fn named_path(path: &serde_path_to_error::Path, text: &str) -> String {
    use serde_path_to_error::Segment;
    let names: Option<Names> = serde_json::from_str(text).ok();
    let mut out = String::new();
    let mut top_key: Option<&str> = None;
    for (depth, seg) in path.iter().enumerate() {
        match seg {
            Segment::Map { key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
                if depth == 0 {
                    top_key = Some(key.as_str());
                }
            }
            Segment::Seq { index } => {
                let name = match (depth, top_key, &names) {
                    (1, Some(k), Some(d)) => d.of(k, *index),
                    _ => None,
                };
                match name {
                    Some(n) => {
                        out.push('.');
                        out.push_str(&n);
                    }
                    None => out.push_str(&format!("[{index}]")),
                }
            }
            Segment::Enum { variant } => {
                out.push('.');
                out.push_str(variant);
            }
            Segment::Unknown => out.push_str(".?"),
        }
    }
    out
}

/// Only the element names of a platform; everything else is skipped unparsed, so that the
/// names are found even when the error is a number no f64 holds.
#[derive(Default, Deserialize)]
#[serde(default)]
struct Names {
    hosts: Vec<Named>,
    switches: Vec<Named>,
    segments: Vec<Named>,
    routers: Vec<Named>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct Named {
    name: Option<Value>,
}

impl Names {
    fn of(&self, kind: &str, index: usize) -> Option<String> {
        let list = match kind {
            "hosts" => &self.hosts,
            "switches" => &self.switches,
            "segments" => &self.segments,
            "routers" => &self.routers,
            _ => return None,
        };
        let n = list.get(index)?.name.as_ref()?.as_str()?;
        name_ok(n).then(|| n.to_string())
    }
}

fn name_ok(n: &str) -> bool {
    !n.is_empty() && n.chars().count() <= MAX_NAME_CHARS && !n.chars().any(char::is_control)
}

fn at_most_u64(v: u64, hi: u64, field: &str) -> Result<(), SpecError> {
    if v > hi {
        return Err(format!("{field} must be at most {hi}, got {v}"));
    }
    Ok(())
}

fn at_most_f64(v: f64, hi: f64, field: &str) -> Result<(), SpecError> {
    if v > hi {
        return Err(format!("{field} must be at most {hi:e}, got {v}"));
    }
    Ok(())
}

fn count(kind: &str, n: usize, hi: usize) -> Result<(), SpecError> {
    if n > hi {
        return Err(format!("{kind}: {n} of them, more than the limit of {hi}"));
    }
    Ok(())
}

fn name(field: &str, n: &str) -> Result<(), SpecError> {
    let chars = n.chars().count();
    if chars > MAX_NAME_CHARS {
        return Err(format!("{field} is {chars} characters long, more than {MAX_NAME_CHARS}"));
    }
    if n.chars().any(char::is_control) {
        return Err(format!("{field} {n:?} has control characters"));
    }
    Ok(())
}

/// Upper bounds: the core takes any u64 or f64, these keep absurd values (a
/// typo, a unit mix-up, a hostile file) out of its arithmetic and memory.
pub fn check_limits(p: &PlatformSpec) -> Result<(), SpecError> {
    name("name", &p.name)?;
    count("hosts", p.hosts.len(), MAX_HOSTS)?;
    count("switches", p.switches.len(), MAX_ELEMENTS)?;
    count("segments", p.segments.len(), MAX_ELEMENTS)?;
    count("routers", p.routers.len(), MAX_ELEMENTS)?;
    count("links", p.links.len(), MAX_LINKS)?;
    for (i, h) in p.hosts.iter().enumerate() {
        name(&format!("hosts[{i}].name"), &h.name)?;
        host_limits(h)?;
    }
    for (i, s) in p.switches.iter().enumerate() {
        name(&format!("switches[{i}].name"), &s.name)?;
        let f = |x: &str| format!("switches.{}.{x}", s.name);
        buffer_limit(s.buffer.size, s.buffer.unit, &f("buffer.size"))?;
        if let Some(t) = s.epd_threshold_cells {
            at_most_u64(t, MAX_PORT_BUFFER_UNITS, &f("epd_threshold_cells"))?;
        }
        at_most_f64(s.latency_s, MAX_DURATION_S, &f("latency_s"))?;
    }
    for (i, r) in p.routers.iter().enumerate() {
        name(&format!("routers[{i}].name"), &r.name)?;
        let f = |x: &str| format!("routers.{}.{x}", r.name);
        at_most_f64(r.forward_pps, MAX_RATE, &f("forward_pps"))?;
        at_most_f64(r.backplane_bps, MAX_RATE, &f("backplane_bps"))?;
        buffer_limit(r.buffer.size, r.buffer.unit, &f("buffer.size"))?;
    }
    for (i, l) in p.links.iter().enumerate() {
        let f = |x: &str| format!("links[{i}].{x}");
        name(&f("a"), &l.a)?;
        name(&f("b"), &l.b)?;
        at_most_f64(l.rate_bps, MAX_RATE, &f("rate_bps"))?;
        at_most_f64(l.propagation_s, MAX_DURATION_S, &f("propagation_s"))?;
        at_most_f64(l.jitter_s, MAX_DURATION_S, &f("jitter_s"))?;
        if l.drop_nth.len() > MAX_DROP_NTH {
            return Err(format!("{} lists {} packets, more than {MAX_DROP_NTH}", f("drop_nth"), l.drop_nth.len()));
        }
        if let Some(&k) = l.drop_nth.iter().find(|&&k| k > MAX_WHOLE) {
            return Err(format!("{} must hold packet numbers of at most {MAX_WHOLE}, got {k}", f("drop_nth")));
        }
    }
    for (i, s) in p.segments.iter().enumerate() {
        name(&format!("segments[{i}].name"), &s.name)?;
        let f = |x: &str| format!("segments.{}.{x}", s.name);
        at_most_f64(s.rate_bps, MAX_RATE, &f("rate_bps"))?;
        at_most_f64(s.propagation_s, MAX_DURATION_S, &f("propagation_s"))?;
        count(&f("members"), s.members.len(), MAX_HOSTS + MAX_ELEMENTS)?;
        for m in &s.members {
            name(&f("members: a member"), m)?;
        }
    }
    Ok(())
}

fn buffer_limit(size: u64, unit: BufferUnit, field: &str) -> Result<(), SpecError> {
    let hi = if unit == BufferUnit::Bytes { MAX_PORT_BUFFER_BYTES } else { MAX_PORT_BUFFER_UNITS };
    at_most_u64(size, hi, field)
}

fn host_limits(h: &HostSpec) -> Result<(), SpecError> {
    let f = |x: &str| format!("hosts.{}.{x}", h.name);
    at_most_u64(h.mtu, MAX_MTU, &f("mtu"))?;
    at_most_u64(h.nic_queue_packets, MAX_NIC_QUEUE_PACKETS, &f("nic_queue_packets"))?;
    for (o, n) in [(&h.send_overhead, "send_overhead"), (&h.recv_overhead, "recv_overhead")] {
        at_most_f64(o.fixed_s, MAX_DURATION_S, &f(&format!("{n}.fixed_s")))?;
        at_most_f64(o.per_byte_s, MAX_DURATION_S, &f(&format!("{n}.per_byte_s")))?;
        at_most_f64(o.jitter_s, MAX_DURATION_S, &f(&format!("{n}.jitter_s")))?;
    }
    at_most_f64(h.timing_noise_s, MAX_DURATION_S, &f("timing_noise_s"))?;
    let t = &h.tcp;
    for (v, n) in [
        (t.rto_min_s, "rto_min_s"),
        (t.rto_max_s, "rto_max_s"),
        (t.rto_initial_s, "rto_initial_s"),
        (t.clock_granularity_s, "clock_granularity_s"),
        (t.delayed_ack_timeout_s, "delayed_ack_timeout_s"),
        (t.timer_tick_s, "timer_tick_s"),
    ] {
        at_most_f64(v, MAX_DURATION_S, &f(&format!("tcp.{n}")))?;
    }
    at_most_u64(t.initial_cwnd_segments, MAX_SEGMENTS, &f("tcp.initial_cwnd_segments"))?;
    at_most_u64(t.dupack_threshold, MAX_SEGMENTS, &f("tcp.dupack_threshold"))?;
    at_most_u64(t.sndbuf_bytes, MAX_SOCKET_BUFFER_BYTES, &f("tcp.sndbuf_bytes"))?;
    at_most_u64(t.rcvbuf_bytes, MAX_SOCKET_BUFFER_BYTES, &f("tcp.rcvbuf_bytes"))?;
    at_most_u64(t.sndbuf_initial_bytes, MAX_SOCKET_BUFFER_BYTES, &f("tcp.sndbuf_initial_bytes"))?;
    Ok(())
}

/// A host has one network interface (a link or a segment), and every host
/// reaches every other. The simulator builder relies on both.
pub fn check_wiring(p: &PlatformSpec) -> Result<(), SpecError> {
    let mut index: HashMap<&str, usize> = HashMap::new();
    let node_names = p
        .hosts
        .iter()
        .map(|h| &h.name)
        .chain(p.switches.iter().map(|s| &s.name))
        .chain(p.segments.iter().map(|s| &s.name))
        .chain(p.routers.iter().map(|r| &r.name));
    for (i, n) in node_names.enumerate() {
        index.insert(n.as_str(), i);
    }
    let mut leader: Vec<usize> = (0..index.len()).collect();
    fn find(leader: &mut [usize], mut n: usize) -> usize {
        while leader[n] != n {
            leader[n] = leader[leader[n]]; // path halving keeps this near linear
            n = leader[n];
        }
        n
    }
    let mut join = |a: usize, b: usize| {
        let (ra, rb) = (find(&mut leader, a), find(&mut leader, b));
        leader[ra] = rb;
    };
    let mut interfaces = vec![0usize; p.hosts.len()];
    for l in &p.links {
        let (a, b) = (index[l.a.as_str()], index[l.b.as_str()]);
        for end in [a, b] {
            if end < p.hosts.len() {
                interfaces[end] += 1;
            }
        }
        join(a, b);
    }
    for s in &p.segments {
        let seg = index[s.name.as_str()];
        for m in &s.members {
            let m = index[m.as_str()];
            if m < p.hosts.len() {
                interfaces[m] += 1;
            }
            join(m, seg);
        }
    }
    for (h, &n) in p.hosts.iter().zip(&interfaces) {
        if n > 1 {
            return Err(format!("hosts.{}: a host has one network interface, this one has {n}", h.name));
        }
        if n == 0 && p.hosts.len() > 1 {
            return Err(format!("hosts.{}: not connected to any link or segment", h.name));
        }
    }
    let root = find(&mut leader, 0);
    for (i, h) in p.hosts.iter().enumerate().skip(1) {
        if find(&mut leader, i) != root {
            return Err(format!("hosts.{}: no route from host '{}' to host '{}'", h.name, p.hosts[0].name, h.name));
        }
    }
    Ok(())
}

/// Fields of `T` that may be omitted (they have a serde default): those
/// without which `sample` still deserializes.
fn optional_fields<T: Serialize + DeserializeOwned>(sample: &T) -> Vec<String> {
    let Value::Object(full) = serde_json::to_value(sample).expect("spec structs serialize") else {
        return Vec::new();
    };
    full.keys()
        .filter(|k| {
            let mut less: Map<String, Value> = full.clone();
            less.remove(*k);
            serde_json::from_value::<T>(Value::Object(less)).is_ok()
        })
        .cloned()
        .collect()
}

fn minimal<T: DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("minimal spec element deserializes")
}

/// The schema summary Python builds its element helpers from: each element
/// kind with every field, at its serde default where it has one (required
/// fields hold a placeholder), which fields are optional, and the limits above.
pub fn schema_json() -> String {
    let tcp = TcpSpec::default();
    let host: HostSpec = minimal(json!({"name": "h"}));
    let switch: SwitchSpec = minimal(json!({"name": "s", "buffer": {"size": 1, "unit": "packets"}}));
    let link: LinkSpec = minimal(json!({"a": "a", "b": "b", "rate_bps": 1.0}));
    let segment: SegmentSpec = minimal(json!({"name": "g", "rate_bps": 1.0, "members": []}));
    let router: RouterSpec = minimal(
        json!({"name": "r", "forward_pps": 1.0, "backplane_bps": 1.0, "buffer": {"size": 1, "unit": "packets"}}),
    );
    let platform: PlatformSpec = minimal(json!({"hosts": []}));
    /// Typed, so that fields keep their declaration order (a `Value` map sorts them).
    #[derive(Serialize)]
    struct Defaults {
        platform: PlatformSpec,
        tcp: TcpSpec,
        host: HostSpec,
        switch: SwitchSpec,
        link: LinkSpec,
        segment: SegmentSpec,
        router: RouterSpec,
    }
    #[derive(Serialize)]
    struct Schema {
        defaults: Defaults,
        optional: Value,
        enums: Value,
        limits: Value,
    }
    let optional = json!({
        "tcp": optional_fields(&tcp),
        "host": optional_fields(&host),
        "switch": optional_fields(&switch),
        "link": optional_fields(&link),
    });
    let enums = json!({
        "framing": [Framing::Ethernet, Framing::Atm, Framing::Raw],
        "buffer_unit": [BufferUnit::Bytes, BufferUnit::Packets, BufferUnit::Cells],
    });
    let limits = json!({
        "hosts": MAX_HOSTS, "elements": MAX_ELEMENTS, "links": MAX_LINKS, "mtu": MAX_MTU,
        "nic_queue_packets": MAX_NIC_QUEUE_PACKETS, "segments": MAX_SEGMENTS,
        "socket_buffer_bytes": MAX_SOCKET_BUFFER_BYTES, "port_buffer_bytes": MAX_PORT_BUFFER_BYTES,
        "port_buffer_units": MAX_PORT_BUFFER_UNITS, "drop_nth": MAX_DROP_NTH, "whole": MAX_WHOLE,
        "name_chars": MAX_NAME_CHARS, "duration_s": MAX_DURATION_S, "rate": MAX_RATE,
    });
    let defaults = Defaults { platform, tcp, host, switch, link, segment, router };
    serde_json::to_string(&Schema { defaults, optional, enums, limits }).expect("schema serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn star2() -> Value {
        json!({"hosts": [{"name": "h0"}, {"name": "h1"}], "switches": [{"name": "sw", "buffer": {"size": 100, "unit": "packets"}}],
               "links": [{"a": "h0", "b": "sw", "rate_bps": 1e9}, {"a": "h1", "b": "sw", "rate_bps": 1e9}]})
    }

    fn err(v: Value) -> String {
        parse(&v.to_string()).unwrap_err()
    }

    #[test]
    fn type_errors_name_the_field_by_element_name() {
        let mut p = star2();
        p["hosts"][1]["tcp"] = json!({"dupack_threshold": 1e21});
        assert!(err(p).starts_with("hosts.h1.tcp.dupack_threshold: invalid type: floating point"));
        let mut p = star2();
        p["hosts"][1]["mtu"] = json!(1.5e21);
        let e = err(p);
        assert!(e.starts_with("hosts.h1.mtu: invalid type: floating point"), "{e}");
        let mut p = star2();
        p["links"][1]["rate_bps"] = json!("x");
        assert!(err(p).starts_with("links[1].rate_bps: invalid type: string"));
        let mut p = star2();
        p["hosts"][0]["send_overhead"] = json!("10us");
        assert!(err(p).starts_with("hosts.h0.send_overhead: invalid type: string"));
        // A number no f64 holds is a JSON syntax error, still named by its element.
        let text = star2().to_string().replace("\"name\":\"h1\"", "\"name\":\"h1\",\"mtu\":1e400");
        let e = parse(&text).unwrap_err();
        assert!(e.starts_with("hosts.h1.mtu: number out of range"), "{e}");
    }

    #[test]
    fn long_values_are_cut_in_messages() {
        let mut p = star2();
        p["hosts"][0]["mtu"] = json!("x".repeat(100_000));
        let e = err(p);
        assert!(e.starts_with("hosts.h0.mtu: invalid type: string \"xxx") && e.ends_with("expected u64"), "{e}");
        assert!(e.len() < 400, "{e}");
    }

    #[test]
    fn limits_and_wiring() {
        let mut p = star2();
        p["hosts"][0]["mtu"] = json!(70000);
        assert!(err(p).starts_with("hosts.h0.mtu must be at most 65536"));
        let mut p = star2();
        p["links"] = json!([{"a": "h0", "b": "sw", "rate_bps": 1e9}]);
        assert_eq!(err(p), "hosts.h1: not connected to any link or segment");
        assert!(parse(&star2().to_string()).is_ok());
    }

    #[test]
    fn schema_summary_lists_optional_fields() {
        let s: Value = serde_json::from_str(&schema_json()).unwrap();
        let tcp_opt = s["optional"]["tcp"].as_array().unwrap();
        assert!(tcp_opt.contains(&json!("sack")) && !tcp_opt.contains(&json!("rto_min_s")));
        assert_eq!(s["defaults"]["host"]["mtu"], json!(1500));
    }
}
