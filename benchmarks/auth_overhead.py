"""What job authentication costs: the current tree against another (older) one.

Since issue 30 every real-run connection starts with a handshake bound to the
job and both ranks, and every frame after it carries a 16-byte AES-GCM tag
(GMAC) under a per-direction key (python/parcomm/auth; a bcast piece's bytes are
checked against the hash list instead and still go by sendfile). Issue 14 added
the handshake alone. This measures, old and new taking turns (A B, B A, ...;
one untimed warm-up pair first), on the same machine:

* **ping-pong**: ``run_local`` with 2 ranks, 8-byte and 1 MiB messages
  (round-trip latency and bandwidth, timed inside the program), and the whole
  ``run_local`` call (mesh set-up, where the handshake lands);
* **bcast** (``--bcast``): ``parcomm bcast --local 4`` of a 1 GiB object from a
  local versitygw, wall seconds of the command and the slowest node's seconds,
  every output's sha256 checked.

The old tree is an export of an older commit, with this build's Rust core
copied in (the core did not change), e.g. the commit issue 30 started from:

    mkdir /tmp/parcomm-base && git archive a391dc3 python | tar -x -C /tmp/parcomm-base
    cp python/parcomm/_core*.so /tmp/parcomm-base/python/parcomm/
    python benchmarks/auth_overhead.py --old /tmp/parcomm-base [--pairs 7] [--bcast --bcast-pairs 3] \
        --out benchmarks/results/frame_auth_overhead.json

Results (medians, the new/old ratio per pair, its min and max) go to ``--out``
(default benchmarks/results/auth_overhead.json). The machine is shared (2
cores): the pairing keeps the ratio meaningful when its speed drifts, the order
within a pair alternates (the first of a pair ran slower), and the spread says
how noisy it was.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
NEW = HERE.parent


async def pingpong(comm, nbytes: int = 8, iters: int = 200):
    """Rank 0 sends ``nbytes`` to rank 1 and gets them back, ``iters`` times; returns seconds per round trip."""
    payload = b"x" * nbytes
    peer = 1 - comm.rank
    await comm.barrier()
    t0, c0 = comm.wtime(), time.process_time()
    for _ in range(iters):
        if comm.rank == 0:
            await comm.send(payload, dest=peer, tag=1)
            await comm.recv(source=peer, tag=2)
        else:
            await comm.recv(source=peer, tag=1)
            await comm.send(payload, dest=peer, tag=2)
    # wall seconds per round trip, and this rank's CPU seconds per round trip: on a loaded
    # machine the first measures the scheduler as much as us, the second much less so
    return (comm.wtime() - t0) / iters, (time.process_time() - c0) / iters


_PINGPONG_CHILD = """
import json, sys, time
sys.path.insert(0, {bench!r})
from auth_overhead import pingpong
from parcomm.comm import run_local
out = {{}}
for nbytes, iters in ((8, 500), (1 << 20, 40)):
    t0 = time.perf_counter()
    res = run_local(pingpong, 2, kwargs={{"nbytes": nbytes, "iters": iters}}, timeout=120)
    out[str(nbytes)] = {{"rtt_s": res.results[0][0], "cpu_per_rtt_s": res.results[0][1] + res.results[1][1],
                        "call_s": time.perf_counter() - t0}}
