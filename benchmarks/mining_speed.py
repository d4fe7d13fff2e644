"""Mining speed: serial Apriori against named baselines, and HPA on MPI ranks.

One Quest data set (default D = 100k, T = 10, I = 4, N = 1000, L = 2000,
min support 0.5 %) is mined by

* parcomm's serial Apriori (numpy), pass by pass: transactions per second
  per pass = D / pass time;
* efficient-apriori (pure Python, PyPI) and pyfim (C, PyPI: its apriori and
  fpgrowth), whole runs (they expose no per-pass times), when installed;
* HPA on 4 MPI ranks (``run_mpi``): per pass, the slowest rank's time, and
  transactions per second per rank = (D / 4) / pass time.

Every run must find the same itemsets (checked). The issue's goals: serial
within 2x of the fastest baseline, HPA on 4 ranks faster than serial. Results
are a table and benchmarks/results/mining_speed.json, as ratios from this one
run; run it on a quiet machine.

    python benchmarks/mining_speed.py [--quick] [--procs 4]
"""

from __future__ import annotations

import argparse
import json
import os
import platform as _platform
import tempfile
import time
from pathlib import Path

from parcomm.apps.hpa.apriori import apriori, min_count
from parcomm.apps.hpa.hpa import levels_to_dict, merge_result
from parcomm.apps.hpa.quest import QuestParams, load, write_quest
from parcomm.comm import run_mpi


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="D = 20k")
    ap.add_argument("--transactions", type=int, default=100_000)
    ap.add_argument("--min-support", type=float, default=0.005)
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs (serial, baselines)")
    a = ap.parse_args()
    d = 20_000 if a.quick else a.transactions
    p = QuestParams(transactions=d, avg_len=10, avg_pattern_len=4, items=1000, patterns=2000, seed=1)
    out: dict = {"params": p.__dict__, "min_support": a.min_support, "machine": _platform.platform(),
                 "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.qtx"
        t0 = time.perf_counter()
        write_quest(path, p, parts=a.procs)
        out["generate_s"] = time.perf_counter() - t0
        tx = load(path)
        rows = tx.to_lists()

        best = None
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            res = apriori(tx, a.min_support)
            wall = time.perf_counter() - t0
            if best is None or wall < best[0]:
                best = (wall, res)
        serial_s, res = best
        ref = res.itemsets()
        out["serial"] = {"total_s": serial_s, "passes": [
            {**x, "tx_per_s": d / x["time_s"]} for x in res.passes]}

        base: dict = {}
        try:
            import fim

            mc = min_count(a.min_support, d)
            for algo in ("apriori", "fpgrowth"):
                t = []
                for _ in range(a.repeat):
                    t0 = time.perf_counter()
                    r = getattr(fim, algo)(rows, supp=-mc, zmin=1, report="a")
                    t.append(time.perf_counter() - t0)
                got = {tuple(sorted(s)): c for s, c in r}
                base[f"pyfim.{algo}"] = {"total_s": min(t), "same_itemsets": got == ref}
        except ImportError:
            pass
        try:
            from efficient_apriori import apriori as ea

            t0 = time.perf_counter()
            its, _ = ea([tuple(r) for r in rows], min_support=a.min_support, min_confidence=1.0, max_length=10**6)
            got = {tuple(sorted(k)): v for lv in its.values() for k, v in lv.items()}
            base["efficient_apriori"] = {"total_s": time.perf_counter() - t0, "same_itemsets": got == ref}
        except ImportError:
            pass
        out["baselines"] = base

        t0 = time.perf_counter()
        mr = run_mpi("parcomm.apps.hpa.hpa:hpa", a.procs, kwargs={"path": str(path), "min_support": a.min_support},
                     timeout=1200)
        launch_wall = time.perf_counter() - t0
        m = merge_result(mr.results)
        out["hpa_mpi"] = {"procs": a.procs, "program_s": m["time_s"], "wall_with_launch_s": launch_wall,
                          "same_itemsets": levels_to_dict(m["levels"]) == ref,
                          "passes": [{**x, "tx_per_s_per_rank": d / a.procs / x["time_s"]} for x in m["passes"]]}

    print(f"Quest D={d} T=10 I=4 N=1000 L=2000, min support {a.min_support:g}; {os.cpu_count()} CPUs")
    print(f"{'pass':>4} {'C':>8} {'L':>6} {'serial s':>9} {'serial tx/s':>12} {'HPA s':>8} {'HPA tx/s/rank':>14} {'speedup':>8}")
    for s, h in zip(out["serial"]["passes"], out["hpa_mpi"]["passes"]):
        print(f"{s['pass']:>4} {s['candidates']:>8} {s['large']:>6} {s['time_s']:>9.4f} {s['tx_per_s']:>12.3g} "
              f"{h['time_s']:>8.4f} {h['tx_per_s_per_rank']:>14.3g} {s['time_s'] / h['time_s']:>8.2f}")
    print(f"serial total {serial_s:.3f} s")
    for k, v in base.items():
        print(f"{k:>20}: {v['total_s']:.3f} s  serial/baseline = {serial_s / v['total_s']:.2f}  same itemsets: {v['same_itemsets']}")
    h = out["hpa_mpi"]
    print(f"HPA on {a.procs} MPI ranks: {h['program_s']:.3f} s in the ranks ({h['wall_with_launch_s']:.2f} s with mpiexec "
          f"launch and loading); serial/HPA = {serial_s / h['program_s']:.2f}; same itemsets: {h['same_itemsets']}")
    out["ratios"] = {"serial_over_fastest_baseline": serial_s / min(v["total_s"] for v in base.values()) if base else None,
                     "serial_over_hpa": serial_s / h["program_s"]}
    dest = Path(__file__).resolve().parent / "results" / "mining_speed.json"
    dest.parent.mkdir(exist_ok=True)
    dest.write_text(json.dumps(out, indent=1, default=str))
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
