"""Tests of the ``parcomm`` command line (parcomm.cli). ``repro rto`` is slow and
is not run here."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from parcomm.cli import main

ALLTOALL_B = ["sim", "alltoall", "--platform", "star:8", "--algo", "B", "--size", "4KiB", "--json"]


def _run(capsys, argv):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def _assert_user_error(rc, out, err, bad):
    """Exit 2, no traceback, and one error line (the last) naming ``bad``."""
    assert rc == 2, (rc, out, err)
    assert "Traceback" not in out + err
    lines = [l for l in err.splitlines() if l.strip()]
    assert lines, "no error message on stderr"
    error_lines = [l for l in lines if l.lower().startswith("error")]
    assert len(error_lines) == 1, err
    assert lines[-1] == error_lines[0], err
    assert bad in error_lines[0], err
    assert out == ""


def test_help_lists_sim_and_repro(capsys):
    rc, out, err = _run(capsys, ["--help"])
    assert rc == 0
    assert "sim" in out and "repro" in out
    assert "Usage" in out


def test_sim_help_lists_collectives(capsys):
    rc, out, _ = _run(capsys, ["sim", "--help"])
    assert rc == 0
    for name in ("alltoall", "bcast", "barrier"):
        assert name in out


def test_python_dash_m_parcomm_help():
    proc = subprocess.run([sys.executable, "-m", "parcomm", "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "sim" in proc.stdout and "repro" in proc.stdout
    assert proc.stderr == ""


def test_sim_alltoall_json(capsys):
    rc, out, err = _run(capsys, ALLTOALL_B)
    assert rc == 0, err
    doc = json.loads(out)
    s = doc["summary"]
    assert s["collective"] == "alltoall"
    assert s["algo"] == "B"
    assert s["size_bytes"] == 4096
    assert s["procs"] == 8
    assert s["time_s"] > 0
    assert s["timeouts"] == 0 and s["port_drops"] == 0
    # 8 ranks each send 7 blocks of 4 KiB (plus headers)
    assert s["bytes_sent"] >= 8 * 7 * 4096
    c = doc["counters"]
    assert set(c) >= {"hosts", "ports"}
    assert c["hosts"]["name"] == [f"h{i}" for i in range(8)]
    assert len(c["hosts"]["bytes_sent"]) == 8
    assert sum(c["hosts"]["bytes_sent"]) == s["bytes_sent"]
    assert len(doc["finish_times_s"]) == 8
    assert max(doc["finish_times_s"]) == pytest.approx(s["time_s"])


def test_sim_json_is_deterministic_except_wall_time(capsys):
    docs = []
    for _ in range(2):
        rc, out, err = _run(capsys, ALLTOALL_B)
        assert rc == 0, err
        doc = json.loads(out)
        assert isinstance(doc["summary"].pop("wall_s"), (int, float))
        docs.append(doc)
    assert docs[0] == docs[1]


def test_sim_algo_option_changes_the_run(capsys):
    rc, out_a, _ = _run(capsys, ALLTOALL_B[:5] + ["A"] + ALLTOALL_B[6:])
    assert rc == 0
    rc, out_b, _ = _run(capsys, ALLTOALL_B)
    assert rc == 0
    a, b = json.loads(out_a)["summary"], json.loads(out_b)["summary"]
    assert a["algo"] == "A" and b["algo"] == "B"
    assert a["time_s"] != b["time_s"]


def test_sim_bcast_and_barrier_tables(capsys):
    rc, out, err = _run(capsys, ["sim", "bcast", "--platform", "star:5", "--size", "100KiB", "--root", "2"])
    assert rc == 0, err
    assert "bcast" in out and "time_s" in out
    rc, out, err = _run(capsys, ["sim", "barrier", "--platform", "star:3", "--json"])
    assert rc == 0, err
    assert json.loads(out)["summary"]["procs"] == 3


@pytest.mark.parametrize(
    "argv,bad",
    [
        (["sim", "alltoall", "--platform", "star:8", "--size", "12XB"], "12XB"),
        (["sim", "alltoall", "--platform", "star:abc"], "abc"),
        (["sim", "alltoall", "--platform", "nosuch:3"], "nosuch"),
        (["sim", "alltoall", "--platform", "star:8", "--algo", "A", "--procs", "6"], "6"),
        (["sim", "alltoall", "--platform", "star:8", "--rto-min", "-5ms"], "-5ms"),
        (["sim", "alltoall", "--platform", "/nonexistent/dir/platform.toml"], "/nonexistent/dir/platform.toml"),
        (["sim", "alltoall", "--platform", "star:4", "--procs", "8"], "8"),
        (["sim", "alltoall", "--platform", "star:4", "--eager-limit", "1QB"], "1QB"),
        (["sim", "bcast", "--platform", "star:4", "--time-limit", "-1s"], "-1s"),
        (["repro", "nosuch"], "nosuch"),
    ],
)
def test_bad_input_gives_exit_2_and_one_line_error(capsys, argv, bad):
    rc, out, err = _run(capsys, argv)
    _assert_user_error(rc, out, err, bad)


def test_not_power_of_two_error_says_why(capsys):
    rc, out, err = _run(capsys, ["sim", "alltoall", "--platform", "star:8", "--algo", "A", "--procs", "6"])
    _assert_user_error(rc, out, err, "power-of-two")


def test_bad_toml_file(capsys, tmp_path):
    f = tmp_path / "broken.toml"
    f.write_text("this is = = not toml\n")
    rc, out, err = _run(capsys, ["sim", "barrier", "--platform", str(f)])
    _assert_user_error(rc, out, err, "broken.toml")


def test_user_error_from_a_real_process_is_one_line():
    # Out of process nothing (e.g. warnings about unfinished rank coroutines)
    # may follow the error line.
    proc = subprocess.run(
        [sys.executable, "-m", "parcomm", "sim", "alltoall", "--platform", "star:8", "--algo", "A", "--procs", "6"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, proc.stderr
    assert "power-of-two" in lines[0]


def test_bcast_root_out_of_range_is_a_user_error(capsys):
    rc, out, err = _run(capsys, ["sim", "bcast", "--platform", "star:5", "--root", "7", "--size", "1KiB"])
    _assert_user_error(rc, out, err, "7")