print(json.dumps(out))
"""


def _env(tree: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PARCOMM_JOB_KEY"}
    env["PYTHONPATH"] = str(tree / "python")
    return env


def _check_tree(tree: Path) -> None:
    code = "import parcomm; print(parcomm.__file__)"
    out = subprocess.run([sys.executable, "-c", code], env=_env(tree), capture_output=True, text=True, check=True)
    if not out.stdout.strip().startswith(str(tree)):
        sys.exit(f"{tree} does not import as expected: {out.stdout.strip()}")


def run_pingpong(tree: Path) -> dict:
    child = _PINGPONG_CHILD.format(bench=str(HERE))
    out = subprocess.run([sys.executable, "-c", child], env=_env(tree), capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def _order(pair: int, old: Path) -> tuple:
    """New first in even pairs, old first in odd ones: whichever runs first in a pair
    was measured slower here (by up to 15 % at 1 MiB), so neither may always go first."""
    both = (("new", NEW), ("old", old))
    return both if pair % 2 == 0 else both[::-1]


def _summary(new: list[float], old: list[float]) -> dict:
    ratios = [n / o for n, o in zip(new, old)]
    return {
        "new_median": statistics.median(new),
        "old_median": statistics.median(old),
        "ratio_median": statistics.median(ratios),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
    }


def bench_pingpong(old: Path, pairs: int) -> dict:
    run_pingpong(NEW), run_pingpong(old)  # warm-up: caches, forkserver start-up paths
    samples: dict[str, dict[str, list[float]]] = {}
    for i in range(pairs):
        for label, tree in _order(i, old):
            for nbytes, r in run_pingpong(tree).items():
                for metric, value in r.items():
                    samples.setdefault(f"{nbytes}B {metric}", {"new": [], "old": []})[label].append(value)
        print(f"  ping-pong pair {i + 1}/{pairs}", file=sys.stderr)
    return {k: _summary(v["new"], v["old"]) for k, v in samples.items()}


def bench_bcast(old: Path, pairs: int, size: int) -> dict:
    sys.path.insert(0, str(NEW / "python"))
    from parcomm.apps.bcast import manifest as mf
    from parcomm.apps.bcast.s3 import S3Client
    from parcomm.apps.bcast.versitygw import VersityGW, ensure_versitygw

    with tempfile.TemporaryDirectory(prefix="parcomm-authbench-") as tmp:
        work = Path(tmp)
        with VersityGW(work / "gw", binary=ensure_versitygw(install=False)) as gw:
            gw.create_bucket("bench")
            client = S3Client(gw.s3_config())
            url = "s3://bench/object.bin"
            digest = hashlib.sha256()
            blob = bytearray(os.urandom(1 << 20)) * (size >> 20)
            digest.update(blob)
            client.put_bytes(url, bytes(blob))
            del blob
            mf.prepare(url, 1 << 20, client=client)
            want = digest.hexdigest()

            def one(tree: Path) -> dict:
                out = work / "out"
                out.mkdir(exist_ok=True)
                env = {**_env(tree), **gw.environ()}
                t0 = time.perf_counter()
                run = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "parcomm",
                        "bcast",
                        url,
                        "--out",
                        str(out / "o.{rank}"),
                        "--local",
                        "4",
                        "--json",
                    ],
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=900,
                )
                wall = time.perf_counter() - t0
                if run.returncode != 0:
                    raise RuntimeError(run.stderr[-2000:])
                nodes = json.loads(run.stdout)["nodes"]
                for r in range(4):
                    with open(out / f"o.{r}", "rb") as f:
                        h = hashlib.file_digest(f, "sha256").hexdigest()
                    if h != want:
                        raise RuntimeError(f"node {r}: wrong sha256")
                    (out / f"o.{r}").unlink()
                return {
                    "command_s": wall,
                    "slowest_node_s": max(n["run_s"] for n in nodes),
                    "node_MBps_median": statistics.median(size / n["run_s"] / 1e6 for n in nodes),
                }

            one(NEW), one(old)  # warm-up pair
            samples: dict[str, dict[str, list[float]]] = {}
            for i in range(pairs):
                for label, tree in _order(i, old):
                    for k, v in one(tree).items():
                        samples.setdefault(k, {"new": [], "old": []})[label].append(v)
                print(f"  bcast pair {i + 1}/{pairs}", file=sys.stderr)
    return {k: _summary(v["new"], v["old"]) for k, v in samples.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", type=Path, required=True, help="the checkout to compare with")
    ap.add_argument("--pairs", type=int, default=7, help="interleaved ping-pong pairs")
    ap.add_argument("--bcast", action="store_true", help="also parcomm bcast --local 4 (needs versitygw)")
    ap.add_argument("--bcast-pairs", type=int, default=3)
    ap.add_argument("--size-mib", type=int, default=1024, help="bcast object size")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "auth_overhead.json")
    args = ap.parse_args()
    _check_tree(NEW)
    _check_tree(args.old)
    result = {"load_before": os.getloadavg(), "pingpong": bench_pingpong(args.old, args.pairs)}
    if args.bcast:
        result["bcast"] = bench_bcast(args.old, args.bcast_pairs, args.size_mib << 20)
    result["load_after"] = os.getloadavg()
    print(f"{'metric':<34}{'new (median)':>14}{'old (median)':>14}{'new/old':>9}  (min..max over pairs)")
    for group in ("pingpong", "bcast"):
        for k, s in result.get(group, {}).items():
            print(
                f"{group + ' ' + k:<34}{s['new_median']:>14.6g}{s['old_median']:>14.6g}{s['ratio_median']:>9.3f}"
                f"  ({s['ratio_min']:.3f}..{s['ratio_max']:.3f})"
            )
    out = args.out
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
