"""The platform schema has one judge, the core: random mutations of built platforms get the same
answer from ``validate`` as from building the simulator, and every refusal names a field.

This replaces a Python mirror of spec.rs that disagreed with it in 33 classes of mutation
(issue 20): values the core refused that Python accepted (``tcp.dupack_threshold = 2**70``),
the other way round (``send_overhead = []``), and bare ``ValueError``s that named nothing.
"""

from __future__ import annotations

import copy
import json
import math
import random
import re

import parcomm.platform as pp
import pytest
from parcomm import _core

#: A refusal starts with the field path, as the core writes it.
FIELD = re.compile(r"^(name|hosts|switches|links|segments|routers|platform)([.\[:]| )")

#: Values of every JSON type and of the edges of u64/f64, plus values JSON cannot carry.
POOL = [
    None,
    True,
    False,
    0,
    1,
    -1,
    127,
    2**53 + 1,
    2**63,
    2**64,
    2**70,
    0.5,
    -0.5,
    1e300,
    -1e-300,
    math.nan,
    math.inf,
    "x",
    "",
    "1G",
    "h0",
    [],
    {},
    [0],
    [1, 2],
    {"size": 1, "unit": "cells"},
    {"a": 1},
    "\x00",
    "n" * 300,
    {1, 2},
    (1, 2),
]


def _builds() -> list[dict]:
    return [
        pp.star(3),
        pp.atm_cluster(4),
        pp.opteron_cluster(4),
        pp.segments_router(2, 2),
        pp.star(2, tcp={"sack": True, "rack": True}),
    ]


def _paths(obj, path=()):
    """Every (path, value) inside ``obj``, containers included."""
    yield path, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, path + (i,))


def _mutate(p: dict, rng: random.Random) -> tuple[str, tuple]:
    """One random change to ``p`` in place; returns what was done and where."""
    places = [(path, v) for path, v in _paths(p) if path]
    path, value = rng.choice(places)
    parent = p
    for step in path[:-1]:
        parent = parent[step]
    key = path[-1]
    op = rng.choice(["set", "set", "set", "drop", "extra", "dup"])
    if op == "set":
        parent[key] = copy.deepcopy(rng.choice(POOL))
    elif op == "drop":
        del parent[key]
    elif op == "extra" and isinstance(value, dict):
        value["colour"] = "red"
    elif op == "dup" and isinstance(value, list) and value:
        value.append(copy.deepcopy(value[0]))
    else:
        parent[key] = copy.deepcopy(rng.choice(POOL))
        op = "set"
    return op, path


def _core_builds(p: dict) -> str | None:
    """None if the simulator builds from ``p``, else its error; the JSON encoder's refusal too."""
    try:
        text = json.dumps(p, allow_nan=False)
    except (ValueError, TypeError) as e:
        return f"json: {e}"
    try:
        _core.Simulation(text, 0)
    except ValueError as e:
        return str(e)
    return None


def test_every_build_is_valid():
    for p in _builds():
        assert pp.validate(p) is p
        assert _core_builds(p) is None


def test_random_mutations_agree_with_the_simulator_and_name_a_field():
    rng = random.Random(20)
    seen = {"accepted": 0, "refused": 0}
    for trial in range(1500):
        p = copy.deepcopy(rng.choice(_builds()))
        op, path = _mutate(p, rng)
        built = _core_builds(p)
        try:
            pp.validate(p)
            verdict = None
        except pp.PlatformError as e:  # anything else (a bare ValueError, TypeError) fails the test
            verdict = str(e)
        where = f"trial {trial}: {op} at {path}"
        assert (verdict is None) == (built is None), f"{where}: validate says {verdict!r}, the simulator {built!r}"
        if verdict is None:
            seen["accepted"] += 1
            continue
        seen["refused"] += 1
        assert FIELD.match(verdict), f"{where}: {verdict!r} names no field"
        if not built.startswith("json: "):
            assert verdict == built, where  # one judge, one message
    # the mutations exercise both answers, not one
    assert seen["accepted"] > 100 and seen["refused"] > 500, seen


@pytest.mark.parametrize(
    "mutate, field",
    [
        # classes where the Python mirror and the core disagreed, or a message named nothing
        (lambda p: p["hosts"][0]["tcp"].__setitem__("dupack_threshold", 2**70), "hosts.h0.tcp.dupack_threshold"),
        (
            lambda p: p["hosts"][0]["tcp"].__setitem__("initial_cwnd_segments", 2**63),
            "hosts.h0.tcp.initial_cwnd_segments",
        ),
        (
            lambda p: p["hosts"][1].__setitem__("send_overhead", "10us"),
            "hosts.h1.send_overhead",
        ),  # [] is serde's empty tuple form: zero
        (lambda p: p.__setitem__("links", []), "hosts.h0: not connected"),
        (lambda p: p["links"][0].__setitem__("rate_bps", "x"), "links[0].rate_bps"),
        (lambda p: p["links"][0].__setitem__("loss", math.nan), "links[0].loss"),  # named by the JSON walk
        (lambda p: p["hosts"][0].__setitem__("mtu", 1500.0), "hosts.h0.mtu"),
        (lambda p: p["hosts"][0].__setitem__("mtu", True), "hosts.h0.mtu"),
        (
            lambda p: p["switches"][0].__setitem__("buffer", {"size": 10**30, "unit": "bytes"}),
            "switches.sw0.buffer.size",
        ),
        (lambda p: p["hosts"][0]["tcp"].__setitem__("rto_min_s", 1e300), "hosts.h0.tcp.rto_min_s"),
        (lambda p: p["hosts"][0].__setitem__("name", 7), "hosts[0].name"),
        (lambda p: p["hosts"][0].__setitem__("name", "a\x00b"), "hosts[0].name"),
        (lambda p: p["links"][0].__setitem__("framing", "fddi"), "links[0].framing"),
        (lambda p: p["links"][0].__setitem__("drop_nth", {1}), "drop_nth"),
        (lambda p: p["hosts"][2].__setitem__("tcp", {"sack": True}), "hosts.h2.tcp"),
    ],
)
def test_former_disagreements_are_refused_naming_the_field(mutate, field):
    p = pp.star(3)
    mutate(p)
    with pytest.raises(pp.PlatformError) as err:
        pp.validate(p)
    assert field in str(err.value), str(err.value)
