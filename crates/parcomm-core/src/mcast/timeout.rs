//! Who repairs, and the timeout rule: a repair point's retransmission timeout
//! is `rto_factor` x the lossless round trip (data down, ACK back, both
//! serialized; routers add no delay) to its farthest next repair point or
//! receiver — the round trip the paper's model charges per loss (§4).

use super::params::{Params, RepairMode};
use super::tree::{NodeKind, Tree};
use crate::time::{tx_time, Time};

/// Which routers repair once the `repair` override is applied.
pub fn repair_flags(tree: &Tree, mode: RepairMode) -> Vec<bool> {
    tree.nodes
        .iter()
        .map(|n| {
            n.kind == NodeKind::Router
                && match mode {
                    RepairMode::Tree => n.repair,
                    RepairMode::None => false,
                    RepairMode::All => true,
                }
        })
        .collect()
}

/// Per node: the lossless round trip (data down, ACK back, both serialized)
/// to its farthest next repair router or receiver.
pub fn round_trips(tree: &Tree, repair: &[bool], ack_bytes: u64) -> Vec<Time> {
    let mut below = vec![0; tree.nodes.len()];
    for &n in tree.order.iter().rev() {
        let mut rtt = 0;
        for &c in &tree.nodes[n as usize].children {
            let net = &tree.networks[c as usize];
            // Saturating: absurd inputs (years of delay) give a huge timeout, not a panic.
            let hop = (net.delay.saturating_mul(2))
                .saturating_add(tx_time(tree.packet_bytes, net.rate_bps))
                .saturating_add(tx_time(ack_bytes, net.rate_bps));
            let child = net.child as usize;
            let stop = tree.nodes[child].kind == NodeKind::Receiver || repair[child];
            rtt = rtt.max(hop.saturating_add(if stop { 0 } else { below[child] }));
        }
        below[n as usize] = rtt;
    }
    below
}

/// The timeout of every node (meaningful for repair points only).
pub fn timeouts(tree: &Tree, repair: &[bool], p: &Params) -> Vec<Time> {
    round_trips(tree, repair, p.ack_bytes)
        .into_iter()
        .map(|rtt| p.rto.unwrap_or_else(|| (p.rto_factor * rtt as f64).round() as Time))
        .collect()
}
