"""Overhead of blocking mpi4py over the async API under the simulator (issue 33).

The same ping-pong of small messages (1,000 messages: 500 round trips of an
int), once as an ``async def`` rank program awaiting ``comm.send/recv`` and
once as an unmodified ``from mpi4py import MPI`` script whose blocking calls
go through a greenlet per rank (benchmarks/pingpong_mpi4py.py). Both drive
the same engine, so both process the same simulator events; the figure is
events per second of wall time, blocking / async (target: at least 1/1.5).
The two are alternated within each round (A/B, B/A, ...) and the medians are
compared, as the machine is shared.

    python benchmarks/blocking_overhead.py [--rounds 7] [--messages 1000]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from parcomm.comm import run_sim
from parcomm.comm.aio import resolve_program

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "pingpong_mpi4py.py"


async def pingpong(comm, rounds: int = 500):
    for i in range(rounds):
        if comm.rank == 0:
            await comm.send(i, 1, 0)
            await comm.recv(None, 1, 0)
        else:
            await comm.recv(None, 0, 0)
            await comm.send(i, 0, 0)


def run_async(rounds: int):
    return run_sim(pingpong, "star:2", 2, kwargs={"rounds": rounds})


def run_blocking(rounds: int):
    return run_sim(resolve_program(str(SCRIPT)), "star:2", 2, kwargs={"argv": [str(rounds)]})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--messages", type=int, default=1000)
    args = ap.parse_args()
    rounds = args.messages // 2
    rates: dict[str, list[float]] = {"async": [], "blocking": []}
    events = {}
    for r in range(args.rounds):
        order = [("async", run_async), ("blocking", run_blocking)]
        for name, fn in order if r % 2 == 0 else order[::-1]:
            res = fn(rounds)
            events[name] = res.events
            rates[name].append(res.events / res.wall_s)
    assert events["async"] == events["blocking"], f"different simulations: {events}"
    med = {k: statistics.median(v) for k, v in rates.items()}
    ratio = med["async"] / med["blocking"]
    doc = {
        "messages": 2 * rounds,
        "events": events["async"],
        "rounds": args.rounds,
        "events_per_s_median": med,
        "async_over_blocking": ratio,
        "target": "async/blocking <= 1.5",
    }
    print(f"ping-pong of {2 * rounds} messages, {events['async']} simulator events each way, {args.rounds} rounds A/B")
    print(f"  async    {med['async']:>12,.0f} events/s (median)")
    print(f"  blocking {med['blocking']:>12,.0f} events/s (median)")
    print(f"  async / blocking = {ratio:.2f}x (target <= 1.5x)")
    out = HERE / "results" / "blocking_overhead.json"
    out.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
