"""Elastic membership of ``parcomm bcast``, measured: a node that starts late,
and nodes killed mid-run, against the same broadcast with everyone on time.

N local node processes (``parcomm.apps.bcast.launch.run_local``), versitygw on
127.0.0.1 behind the pacing proxy (every GET paced to ``--rate``, so storage,
not this machine's 2 cores, sets the pace), outputs on disk, every output's
sha256 checked. Each round runs, interleaved:

* ``baseline``: every node on time;
* ``late``: the last rank starts ``--late`` of the baseline's median
  completion late (default 50 %); the others count it out after
  ``--join-timeout`` and its heir fetches its share; when it starts it is
  readmitted and fetches from the others. Reported: its completion time from
  its own start, against the issue's bound (object / a node's download rate
  in the baseline, i.e. the baseline's median completion, + 2 s);
* ``kill``: ceil(10 %) of the ranks are killed (SIGKILL, our own children,
  by pid) once the nodes hold half of the object on average; reported: the
  survivors' p99 completion over the baseline's p99.

Origin egress is the pacing proxy's count of GET body bytes (killed nodes'
GETs included), over the object size.

    python3 benchmarks/bcast_elastic.py --nodes 10 --size 96MiB --repeat 3

Completion is from the start of the run (the parent's clock) to the node's
verified output; a late node's is from its own start.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from parcomm.apps.bcast import manifest
from parcomm.apps.bcast.launch import Job, run_local
from parcomm.apps.bcast.node import BcastConfig
from parcomm.apps.bcast.proxy import PacingProxy
from parcomm.apps.bcast.s3 import S3Client
from parcomm.apps.bcast.summary import percentile
from parcomm.apps.bcast.versitygw import VersityGW, ensure_versitygw
from parcomm.platform.units import parse_rate, parse_size

HERE = Path(__file__).resolve().parent


def run(job: Job, nodes: int, outdir: Path, proxy: PacingProxy, kill: list[int] | None = None) -> dict:
    for f in outdir.iterdir():
        f.unlink()
    served = proxy.snapshot().bytes_served
    killed: dict[int, float] = {}
    t0 = time.monotonic()

    def on_tick(progress: dict[int, dict]) -> None:
        if not kill or killed:
            return
        held = [e.get("held", 0) / e["pieces"] for e in progress.values() if e.get("pieces")]
        if len(held) == nodes and sum(held) / nodes >= 0.5:
            for rank in kill:
                os.kill(progress[rank]["pid"], signal.SIGKILL)  # our own child, by pid
                killed[rank] = time.monotonic() - t0

    result = run_local(job, nodes, on_tick=on_tick)
    egress = proxy.snapshot().bytes_served - served  # the origin's count: killed nodes' GETs included
    return {"reports": result.reports, "errors": result.errors, "killed": killed, "egress": egress}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=10)
    ap.add_argument("--size", default="96MiB")
    ap.add_argument("--rate", default="1.5MB/s", help="per-GET storage rate (pacing proxy)")
    ap.add_argument("--late", type=float, default=0.5, help="late start, as a fraction of the baseline's median")
    ap.add_argument("--join-timeout", type=float, default=4.0, help="seconds before an absent rank is counted out")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "bcast_elastic.json")
    args = ap.parse_args()
    size, rate = parse_size(args.size), parse_rate(args.rate) / 8  # bytes/s
    nodes = args.nodes
    victims = list(range(nodes - math.ceil(0.1 * nodes), nodes))
    late_rank = nodes - 1
    rows: dict[str, list] = {"baseline": [], "late": [], "kill": []}
    with tempfile.TemporaryDirectory(prefix="parcomm-elastic-") as tmp:
        root, outdir = Path(tmp, "s3"), Path(tmp, "out")
        root.mkdir()
        outdir.mkdir()
        data = os.urandom(size)
        digest = hashlib.sha256(data).hexdigest()
        with VersityGW(root, binary=ensure_versitygw(install=False)) as gw:
            gw.create_bucket("bench")
            S3Client(gw.s3_config()).put_bytes("s3://bench/obj", data)
            del data
            manifest.prepare("s3://bench/obj", 1 << 20, client=S3Client(gw.s3_config()))
            with PacingProxy(gw.endpoint_url, profile=[(1.0, rate)], seed=1) as proxy:
                cfg = BcastConfig(work_pieces=2, choke_interval=1.0, stall_timeout=10.0, orphan_timeout=10.0)
                job = Job(
                    "s3://bench/obj",
                    str(outdir / "out.{rank}"),
                    "steal",
                    cfg,
                    gw.s3_config(proxy.endpoint_url),
                    timeout=600,
                    linger=30,
                    join_timeout=args.join_timeout,
                )
                base_p50 = None
                for rnd in range(args.repeat + 1):
                    for name in ("baseline", "late", "kill"):
                        if name == "late" and base_p50 is None:
                            continue
                        this = job
                        if name == "late":
                            this = replace(job, faults={late_rank: [f"late:{args.late * base_p50:.2f}"]})
                        got = run(this, nodes, outdir, proxy, victims if name == "kill" else None)
                        skip = set(got["killed"])
                        bad = [
                            r
                            for r in range(nodes)
                            if r not in skip
                            and hashlib.sha256((outdir / f"out.{r}").read_bytes()).hexdigest() != digest
                        ]
                        if bad or set(got["errors"]) - skip:
                            raise RuntimeError(f"{name}: outputs wrong on {bad}, errors {got['errors']}")
                        done = {r.rank: r.complete_s for r in got["reports"]}
                        egress = got["egress"] / size
                        row = {"completion_s": done, "egress_x": egress, "killed": got["killed"]}
                        if name == "baseline" and base_p50 is None:
                            base_p50 = percentile(list(done.values()), 50)  # round 0 calibrates the late start
                        if rnd:
                            rows[name].append(row)
                        p99 = percentile([v for v in done.values() if v is not None], 99)
                        print(f"round {rnd} {name:8} p99 {p99:6.2f} s  egress {egress:.2f}x", file=sys.stderr)
    base = rows["baseline"]
    base_p50s = [percentile(list(r["completion_s"].values()), 50) for r in base]
    base_p99s = [percentile(list(r["completion_s"].values()), 99) for r in base]
    late_times = [r["completion_s"][late_rank] for r in rows["late"]]
    kill_p99s = [percentile([v for v in r["completion_s"].values() if v is not None], 99) for r in rows["kill"]]
    bound = statistics.median(base_p50s) + 2.0
    summary = {
        "nodes": nodes,
        "size": size,
        "rate_Bps": rate,
        "join_timeout_s": args.join_timeout,
        "baseline_p50_s": statistics.median(base_p50s),
        "baseline_p99_s": statistics.median(base_p99s),
        "late_node_s": statistics.median(late_times),
        "late_bound_s": bound,
        "late_egress_x": statistics.median(r["egress_x"] for r in rows["late"]),
        "kill_p99_s": statistics.median(kill_p99s),
        "kill_p99_over_baseline": statistics.median(k / b for k, b in zip(kill_p99s, base_p99s)),
        "kill_egress_x": statistics.median(r["egress_x"] for r in rows["kill"]),
        "killed_ranks": victims,
        "rounds": rows,
    }
    print(
        f"\n{nodes} nodes, {size / 2**20:.0f} MiB, GETs at {rate / 1e6:.1f} MB/s, median of {args.repeat} rounds\n"
        f"baseline: p50 {summary['baseline_p50_s']:.2f} s, p99 {summary['baseline_p99_s']:.2f} s\n"
        f"late start ({args.late:.0%} of p50): the late node took {summary['late_node_s']:.2f} s from its start "
        f"(bound {bound:.2f} s); egress {summary['late_egress_x']:.2f}x\n"
        f"kill {len(victims)} at 50%: survivors' p99 {summary['kill_p99_s']:.2f} s = "
        f"{summary['kill_p99_over_baseline']:.2f}x the baseline's; egress {summary['kill_egress_x']:.2f}x"
    )
    args.out.write_text(json.dumps(summary, indent=2, default=str) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
