"""Blocking calls over the async Communicator: one greenlet per rank.

A rank's ordinary (blocking) code runs in a greenlet whose parent is an
``async def`` rank program, :func:`drive`. A blocking call such as
``comm.recv()`` builds the async call's awaitable and switches to the parent
(:func:`wait`); the parent awaits it on the rank's Communicator (the very
engine the async API uses: the simulator's driver, or asyncio for real) and
switches back with the value, or throws the exception into the greenlet.
This is the bridge SQLAlchemy's asyncio extension uses, and the shape of
SimGrid SMPI's actors: user code never sees an ``await``.

Compute time between calls (``charge``): under the simulator a rank's CPU
work is free unless the run asks otherwise. ``cpu_scale=None`` charges
nothing (deterministic, the default); a number charges the CPU time the
rank's greenlet really used since its last call (``time.thread_time``),
times that factor, as ``comm.compute()`` before the next call, as SMPI's
``smpi/simulate-computation`` does with its host-speed factor. That is
measured, so it is not reproducible bit for bit. Real backends charge
nothing: their time is real.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import greenlet

__all__ = ["RankContext", "RankGreenlet", "current", "drive", "wait", "charge", "NotInRun"]

# Below this, measured CPU time is not worth a simulator event (the wrapper's own cost).
MIN_CHARGE_S = 1e-6


class NotInRun(RuntimeError):
    """An MPI call made outside a parcomm run (no rank context)."""


class RankContext:
    """What one rank's blocking calls need: its async Communicator, how
    compute time is charged, and the per-rank objects of the MPI surface."""

    __slots__ = ("comm", "cpu_scale", "resumed_at", "objects", "stdin")

    def __init__(self, comm: Any, cpu_scale: float | None = None):
        self.comm = comm
        self.cpu_scale = cpu_scale
        self.resumed_at = time.thread_time()
        self.objects: dict[str, Any] = {}  # COMM_WORLD's wrapper, COMM_SELF, attached buffer, ...
        self.stdin: Any = None


class RankGreenlet(greenlet.greenlet):
    """A rank's greenlet: knows its :class:`RankContext`."""

    ctx: RankContext


def current() -> RankContext:
    """The context of the rank whose code is running now."""
    ctx = getattr(greenlet.getcurrent(), "ctx", None)
    if ctx is None:
        raise NotInRun(
            "this MPI call ran outside a parcomm run: parcomm's mpi4py works inside "
            "`parcomm sim run|emu run|run local PROG.py` only"
        )
    return ctx


def wait(awaitable: Any) -> Any:
    """Block the calling rank until ``awaitable`` (an async Communicator call) is done."""
    g = greenlet.getcurrent()
    ctx: RankContext | None = getattr(g, "ctx", None)
    if ctx is None:
        current()  # raises NotInRun
    assert ctx is not None
    if ctx.cpu_scale is not None:
        _charge(g, ctx)
    value = g.parent.switch(awaitable)
    if ctx.cpu_scale is not None:
        ctx.resumed_at = time.thread_time()
    return value


def charge() -> None:
    """Charge the compute time used since the rank's last call (before a call that does not block)."""
    g = greenlet.getcurrent()
    ctx = getattr(g, "ctx", None)
    if ctx is not None and ctx.cpu_scale is not None:
        _charge(g, ctx)


def _charge(g: Any, ctx: RankContext) -> None:
    used = (time.thread_time() - ctx.resumed_at) * ctx.cpu_scale  # type: ignore[operator]
    ctx.resumed_at = time.thread_time()
    if used >= MIN_CHARGE_S:
        g.parent.switch(ctx.comm.compute(used))
        ctx.resumed_at = time.thread_time()


async def drive(ctx: RankContext, function: Callable[..., Any], *args: Any) -> Any:
    """Run ``function(*args)`` as the rank's blocking code, serving its calls
    from this coroutine; gives what it returns."""
    g = RankGreenlet(function)
    g.ctx = ctx
    ctx.resumed_at = time.thread_time()
    request = g.switch(*args)
    # GeneratorExit (the run is ending) is not thrown into the rank's code: the greenlet is
    # left suspended and greenlet ends it when it is collected.
    while not g.dead:
        try:
            value = await request
        except Exception as e:  # noqa: BLE001 - it belongs to the rank's code: raise it there
            request = g.throw(e)
        else:
            request = g.switch(value)
    return request
