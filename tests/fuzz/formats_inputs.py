"""Fuzzed formats of what users type and the files they hand parcomm: unit strings, platform short
forms, platform TOML files, platform dicts, multicast tree files, PlogP parameter files, and the
command lines that read them (see ``harness`` for the outcomes and how to add a format).

Generators start from valid documents and break one to three parts, so most inputs get past the
parser and reach the bounds and cross-checks; a share stays valid, and every accepted input is then
used the way the program would (a platform is simulated, a tree modelled, parameters predict).
"""

from __future__ import annotations

import contextlib
import io
import math
import random
from pathlib import Path

from harness import (
    Format,
    all_of,
    hostile_number,
    hostile_number_text,
    hostile_value,
    long_string,
    mutate_doc,
    mutate_text,
    names_any,
    to_json,
    to_toml,
    unicode_string,
    write_scratch,
)
from parcomm.models.params import FORMAT as PARAMS_FORMAT
from parcomm.models.params import PlogPParams
from parcomm.platform import as_platform, loader, schema, units
from parcomm.platform import mcast_tree as mtree
from parcomm.platform.shortform import _COMMON, _OPTIONS

ROOT = Path(__file__).resolve().parents[2]

# ----------------------------------------------------------------------------- values


def _duration_text(rng):
    return rng.choice(
        (
            "0",
            "200ms",
            "1us",
            "3 ns",
            "1e9s",
            "1e9",
            "1000000001",
            "1e10s",
            "1e6 h",
            "1e-12",
            "-5ms",
            "1e30s",
            "1e31",
            "9" * 30 + "h",
            "nan s",
            "inf",
            "0.2",
        )
    )


def _rate_text(rng):
    return rng.choice(
        (
            "1G",
            "10Mbps",
            "155M",
            "1e15",
            "1e16",
            "1.000001e15",
            "1Pbit/s",
            "1e-9",
            "0",
            "-1G",
            "1000T",
            "1e3T",
            "125MB/s",
            "1GiB/s",
            "1Gbit/s",
            "nan",
        )
    )


def _size_text(rng):
    return rng.choice(
        (
            "1500",
            "64KiB",
            "64kB",
            "1MiB",
            "9180B",
            "128",
            "127",
            "0",
            "8PiB",
            "1TiB",
            "2Ti",
            "1e15",
            "9007199254740992",
            "9007199254740993",
            "1.5KiB",
            "1.1B",
            "64Kib",
            "2**50",
            "1e16B",
        )
    )


def _count_text(rng):
    return rng.choice(
        (
            "1",
            "3",
            "10",
            "1000",
            "2k",
            "2Ki",
            "65535",
            "65536",
            "1e6",
            "1e9",
            "4294967296",
            "18446744073709551616",
            "0",
            "-1",
            "1.5",
            "1e30",
        )
    )


