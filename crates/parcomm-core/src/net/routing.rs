//! Static shortest-path routing (fewest hops), computed once when a platform
//! is built. Hosts never forward; switches and routers do.

use std::collections::VecDeque;

/// How a node reaches a neighbour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Iface {
    None,
    Port(u32),
    /// Through station `station` of bus `bus`, to the member at station `to`.
    Bus { bus: u32, station: u32, to: u32 },
}

pub struct Routes {
    hosts: usize,
    table: Vec<Iface>,
}

impl Routes {
    /// `adjacent[n]` lists (neighbour, interface from n to it); nodes 0..hosts are hosts.
    pub fn compute(adjacent: &[Vec<(u32, Iface)>], hosts: usize) -> Routes {
        let n = adjacent.len();
        let mut table = vec![Iface::None; n * hosts];
        // Reverse adjacency: who can send to v, and through which interface.
        let mut reverse: Vec<Vec<(u32, Iface)>> = vec![Vec::new(); n];
        for (u, edges) in adjacent.iter().enumerate() {
            for &(v, iface) in edges {
                reverse[v as usize].push((u as u32, iface));
            }
        }
        let mut seen = vec![false; n];
        let mut frontier = VecDeque::new();
        for dst in 0..hosts {
            seen.iter_mut().for_each(|s| *s = false);
            seen[dst] = true;
            frontier.clear();
            frontier.push_back(dst as u32);
            while let Some(v) = frontier.pop_front() {
                // Only the destination itself among hosts may be a path's end;
                // other hosts are leaves and never forward.
                if (v as usize) < hosts && v as usize != dst {
                    continue;
                }
                for &(u, iface) in &reverse[v as usize] {
                    if !seen[u as usize] {
                        seen[u as usize] = true;
                        table[u as usize * hosts + dst] = iface;
                        frontier.push_back(u);
                    }
                }
            }
        }
        Routes { hosts, table }
    }

    pub fn next(&self, node: u32, dst_host: u32) -> Iface {
        self.table[node as usize * self.hosts + dst_host as usize]
    }
}
