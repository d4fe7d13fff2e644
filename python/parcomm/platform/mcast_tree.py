"""Multicast trees as data: the one topology format shared by the model, the
placement optimizer and the packet-level simulator (seed 003, Shimokuni et al.).

The format
==========

A tree is a plain dict, written in JSON or TOML::

    {"name": "study4",                      # str
     "source": "src",                       # the node the packets start from
     "packet_bytes": 1024,                  # int > 0, default 1024
     "nodes": [
        {"name": "src", "kind": "source"},
        {"name": "r1",  "kind": "router", "repair": true},   # repair: routers only, default false
        {"name": "rcv", "kind": "receiver"}],
     "networks": [
        {"name": "n1", "parent": "src", "child": "r1",
         "delay_s": 0.003, "loss": 0.05, "rate_bps": 1e9},
        {"name": "n2", "parent": "r1", "child": "rcv",
         "delay_s": 0.030, "loss": 0.002, "rate_bps": 622e6}]}

* A **network** is one hop of the multicast route: the paper's "network N_i"
  with a one-way medium delay T_i (``delay_s`` >= 0), a packet loss rate E_i
  (``loss`` in [0, 0.5], see ``MAX_LOSS``) and a bandwidth (``rate_bps`` > 0) (seed 003 §4,
  "検討モデル"). It joins a ``parent`` node to a ``child`` node; packets flow
  parent -> child, acknowledgements child -> parent.
* A **router** joins networks. A router with ``repair = true`` buffers the
  packets it forwards, runs a retransmission timer and retransmits to its
  subtree (§3, "再送ルータ"); a plain router only forwards, aggregates ACKs and
  suppresses duplicate retransmissions (Comet RM, §2.2). The source always
  buffers and retransmits, so it needs no flag.
* The networks form a tree rooted at the source: every node but the source
  has exactly one parent network, there is no cycle, every receiver is
  reachable, receivers are leaves and every router has at least one child.
  Node and network names are unique (a node and a network may share a name).

In files, durations and rates may be unit strings (``delay_s = "30ms"``,
``rate_bps = "622M"``, see :mod:`parcomm.platform.units`) and a loss may be a
percentage string (``loss = "0.2%"``); :func:`to_dict` always writes plain
numbers in SI units.

API
===

* :func:`load` (a ``.json`` or ``.toml`` file), :func:`loads`,
  :func:`validate` (dict -> :class:`Tree`; a :class:`Tree` passes through),
  :func:`to_dict` (:class:`Tree` -> dict; ``validate(to_dict(t))`` equals ``t``).
* Builders, each returning a validated :class:`Tree`:
  :func:`path_tree` (the paper's sequences of networks, studies 1-4),
  :func:`binary_tree` (study 4's 128-receiver binary tree, any fan-out),
  :func:`branching` (study 5's n links at one router, Fig. 9),
  :func:`wan_tree` (backbone tree plus local networks at the sites, for the
  paper's conclusion on a larger tree), and :func:`with_repair` (set which
  routers repair).

Errors are :class:`TreeError`, a ``ValueError`` whose message names the bad
field or node (``networks[3] ('n4').loss = 1.2: must be in [0, 0.5]``, ``cycle
through networks 'a' -> 'b' -> 'a'``, ``receiver 'rcv9' is not reachable from
source 'src'``) and, for files, starts with the file name.

Node names in the builders: source ``src``; in a path ``r1 .. r{n-1}`` (router
``ri`` joins networks ``ni`` and ``n{i+1}``, so the paper's α is ``r1`` and β
is ``r2``) and receiver ``rcv``; in a binary tree level-``l`` routers
``r{l}.{i}``, networks ``n{l}.{i}`` and receivers ``rcv{i}``.
"""

from __future__ import annotations

import json
import math
import random
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

__all__ = [
    "TreeError",
    "Node",
    "Network",
    "Tree",
    "load",
    "loads",
    "validate",
    "to_dict",
    "path_tree",
    "binary_tree",
    "branching",
    "wan_tree",
    "with_repair",
    "STUDY4_SEGMENTS",
    "STUDY5_SEGMENTS",
    "LAN",
    "BACKBONE",
]

KINDS = ("source", "router", "receiver")
DEFAULT_PACKET_BYTES = 1024

# A segment is (delay_s, loss, rate_bps) of one network.
Segment = tuple[float, float, float]

