//! The multicast tree as data: parsed from JSON (the format shared with
//! `parcomm.apps.mcast.tree`), validated, and indexed for the simulator.
//!
//! ```json
//! {"name": "t", "source": "s", "packet_bytes": 1024,
//!  "nodes": [{"name": "s", "kind": "source"},
//!            {"name": "r1", "kind": "router", "repair": true},
//!            {"name": "h1", "kind": "receiver"}],
//!  "networks": [{"name": "N1", "parent": "s", "child": "r1", "delay_s": 0.003, "loss": 0.0, "rate_bps": 1e9},
//!               {"name": "N2", "parent": "r1", "child": "h1", "delay_s": 0.003, "loss": 0.05, "rate_bps": 1e9}]}
//! ```
//!
//! Networks join a parent to a child and form a tree rooted at the source;
//! receivers are leaves. Every error names the offending field; nothing here
//! panics.

use super::fields::{parse, Obj};
use crate::time::{from_secs, Time};
use serde_json::Value;
use std::collections::HashMap;

/// The tree as given (unvalidated).
#[derive(Debug, Clone)]
pub struct TreeSpec {
    pub name: String,
    /// Name of the node the packets start from.
    pub source: String,
    /// Size of every data packet on the wire (bytes); default 1024.
    pub packet_bytes: u64,
    pub nodes: Vec<NodeSpec>,
    pub networks: Vec<NetworkSpec>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    Source,
    Router,
    Receiver,
}

impl NodeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeKind::Source => "source",
            NodeKind::Router => "router",
            NodeKind::Receiver => "receiver",
        }
    }
}

#[derive(Debug, Clone)]
pub struct NodeSpec {
    pub name: String,
    pub kind: NodeKind,
    /// Routers only: buffer packets and retransmit them to the subtree.
    pub repair: bool,
}

#[derive(Debug, Clone)]
pub struct NetworkSpec {
    pub name: String,
    pub parent: String,
    pub child: String,
    /// One-way propagation delay (s), the same in both directions.
    pub delay_s: f64,
    /// Probability that a packet is lost crossing the network, independently per packet.
    pub loss: f64,
    /// Serialization rate (bits/s), the same in both directions.
    pub rate_bps: f64,
}

/// A validated node. `children` are network indices; a child's position in
/// this list is its `slot` (how its parent addresses it).
#[derive(Debug, Clone)]
pub struct Node {
    pub name: String,
    pub kind: NodeKind,
    pub repair: bool,
    pub parent_net: Option<u32>,
    pub children: Vec<u32>,
}

#[derive(Debug, Clone)]
pub struct Network {
    pub name: String,
    pub parent: u32,
    pub child: u32,
    /// Position of this network in `nodes[parent].children`.
    pub slot: u32,
    pub delay: Time,
    pub loss: f64,
    pub rate_bps: f64,
}

/// A validated, indexed tree.
#[derive(Debug, Clone)]
pub struct Tree {
    pub name: String,
    pub packet_bytes: u64,
    pub source: u32,
    pub nodes: Vec<Node>,
    pub networks: Vec<Network>,
    /// Node indices, parents before children (breadth first from the source).
    pub order: Vec<u32>,
}

fn finite_at_least(v: f64, min: f64, strict: bool, field: &str) -> Result<(), String> {
    let ok = v.is_finite() && if strict { v > min } else { v >= min };
    if ok {
        Ok(())
    } else if strict {
        Err(format!("{field} must be a finite number > {min}, got {v}"))
    } else {
        Err(format!("{field} must be a finite number >= {min}, got {v}"))
    }
}

impl TreeSpec {
    /// Read a tree from parsed JSON; errors name the field.
    pub fn from_value(v: &Value) -> Result<TreeSpec, String> {
        let o = Obj::new(v, "")?;
        o.only(&["name", "source", "packet_bytes", "nodes", "networks"])?;
        let mut nodes = Vec::new();
        for (i, n) in o.list("nodes")?.iter().enumerate() {
            let n = Obj::new(n, &format!("nodes[{i}]"))?;
            n.only(&["name", "kind", "repair"])?;
            let kind = match n.str("kind")? {
                "source" => NodeKind::Source,
                "router" => NodeKind::Router,
                "receiver" => NodeKind::Receiver,
                k => {
                    return Err(format!(
                        "{}: expected \"source\", \"router\" or \"receiver\", got \"{k}\"",
                        n.field("kind")
                    ))
                }
            };
            nodes.push(NodeSpec {
                name: n.str("name")?.to_string(),
                kind,
                repair: n.opt_bool("repair")?.unwrap_or(false),
            });
        }
        let mut networks = Vec::new();
        for (i, l) in o.list("networks")?.iter().enumerate() {
            let l = Obj::new(l, &format!("networks[{i}]"))?;
            l.only(&["name", "parent", "child", "delay_s", "loss", "rate_bps"])?;
            networks.push(NetworkSpec {
                name: l.str("name")?.to_string(),
                parent: l.str("parent")?.to_string(),
                child: l.str("child")?.to_string(),
                delay_s: l.f64("delay_s")?,
                loss: l.f64("loss")?,
                rate_bps: l.f64("rate_bps")?,
            });
        }
        Ok(TreeSpec {
            name: o.opt_str("name")?.unwrap_or("").to_string(),
            source: o.str("source")?.to_string(),
            packet_bytes: o.opt_u64("packet_bytes")?.unwrap_or(1024),
            nodes,
            networks,
        })
    }
}

