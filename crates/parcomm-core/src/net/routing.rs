//! Static shortest-path routing (fewest hops) with equal-cost multipath,
//! computed once when a platform is built. Hosts never forward; switches and
//! routers do.
//!
//! Size. A host has one interface, so every shortest path to it ends with the
//! hop from the node it hangs off (its attachment). Routes are therefore kept
//! per destination *attachment* -- a switch or router with hosts on its ports
//! -- plus one last hop per host: nodes x attachments entries instead of
//! nodes x hosts (a 4,096-host star: 4,097 entries, not 16.8 million). A host
//! on a shared segment keeps a column of its own (the last hop names its
//! station), as does a host linked straight to another host.
//!
//! Multipath. Where several neighbours are one hop closer to the destination,
//! a node picks one per flow by hashing (source, destination, stream) with a
//! salt of its own, as ECMP switches do (RFC 2992). The salt differs per node
//! so that consecutive tiers do not make the same choice (hash polarization:
//! with one hash everywhere, an aggregation switch reached by the flows that
//! hashed to uplink i would again send them all up its uplink i). Where the
//! shortest path is unique -- every tree, so every built-in platform before
//! fat-trees -- a group has one member and routing is what it always was.

use crate::net::packet::Packet;
use std::collections::{HashMap, VecDeque};

/// How a node reaches a neighbour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Iface {
    None,
    Port(u32),
    /// Through station `station` of bus `bus`, to the member at station `to`.
    Bus {
        bus: u32,
        station: u32,
        to: u32,
    },
}

const UNREACHABLE: u32 = u32::MAX;

pub struct Routes {
    /// Per destination host: its column in `table`.
    column: Vec<u32>,
    /// Per destination host: its attachment and the interface from there to the host, when
    /// the host's column is its attachment's.
    last_hop: Vec<Option<(u32, Iface)>>,
    columns: usize,
    /// `node * columns + column` -> index of a group of next hops (or `UNREACHABLE`).
    table: Vec<u32>,
    /// Group `g` is `hops[start[g]..start[g + 1]]`; identical groups are stored once.
    start: Vec<u32>,
    hops: Vec<Iface>,
}

