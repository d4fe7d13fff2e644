"""Fuzzing what users type and the files they hand parcomm: unit strings,
platform short forms, platform TOML files and dicts, multicast trees, and
PlogP parameter files.

Each generated input is run in-process under a time cap (SIGALRM) and an
address-space cap; the outcome is one of: a clean error (a ``ValueError``
subclass, which the CLI prints as one ``error:`` line, whose message names the
option, field or file), accepted (a valid result), a traceback (any other
exception: a bug), or a blow-up (the time or memory cap hit: a bug). Seeded, so
the corpus is the same on every run; ``-s`` prints the counts per format.

To add a format: write ``gen(rng) -> input`` and ``target(input)``, add a row
to FORMATS.
"""

from __future__ import annotations

import copy
import json
import math
import random
import resource
import signal
from collections import Counter
from pathlib import Path

import pytest

from parcomm.apps.mcast import tree as mtree
from parcomm.models.params import FORMAT as PARAMS_FORMAT
from parcomm.models.params import PlogPParams
from parcomm.platform import as_platform
from parcomm.platform import loader
from parcomm.platform.units import parse_buffer, parse_count, parse_duration, parse_rate, parse_size

SEED = 141
TIME_CAP_S = 5.0
ROOT = Path(__file__).resolve().parents[2]

_NUMBERS = ["0", "1", "64", "1.5", "-3", "1e3", "1e18", "1e308", "1e99999999", "9" * 50, ".5", "+7", "nan", "inf",
            "0x10", "1_000", "", " ", "1e-400", "2**70"]
_UNITS = ["", "B", "KiB", "kB", "MiB", "GB", "b", "Kib", "ms", "s", "us", "µs", "ns", "min", "h", "G", "Mbps",
          "bit/s", "B/s", "Gi", "packets", "cells", "pkt", "x", "KiKiB", " KiB ", "\x00", "秒"]
_HOSTILE = [2**70, -1, 0, 1e308, float("nan"), float("inf"), True, None, "x", "", [], {}, [1, 2], {"a": 1},
            "1e99999999", "9" * 5000, -(2**63)]


class _TimeCap(Exception):
    pass


def _on_alarm(signum, frame):
    raise _TimeCap()


def _mutate_text(rng: random.Random, text: str) -> str:
    how = rng.randrange(6)
    if how == 0:
        return text[: rng.randrange(len(text) + 1)]
    if how == 1:
        chars = list(text)
        for _ in range(rng.randint(1, 6)):
            chars[rng.randrange(len(chars))] = rng.choice('"[]{}=#\n\\0x9.-+e ')
        return "".join(chars)
    if how == 2:  # a number replaced by something hostile
        import re

        nums = list(re.finditer(r"\d+(?:\.\d+)?(?:e\d+)?", text))
        if nums:
            m = rng.choice(nums)
            return text[: m.start()] + rng.choice(["1e999", "-1", "0", "99999999999999999999999", "nan", '"x"',
                                                   "[]", "{}", "true"]) + text[m.end():]
        return text
    if how == 3:  # deep nesting
        depth = rng.choice([100, 10_000, 100_000])
        return text + "\nx = " + "[" * depth + "]" * depth
    if how == 4:  # huge
        return text + "\n# " + "x" * rng.choice([1000, 300_000])
    return text + rng.choice(["\n[[hosts]]\n", "\nname = 5\n", "\n\x00\n", "\nrto = {min = \"1ms\"}\n"])


def _mutate_tree(rng: random.Random, doc) -> object:
    doc = copy.deepcopy(doc)
    for _ in range(rng.randint(1, 3)):
        node = doc
        path = []
        while isinstance(node, (dict, list)) and node and rng.random() < 0.8:
            key = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
            path.append((node, key))
            node = node[key]
        if not path:
            return copy.deepcopy(rng.choice(_HOSTILE))
        parent, key = path[-1]
        if rng.random() < 0.15 and isinstance(parent, dict):
            del parent[key]
        else:
            parent[key] = copy.deepcopy(rng.choice(_HOSTILE))
    return doc


# --- the formats ----------------------------------------------------------------------


def gen_unit(rng):
    parser = rng.choice([parse_size, parse_rate, parse_duration, parse_count, parse_buffer])
    if rng.random() < 0.2:
        return parser, rng.choice(_HOSTILE)
    return parser, rng.choice(_NUMBERS) + rng.choice(["", " "]) + rng.choice(_UNITS)


def target_unit(arg):
    parser, value = arg
    return parser(value, "--option")


_KINDS = {"star": ["rate", "buffer", "fc", "prop", "latency", "loss", "framing", "mtu"],
          "atm": ["rate", "buffer", "epd", "epd_threshold", "cells", "latency", "prop"],
          "opteron": ["rate", "buffer", "fc", "latency", "prop"],
          "segments": ["rate", "hosts", "collisions", "prop", "pps", "backplane", "router_buffer"]}