impl Tree {
    pub fn from_json(text: &str) -> Result<Tree, String> {
        Tree::from_spec(&TreeSpec::from_value(&parse(text, "tree")?)?)
    }

    /// The tree of `spec`, checked: every error names the entry and field.
    pub fn from_spec(spec: &TreeSpec) -> Result<Tree, String> {
        if spec.packet_bytes == 0 {
            return Err("packet_bytes must be at least 1".into());
        }
        if spec.nodes.is_empty() {
            return Err("nodes: a tree needs a source and at least one receiver".into());
        }
        let (index, mut nodes) = Self::spec_nodes(spec)?;
        let source = Self::spec_source(spec, &index, &nodes)?;
        let networks = Self::spec_networks(spec, &index, &mut nodes, source)?;
        Self::check_shape(&nodes, source)?;
        let order = Self::preorder(&nodes, &networks, source)?;
        Ok(Tree { name: spec.name.clone(), packet_bytes: spec.packet_bytes, source, nodes, networks, order })
    }

    /// The nodes, each name once, only routers repairing.
    fn spec_nodes(spec: &TreeSpec) -> Result<(HashMap<&str, u32>, Vec<Node>), String> {
        let mut index: HashMap<&str, u32> = HashMap::new();
        let mut nodes = Vec::with_capacity(spec.nodes.len());
        for (i, n) in spec.nodes.iter().enumerate() {
            if n.name.is_empty() {
                return Err(format!("nodes[{i}].name: empty name"));
            }
            if index.insert(n.name.as_str(), i as u32).is_some() {
                return Err(format!("nodes[{i}].name: duplicate node name '{}'", n.name));
            }
            if n.repair && n.kind != NodeKind::Router {
                return Err(format!("nodes[{i}].repair: only routers repair; '{}' is a {}", n.name, n.kind.as_str()));
            }
            nodes.push(Node {
                name: n.name.clone(),
                kind: n.kind,
                repair: n.repair,
                parent_net: None,
                children: Vec::new(),
            });
        }
        Ok((index, nodes))
    }

    /// The one source, named by `spec.source`, and at least one receiver.
    fn spec_source(spec: &TreeSpec, index: &HashMap<&str, u32>, nodes: &[Node]) -> Result<u32, String> {
        let source =
            *index.get(spec.source.as_str()).ok_or_else(|| format!("source: unknown node '{}'", spec.source))?;
        if nodes[source as usize].kind != NodeKind::Source {
            return Err(format!(
                "source: node '{}' has kind \"{}\", expected \"source\"",
                spec.source,
                nodes[source as usize].kind.as_str()
            ));
        }
        if let Some((i, n)) =
            spec.nodes.iter().enumerate().find(|(i, n)| n.kind == NodeKind::Source && *i as u32 != source)
        {
            return Err(format!(
                "nodes[{i}].kind: a second source '{}' (the tree's source is '{}')",
                n.name, spec.source
            ));
        }
        if !nodes.iter().any(|n| n.kind == NodeKind::Receiver) {
            return Err("nodes: a tree needs at least one receiver".into());
        }
        Ok(source)
    }

