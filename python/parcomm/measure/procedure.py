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
  exchange is repeated and averaged; T_Ce comes from it, while g(m, C_e)
  in eq. 3 is PlogP's g(m) ("g(m, C_e), which corresponds to PlogP's g(m)").
* g(m, C) (eq. 3): every pair of pattern C exchanges m bytes there and back
  simultaneously; T_C is the largest delay over the ranks, and
  g(m, C) = T_C / T_Ce · (g(m, C_e) + L) - L.
* q (§3.1): the extra delay a small message sees at a port that other ranks
  fill, times the link rate. The rate is that of back-to-back messages
  (:func:`stream_rate`), not the slope of g(m): that slope also holds the
  per-byte copies at both hosts, which do not drain a switch queue (with
  it, q came out ~15 % short of the simulated 128 KiB port).
* PlogP-BR+'s expected RTO waits per call (optional): :mod:`.rto_probe`.

Every mean is repeated until its 95 % confidence interval is within
``rel_ci`` of it (:mod:`.stats`), not a fixed count.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from ..comm.base import RESERVED_TAG_BASE
from ..models.params import PlogPParams
from ..models.plogp_br import xor_pattern
from .runner import Runner
from .stats import sample_until

TAG = RESERVED_TAG_BASE + 100


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


async def _exchange(comm, peer: int, m: int) -> None:
    req = comm.irecv(source=peer, tag=TAG)
    await comm.send(None, dest=peer, tag=TAG, nbytes=m)
    await comm.wait(req)


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
            # An untimed zero-byte exchange first: ranks leave a barrier at
            # different times, and that skew is not the pattern's cost.
            await _exchange(comm, peer, 0)
            t0 = comm.wtime()
            for _ in range(2):  # there and back: each step both directions at once
                await _exchange(comm, peer, m)
            out[k].append(comm.wtime() - t0)
    return out


