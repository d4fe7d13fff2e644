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
//! Rows. Only nodes that forward need a row: a host linked to one switch or
//! router (its attachment) sends everything through that one port whenever
//! the attachment reaches the destination, so it keeps just the port
//! (`uplink`). Rows are forwarding nodes plus the few hosts that are not so
//! linked (bus members, host-to-host links): on a 16,384-host leaf-spine,
//! 320 rows instead of 16,704.
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
/// `row` of a node that has none (a host that sends through its one uplink).
const NO_ROW: u32 = u32::MAX;

pub struct Routes {
    /// Per destination host: its column in `table`.
    column: Vec<u32>,
    /// Per column: the node its paths lead to (an attachment, or a host of its own).
    source: Vec<u32>,
    /// Per node: its row in `table`, or `NO_ROW`.
    row: Vec<u32>,
    /// Per host without a row: its attachment and the port up to it.
    uplink: Vec<Option<(u32, Iface)>>,
    /// Per destination host: its attachment and the interface from there to the host, when
    /// the host's column is its attachment's.
    last_hop: Vec<Option<(u32, Iface)>>,
    columns: usize,
    /// `row * columns + column` -> index of a group of next hops (or `UNREACHABLE`).
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
        let mut uplink = vec![None; hosts];
        let mut row = vec![NO_ROW; n];
        let mut rows = 0u32;
        for (u, r) in row.iter_mut().enumerate() {
            match adjacent[u].as_slice() {
                [(a, iface @ Iface::Port(_))] if u < hosts && *a as usize >= hosts => uplink[u] = Some((*a, *iface)),
                _ => {
                    *r = rows;
                    rows += 1;
                }
            }
        }
        // Reverse adjacency: who can send to v, and through which interface.
        let mut reverse: Vec<Vec<(u32, Iface)>> = vec![Vec::new(); n];
        for (u, edges) in adjacent.iter().enumerate() {
            for &(v, iface) in edges {
                reverse[v as usize].push((u as u32, iface));
            }
        }
        let mut table = vec![UNREACHABLE; rows as usize * columns];
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
                if u as u32 == src || dist[u] == u32::MAX || row[u] == NO_ROW {
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
                table[row[u] as usize * columns + c] = g;
            }
        }
        Routes { column, source: sources, row, uplink, last_hop, columns, table, start, hops }
    }

    /// The next hops of a node with a row.
    fn group(&self, node: u32, dst: u32) -> &[Iface] {
        let r = self.row[node as usize];
        debug_assert!(r != NO_ROW, "group() of a host without a row");
        let g = self.table[r as usize * self.columns + self.column[dst as usize] as usize];
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
        if let Some(&Some((attach, up))) = self.uplink.get(node as usize) {
            // A host's one port leads on whenever its attachment gets there.
            return if self.reaches(attach, dst) { up } else { Iface::None };
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
        if self.last_hop[dst as usize].is_some_and(|(a, _)| a == node) {
            return true;
        }
        match self.uplink.get(node as usize) {
            Some(&Some((attach, _))) => self.reaches(attach, dst),
            _ => !self.group(node, dst).is_empty(),
        }
    }

    /// Whether every host can reach every other, checked per row and column
    /// (not per host pair: 16,384 hosts would be 268 million pairs).
    /// `None` when so; else the first host (in index order) that misses some.
    pub fn first_host_missing_a_route(&self) -> Option<u32> {
        let mut row_ok: Vec<Option<bool>> = vec![None; self.row.len()];
        let mut full = |node: u32| -> bool {
            *row_ok[node as usize].get_or_insert_with(|| {
                let r = self.row[node as usize] as usize;
                // A column's own node needs no route to itself (its hosts use the last hop).
                (0..self.columns).all(|c| self.source[c] == node || self.table[r * self.columns + c] != UNREACHABLE)
            })
        };
        (0..self.uplink.len() as u32).find(|&h| {
            let node = self.uplink[h as usize].map_or(h, |(attach, _)| attach);
            !full(node)
        })
    }

    /// Bytes the table holds (for the benchmarks' memory accounting).
    pub fn heap_bytes(&self) -> usize {
        self.table.len() * 4
            + self.column.len() * 4
            + self.source.len() * 4
            + self.row.len() * 4
            + self.uplink.len() * std::mem::size_of::<Option<(u32, Iface)>>()
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
