"""The RTO probe of PlogP-BR+: expected RTO waits per call of a phased pattern.

For each pattern (Alltoall A: P-1 XOR phases sent back to back, so
neighbouring phases overlap; Alltoall B: one phase at a time) and each probe
size m, the probe runs one untimed call (it opens the connections and the
congestion windows, as a program that calls Alltoall repeatedly has them),
then ``calls`` timed calls, each after a barrier. A call's time is the
latest rank's. Its RTO waits are its excess over the pattern's no-RTO time
(PlogP-BR's eq. 4 or 8 without the E_q term, from the g(m, C) and L measured
before), in units of T_RTO, counted only when the excess is at least
T_RTO / 2: a smaller excess is queueing or model error, not a timeout (an RTO
stalls a stream for at least rto_min). W = the mean over the calls.

Only timing is used, so the probe runs on any target (simulator, emulated
cluster, MPI): the port buffer, the RTO minimum, P and the pattern are the
target's own. Several RTOs that overlap in time count once; consecutive ones
(back-off doubles the wait) count 1 + 2 + ...: W is the critical path's wait,
which is what the call's time contains.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

from ..collectives import alltoall_a, alltoall_b
from .runner import Runner

PATTERNS = {"alltoall_a": alltoall_a, "alltoall_b": alltoall_b}
#: Timed calls per probe size: W is a mean of this many 0/1/2... draws.
DEFAULT_CALLS = 4


async def probe_program(comm, pattern: str, m: int, calls: int) -> list[float]:
    """One untimed call of ``pattern``, then ``calls`` timed ones; this rank's durations."""
    prog = PATTERNS[pattern]
    await prog(comm, nbytes=m)
    out = []
    for _ in range(calls):
        await comm.barrier()
        t0 = comm.wtime()
        await prog(comm, nbytes=m)
        out.append(comm.wtime() - t0)
    return out


def waits_of(call_s: float, no_rto_s: float, rto_s: float) -> float:
    """RTO waits (in T_RTO) of one call that took ``call_s`` where no RTO would take ``no_rto_s``."""
    excess = call_s - no_rto_s
    return excess / rto_s if excess >= rto_s / 2 else 0.0


def mean_waits(call_s: Sequence[float], no_rto_s: float, rto_s: float) -> float:
    """W: the mean RTO waits of calls that took ``call_s`` (each the latest rank's time)."""
    return statistics.fmean(waits_of(t, no_rto_s, rto_s) for t in call_s)


def probe_rto(
    runner: Runner,
    sizes: Sequence[int],
    no_rto_s: Callable[[str, int], float],
    rto_s: float,
    calls: int = DEFAULT_CALLS,
    patterns: Sequence[str] = tuple(PATTERNS),
    progress: Callable[[str], None] = lambda m: None,
) -> tuple[list[int], dict[str, list[float]]]:
    """(probe sizes, {pattern: W per size}); ``no_rto_s(pattern, m)`` is the pattern's no-RTO time."""
    if rto_s <= 0:
        raise ValueError(f"the RTO probe needs T_RTO > 0, got {rto_s}")
    if not 1 <= calls <= 1000:
        raise ValueError(f"the RTO probe's calls per size must be 1..1000, got {calls}")
    unknown = [p for p in patterns if p not in PATTERNS]
    if unknown:
        raise ValueError(f"no RTO probe for pattern {unknown[0]!r}; known: {', '.join(PATTERNS)}")
    sizes = sorted(set(int(m) for m in sizes))
    waits: dict[str, list[float]] = {}
    for pattern in patterns:
        waits[pattern] = []
        for m in sizes:
            progress(f"RTO probe: {pattern} at m = {m} B, {calls} calls")
            per_rank = runner(probe_program, {"pattern": pattern, "m": m, "calls": calls})
            latest = [max(r[i] for r in per_rank) for i in range(calls)]
            waits[pattern].append(mean_waits(latest, no_rto_s(pattern, m), rto_s))
    return sizes, waits
