"""Fuzzed formats, round two (issue 30): the files and options the first corpus did not reach.

``bcast sim --storage-profile FILE`` (JSON and TOML; the reproducers of issue 30: integers over
4,300 digits, bytes that are not UTF-8, deep nesting, NaN in ``message_latency_s``), the
conformance matrix through ``conformance FILE --list``, ``--kwargs`` JSON, rank addresses files,
key files, ``--rendezvous-dir`` entries and ``mine gen``'s numeric options. Command lines are run
through the CLI in-process, as ``formats_inputs.target_cli`` does: exit 2 and one error line, or
exit 0. See ``harness`` for the outcomes.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import tomllib

from harness import (
    Format,
    deep_nesting,
    hostile_number,
    hostile_number_text,
    hostile_value,
    mutate_doc,
    mutate_text,
    names_any,
    scratch_dir,
    to_json,
    to_toml,
    write_scratch,
)
from parcomm.apps.bcast import rendezvous as rv
from parcomm.apps.bcast.storage_model import PROFILES
from parcomm.auth import JobKey
from parcomm.comm.aio import parse_kwargs
from parcomm.comm.base import CommError
from parcomm.comm.sockopts import read_addresses
from parcomm.conformance.matrix import DEFAULT_MATRIX


class CliError(ValueError):
    """``parcomm`` exited 2 with this error line."""


def _cli(argv: list[str]) -> str:
    """Run the CLI in-process: its output if it exits 0; :class:`CliError` if it exits 2 with exactly
    one error line, the last one; anything else fails the input."""
    from parcomm.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    if rc == 0:
        return out.getvalue()
    lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.lower().startswith("error")]
    assert rc == 2, (rc, err.getvalue()[-2000:])
    assert len(errors) == 1 and lines[-1] == errors[0], err.getvalue()[-2000:]
    raise CliError(errors[0])


def _as_text(rng: random.Random, doc, fmt: str) -> str:
    if fmt == "toml" and isinstance(doc, dict):
        return to_toml(doc)
    return to_json(doc)[:2_000_000]


def _classic(rng: random.Random, fmt: str, number_key: str) -> str | bytes:
    """Issue 30's four classes, in one of two formats: a huge integer, bytes that are not UTF-8,
    deep nesting, NaN (JSON's extension) where a number belongs."""
    how = rng.randrange(4)
    eq = " = " if fmt == "toml" else '": '
    lead = number_key if fmt == "toml" else '{"' + number_key
    tail = "\n" if fmt == "toml" else "}"
    if how == 0:
        return f"{lead}{eq}{'9' * rng.choice((4_301, 5_000, 100_000))}{tail}"
    if how == 1:
        return f"{lead}{eq}1{tail}".encode()[:4] + b"\xff\xfe\xc0\x80" + b"1" + tail.encode()
    if how == 2:
        return f"{lead}{eq}{deep_nesting(rng)}{tail}"
    return f"{lead}{eq}{rng.choice(('NaN', 'nan', 'Infinity', '-Infinity', 'inf'))}{tail}"


# ----------------------------------------------------------------------------- storage profiles

_PROFILE_SEEDS = [dict(p) for p in PROFILES.values()]
_PROFILE_KEYS = ("bogus", "modes", "weight", "low_mb_s", "aggregate_mb_s", "message_latency_s", "rate_hold_s")
_PROFILE_NUMBERS = ("message_latency_s", "rate_hold_s", "peer_mb_s", "nic_up_mb_s", "aggregate_mb_s")


def gen_profile(rng):
    fmt = rng.choice(("json", "toml"))
    r = rng.random()
    if r < 0.10:
        doc = dict(rng.choice(_PROFILE_SEEDS))
        doc.pop("name")
        return fmt, _as_text(rng, doc, fmt)  # valid
    if r < 0.55:
        doc = mutate_doc(rng, rng.choice(_PROFILE_SEEDS), lambda g, _p: hostile_value(g), _PROFILE_KEYS)
        return fmt, _as_text(rng, doc, fmt)
    if r < 0.85:
        return fmt, mutate_text(rng, _as_text(rng, rng.choice(_PROFILE_SEEDS), fmt), _PROFILE_KEYS)
    return fmt, _classic(rng, fmt, rng.choice(_PROFILE_NUMBERS))


def target_profile(arg):
    fmt, data = arg
    path = write_scratch(f"profile.{fmt}", data)
    # A small broadcast: what an accepted profile is for (it must simulate, and terminate).
    return _cli(["bcast", "sim", "--procs", "2", "--size", "1MB", "--piece-size", "256KiB", "--storage-profile", path])


# ----------------------------------------------------------------------------- conformance matrices

with open(DEFAULT_MATRIX, "rb") as _f:
    _MATRIX_TEXT = _f.read().decode()
_MATRIX_DOC = tomllib.loads(_MATRIX_TEXT)
_MATRIX_SMALL = {
    "defaults": {"rate": "100M", "buffer": "32KiB"},
    "quick": ["a-2"],
    "scenario": [
        {"name": "a-{senders}", "workload": "incast", "hosts": 5, "senders": [2, 4], "size": "64KiB"},
        {"name": "p", "workload": "program", "hosts": 2, "program": "m:f", "kwargs": {"nbytes": "1KiB"}},
    ],
}
_MATRIX_KEYS = ("bogus", "hosts", "senders", "size", "rate", "tcp", "rto_min", "name", "repeat", "timeout")


def gen_matrix(rng):
    r = rng.random()
    if r < 0.10:
        return to_toml(_MATRIX_SMALL)
    if r < 0.50:
        doc = mutate_doc(rng, rng.choice((_MATRIX_SMALL, _MATRIX_DOC)), lambda g, _p: hostile_value(g), _MATRIX_KEYS)
        return to_toml(doc) if isinstance(doc, dict) else f"x = {to_json(doc)[:100_000]}\n"
    if r < 0.85:
        return mutate_text(rng, rng.choice((_MATRIX_TEXT, to_toml(_MATRIX_SMALL))), ("[[scenario]]\n", "{hosts:>9}"))
    return _classic(rng, "toml", rng.choice(("hosts", "senders", "repeat")))


def target_matrix(text):
    return _cli(["conformance", write_scratch("matrix.toml", text), "--list"])


# ----------------------------------------------------------------------------- --kwargs

_KWARGS_SEEDS = [{"nbytes": 65536}, {"n": 1000, "hold_s": 0.5}, {"sizes": [1, 2, 3], "label": "x"}, {}]


def gen_kwargs(rng):
    r = rng.random()
    if r < 0.10:
        return json.dumps(rng.choice(_KWARGS_SEEDS))
    if r < 0.45:
        return to_json(mutate_doc(rng, rng.choice(_KWARGS_SEEDS)))[:2_000_000]
    if r < 0.85:
        return mutate_text(rng, json.dumps(rng.choice(_KWARGS_SEEDS)))
    data = _classic(rng, "json", "nbytes")
    return data.decode("utf-8", "surrogateescape") if isinstance(data, bytes) else data  # as argv holds it


def target_kwargs(text):
    value = parse_kwargs(text)
    assert isinstance(value, dict)
    return value


# ----------------------------------------------------------------------------- addresses files

_ADDRESSES = "# rank addresses\n127.0.0.1 5000\n127.0.0.1 5001\n\n10.0.0.2 6000  # a comment\n"


def gen_addresses(rng):
    r = rng.random()
    if r < 0.10:
        return _ADDRESSES
    if r < 0.85:
        return mutate_text(rng, _ADDRESSES, (" ", "\n", "#", "65536", "-1"))
    host = rng.choice(("127.0.0.1", "", "x" * 300, "\x00"))
    return f"{host} {rng.choice((hostile_number_text(rng), str(hostile_number(rng))))}\n"


def target_addresses(text):
    pairs = read_addresses(write_scratch("addresses.txt", text))
    assert pairs and all(0 < p < 65536 for _, p in pairs)
    return pairs


# ----------------------------------------------------------------------------- key files

_KEY_HEX = "5f" * 32


def gen_key(rng):
    r = rng.random()
    if r < 0.15:
        return _KEY_HEX + "\n"
    if r < 0.85:
        return mutate_text(rng, _KEY_HEX + "\n", ("0", "g", " ", "\n"))
    return rng.choice((b"\xff" * 40, b"", "0" * rng.choice((31, 4097, 1_000_000)), deep_nesting(rng)))


def target_key(data):
    path = write_scratch("job.key", data)
    os.chmod(path, 0o600)
    return JobKey.from_file(path)


# ----------------------------------------------------------------------------- rendezvous entries

_RV_KEY = JobKey(b"k" * 32)
_RV_ENTRY = {"rank": 1, "world": 4, "host": "127.0.0.1", "port": 4000, "job": "s3://b/o#etag"}
_RV_ENTRY["mac"] = rv._entry_mac(_RV_KEY, _RV_ENTRY)
_RV_KEYS = ("rank", "world", "host", "port", "job", "mac")


class EntryIgnored(ValueError):
    """The entry was ignored (what a node does with anything but a member's entry)."""


def gen_entry(rng):
    r = rng.random()
    if r < 0.15:
        return json.dumps(_RV_ENTRY)
    if r < 0.55:
        return to_json(mutate_doc(rng, _RV_ENTRY, None, _RV_KEYS))[:2_000_000]
    if r < 0.90:
        return mutate_text(rng, json.dumps(_RV_ENTRY), _RV_KEYS)
    return _classic(rng, "json", "port")


def target_entry(data):
    write_scratch("rank-1.json", data)
    dir_fd = os.open(scratch_dir(), os.O_RDONLY)
    try:
        found = rv._read_entry(dir_fd, "rank-1.json", 1, 4, _RV_ENTRY["job"], _RV_KEY)
    finally:
        os.close(dir_fd)
    if found is None:
        raise EntryIgnored("rank-1.json: ignored")
    assert found == ("127.0.0.1", 4000), found  # only a member's entry is ever believed
    return found


# ----------------------------------------------------------------------------- mine gen options

_GEN_OPTIONS = (
    ("--avg-len", "10"),
    ("-T", "10"),
    ("--avg-pattern-len", "4"),
    ("--patterns", "200"),
    ("--items", "1000"),
    ("--parts", "2"),
    ("--correlation", "0.5"),
    ("--corruption", "0.5"),
    ("--seed", "3"),
)


def gen_mine(rng):
    option, valid = rng.choice(_GEN_OPTIONS)
    value = valid if rng.random() < 0.15 else hostile_number_text(rng)
    return [option, value]


def target_mine(argv):
    out = os.path.join(scratch_dir(), "gen.qtx")
    return _cli(["mine", "gen", out, "--transactions", "20", *argv])


def _names_option(message, argv):
    option = argv[0]
    words = {"-T": "--avg-len"}.get(option, option)
    return words in message or argv[1][:40] in message


# ----------------------------------------------------------------------------- the list

FORMATS = [
    Format("storage profile", gen_profile, target_profile, 1500, names=names_any(["profile.json", "profile.toml"])),
    Format("conformance matrix", gen_matrix, target_matrix, 1500, names=names_any(["matrix.toml"])),
    Format("--kwargs JSON", gen_kwargs, target_kwargs, 1000, names=names_any(["--kwargs"])),
    Format(
        "addresses file",
        gen_addresses,
        target_addresses,
        1000,
        names=names_any(["addresses.txt"]),
        clean=(ValueError, CommError),
    ),
    Format("key file", gen_key, target_key, 1000, names=names_any(["job.key"])),
    Format("rendezvous entry", gen_entry, target_entry, 1000, names=names_any(["rank-1.json"]), time_cap_s=10.0),
    # the largest valid values generate ~1 CPU s of patterns: the cap is for a loaded machine
    Format("mine gen options", gen_mine, target_mine, 600, names=_names_option, time_cap_s=60.0),
]
