"""One vocabulary across ``parcomm``: every option has help text, results printed with
``--json`` are strict JSON (no NaN or Infinity), durations on the command line carry a unit,
and the exit codes are 0 (success), 1 (the run failed) and 2 (a usage mistake)."""

from __future__ import annotations

import json

import click
import pytest
from parcomm.cli import cli, main

#: Options still without help (none left; this set may only stay empty).
KNOWN_WITHOUT_HELP: set = set()


def _commands(cmd=cli, path=()):
    if isinstance(cmd, click.Group):
        ctx = click.Context(cmd)
        for name in cmd.list_commands(ctx):  # the top group loads its commands on demand
            yield from _commands(cmd.get_command(ctx, name), (*path, name))
    else:
        yield " ".join(path), cmd


def _strict(text: str):
    def refuse(const):
        raise AssertionError(f"not JSON: {const}")

    return json.loads(text, parse_constant=refuse)


def _run(capsys, argv):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_every_option_has_help():
    missing = {
        (name, p.opts[-1])
        for name, cmd in _commands()
        for p in cmd.params
        if isinstance(p, click.Option) and not p.hidden and not p.help
    }
    assert missing <= KNOWN_WITHOUT_HELP, sorted(missing - KNOWN_WITHOUT_HELP)


def test_every_command_has_a_docstring():
    assert all(cmd.help for _, cmd in _commands())


def test_repro_help_and_list_name_every_study(capsys):
    from parcomm.studies.framework import STUDIES, SUMMARIES

    rc, out, _ = _run(capsys, ["repro", "--help"])
    assert rc == 0
    rc, listed, _ = _run(capsys, ["repro", "--list"])
    assert rc == 0
    for name in STUDIES:
        assert SUMMARIES[name] and f"{name}  " in out and name in listed
    assert len(listed.strip().splitlines()) == len(STUDIES)
    rc, out, _ = _run(capsys, ["repro", "--list", "--json"])
    assert [s["study"] for s in _strict(out)] == list(STUDIES)


def test_papers_are_named_by_first_author_in_help(capsys):
    for argv in (["repro", "--help"], ["repro", "--list"], ["model", "select", "--help"]):
        rc, out, _ = _run(capsys, argv)
        assert rc == 0 and "seed 00" not in out, argv


@pytest.mark.parametrize(
    "argv",
    [
        ["sim", "alltoall", "--platform", "star:4", "--rto-min", "200"],
        ["sim", "alltoall", "--platform", "star:4", "--rto-max", "60"],
        ["heat", "run", "--backend", "local", "--timeout", "30"],
        ["mine", "run", "nosuch.qtx", "--timeout", "30"],
        ["heat", "model", "--latency", "2"],
        ["measure", "--rto", "0.2", "--out", "/tmp/never-written.json"],
        ["sim", "barrier", "--platform", "star:3", "--time-limit", "600"],
        ["compare", "incast", "--backends", "sim", "--timeout", "120"],
        ["run", "local", "barrier", "--procs", "2", "--timeout", "60"],
    ],
)
def test_unitless_durations_are_usage_errors_naming_the_units(capsys, argv):
    rc, out, err = _run(capsys, argv)
    assert rc == 2, (argv, err)
    assert "no unit" in err and "ms" in err and "min" in err, err
    assert not out


def test_zero_needs_no_unit(capsys):
    rc, out, err = _run(capsys, ["heat", "model", "-N", "330", "--bandwidth", "50000", "--latency", "0", "--json"])
    assert rc == 0, err
    _strict(out)


