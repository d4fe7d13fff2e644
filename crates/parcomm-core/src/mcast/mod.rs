//! Packet-level simulation of reliable multicast over a tree: Comet RM and
//! its variants with retransmitting routers (seed 003, Shimokuni et al.).
//!
//! * Comet RM (§2.2): the source multicasts packets down the tree, paced and
//!   held back by an ACK-based sliding window. Routers keep no buffer and no
//!   timers; they remember how far each child has received, forward a packet
//!   only to the children that lack it, and send an ACK for `s` upstream only
//!   once all their children have acknowledged `s`. Only the source
//!   retransmits, when a packet's timer expires (the paper detects loss by
//!   timeout — "(I) タイムアウトによる ACK パケット不到達検出" — there are no NAKs).
//! * Repair routers (§3): a router marked `repair` keeps each packet until
//!   all its children hold it, acknowledges upstream as soon as it holds a
//!   packet, runs its own per-packet timers and retransmits into its subtree.
//!   "All routers" and "a chosen subset" are the tree's repair flags; the
//!   `repair` parameter can override them (`none`, `all`, `tree`).
//!
//! Every repair point (the source included) times each packet it sends: a
//! packet some child still lacks after the timeout goes again to exactly the
//! children lacking it. The default timeout is the lossless round trip to
//! the farthest next repair point or receiver (the model's assumption),
//! times `rto_factor`; there is no backoff. A deadline falls due after every
//! other event of its instant, so an ACK arriving exactly at the deadline
//! counts. Networks are unbounded FIFOs served at their rate, then their
//! one-way delay; losses are independent per packet, from a stream per
//! network direction keyed by the network's name (`mcast:<name>:down|up`).
//! ACKs are lost only with `ack_loss`.
//!
//! Departures from the paper, all where it is silent or sketchy:
//! * ACKs carry the cumulative point *and* the packet they answer (the paper:
//!   cumulative point and window). With cumulative points alone a repair point
//!   cannot tell which packets above a hole arrived, and would resend all of
//!   them on their timeouts. The receiver window is not modelled.
//! * A router whose children all hold a packet answers a copy of it with an
//!   ACK; without that, a lost aggregated ACK would make the source retry
//!   forever.
//! * The source's window counts packets not yet held by all of its children;
//!   below a repair router that is the first repair hop, not the receivers.
//!
//! Observables: per packet, the delay until the last receiver has it and
//! until the source released it; per receiver the mean delay; per buffer
//! (source and routers) peak and time-mean occupancy; per network data
//! sent, retransmitted, lost and redundant (spurious timeouts), ACKs sent and lost.
//!
//! Modules: `tree` and `params` (data in, validated), `timeout` (who
//! repairs, and when it retransmits), `seqset` and `children` (what is held,
//! per node and per child), the sans-IO state machines `source`, `router`,
//! `repair`, `receiver`, the network `link`, the event `driver`, and `stats`
//! (the report).

pub mod children;
pub mod driver;
mod fields;
pub mod link;
pub mod msg;
pub mod params;
pub mod receiver;
pub mod repair;
pub mod router;
pub mod seqset;
pub mod source;
pub mod stats;
pub mod timeout;
pub mod tree;

pub use msg::{Ack, Out};
pub use params::{Params, ParamsSpec, RepairMode};
pub use stats::{BufferStats, DelaySummary, NetworkStats, ReceiverStats, Report};
pub use timeout::{repair_flags, round_trips, timeouts};
pub use tree::{NodeKind, Tree, TreeSpec};

/// Simulate `packets` over a validated tree.
pub fn simulate(tree: &Tree, params: &Params) -> Report {
    driver::Driver::new(tree, params).run()
}

/// Parse and validate a tree and parameters given as JSON, then simulate.
/// Errors name the offending field.
pub fn simulate_json(tree_json: &str, params_json: &str) -> Result<Report, String> {
    let tree = Tree::from_json(tree_json)?;
    let params = Params::from_json(params_json, tree.packet_bytes)?;
    Ok(simulate(&tree, &params))
}