def _extreme_for(key: str, rng: random.Random):
    """A value for field ``key`` near or beyond a limit that field should have."""
    key = str(key)
    if key.endswith("_s") or key in ("x_s", "spread_s"):
        return rng.choice((_duration_text(rng), 1e9, 1e9 + 1, 1e300, 5e-324, -0.0, -1e-9, 0, 10**400))
    if key.endswith("_bps") or key in ("rate", "forward_pps", "backplane"):
        return rng.choice((_rate_text(rng), 1e15, 1e16, 1e-300, 2**64, 10**400, 1))
    if key in (
        "mtu",
        "size",
        "sndbuf_bytes",
        "rcvbuf_bytes",
        "sndbuf_initial_bytes",
        "buffer",
        "packet_bytes",
        "queue_bytes",
    ):
        return rng.choice(
            (
                _size_text(rng),
                2**53,
                2**53 + 1,
                2**63,
                2**64 - 1,
                2**64,
                65535,
                65536,
                65537,
                127,
                128,
                2**40,
                2**50,
                10**400,
            )
        )
    if key in ("n", "n_hosts", "n_segments", "hosts_per_segment", "hosts"):
        # host counts around the limit; a valid big platform costs a second to build, so rarely
        if rng.random() < 0.03:
            return rng.choice((4096, "4Ki", "2k", 1000))
        return rng.choice(("131073", 131073, 262144, "1e18", 2**64, -1, 0, 1, 2, "3", 1.5, 10**400, "1e99999999"))
    if key in (
        "nic_queue_packets",
        "initial_cwnd_segments",
        "dupack_threshold",
        "epd_threshold_cells",
        "seed",
        "procs",
        "drop_nth",
    ):
        return rng.choice(
            (
                _count_text(rng),
                0,
                1,
                2**16,
                2**16 + 1,
                4096,
                4097,
                2**31,
                2**53,
                2**63,
                2**64 - 1,
                2**64,
                2**70,
                -1,
                1e18,
                10**400,
            )
        )
    if key == "loss":
        return rng.choice((0.999999, 1.0, -0.0, 1e-300, "5%", "100%", "99.9999%", "-1%", "nan%", "1e400%"))
    if key in ("name", "a", "b", "parent", "child", "source", "kind", "unit", "framing", "builder", "scheme"):
        return rng.choice(
            (
                "",
                "h0",
                "sw0",
                "src",
                "a0",
                long_string(rng),
                unicode_string(rng),
                "cells",
                "atm",
                "router",
                "star",
                "fixed",
            )
        )
    return hostile_value(rng)


def _value(rng: random.Random, path: tuple):
    """Half the time a value aimed at the field's limits, else anything hostile."""
    key = next((k for k in reversed(path) if isinstance(k, str)), "")
    return _extreme_for(key, rng) if rng.random() < 0.5 else hostile_value(rng)


# ----------------------------------------------------------------------------- what messages must name

_FIELD_WORDS = sorted(
    {
        *(f for fields in schema.FIELDS.values() for f in fields),
        "size",
        "unit",
        "fixed_s",
        "per_byte_s",
        "jitter_s",
        "builder",
        "rto",
        "scheme",
        "x_s",
        "seed",
        "spread_s",
        "platform",
        *_COMMON,
        *(k for opts in _OPTIONS.values() for k in opts),
        *_OPTIONS,
        "rto_min",
        "rto_max",
        "n",
        "n_segments",
        "hosts_per_segment",
        "n_hosts",
        "host count",
        "segment count",
        "hosts per segment",
        "buffer_cells",
        "switch_latency_s",
        "flow_control",
    }
)
#: Messages about a platform name a field, an option, a kind or a line.
NAMES_PLATFORM_FIELD = names_any(_FIELD_WORDS, [r"\bline \d+"])
#: A message about a whole file (too large, not UTF-8, not TOML or JSON at all) names the file and says so.
_WHOLE_FILE = [r"\bline \d+", r"invalid (JSON|TOML)", r"malformed JSON", "not UTF-8", r"limit of \d+ bytes"]

_TREE_WORDS = [
    "tree",
    "name",
    "source",
    "packet_bytes",
    "nodes",
    "networks",
    "kind",
    "repair",
    "parent",
    "child",
    "delay_s",
    "loss",
    "rate_bps",
    "receiver",
    "router",
    "node",
    "network",
]
_PARAM_WORDS = [
    "format",
    "procs",
    "L",
    "sizes",
    "g",
    "o_s",
    "o_r",
    "g_pattern",
    "queue_bytes",
    "flow_control",
    "rto_s",
    "meta",
    "top level",
    "unknown field(s)",
]


def _names_file(name: str):
    return names_any([name])


# ----------------------------------------------------------------------------- unit strings

