"""Measuring PlogP and PlogP-BR parameters over any communicator.

Every measurement is a rank program (it only awaits communicator methods),
run through a *runner*: ``runner(program, kwargs) -> list of per-rank
results``. :func:`sim_runner` runs on the simulator; the MPI and socket
backends provide their own runners, and nothing here changes.

Procedures (Kielmann, Bal & Verstoep 2000, as summarized in seed 001 §2.3):

* RTT(m, 0): rank 0 sends m bytes, rank 1 answers with 0 bytes. Then
  RTT(0, 0) = 2(L + g(0)) and RTT(m, 0) = L + g(m) + L + g(0), so
  g(m) = RTT(m, 0) - RTT(0, 0) + g(0).
* g(0): n zero-byte sends back to back, then a zero-byte reply:
  T(n) = RTT(0, 0) + (n-1)·g(0).
* o_s(m): duration of the send call; o_r(m): duration of a receive whose
  message has long arrived.
* Bidirectional variant (seed 001 §3.3): both ranks send at once, and the
  exchange is repeated and averaged; g(m, C_e) comes from it.
* g(m, C) (eq. 3): every pair of pattern C exchanges m bytes there and back
  simultaneously; T_C is the largest delay over the ranks, and
  g(m, C) = T_C / T_Ce · (g(m, C_e) + L) - L.
* q (§3.1): the extra delay a small message sees at a port that other ranks
  fill, times the link rate (taken from the large-message slope of g).

Every mean is repeated until its 95 % confidence interval is within
``rel_ci`` of it (:mod:`.stats`), not a fixed count.
"""

from __future__ import annotations

import statistics
from typing import Any, Callable, Sequence

from ..comm.base import RESERVED_TAG_BASE
from .params import PlogPParams
from .plogp_br import xor_pattern
from .stats import sample_until

TAG = RESERVED_TAG_BASE + 100
Runner = Callable[[Callable[..., Any], dict], list]


# ---------------------------------------------------------------- rank programs

async def rtt_program(comm, m: int, back: int, reps: int, burst: int = 1):
    """Rank 0: ``burst`` sends of m bytes, rank 1 answers ``back`` bytes; per-rep times."""
    out = []
    if comm.rank == 0:
        for _ in range(reps):
            t0 = comm.wtime()
            for _ in range(burst):
                await comm.send(None, dest=1, tag=TAG, nbytes=m)
            await comm.recv(source=1, tag=TAG)
            out.append(comm.wtime() - t0)
    elif comm.rank == 1:
        for _ in range(reps):
            for _ in range(burst):
                await comm.recv(source=0, tag=TAG)
            await comm.send(None, dest=0, tag=TAG, nbytes=back)
    return out


async def overhead_program(comm, m: int, reps: int, wait_s: float):
    """Rank 0 times its send calls; rank 1 times receives of messages that arrived long ago."""
    out = []
    for _ in range(reps):
        await comm.barrier()
        if comm.rank == 0:
            t0 = comm.wtime()
            await comm.send(None, dest=1, tag=TAG, nbytes=m)
            out.append(comm.wtime() - t0)
        elif comm.rank == 1:
            await comm.sleep(wait_s)
            t0 = comm.wtime()
            await comm.recv(source=0, tag=TAG)
            out.append(comm.wtime() - t0)
    return out


async def exchange_program(comm, m: int, reps: int, ks: Sequence[int], pair_only: bool = False):
    """For each pattern xor-k: every rank exchanges m bytes with r^k, there and back.

    Returns {k: [seconds per rep]} per rank. With ``pair_only`` only ranks 0
    and 1 take part (the pattern C_e of the PlogP measurement)."""
    out: dict[int, list[float]] = {}
    r = comm.rank
    for k in ks:
        out[k] = []
        for _ in range(reps):
            await comm.barrier()
            if pair_only and r > 1:
                continue
            peer = r ^ k
            t0 = comm.wtime()
            for _ in range(2):  # there and back: each step both directions at once
                req = comm.irecv(source=peer, tag=TAG)
                await comm.send(None, dest=peer, tag=TAG, nbytes=m)
                await comm.wait(req)
            out[k].append(comm.wtime() - t0)
    return out


async def queue_probe_program(comm, flood_bytes: int, probes: int, probe_gap_s: float):
    """Ranks 2.. flood rank 1 while rank 0 pings it; rank 0 returns the ping RTTs."""
    r = comm.rank
    await comm.barrier()
    if r >= 2:
        await comm.send(None, dest=1, tag=TAG + 1, nbytes=flood_bytes)
        return None
    if r == 1:
        floods = [comm.irecv(source=s, tag=TAG + 1) for s in range(2, comm.size)]
        for _ in range(probes):
            await comm.recv(source=0, tag=TAG)
            await comm.send(None, dest=0, tag=TAG, nbytes=0)
        await comm.waitall(floods)
        return None
    rtts = []
    for _ in range(probes):
        t0 = comm.wtime()
        await comm.send(None, dest=1, tag=TAG, nbytes=0)
        await comm.recv(source=1, tag=TAG)
        rtts.append(comm.wtime() - t0)
        await comm.sleep(probe_gap_s)
    return rtts


# ---------------------------------------------------------------- the procedure

def sim_runner(platform: Any, procs: int, seed: int = 1, **run_kw: Any) -> Runner:
    """A runner on the simulator: each call is one simulated run on ``platform``."""
    from ..comm import run_sim

    counter = {"n": 0}

    def run(program, kwargs: dict) -> list:
        counter["n"] += 1
        # A new seed per run, derived from the base seed: repetitions are independent draws.
        return run_sim(program, platform, procs, seed=seed * 1000 + counter["n"], kwargs=kwargs, **run_kw).results

    return run


