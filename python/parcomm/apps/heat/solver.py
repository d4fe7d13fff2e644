"""The parallel heat solver of seed 002 §3 as a rank program, and its serial twin.

"2次元の領域の一部に熱を加え、一定時間後の最高温度を求める": heat is applied to
part of the domain (the initial temperature is 1 on a small square patch,
0 elsewhere and on the fixed boundary), and the answer is the maximum
temperature after a given number of steps. The N x N grid is split over
M x M tasks (:mod:`.decomposition`); every step each task

1. posts non-blocking receives for its neighbours' boundaries,
2. sends its own four boundary rows/columns (N/M values each, §3: 4N/M values per task),
3. updates its interior while the messages fly,
4. waits for the halos and updates its outermost ring.

``overlap=False`` is the plain order (exchange, then update everything), as a
PVM program of the paper's time would do it.

Simulated CPU: with ``mflops`` set (the simulator), each update also calls
``comm.compute(flops / mflops)`` so simulated time advances by what the
platform's CPU would take (SPARCstation LX: 4.6 MFlop/s, Table 1), while
the kernel really computes the data, so every backend returns the same numbers.
Without ``mflops`` (MPI, sockets) the kernel's own time is the compute time.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .decomposition import DOWN, LEFT, RIGHT, UP, Decomposition
from .kernel import FLOPS_PER_POINT, HeatKernel, check_r

__all__ = ["INITS", "initial_block", "solve_serial", "heat_program", "summarize", "sine_decay_factor"]

INITS = ("patch", "sine")
_RESULT_TAG = 77


def initial_block(N: int, rows: slice, cols: slice, init: str = "patch") -> np.ndarray:
    """Initial temperature of the global points ``rows x cols`` (unpadded indices).

    ``patch``: 1 on a small square of side max(2, N/16) with its corner at
    (N/3, N/3) (off the centre, so no symmetry hides a wrong exchange), else 0.
    ``sine``: the lowest mode sin(pi x) sin(pi y), x = (i + 1) h, h = 1/(N + 1)
    (it vanishes on the fixed boundary at i = -1 and i = N).
    """
    i = np.arange(rows.start, rows.stop)
    j = np.arange(cols.start, cols.stop)
    if init == "patch":
        lo = N // 3
        hi = min(N, lo + max(2, N // 16))
        return (((i >= lo) & (i < hi))[:, None] & ((j >= lo) & (j < hi))[None, :]).astype(np.float64)
    if init == "sine":
        h = 1.0 / (N + 1)
        return np.sin(math.pi * (i + 1) * h)[:, None] * np.sin(math.pi * (j + 1) * h)[None, :]
    raise ValueError(f"unknown initial condition {init!r}; known: {', '.join(INITS)}")


def sine_decay_factor(N: int, r: float, steps: int) -> tuple[float, float]:
    """(discrete, continuous) amplitude factor of the sine mode after ``steps``:
    the scheme's exact (1 - 8 r sin^2(pi h / 2))^steps, and the PDE's
    exp(-2 pi^2 alpha t) = exp(-2 pi^2 r h^2 steps)."""
    h = 1.0 / (N + 1)
    discrete = (1.0 - 8.0 * r * math.sin(math.pi * h / 2) ** 2) ** steps
    continuous = math.exp(-2.0 * math.pi**2 * r * h * h * steps)
    return discrete, continuous


def solve_serial(N: int, steps: int, r: float = 0.2, init: str = "patch", kernel: str = "auto") -> np.ndarray:
    """The whole N x N grid after ``steps`` steps on one process (unpadded).
    ``kernel``: ``auto`` (the fused Rust kernel when built), ``rust`` or ``numpy``."""
    check_r(r)
    u = np.zeros((N + 2, N + 2))
    u[1:-1, 1:-1] = initial_block(N, slice(0, N), slice(0, N), init)
    v = np.zeros_like(u)
    k = HeatKernel(u.shape, r, backend=kernel)
    for _ in range(steps):
        k.update(u, v)
        u, v = v, u
    return u[1:-1, 1:-1].copy()


def _edge(u: np.ndarray, d: int) -> np.ndarray:
    """My boundary values that go to the neighbour in direction d."""
    if d == UP:
        return u[1, 1:-1]
    if d == DOWN:
        return u[-2, 1:-1]
    if d == LEFT:
        return u[1:-1, 1]
    return u[1:-1, -2]


def _put_halo(u: np.ndarray, d: int, values: np.ndarray) -> None:
    """Values received from the neighbour in direction d."""
    if d == UP:
        u[0, 1:-1] = values
    elif d == DOWN:
        u[-1, 1:-1] = values
    elif d == LEFT:
        u[1:-1, 0] = values
    else:
        u[1:-1, -1] = values


# A message travelling in direction d arrives from the opposite side.
_OPPOSITE = {UP: DOWN, DOWN: UP, LEFT: RIGHT, RIGHT: LEFT}


async def heat_program(
    comm,
    N: int,
    M: int,
    steps: int,
    r: float = 0.2,
    init: str = "patch",
    mflops: float | None = None,
    flops_per_point: int = FLOPS_PER_POINT,
    overlap: bool = True,
    gather: bool = False,
    trace: bool = False,
    kernel: str = "auto",
) -> dict[str, Any]:
    """One task of the M x M decomposition (rank program, every backend).

    ``kernel`` picks the update (``auto``: the fused Rust kernel when built,
    ``rust``, ``numpy``; all give the same bits). Returns per rank
    ``{"rank", "elapsed_s", "compute_s", "comm_s", "steps", "kernel"}``;
    rank 0 adds ``"max"`` (the global maximum temperature after ``steps``)
    and, with ``gather``, ``"field"`` (the whole N x N grid). With ``trace``
    every rank adds ``"step_end_s"``: its time at the end of each step.
    """
    check_r(r)
    d = _decomposition(comm, N, M, mflops)
    me, n = comm.rank, d.n
    rows, cols = d.block(me)
    u = np.zeros((n + 2, n + 2))
    u[1:-1, 1:-1] = initial_block(N, rows, cols, init)
    v = np.zeros_like(u)
    k = HeatKernel(u.shape, r, backend=kernel)
    nbrs = d.neighbours(me)
    msg_bytes = 8 * n
    rate = None if mflops is None else mflops * 1e6 / flops_per_point  # points per second

    await comm.barrier()
    t0 = comm.wtime()
    compute_s = 0.0
    ends: list[float] = []
    for _ in range(steps):
        for dt in await _step(comm, k, u, v, nbrs, msg_bytes, rate, overlap):
            compute_s += dt
        u, v = v, u
        if trace:
            ends.append(comm.wtime() - t0)
    elapsed = comm.wtime() - t0
    out: dict[str, Any] = {
        "rank": me,
        "elapsed_s": elapsed,
        "compute_s": compute_s,
        "comm_s": elapsed - compute_s,
        "steps": steps,
        "kernel": k.backend,
    }
    if trace:
        out["step_end_s"] = ends
    local = u[1:-1, 1:-1]
    if me != 0:
        await _send_result(comm, local, gather)
        return out
    gmax, field = await _collect_results(comm, d, local, gather)
    out["max"] = gmax
    if gather:
        out["field"] = field
    return out


def _decomposition(comm, N: int, M: int, mflops: float | None) -> Decomposition:
    """The M x M decomposition of the N x N grid, refused before any communication when
    the run has the wrong number of ranks or a CPU speed that is not positive."""
    d = Decomposition(N, M)
    if comm.size != d.tasks:
        raise ValueError(f"M = {M} needs {d.tasks} ranks, got {comm.size}")
    if mflops is not None and mflops <= 0:
        raise ValueError(f"mflops must be positive, got {mflops}")
    return d


async def _work(comm, points_fn, u: np.ndarray, v: np.ndarray, rate: float | None) -> float:
    """Run one update (``points_fn(u, v)`` returns the points it updated); on the simulator
    (``rate`` in points per second) also advance simulated time by what the platform's CPU
    would take. Returns the time it took on the communicator's clock."""
    t = comm.wtime()
    pts = points_fn(u, v)
    if rate is not None:
        await comm.compute(pts / rate)
    return comm.wtime() - t


