"""mpi4py's own demo programs, unchanged, give mpiexec's output four ways (issue 33).

The demos come from the pinned mpi4py sdist, fetched at test time into a
git-ignored cache (tests/mpi4py_suite/harness.py); none is copied here. Each
runs with 0 changed lines under `parcomm sim run`, `run local`, `run mpi`
and `emu run` on 4 ranks; what each rank printed, and the exit status, must
equal those of `mpiexec -n 4 python demo.py`. Ranks share one stdout under
mpiexec and Hydra forwards their writes as they come, so lines of two ranks
can mix: the reference takes each rank's output apart (Hydra's
-outfile-pattern), and parcomm's ways run with --tag-output (whole lines,
prefixed with the rank) and are taken apart by that prefix.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from mpi4py_suite.harness import FetchError, fetch
from netns import needs_netns

# Demos that use only the supported surface (mpi4py 4.1.2's demo/ folder).
DEMOS = [
    "helloworld.py",
    "compute-pi/cpi-cco.py",
    "mpi-ref-v1/ex-2.01.py",
    "mpi-ref-v1/ex-2.08.py",
    "mpi-ref-v1/ex-2.16.py",
    "mpi-ref-v1/ex-2.29.py",
    "mpi-ref-v1/ex-2.32.py",
    "mpi-ref-v1/ex-2.34.py",
    "mpi-ref-v1/ex-2.35.py",
    "mpi-ref-v1/ex-3.01.py",
    "mpi-ref-v1/ex-3.02.py",
    "mpi-ref-v1/ex-3.08.py",
    "mpi-ref-v1/ex-3.09.py",
    "mpi-ref-v1/ex-3.13.py",
    "profiling/cpi.py",
    "profiling/ring.py",
    "reductions/reductions.py",
    "sequential/seq.py",
]

WAYS = {
    "sim": ["sim", "run", "{prog}", "-n", "4", "--platform", "star:4", "--tag-output"],
    "local": ["run", "local", "{prog}", "-n", "4", "--tag-output"],
    "mpi": ["run", "mpi", "{prog}", "-n", "4", "--tag-output"],
    "emu": ["emu", "run", "{prog}", "-n", "4", "--platform", "star:4", "--tag-output"],
}


@pytest.fixture(scope="module")
def demo_dir() -> Path:
    try:
        return fetch() / "demo"
    except FetchError as e:
        pytest.skip(f"mpi4py's sdist is not available: {e}")


def _per_rank(tagged: str) -> list[str]:
    """Each rank's output, from lines prefixed with ``[rank] ``."""
    out = [""] * 4
    for line in tagged.splitlines():
        assert line.startswith("[") and "] " in line, f"untagged line {line!r}"
        rank, text = line[1:].split("] ", 1)
        out[int(rank)] += text + "\n"
    return out


_expected: dict[str, tuple[int, list[str]]] = {}


def _mpiexec(demo_dir: Path, demo: str, tmp: Path) -> tuple[int, list[str]]:
    """``mpiexec -n 4 python demo.py``: exit status and each rank's stdout."""
    if demo not in _expected:
        from parcomm.comm.mpi import find_mpiexec

        prog = demo_dir / demo
        tmp = tmp / "mpiexec" / demo.replace("/", "_")
        tmp.mkdir(parents=True, exist_ok=True)
        pattern = tmp / f"{prog.stem}.%r"
        cmd = [find_mpiexec(), "-outfile-pattern", str(pattern), "-n", "4", sys.executable, prog.name]
        done = subprocess.run(cmd, cwd=prog.parent, capture_output=True, timeout=300, stdin=subprocess.DEVNULL)
        files = [tmp / f"{prog.stem}.{r}" for r in range(4)]
        outs = [f.read_text() if f.exists() else "" for f in files]  # a rank that printed nothing has no file
        # --tag-output ends a rank's unfinished last line (an input() prompt) with a newline
        outs = [o if not o or o.endswith("\n") else o + "\n" for o in outs]
        _expected[demo] = (done.returncode, outs)
    return _expected[demo]


def _check(demo_dir: Path, demo: str, way: str, tmp: Path) -> None:
    prog = demo_dir / demo
    status, expected = _mpiexec(demo_dir, demo, tmp)
    assert status == 0, f"{demo} fails under mpiexec itself"
    cmd = [sys.executable, "-m", "parcomm", *(a.format(prog=prog.name) for a in WAYS[way])]
    done = subprocess.run(cmd, cwd=prog.parent, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-2000:]
    assert _per_rank(done.stdout) == expected


@pytest.mark.parametrize("demo", DEMOS)
@pytest.mark.parametrize("way", ["sim", "local", "mpi"])
def test_demo_matches_mpiexec(demo_dir, demo, way, tmp_path_factory):
    _check(demo_dir, demo, way, tmp_path_factory.getbasetemp())


# An emulated run builds a cluster of namespaces (~10 s): twelve demos keep CI's time reasonable.
EMULATED_DEMOS = DEMOS[:9] + ["profiling/ring.py", "reductions/reductions.py", "sequential/seq.py"]


@needs_netns
@pytest.mark.parametrize("demo", EMULATED_DEMOS)
def test_demo_matches_mpiexec_emulated(demo_dir, demo, tmp_path_factory):
    _check(demo_dir, demo, "emu", tmp_path_factory.getbasetemp())