def gen_shortform(rng):
    kind = rng.choice([*_KINDS, "ring", "STAR", ""])
    size = rng.choice(["4", "2", "1", "0", "-1", "1e18", "99999999", "4x2", "2x1e12", "abc", "", "3.5", "17"])
    opts = []
    for _ in range(rng.randint(0, 3)):
        key = rng.choice(_KINDS.get(kind, ["rate"]) + ["rto_min", "rto_max", "bogus", ""])
        value = rng.choice(_NUMBERS) + rng.choice(_UNITS)
        opts.append(f"{key}={value}" if rng.random() < 0.9 else key)
    return ",".join([f"{kind}:{size}", *opts])


_TOML = (ROOT / "examples" / "platform_file" / "cluster.toml").read_text()


def gen_toml(rng):
    return _mutate_text(rng, _TOML)


def target_toml(text):
    return loader.loads(text, source="cluster.toml")


_STAR = as_platform("star:4")


def gen_platform_dict(rng):
    return _mutate_tree(rng, _STAR)


def target_platform_dict(d):
    """What ``run_sim(program, platform_dict)`` does with a user's dict: the core validates it."""
    from parcomm import _core

    return _core.Simulation(json.dumps(as_platform(d)), 0)


_TREE = json.dumps(mtree.to_dict(mtree.binary_tree(8)))


def gen_tree(rng):
    if rng.random() < 0.5:
        return _mutate_text(rng, _TREE)
    return json.dumps(_mutate_tree(rng, json.loads(_TREE)), allow_nan=True)


def target_tree(text):
    return mtree.loads(text, fmt="json", source="tree.json")


_PARAMS = {"format": PARAMS_FORMAT, "procs": 8, "L": 5e-5, "sizes": [1, 1024, 65536], "g": [1e-5, 2e-5, 6e-4],
           "o_s": [2e-6, 3e-6, 5e-5], "o_r": [2e-6, 3e-6, 5e-5], "g_pattern": {"ring": [1e-5, 2e-5, 7e-4]},
           "queue_bytes": 65536.0, "flow_control": False, "rto_s": 0.2, "meta": {}}


def gen_params(rng):
    if rng.random() < 0.3:
        return _mutate_text(rng, json.dumps(_PARAMS))
    return json.dumps(_mutate_tree(rng, _PARAMS), allow_nan=True)


def target_params(text):
    try:
        d = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise ValueError(f"params.json: malformed JSON: {e}") from None
    p = PlogPParams.from_dict(d, "params.json")
    # a loaded file must be usable: the model reads these
    return p.g_at(4096) + p.o_s_at(100) + p.o_r_at(1e6) + p.g_pattern_at("ring", 512) + p.rto_s


#: name -> (generator, target, inputs)
FORMATS = {
    "unit strings": (gen_unit, target_unit, 3000),
    "platform short form": (gen_shortform, as_platform, 2500),
    "platform TOML": (gen_toml, target_toml, 1500),
    "platform dict": (gen_platform_dict, target_platform_dict, 1500),
    "multicast tree": (gen_tree, target_tree, 1500),
    "model parameters": (gen_params, target_params, 1500),
}


#: What a clean error must name, per format (None: not checked; the core's own messages
#: for platform dicts do not always name the field, see the platform-schema issue).
NAMES = {"unit strings": "--option", "platform short form": None, "platform TOML": "cluster.toml",
         "platform dict": None, "multicast tree": "tree.json", "model parameters": "params.json"}


def _one(target, arg, must_name: str | None = None) -> str:
    signal.setitimer(signal.ITIMER_REAL, TIME_CAP_S)
    try:
        target(arg)
    except _TimeCap:
        return "blow-up"
    except MemoryError:
        return "blow-up"
    except ValueError as exc:
        msg = str(exc)
        assert msg and "\n" not in msg.strip(), repr(msg)
        assert must_name is None or must_name in msg, f"{msg!r} does not name {must_name!r}"
        return "clean error"
    except RecursionError:
        return "blow-up"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return "accepted"


@pytest.mark.parametrize("name", list(FORMATS))
def test_fuzz_format(name):
    gen, target, n = FORMATS[name]
    rng = random.Random(f"{SEED}/{name}")
    old_handler = signal.signal(signal.SIGALRM, _on_alarm)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (6 << 30, hard))
    counts: Counter = Counter()
    first: dict[str, str] = {}
    try:
        for _ in range(n):
            arg = gen(rng)
            try:
                outcome = _one(target, arg, NAMES[name])
            except AssertionError:
                raise
            except Exception as exc:  # noqa: BLE001 - the outcome under test
                outcome = "traceback"
                first.setdefault(type(exc).__name__, f"{exc!r} on {str(arg)[:120]!r}")
            counts[outcome] += 1
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        signal.signal(signal.SIGALRM, old_handler)
    print(f"\n{name:<22} {n:>6} inputs  " + "  ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    assert counts["traceback"] == 0 and counts["blow-up"] == 0, (counts, first)
    assert counts["clean error"] > n // 10  # the corpus is really hostile