_PARSERS = {
    "size": (units.parse_size, ("", "B", "kB", "KiB", "MiB", "GB", "GiB", "TiB", "k", "Ki", "bytes", "b", "KiB ")),
    "count": (units.parse_count, ("", "k", "Ki", "M", "Gi", "T", "x", "B")),
    "rate": (units.parse_rate, ("", "bps", "Mbps", "G", "Gbit/s", "bit/s", "B/s", "MBps", "Ki", "Mib/s", "hz")),
    "duration": (units.parse_duration, ("", "s", "ms", "us", "\u00b5s", "ns", "min", "h", "sec", "S", "d")),
    "buffer": (units.parse_buffer, ("", "B", "KiB", "packets", "pkt", "cells", "c", "Ki cells", "b", "frames")),
    "bool": (units.parse_bool, ("",)),
}
_OPTION_NAMES = ("--size", "--rate", "--rto-min", "tcp.rto_min_s", "links[3].rate_bps", "switches.sw0.buffer")


def gen_unit(rng):
    kind = rng.choice(list(_PARSERS))
    what = rng.choice(_OPTION_NAMES)
    r = rng.random()
    if r < 0.65:
        value = rng.choice((hostile_number_text(rng), str(rng.randint(0, 10**6)), f"{rng.random() * 1e4:.3f}"))
        value += rng.choice(("", "", " ")) + rng.choice(_PARSERS[kind][1])
    elif r < 0.85:
        value = rng.choice((hostile_number(rng), hostile_value(rng), 10 ** rng.randint(0, 400), -rng.random()))
    elif r < 0.92 and kind == "buffer":
        value = {
            "size": rng.choice((_size_text(rng), hostile_value(rng))),
            "unit": rng.choice(("bytes", "packets", "cells", "bits", 3, None)),
        }
    else:
        value = mutate_text(rng, rng.choice(("64KiB", "200ms", "1Gbit/s", "100 packets", "1500", "on")))
    return kind, what, value


#: Bounds an accepted value must respect (the parsers' documented limits).
_BOUNDS = {
    "size": units.MAX_WHOLE,
    "count": units.MAX_WHOLE,
    "rate": units.MAX_RATE_BPS,
    "duration": units.MAX_DURATION_S,
}


def target_unit(arg):
    kind, what, value = arg
    out = _PARSERS[kind][0](value, what=what)
    if kind in _BOUNDS:
        assert isinstance(out, (int, float)) and math.isfinite(out) and 0 <= out <= _BOUNDS[kind], out
    if kind == "buffer":
        assert 0 <= out["size"] <= units.MAX_WHOLE, out
    return out


def names_unit(message, arg):
    return arg[1] in message


# ----------------------------------------------------------------------------- platform short forms

_KIND_VALUES = {
    "rate": _rate_text,
    "backplane": _rate_text,
    "buffer": _size_text,
    "router_buffer": _count_text,
    "prop": _duration_text,
    "latency": _duration_text,
    "rto_min": _duration_text,
    "rto_max": _duration_text,
    "mtu": _size_text,
    "hosts": lambda r: str(_extreme_for("hosts", r)),
    "pps": _count_text,
    "epd_threshold": _count_text,
}


def _option_value(rng, key):
    r = rng.random()
    if r < 0.6 and key in _KIND_VALUES:
        return _KIND_VALUES[key](rng)
    if r < 0.75:
        return rng.choice(
            (
                "on",
                "off",
                "yes",
                "2",
                "ethernet",
                "atm",
                "raw",
                "token-ring",
                "0.01",
                "1.0",
                "nan",
                "-0.1",
                "x" * 5000,
                unicode_string(rng),
            )
        )
    return hostile_number_text(rng) + rng.choice(("", "KiB", "ms", "G", " packets", " cells", "%"))


