"""A user's own rank program on the emulated cluster (`parcomm emu run PROGRAM`), as under the simulator."""

from __future__ import annotations

import json
import subprocess
import sys

from netns import needs_netns

PROGRAM = "examples/user_program/user_program.py:main"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "parcomm", *args], capture_output=True, text=True, timeout=300)


@needs_netns
def test_emulated_user_program_returns_what_the_simulator_returns():
    common = ["--platform", "star:4,rate=100M,buffer=32KiB", "--kwargs", '{"n": 1000}', "--json"]
    emu = _cli("emu", "run", PROGRAM, "-n", "4", *common)
    assert emu.returncode == 0, emu.stderr
    sim = _cli("sim", "run", PROGRAM, "--procs", "4", *common)
    assert sim.returncode == 0, sim.stderr
    e, s = json.loads(emu.stdout), json.loads(sim.stdout)
    assert e["results"] == s["results"] and len(e["finish_times_s"]) == 4
    assert all(t > 0 for t in e["finish_times_s"])


@needs_netns
def test_a_missing_program_is_one_clear_line():
    p = _cli("emu", "run", "nosuchmodule:main")
    assert p.returncode == 2 and "cannot import module 'nosuchmodule'" in p.stderr and "Traceback" not in p.stderr
    p = _cli("emu", "run", PROGRAM, "-n", "9", "--platform", "star:4,rate=100M,buffer=32KiB")
    assert p.returncode == 2 and "-n/--procs must be in 1..4" in p.stderr
