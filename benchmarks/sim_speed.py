"""Simulator speed: events per second and wall time for two TCP scenarios.

(a) Alltoall algorithm A, 64 hosts (seed 001 platform), 1 MiB per pair,
    through SimComm (Python rank programs driving the Rust core).
(b) 100 hosts on a 1 Gbit/s star, every host streaming to every other host
    (9,900 TCP flows) for 1 simulated second, through the core alone.

"Events" are discrete events handled: popped from the queue, or (zero-delay
packet arrivals) handled in place at the instant they occur.

The baseline is the goal the foundation issue names: 3 million events per
second (about 10x what ns-3 reaches on comparable TCP scenarios on this kind
of machine) and at most 10 s of wall time for (b). Results are printed as a
table and written to benchmarks/results/sim_speed.json; run it on a quiet
machine and read the ratios, not the absolute numbers.

    python benchmarks/sim_speed.py [--quick] [--stacks rfc,linux] [--noise 0,190us] [--repeat 3]

With --stacks, each scenario runs once per TCP stack profile
(platform/stacks/*.toml) per round, stacks alternating within a round, and
the table adds each stack's events/s as a ratio to the first stack's
(medians over the rounds). With --noise as well, every stack runs once per
host timing noise (``HostSpec.timing_noise_s``; 0 is the ideal wire), as
``stack@noise`` variants alternating the same way.
"""

from __future__ import annotations

import argparse
import json
import platform as _platform
import time
from pathlib import Path

from parcomm import _core
from parcomm.collectives import alltoall_a
from parcomm.comm import run_sim
from parcomm.platform import opteron_cluster, star, to_json

GOAL_EVENTS_PER_S = 3e6
GOAL_B_WALL_S = 10.0


def _variant(stack: str | None) -> tuple[str | None, float | None]:
    """``"linux@190us"`` -> ("linux", 190e-6); a bare stack name keeps the builder's noise."""
    if stack is None or "@" not in stack:
        return stack, None
    from parcomm.platform.units import parse_duration

    name, noise = stack.split("@", 1)
    return name, parse_duration(noise, "--noise")


def bench_alltoall(hosts: int, nbytes: int, stack: str | None = None) -> dict:
    stack, noise = _variant(stack)
    extra = {} if noise is None else {"timing_noise_s": noise}
    plat = opteron_cluster(hosts, tcp={"stack": stack} if stack else None, **extra)
    res = run_sim(alltoall_a, plat, hosts, seed=1, kwargs={"nbytes": nbytes})
    return {
        "scenario": f"(a) alltoall A, {hosts} hosts, {nbytes} B per pair",
        "events": res.events,
        "wall_s": res.wall_s,
        "sim_s": res.time,
    }


def bench_all_pairs(hosts: int, sim_seconds: float, stack: str | None = None) -> dict:
    stack, noise = _variant(stack)
    extra = {} if noise is None else {"timing_noise_s": noise}
    plat = star(hosts, rate_bps=1e9, tcp={"stack": stack}, **extra) if stack else star(hosts, rate_bps=1e9, **extra)
    sim = _core.Simulation(to_json(plat), 1)
    for i in range(hosts):
        for j in range(hosts):
            if i != j:
                sim.send(i, j, 1 << 40)  # more than can move in the run
    t0 = time.perf_counter()
    sim.run_until(sim_seconds)
    wall = time.perf_counter() - t0
    c = sim.counters()
    return {
        "scenario": f"(b) all pairs, {hosts} hosts, {sim_seconds} simulated s at 1 Gbit/s",
        "events": sim.events_processed,
        "wall_s": wall,
        "sim_s": sim_seconds,
        "bytes_sent": int(sum(c["hosts"]["bytes_sent"])),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller scenarios (for a smoke run)")
    ap.add_argument("--stacks", default=None, help="comma list of TCP stack profiles to compare, e.g. rfc,linux")
    ap.add_argument("--noise", default=None, help="with --stacks: comma list of host timing noises, e.g. 0,190us")
    ap.add_argument("--repeat", type=int, default=3, help="rounds with --stacks (medians reported)")
    args = ap.parse_args()
    if args.stacks:
        return compare_stacks(args)
    rows = [
        bench_alltoall(16 if args.quick else 64, (64 << 10) if args.quick else (1 << 20)),
        bench_all_pairs(20 if args.quick else 100, 0.05 if args.quick else 1.0),
    ]
    for r in rows:
        r["events_per_s"] = r["events"] / r["wall_s"]
        r["ratio_to_goal_events_per_s"] = r["events_per_s"] / GOAL_EVENTS_PER_S
    rows[1]["ratio_goal_wall_to_wall"] = GOAL_B_WALL_S / rows[1]["wall_s"]
    print(f"{'scenario':62} {'events':>11} {'wall s':>8} {'Mev/s':>7} {'x goal':>7}")
    for r in rows:
        print(
            f"{r['scenario']:62} {r['events']:>11} {r['wall_s']:>8.2f} {r['events_per_s'] / 1e6:>7.2f} "
            f"{r['ratio_to_goal_events_per_s']:>7.2f}"
        )
    print(f"(b) wall-time goal {GOAL_B_WALL_S} s: {rows[1]['ratio_goal_wall_to_wall']:.2f}x faster than the goal")
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    meta = {"machine": _platform.machine(), "python": _platform.python_version(), "quick": args.quick}
    (out / "sim_speed.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))


def compare_stacks(args) -> None:
    import statistics

    stacks = [s.strip() for s in args.stacks.split(",") if s.strip()]
    if args.noise:
        noises = [n.strip() for n in args.noise.split(",") if n.strip()]
        stacks = [f"{st}@{n}" for st in stacks for n in noises]
    scen = [
        ("alltoall", lambda st: bench_alltoall(16 if args.quick else 64, (64 << 10) if args.quick else (1 << 20), st)),
        ("all pairs", lambda st: bench_all_pairs(20 if args.quick else 100, 0.05 if args.quick else 1.0, st)),
    ]
    got: dict = {(n, st): [] for n, _ in scen for st in stacks}
    for rnd in range(args.repeat):
        order = stacks if rnd % 2 == 0 else stacks[::-1]  # alternate who goes first
        for name, fn in scen:
            for st in order:
                r = fn(st)
                got[(name, st)].append(r["events"] / r["wall_s"])
    rows = []
    print(f"{'scenario':12} {'stack':14} {'Mev/s (median)':>15} {'x ' + stacks[0]:>10}")
    for name, _ in scen:
        base = statistics.median(got[(name, stacks[0])])
        for st in stacks:
            med = statistics.median(got[(name, st)])
            rows.append(
                {
                    "scenario": name,
                    "stack": st,
                    "events_per_s": got[(name, st)],
                    "median": med,
                    "ratio_to_first": med / base,
                }
            )
            print(f"{name:12} {st:14} {med / 1e6:>15.2f} {med / base:>10.2f}")
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    meta = {
        "machine": _platform.machine(),
        "python": _platform.python_version(),
        "quick": args.quick,
        "repeat": args.repeat,
        "stacks": stacks,
    }
    (out / ("sim_speed_noise.json" if args.noise else "sim_speed_stacks.json")).write_text(
        json.dumps({"meta": meta, "rows": rows}, indent=1)
    )


if __name__ == "__main__":
    main()