async def _step(
    comm,
    k: HeatKernel,
    u: np.ndarray,
    v: np.ndarray,
    nbrs: dict[int, int],
    msg_bytes: int,
    rate: float | None,
    overlap: bool,
) -> list[float]:
    """One time step from ``u`` into ``v``: post the halo receives, send the four edges, update
    (the interior while the messages fly, then the outer ring, or, without ``overlap``,
    everything once the halos are in), and wait for the sends. Returns the compute time of
    each update, in order (the caller adds them one by one to its running total)."""
    # A message going in direction dd carries tag dd; the receiver expects
    # from its neighbour in direction dd the message that travelled _OPPOSITE[dd].
    recvs = [(dd, comm.irecv(source=q, tag=_OPPOSITE[dd])) for dd, q in nbrs.items()]
    sends = [comm.isend(_edge(u, dd), dest=q, tag=dd, nbytes=msg_bytes) for dd, q in nbrs.items()]
    times = []
    if overlap:
        times.append(await _work(comm, k.interior, u, v, rate))
        await _receive_halos(comm, u, recvs)
        times.append(await _work(comm, k.boundary, u, v, rate))
    else:
        await _receive_halos(comm, u, recvs)
        times.append(await _work(comm, k.update, u, v, rate))
    await comm.waitall(sends)
    return times