def gen_shortform(rng):
    kind = rng.choice((*_OPTIONS, *_OPTIONS, *_OPTIONS, "ring", "STAR", " star ", ""))
    r = rng.random()
    if r < 0.55:
        size = str(rng.randint(1, 12))
    elif r < 0.65 and kind.strip().lower() == "segments":
        size = rng.choice(
            (
                "2x2",
                "3x1",
                "4x3",
                "65536x65536",
                "4096x64",
                "2x65537",
                "64x64",
                "2049x64",
                "1e9x1e9",
                "0x3",
                "2x",
                "x2",
                "2x2x2",
            )
        )
    elif r < 0.9:
        size = rng.choice(
            (
                "131073",
                "262144",
                "262145",
                "1e18",
                "1e99999999",
                "9" * 40,
                "0",
                "-1",
                "3.5",
                "200k",
                "256Ki",
                "nan",
                "",
                "abc",
                "1_0",
                "2e5",
            )
        )
    elif r < 0.91:  # the largest valid platforms (a second each to build and simulate)
        size = rng.choice(("4096", "4Ki", "2k", "64x64" if kind == "segments" else "1000"))
    else:
        size = hostile_number_text(rng)
    keys = list({**_COMMON, **_OPTIONS.get(kind.strip().lower(), {})}) + ["rto_min", "rto_max"]
    opts = []
    for _ in range(rng.choice((0, 0, 1, 1, 2, 3))):
        key = rng.choice(keys) if rng.random() < 0.9 else rng.choice(("bogus", "", "RATE", "rate ", "=", "tcp"))
        opts.append(f"{key}={_option_value(rng, key)}" if rng.random() < 0.95 else key)
    text = ",".join([f"{kind}:{size}" if rng.random() < 0.95 else kind, *opts])
    return mutate_text(rng, text, (",", ":", "=", "x")) if rng.random() < 0.12 else text


def _simulate(p: dict) -> None:
    """Use an accepted platform as ``parcomm sim`` would: a short broadcast over its first hosts."""
    from parcomm.collectives import BCAST_ALGORITHMS
    from parcomm.comm import CommError, run_sim

    n = min(4, len(p["hosts"]))
    try:
        run_sim(BCAST_ALGORITHMS["binomial"], p, n, kwargs={"nbytes": 20_000, "root": 0}, time_limit=5.0)
    except CommError as e:  # a slow platform (1 bit/s links, 1e9 s latencies) is valid, just slow
        if "time limit" not in str(e):
            raise


def target_shortform(text):
    p = as_platform(text)
    _simulate(p)
    return p


# ----------------------------------------------------------------------------- platform files (TOML) and dicts


def _seed_platforms() -> list[dict]:
    import tomllib

    cluster = tomllib.loads((ROOT / "examples" / "platform_file" / "cluster.toml").read_text())
    return [
        cluster,
        {
            "builder": "star",
            "n": 4,
            "rate_bps": "1G",
            "buffer": "64KiB",
            "flow_control": True,
            "tcp": {"rto_min_s": "200ms", "sndbuf_bytes": "64KiB", "rcvbuf_bytes": "64KiB"},
        },
        {
            "builder": "atm",
            "n": 4,
            "buffer_cells": 2048,
            "early_packet_discard": True,
            "epd_threshold_cells": 1000,
            "rto": {"scheme": "random_min", "x_s": "250ms", "seed": 3},
        },
        {
            "builder": "segments",
            "n_segments": 2,
            "hosts_per_segment": 2,
            "router_buffer": "40 packets",
            "rto": {"rto_min_s": "1s", "rto_max_s": "64s"},
        },
        {"builder": "opteron", "n": 3, "jitter_s": "5us", "mtu": 9000},
        {
            "name": "explicit",
            "hosts": [
                {
                    "name": "a",
                    "mtu": 9180,
                    "nic_queue_packets": 64,
                    "send_overhead": {"fixed_s": "5us", "per_byte_s": 1e-9},
                    "tcp": {"initial_cwnd_segments": 3, "dupack_threshold": 3, "delayed_ack": True, "sack": True},
                },
                {"name": "b", "recv_overhead": ["2us", 0]},
                {"name": "c"},
            ],
            "switches": [
                {"name": "sw", "buffer": {"size": 2048, "unit": "cells"}, "cell_interleaving": True, "latency_s": "1us"}
            ],
            "links": [
                {"a": "a", "b": "sw", "rate_bps": "149.76M", "framing": "atm", "drop_nth": [3, 7]},
                {"a": "r0", "b": "sw", "rate_bps": "149.76M", "framing": "atm", "loss": 0.001},
            ],
            "segments": [{"name": "seg", "rate_bps": "10M", "members": ["b", "c", "r0"], "collisions": False}],
            "routers": [{"name": "r0", "forward_pps": 100000, "backplane_bps": "533M", "buffer": "40 packets"}],
        },
    ]


