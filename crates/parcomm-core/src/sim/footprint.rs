//! What building a platform will take in memory, estimated from its
//! description before anything is allocated, so that one too large for this
//! machine is refused with the figure (and what makes it up) instead of
//! failing halfway through the build. Flows are not counted: they are made
//! by the run, one per host pair used.

use super::Host;
use crate::net::port::Port;
use crate::spec::PlatformSpec;
use std::collections::HashSet;

/// Estimated bytes of a built platform and the terms that dominate it.
#[derive(Debug, PartialEq, Eq)]
pub struct Footprint {
    pub bytes: u64,
    /// Route table: one row per forwarding node, one column per destination switch.
    pub route_rows: u64,
    pub route_columns: u64,
    pub ports: u64,
}

/// Per named node: its name twice (node list and name index) and the index's entry.
const NAME_OVERHEAD: u64 = 96;
/// Per port while routes are computed: adjacency both ways, distances, queues.
const BUILD_BYTES_PER_PORT: u64 = 64;

pub fn estimate(spec: &PlatformSpec) -> Footprint {
    let hosts: HashSet<&str> = spec.hosts.iter().map(|h| h.name.as_str()).collect();
    // Hosts on exactly one link to a switch or router: no route row of their own,
    // and their attachment is a destination column (routing.rs).
    let mut links_of: std::collections::HashMap<&str, (u32, &str)> = Default::default();
    for l in &spec.links {
        for (me, other) in [(&l.a, &l.b), (&l.b, &l.a)] {
            if hosts.contains(me.as_str()) {
                let e = links_of.entry(me.as_str()).or_insert((0, other.as_str()));
                e.0 += 1;
            }
        }
    }
    let on_segment: HashSet<&str> = spec.segments.iter().flat_map(|s| s.members.iter().map(|m| m.as_str())).collect();
    let mut attachments: HashSet<&str> = HashSet::new();
    let mut own_rows = 0u64;
    for h in &spec.hosts {
        match links_of.get(h.name.as_str()) {
            Some(&(1, other)) if !hosts.contains(other) && !on_segment.contains(h.name.as_str()) => {
                attachments.insert(other);
            }
            _ => own_rows += 1,
        }
    }
    let route_rows = (spec.switches.len() + spec.routers.len()) as u64 + own_rows;
    let route_columns = attachments.len() as u64 + own_rows;
    let ports = 2 * spec.links.len() as u64;
    let nodes = (spec.hosts.len() + spec.switches.len() + spec.routers.len() + spec.segments.len()) as u64;
    let bytes = route_rows * route_columns * 4
        + ports * (std::mem::size_of::<Port>() as u64 + BUILD_BYTES_PER_PORT)
        + spec.hosts.len() as u64 * std::mem::size_of::<Host>() as u64
        + nodes * NAME_OVERHEAD;
    Footprint { bytes, route_rows, route_columns, ports }
}

/// Memory this process may still take, from /proc/meminfo (`None` where unknown).
pub fn available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

/// Refuse a platform whose build would not fit in `available` bytes.
pub fn check_fits(f: &Footprint, available: Option<u64>) -> Result<(), String> {
    match available {
        Some(avail) if f.bytes > avail => Err(format!(
            "platform: building it needs about {:.1} GiB ({} route-table rows x {} destination columns, \
             {} ports), more than the {:.1} GiB of memory available",
            gib(f.bytes),
            f.route_rows,
            f.route_columns,
            f.ports,
            gib(avail)
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `leaves` switches of `per` hosts each, all linked to each of `spines` spines.
    fn leaf_spine(leaves: usize, spines: usize, per: usize) -> PlatformSpec {
        let mut hosts = Vec::new();
        let mut switches = Vec::new();
        let mut links = Vec::new();
        for s in 0..spines {
            switches.push(json!({"name": format!("s{s}"), "buffer": {"size": 100, "unit": "packets"}}));
        }
        for l in 0..leaves {
            switches.push(json!({"name": format!("l{l}"), "buffer": {"size": 100, "unit": "packets"}}));
            for s in 0..spines {
                links.push(json!({"a": format!("l{l}"), "b": format!("s{s}"), "rate_bps": 1e9}));
            }
            for i in 0..per {
                let h = format!("h{}", l * per + i);
                hosts.push(json!({"name": h}));
                links.push(json!({"a": h, "b": format!("l{l}"), "rate_bps": 1e9}));
            }
        }
        let text = json!({"name": "ls", "hosts": hosts, "switches": switches, "links": links}).to_string();
        PlatformSpec::from_json(&text).expect("a valid leaf-spine")
    }

    #[test]
    fn routes_count_forwarding_rows_and_destination_switches() {
        let f = estimate(&leaf_spine(8, 4, 16));
        assert_eq!((f.route_rows, f.route_columns, f.ports), (12, 8, 2 * (8 * 4 + 128)));
        // A bigger fabric costs more, and most of it is not the route table.
        let g = estimate(&leaf_spine(16, 4, 16));
        assert!(g.bytes > f.bytes && g.bytes > 20 * 16 * 4);
    }

    #[test]
    fn a_build_beyond_the_memory_available_is_refused_with_its_size() {
        let f = Footprint { bytes: 3 << 30, route_rows: 5, route_columns: 7, ports: 9 };
        assert_eq!(check_fits(&f, Some(4 << 30)), Ok(()));
        assert_eq!(check_fits(&f, None), Ok(()));
        let err = check_fits(&f, Some(1 << 30)).unwrap_err();
        assert!(
            err.contains("about 3.0 GiB") && err.contains("5 route-table rows x 7") && err.contains("1.0 GiB"),
            "{err}"
        );
    }

    #[test]
    fn this_machine_reports_its_memory() {
        if cfg!(target_os = "linux") {
            assert!(available_bytes().is_some_and(|b| b > 0));
        }
    }
}
