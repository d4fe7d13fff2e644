"""mpi4py's own test suite as the referee of parcomm's mpi4py (issue 33).

The tests are never copied into this project: :func:`fetch` downloads the
pinned sdist with pip (``pip download mpi4py==PINNED --no-binary mpi4py``)
into a git-ignored cache and extracts its ``test/`` and ``demo/`` folders.
:func:`run_file` runs one test file unmodified on N simulated ranks, through
``parcomm sim run run_suite.py`` (a whole mpi4py script). A run that ends
early (a deadlock, a crash) is restarted after the test it was in, which is
recorded as failed with the run's last error line.

``python tests/mpi4py_suite/harness.py [FILE ...] [--procs 1,2,4]`` prints
the per-file table (tests passing on every rank / tests run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

PINNED = "4.1.2"
ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "tests" / ".mpi4py-sdist"
RUNNER = Path(__file__).resolve().parent / "run_suite.py"

# The files the issue holds to >= 90 % (test_datatype: its predefined-type tests).
REFEREE_FILES = [
    "test_p2p_obj",
    "test_p2p_buf",
    "test_cco_obj",
    "test_cco_buf",
    "test_comm",
    "test_status",
    "test_request",
    "test_datatype",
]


class FetchError(RuntimeError):
    """The pinned sdist could not be downloaded (no network, no pip)."""


def fetch(version: str = PINNED) -> Path:
    """The extracted sdist (``test/``, ``demo/``), downloaded once into the cache."""
    dest = CACHE / f"mpi4py-{version}"
    if (dest / "test" / "mpiunittest.py").is_file():
        return dest
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", f"mpi4py=={version}", "--no-deps", "--no-binary", "mpi4py"]
        done = subprocess.run([*cmd, "-d", tmp], capture_output=True, text=True, timeout=600)
        sdist = Path(tmp) / f"mpi4py-{version}.tar.gz"
        if done.returncode != 0 or not sdist.is_file():
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise FetchError(f"pip download mpi4py=={version} failed: {tail[0]}")
        with tarfile.open(sdist) as tar:
            wanted = [
                m
                for m in tar.getmembers()
                if m.name.split("/")[1:2] in (["test"], ["demo"]) and (m.isfile() or m.isdir())
            ]
            tar.extractall(tmp, members=wanted, filter="data")
        os.replace(Path(tmp) / f"mpi4py-{version}", dest)
    return dest


def _read(prefix: Path, procs: int) -> tuple[dict[str, list[tuple[str, str]]], list[str | None]]:
    """Outcomes per test id (one per rank that finished it), and each rank's unfinished test."""
    outcomes: dict[str, list[tuple[str, str]]] = {}
    unfinished: list[str | None] = []
    for r in range(procs):
        current = None
        path = Path(f"{prefix}.{r}.jsonl")
        lines = path.read_text().splitlines() if path.exists() else []
        for line in lines:
            rec = json.loads(line)
            if "start" in rec:
                current = rec["start"]
            else:
                outcomes.setdefault(rec["id"], []).append((rec["outcome"], rec["detail"]))
                current = None
        unfinished.append(current)
    return outcomes, unfinished