_PLATFORM_SEEDS = _seed_platforms()
_PLATFORM_TEXTS = [to_toml(d) for d in _PLATFORM_SEEDS] + [
    (ROOT / "examples" / "platform_file" / "cluster.toml").read_text()
]
_PLATFORM_KEYS = ("bogus", "hosts", "builder", "rto", "tcp", "n", "mtu", "unit", "name")


def gen_toml(rng):
    r = rng.random()
    if r < 0.62:
        doc = mutate_doc(rng, rng.choice(_PLATFORM_SEEDS), _value, _PLATFORM_KEYS)
        text = to_toml(doc) if isinstance(doc, dict) else f"x = {to_json(doc)[:100000]}\n"
    elif r < 0.72:
        text = to_toml(rng.choice(_PLATFORM_SEEDS))  # valid
    else:
        text = mutate_text(
            rng,
            rng.choice(_PLATFORM_TEXTS),
            ("[[hosts]]\n", "[[links]]\n", "[rto]\n", "name = ", "tcp = {", ' = "1e99999999"\n', "}"),
        )
    if rng.random() < 0.03:  # bytes that are not UTF-8
        return text.encode("utf-8", "surrogatepass")[:100] + b"\xff\xfe\x80" + text.encode("utf-8", "surrogatepass")
    return text


def target_toml(text):
    p = loader.load(write_scratch("platform.toml", text))
    _simulate(p)
    return p


def gen_platform_dict(rng):
    seeds = _PLATFORM_DICT_SEEDS
    return mutate_doc(rng, rng.choice(seeds), _value, _PLATFORM_KEYS)


def _dict_seeds():
    out = [as_platform(s) for s in ("star:3", "atm:3", "segments:2x2", "opteron:2")]
    out.append(loader.from_mapping(_PLATFORM_SEEDS[-1]))
    return out


_PLATFORM_DICT_SEEDS = _dict_seeds()


def target_platform_dict(d):
    """What ``run_sim(program, platform_dict)`` and ``parcomm.platform.to_json`` do with a user's dict."""
    p = as_platform(d)
    schema.to_json(p)
    _simulate(p)
    return p


# ----------------------------------------------------------------------------- multicast trees


def _tree_seeds() -> list[dict]:
    import tomllib

    sites = tomllib.loads((ROOT / "examples" / "mcast_placement" / "three_sites.toml").read_text())
    return [
        mtree.to_dict(mtree.binary_tree(8, repair_at=[1])),
        mtree.to_dict(mtree.path_tree(mtree.STUDY4_SEGMENTS)),
        mtree.to_dict(mtree.branching(4)),
        sites,
    ]


_TREE_SEEDS = _tree_seeds()
_TREE_KEYS = ("bogus", "repair", "delay_s", "nodes", "kind")


def gen_tree(rng):
    fmt = rng.choice(("json", "toml"))
    dump = to_json if fmt == "json" else to_toml
    r = rng.random()
    if r < 0.65:
        doc = mutate_doc(rng, rng.choice(_TREE_SEEDS), _value, _TREE_KEYS)
        text = dump(doc) if (fmt == "json" or isinstance(doc, dict)) else f"x = {to_json(doc)[:1000]}\n"
    elif r < 0.73:
        text = dump(rng.choice(_TREE_SEEDS))
    else:
        text = mutate_text(rng, dump(rng.choice(_TREE_SEEDS)))
    return fmt, text


