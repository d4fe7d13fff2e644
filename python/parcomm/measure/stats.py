"""Stop rules with confidence intervals: repeat a measurement until the 95 %
confidence interval of its mean is narrower than a fraction of the mean."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable

# Two-sided 95 % Student-t quantiles for n-1 degrees of freedom.
_T95 = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    12: 2.179,
    15: 2.131,
    20: 2.086,
    30: 2.042,
    60: 2.000,
}


def t95(dof: int) -> float:
    keys = sorted(_T95)
    for k in keys:
        if dof <= k:
            return _T95[k]
    return 1.96


def ci_half_width(samples: list[float]) -> float:
    n = len(samples)
    if n < 2:
        return math.inf
    return t95(n - 1) * statistics.stdev(samples) / math.sqrt(n)


def sample_until(
    draw: Callable[[int], list[float]], rel_ci: float = 0.05, min_n: int = 3, max_n: int = 30, batch: int = 3
) -> tuple[float, float, int]:
    """Call ``draw(k)`` (returns k new samples) until the CI is tight enough.

    Returns (mean, CI half-width, number of samples). Stops at ``max_n``
    samples even if the interval is still wide (the caller records it)."""
    samples: list[float] = []
    while True:
        samples += draw(max(batch, min_n - len(samples)) if len(samples) < min_n else batch)
        mean = statistics.fmean(samples)
        half = ci_half_width(samples)
        if len(samples) >= min_n and (half <= rel_ci * abs(mean) or len(samples) >= max_n):
            return mean, half, len(samples)