async def queue_probe_program(comm, flood_bytes: int, chunk: int, probes: int, probe_gap_s: float):
    """Ranks 2.. flood rank 1's switch port while rank 0 pings rank 1; rank 0 returns the ping RTTs,
    each flooder its longest send call.

    The flood goes as ``chunk``-byte messages small enough to travel eagerly,
    and rank 1 receives them only after the last ping: rank 1's CPU then
    spends nothing on the flood while it answers, so a ping's extra delay is
    the switch queue alone, not the receiver's per-message overhead."""
    r = comm.rank
    n_chunks = max(1, flood_bytes // chunk)
    await comm.barrier()
    if r >= 2:
        # The longest send call: a send that waited ~T_RTO shows that the port overflowed.
        longest = 0.0
        for _ in range(n_chunks):
            t0 = comm.wtime()
            await comm.send(None, dest=1, tag=TAG + 1, nbytes=chunk)
            longest = max(longest, comm.wtime() - t0)
        return longest
    if r == 1:
        for _ in range(probes):
            await comm.recv(source=0, tag=TAG)
            await comm.send(None, dest=0, tag=TAG, nbytes=0)
        for s in range(2, comm.size):
            for _ in range(n_chunks):
                await comm.recv(source=s, tag=TAG + 1)
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


def measure(
    runner: Runner,
    procs: int,
    sizes: Sequence[int] = DEFAULT_SIZES,
    *,
    patterns: str = "alltoall",
    pattern_ks: Sequence[int] | None = None,
    rel_ci: float = 0.05,
    max_reps: int = 20,
    rto_s: float = 0.2,
    flow_control: bool = False,
    probe_queue: bool = True,
    rto_probe: bool = False,
    rto_calls: int | None = None,
    rto_sizes: Sequence[int] | None = None,
    progress: Callable[[str], None] = lambda m: None,
    meta: dict | None = None,
) -> PlogPParams:
    """Measure PlogP(-BR) parameters of the platform behind ``runner``; with
    ``rto_probe``, also PlogP-BR+'s expected RTO waits (:mod:`.rto_probe`)
    at ``rto_sizes`` (default: ``sizes``), ``rto_calls`` timed calls each."""
    sizes = _checked_sizes(sizes, procs, rto_probe)
    p2p = _point_to_point(runner, sizes, rel_ci, max_reps, progress)
    g_pattern: dict[str, list[float]] = {}
    if patterns == "alltoall" and procs & (procs - 1) == 0:
        g_pattern = _pattern_gaps(runner, procs, sizes, pattern_ks, p2p, rel_ci, max_reps, progress)

    queue_bytes = None
    link_rate = None
    extra_meta: dict[str, Any] = {}
    if probe_queue and procs >= 4 and not flow_control:
        # Two or more flooders are needed: one sender alone cannot outrun the port.
        queue_bytes, link_rate, extra_meta["queue_overflow_seen"] = _queue_length(
            runner, p2p.rtt0, rto_s, procs, rel_ci, max_reps, progress
        )

    params = PlogPParams(
        procs=procs,
        L=p2p.L,
        sizes=list(sizes),
        g=p2p.g,
        o_s=p2p.o_s,
        o_r=p2p.o_r,
        g_pattern=g_pattern,
        queue_bytes=queue_bytes,
        flow_control=flow_control,
        rto_s=rto_s,
        meta={**(meta or {}), **extra_meta, **({"link_rate_bytes_per_s": link_rate} if link_rate else {})},
    )
    if rto_probe:
        _add_rto_probe(runner, params, rto_sizes or sizes, rto_calls, progress)
    return params


def _checked_sizes(sizes: Sequence[int], procs: int, rto_probe: bool) -> list[int]:
    """The message sizes to measure (sorted, distinct, 0 included, none negative), after
    refusing what cannot be measured, before any run."""
    sizes = sorted(set(int(s) for s in sizes) | {0})
    if any(s < 0 for s in sizes):
        raise ValueError("sizes must be >= 0")
    if procs < 2:
        raise ValueError("measuring needs at least 2 processes")
    if rto_probe and procs & (procs - 1):
        raise ValueError(f"the RTO probe runs Alltoall A and B, which need a power-of-two number of ranks, got {procs}")
    return sizes


class _PointToPoint(NamedTuple):
    """What ranks 0 and 1 alone measure: RTT(0, 0), L, and g, o_s, o_r per size."""

    rtt0: float
    L: float
    g: list[float]
    o_s: list[float]
    o_r: list[float]


def _point_to_point(
    runner: Runner, sizes: list[int], rel_ci: float, max_reps: int, progress: Callable[[str], None]
) -> _PointToPoint:
    """PlogP's point-to-point parameters: RTT(0, 0) and g(0) from one and from a burst of
    zero-byte sends (T(n) = RTT(0, 0) + (n-1)·g(0)), L = RTT(0, 0)/2 - g(0), then per size
    g(m) = RTT(m, 0) - RTT(0, 0) + g(0) and the send and receive overheads."""
    progress("RTT(0, 0) and g(0)")
    rtt0 = _mean(runner, rtt_program, {"m": 0, "back": 0}, rel_ci, max_reps)
    burst = 16
    t_burst = _mean(runner, rtt_program, {"m": 0, "back": 0, "burst": burst}, rel_ci, max_reps)
    g0 = max(0.0, (t_burst - rtt0) / (burst - 1))
    L = max(0.0, rtt0 / 2 - g0)

    g, o_s, o_r = [], [], []
    for m in sizes:
        progress(f"g, o_s, o_r at m = {m} B")
        rtt_m = _mean(runner, rtt_program, {"m": m, "back": 0}, rel_ci, max_reps)
        g.append(max(0.0, rtt_m - rtt0 + g0) if m else g0)
        o_s.append(_mean(runner, overhead_program, {"m": m, "wait_s": 4 * rtt_m + 1e-3}, rel_ci, max_reps))
        o_r.append(_mean(runner, overhead_program, {"m": m, "wait_s": 4 * rtt_m + 1e-3}, rel_ci, max_reps, rank=1))
    return _PointToPoint(rtt0, L, g, o_s, o_r)


def _pattern_gaps(
    runner: Runner,
    procs: int,
    sizes: list[int],
    pattern_ks: Sequence[int] | None,
    p2p: _PointToPoint,
    rel_ci: float,
    max_reps: int,
    progress: Callable[[str], None],
) -> dict[str, list[float]]:
    """g(m, C) of eq. 3 for every XOR pattern: T_C of the patterns ``pattern_ks`` (default:
    all) against T_Ce of the pair, scaled by g(m, C_e) = PlogP's g(m)."""
    L = p2p.L
    ks = list(pattern_ks) if pattern_ks else list(range(1, procs))
    for k in ks:
        if not 1 <= k < procs:
            raise ValueError(f"pattern xor{k} needs 1 <= k < {procs}")
    per_k: dict[int, list[float]] = {k: [] for k in ks}
    for m in sizes:
        progress(f"g(m, C) for {len(ks)} patterns at m = {m} B")
        t_ce = _max_over_ranks(runner, m, [1], rel_ci, max_reps, pair_only=True)[1]
        t_c = _max_over_ranks(runner, m, ks, rel_ci, max_reps)
        g_ce = _interp_at(sizes, p2p.g, m)
        for k in ks:
            per_k[k].append(max(0.0, t_c[k] / t_ce * (g_ce + L) - L))
    g_pattern: dict[str, list[float]] = {}
    for k in range(1, procs):
        # Patterns not measured take the nearest measured one's values: on
        # one switch every XOR pattern is a permutation, equivalent by
        # symmetry (the reduction seed 001 §5 calls for).
        nearest = min(ks, key=lambda j: (abs(j - k), j))
        g_pattern[xor_pattern(k)] = per_k[nearest]
    return g_pattern


def _queue_length(
    runner: Runner,
    rtt0: float,
    rto_s: float,
    procs: int,
    rel_ci: float,
    max_reps: int,
    progress: Callable[[str], None],
) -> tuple[float | None, float, bool]:
    """q (§3.1) with the streaming rate it is measured in: (q, link rate, whether the flood
    overflowed the port; if not, q is only a lower bound)."""
    progress("streaming rate and switch queue length q")
    link_rate = stream_rate(runner, rel_ci, max_reps)
    queue_bytes, overflowed = _probe_queue(runner, rtt0, link_rate, rto_s, procs)
    if not overflowed:
        progress("the flood never overflowed the port: q is a lower bound (more ranks would fill it)")
    return queue_bytes, link_rate, overflowed


def _add_rto_probe(
    runner: Runner, params: PlogPParams, sizes: Sequence[int], calls: int | None, progress: Callable[[str], None]
) -> None:
    from ..models.plogp_br import PlogPBR
    from .rto_probe import DEFAULT_CALLS, probe_rto

    p = params.procs
    br = PlogPBR(params)
    no_rto = {"alltoall_a": br.alltoall_a_no_rto, "alltoall_b": br.alltoall_b_no_rto}
    calls = calls or DEFAULT_CALLS
    params.rto_sizes, params.rto_waits = probe_rto(
        runner, sizes, lambda pat, m: no_rto[pat](p, m), params.rto_s, calls, progress=progress
    )
    params.meta["rto_probe_calls"] = calls


def _interp_at(sizes: list[int], values: list[float], m: int) -> float:
    return values[sizes.index(m)]


def _max_over_ranks(
    runner: Runner, m: int, ks: list[int], rel_ci: float, max_reps: int, pair_only: bool = False
) -> dict[int, float]:
    """T_C per pattern: the largest per-rank mean exchange time."""

    def draw(reps: int) -> list[dict]:
        out = runner(exchange_program, {"m": m, "reps": reps, "ks": ks, "pair_only": pair_only})
        # Backends that return results as JSON (processes, the emulated cluster) turn the keys k into strings.
        return [{int(k): v for k, v in r.items()} if r else r for r in out]

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


def _mean(runner: Runner, program, kw: dict, rel_ci: float, max_reps: int, rank: int = 0) -> float:
    def draw(k: int) -> list[float]:
        return runner(program, {**kw, "reps": k})[rank]

    return sample_until(draw, rel_ci=rel_ci, max_n=max_reps)[0]


# Message sizes for the streaming rate: large enough that the wire, not the
# per-message overhead, paces a burst, and below every eager limit we know
# (MPICH CH3: 128 KiB), so a burst is not slowed by rendezvous hand-shakes.
STREAM_SIZES = (16384, 65536)
STREAM_BURST = 8


def stream_rate(runner: Runner, rel_ci: float = 0.05, max_reps: int = 20) -> float:
    """Payload bytes per second of back-to-back messages (the link rate as data sees it).

    The slope of g(m) from single round trips also contains the per-byte
    copies at both hosts, which do not drain a switch queue; in a burst
    they overlap with the wire. A burst of n m-byte messages takes
    (n-1)·g_s(m) longer than one, and the rate is the slope of g_s between
    two sizes, so per-message costs cancel."""

    def g_stream(m: int) -> float:
        one = _mean(runner, rtt_program, {"m": m, "back": 0}, rel_ci, max_reps)
        many = _mean(runner, rtt_program, {"m": m, "back": 0, "burst": STREAM_BURST}, rel_ci, max_reps)
        return (many - one) / (STREAM_BURST - 1)

    m1, m2 = STREAM_SIZES
    dg = g_stream(m2) - g_stream(m1)
    return (m2 - m1) / dg if dg > 0 else 0.0


def _probe_queue(
    runner: Runner, rtt0: float, rate_bytes_per_s: float, rto_s: float, procs: int
) -> tuple[float | None, bool]:
    """q (§3.1): (delay at a full port - delay at an empty port) x link rate.

    ``rtt0`` is the empty-port round trip; the full-port one is the largest
    probe round trip that did not wait for an RTO (a probe dropped at the
    full port waits T_RTO; that is loss, not queueing). The queue is full
    only at moments (flooding TCP flows back off after losses), so the
    largest delay, not a percentile, is the full-port delay. The result is
    in payload bytes, the unit of (n-1)·m in eq. 1.

    Returns (q, overflowed). The port is full only if the flooders can keep
    more than q in flight (P-2 TCP windows); if no flooder's send ever waited
    for an RTO, the port never overflowed and q is only a lower bound."""
    if rate_bytes_per_s <= 0:
        return None, False
    # Flood volume: twice the probing time if a probe waits ~1 ms (a ~120 KB
    # queue at 1 Gbit/s), shared by the flooders. A longer queue still fills
    # (the flood starts at once); the later probes then just see it drain.
    probes, gap = 60, 200e-6
    flood = int(2 * probes * (gap + 1e-3) * rate_bytes_per_s / max(1, procs - 2)) + STREAM_SIZES[1]
    results = runner(
        queue_probe_program, {"flood_bytes": flood, "chunk": STREAM_SIZES[1], "probes": probes, "probe_gap_s": gap}
    )
    rtts = [x for x in results[0] if x < rto_s]
    overflowed = any(t is not None and t >= rto_s / 2 for t in results[2:])
    if not rtts:
        return None, overflowed
    return max(0.0, max(rtts) - rtt0) * rate_bytes_per_s, overflowed