def target_tree(arg):
    from parcomm.apps.mcast import placement
    from parcomm.models.multicast import analyze

    fmt, text = arg
    t = mtree.load(write_scratch(f"tree.{fmt}", text))
    for convention in ("route", "fanout", "coverage"):
        analyze(t, convention=convention)
    placement.place(t, routers=1, convention="route")
    return t


# ----------------------------------------------------------------------------- model parameter files

_PARAMS = {
    "format": PARAMS_FORMAT,
    "procs": 8,
    "L": 5e-5,
    "sizes": [0, 1024, 65536],
    "g": [1e-5, 2e-5, 6e-4],
    "o_s": [2e-6, 3e-6, 5e-5],
    "o_r": [2e-6, 3e-6, 5e-5],
    "g_pattern": {"xor1": [1e-5, 2e-5, 7e-4]},
    "queue_bytes": 65536.0,
    "flow_control": False,
    "rto_s": 0.2,
    "meta": {"platform": "star:8"},
}


def gen_params(rng):
    r = rng.random()
    if r < 0.65:
        return to_json(mutate_doc(rng, _PARAMS, _value, ("bogus", "g", "procs")))
    if r < 0.73:
        return to_json(_PARAMS)
    return mutate_text(rng, to_json(_PARAMS))


def target_params(text):
    from parcomm.models import MODELS, make_model

    p = PlogPParams.load(write_scratch("params.json", text))
    for name in MODELS:  # the models do arithmetic on every field: an accepted file must survive it
        model = make_model(name, p)
        for algo in ("alltoall_a", "alltoall_b", "bcast_binomial", "barrier"):
            try:
                t = model.predict(algo, 8, 4096)
            except ValueError:  # a model that needs a field this file lacks (e.g. q) says so
                continue
            assert math.isfinite(t) and t >= 0, (name, algo, t)
    return p


# ----------------------------------------------------------------------------- command lines

_TREE_FILE = None
_PARAMS_FILE = None


def _files():
    global _TREE_FILE, _PARAMS_FILE
    if _TREE_FILE is None:
        _TREE_FILE = write_scratch("cli-tree.json", to_json(_TREE_SEEDS[0]))
        _PARAMS_FILE = write_scratch("cli-params.json", to_json(_PARAMS))
    return _TREE_FILE, _PARAMS_FILE


#: (argv without the value, option whose value is fuzzed, a valid value, value kind)
_COMMANDS = (
    (["sim", "barrier", "--platform", "star:2", "--time-limit", "0.2s"], "--seed", "1", "count"),
    (["sim", "barrier", "--platform", "star:2", "--time-limit", "0.2s"], "--procs", "2", "count"),
    (["sim", "barrier", "--platform", "star:2"], "--time-limit", "10s", "duration"),
    (["sim", "barrier", "--platform", "star:2", "--time-limit", "0.2s"], "--eager-limit", "64KiB", "size"),
    (["sim", "barrier", "--platform", "star:2", "--time-limit", "0.2s"], "--rto-min", "200ms", "duration"),
    (
        ["sim", "barrier", "--platform", "star:2", "--time-limit", "0.2s", "--rto-scheme", "random_min"],
        "--rto-min",
        "200ms",
        "duration",
    ),
    (["sim", "barrier", "--time-limit", "0.2s"], "--platform", "star:2", "platform"),
    (["sim", "bcast", "--platform", "star:2", "--time-limit", "0.2s"], "--size", "1KiB", "size"),
    (["sim", "bcast", "--platform", "star:2", "--time-limit", "0.2s", "--size", "1KiB"], "--root", "0", "count"),
    (["model", "select", "alltoall", "--params", "@params", "--procs", "8"], "--size", "1KiB", "size"),
    (["model", "select", "alltoall", "--params", "@params", "--size", "1KiB"], "--procs", "8", "count"),
    (["model", "predict", "bcast_binomial", "--params", "@params", "--size", "1KiB"], "--procs", "8", "count"),
    (["model", "predict", "A", "--params", "@params", "--procs", "8"], "--size", "1KiB", "size"),
    (["mcast", "model", "@tree"], "--rate", "622M", "rate"),
    (["mcast", "place", "@tree"], "--routers", "1", "count"),
    (["mcast", "place", "@tree"], "--buffer", "10MB", "size"),
    (["mcast", "sim", "@tree", "--set", "packets=20"], "--seed", "1", "count"),
    (["mcast", "sim", "@tree", "--seed", "1"], "--set", "packets=20", "set"),
)


