"""A k = 16 fat-tree (1,024 hosts, 320 switches; Al-Fares et al. 2008) under ECMP: simulator
events per second, peak memory, and memory per flow.

(a) permutation: every host streams to one other host (a random permutation, 1,024 TCP flows)
    for 0.05 simulated seconds at 1 Gbit/s per link;
(b) all-to-all: every host streams to every other (1,047,552 TCP flows) for 0.02 simulated s.

(c) star: building a 4,096-host star (the route table's size dominated this before routes were
    kept per attachment switch), build time and peak RSS.

Each scenario runs in a fresh process, so its peak RSS (getrusage ru_maxrss) is its own.
Memory per flow is given twice: idle (the RSS growth from the built platform to the moment
every flow exists, before any packet moves) and running (the growth to the run's peak RSS,
with windows open, packets queued and send logs full), each divided by the flows. --stack
picks the TCP stack profile (default: the builders' default). Also printed: how evenly the permutation's packets spread over the 64
core switches (max deviation from the mean). Results go to benchmarks/results/fattree_ecmp.json.

    python benchmarks/fattree_ecmp.py [--k 16] [--only permutation|alltoall|star] [--stack linux]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

from parcomm import _core
from parcomm.platform import fat_tree, star, to_json


def _rss_mib() -> float:
    """Current resident set (MiB), from /proc/self/statm."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / 2**20


def run_star(n: int = 4096) -> dict:
    text = to_json(star(n))
    t0 = time.perf_counter()
    sim = _core.Simulation(text, 0)
    build_s = time.perf_counter() - t0
    return {
        "scenario": "star",
        "hosts": sim.host_count,
        "build_s": round(build_s, 3),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def run(scenario: str, k: int, stack: str | None = None) -> dict:
    if scenario == "star":
        return run_star()
    plat = fat_tree(k, tcp={"stack": stack}) if stack else fat_tree(k)
    n = len(plat["hosts"])
    if scenario == "permutation":
        perm = list(range(n))
        random.Random(16).shuffle(perm)
        flows = [(s, d) for s, d in enumerate(perm) if s != d]
        sim_s = 0.05
    else:
        # shifted order (s -> s+1, s+2, ...): the flows a host starts first go to different
        # hosts, not every host's first packets to host 0 (an incast no all-to-all schedule makes)
        flows = [(s, (s + off) % n) for off in range(1, n) for s in range(n)]
        sim_s = 0.02
    t0 = time.perf_counter()
    sim = _core.Simulation(to_json(plat), 1)
    build_s = time.perf_counter() - t0
    rss_built = _rss_mib()  # after the flow list exists: only the core's own growth counts below
    for s, d in flows:
        sim.send(s, d, 1 << 40)  # more than can move in the run
    rss_flows = _rss_mib()
    t0 = time.perf_counter()
    sim.run_until(sim_s)
    wall = time.perf_counter() - t0
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # MiB, the run's peak
    c = sim.counters()
    cores: dict[str, int] = {}
    for name, tx in zip(c["ports"]["name"], c["ports"]["tx_packets"]):
        owner = name.split("->")[0]
        if owner.startswith("c"):
            cores[owner] = cores.get(owner, 0) + tx
    mean = sum(cores.values()) / len(cores)
    return {
        "scenario": scenario,
        "k": k,
        "hosts": n,
        "flows": len(flows),
        "simulated_s": sim_s,
        "build_s": round(build_s, 3),
        "events": sim.events_processed,
        "wall_s": round(wall, 3),
        "events_per_s": round(sim.events_processed / wall),
        "rss_built_mib": round(rss_built, 1),
        "stack": stack or "default",
        "bytes_per_flow": round((rss_flows - rss_built) * 2**20 / len(flows)),
        "bytes_per_running_flow": round((peak_rss - rss_built) * 2**20 / len(flows)),
        "peak_rss_mib": round(peak_rss, 1),
        "core_packets_max_dev": round(max(abs(v - mean) / mean for v in cores.values()), 4) if mean else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=16, help="fat-tree arity (even; k^3/4 hosts)")
    ap.add_argument("--only", choices=["permutation", "alltoall", "star"], help="run one scenario")
    ap.add_argument("--stack", default=None, help="TCP stack profile (platform/stacks), e.g. linux")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(run(args.only, args.k, args.stack)))
        return
    rows = []
    for scenario in [args.only] if args.only else ["star", "permutation", "alltoall"]:
        out = subprocess.run(
            [sys.executable, __file__, "--child", "--only", scenario, "--k", str(args.k)]
            + (["--stack", args.stack] if args.stack else []),
            capture_output=True,
            text=True,
            check=True,
        )
        rows.append(json.loads(out.stdout))
        print(json.dumps(rows[-1]))
    dest = Path(__file__).with_name("results") / "fattree_ecmp.json"
    dest.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
