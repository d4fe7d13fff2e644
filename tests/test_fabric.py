"""Multi-path fabrics and ECMP: fat-tree and leaf-spine builders, flows spread over equal-cost
paths by the core's per-switch salted hashing (net/routing.rs)."""

from __future__ import annotations

import collections
import random

import parcomm.platform as pp
import pytest
from parcomm import _core


def _run(p: dict, flows: list[tuple[int, int]], nbytes: int = 1000) -> _core.Simulation:
    sim = _core.Simulation(pp.to_json(p), 1)
    for s, d in flows:
        sim.send(s, d, nbytes)
        sim.receive(d, nbytes)
    for _ in range(10 * len(flows) + 10):  # each call returns the completions of one instant
        if sim.is_idle:
            break
        sim.run_until_completion(60.0)
    assert sim.is_idle
    return sim


def _packets_by_switch(sim: _core.Simulation, prefix: str) -> dict[str, int]:
    ports = sim.counters()["ports"]
    out: dict[str, int] = collections.Counter()
    for name, tx in zip(ports["name"], ports["tx_packets"]):
        owner = name.split("->")[0]
        if owner.startswith(prefix):
            out[owner] += tx
    return out


def test_fat_tree_has_the_papers_shape():
    """Al-Fares et al. 2008 §3: k^3/4 hosts, 5k^2/4 switches, k^3/4 links per tier."""
    for k in (2, 4, 8):
        p = pp.fat_tree(k)
        assert len(p["hosts"]) == k**3 // 4
        assert len(p["switches"]) == 5 * k * k // 4
        assert len(p["links"]) == 3 * k**3 // 4
    assert pp.from_spec_string("fattree:4,rate=10G")["links"][0]["rate_bps"] == 10e9
    with pytest.raises(pp.PlatformError, match="even"):
        pp.fat_tree(5)
    with pytest.raises(pp.PlatformError, match="more than"):
        pp.fat_tree(82)  # 137,842 hosts


def test_leaf_spine_shape_and_short_form():
    p = pp.from_spec_string("leafspine:4x3x5,uplink=40G")
    assert len(p["hosts"]) == 20 and len(p["switches"]) == 7
    assert sum(1 for l in p["links"] if l["rate_bps"] == 40e9) == 12


def test_ecmp_spreads_permutations_evenly_over_the_core():
    """Random permutations on a k = 8 fat-tree (128 hosts, 16 core switches): the packets through
    each core switch are within 10 % of the mean. Flow hashing is even only over many flows (a
    fair hash puts n flows on a core with spread ~1/sqrt(n)), so the test sends 100
    permutations: about 1,400 packets per core, a spread of about 3 %. Without a per-switch salt
    the aggregation tier would repeat the edge tier's choice and use 4 of the 16 cores."""
    k, rounds = 8, 100
    p = pp.fat_tree(k)
    n = len(p["hosts"])
    rng = random.Random(8)
    flows = []
    for _ in range(rounds):
        perm = list(range(n))
        rng.shuffle(perm)
        flows += [(s, d) for s, d in enumerate(perm) if s != d]
    core = _packets_by_switch(_run(p, flows), "c")
    assert len(core) == (k // 2) ** 2
    mean = sum(core.values()) / len(core)
    worst = max(abs(v - mean) / mean for v in core.values())
    assert worst <= 0.10, (worst, core)


def test_leaf_spine_spreads_over_every_spine():
    p = pp.leaf_spine(4, 4, 8)
    n = len(p["hosts"])
    flows = [(s, d) for s in range(n) for d in range(n) if s // 8 != d // 8]  # every cross-rack pair
    spines = _packets_by_switch(_run(p, flows), "spine")
    assert len(spines) == 4
    mean = sum(spines.values()) / 4
    assert max(abs(v - mean) / mean for v in spines.values()) <= 0.10, spines


def test_one_flow_keeps_one_path():
    """Per-flow hashing: a long transfer between two hosts in different pods crosses exactly one
    core switch (no reordering from spraying)."""
    p = pp.fat_tree(4)
    core = _packets_by_switch(_run(p, [(0, 15)], nbytes=1 << 20), "c")
    used = [c for c, v in core.items() if v]
    assert 1 <= len(used) <= 2  # data one way, ACKs back: each direction on one core (maybe the same)
    # 1 MiB in 725 segments of 1448 B (the default linux stack's timestamps take 12 B of 1460), and
    # about one delayed ACK per two segments back
    assert sum(core.values()) > (1 << 20) // 1448 * 1.4


def test_route_table_grows_with_attachments_not_hosts():
    """A 4,096-host star builds quickly now that routes are kept per switch, not per host pair."""
    sim = _core.Simulation(pp.to_json(pp.star(4096)), 0)
    assert sim.host_count == 4096
