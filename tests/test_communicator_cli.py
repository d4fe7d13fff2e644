"""Users' own programs from the command line: `parcomm sim run`, `parcomm run
local|mpi PROGRAM` give the same --json document and the same results;
mistakes are one `error:` line naming the user's file and line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from parcomm.cli import main

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = "examples/user_program/user_program.py:main"


def _run(capsys, argv):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_sim_run_a_user_program_json(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    rc, out, err = _run(capsys, ["sim", "run", PROGRAM, "--platform", "star:4", "--kwargs", '{"n": 100}', "--json"])
    assert rc == 0, err
    doc = json.loads(out)
    assert set(doc) == {"summary", "finish_times_s", "results", "counters"}
    assert doc["summary"]["backend"] == "sim" and doc["summary"]["procs"] == 4
    assert [r["total"] for r in doc["results"]] == [4950.0] * 4
    # the same program, for real, gives the same document shape and results
    rc, out2, err = _run(capsys, ["run", "local", PROGRAM, "-n", "4", "--kwargs", '{"n": 100}', "--json"])
    assert rc == 0, err
    doc2 = json.loads(out2)
    assert set(doc2) == set(doc) and doc2["results"] == doc["results"]


def test_sim_run_program_option_and_table(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    rc, out, err = _run(capsys, ["sim", "run", "--program", PROGRAM, "--platform", "star:2"])
    assert rc == 0, err
    assert "sim run on star:2" in out and "total" in out


@pytest.mark.parametrize(
    "argv, text",
    [
        (["sim", "run"], "no program"),
        (["sim", "run", "nosuchmodule_xyz:main"], "cannot import module 'nosuchmodule_xyz'"),
        (["sim", "run", PROGRAM, "--program", "other:main"], "two programs given"),
        (["sim", "run", PROGRAM, "--kwargs", "[1]"], "--kwargs must be a JSON object"),
        (["run", "local", "-n", "2"], "no program"),
    ],
)
def test_sim_run_mistakes_are_one_line(capsys, monkeypatch, argv, text):
    monkeypatch.chdir(ROOT)
    rc, out, err = _run(capsys, argv)
    assert rc == 2 and out == ""
    assert err.startswith("error: ") and text in err and "Traceback" not in err


def test_a_failing_user_program_names_its_line(tmp_path, monkeypatch, capsys):
    prog = tmp_path / "failing_prog.py"
    prog.write_text(
        "async def main(comm):\n    if comm.rank == 1:\n        return 1 / 0\n    return 0\n\n"
        "def plain(comm):\n    return 0\n"
    )
    monkeypatch.chdir(tmp_path)
    rc, out, err = _run(capsys, ["sim", "run", "failing_prog:main", "--platform", "star:2"])
    assert rc == 1
    assert err.strip() == "error: rank 1 raised ZeroDivisionError: division by zero (at failing_prog.py:3 in main)"
    rc, out, err = _run(capsys, ["sim", "run", "failing_prog:plain", "--platform", "star:2"])
    assert rc == 2 and "is not an `async def` function" in err and "failing_prog.py:6" in err


def test_run_mpi_failure_is_one_line_without_the_mpich_banner(tmp_path):
    prog = tmp_path / "failing_mpi.py"
    prog.write_text(
        "async def main(comm):\n    if comm.rank == 1:\n        raise ValueError('bad input')\n"
        "    await comm.barrier()\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "parcomm", "run", "mpi", f"{prog}:main", "-n", "2", "--timeout", "30s"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    if "mpiexec not found" in run.stderr:
        pytest.skip(run.stderr)
    assert run.returncode == 1
    assert "BAD TERMINATION" not in run.stderr
    assert run.stderr.startswith("error: rank 1 raised ValueError: bad input (at ")
    assert "failing_mpi.py:3 in main" in run.stderr


@pytest.mark.parametrize(
    "argv", [["sim", "run", PROGRAM, "--platform", "star:4"], ["run", "local", PROGRAM, "-n", "4"]]
)
def test_trace_writes_a_per_rank_timeline(capsys, monkeypatch, tmp_path, argv):
    monkeypatch.chdir(ROOT)
    path = tmp_path / "trace.json"
    rc, out, err = _run(capsys, [*argv, "--kwargs", '{"n": 100}', "--trace", str(path), "--json"])
    assert rc == 0, err
    json.loads(out)  # --json stays one strict document
    events = json.loads(path.read_text())["traceEvents"]
    names = {e["name"] for e in events}
    assert {"isend", "irecv", "Bcast", "allreduce", "gather"} <= names
    assert {e["tid"] for e in events if e["ph"] in ("X", "i")} == {0, 1, 2, 3}
    spans = [e for e in events if e["ph"] == "X"]
    assert spans and all(e["dur"] >= 0 and e["ts"] >= 0 for e in spans)


def test_run_sim_trace_is_off_by_default():
    from parcomm.comm import run_sim

    async def prog(comm):
        return await comm.allreduce(comm.rank)

    assert "trace" not in run_sim(prog, "star:2").extra
    tr = run_sim(prog, "star:2", trace=True).extra["trace"]
    assert len(tr) == 2 and any(ev[1] == "allreduce" for ev in tr[0])