@pytest.mark.parametrize(
    "argv",
    [
        ["sim", "barrier", "--platform", "star:3", "--json"],
        ["heat", "model", "-N", "330,2640", "--json"],
        ["mcast", "model", "examples/mcast_placement/three_sites.toml", "--json"],
        ["mcast", "sim", "examples/mcast_placement/three_sites.toml", "--set", "packets=200", "--json"],
        ["bcast", "sim", "-n", "4", "--size", "16MB", "--json"],
        ["repro", "--list", "--json"],
        ["heat", "run", "-N", "64", "-M", "2", "--steps", "3", "--json"],
        ["compare", "alltoall", "--platform", "star:4", "--backends", "sim", "--size", "4KiB", "--json"],
        ["mine", "gen", "{tmp}/t.qtx", "--transactions", "500", "--json"],
    ],
)
def test_json_output_is_strict_and_speaks_one_vocabulary(capsys, tmp_path, argv):
    from parcomm.strictjson import vocabulary_problems

    rc, out, err = _run(capsys, [a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert rc == 0, err
    assert vocabulary_problems(_strict(out)) == []


def test_the_vocabulary_check_names_each_problem():
    from parcomm.strictjson import vocabulary_problems

    doc = {"nodes": 4, "size": 1, "reports": [{"seconds": 1.5, "stall_timeout": 30.0, "timeouts": 3}], "ok_s": 1}
    assert vocabulary_problems(doc) == [
        "nodes: say procs",
        "size: say size_bytes",
        "reports[0].seconds: say a name ending in _s",
        "reports[0].stall_timeout: a duration, give it its unit (_s)",
    ]
    assert vocabulary_problems({"nodes": [{"procs": 2, "size_bytes": 3, "run_s": 0.5}]}) == []


def test_strictjson_turns_nan_into_null():
    from parcomm import strictjson

    text = strictjson.dumps({"a": float("nan"), "b": [float("inf"), 1.5], 3: (1, 2)})
    assert _strict(text) == {"a": None, "b": [None, 1.5], "3": [1, 2]}


def test_exit_codes(capsys, monkeypatch):
    assert _run(capsys, ["repro", "--list"])[0] == 0
    assert _run(capsys, ["repro", "nosuch"])[0] == 2
    assert _run(capsys, ["repro", "--workers", "0"])[0] == 2
    monkeypatch.setenv("PARCOMM_VERSITYGW", "/nonexistent/versitygw")
    rc, out, err = _run(capsys, ["bcast", "demo"])
    assert rc == 1  # a missing tool is a failed run, not a usage mistake
    assert len(err.strip().splitlines()) == 1 and "go install" in err and "not installed" in err


def test_bcast_rank_count_is_procs_with_nodes_alias(capsys):
    rc, out, err = _run(capsys, ["bcast", "demo", "--nodes", "0"])
    assert rc == 2 and "--procs" in err and "--local" not in err
    for opt in ("-n", "--procs", "--nodes"):
        rc, out, err = _run(capsys, ["bcast", "sim", opt, "2", "--size", "8MB", "--json"])
        assert rc == 0 and len(_strict(out)["finished_s"]) == 2, err


def test_bcast_errors_are_one_line_per_failure():
    from parcomm.cli.bcast import _error_lines

    same = {r: "s3://b/k: access denied" for r in range(32)}
    assert _error_lines(same) == ["nodes 0-31: s3://b/k: access denied"]
    assert _error_lines({0: "x", 1: "x", 3: "x", 2: "y"}) == ["nodes 0-1, 3: x", "node 2: y"]


# -- the CLI's last inconsistencies, and a new user's mistakes -----------------------------

PROGRAMS = """
async def exits(comm):
    if comm.rank == 1:
        raise SystemExit
    return comm.rank


def plain(comm):
    return 1


async def forgets_await(comm):
    comm.send(1, dest=(comm.rank + 1) % comm.size)


async def deadlock(comm):
    await comm.recv(source=(comm.rank + 1) % comm.size)


async def complex_result(comm):
    return {"z": complex(comm.rank, 1)}


async def collectives(comm):
    await comm.barrier()
    return await comm.bcast(comm.rank, root=0)
"""


@pytest.fixture
def progs(tmp_path):
    path = tmp_path / "progs.py"
    path.write_text(PROGRAMS)
    return path


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize(
    "backend", [["sim", "run", "barrier", "--platform", "star:4"], ["run", "local", "barrier", "--procs", "2"]]
)
def test_an_unknown_kwargs_key_is_one_line_and_a_usage_error(capsys, backend):
    rc, out, err = _run(capsys, [*backend, "--kwargs", '{"bogus": 1}'])
    assert rc == 2 and "bogus" in _one_line(err) and "--kwargs" in err


def test_more_ranks_than_hosts_is_a_usage_error(capsys):
    rc, out, err = _run(capsys, ["sim", "run", "barrier", "--platform", "star:4", "-n", "8"])
    assert rc == 2 and "8 ranks need 8 hosts" in _one_line(err) and "--procs" in err


def test_a_rank_exiting_without_a_message_fails_the_simulated_run_as_it_fails_a_real_one(capsys, progs):
    for argv in (
        ["sim", "run", f"{progs}:exits", "--platform", "star:2"],
        ["run", "local", f"{progs}:exits", "--procs", "2"],
    ):
        rc, out, err = _run(capsys, argv)
        line = _one_line(err)
        assert rc == 1 and "rank 1 raised SystemExit" in line and not line.rstrip().endswith(":"), argv


def test_time_limit_mistakes_are_one_line(capsys):
    for value in ("5", "abc", "-1s"):
        rc, out, err = _run(capsys, ["sim", "barrier", "--platform", "star:3", "--time-limit", value])
        assert rc == 2 and "--time-limit" in _one_line(err), value
    rc, out, err = _run(capsys, ["sim", "barrier", "--platform", "star:3", "--time-limit", "1ns"])
    assert rc == 1 and "time limit" in _one_line(err)  # reaching it is a failed run, as under `sim run`


def test_rto_min_zero_needs_no_unit_and_errors_name_the_options(capsys):
    rc, out, err = _run(capsys, ["sim", "barrier", "--platform", "star:3", "--rto-min", "0", "--json"])
    assert rc == 0, err
    _strict(out)
    rc, out, err = _run(capsys, ["sim", "barrier", "--platform", "star:3", "--rto-min", "300ms", "--rto-max", "100ms"])
    line = _one_line(err)
    assert rc == 2 and "--rto-min" in line and "--rto-max" in line
    assert "rto_min_s" not in line and "hosts." not in line


def test_a_complex_result_is_json_not_a_repr(capsys, progs):
    rc, out, err = _run(capsys, ["sim", "run", f"{progs}:complex_result", "--platform", "star:2", "--json"])
    assert rc == 0, err
    assert _strict(out)["results"][1] == {"z": {"real": 1.0, "imag": 1.0}}


def test_traces_name_the_collectives_not_their_tags(capsys, progs, tmp_path):
    trace = tmp_path / "trace.json"
    rc, out, err = _run(capsys, ["sim", "run", f"{progs}:collectives", "--platform", "star:3", "--trace", str(trace)])
    assert rc == 0, err
    text = trace.read_text()
    assert "167772" not in text  # no reserved tag number (1 << 24 and above)
    tags = {e["args"]["tag"] for e in json.loads(text)["traceEvents"] if "tag" in e.get("args", {})}
    assert {"barrier", "bcast"} <= tags


#: A new user's mistakes, each with the exit code it must give (2: the invocation is wrong; 1: the
#: program ran and failed). Every one must be a single line on stderr, never a traceback.
MISTAKES = [
    (["sim", "run", "barrier", "--platform", "star:4", "--kwargs", '{"bogus": 1}'], 2),
    (["sim", "run", "barrier", "--platform", "star:4", "-n", "8"], 2),
    (["sim", "run", "{progs}:exits", "--platform", "star:2"], 1),
    (["sim", "run", "{progs}:plain", "--platform", "star:2"], 2),
    (["sim", "run", "{progs}:forgets_await", "--platform", "star:2"], 1),
    (["sim", "run", "{progs}:deadlock", "--platform", "star:2"], 1),
    (["sim", "run", "{progs}:nosuchfn", "--platform", "star:2"], 2),
    (["sim", "run", "nosuchmodule:main"], 2),
    (["sim", "run"], 2),
    (["sim", "run", "barrier", "--kwargs", "not json"], 2),
    (["sim", "run", "barrier", "--kwargs", "[1]"], 2),
    (["sim", "barrier", "--platform", "star:3", "--time-limit", "5"], 2),
    (["sim", "barrier", "--platform", "star:3", "--rto-min", "300ms", "--rto-max", "100ms"], 2),
    (["sim", "barrier", "--platform", "star:3", "--rto-min", "-1ms"], 2),
    (["sim", "barrier", "--rto-min", "200"], 2),
    (["sim", "barrier", "--rto-scheme", "fixed"], 2),
    (["sim", "barrier", "--seed", "-1"], 2),
    (["sim", "barrier", "--nosuch"], 2),
    (["sim", "barrier", "--platform", "nosuch:4"], 2),
    (["sim", "barrier", "--platform", "star:0"], 2),
    (["sim", "barrier", "--platform", "{tmp}/missing.toml"], 2),
    (["sim", "alltoall", "--platform", "star:4", "--size", "12XB"], 2),
    (["sim", "bcast", "--platform", "star:4", "--root", "9"], 2),
    (["repro", "--workers", "0"], 2),
    (["run", "local", "barrier", "--procs", "2", "--kwargs", '{"bogus": 1}'], 2),
    (["heat", "model", "--latency", "2"], 2),
    (["model", "select", "alltoall", "--procs", "0"], 2),
]


@pytest.mark.parametrize("argv,code", MISTAKES, ids=[" ".join(a) for a, _ in MISTAKES])
def test_every_mistake_is_one_line_with_its_exit_code(capsys, progs, tmp_path, argv, code):
    rc, out, err = _run(capsys, [a.replace("{progs}", str(progs)).replace("{tmp}", str(tmp_path)) for a in argv])
    _one_line(err)
    assert rc == code, (rc, err)