async def _receive_halos(comm, u: np.ndarray, recvs: list[tuple[int, Any]]) -> None:
    """Wait for the posted halo receives and write each into ``u``'s ghost ring."""
    vals = await comm.waitall([rq for _, rq in recvs])
    for (dd, _), val in zip(recvs, vals):
        _put_halo(u, dd, val)


async def _send_result(comm, local: np.ndarray, gather: bool) -> None:
    """A rank other than 0 sends rank 0 its local maximum (and, with ``gather``, its block)."""
    await comm.send(
        (float(local.max()), local.copy() if gather else None),
        dest=0,
        tag=_RESULT_TAG,
        nbytes=8 + (local.nbytes if gather else 0),
    )


async def _collect_results(comm, d: Decomposition, local: np.ndarray, gather: bool) -> tuple[float, np.ndarray | None]:
    """On rank 0: the global maximum and, with ``gather``, the whole N x N field, from its own
    block and every other rank's (received in rank order)."""
    rows, cols = d.block(0)
    gmax = float(local.max())
    field = None
    if gather:
        field = np.empty((d.N, d.N))
        field[rows, cols] = local
    for q in range(1, comm.size):
        m, blk = await comm.recv(source=q, tag=_RESULT_TAG)
        gmax = max(gmax, m)
        if gather:
            field[d.block(q)] = blk
    return gmax, field


def summarize(results: list[dict], N: int, steps: int, flops_per_point: int = FLOPS_PER_POINT) -> dict[str, Any]:
    """Time per step, MFlop/s and communication share of one run's rank results."""
    elapsed = max(x["elapsed_s"] for x in results)
    comm_share = sum(x["comm_s"] / x["elapsed_s"] for x in results if x["elapsed_s"] > 0) / len(results)
    flops = flops_per_point * N * N * steps
    return {
        "N": N,
        "tasks": len(results),
        "steps": steps,
        "time_s": elapsed,
        "time_per_step_s": elapsed / steps if steps else 0.0,
        "mflops": flops / elapsed / 1e6 if elapsed > 0 else float("nan"),
        "comm_share": comm_share,
        "max_temperature": results[0].get("max"),
        "kernel": results[0].get("kernel"),
    }