DEFAULT_SIZES = [0, 64, 1024, 4096, 16384, 65536, 262144, 1048576]


def measure(runner: Runner, procs: int, sizes: Sequence[int] = DEFAULT_SIZES, *, patterns: str = "alltoall",
            pattern_ks: Sequence[int] | None = None, rel_ci: float = 0.05, max_reps: int = 20,
            rto_s: float = 0.2, flow_control: bool = False, probe_queue: bool = True,
            progress: Callable[[str], None] = lambda m: None, meta: dict | None = None) -> PlogPParams:
    """Measure PlogP(-BR) parameters of the platform behind ``runner``."""
    sizes = sorted(set(int(s) for s in sizes) | {0})
    if any(s < 0 for s in sizes):
        raise ValueError("sizes must be >= 0")
    if procs < 2:
        raise ValueError("measuring needs at least 2 processes")

    def mean_of(program, kw: dict, rank: int = 0) -> tuple[float, int]:
        def draw(k: int) -> list[float]:
            return runner(program, {**kw, "reps": k})[rank]
        mean, _half, n = sample_until(draw, rel_ci=rel_ci, max_n=max_reps)
        return mean, n

    progress("RTT(0, 0) and g(0)")
    rtt0, _ = mean_of(rtt_program, {"m": 0, "back": 0})
    burst = 16
    t_burst, _ = mean_of(rtt_program, {"m": 0, "back": 0, "burst": burst})
    g0 = max(0.0, (t_burst - rtt0) / (burst - 1))
    L = max(0.0, rtt0 / 2 - g0)

    g, o_s, o_r = [], [], []
    for m in sizes:
        progress(f"g, o_s, o_r at m = {m} B")
        rtt_m, _ = mean_of(rtt_program, {"m": m, "back": 0})
        g.append(max(0.0, rtt_m - rtt0 + g0) if m else g0)
        o_s.append(mean_of(overhead_program, {"m": m, "wait_s": 4 * rtt_m + 1e-3})[0])
        o_r.append(mean_of(overhead_program, {"m": m, "wait_s": 4 * rtt_m + 1e-3}, rank=1)[0])

    g_pattern: dict[str, list[float]] = {}
    if patterns == "alltoall" and procs & (procs - 1) == 0:
        ks = list(pattern_ks) if pattern_ks else list(range(1, procs))
        for k in ks:
            if not 1 <= k < procs:
                raise ValueError(f"pattern xor{k} needs 1 <= k < {procs}")
        per_k: dict[int, list[float]] = {k: [] for k in ks}
        for m in sizes:
            progress(f"g(m, C) for {len(ks)} patterns at m = {m} B")
            t_ce = _max_over_ranks(runner, m, [1], rel_ci, max_reps, pair_only=True)[1]
            t_c = _max_over_ranks(runner, m, ks, rel_ci, max_reps)
            g_ce = _interp_at(sizes, g, m)
            for k in ks:
                per_k[k].append(max(0.0, t_c[k] / t_ce * (g_ce + L) - L))
        for k in range(1, procs):
            # Patterns not measured take the nearest measured one's values: on
            # one switch every XOR pattern is a permutation, equivalent by
            # symmetry (the reduction seed 001 §5 calls for).
            nearest = min(ks, key=lambda j: (abs(j - k), j))
            g_pattern[xor_pattern(k)] = per_k[nearest]

    queue_bytes = None
    if probe_queue and procs >= 3 and not flow_control:
        progress("switch queue length q")
        queue_bytes = _probe_queue(runner, rtt0, sizes, g, rto_s)

    return PlogPParams(procs=procs, L=L, sizes=list(sizes), g=g, o_s=o_s, o_r=o_r, g_pattern=g_pattern,
                       queue_bytes=queue_bytes, flow_control=flow_control, rto_s=rto_s, meta=dict(meta or {}))


def _interp_at(sizes: list[int], values: list[float], m: int) -> float:
    return values[sizes.index(m)]


def _max_over_ranks(runner: Runner, m: int, ks: list[int], rel_ci: float, max_reps: int,
                    pair_only: bool = False) -> dict[int, float]:
    """T_C per pattern: the largest per-rank mean exchange time."""
    def draw(reps: int) -> list[dict]:
        return runner(exchange_program, {"m": m, "reps": reps, "ks": ks, "pair_only": pair_only})

    results = draw(2)
    # Widen the sample until the slowest rank's mean is tight for every pattern.
    for _ in range(max_reps):
        tight = True
        for k in ks:
            worst = max((r[k] for r in results if r and r.get(k)), key=statistics.fmean)
            if len(worst) >= 2 and statistics.stdev(worst) / max(statistics.fmean(worst), 1e-12) > rel_ci:
                tight = False
        if tight or len(results[0][ks[0]]) >= max_reps:
            break
        more = draw(2)
        for a, b in zip(results, more):
            for k in ks:
                a[k] = a[k] + b[k]
    return {k: max(statistics.fmean(r[k]) for r in results if r and r.get(k)) for k in ks}


def _probe_queue(runner: Runner, rtt0: float, sizes: list[int], g: list[float], rto_s: float) -> float | None:
    from .hockney import large_message_slope

    slope = large_message_slope(PlogPParams(procs=2, L=0.0, sizes=sizes, g=g, o_s=g, o_r=g))
    if slope <= 0:
        return None
    rate_bytes_per_s = 1.0 / slope
    results = runner(queue_probe_program, {"flood_bytes": 4 << 20, "probes": 40, "probe_gap_s": 200e-6})
    rtts = sorted(x for x in results[0] if x < rto_s)  # a lost probe waits for an RTO: not queueing
    if not rtts:
        return None
    full = rtts[int(0.9 * (len(rtts) - 1))]
    return max(0.0, (full - rtt0)) * rate_bytes_per_s