    /// The networks, each joining a parent to a child that has no other parent.
    fn spec_networks(
        spec: &TreeSpec,
        index: &HashMap<&str, u32>,
        nodes: &mut [Node],
        source: u32,
    ) -> Result<Vec<Network>, String> {
        let mut net_names: HashMap<&str, usize> = HashMap::new();
        let mut networks = Vec::with_capacity(spec.networks.len());
        for (i, l) in spec.networks.iter().enumerate() {
            let f = |x: &str| format!("networks[{i}].{x}");
            if l.name.is_empty() {
                return Err(format!("{}: empty name", f("name")));
            }
            if net_names.insert(l.name.as_str(), i).is_some() {
                return Err(format!("{}: duplicate network name '{}'", f("name"), l.name));
            }
            let parent =
                *index.get(l.parent.as_str()).ok_or_else(|| format!("{}: unknown node '{}'", f("parent"), l.parent))?;
            let child =
                *index.get(l.child.as_str()).ok_or_else(|| format!("{}: unknown node '{}'", f("child"), l.child))?;
            if parent == child {
                return Err(format!("{}: network '{}' joins '{}' to itself", f("child"), l.name, l.child));
            }
            if nodes[parent as usize].kind == NodeKind::Receiver {
                return Err(format!("{}: receiver '{}' must be a leaf (network '{}')", f("parent"), l.parent, l.name));
            }
            if child == source {
                return Err(format!(
                    "{}: the source '{}' cannot be a child (network '{}')",
                    f("child"),
                    l.child,
                    l.name
                ));
            }
            if let Some(prev) = nodes[child as usize].parent_net {
                return Err(format!(
                    "{}: '{}' already has a parent through networks[{prev}] ('{}'); a tree gives each node one parent",
                    f("child"),
                    l.child,
                    spec.networks[prev as usize].name
                ));
            }
            finite_at_least(l.delay_s, 0.0, false, &f("delay_s"))?;
            if !(0.0..1.0).contains(&l.loss) {
                return Err(format!("{} must be in [0, 1), got {} (network '{}')", f("loss"), l.loss, l.name));
            }
            finite_at_least(l.rate_bps, 0.0, true, &f("rate_bps"))?;
            let slot = nodes[parent as usize].children.len() as u32;
            nodes[parent as usize].children.push(i as u32);
            nodes[child as usize].parent_net = Some(i as u32);
            networks.push(Network {
                name: l.name.clone(),
                parent,
                child,
                slot,
                delay: from_secs(l.delay_s),
                loss: l.loss,
                rate_bps: l.rate_bps,
            });
        }
        Ok(networks)
    }

    /// Every node but the source reachable from a parent; only receivers are leaves.
    fn check_shape(nodes: &[Node], source: u32) -> Result<(), String> {
        for (i, n) in nodes.iter().enumerate() {
            if i as u32 != source && n.parent_net.is_none() {
                return Err(format!(
                    "nodes[{i}]: {} '{}' is unreachable: no network has it as child",
                    n.kind.as_str(),
                    n.name
                ));
            }
            if n.kind != NodeKind::Receiver && n.children.is_empty() {
                return Err(format!("nodes[{i}]: {} '{}' has no child network", n.kind.as_str(), n.name));
            }
        }
        Ok(())
    }

    /// The nodes from the source down, or the cycle that keeps some from being reached.
    fn preorder(nodes: &[Node], networks: &[Network], source: u32) -> Result<Vec<u32>, String> {
        // Every node but the source has exactly one parent, so a node that a
        // walk down from the source misses lies on (or under) a cycle.
        let mut order = Vec::with_capacity(nodes.len());
        let mut seen = vec![false; nodes.len()];
        order.push(source);
        seen[source as usize] = true;
        let mut head = 0;
        while head < order.len() {
            let n = order[head] as usize;
            head += 1;
            for &c in &nodes[n].children {
                let child = networks[c as usize].child;
                seen[child as usize] = true;
                order.push(child);
            }
        }
        if let Some(start) = seen.iter().position(|s| !s) {
            return Err(format!("networks: cycle {}", describe_cycle(nodes, networks, start)));
        }
        Ok(order)
    }

    pub fn net_of_child(&self, node: u32, slot: u32) -> u32 {
        self.nodes[node as usize].children[slot as usize]
    }
}

/// Walk parent links from `start` until a node repeats; name the loop.
fn describe_cycle(nodes: &[Node], networks: &[Network], start: usize) -> String {
    let mut path = vec![start];
    let mut at = start;
    // Unreachable nodes were rejected earlier, so every node on the walk has a parent.
    while let Some(net) = nodes[at].parent_net {
        at = networks[net as usize].parent as usize;
        if let Some(pos) = path.iter().position(|&p| p == at) {
            // path runs child -> parent; print the loop parent -> child.
            let mut names = vec![nodes[at].name.as_str()];
            names.extend(path[pos + 1..].iter().rev().map(|&p| nodes[p].name.as_str()));
            names.push(nodes[at].name.as_str());
            return format!("through {}", names.join(" -> "));
        }
        path.push(at);
    }
    format!("under '{}'", nodes[start].name)
}
