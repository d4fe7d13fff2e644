"""SimComm: rank programs on a simulated platform (the Rust core).

The driver steps each rank's coroutine until it blocks on requests, runs the
core until some operation completes, marks requests done, and resumes the
ranks whose requests are all complete, in rank order, so a run is
deterministic. A payload travels beside its simulated size: simulating a
1 GiB message allocates nothing of that size.

Point-to-point is :class:`~parcomm.comm.p2p.P2PEngine`, one per rank, the
same state machine SocketComm drives over TCP; here its frames travel
through the core (each with a ``envelope_bytes`` header). Messages up to
``eager_limit`` bytes go eagerly; larger ones wait for the receive, in one
of two ways:

* ``rendezvous="sender"`` (MPICH's way, the default): a ready-to-send, a
  clear-to-send once the receive is matched, then the data.
* ``rendezvous="receiver"`` (YAMPII's way, seed 001 §4.1-4.2): posting a
  receive for a specific source sends that source a small credit; a large
  send goes as soon as a credit for it is there, and waits otherwise. "The
  send waits until the destination enters the same phase" (B), while sends
  whose receives were posted long before never wait (A).
"""

from __future__ import annotations

import inspect
import json
import pickle
import time as _time
from typing import Any, Awaitable, Callable, Coroutine, Sequence

from .. import _core
from ..result import Result
from .base import CommError, DeadlockError, Status
from .communicator import Communicator, not_async_error, rank_error
from .communicator import Request as BaseRequest
from .p2p import Frame, P2PEngine

# MPICH's CH3 default eager limit (MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE = 131072 bytes).
DEFAULT_EAGER_LIMIT = 128 * 1024
# Bytes of MPI envelope (source, tag, communicator, length) each message carries;
# MPICH's CH3 packet header is 32 bytes on 64-bit builds.
DEFAULT_ENVELOPE_BYTES = 32


_IMMUTABLE = (type(None), bytes, str, int, float, bool, complex)