/// A 64-bit finalizer (splitmix64's): every input bit moves every output bit.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Routes {
    /// `adjacent[n]` lists (neighbour, interface from n to it); nodes 0..hosts are hosts.
    pub fn compute(adjacent: &[Vec<(u32, Iface)>], hosts: usize) -> Routes {
        let n = adjacent.len();
        // Columns: one per attachment node, one per host that has no switch or router of its own.
        let mut column = vec![0u32; hosts];
        let mut last_hop = vec![None; hosts];
        let mut sources: Vec<u32> = Vec::new(); // BFS source of each column
        let mut column_of_node: HashMap<u32, u32> = HashMap::new();
        for h in 0..hosts {
            let attach = match adjacent[h].first() {
                Some(&(peer, Iface::Port(_))) if peer as usize >= hosts => Some(peer),
                _ => None,
            };
            match attach {
                Some(a) => {
                    let back = adjacent[a as usize].iter().find(|&&(v, _)| v as usize == h).map(|&(_, i)| i);
                    last_hop[h] = back.map(|i| (a, i));
                    column[h] = *column_of_node.entry(a).or_insert_with(|| {
                        sources.push(a);
                        sources.len() as u32 - 1
                    });
                }
                None => {
                    sources.push(h as u32);
                    column[h] = sources.len() as u32 - 1;
                }
            }
        }
        let columns = sources.len();
        // Reverse adjacency: who can send to v, and through which interface.
        let mut reverse: Vec<Vec<(u32, Iface)>> = vec![Vec::new(); n];
        for (u, edges) in adjacent.iter().enumerate() {
            for &(v, iface) in edges {
                reverse[v as usize].push((u as u32, iface));
            }
        }
        let mut table = vec![UNREACHABLE; n * columns];
        let mut groups: HashMap<Vec<Iface>, u32> = HashMap::new();
        let (mut start, mut hops) = (vec![0u32], Vec::new());
        let mut dist = vec![u32::MAX; n];
        let mut frontier = VecDeque::new();
        let mut group = Vec::new();
        for (c, &src) in sources.iter().enumerate() {
            dist.iter_mut().for_each(|d| *d = u32::MAX);
            dist[src as usize] = 0;
            frontier.clear();
            frontier.push_back(src);
            while let Some(v) = frontier.pop_front() {
                // Only the column's own host may end a path; other hosts are leaves.
                if (v as usize) < hosts && v != src {
                    continue;
                }
                for &(u, _) in &reverse[v as usize] {
                    if dist[u as usize] == u32::MAX {
                        dist[u as usize] = dist[v as usize] + 1;
                        frontier.push_back(u);
                    }
                }
            }
            for u in 0..n {
                if u as u32 == src || dist[u] == u32::MAX {
                    continue;
                }
                group.clear();
                for &(v, iface) in &adjacent[u] {
                    let forwards = v as usize >= hosts || v == src;
                    if forwards && dist[v as usize] + 1 == dist[u] && !group.contains(&iface) {
                        group.push(iface);
                    }
                }
                let next = start.len() as u32 - 1;
                let g = *groups.entry(group.clone()).or_insert_with(|| {
                    hops.extend_from_slice(&group);
                    start.push(hops.len() as u32);
                    next
                });
                table[u * columns + c] = g;
            }
        }
        Routes { column, last_hop, columns, table, start, hops }
    }

    fn group(&self, node: u32, dst: u32) -> &[Iface] {
        let g = self.table[node as usize * self.columns + self.column[dst as usize] as usize];
        if g == UNREACHABLE {
            return &[];
        }
        &self.hops[self.start[g as usize] as usize..self.start[g as usize + 1] as usize]
    }

    /// The interface `node` forwards `pkt` on (`Iface::None`: it cannot reach `pkt.dst`).
    pub fn next(&self, node: u32, pkt: &Packet) -> Iface {
        self.next_hop(node, pkt.src, pkt.dst, pkt.stream)
    }

    /// The interface `node` forwards a packet of flow (`src`, `dst`, `stream`) on.
    pub fn next_hop(&self, node: u32, src: u32, dst: u32, stream: u32) -> Iface {
        if let Some((attach, iface)) = self.last_hop[dst as usize] {
            if attach == node {
                return iface;
            }
        }
        match self.group(node, dst) {
            [] => Iface::None,
            [only] => *only,
            many => {
                let flow = mix((((src as u64) << 32) | dst as u64) ^ mix(stream as u64));
                let h = mix(flow ^ mix(0x9e37_79b9_7f4a_7c15 ^ node as u64));
                many[(((h >> 32) * many.len() as u64) >> 32) as usize]
            }
        }
    }

    /// Whether `node` has a route to host `dst`.
    pub fn reaches(&self, node: u32, dst: u32) -> bool {
        self.last_hop[dst as usize].is_some_and(|(a, _)| a == node) || !self.group(node, dst).is_empty()
    }

    /// Bytes the table holds (for the benchmarks' memory accounting).
    pub fn heap_bytes(&self) -> usize {
        self.table.len() * 4
            + self.column.len() * 4
            + self.last_hop.len() * std::mem::size_of::<Option<(u32, Iface)>>()
            + self.start.len() * 4
            + self.hops.len() * std::mem::size_of::<Iface>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two hosts joined by two switches in parallel: h0 - {s2, s3} - h1.
    fn diamond() -> Vec<Vec<(u32, Iface)>> {
        // nodes: 0 h0, 1 h1, 2 s_left, 3 s_a, 4 s_b, 5 s_right
        let p = Iface::Port;
        vec![
            vec![(2, p(0))],
            vec![(5, p(1))],
            vec![(0, p(2)), (3, p(3)), (4, p(4))],
            vec![(2, p(5)), (5, p(6))],
            vec![(2, p(7)), (5, p(8))],
            vec![(1, p(9)), (3, p(10)), (4, p(11))],
        ]
    }

    #[test]
    fn equal_cost_neighbours_form_one_group_and_flows_spread_over_it() {
        let r = Routes::compute(&diamond(), 2);
        assert_eq!(r.group(2, 1), &[Iface::Port(3), Iface::Port(4)]);
        assert_eq!(r.next_hop(5, 0, 1, 0), Iface::Port(9)); // the last hop, by attachment
        let mut counts = [0u32; 2];
        for stream in 0..10_000 {
            match r.next_hop(2, 0, 1, stream) {
                Iface::Port(3) => counts[0] += 1,
                Iface::Port(4) => counts[1] += 1,
                other => panic!("{other:?}"),
            }
        }
        assert!(counts.iter().all(|&c| (4_700..=5_300).contains(&c)), "{counts:?}");
        // one flow, one path
        assert_eq!(r.next_hop(2, 0, 1, 7), r.next_hop(2, 0, 1, 7));
    }

    #[test]
    fn columns_grow_with_attachments_not_hosts() {
        // a star: hosts 0..100 on switch 100
        let hosts = 100;
        let mut adj: Vec<Vec<(u32, Iface)>> = (0..hosts).map(|h| vec![(hosts as u32, Iface::Port(h as u32))]).collect();
        adj.push((0..hosts).map(|h| (h as u32, Iface::Port((hosts + h) as u32))).collect());
        let r = Routes::compute(&adj, hosts);
        assert_eq!(r.columns, 1);
        for s in 0..hosts as u32 {
            for d in 0..hosts as u32 {
                if s != d {
                    assert_eq!(r.next_hop(s, s, d, 0), Iface::Port(s));
                    assert_eq!(r.next_hop(hosts as u32, s, d, 0), Iface::Port(hosts as u32 + d));
                }
            }
        }
    }
}
