"""Multicast simulator speed: wall time and events per second on a tree of
10,000 receivers (seed 003, issue 7: "the simulator handles a tree of 10,000
receivers; a benchmark reports wall time and events per second").

The tree: the source's local network (3 ms, 5 % loss, 1 Gbit/s), three levels
of backbone (30 ms, 0.2 %, 622 Mbit/s) and the receivers' local networks
(3 ms, 5 %, 1 Gbit/s), branching 10 ways at every router: 1,111 routers,
11,111 networks, 10,000 receivers (study 4's route and parameters, §4 1.4,
on a wider tree). The source sends ``--packets`` packets at 1,000 packets/s
under three variants: Comet RM (no repair router), repair at the
backbone/local-network boundaries (the router below the source's LAN and
the routers just above the receivers' LANs) and repair at every router.

"Events" are the discrete events the core handled (packet arrivals at the
end of a network, source ticks, timer expiries). The baseline is the goal
the foundation issue set for the core: 3 million events per second. Results
are printed and written to benchmarks/results/mcast_speed.json; read the
ratios, not the absolute numbers (the machine may be shared).

    python benchmarks/mcast_speed.py [--quick] [--packets N]
"""

from __future__ import annotations

import argparse
import json
import platform as _platform
import time
from pathlib import Path

from parcomm.apps.mcast.sim import simulate

GOAL_EVENTS_PER_S = 3e6
LAN = (0.003, 0.05, 1e9)
BACKBONE = (0.030, 0.002, 622e6)


def tree(fanout: int, levels: int) -> dict:
    """src -LAN-> r1.0, then ``levels`` router levels ... receivers; ``fanout`` ways at each router."""
    segs = [LAN] + [BACKBONE] * (levels - 1) + [LAN]
    nodes = [{"name": "src", "kind": "source"}]
    nets = []
    prev = ["src"]
    for level in range(1, levels + 2):
        last = level == levels + 1
        count = 1 if level == 1 else len(prev) * fanout
        for i in range(count):
            name = f"rcv{i}" if last else f"r{level}.{i}"
            # Under "tree", the routers at both ends of the backbone repair.
            nodes.append(
                {"name": name, "kind": "receiver"}
                if last
                else {"name": name, "kind": "router", "repair": level in (1, levels)}
            )
            d, loss, rate = segs[level - 1]
            parent = prev[0] if level == 1 else prev[i // fanout]
            nets.append(
                {"name": f"n{level}.{i}", "parent": parent, "child": name, "delay_s": d, "loss": loss, "rate_bps": rate}
            )
        prev = [n["name"] for n in nodes[-count:]]
    return {
        "name": f"{fanout}-ary, {len(prev)} receivers",
        "source": "src",
        "packet_bytes": 1024,
        "nodes": nodes,
        "networks": nets,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1,000 receivers and 50 packets (a smoke run)")
    ap.add_argument("--packets", type=int, default=None, help="packets per run (default 200; 50 with --quick)")
    args = ap.parse_args()
    t = tree(10, 3 if args.quick else 4)
    packets = args.packets or (50 if args.quick else 200)
    receivers = sum(n["kind"] == "receiver" for n in t["nodes"])
    rows = []
    for repair, label in (("none", "Comet RM"), ("tree", "repair at boundary"), ("all", "repair everywhere")):
        cpu0 = time.process_time()
        r = simulate(t, packets=packets, rate_pps=1000, window=4096, repair=repair, seed=1)
        cpu = time.process_time() - cpu0  # includes building and validating the tree
        rows.append(
            {
                "scenario": f"{label}: {receivers} receivers, {packets} packets",
                "receivers": receivers,
                "networks": len(t["networks"]),
                "packets": packets,
                "repair": repair,
                "complete": r.complete,
                "events": r.events,
                "wall_s": r.wall_s,
                "sim_s": r.end_time_s,
                "cpu_s": cpu,
                "events_per_s": r.events_per_s,
                "events_per_cpu_s": r.events / cpu,
                "ratio_to_goal_events_per_s": r.events_per_s / GOAL_EVENTS_PER_S,
                "mean_delay_s": r.delay["mean_s"],
                "p99_delay_s": r.delay["p99_s"],
                "peak_buffer_bytes_max": max(r.buffers["peak_bytes"]),
            }
        )
    print(
        f"{'scenario':52} {'events':>10} {'wall s':>7} {'cpu s':>6} {'Mev/s':>6} {'x goal':>6} {'mean ms':>8} {'p99 ms':>7}"
    )
    for r in rows:
        print(
            f"{r['scenario']:52} {r['events']:>10} {r['wall_s']:>7.2f} {r['cpu_s']:>6.2f} {r['events_per_s'] / 1e6:>6.2f} "
            f"{r['ratio_to_goal_events_per_s']:>6.2f} {r['mean_delay_s'] * 1e3:>8.1f} {r['p99_delay_s'] * 1e3:>7.1f}"
        )
    print("wall s and Mev/s: the core's own wall clock; cpu s: this process's CPU time for the whole call")
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    meta = {
        "machine": _platform.machine(),
        "python": _platform.python_version(),
        "quick": args.quick,
        "goal_events_per_s": GOAL_EVENTS_PER_S,
    }
    (out / "mcast_speed.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