#: Local network (§2.1 and the study-4 table, N1 and N8): 3 ms one way, 5 %
#: loss (MBone measurements of Yajnik et al., ref. [2]), 1 Gbit/s (§4 1.4).
LAN: Segment = (0.003, 0.05, 1e9)
#: Backbone network (study-4 table, N2-N7): 30 ms one way, 0.2 % loss,
#: 622 Mbit/s (§4 1.4).
BACKBONE: Segment = (0.030, 0.002, 622e6)
#: Study 4's route of eight networks (§4 1.4 table): LAN, six backbone, LAN.
STUDY4_SEGMENTS: tuple[Segment, ...] = (LAN,) + (BACKBONE,) * 6 + (LAN,)
#: Study 5's route N1-N3 (§4 1.5 table): 3 ms and 0.1 % each. The paper gives
#: no bandwidth for studies 1-3 and 5; 1 Gbit/s is a placeholder that only
#: sizes buffers, never delays.
STUDY5_SEGMENTS: tuple[Segment, ...] = ((0.003, 0.001, 1e9),) * 3


class TreeError(ValueError):
    """A malformed tree; the message names the field or node at fault."""


@dataclass(frozen=True)
class Node:
    name: str
    kind: str  # "source" | "router" | "receiver"
    repair: bool = False


@dataclass(frozen=True)
class Network:
    name: str
    parent: str
    child: str
    delay_s: float
    loss: float
    rate_bps: float


@dataclass(eq=False)
class Tree:
    """A validated multicast tree (build it with :func:`validate` or a builder).

    Besides the fields of the format it holds the indexes every user needs:
    ``parent_net[node]`` (the network above a node; absent for the source),
    ``child_nets[node]`` (networks below, in file order), ``order`` (every
    node in depth-first preorder from the source), ``receivers``,
    ``routers`` and ``repair_routers`` (in preorder).
    """

    name: str
    source: str
    packet_bytes: int
    nodes: dict[str, Node]
    networks: dict[str, Network]
    parent_net: dict[str, Network] = field(repr=False)
    child_nets: dict[str, list[Network]] = field(repr=False)
    order: list[str] = field(repr=False)

    @property
    def receivers(self) -> list[str]:
        return [n for n in self.order if self.nodes[n].kind == "receiver"]

    @property
    def routers(self) -> list[str]:
        return [n for n in self.order if self.nodes[n].kind == "router"]

    @property
    def repair_routers(self) -> list[str]:
        return [n for n in self.order if self.nodes[n].kind == "router" and self.nodes[n].repair]

    def path(self, node: str) -> list[Network]:
        """The networks from the source down to ``node``, in order."""
        nets = []
        while node != self.source:
            net = self.parent_net[node]
            nets.append(net)
            node = net.parent
        return nets[::-1]

    def to_dict(self) -> dict:
        return to_dict(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tree) and to_dict(self) == to_dict(other)

    def __repr__(self) -> str:
        return (
            f"Tree({self.name!r}: {len(self.receivers)} receivers, {len(self.routers)} routers "
            f"({len(self.repair_routers)} repair), {len(self.networks)} networks)"
        )


# ---------------------------------------------------------------- parsing


def load(path: str | Path) -> Tree:
    """Read and validate a tree file: JSON (``.json``) or TOML (any other suffix)."""
    from .loader import read_bounded

    path = Path(path)
    if not path.exists():
        raise TreeError(f"{path}: no such tree file")
    text = read_bounded(path, "tree file", MAX_FILE_BYTES, TreeError)
    fmt = "json" if path.suffix.lower() == ".json" else "toml"
    return loads(text, fmt=fmt, source=str(path))


