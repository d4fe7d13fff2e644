"""Mining speed: serial Apriori against named baselines, and HPA on MPI ranks.

One Quest data set (default D = 100k, T = 10, I = 4, N = 1000, L = 2000,
min support 0.5 %) is mined by

* parcomm's serial Apriori (numpy), pass by pass: transactions per second
  per pass = D / pass time;
* efficient-apriori (pure Python, PyPI) and pyfim (C, PyPI: its apriori and
  fpgrowth), whole runs (they expose no per-pass times), when installed;
* HPA on P = 1, 2, 4 MPI ranks (``run_mpi``), with the option sets of
  ``HPA_CONFIGS`` ("tuned" at every P, "paper" at P = 4): per pass, the
  slowest rank's time, and transactions per second per rank = (D / P) / pass
  time; the whole program time is the slowest rank's, from after loading its
  partition (as serial's excludes loading), without mpiexec's start-up.

Every run must find the same itemsets (checked). The issue's goals: serial
within 2x of the fastest baseline, HPA on 4 ranks faster than serial. The
load average is recorded: on a shared machine the ranks get fewer cores. Results
are a table and benchmarks/results/mining_speed.json, as ratios from this one
run; run it on a quiet machine.

    python benchmarks/mining_speed.py [--quick] [--procs 1,2,4] [--hpa tuned,paper]
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

# HPA's options per run: the paper's 8 KB blocks of itemsets, and large blocks
# naming each itemset by its position in C_k (see hpa's ``wire``)
HPA_CONFIGS = {"paper": {"block_bytes": 8192, "wire": "itemsets"}, "tuned": {"block_bytes": 1 << 20, "wire": "index"}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="D = 20k")
    ap.add_argument("--transactions", type=int, default=100_000)
    ap.add_argument("--min-support", type=float, default=0.005)
    ap.add_argument(
        "--procs",
        type=lambda v: [int(x) for x in v.split(",")],
        default=[1, 2, 4],
        help="MPI rank counts for HPA, comma-separated",
    )
    ap.add_argument(
        "--hpa",
        type=lambda v: v.split(","),
        default=["tuned", "paper"],
        help=f"HPA option sets, comma-separated, of {sorted(HPA_CONFIGS)}",
    )
    ap.add_argument(
        "--paper-procs",
        type=lambda v: [int(x) for x in v.split(",")],
        default=[4],
        help="rank counts the 'paper' option set runs with",
    )
    ap.add_argument("--out", default=None, help="results JSON (default benchmarks/results/mining_speed.json)")
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs (serial, baselines)")
    a = ap.parse_args()
    d = 20_000 if a.quick else a.transactions
    p = QuestParams(transactions=d, avg_len=10, avg_pattern_len=4, items=1000, patterns=2000, seed=1)
    out: dict = {
        "params": p.__dict__,
        "min_support": a.min_support,
        "machine": _platform.platform(),
        "cpus": os.cpu_count(),
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.qtx"
        t0 = time.perf_counter()
        write_quest(path, p, parts=max(a.procs))
        out["generate_s"] = time.perf_counter() - t0
        tx = load(path)
        rows = tx.to_lists()

        best = None
        for _ in range(a.repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            res = apriori(tx, a.min_support)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            if best is None or wall < best[0]:
                best = (wall, res, cpu)
        serial_s, res, serial_cpu = best
        ref = res.itemsets()
        out["serial"] = {
            "total_s": serial_s,
            "cpu_s": serial_cpu,
            "passes": [{**x, "tx_per_s": d / x["time_s"]} for x in res.passes],
        }

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

            t0 = time.perf_counter()  # one run: pure Python, ~10 s
            its, _ = ea([tuple(r) for r in rows], min_support=a.min_support, min_confidence=1.0, max_length=10**6)
            got = {tuple(sorted(k)): v for lv in its.values() for k, v in lv.items()}
            base["efficient_apriori"] = {"total_s": time.perf_counter() - t0, "same_itemsets": got == ref}
        except ImportError:
            pass
        out["baselines"] = base

        runs = []
        for procs in a.procs:
            for cfg in a.hpa:
                if cfg == "paper" and procs not in a.paper_procs:
                    continue
                kw = {"path": str(path), "min_support": a.min_support, **HPA_CONFIGS[cfg]}
                t0 = time.perf_counter()
                mr = run_mpi("parcomm.apps.hpa.hpa:hpa", procs, kwargs=kw, timeout=1200)
                launch_wall = time.perf_counter() - t0
                m = merge_result(mr.results)
                runs.append(
                    {
                        "config": cfg,
                        "options": HPA_CONFIGS[cfg],
                        "procs": procs,
                        "program_s": m["time_s"],
                        "cpu_s_all_ranks": m["process_cpu_s"],
                        "wall_with_launch_s": launch_wall,
                        "same_itemsets": levels_to_dict(m["levels"]) == ref,
                        "serial_over_hpa": serial_s / m["time_s"],
                        "passes": [{**x, "tx_per_s_per_rank": d / procs / x["time_s"]} for x in m["passes"]],
                    }
                )
        out["hpa_mpi"] = runs
        out["load_average"] = os.getloadavg()

    print(
        f"Quest D={d} T=10 I=4 N=1000 L=2000, min support {a.min_support:g}; {os.cpu_count()} CPUs, "
        f"load average {out['load_average'][0]:.2f} at the end"
    )
    print(
        f"{'pass':>4} {'C':>8} {'L':>6} {'serial s':>9} {'serial tx/s':>12}"
        + "".join(f" {r['config'][:5] + ' P=' + str(r['procs']):>12}" for r in runs)
        + "   (HPA: slowest rank's s, tx/s/rank)"
    )
    for i, s in enumerate(out["serial"]["passes"]):
        line = f"{s['pass']:>4} {s['candidates']:>8} {s['large']:>6} {s['time_s']:>9.4f} {s['tx_per_s']:>12.3g}"
        for r in runs:
            h = r["passes"][i] if i < len(r["passes"]) else None
            line += f" {h['time_s']:>6.3f}/{h['tx_per_s_per_rank']:<5.2g}" if h else " " * 13
        print(line)
    print(f"serial (parcomm, numpy) total {serial_s:.3f} s (CPU {serial_cpu:.3f} s)")
    for k, v in base.items():
        print(
            f"{k:>20}: {v['total_s']:.3f} s  serial/baseline = {serial_s / v['total_s']:.2f}  same itemsets: {v['same_itemsets']}"
        )
    for r in runs:
        print(
            f"HPA {r['config']:>5} on {r['procs']} MPI ranks: {r['program_s']:.3f} s in the ranks "
            f"({r['wall_with_launch_s']:.2f} s with mpiexec launch and loading; CPU of all ranks {r['cpu_s_all_ranks']:.2f} s "
            f"(polling included)); serial/HPA = {r['serial_over_hpa']:.2f}; "
            f"same itemsets: {r['same_itemsets']}"
        )
    fastest = min(base, key=lambda k: base[k]["total_s"]) if base else None
    out["ratios"] = {
        "fastest_baseline": fastest,
        "serial_over_fastest_baseline": serial_s / base[fastest]["total_s"] if base else None,
        "serial_over_baseline": {k: serial_s / v["total_s"] for k, v in base.items()},
        "serial_over_hpa": {f"{r['config']}.P{r['procs']}": r["serial_over_hpa"] for r in runs},
    }
    dest = Path(a.out) if a.out else Path(__file__).resolve().parent / "results" / "mining_speed.json"
    dest.parent.mkdir(exist_ok=True)
    dest.write_text(json.dumps(out, indent=1, default=str))
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
