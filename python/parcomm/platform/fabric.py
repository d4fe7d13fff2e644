"""Multi-path data-centre fabrics: ``fat_tree(k)`` and ``leaf_spine(leaves, spines, hosts)``.

Both have many equal-cost shortest paths between hosts in different racks; the core spreads
flows over them by per-switch salted hashing (ECMP, ``net/routing.rs``).

* ``fat_tree(k)``: the three-tier k-ary fat-tree of Al-Fares, Loukissas and Vahdat, "A Scalable,
  Commodity Data Center Network Architecture", SIGCOMM 2008, §3: k pods, each of k/2 edge and
  k/2 aggregation switches of k ports; (k/2)^2 core switches; k/2 hosts per edge switch, k^3/4
  hosts in all (k = 16: 1,024 hosts, 320 switches). Edge switch i of a pod links to every
  aggregation switch of its pod; aggregation switch j links to core switches j*k/2 ..
  (j+1)*k/2 - 1. Every link has the same rate (the paper's full bisection bandwidth).
* ``leaf_spine(leaves, spines, hosts_per_leaf)``: the two-tier folded Clos of current data
  centres: every leaf (top-of-rack) switch links to every spine switch.

Host names are ``h0``.. in rack order; switches are ``e{pod}_{i}``, ``a{pod}_{j}``,
``c{j}_{m}`` (fat-tree) and ``leaf{l}``, ``spine{s}``.
"""

from __future__ import annotations

from typing import Any

from .schema import MAX_HOSTS, PlatformError, host, link, make_platform, switch
from .star import DEFAULT_STAR_BUFFER
from .units import parse_count

__all__ = ["fat_tree", "leaf_spine"]


def _whole(value: Any, what: str, low: int) -> int:
    n = parse_count(value, what)
    if n < low:
        raise PlatformError(f"{what} must be at least {low}, got {n}")
    return n


def fat_tree(
    k: int,
    rate_bps: Any = 1e9,
    buffer: Any = DEFAULT_STAR_BUFFER,
    flow_control: bool = False,
    propagation_s: Any = 0.0,
    mtu: Any = 1500,
    *,
    switch_latency_s: Any = 0.0,
    name: str | None = None,
    **host_options: Any,
) -> dict:
    """The k-ary fat-tree (k even): k^3/4 hosts on 5k^2/4 switches of k ports, all links alike.

    ``buffer``, ``flow_control``, ``switch_latency_s`` apply to every switch; ``rate_bps`` and
    ``propagation_s`` to every link; ``host_options`` (``tcp``, overheads, ...) to every host.
    """
    k = _whole(k, "fattree: k", 2)
    if k % 2:
        raise PlatformError(f"fattree: k must be even (k-port switches, half up, half down), got {k}")
    half = k // 2
    if k**3 // 4 > MAX_HOSTS:
        raise PlatformError(f"fattree: k = {k} gives {k**3 // 4} hosts, more than {MAX_HOSTS}")
    sw = dict(buffer=buffer, flow_control=flow_control, latency_s=switch_latency_s)
    ln = dict(propagation_s=propagation_s)
    hosts: list[dict] = []
    switches: list[dict] = []
    links: list[dict] = []
    cores = [f"c{j}_{m}" for j in range(half) for m in range(half)]
    switches += [switch(c, **sw) for c in cores]
    for pod in range(k):
        aggs = [f"a{pod}_{j}" for j in range(half)]
        switches += [switch(a, **sw) for a in aggs]
        for j, a in enumerate(aggs):
            links += [link(a, f"c{j}_{m}", rate_bps, **ln) for m in range(half)]
        for i in range(half):
            edge = f"e{pod}_{i}"
            switches.append(switch(edge, **sw))
            links += [link(edge, a, rate_bps, **ln) for a in aggs]
            for _ in range(half):
                h = f"h{len(hosts)}"
                hosts.append(host(h, mtu=mtu, **host_options))
                links.append(link(h, edge, rate_bps, **ln))
    return make_platform(name or f"fattree-{k}", hosts, switches, links)


def leaf_spine(
    leaves: int,
    spines: int,
    hosts_per_leaf: int,
    rate_bps: Any = 1e9,
    uplink_bps: Any = None,
    buffer: Any = DEFAULT_STAR_BUFFER,
    flow_control: bool = False,
    propagation_s: Any = 0.0,
    mtu: Any = 1500,
    *,
    switch_latency_s: Any = 0.0,
    name: str | None = None,
    **host_options: Any,
) -> dict:
    """``leaves`` top-of-rack switches of ``hosts_per_leaf`` hosts each, every leaf linked to
    every one of ``spines`` spine switches. ``uplink_bps`` is the leaf-spine link rate (default
    ``rate_bps``): hosts_per_leaf * rate / (spines * uplink) is the rack's oversubscription."""
    leaves = _whole(leaves, "leafspine: leaves", 1)
    spines = _whole(spines, "leafspine: spines", 1)
    per = _whole(hosts_per_leaf, "leafspine: hosts per leaf", 1)
    if leaves * per > MAX_HOSTS:
        raise PlatformError(f"leafspine: {leaves} x {per} hosts, more than {MAX_HOSTS}")
    sw = dict(buffer=buffer, flow_control=flow_control, latency_s=switch_latency_s)
    up = rate_bps if uplink_bps is None else uplink_bps
    hosts: list[dict] = []
    links: list[dict] = []
    switches = [switch(f"spine{s}", **sw) for s in range(spines)]
    for leaf in range(leaves):
        switches.append(switch(f"leaf{leaf}", **sw))
        links += [link(f"leaf{leaf}", f"spine{s}", up, propagation_s=propagation_s) for s in range(spines)]
        for _ in range(per):
            h = f"h{len(hosts)}"
            hosts.append(host(h, mtu=mtu, **host_options))
            links.append(link(h, f"leaf{leaf}", rate_bps, propagation_s=propagation_s))
    return make_platform(name or f"leafspine-{leaves}x{spines}x{per}", hosts, switches, links)