def loads(text: str, fmt: str = "json", source: str = "<string>") -> Tree:
    """Parse ``text`` as ``fmt`` ("json" or "toml") and validate it."""
    if len(text) > MAX_FILE_BYTES:
        raise TreeError(f"{source}: {len(text)} characters, more than a tree file's {MAX_FILE_BYTES}")
    if fmt not in ("json", "toml"):
        raise TreeError(f"unknown tree format {fmt!r} (json or toml)")
    try:
        data = json.loads(text) if fmt == "json" else tomllib.loads(text)
    except json.JSONDecodeError as e:
        raise TreeError(f"{source}: invalid JSON: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise TreeError(f"{source}: invalid TOML: {e}") from None
    except RecursionError:
        raise TreeError(f"{source}: invalid {fmt.upper()}: nested too deeply") from None
    except ValueError as e:  # e.g. an integer of more digits than Python converts
        from .loader import parse_failure

        raise TreeError(f"{source}: invalid {fmt.upper()}: {parse_failure(e)}") from None
    try:
        return validate(data)
    except TreeError as e:
        raise TreeError(f"{source}: {e}") from None


#: A tree file lists nodes and networks: 4 MiB is tens of thousands of them.
MAX_FILE_BYTES = 4 << 20
#: Nodes in a tree: a national backbone down to every site's LAN is thousands; the model and the
#: placement search are polynomial in it, so beyond this a tree is a mistake, not a network.
MAX_NODES = 1 << 16
#: A multicast packet is one IP datagram: at most 65,535 bytes (IPv4), 65,536 with room to spare.
MAX_PACKET_BYTES = 1 << 16
#: Names appear in messages and tables: one printable line of reasonable length.
MAX_NAME_CHARS = 256
#: Loss rate of one network. Seed 003's networks lose 0.1-5 % (MBone measurements); one that loses
#: more than half its packets is down, not lossy, and the coverage model's rounds stop converging
#: in reasonable time above it (a 7-node tree: 0.1 s at 0.5 and 0.7, 11 s and no answer at 0.8).
MAX_LOSS = 0.5

_TOP_KEYS = {"name", "source", "packet_bytes", "nodes", "networks"}
_NODE_KEYS = {"name", "kind", "repair"}
_NET_KEYS = {"name", "parent", "child", "delay_s", "loss", "rate_bps"}


def _s(value: Any, limit: int = 80) -> str:
    from .units import shown

    return shown(value, limit)


def _unknown(obj: Mapping, allowed: set[str], where: str) -> None:
    extra = [k for k in obj if k not in allowed]
    if extra:
        raise TreeError(f"{where}: unknown field {_s(extra[0])} (allowed: {', '.join(sorted(allowed))})")


def _name(obj: Mapping, key: str, where: str) -> str:
    if key not in obj:
        raise TreeError(f"{where}: missing field {_s(key)}")
    v = obj[key]
    if not isinstance(v, str) or not v or len(v) > MAX_NAME_CHARS or not v.isprintable():
        raise TreeError(
            f"{where}.{key} = {_s(v)}: must be a non-empty printable string of at most {MAX_NAME_CHARS} characters"
        )
    return v


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _delay(v: Any, where: str) -> float:
    from .units import parse_duration

    try:
        d = parse_duration(v)
    except ValueError as e:
        raise TreeError(f"{where}.delay_s = {_s(v)}: {e}") from None
    if not math.isfinite(d):
        raise TreeError(f"{where}.delay_s = {_s(v)}: must be a finite number of seconds")
    return d


def _rate(v: Any, where: str) -> float:
    from .units import parse_rate

    try:
        return parse_rate(v)
    except ValueError as e:
        raise TreeError(f"{where}.rate_bps = {_s(v)}: {e}") from None


def _loss(v: Any, where: str) -> float:
    x: float
    if isinstance(v, str) and v.strip().endswith("%"):
        try:
            x = float(v.strip()[:-1]) / 100.0
        except ValueError:
            raise TreeError(f"{where}.loss = {_s(v)}: not a number or percentage") from None
    elif _is_number(v):
        x = float(v)
    else:
        raise TreeError(f"{where}.loss = {_s(v)}: must be a number in [0, {MAX_LOSS}] or a percentage string")
    if not (0.0 <= x <= MAX_LOSS):  # also refuses NaN
        raise TreeError(f"{where}.loss = {_s(v)}: must be in [0, {MAX_LOSS}]")
    return x


def validate(data: Mapping | Tree) -> Tree:
    """Check a tree dict and index it; raise :class:`TreeError` naming the fault.

    The checks run in a fixed order (header, nodes, source, networks, shape), so
    a tree with several faults always reports the same, first one.
    """
    if isinstance(data, Tree):
        return data
    if not isinstance(data, Mapping):
        raise TreeError(f"a tree must be a mapping (dict/table), got {type(data).__name__}")
    name, source, pb = _header(data)
    nodes = _nodes(data.get("nodes"))
    _check_source(source, nodes)
    networks, parent_net, child_nets = _networks(data.get("networks"), nodes)
    order = _preorder(source, child_nets)
    _check_reachable(source, nodes, order, parent_net)
    _check_shape(source, nodes, order, child_nets)
    return Tree(name, source, pb, nodes, networks, parent_net, child_nets, order)


def _header(data: Mapping) -> tuple[str, str, int]:
    """The top-level fields (name, source, packet_bytes), checked before any node or network."""
    _unknown(data, _TOP_KEYS, "tree")
    name = data.get("name", "tree")
    if not isinstance(name, str) or not name or len(name) > MAX_NAME_CHARS or not name.isprintable():
        raise TreeError(
            f"name = {_s(name)}: must be a non-empty printable string of at most {MAX_NAME_CHARS} characters"
        )
    source = _name(data, "source", "tree")
    pb = data.get("packet_bytes", DEFAULT_PACKET_BYTES)
    if not isinstance(pb, int) or isinstance(pb, bool) or not 0 < pb <= MAX_PACKET_BYTES:
        raise TreeError(f"packet_bytes = {_s(pb)}: must be an integer from 1 to {MAX_PACKET_BYTES}")
    return name, source, pb


def _nodes(raw_nodes: Any) -> dict[str, Node]:
    """The ``nodes`` list as a name -> :class:`Node` dict, in file order (names unique)."""
    if not isinstance(raw_nodes, list) or not raw_nodes:
        raise TreeError("nodes: must be a non-empty list of {name, kind[, repair]}")
    if len(raw_nodes) > MAX_NODES:
        raise TreeError(f"nodes: {len(raw_nodes)} of them, more than the limit of {MAX_NODES}")
    nodes: dict[str, Node] = {}
    for i, n in enumerate(raw_nodes):
        node = _node(i, n, nodes)
        nodes[node.name] = node
    return nodes


def _entry(section: str, i: int, entry: Any, keys: set, before: Mapping) -> tuple[str, str]:
    """Entry ``i`` of ``section`` (``nodes`` or ``networks``): a mapping of known keys whose
    name is new; returns the name and the place to name in errors."""
    where = f"{section}[{i}]"
    if not isinstance(entry, Mapping):
        raise TreeError(f"{where}: must be a mapping, got {_s(entry)}")
    _unknown(entry, keys, where)
    nm = _name(entry, "name", where)
    where = f"{section}[{i}] ({_s(nm)})"
    if nm in before:
        raise TreeError(f"{where}: duplicate {section[:-1]} name {_s(nm)}")
    return nm, where


def _node(i: int, n: Any, nodes: Mapping[str, Node]) -> Node:
    """Entry ``i`` of ``nodes``; ``nodes`` holds the entries before it, to refuse a duplicate name."""
    nm, where = _entry("nodes", i, n, _NODE_KEYS, nodes)
    kind = n.get("kind")
    if kind not in KINDS:
        raise TreeError(f"{where}.kind = {_s(kind)}: must be one of {', '.join(KINDS)}")
    repair = n.get("repair", False)
    if not isinstance(repair, bool):
        raise TreeError(f"{where}.repair = {_s(repair)}: must be true or false")
    if repair and kind != "router":
        raise TreeError(f"{where}.repair: only routers take a repair flag (this node is a {kind})")
    return Node(nm, kind, repair)


def _check_source(source: str, nodes: Mapping[str, Node]) -> None:
    """The named source exists, is of kind source, and is the tree's only source."""
    if source not in nodes:
        raise TreeError(f"source = {_s(source)}: no node of that name")
    if nodes[source].kind != "source":
        raise TreeError(f"source = {_s(source)}: that node's kind is {_s(nodes[source].kind)}, not 'source'")
    others = [n.name for n in nodes.values() if n.kind == "source" and n.name != source]
    if others:
        raise TreeError(
            f"node {_s(others[0])}: kind 'source' but the tree's source is {_s(source)} (one source per tree)"
        )


def _networks(
    raw_nets: Any, nodes: Mapping[str, Node]
) -> tuple[dict[str, Network], dict[str, Network], dict[str, list[Network]]]:
    """The ``networks`` list as (networks by name, parent network of each node, child networks
    of each node in file order); refuses a second parent network for a node."""
    if not isinstance(raw_nets, list) or not raw_nets:
        raise TreeError("networks: must be a non-empty list of {name, parent, child, delay_s, loss, rate_bps}")
    networks: dict[str, Network] = {}
    parent_net: dict[str, Network] = {}
    child_nets: dict[str, list[Network]] = {n: [] for n in nodes}
    for i, e in enumerate(raw_nets):
        net = _network(i, e, nodes, networks)
        if net.child in parent_net:
            raise TreeError(
                f"node {_s(net.child)} has two parent networks ({_s(parent_net[net.child].name)} and {_s(net.name)}); "
                "each node but the source has exactly one"
            )
        networks[net.name] = net
        parent_net[net.child] = net
        child_nets[net.parent].append(net)
    return networks, parent_net, child_nets


def _network(i: int, e: Any, nodes: Mapping[str, Node], networks: Mapping[str, Network]) -> Network:
    """Entry ``i`` of ``networks``: its fields, its ends among ``nodes``, and a direction that
    keeps the source a root and receivers leaves; ``networks`` holds the entries before it."""
    nm, where = _entry("networks", i, e, _NET_KEYS, networks)
    parent = _name(e, "parent", where)
    child = _name(e, "child", where)
    for key, node in (("parent", parent), ("child", child)):
        if node not in nodes:
            raise TreeError(f"{where}.{key} = {_s(node)}: unknown node")
    if parent == child:
        raise TreeError(f"{where}: parent and child are both {_s(parent)}")
    for key in ("delay_s", "loss", "rate_bps"):
        if key not in e:
            raise TreeError(f"{where}: missing field {_s(key)}")
    net = Network(nm, parent, child, _delay(e["delay_s"], where), _loss(e["loss"], where), _rate(e["rate_bps"], where))
    if nodes[child].kind == "source":
        raise TreeError(f"{where}.child = {_s(child)}: the source cannot have a parent network")
    if nodes[parent].kind == "receiver":
        raise TreeError(f"{where}.parent = {_s(parent)}: receivers are leaves and cannot have child networks")
    return net


def _preorder(source: str, child_nets: Mapping[str, list[Network]]) -> list[str]:
    """The nodes reachable from the source, in depth-first preorder, children in file order
    (iterative: a tree may be deeper than Python's recursion limit)."""
    order: list[str] = []
    stack = [source]
    while stack:
        v = stack.pop()
        order.append(v)
        stack.extend(net.child for net in reversed(child_nets[v]))
    return order


def _check_reachable(
    source: str, nodes: Mapping[str, Node], order: list[str], parent_net: Mapping[str, Network]
) -> None:
    """Every node is reached from the source; if not, name a cycle if there is one (a node whose
    ancestors loop back is on or under it), else the first unreached receiver and where its
    ancestors end."""
    seen = set(order)
    unreached = [n for n in nodes if n not in seen]
    if not unreached:
        return
    for n in unreached:
        cyc = _cycle_from(n, parent_net)
        if cyc:
            raise TreeError(
                f"cycle through networks {' -> '.join(repr(c) for c in cyc)}; the networks must form a tree"
            )
    first = next((n for n in unreached if nodes[n].kind == "receiver"), unreached[0])
    kind = nodes[first].kind
    how = "no parent network" if first not in parent_net else f"its ancestors end at {_s(_top(first, parent_net))}"
    raise TreeError(f"{kind} {_s(first)} is not reachable from source {_s(source)} ({how})")


def _check_shape(
    source: str, nodes: Mapping[str, Node], order: list[str], child_nets: Mapping[str, list[Network]]
) -> None:
    """Leaves are receivers, there is a receiver, and the source sends into a network."""
    for n in order:
        if nodes[n].kind == "router" and not child_nets[n]:
            raise TreeError(f"router {_s(n)} has no child network (a leaf must be a receiver)")
    if not any(nodes[n].kind == "receiver" for n in nodes):
        raise TreeError("nodes: the tree has no receiver")
    if not child_nets[source]:
        raise TreeError(f"source {_s(source)} has no child network")


def _cycle_from(n: str, parent_net: Mapping[str, Network]) -> list[str] | None:
    seen: dict[str, int] = {}
    chain: list[Network] = []
    while n in parent_net:
        if n in seen:
            loop = chain[seen[n] :][::-1]
            return [net.name for net in loop] + [loop[0].name]
        seen[n] = len(chain)
        net = parent_net[n]
        chain.append(net)
        n = net.parent
    return None


def _top(n: str, parent_net: Mapping[str, Network]) -> str:
    while n in parent_net:
        n = parent_net[n].parent
    return n


def to_dict(tree: Tree) -> dict:
    """The plain-dict (JSON/TOML) form of a tree, numbers in SI units."""
    tree = validate(tree)
    nodes = []
    for n in tree.nodes.values():
        d: dict[str, Any] = {"name": n.name, "kind": n.kind}
        if n.kind == "router":
            d["repair"] = n.repair
        nodes.append(d)
    return {
        "name": tree.name,
        "source": tree.source,
        "packet_bytes": tree.packet_bytes,
        "nodes": nodes,
        "networks": [
            {
                "name": e.name,
                "parent": e.parent,
                "child": e.child,
                "delay_s": e.delay_s,
                "loss": e.loss,
                "rate_bps": e.rate_bps,
            }
            for e in tree.networks.values()
        ],
    }


# ---------------------------------------------------------------- builders


def _seg(s: Segment | Mapping, where: str) -> Segment:
    if isinstance(s, Mapping):
        try:
            return (s["delay_s"], s["loss"], s["rate_bps"])
        except KeyError as e:
            raise TreeError(f"{where}: missing {e.args[0]!r}") from None
    try:
        d, l, r = s
    except (TypeError, ValueError):
        raise TreeError(f"{where} = {s!r}: expected (delay_s, loss, rate_bps)") from None
    return (d, l, r)


def _net(name: str, parent: str, child: str, seg: Segment) -> dict:
    d, l, r = seg
    return {"name": name, "parent": parent, "child": child, "delay_s": d, "loss": l, "rate_bps": r}


def _repair_levels(repair_at: Iterable[int | str], routers: int, what: str) -> set[int]:
    levels = set()
    for x in repair_at:
        if isinstance(x, str) and x.startswith("r") and x[1:].isdigit():
            x = int(x[1:])
        if not isinstance(x, int) or isinstance(x, bool) or not 1 <= x <= routers:
            raise TreeError(f"{what}: repair_at entry {x!r} is not a router index 1..{routers}")
        levels.add(x)
    return levels


def path_tree(
    segments: Sequence[Segment | Mapping],
    repair_at: Iterable[int | str] = (),
    *,
    name: str = "path",
    packet_bytes: int = DEFAULT_PACKET_BYTES,
) -> Tree:
    """A route of networks ``n1 .. nK`` from ``src`` to one receiver ``rcv``
    (the paper's Fig. 2 and Fig. 7). ``segments[i] = (delay_s, loss, rate_bps)``
    of network ``n{i+1}``; router ``ri`` joins ``ni`` and ``n{i+1}``.
    ``repair_at`` lists router indices (1-based; the paper's α = 1, β = 2) or
    names ``"ri"``.
    """
    segs = [_seg(s, f"segments[{i}]") for i, s in enumerate(segments)]
    if not segs:
        raise TreeError("segments: a path needs at least one network")
    k = len(segs)
    rep = _repair_levels(repair_at, k - 1, "path_tree")
    names = ["src"] + [f"r{i}" for i in range(1, k)] + ["rcv"]
    nodes: list[dict[str, Any]] = [{"name": "src", "kind": "source"}]
    nodes += [{"name": f"r{i}", "kind": "router", "repair": i in rep} for i in range(1, k)]
    nodes.append({"name": "rcv", "kind": "receiver"})
    nets = [_net(f"n{i + 1}", names[i], names[i + 1], segs[i]) for i in range(k)]
    return validate({"name": name, "source": "src", "packet_bytes": packet_bytes, "nodes": nodes, "networks": nets})


def binary_tree(
    receivers: int = 128,
    segments: Sequence[Segment | Mapping] | None = None,
    repair_at: Iterable[int | str] = (),
    *,
    fanout: int = 2,
    name: str | None = None,
    packet_bytes: int = DEFAULT_PACKET_BYTES,
) -> Tree:
    """Study 4's tree (§4 1.4): ``src`` -n1-> one router, then every router
    branches ``fanout`` ways, so a route has ``L = log_fanout(receivers) + 1``
    networks and ``L - 1`` routers, and level ``l`` holds ``fanout**(l-1)``
    routers. ``segments`` gives the L networks of a route (all networks of
    one level are alike); by default study 4's LAN, backbone x (L-2), LAN,
    i.e. exactly :data:`STUDY4_SEGMENTS` for 128 receivers. ``repair_at``
    lists router levels (1..L-1) whose routers all repair.
    """
    if not isinstance(fanout, int) or fanout < 2:
        raise TreeError(f"fanout = {fanout!r}: must be an integer >= 2")
    depth = 0
    n = receivers
    while isinstance(n, int) and n > 1 and n % fanout == 0:
        n //= fanout
        depth += 1
    if not isinstance(receivers, int) or n != 1 or depth < 1:
        raise TreeError(f"receivers = {receivers!r}: must be a power of the fan-out {fanout} (at least {fanout})")
    if segments is None:
        segs = [LAN] + [BACKBONE] * (depth - 1) + [LAN]
    else:
        segs = [_seg(s, f"segments[{i}]") for i, s in enumerate(segments)]
        if len(segs) != depth + 1:
            raise TreeError(
                f"segments: {receivers} receivers at fan-out {fanout} need {depth + 1} networks per route, got {len(segs)}"
            )
    rep = _repair_levels(repair_at, depth, "binary_tree")
    nodes: list[dict] = [{"name": "src", "kind": "source"}]
    nets: list[dict] = []
    prev = ["src"]
    for level in range(1, depth + 2):
        last = level == depth + 1
        count = fanout ** (level - 1)
        cur = [f"rcv{i}" if last else f"r{level}.{i}" for i in range(count)]
        for i, nm in enumerate(cur):
            nodes.append(
                {"name": nm, "kind": "receiver"} if last else {"name": nm, "kind": "router", "repair": level in rep}
            )
            parent = prev[0] if level == 1 else prev[i // fanout]
            nets.append(_net(f"n{level}.{i}", parent, nm, segs[level - 1]))
        prev = cur
    return validate(
        {
            "name": name or f"{'binary' if fanout == 2 else f'{fanout}-ary'}-{receivers}",
            "source": "src",
            "packet_bytes": packet_bytes,
            "nodes": nodes,
            "networks": nets,
        }
    )


def branching(
    n: int,
    segments: Sequence[Segment | Mapping] = STUDY5_SEGMENTS,
    repair_at: Iterable[int | str] = (),
    *,
    name: str | None = None,
    packet_bytes: int = DEFAULT_PACKET_BYTES,
) -> Tree:
    """Study 5 (§4 1.5, Fig. 9): the route of :func:`path_tree` whose last
    router fans out into ``n`` copies of the last network, to receivers
    ``rcv0 .. rcv{n-1}`` (networks ``n{K}.0 ..``). Defaults to study 5's
    three networks of 3 ms and 0.1 %, so the fan-out router is β = ``r2``.
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise TreeError(f"n = {n!r}: the number of links must be a positive integer")
    segs = [_seg(s, f"segments[{i}]") for i, s in enumerate(segments)]
    if not segs:
        raise TreeError("segments: need at least one network")
    k = len(segs)
    rep = _repair_levels(repair_at, k - 1, "branching")
    names = ["src"] + [f"r{i}" for i in range(1, k)]
    nodes: list[dict[str, Any]] = [{"name": "src", "kind": "source"}]
    nodes += [{"name": f"r{i}", "kind": "router", "repair": i in rep} for i in range(1, k)]
    nets = [_net(f"n{i + 1}", names[i], names[i + 1], segs[i]) for i in range(k - 1)]
    for j in range(n):
        nodes.append({"name": f"rcv{j}", "kind": "receiver"})
        nets.append(_net(f"n{k}.{j}", names[-1], f"rcv{j}", segs[-1]))
    return validate(
        {
            "name": name or f"branching-{n}",
            "source": "src",
            "packet_bytes": packet_bytes,
            "nodes": nodes,
            "networks": nets,
        }
    )


def wan_tree(
    backbone_levels: int = 6,
    backbone_fanout: int = 2,
    lan_levels: int = 2,
    lan_fanout: int = 4,
    *,
    backbone: Segment = BACKBONE,
    lan: Segment = LAN,
    spread: float = 0.5,
    seed: int = 1,
    name: str | None = None,
    packet_bytes: int = DEFAULT_PACKET_BYTES,
) -> Tree:
    """A wide-area tree after §2.1: the source's local network, a backbone
    tree, and a local network at every site.

    ``src`` -LAN-> border router ``gw`` (the source site's boundary), then
    ``backbone_levels`` backbone networks on every route, branching
    ``backbone_fanout`` ways at ``gw`` and at every backbone router, down to
    the site border routers ``site{i}``; below each, a local tree of
    ``lan_levels`` networks branching ``lan_fanout`` ways per router (local
    routers ``site{i}.l{level}.{j}``) to the receivers. With the defaults,
    64 sites and 1,024 receivers; ``backbone_fanout=3`` makes 729 sites and
    11,664 receivers.

    A route then has the structure of study 4 (LAN, six backbone networks,
    LAN), with the site LAN split into ``lan_levels`` networks whose delays
    add up to ``lan``'s delay and whose losses compound to ``lan``'s loss.
    Each network's delay and loss are scaled by an independent factor drawn
    uniformly from [1 - spread, 1 + spread] (``random.Random(seed)``, so the
    tree is deterministic), because real backbones and campus networks are
    not uniform; ``spread=0`` gives identical networks per class. Rates are
    the class's (622 Mbit/s backbone, 1 Gbit/s LAN, §4 1.4).
    """
    _check_wan_args(backbone_levels, backbone_fanout, lan_levels, lan_fanout, spread)
    rng = random.Random(seed)
    lan_seg = (lan[0] / lan_levels, 1 - (1 - lan[1]) ** (1 / lan_levels), lan[2])

    def jitter(seg: Segment) -> Segment:
        d, l, r = seg
        fd = 1 + spread * (2 * rng.random() - 1)
        fl = 1 + spread * (2 * rng.random() - 1)
        return (d * fd, min(l * fl, 0.999), r)

    # Networks are built, and so ``jitter`` draws, in one fixed order: src-gw, the
    # backbone level by level, then each site's LAN; that order is what makes the tree
    # a function of ``seed``.
    nodes: list[dict] = [{"name": "src", "kind": "source"}, {"name": "gw", "kind": "router", "repair": False}]
    nets: list[dict] = [_net("src-gw", "src", "gw", jitter(lan))]
    sites = _wan_backbone(nodes, nets, backbone_levels, backbone_fanout, lambda: jitter(backbone))
    rcv = 0
    for site in sites:
        rcv = _wan_site(nodes, nets, site, rcv, lan_levels, lan_fanout, lambda: jitter(lan_seg))
    return validate(
        {
            "name": name or f"wan-{len(sites)}sites-{rcv}rcv",
            "source": "src",
            "packet_bytes": packet_bytes,
            "nodes": nodes,
            "networks": nets,
        }
    )


def _check_wan_args(
    backbone_levels: int, backbone_fanout: int, lan_levels: int, lan_fanout: int, spread: float
) -> None:
    """The shape arguments of :func:`wan_tree` are integers >= 1 and ``spread`` is in [0, 1)."""
    for nm, v, lo in (
        ("backbone_levels", backbone_levels, 1),
        ("backbone_fanout", backbone_fanout, 1),
        ("lan_levels", lan_levels, 1),
        ("lan_fanout", lan_fanout, 1),
    ):
        if not isinstance(v, int) or isinstance(v, bool) or v < lo:
            raise TreeError(f"{nm} = {v!r}: must be an integer >= {lo}")
    if not 0 <= spread < 1:
        raise TreeError(f"spread = {spread!r}: must be in [0, 1)")


def _wan_backbone(
    nodes: list[dict], nets: list[dict], levels: int, fanout: int, segment: Callable[[], Segment]
) -> list[str]:
    """Append the backbone below ``gw`` to ``nodes`` and ``nets``: ``levels`` levels of
    networks ``bb{b}.{i}`` branching ``fanout`` ways, routers ``b{b}.{i}`` and, at the last
    level, the site border routers ``site{i}``, which it returns. ``segment()`` gives each
    network's (delay, loss, rate), in creation order."""
    level = ["gw"]
    for b in range(1, levels + 1):
        last = b == levels
        nxt = []
        for i, parent in enumerate(level):
            for j in range(fanout):
                idx = i * fanout + j
                nm = f"site{idx}" if last else f"b{b}.{idx}"
                nodes.append({"name": nm, "kind": "router", "repair": False})
                nets.append(_net(f"bb{b}.{idx}", parent, nm, segment()))
                nxt.append(nm)
        level = nxt
    return level


def _wan_site(
    nodes: list[dict],
    nets: list[dict],
    site: str,
    rcv: int,
    levels: int,
    fanout: int,
    segment: Callable[[], Segment],
) -> int:
    """Append the local tree below ``site`` to ``nodes`` and ``nets``: ``levels`` levels of
    networks ``{site}.lan{l}.{i}`` branching ``fanout`` ways, local routers
    ``{site}.l{l}.{i}`` and receivers numbered on from ``rcv``; return the next receiver
    number (receivers are numbered across sites)."""
    cur = [site]
    for l in range(1, levels + 1):
        last = l == levels
        nxt = []
        for i, parent in enumerate(cur):
            for j in range(fanout):
                idx = i * fanout + j
                if last:
                    nm = f"rcv{rcv}"
                    rcv += 1
                    nodes.append({"name": nm, "kind": "receiver"})
                else:
                    nm = f"{site}.l{l}.{idx}"
                    nodes.append({"name": nm, "kind": "router", "repair": False})
                nets.append(_net(f"{site}.lan{l}.{idx}", parent, nm, segment()))
                nxt.append(nm)
        cur = nxt
    return rcv


def with_repair(tree: Tree | Mapping, routers: Iterable[str]) -> Tree:
    """A copy of ``tree`` in which exactly ``routers`` (names) repair."""
    t = validate(tree)
    chosen = set(routers)
    for r in chosen:
        if r not in t.nodes:
            raise TreeError(f"repair router {r!r}: unknown node")
        if t.nodes[r].kind != "router":
            raise TreeError(f"repair router {r!r}: is a {t.nodes[r].kind}, only routers repair")
    nodes = {k: Node(n.name, n.kind, n.name in chosen) if n.kind == "router" else n for k, n in t.nodes.items()}
    return Tree(t.name, t.source, t.packet_bytes, nodes, t.networks, t.parent_net, t.child_nets, t.order)