def _snapshot(obj: Any) -> Any:
    """The message as it is now: like mpi4py, which pickles at send time, the
    receiver must not see changes the sender makes after sending."""
    if isinstance(obj, _IMMUTABLE):
        return obj
    return pickle.loads(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


class _Block:
    """Yielded to the driver: resume this rank when ``requests`` are all done
    (``any_of``: when one of them is)."""

    __slots__ = ("requests", "any_of")

    def __init__(self, requests: Sequence["Request"], any_of: bool = False):
        self.requests = requests
        self.any_of = any_of

    def ready(self) -> bool:
        reqs = self.requests
        return any(q.done for q in reqs) if self.any_of else all(q.done for q in reqs)

    def __await__(self):
        return (yield self)


class Request(BaseRequest):
    """A pending operation under simulation, as returned by ``isend``/``irecv``."""

    # a plain attribute (it shadows the base class's property): the driver reads it in its hot loop
    __slots__ = ("done", "_owner")
    done: bool

    def __init__(self, comm: "SimComm", describe: str, kind: str = ""):
        super().__init__(comm, describe, kind)
        self.done = False
        self._owner = comm  # the rank's own SimComm (``_comm`` may become a sub-communicator)

    def _finish(self, value: Any = None, status: Status | None = None) -> None:
        self.done, self.value, self.status = True, value, status
        self._owner._world.touched.add(self._owner.rank)


class SimComm(Communicator[Request]):
    """The communicator a rank program receives under simulation (see
    :class:`~parcomm.comm.communicator.Communicator` for its methods)."""

    def __init__(self, world: "_World", rank: int):
        self._world = world
        self.rank = rank
        self.size = world.size

    def wtime(self) -> float:
        """Simulated seconds since the start of the run."""
        return self._world.sim.now_ns * 1e-9

    def counters(self) -> dict[str, Any]:
        """Simulator only: a snapshot of the core's counters so far (all
        hosts and ports), to attribute losses and timeouts to one part of a
        rank program, e.g. a benchmark's warm-up call."""
        return self._world.sim.counters()

    # --- the backend primitives -------------------------------------------------------
    def _new_request(self, describe: str, kind: str) -> Request:
        return Request(self, describe, kind)

    def _start_send(self, dest: int, tag: int, obj: Any, size: int, req: Request, ctx: int = 0) -> None:
        self._world.start_send(self.rank, dest, tag, _snapshot(obj), size, req, ctx)

    def _post_recv(self, source: int, tag: int, req: Request, ctx: int = 0) -> None:
        self._world.post_recv(self.rank, source, tag, req, ctx)

    async def _block(self, requests: Sequence[Request]) -> None:
        await _Block(requests)

    async def _block_any(self, requests: Sequence[Request]) -> None:
        if not any(q.done for q in requests):
            await _Block(requests, any_of=True)

    def _p2p(self) -> P2PEngine:
        return self._world.engines[self.rank]

    async def _wait_arrival(self) -> None:
        # woken by the next message that lands in this rank's unexpected queue
        req = Request(self, "probe (a message to arrive)")
        self._world.arrival_waiters[self.rank].append(req)
        await _Block((req,))

    def compute(self, seconds: float) -> Any:
        """``await comm.compute(s)``: keep this rank's CPU busy for ``s`` simulated seconds."""
        self._check_awaited()
        req = Request(self, f"compute {seconds} s")
        op = self._world.sim.compute(self._world.host_of[self.rank], float(seconds))
        self._world.ops[op] = ("compute", req)
        return self._pending(self._wait_one(req, None), "comm.compute()")

    def sleep(self, seconds: float) -> Any:
        """``await comm.sleep(s)``: idle for ``s`` simulated seconds (the CPU is free)."""
        self._check_awaited()
        req = Request(self, f"sleep {seconds} s")
        op = self._world.sim.sleep(self._world.host_of[self.rank], float(seconds))
        self._world.ops[op] = ("compute", req)
        return self._pending(self._wait_one(req, None), "comm.sleep()")


class _World:
    """The simulated ranks: one :class:`~parcomm.comm.p2p.P2PEngine` per rank
    (matching, eager and rendezvous), whose frames travel through the core."""

    def __init__(
        self,
        platform: dict,
        size: int,
        seed: int,
        eager_limit: int,
        envelope_bytes: int,
        hosts: Sequence[int] | None,
        rendezvous: str = "sender",
    ):
        self.sim = _core.Simulation(json.dumps(platform), seed)
        self.size = size
        n = self.sim.host_count
        if hosts is None:
            if size > n:
                raise CommError(f"{size} ranks need {size} hosts; the platform has {n}")
            hosts = list(range(size))
        if len(hosts) != size or any(not 0 <= h < n for h in hosts):
            raise CommError(f"hosts must list {size} host indices in [0, {n})")
        self.host_of = list(hosts)
        self.envelope = envelope_bytes
        self.ops: dict[int, tuple] = {}
        # Ranks whose requests completed since the driver last looked.
        self.touched: set[int] = set()
        if rendezvous not in ("sender", "receiver"):
            raise CommError(f"rendezvous must be 'sender' or 'receiver', got {rendezvous!r}")
        self.engines = [P2PEngine(r, eager_limit, rendezvous) for r in range(size)]
        # Probes waiting for a message to land in each rank's unexpected queue.
        self.arrival_waiters: list[list[Request]] = [[] for _ in range(size)]

    def _flush(self, rank: int) -> None:
        """Carry out what rank's engine asked for, in order."""
        engine = self.engines[rank]
        while engine.actions:
            for a in engine.take_actions():
                if isinstance(a, Frame):
                    op = self.sim.send(self.host_of[rank], self.host_of[a.dest], a.wire + self.envelope)
                    self.ops[op] = ("frame", rank, a)
                else:  # the receive completes once the receiver's CPU paid the receive overhead
                    op = self.sim.receive(self.host_of[rank], a.size + self.envelope)
                    self.ops[op] = ("take", a)

    def start_send(self, src: int, dst: int, tag: int, obj: Any, size: int, req: Request, ctx: int = 0) -> None:
        self.engines[src].send(dst, tag, obj, size, size, req, ctx)
        self._flush(src)

    def post_recv(self, rank: int, source: int, tag: int, req: Request, ctx: int = 0) -> None:
        self.engines[rank].post_recv(source, tag, req, ctx)
        self._flush(rank)

    def on_completion(self, op: int, kind: str) -> None:
        info = self.ops.get(op)
        if info is None:
            return
        what = info[0]
        if what == "frame":
            _, src, frame = info
            if kind == "sent":
                if frame.sent is not None:
                    frame.sent._finish()
                return
            del self.ops[op]
            queued = self.engines[frame.dest].on_frame(
                src, frame.kind, frame.tag, frame.size, frame.msgid, frame.payload, frame.ctx
            )
            self._flush(frame.dest)
            if queued is not None and self.arrival_waiters[frame.dest]:
                waiters, self.arrival_waiters[frame.dest] = self.arrival_waiters[frame.dest], []
                for w in waiters:
                    w._finish()
        elif what == "compute":
            info[1]._finish()
            del self.ops[op]
        elif what == "take":
            d = info[1]
            del self.ops[op]
            d.req._finish(d.payload, Status(d.source, d.tag, d.size))


def run_sim(
    program: Callable[..., Awaitable[Any]],
    platform: dict | str,
    size: int | None = None,
    *,
    seed: int = 0,
    args: Sequence[Any] = (),
    kwargs: dict[str, Any] | None = None,
    time_limit: float | None = None,
    eager_limit: int = DEFAULT_EAGER_LIMIT,
    envelope_bytes: int = DEFAULT_ENVELOPE_BYTES,
    hosts: Sequence[int] | None = None,
    rendezvous: str = "sender",
    trace: bool = False,
) -> Result:
    """Run ``program(comm, *args, **kwargs)`` on ``size`` ranks of ``platform``.

    ``platform`` is a platform dict or a short form such as ``"star:64"``.
    Rank i runs on host i unless ``hosts`` maps ranks to host indices.
    With ``trace``, ``extra["trace"]`` holds each rank's timeline (see
    :mod:`parcomm.comm.trace`).
    """
    from ..platform import as_platform

    plat = as_platform(platform)
    if size is None:
        size = len(plat["hosts"])
    if size < 1:
        raise CommError(f"size must be at least 1, got {size}")
    if envelope_bytes < 1:
        raise CommError(
            f"envelope_bytes must be at least 1 (a message crosses the network as at least its envelope), got {envelope_bytes}"
        )
    world = _World(plat, size, seed, eager_limit, envelope_bytes, hosts, rendezvous)
    comms = [SimComm(world, r) for r in range(size)]
    if trace:
        for c in comms:
            c._trace = []
    ranks = _Ranks(world, comms, _coroutines(program, comms, args, kwargs or {}))
    wall0 = _time.perf_counter()
    try:
        try:
            _drive(world, ranks, time_limit)
        except DeadlockError:
            for c in comms:  # the cause is often a call that was never awaited
                c._check_awaited()
            raise
    finally:
        for coro in ranks.coros:  # on error, end the other ranks' coroutines quietly
            coro.close()
    return Result(
        way="sim",
        finish_times=ranks.finish,
        results=ranks.results,
        counters=world.sim.counters(),
        events=world.sim.events_processed,
        wall_s=_time.perf_counter() - wall0,
        backend="sim",
        seed=seed,
        platform=str(plat.get("name", "")),
        extra={"trace": [c._trace for c in comms]} if trace else {},
    )


def _coroutines(
    program: Callable[..., Awaitable[Any]], comms: list[SimComm], args: Sequence[Any], kwargs: dict[str, Any]
) -> list[Coroutine[Any, Any, Any]]:
    """``program(comm, *args, **kwargs)`` for every rank; an error if it is not a coroutine function."""
    coros: list[Coroutine[Any, Any, Any]] = []
    for c in comms:
        coro = program(c, *args, **kwargs)
        if not inspect.iscoroutine(coro):
            for other in coros:
                other.close()
            raise not_async_error(c.rank, program)
        coros.append(coro)
    return coros


class _Ranks:
    """The ranks' coroutines and where each stands: blocked on what, still running, finished when,
    with what result. :meth:`step` resumes one rank until it blocks or returns."""

    def __init__(self, world: _World, comms: list[SimComm], coros: list[Coroutine[Any, Any, Any]]) -> None:
        size = len(coros)
        self.world, self.comms, self.coros = world, comms, coros
        self.blocked: list[_Block | None] = [None] * size
        self.running = [True] * size
        self.finish = [0.0] * size
        self.results: list[Any] = [None] * size

    def step(self, r: int, value: Any) -> None:
        coro = self.coros[r]
        while True:
            try:
                y = coro.send(value)
            except StopIteration as stop:
                self.running[r] = False
                self.finish[r] = self.world.sim.now_ns * 1e-9
                self.results[r] = stop.value
                self.comms[r]._check_awaited()  # a call dropped without await just before returning
                return
            except CommError:
                raise
            except (Exception, SystemExit) as e:  # a bug (or sys.exit) in the rank program: which rank, where
                raise CommError(rank_error(r, e)) from e
            if not isinstance(y, _Block):
                raise CommError(f"rank {r} awaited {y!r}; rank programs may only await communicator methods")
            if y.ready():
                value = [q.value for q in y.requests]
                continue
            self.blocked[r] = y
            return


def _drive(world: _World, ranks: _Ranks, time_limit: float | None) -> None:
    step, running = ranks.step, ranks.running
    blocked: list = ranks.blocked  # a running rank is blocked whenever the driver looks
    size = len(ranks.coros)
    for r in range(size):
        step(r, None)
    while any(running):
        done = world.sim.run_until_completion(time_limit)
        if not done:
            waiting = [r for r in range(size) if running[r]]
            if world.sim.is_idle:
                what = "; ".join(
                    f"rank {r}: " + ", ".join(q.describe for q in blocked[r].requests if not q.done)
                    for r in waiting[:8]
                )
                raise DeadlockError(f"deadlock at t={world.sim.now_ns * 1e-9:.6f} s: {what}")
            raise CommError(f"time limit {time_limit} s reached with ranks {waiting[:8]} still running")
        world.touched.clear()
        for op, kind, _host, _t in done:
            world.on_completion(op, kind)
        for r in sorted(world.touched):  # rank order: deterministic
            b = blocked[r]
            if running[r] and b is not None and b.ready():
                blocked[r] = None
                step(r, [q.value for q in b.requests])
