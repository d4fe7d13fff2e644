"""Agreement in numbers: per-profile error statistics over the scenarios that can decide.

A scenario decides agreement only if the emulation ran and its own
run-to-run spread is at most the noise limit (25 % by default): a
referee that disagrees with itself by more than that cannot say whether the
simulator is within 25 %.
"""

from __future__ import annotations

import statistics

__all__ = ["NOISE_LIMIT", "summarize", "decided", "rto_incidence", "incidence_agrees"]

#: A scenario whose emulated runs spread more than this cannot decide agreement.
NOISE_LIMIT = 0.25


def decided(rows: list[dict], profile: str) -> list[dict]:
    return [
        r
        for r in rows
        if r.get("emu") and not r.get("noisy") and (r.get("sim") or {}).get(profile, {}).get("error") is not None
    ]


def timeouts_agree(kernel: float | None, sim: float | None) -> bool | None:
    """RTO counts agree: within ±30 % of the kernel's, or within ±2 (few timeouts)."""
    if kernel is None or sim is None:
        return None
    return abs(sim - kernel) <= max(2.0, 0.3 * kernel)


def rto_incidence(side: dict | None) -> float | None:
    """The share of a side's runs (kernel runs or simulator seeds) with at least one RTO."""
    runs = [r.get("timeouts") for r in (side or {}).get("runs") or []]
    runs = [t for t in runs if t is not None]
    return sum(t >= 1 for t in runs) / len(runs) if runs else None


#: RTO incidence agrees when the shares differ by at most this (20 percentage points).
INCIDENCE_TOLERANCE = 0.20


def incidence_agrees(kernel: float | None, sim: float | None) -> bool | None:
    if kernel is None or sim is None:
        return None
    return abs(sim - kernel) <= INCIDENCE_TOLERANCE + 1e-9


def summarize(rows: list[dict], profile: str, largest: int = 3) -> dict:
    """Median |error|, shares within 10 % and 25 %, RTO-count agreement, RTO incidence agreement
    (kernel runs vs simulator seeds with at least one RTO, within 20 points), the largest disagreements."""
    ok = decided(rows, profile)
    errs = [abs(r["sim"][profile]["error"]) for r in ok]
    rto = [
        timeouts_agree(r["emu"]["counters"].get("timeouts"), r["sim"][profile]["counters"].get("timeouts")) for r in ok
    ]
    rto = [x for x in rto if x is not None]
    inc = [incidence_agrees(rto_incidence(r["emu"]), rto_incidence(r["sim"][profile])) for r in ok]
    inc = [x for x in inc if x is not None]
    worst = sorted(ok, key=lambda r: -abs(r["sim"][profile]["error"]))[:largest]
    return {
        "profile": profile,
        "decided": len(ok),
        "noisy": sum(1 for r in rows if r.get("noisy")),
        "emu_failed": sum(1 for r in rows if r.get("emu_error")),
        "median_abs_error": statistics.median(errs) if errs else None,
        "within_10pct": sum(e <= 0.10 for e in errs) / len(errs) if errs else None,
        "within_25pct": sum(e <= 0.25 for e in errs) / len(errs) if errs else None,
        "timeouts_agree": sum(rto) / len(rto) if rto else None,
        "rto_incidence_agree": sum(inc) / len(inc) if inc else None,
        "largest": [
            {
                "name": r["name"],
                "error": r["sim"][profile]["error"],
                "emu_s": r["emu"]["median_s"],
                "sim_s": r["sim"][profile]["median_s"],
            }
            for r in worst
        ],
    }