def run_file(name: str, procs: int, sdist: Path | None = None, timeout: float = 300.0) -> dict[str, tuple[str, str]]:
    """Run mpi4py's ``test/NAME.py`` on ``procs`` simulated ranks: ``{test id: (outcome, detail)}``,
    outcome ``pass`` (every rank passed), ``skip``, ``fail`` or ``error``."""
    sdist = sdist or fetch()
    results: dict[str, tuple[str, str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        skip_file = Path(tmp) / "skip"
        skip_file.write_text("")
        for attempt in range(200):  # each restart skips at least one more test
            prefix = Path(tmp) / f"run{attempt}"
            cmd = [
                sys.executable,
                "-m",
                "parcomm",
                "sim",
                "run",
                str(RUNNER),
                "-n",
                str(procs),
                "--platform",
                f"star:{max(procs, 2)}",
                "--",
                str(sdist / "test"),
                name,
                str(prefix),
                str(skip_file),
            ]
            env = {
                **os.environ,
                "PYTHONPATH": os.pathsep.join([str(ROOT / "python"), os.environ.get("PYTHONPATH", "")]),
            }
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=tmp)
                last = (done.stderr.strip().splitlines() or [""])[-1]
                ok = done.returncode == 0
            except subprocess.TimeoutExpired:
                last, ok = f"no progress within {timeout:g} s of wall time", False
            outcomes, unfinished = _read(prefix, procs)
            for tid, per_rank in outcomes.items():
                kinds = {k for k, _ in per_rank}
                bad = [(k, d) for k, d in per_rank if k in ("fail", "error")]
                if bad:
                    results[tid] = bad[0]
                elif len(per_rank) < procs:
                    results[tid] = ("error", "not every rank finished it")
                elif kinds == {"pass"}:
                    results[tid] = ("pass", "")
                else:
                    results[tid] = ("skip", per_rank[0][1])
            stuck = sorted({t for t in unfinished if t is not None})
            if ok and not stuck:
                break
            if not stuck:  # the run failed before any test started: nothing more can run
                results[f"{name}.(import)"] = ("error", last[:300])
                break
            for t in stuck:  # a rank's own failure in it says more than the run's last line
                if results.get(t, ("pass", ""))[0] not in ("fail", "error"):
                    results[t] = ("error", f"the run ended in this test: {last[:300]}")
            done_ids = set(results)
            skip_file.write_text("\n".join(sorted(done_ids)) + "\n")
    return results


def summary(results: dict[str, tuple[str, str]]) -> tuple[int, int, int]:
    """(passed, failed or errored, skipped)."""
    passed = sum(1 for k, _ in results.values() if k == "pass")
    skipped = sum(1 for k, _ in results.values() if k == "skip")
    return passed, len(results) - passed - skipped, skipped


ALLOWLIST = Path(__file__).resolve().parent / "expected_failures.jsonl"


def read_allowlist() -> dict[tuple[int, str], str]:
    """{(procs, test id): reason} of the tests known to fail (they may only be removed)."""
    out = {}
    if ALLOWLIST.exists():
        for line in ALLOWLIST.read_text().splitlines():
            if line.strip():
                rec = json.loads(line)
                out[(rec["procs"], rec["test"])] = rec["reason"]
    return out


def reason_of(detail: str) -> str:
    """The cause of a failure, as its first line says it (without per-call values where possible)."""
    return detail.split(" (at ")[0][:200] or "failed"


def main(argv: list[str]) -> int:
    procs_list = [1, 2, 4]
    files = []
    write = False
    it = iter(argv)
    for a in it:
        if a == "--procs":
            procs_list = [int(x) for x in next(it).split(",")]
        elif a == "--write-allowlist":  # record today's failures, each with its observed cause
            write = True
        else:
            files.append(a)
    records = []
    files = files or REFEREE_FILES
    sdist = fetch()
    print(f"mpi4py {PINNED} test suite under `parcomm sim run` (passed / run, skipped apart)")
    print("| file | " + " | ".join(f"{p} rank{'s' if p > 1 else ''}" for p in procs_list) + " |")
    print("|---|" + "---|" * len(procs_list))
    for name in files:
        cells = []
        for p in procs_list:
            res = run_file(name, p, sdist)
            records += [
                {"procs": p, "test": tid, "reason": reason_of(d)}
                for tid, (k, d) in sorted(res.items())
                if k in ("fail", "error")
            ]
            passed, failed, skipped = summary(res)
            run = passed + failed
            pct = 100.0 * passed / run if run else 0.0
            cells.append(f"{passed}/{run} ({pct:.0f} %), {skipped} skipped")
            if "-v" in os.environ.get("HARNESS_FLAGS", ""):
                for tid, (k, d) in sorted(res.items()):
                    if k in ("fail", "error"):
                        print(f"  {p}: {tid}: {k}: {d}", file=sys.stderr)
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    if write:  # the files run here get today's records; other files' stay as they were
        kept = [
            {"procs": p, "test": t, "reason": why}
            for (p, t), why in sorted(read_allowlist().items())
            if t.split(".")[0] not in files
        ]
        ALLOWLIST.write_text("".join(json.dumps(r) + "\n" for r in kept + records))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
