"""Which Quest parameters describe seed 000's data set best?

The paper gives N = 5000 items, D = 10M transactions and min support 0.7 %,
but not T, I or L; its Table 2 describes the data by the candidates C and
large itemsets L of each pass. This script generates the study's sample
(100,000 transactions, seed 1) for a grid of (T, I, L), runs serial Apriori
at 0.7 % and scores each against Table 2's C and L columns (sum of
|log((parcomm + 1) / (paper + 1))|). Only those data-description columns
enter the score -- never times or retransmissions.

    python3 scripts/oguchi_data_search.py [--json out.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import time

from parcomm.apps.hpa.apriori import apriori
from parcomm.apps.hpa.quest import QuestParams, generate_transactions
from parcomm.studies.oguchi import PAPER_ITEMS, PAPER_MIN_SUPPORT, PAPER_TABLE2, SAMPLE_FULL

# A coarse grid, then a finer one around its best point (T=22, I=4, L=7000).
GRIDS = [
    {"avg_len": [18.0, 20.0, 22.0], "avg_pattern_len": [4.0, 5.0, 6.0], "patterns": [2000, 4000, 7000, 10000]},
    {"avg_len": [21.0, 22.0, 23.0], "avg_pattern_len": [3.5, 4.0, 4.5], "patterns": [6000, 7000, 8000, 9000]},
]


def score(passes: list[dict]) -> float:
    s = 0.0
    for k, paper in enumerate(PAPER_TABLE2, start=1):
        ours = passes[k - 1] if k <= len(passes) else {"candidates": 0, "large": 0}
        s += abs(math.log((ours["large"] + 1) / (paper["large"] + 1)))
        if k >= 2 and paper.get("candidates") is not None:
            s += abs(math.log((ours["candidates"] + 1) / (paper["candidates"] + 1)))
    return s


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="write every grid point's passes and score here")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    rows = []
    keys = list(GRIDS[0])
    points = list(dict.fromkeys(v for g in GRIDS for v in itertools.product(*g.values())))
    for values in points:
        q = dict(zip(keys, values))
        t0 = time.perf_counter()
        tx = generate_transactions(QuestParams(transactions=SAMPLE_FULL, items=PAPER_ITEMS, seed=a.seed, **q))
        res = apriori(tx, PAPER_MIN_SUPPORT)
        passes = [{"candidates": p["candidates"], "large": p["large"]} for p in res.passes]
        rows.append({**q, "passes": passes, "score": score(passes), "wall_s": time.perf_counter() - t0})
        cl = " ".join(f"{p['candidates']}/{p['large']}" for p in passes)
        print(f"T={q['avg_len']:g} I={q['avg_pattern_len']:g} L={q['patterns']}: C/L {cl}  score {rows[-1]['score']:.2f}",
              flush=True)
    best = min(rows, key=lambda r: r["score"])
    print("best:", {k: best[k] for k in keys}, f"score {best['score']:.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"paper": PAPER_TABLE2, "grids": GRIDS, "rows": rows, "best": best}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
