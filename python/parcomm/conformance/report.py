"""The fidelity page of the HTML report: the conformance results as a report section.

``write_fidelity(doc, results_dir)`` writes ``results_dir/fidelity/``
(``report.json`` in the studies' format, the scatter figure, a CSV of the
scenarios) and regenerates ``results_dir/index.html``, which lists it with
the studies.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from .plot import plot_fidelity

__all__ = ["write_fidelity"]

FIGURE = "fidelity.png"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.0%}"


def write_fidelity(doc: dict, results_dir: str | Path) -> Path:
    """Add or replace the fidelity section of the report in ``results_dir``; returns the index path."""
    from ..studies.report import write_index

    out = Path(results_dir) / "fidelity"
    out.mkdir(parents=True, exist_ok=True)
    plot_fidelity(doc, str(out / FIGURE))
    rows = doc["scenarios"]
    with open(out / "scenarios.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            ["scenario", "kernel_median_s", "kernel_spread", "noisy"]
            + [f"{p}_{k}" for p in doc["profiles"] for k in ("sim_s", "error")]
        )
        for r in rows:
            e = r.get("emu") or {}
            cells = [r["name"], e.get("median_s"), e.get("spread"), r.get("noisy")]
            for p in doc["profiles"]:
                s = r["sim"].get(p) or {}
                cells += [s.get("median_s"), s.get("error")]
            w.writerow(cells)
    notes = [
        f"{len(rows)} scenarios from {Path(doc['matrix']).name}, measured {doc['date']} on Linux {doc['kernel']} "
        f"({doc['cpus']} CPUs), parcomm {doc['parcomm']} ({doc.get('commit') or 'no commit'}).",
        "Each scenario ran in the emulation (real Linux TCP in network namespaces) and in the simulator; error = "
        "simulated / emulated median completion time - 1.",
        f"A scenario whose emulated runs spread more than {doc['noise_limit']:.0%} (max - min over median) cannot "
        "decide agreement and is left out of the summary (hollow markers).",
    ]
    for s in doc["summary"]:
        worst = "; ".join(f"{w['name']} {w['error']:+.0%}" for w in s["largest"])
        notes.append(
            f"Profile {s['profile']}: median |error| {_pct(s['median_abs_error'])} over {s['decided']} "
            f"scenarios, {_pct(s['within_10pct'])} within 10 %, {_pct(s['within_25pct'])} within 25 %, RTO counts "
            f"within ±30 % or ±2 of the kernel's in {_pct(s.get('timeouts_agree'))}; "
            f"largest: {worst or 'none'}."
        )
    notes.append(
        "Rerun: parcomm conformance --report results (root); diagnose one scenario: "
        "parcomm conformance --only NAME --trace FILE.png. Guide: docs/conformance.md."
    )
    rep = {
        "name": "fidelity",
        "title": "Fidelity: the simulator against real Linux TCP",
        "source": "the conformance suite (parcomm conformance), not a paper",
        "comparisons": [],
        "figures": [str(out / FIGURE)],
        "captions": {
            FIGURE: "Simulated against emulated (real Linux TCP) completion time, one point per scenario "
            "and simulator profile, log-log; the line is agreement, the band ±25 %. Hollow: the "
            "kernel's own runs spread too much to decide."
        },
        "notes": notes,
        "tables": {"scenarios": None},
        "quick": False,
    }
    (out / "report.json").write_text(json.dumps(rep, indent=1, allow_nan=False))
    return write_index(Path(results_dir))
