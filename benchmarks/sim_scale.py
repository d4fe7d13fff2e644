"""Simulator cost per event as the network grows (issue 35).

A random permutation (every host streams to one other host, more bytes than can move) on
fat-trees of k = 8, 16, 24, 32 (128 to 8,192 hosts; Al-Fares et al. 2008) and on a 16,384-host
leaf-spine (256 leaves of 64 hosts, 64 spines: no oversubscription), 1 Gbit/s links, the
default TCP stack. Each size runs in a fresh process, so its peak RSS (getrusage ru_maxrss) is
its own; "CPU" is the process CPU time of ``run_until`` alone (build and flow set-up apart).

The simulated time shrinks as the network grows (``--host-seconds`` / hosts, at least
``--min-sim-s``), so every run handles millions of events but none takes minutes; at 1 Gbit/s
with no propagation delay a round trip is tens of microseconds, so even the shortest run is
hundreds of round trips of steady state. The figure of merit is CPU nanoseconds per event;
the target is the largest size within 1.5x of k = 8.

Results: benchmarks/results/sim_scale.json and a log-log plot sim_scale.png (ns per event and
peak RSS against hosts). For a per-function breakdown, run one size under a profiler:

    python benchmarks/sim_scale.py [--sizes ft8,ft16,ft24,ft32,ls16384] [--host-seconds 6.4]
    valgrind --tool=cachegrind python benchmarks/sim_scale.py --child ft24 --sim-s 0.0005
"""

from __future__ import annotations

import argparse
import json
import platform as _platform
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

SIZES = ["ft8", "ft16", "ft24", "ft32", "ls16384"]
RESULTS = Path(__file__).with_name("results")


def build_platform(size: str) -> dict:
    """``ftK``: the k-ary fat-tree; ``lsN``: N hosts on 64-host leaves, one spine per leaf port."""
    from parcomm.platform import fat_tree, leaf_spine

    if size.startswith("ft"):
        return fat_tree(int(size[2:]))
    if size.startswith("ls"):
        hosts = int(size[2:])
        per_leaf = 64
        if hosts % per_leaf:
            raise SystemExit(f"sim_scale: {size}: the leaf-spine size must be a multiple of {per_leaf} hosts")
        return leaf_spine(hosts // per_leaf, per_leaf, per_leaf)
    raise SystemExit(f"sim_scale: unknown size {size!r} (ftK for a fat-tree, lsN for a leaf-spine)")


def permutation(n: int, seed: int = 35) -> list[tuple[int, int]]:
    """Every host sends to one other; no host sends to itself (a shuffled cycle)."""
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return [(order[i], order[(i + 1) % n]) for i in range(n)]


def run_one(size: str, sim_s: float | None, host_seconds: float, min_sim_s: float) -> dict:
    from parcomm import _core
    from parcomm.platform import to_json

    plat = build_platform(size)
    n = len(plat["hosts"])
    if sim_s is None:
        sim_s = max(host_seconds / n, min_sim_s)
    t0 = time.perf_counter()
    sim = _core.Simulation(to_json(plat), 1)
    build_s = time.perf_counter() - t0
    flows = permutation(n)
    for s, d in flows:
        sim.send(s, d, 1 << 40)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    sim.run_until(sim_s)
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - wall0
    events = sim.events_processed
    return {
        "size": size,
        "hosts": n,
        "switches": len(plat["switches"]),
        "flows": len(flows),
        "simulated_s": sim_s,
        "build_s": round(build_s, 3),
        "events": events,
        "cpu_s": round(cpu, 3),
        "wall_s": round(wall, 3),
        "cpu_ns_per_event": round(cpu * 1e9 / events, 1),
        "events_per_cpu_s": round(events / cpu),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def plot(rows: list[dict], dest: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    hosts = [r["hosts"] for r in rows]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    a.loglog(hosts, [r["cpu_ns_per_event"] for r in rows], "o-")
    base = rows[0]["cpu_ns_per_event"]
    a.loglog(hosts, [1.5 * base] * len(hosts), "--", label=f"1.5x {rows[0]['size']} (target)")
    a.set_xlabel("hosts")
    a.set_ylabel("CPU ns per event")
    a.legend()
    b.loglog(hosts, [r["peak_rss_mib"] for r in rows], "o-")
    b.set_xlabel("hosts")
    b.set_ylabel("peak RSS (MiB)")
    for ax in (a, b):
        ax.grid(True, which="both", alpha=0.3)
        for r in rows:
            ax.annotate(r["size"], (r["hosts"], ax.lines[0].get_ydata()[rows.index(r)]), fontsize=8)
    fig.suptitle("parcomm simulator: permutation on fat-trees and a leaf-spine")
    fig.tight_layout()
    fig.savefig(dest, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default=",".join(SIZES), help="comma list of ftK / lsN")
    ap.add_argument("--host-seconds", type=float, default=6.4, help="hosts x simulated seconds per run")
    ap.add_argument("--min-sim-s", type=float, default=0.002, help="shortest simulated time")
    ap.add_argument("--sim-s", type=float, default=None, help="fixed simulated time for every size")
    ap.add_argument("--child", metavar="SIZE", help="run one size in this process and print its row")
    ap.add_argument("--out", default="sim_scale", help="name of the result files under benchmarks/results")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(run_one(args.child, args.sim_s, args.host_seconds, args.min_sim_s)))
        return
    rows = []
    for size in [s.strip() for s in args.sizes.split(",") if s.strip()]:
        cmd = [sys.executable, __file__, "--child", size, "--host-seconds", str(args.host_seconds)]
        cmd += ["--min-sim-s", str(args.min_sim_s)]
        if args.sim_s is not None:
            cmd += ["--sim-s", str(args.sim_s)]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode:
            raise SystemExit(f"sim_scale: {size} failed:\n{out.stderr.strip()}")
        rows.append(json.loads(out.stdout))
        r = rows[-1]
        print(
            f"{size:8} {r['hosts']:>6} hosts {r['events']:>11} events {r['cpu_s']:>8.2f} CPU s "
            f"{r['cpu_ns_per_event']:>7.1f} ns/event {r['peak_rss_mib']:>8.1f} MiB",
            flush=True,
        )
    base = rows[0]["cpu_ns_per_event"]
    for r in rows:
        r["ns_per_event_vs_first"] = round(r["cpu_ns_per_event"] / base, 3)
    print(f"largest / {rows[0]['size']}: {rows[-1]['ns_per_event_vs_first']:.2f}x CPU per event (target <= 1.5x)")
    RESULTS.mkdir(exist_ok=True)
    meta = {"machine": _platform.machine(), "python": _platform.python_version(), "args": vars(args)}
    (RESULTS / f"{args.out}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    if len(rows) > 1:
        plot(rows, RESULTS / f"{args.out}.png")


if __name__ == "__main__":
    main()