def gen_cli(rng):
    argv, option, valid, kind = rng.choice(_COMMANDS)
    r = rng.random()
    if r < 0.15:
        value = valid
    elif kind == "platform":
        value = gen_shortform(rng)
    elif kind == "set":
        value = (
            rng.choice(("packets", "window", "queue_limit_packets", "rate_pps", "ack_bytes", "rto_factor"))
            + "="
            + rng.choice((hostile_number_text(rng), str(_extreme_for("n", rng)), "20"))
        )
    elif r < 0.6:
        value = {"count": _count_text, "duration": _duration_text, "size": _size_text, "rate": _rate_text}[kind](rng)
    else:
        value = hostile_number_text(rng)
    return [*argv, option, value]


class CliError(ValueError):
    """``parcomm`` exited 2 with this error line."""


def target_cli(argv):
    from parcomm.cli import main

    tree, params = _files()
    argv = [tree if a == "@tree" else params if a == "@params" else a for a in argv]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
    if rc == 0:
        return out.getvalue()
    errors = [ln for ln in lines if ln.lower().startswith("error")]
    # exit 2 and exactly one error line, the last, for a user's mistake (tests/test_cli.py's rule);
    # a run that reaches its --time-limit is a failed run instead: exit 1, also in one line
    reached_limit = rc == 1 and len(errors) == 1 and "time limit" in errors[0] and "reached" in errors[0]
    assert rc == 2 or reached_limit, (rc, err.getvalue()[-2000:])
    assert len(errors) == 1 and lines[-1] == errors[0], err.getvalue()[-2000:]
    raise CliError(errors[0])


def names_cli(message, argv):
    """The error names the option (``--time-limit``, 'time limit', a ``--set`` key) or quotes the value."""
    option, value = argv[-2], argv[-1]
    bare = option.lstrip("-")
    words = {option, bare, bare.replace("-", " "), bare.replace("-", "_")}
    words |= {a for a in argv if a.startswith("--")}  # or another option given, which decides it
    if option == "--set":
        words.add(value.partition("=")[0])
    if any(w and w in message for w in words) or bool(value.strip() and value.strip()[:40] in message):
        return True
    # a platform short form's messages name its fields
    return option == "--platform" and NAMES_PLATFORM_FIELD(message, value)


# ----------------------------------------------------------------------------- the list

FORMATS = [
    Format("unit strings", gen_unit, target_unit, 3000, names=names_unit),
    Format("platform short form", gen_shortform, target_shortform, 3000, names=NAMES_PLATFORM_FIELD),
    Format(
        "platform TOML",
        gen_toml,
        target_toml,
        2500,
        names=all_of(_names_file("platform.toml"), names_any(_FIELD_WORDS, _WHOLE_FILE)),
    ),
    Format("platform dict", gen_platform_dict, target_platform_dict, 2500, names=NAMES_PLATFORM_FIELD),
    Format(
        "multicast tree",
        gen_tree,
        target_tree,
        2500,
        names=all_of(names_any(["tree.json", "tree.toml"]), names_any(_TREE_WORDS, _WHOLE_FILE)),
    ),
    Format(
        "model parameters",
        gen_params,
        target_params,
        2500,
        names=all_of(_names_file("params.json"), names_any(_PARAM_WORDS, _WHOLE_FILE)),
    ),
    # a valid command may take seconds (a 4096-host platform, a million-rank model)
    Format("command line", gen_cli, target_cli, 1000, names=names_cli, time_cap_s=10.0),
]
