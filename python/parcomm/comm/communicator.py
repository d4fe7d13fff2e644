"""The one Communicator: mpi4py's surface, written once over point-to-point.

Every backend (:class:`~parcomm.comm.SimComm`, :class:`~parcomm.comm.SocketComm`,
:class:`~parcomm.comm.MPIComm`) subclasses :class:`Communicator` and provides
four primitives: start a send (``_start_send``), post a receive
(``_post_recv``), block until requests are done (``_block``) and create a
request (``_new_request``), plus ``compute``/``sleep``/``wtime``. Everything
else is here, once: argument checks, the blocking calls, ``sendrecv``, every
collective (algorithms in :mod:`parcomm.collectives`), the uppercase buffer
methods on numpy arrays, and the check that every call was awaited.

Names, argument order and results are mpi4py's (``send(obj, dest, tag=0)``,
``recv(buf=None, source=ANY_SOURCE, tag=ANY_TAG, status=None)``,
``irecv(buf=None, source=ANY_SOURCE, tag=ANY_TAG)``, ``bcast(obj, root=0)``,
``reduce(sendobj, op=SUM, root=0)``, ...). Two differences, both forced by
running the same program on a simulator:

* Blocking calls are ``async`` and must be awaited (``await comm.recv(...)``,
  ``await req.wait()``). A call that is never awaited never happens; the
  next call on the communicator (or the end of the program) raises a
  :class:`CommError` naming the file and line of the forgotten ``await``.
* Every send and collective takes an optional ``nbytes=``: the simulated
  size of one contribution, so a simulation can move "1 GiB" without
  allocating it (real backends pad the wire to it).

For compatibility with older parcomm programs, ``recv(0)``/``irecv(0, 5)``
(an int where mpi4py has ``buf``) mean ``source=0, tag=5``: an int is never a
buffer, so nothing valid under mpi4py changes meaning.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Awaitable, Callable, Generator, Generic, Mapping, Sequence, TypeVar

from .base import ANY_SOURCE, ANY_TAG, CommError, Status, payload_nbytes, tag_label
from .ops import SUM

# The collective methods below are implemented a layer up, by parcomm.collectives, over this
# class's point-to-point methods. That package registers its functions here when it is imported;
# the composition root (parcomm/__init__.py) names it, and the first collective call imports it,
# so this layer never imports the one above it by name.
_COLLECTIVES: dict[str, Callable[..., Any]] = {}


def register_collectives(functions: Mapping[str, Callable[..., Any]]) -> None:
    """Called by :mod:`parcomm.collectives`: the functions behind ``comm.bcast()`` and the rest."""
    _COLLECTIVES.update(functions)


def collective(name: str) -> Callable[..., Any]:
    """The registered implementation of collective ``name``."""
    if not _COLLECTIVES:
        import importlib

        import parcomm

        importlib.import_module(parcomm.COLLECTIVES_MODULE)
    try:
        return _COLLECTIVES[name]
    except KeyError:
        raise CommError(f"comm.{name}(): no implementation registered (import parcomm.collectives)") from None


__all__ = ["Communicator", "Request", "Pending", "SubComm", "UNDEFINED", "user_frames", "rank_error"]

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _caller(depth: int = 2) -> tuple[str, int]:
    """(file, line) of the code that called a communicator method."""
    f = sys._getframe(depth)
    return (f.f_code.co_filename, f.f_lineno)


def _short(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if not rel.startswith("..") else path


class Pending:
    """What a blocking communicator call returns: await it.

    If it is dropped without being awaited (``comm.send(x, 1)`` without
    ``await``), the call never happens; the communicator remembers where, and
    its next call (or the end of the rank program) raises a clear error.
    """

    __slots__ = ("_comm", "_coro", "_what", "_where", "_awaited")

    def __init__(self, comm: "Communicator", coro: Any, what: str, where: tuple[str, int]):
        self._comm = comm
        self._coro = coro
        self._what = what
        self._where = where
        self._awaited = False

    def __await__(self) -> Generator[Any, None, Any]:
        self._awaited = True
        return self._coro.__await__()

    def __del__(self) -> None:
        if not self._awaited:
            try:
                self._coro.close()
                comm = self._comm
                if comm._unawaited is None:
                    comm._unawaited = (self._what, self._where)
            except Exception:  # noqa: BLE001 - never raise from a finalizer
                pass

    def __repr__(self) -> str:
        return f"<pending {self._what}: await it>"


class Request:
    """A nonblocking operation (``isend``/``irecv``/``Isend``/``Irecv``).

    ``await req.wait()`` gives the received object (None for sends);
    ``req.test()`` is ``(done, value)`` without blocking;
    ``await Request.waitall(reqs)`` waits for several, as mpi4py's
    ``MPI.Request.waitall``. Backends subclass it.
    """

    __slots__ = ("_comm", "value", "status", "describe", "kind", "_into", "synchronous", "__weakref__")

    def __init__(self, comm: "Communicator", describe: str, kind: str = ""):
        self._comm = comm
        self.synchronous = False  # issend/ssend: complete only once the receive matched it
        self.value: Any = None
        self.status: Status | None = None
        self.describe = describe
        self.kind = kind  # "send", "recv" or "" (compute, sleep)
        self._into: Any = None  # Irecv: the buffer the message is copied into

    # backends say whether it is done
    @property
    def done(self) -> bool:  # pragma: no cover - overridden
        raise NotImplementedError

    @property
    def comm(self) -> "Communicator":
        return self._comm

    def wait(self, status: Status | None = None) -> Awaitable[Any]:
        """Await it: ``value = await req.wait()``."""
        return self._comm._pending(self._comm._wait_one(self, status), "req.wait()")

    Wait = wait

    def test(self, status: Status | None = None) -> tuple[bool, Any]:
        """``(True, value)`` if done, else ``(False, None)``; never blocks."""
        self._comm._check_awaited()
        self._comm._poll()
        if not self.done:
            return False, None
        return True, self._comm._take(self, status)

    def Test(self, status: Status | None = None) -> bool:  # noqa: N802
        return self.test(status)[0]

    def Get_status(self, status: Status | None = None) -> bool:  # noqa: N802
        if status is not None and self.status is not None:
            _copy_status(self.status, status)
        return self.done

    @staticmethod
    def waitall(requests: Sequence["Request"], statuses: list | None = None) -> Awaitable[list[Any]]:
        """``values = await Request.waitall(reqs)`` (mpi4py's ``MPI.Request.waitall``)."""
        reqs = list(requests)
        if not reqs:

            async def nothing() -> list[Any]:
                return []

            return nothing()
        comm = reqs[0]._comm
        return comm._pending(comm._wait_all(reqs, statuses), "Request.waitall()")

    Waitall = waitall

    @staticmethod
    def testall(requests: Sequence["Request"]) -> tuple[bool, list[Any] | None]:
        reqs = list(requests)
        for r in reqs:
            r._comm._poll()
        if all(r.done for r in reqs):
            return True, [r._comm._take(r, None) for r in reqs]
        return False, None

    def __repr__(self) -> str:
        return f"<Request {self.describe} {'done' if self.done else 'pending'}>"


#: The request type of a backend: its hooks receive only the requests its ``_new_request`` made.
RequestT = TypeVar("RequestT", bound=Request)


def _copy_status(src: Status, dst: Status) -> None:
    dst.source, dst.tag, dst.nbytes, dst.cancelled = src.source, src.tag, src.nbytes, src.cancelled


def _as_buffer(buf: Any, what: str) -> Any:
    """A writable numpy view of an mpi4py-style buffer spec: ``arr``,
    ``[arr, MPI.INT]``, or ``[arr, count, MPI.INT]`` / ``[arr, (count, displ), MPI.INT]``,
    which mean ``count`` items of the type from item ``displ`` (bytes-likes too)."""
    import numpy as np

    count: Any = None
    datatype: Any = None
    if isinstance(buf, (list, tuple)) and buf and not isinstance(buf[0], (int, float)):
        parts = list(buf)
        buf = parts[0]
        if len(parts) >= 3:
            count, datatype = parts[1], parts[2]
        elif len(parts) == 2 and isinstance(parts[1], (int, tuple, list)) and not isinstance(parts[1], bool):
            count = parts[1]
        elif len(parts) == 2:
            datatype = parts[1]
    if isinstance(buf, np.ndarray):
        arr = buf
    elif isinstance(buf, (bytes, bytearray, memoryview)):
        arr = np.frombuffer(buf, dtype=np.uint8)
    else:
        raise CommError(f"{what} must be a numpy array (or [array, MPI type]), got {type(buf).__name__}")
    if count is None:
        return arr
    return _count_view(arr, count, datatype, what)


def _count_view(arr: Any, count: Any, datatype: Any, what: str) -> Any:
    """The ``count`` items (of ``datatype``'s size) that ``[arr, count, datatype]`` names."""
    import numpy as np

    displ = 0
    if isinstance(count, (tuple, list)):
        count, displ = count
    if not isinstance(count, int) or isinstance(count, bool) or count < 0 or not isinstance(displ, int) or displ < 0:
        raise CommError(f"{what}: the count in [buffer, count, type] must be a non-negative int, got {count!r}")
    size = arr.itemsize
    if datatype is not None and hasattr(datatype, "Get_size"):
        size = int(datatype.Get_size())
    elif isinstance(datatype, str):
        size = np.dtype(datatype).itemsize
    if not arr.flags.c_contiguous:
        raise CommError(f"{what}: [buffer, count, type] needs a contiguous array")
    flat = arr.reshape(-1)
    if size != arr.itemsize:
        flat = flat.view(np.uint8)
        lo, hi = displ * size, (displ + count) * size
    else:
        lo, hi = displ, displ + count
    if hi > flat.size:
        raise CommError(
            f"{what}: [buffer, {count}, type] names {(displ + count) * size} bytes; the buffer holds {arr.nbytes}"
        )
    return flat[lo:hi]


def _to_bytes(arr: Any) -> bytes:
    import numpy as np

    return np.ascontiguousarray(arr).tobytes()


def _fill(buf: Any, data: Any, what: str) -> None:
    """Copy a received message into ``buf``; MPI_ERR_TRUNCATE if it does not fit."""
    import numpy as np

    if isinstance(data, np.ndarray):
        data = _to_bytes(data)
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise CommError(
            f"{what}: the message is a {type(data).__name__} object, not a buffer "
            "(it was sent with lowercase send; receive it with recv)"
        )
    n = len(data)
    if n > buf.nbytes:
        raise CommError(f"{what}: message truncated: {n} bytes arrived for a buffer of {buf.nbytes} bytes")
    if n % buf.itemsize:
        raise CommError(f"{what}: {n} bytes is not a whole number of {buf.dtype} items")
    flat = buf.reshape(-1) if buf.flags.c_contiguous else None
    src = np.frombuffer(data, dtype=buf.dtype)
    if flat is not None:
        flat[: src.size] = src
    else:
        tmp = buf.copy().reshape(-1)
        tmp[: src.size] = src
        buf[...] = tmp.reshape(buf.shape)


class Communicator(Generic[RequestT]):
    """mpi4py's communicator surface over four backend primitives.

    Rank programs are ``async def program(comm, ...)``; see the module
    docstring for the two differences from mpi4py. A backend subclasses
    ``Communicator[ItsRequest]``: the requests it makes are the ones it is handed back.
    """

    rank: int
    size: int
    _unawaited: tuple[str, tuple[str, int]] | None = None
    #: This rank's timeline when tracing is on (see :mod:`parcomm.comm.trace`), else None.
    _trace: list | None = None

    # --- backend primitives -----------------------------------------------------------
    def _new_request(self, describe: str, kind: str) -> RequestT:  # pragma: no cover
        raise NotImplementedError

    # ``ctx`` is the communicator context of the message: 0 for this communicator's own, a
    # sub-communicator's (Split/Dup) when it sends and receives through this one.
    def _start_send(
        self, dest: int, tag: int, obj: Any, size: int, req: RequestT, ctx: int = 0
    ) -> None:  # pragma: no cover
        raise NotImplementedError

    def _post_recv(self, source: int, tag: int, req: RequestT, ctx: int = 0) -> None:  # pragma: no cover
        raise NotImplementedError

    async def _block(self, requests: Sequence[RequestT]) -> None:  # pragma: no cover
        raise NotImplementedError

    def _poll(self) -> bool | None:
        """Make progress without blocking (MPI polls, and says whether anything
        progressed; others need nothing)."""

    def _raise_if_failed(self) -> None:
        """Real backends: raise if the communicator broke (a peer was lost)."""

    # --- probe, wait for any, cancel (what the blocking mpi4py surface needs) ----------
    def _p2p(self) -> Any:
        """This rank's point-to-point engine, or None where MPI itself matches."""
        return None

    def _iprobe(self, source: int, tag: int, ctx: int = 0) -> Status | None:
        """The status of the message a receive for (``source``, ``tag``) would
        take now, without taking it (MPI_Iprobe); None if none has arrived."""
        engine = self._p2p()
        if engine is None:
            raise CommError(f"rank {self.rank}: Iprobe is not available on this backend")
        self._poll()
        env = engine.probe(source, tag, ctx)
        return None if env is None else Status(env.source, env.tag, env.nbytes)

    async def _wait_arrival(self) -> None:
        """Return once a message may have arrived (a probe looks again)."""
        await self.sleep(1e-4)  # type: ignore[attr-defined]

    async def _block_any(self, requests: Sequence[RequestT]) -> None:
        """Return once at least one of ``requests`` is done (MPI_Waitany)."""
        while not any(r.done for r in requests):
            self._poll()
            if any(r.done for r in requests):
                return
            await self.sleep(1e-4)  # type: ignore[attr-defined]

    def _cancel(self, request: RequestT) -> bool:
        """Withdraw a receive nothing has matched (MPI_Cancel); sends cannot be withdrawn."""
        engine = self._p2p()
        if engine is None or request.kind != "recv" or request.done:
            return False
        if not engine.cancel_recv(request):
            return False
        request._finish(None, Status(ANY_SOURCE, ANY_TAG, 0, cancelled=True))  # type: ignore[attr-defined]
        return True

    def _take(self, request: RequestT, status: Status | None) -> Any:
        """The value of a completed request (copied into its buffer for Irecv)."""
        if status is not None and request.status is not None:
            _copy_status(request.status, status)
        if request._into is not None:
            _fill(request._into, request.value, f"rank {self.rank}: Irecv")
            return None
        return request.value

    # --- bookkeeping ------------------------------------------------------------------
    def _pending(self, coro: Any, what: str) -> Pending:
        return Pending(self, coro, what, _caller(3))

    def _event(self, ph: str, name: str, t0: float, t1: float | None = None, args: dict | None = None) -> None:
        from .trace import MAX_EVENTS

        tr = self._trace
        if tr is not None:
            if len(tr) < MAX_EVENTS:
                tr.append((ph, name, t0, t1, args))

    def _traced(self, name: str, coro: Any, args: dict | None = None) -> Any:
        """``coro`` as a span of this rank's timeline (when tracing)."""
        if self._trace is None:
            return coro

        async def span() -> Any:
            t0 = self.wtime()
            try:
                return await coro
            finally:
                self._event("X", name, t0, self.wtime(), args)

        return span()

    def _check_awaited(self) -> None:
        """Raise if a call of this rank was dropped without ``await``."""
        if self._unawaited is not None:
            what, (path, line) = self._unawaited
            self._unawaited = None
            raise CommError(
                f"rank {self.rank}: {_short(path)}:{line}: {what} was not awaited, so it never "
                f"happened; write `await {what.split('(')[0]}(...)`"
            )

    # mpi4py spellings
    def Get_rank(self) -> int:  # noqa: N802
        return self.rank

    def Get_size(self) -> int:  # noqa: N802
        return self.size

    def _check_rank(self, r: Any, what: str, allow_any: bool = False) -> None:
        if allow_any and r == ANY_SOURCE and not isinstance(r, bool):
            return
        if not isinstance(r, int) or isinstance(r, bool) or not 0 <= r < self.size:
            raise CommError(f"rank {self.rank}: {what}={r!r} is not a rank of this communicator (size {self.size})")

    def _check_tag(self, tag: Any, allow_any: bool) -> None:
        if not isinstance(tag, int) or isinstance(tag, bool) or (tag < 0 and not (allow_any and tag == ANY_TAG)):
            what = "a non-negative int or ANY_TAG" if allow_any else "a non-negative int"
            raise CommError(f"rank {self.rank}: tag must be {what}, got {tag!r}")

    # --- point to point ---------------------------------------------------------------
    def issend(self, obj: Any, dest: int, tag: int = 0, *, nbytes: int | None = None) -> RequestT:
        """A synchronous ``isend``: the request completes only once a receive has
        matched the message (it always takes the rendezvous protocol; under
        ``rendezvous="receiver"`` it waits for the receive's credit)."""
        return self.isend(obj, dest, tag, nbytes=nbytes, _synchronous=True)

    def ssend(self, obj: Any, dest: int, tag: int = 0, *, nbytes: int | None = None) -> Awaitable[None]:
        """``await comm.ssend(obj, dest, tag=0)``: returns once the receiver has matched it."""
        req = self.issend(obj, dest, tag, nbytes=nbytes)
        return self._pending(self._wait_one(req, None), "comm.ssend()")

    def isend(
        self, obj: Any, dest: int, tag: int = 0, *, nbytes: int | None = None, _synchronous: bool = False
    ) -> RequestT:
        """Start sending ``obj`` to ``dest``; returns a :class:`Request`.
        ``nbytes`` is the simulated size (default: the object's size)."""
        if self._unawaited is not None:
            self._check_awaited()
        self._raise_if_failed()
        self._check_rank(dest, "dest")
        self._check_tag(tag, allow_any=False)
        size = payload_nbytes(obj) if nbytes is None else int(nbytes)
        if size < 0:
            raise CommError(f"rank {self.rank}: nbytes must be >= 0, got {nbytes}")
        req = self._new_request(
            f"{'ssend' if _synchronous else 'send'} to {dest} tag {tag_label(tag)} ({size} B)", "send"
        )
        req.synchronous = _synchronous
        if self._trace is not None:
            self._event("i", "isend", self.wtime(), None, {"dest": dest, "tag": tag, "nbytes": size})
        self._start_send(dest, tag, obj, size, req)
        return req

    @staticmethod
    def _legacy_source(buf: Any, source: int, tag: int) -> tuple[Any, int, int]:
        if isinstance(buf, int) and not isinstance(buf, bool):  # old form recv(source, tag)
            return None, buf, (tag if tag != ANY_TAG else source)
        return buf, source, tag

    def irecv(self, buf: Any = None, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> RequestT:
        """Post a receive; ``await req.wait()`` gives the object. ``buf`` is
        accepted for mpi4py compatibility and not needed (messages of any
        size arrive)."""
        if self._unawaited is not None:
            self._check_awaited()
        self._raise_if_failed()
        _, source, tag = self._legacy_source(buf, source, tag)
        self._check_rank(source, "source", allow_any=True)
        self._check_tag(tag, allow_any=True)
        req = self._new_request(
            f"recv from {'any' if source == ANY_SOURCE else source} tag {'any' if tag == ANY_TAG else tag_label(tag)}",
            "recv",
        )
        if self._trace is not None:
            self._event("i", "irecv", self.wtime(), None, {"source": source, "tag": tag})
        self._post_recv(source, tag, req)
        return req

    def send(self, obj: Any, dest: int, tag: int = 0, *, nbytes: int | None = None) -> Awaitable[None]:
        """``await comm.send(obj, dest, tag=0)``: returns once ``obj`` may be reused
        (it was buffered, or, above the eager limit, the receiver took it)."""
        return self._pending(self._send(obj, dest, tag, nbytes), "comm.send()")

    async def _send(self, obj: Any, dest: int, tag: int, nbytes: int | None) -> None:
        await self._wait_one(self.isend(obj, dest, tag, nbytes=nbytes), None)

    def recv(
        self, buf: Any = None, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None
    ) -> Awaitable[Any]:
        """``obj = await comm.recv(source=..., tag=..., status=st)``."""
        if self._unawaited is not None:
            self._check_awaited()
        _, source, tag = self._legacy_source(buf, source, tag)
        req = self.irecv(None, source, tag)
        return self._pending(self._wait_one(req, status), "comm.recv()")

    def sendrecv(
        self,
        sendobj: Any,
        dest: int,
        sendtag: int = 0,
        recvbuf: Any = None,
        source: int = ANY_SOURCE,
        recvtag: int = ANY_TAG,
        status: Status | None = None,
        *,
        nbytes: int | None = None,
    ) -> Awaitable[Any]:
        """Send to ``dest`` and receive from ``source`` at once (no deadlock
        between two ranks exchanging); gives the received object."""
        if self._unawaited is not None:
            self._check_awaited()
        rreq = self.irecv(None, source, recvtag)
        sreq = self.isend(sendobj, dest, sendtag, nbytes=nbytes)
        return self._pending(self._sendrecv(sreq, rreq, status), "comm.sendrecv()")

    async def _sendrecv(self, sreq: RequestT, rreq: RequestT, status: Status | None) -> Any:
        await self._wait_all([rreq, sreq], None)
        return self._take(rreq, status)

    def wait(self, request: RequestT, status: Status | None = None) -> Awaitable[Any]:
        """``value = await comm.wait(req)`` (same as ``await req.wait()``)."""
        return self._pending(self._wait_one(request, status), "comm.wait()")

    def waitall(self, requests: Sequence[RequestT], statuses: list | None = None) -> Awaitable[list[Any]]:
        """``values = await comm.waitall(reqs)``: each request's value, in order."""
        return self._pending(self._wait_all(list(requests), statuses), "comm.waitall()")

    async def _wait_one(self, request: RequestT, status: Status | None) -> Any:
        if self._unawaited is not None:
            self._check_awaited()
        if not isinstance(request, Request):
            raise CommError(f"rank {self.rank}: wait needs a Request (from isend/irecv), got {type(request).__name__}")
        if not request.done:
            t0 = self.wtime() if self._trace is not None else 0.0
            await self._block((request,))
            if self._trace is not None:
                name = request.describe.split()[0] if not request.kind else "wait"  # compute, sleep
                self._event("X", name, t0, self.wtime(), {"for": request.describe})
        return self._take(request, status)

    async def _wait_all(self, requests: list[RequestT], statuses: list | None) -> list[Any]:
        if self._unawaited is not None:
            self._check_awaited()
        for r in requests:
            if not isinstance(r, Request):
                raise CommError(f"rank {self.rank}: waitall needs Requests (from isend/irecv), got {type(r).__name__}")
        pending = [r for r in requests if not r.done]
        if pending:
            t0 = self.wtime() if self._trace is not None else 0.0
            await self._block(pending)
            if self._trace is not None:
                self._event("X", "waitall", t0, self.wtime(), {"for": [r.describe for r in pending[:16]]})
        values = [self._take(r, None) for r in requests]
        if statuses is not None:
            statuses[:] = [r.status if r.status is not None else Status() for r in requests]
        return values

    # --- sub-communicators ------------------------------------------------------------
    _ctx_high: int = 0  # the highest communicator context this rank knows (on its own communicator)

    def _base_comm(self) -> "Communicator":
        return self

    def _world_rank(self, r: int) -> int:
        return r

    def Split(self, color: int = 0, key: int = 0) -> Awaitable["Communicator | None"]:  # noqa: N802
        """``sub = await comm.Split(color, key)``: ranks with the same ``color``
        form a new communicator, ordered by ``key`` then rank; ``color=MPI.UNDEFINED``
        gives None. Collective over this communicator."""
        if self._unawaited is not None:
            self._check_awaited()
        return self._pending(_split(self, color, key), "comm.Split()")

    def Dup(self) -> Awaitable["Communicator"]:  # noqa: N802
        """``dup = await comm.Dup()``: the same ranks, a context of its own."""
        if self._unawaited is not None:
            self._check_awaited()
        return self._pending(_split(self, 0, self.rank), "comm.Dup()")

    # --- compute, time ----------------------------------------------------------------
    def wtime(self) -> float:  # pragma: no cover - backends
        raise NotImplementedError

    Wtime = property(lambda self: self.wtime)

    # --- collectives (objects) ----------------------------------------------------------
    def barrier(self) -> Awaitable[None]:
        """``await comm.barrier()``: dissemination barrier."""
        barrier = collective("barrier")
        if self._unawaited is not None:
            self._check_awaited()
        return self._pending(self._traced("barrier", barrier(self)), "comm.barrier()")

    Barrier = barrier

    def bcast(
        self, obj: Any = None, root: int = 0, *, algorithm: str | None = None, nbytes: int | None = None
    ) -> Awaitable[Any]:
        """``obj = await comm.bcast(obj, root=0)``; algorithm ``binomial`` or
        ``scatter_allgather`` (default: MPICH's rule on ``nbytes`` when given, else binomial)."""
        if self._unawaited is not None:
            self._check_awaited()
        return self._pending(
            self._traced("bcast", collective("bcast")(self, obj, root, algorithm=algorithm, nbytes=nbytes)),
            "comm.bcast()",
        )

    def reduce(
        self, sendobj: Any, op: Any = SUM, root: int = 0, *, algorithm: str | None = None, nbytes: int | None = None
    ) -> Awaitable[Any]:
        """``result = await comm.reduce(x, op=MPI.SUM, root=0)``: the result at the root, None elsewhere."""
        if self._unawaited is not None:
            self._check_awaited()
        return self._pending(
            self._traced("reduce", collective("reduce")(self, sendobj, op, root, algorithm=algorithm, nbytes=nbytes)),
            "comm.reduce()",
        )

    def allreduce(
        self, sendobj: Any, op: Any = SUM, *, algorithm: str | None = None, nbytes: int | None = None
    ) -> Awaitable[Any]:
        """``result = await comm.allreduce(x, op=MPI.SUM)``; algorithm
        ``recursive_doubling``, ``ring`` (numpy arrays, commutative ops) or ``reduce_bcast``."""
        if self._unawaited is not None:
            self._check_awaited()
        return self._pending(
            self._traced("allreduce", collective("allreduce")(self, sendobj, op, algorithm=algorithm, nbytes=nbytes)),
            "comm.allreduce()",
        )

    def scatter(
        self,
        sendobj: Sequence[Any] | None = None,
        root: int = 0,
        *,
        algorithm: str | None = None,
        nbytes: int | None = None,
    ) -> Awaitable[Any]:
        """``mine = await comm.scatter(items, root=0)``: ``items[r]`` to rank r (``items`` only at the root)."""
        if self._unawaited is not None:
            self._check_awaited()
        return self._pending(
            self._traced("scatter", collective("scatter")(self, sendobj, root, algorithm=algorithm, nbytes=nbytes)),
            "comm.scatter()",
        )

    def gather(
        self, sendobj: Any, root: int = 0, *, algorithm: str | None = None, nbytes: int | None = None
    ) -> Awaitable[list[Any] | None]:
        """``items = await comm.gather(x, root=0)``: the list at the root, None elsewhere."""
        if self._unawaited is not None:
            self._check_awaited()
        return self._pending(
            self._traced("gather", collective("gather")(self, sendobj, root, algorithm=algorithm, nbytes=nbytes)),
            "comm.gather()",
        )

    def allgather(
        self, sendobj: Any, *, algorithm: str | None = None, nbytes: int | None = None
    ) -> Awaitable[list[Any]]:
        """``items = await comm.allgather(x)``: every rank's x, by rank."""
        if self._unawaited is not None:
            self._check_awaited()
        return self._pending(
            self._traced("allgather", collective("allgather")(self, sendobj, algorithm=algorithm, nbytes=nbytes)),
            "comm.allgather()",
        )

    def alltoall(
        self, sendobj: Sequence[Any], *, algorithm: str | None = None, nbytes: int | None = None
    ) -> Awaitable[list[Any]]:
        """``got = await comm.alltoall(items)``: ``items[d]`` goes to rank d; ``got[s]`` came from s.
        Algorithms ``scattered``, ``pairwise``, ``A``, ``B`` (seed 001; power-of-two sizes)."""
        if self._unawaited is not None:
            self._check_awaited()
        return self._pending(
            self._traced("alltoall", collective("alltoall")(self, sendobj, algorithm=algorithm, nbytes=nbytes)),
            "comm.alltoall()",
        )

    # --- buffers (numpy arrays) ----------------------------------------------------------
    def Isend(self, buf: Any, dest: int, tag: int = 0) -> RequestT:  # noqa: N802
        """Start sending the contents of a numpy array (copied now)."""
        arr = _as_buffer(buf, f"rank {self.rank}: Isend buffer")
        return self.isend(_to_bytes(arr), dest, tag, nbytes=arr.nbytes)

    def Irecv(self, buf: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> RequestT:  # noqa: N802
        """Post a receive into a numpy array (filled when the request is waited for or tested)."""
        arr = _as_buffer(buf, f"rank {self.rank}: Irecv buffer")
        req = self.irecv(None, source, tag)
        req._into = arr
        return req

    def Send(self, buf: Any, dest: int, tag: int = 0) -> Awaitable[None]:  # noqa: N802
        """``await comm.Send(array, dest, tag=0)``."""
        req = self.Isend(buf, dest, tag)
        return self._pending(self._wait_one(req, None), "comm.Send()")

    def Recv(
        self,
        buf: Any,
        source: int = ANY_SOURCE,
        tag: int = ANY_TAG,  # noqa: N802
        status: Status | None = None,
    ) -> Awaitable[None]:
        """``await comm.Recv(array, source=..., tag=...)``: fills ``array``."""
        req = self.Irecv(buf, source, tag)
        return self._pending(self._wait_one(req, status), "comm.Recv()")

    def Sendrecv(
        self,
        sendbuf: Any,
        dest: int,
        sendtag: int = 0,
        recvbuf: Any = None,  # noqa: N802
        source: int = ANY_SOURCE,
        recvtag: int = ANY_TAG,
        status: Status | None = None,
    ) -> Awaitable[None]:
        rreq = self.Irecv(recvbuf, source, recvtag)
        sreq = self.Isend(sendbuf, dest, sendtag)
        return self._pending(self._sendrecv(sreq, rreq, status), "comm.Sendrecv()")

    def Bcast(self, buf: Any, root: int = 0, *, algorithm: str | None = None) -> Awaitable[None]:  # noqa: N802
        """``await comm.Bcast(array, root=0)``: every rank's array becomes the root's."""
        arr = _as_buffer(buf, f"rank {self.rank}: Bcast buffer")
        return self._pending(
            self._traced("Bcast", collective("Bcast")(self, arr, root, algorithm=algorithm)), "comm.Bcast()"
        )

    def Reduce(
        self,
        sendbuf: Any,
        recvbuf: Any,
        op: Any = SUM,
        root: int = 0,
        *,  # noqa: N802
        algorithm: str | None = None,
    ) -> Awaitable[None]:
        """``await comm.Reduce(send, recv, op=MPI.SUM, root=0)`` (``recv`` used at the root only)."""
        send = _as_buffer(sendbuf, f"rank {self.rank}: Reduce sendbuf")
        recv = None if recvbuf is None else _as_buffer(recvbuf, f"rank {self.rank}: Reduce recvbuf")
        return self._pending(
            self._traced("Reduce", collective("Reduce")(self, send, recv, op, root, algorithm=algorithm)),
            "comm.Reduce()",
        )

    def Allreduce(
        self,
        sendbuf: Any,
        recvbuf: Any,
        op: Any = SUM,
        *,  # noqa: N802
        algorithm: str | None = None,
    ) -> Awaitable[None]:
        """``await comm.Allreduce(send, recv, op=MPI.SUM)``."""
        send = _as_buffer(sendbuf, f"rank {self.rank}: Allreduce sendbuf")
        recv = _as_buffer(recvbuf, f"rank {self.rank}: Allreduce recvbuf")
        return self._pending(
            self._traced("Allreduce", collective("Allreduce")(self, send, recv, op, algorithm=algorithm)),
            "comm.Allreduce()",
        )

    def Allgather(self, sendbuf: Any, recvbuf: Any, *, algorithm: str | None = None) -> Awaitable[None]:  # noqa: N802
        """``await comm.Allgather(send, recv)``: ``recv`` holds every rank's ``send``, by rank."""
        send = _as_buffer(sendbuf, f"rank {self.rank}: Allgather sendbuf")
        recv = _as_buffer(recvbuf, f"rank {self.rank}: Allgather recvbuf")
        return self._pending(
            self._traced("Allgather", collective("Allgather")(self, send, recv, algorithm=algorithm)),
            "comm.Allgather()",
        )

    def Alltoall(self, sendbuf: Any, recvbuf: Any, *, algorithm: str | None = None) -> Awaitable[None]:  # noqa: N802
        """``await comm.Alltoall(send, recv)``: block d of ``send`` goes to rank d, block s of ``recv`` came from s."""
        send = _as_buffer(sendbuf, f"rank {self.rank}: Alltoall sendbuf")
        recv = _as_buffer(recvbuf, f"rank {self.rank}: Alltoall recvbuf")
        return self._pending(
            self._traced("Alltoall", collective("Alltoall")(self, send, recv, algorithm=algorithm)), "comm.Alltoall()"
        )

    def Scatter(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> Awaitable[None]:  # noqa: N802
        send = None if sendbuf is None else _as_buffer(sendbuf, f"rank {self.rank}: Scatter sendbuf")
        recv = _as_buffer(recvbuf, f"rank {self.rank}: Scatter recvbuf")
        return self._pending(self._traced("Scatter", collective("Scatter")(self, send, recv, root)), "comm.Scatter()")

    def Gather(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> Awaitable[None]:  # noqa: N802
        send = _as_buffer(sendbuf, f"rank {self.rank}: Gather sendbuf")
        recv = None if recvbuf is None else _as_buffer(recvbuf, f"rank {self.rank}: Gather recvbuf")
        return self._pending(self._traced("Gather", collective("Gather")(self, send, recv, root)), "comm.Gather()")


# --- sub-communicators -------------------------------------------------------------------


UNDEFINED = -32766  # MPI.UNDEFINED: Split(color=UNDEFINED) gives no communicator


async def _split(comm: "Communicator", color: int, key: int) -> "Communicator | None":
    if not isinstance(color, int) or isinstance(color, bool) or (color < 0 and color != UNDEFINED):
        raise CommError(f"rank {comm.rank}: Split color must be a non-negative int or MPI.UNDEFINED, got {color!r}")
    if not isinstance(key, int) or isinstance(key, bool):
        raise CommError(f"rank {comm.rank}: Split key must be an int, got {key!r}")
    base = comm._base_comm()
    # Every member learns everyone's color and key, and the highest context id
    # any member knows: the new communicators take the next one, so no two live
    # communicators that share a rank ever share a context.
    info = await comm.allgather((color, key, base._ctx_high), algorithm="ring")
    ctx = max(h for _, _, h in info) + 1
    base._ctx_high = ctx
    if color == UNDEFINED:
        return None
    members = sorted((k, r) for r, (c, k, _) in enumerate(info) if c == color)
    world = [comm._world_rank(r) for _, r in members]
    return SubComm(base, world, ctx)


class SubComm(Communicator[Request]):
    """A communicator made by ``Split``/``Dup``: a group of the rank's own
    communicator's ranks and a context of its own (messages of different
    communicators never match)."""

    def __init__(self, base: Communicator, world_ranks: list[int], ctx: int):
        self._base = base
        self._ranks = list(world_ranks)
        self._group = {w: i for i, w in enumerate(self._ranks)}
        self._ctx = ctx
        self.rank = self._group[base.rank]
        self.size = len(self._ranks)

    @property
    def _trace(self):  # type: ignore[override]
        return self._base._trace

    @property
    def _unawaited(self):
        return self._base._unawaited

    @_unawaited.setter
    def _unawaited(self, value) -> None:
        self._base._unawaited = value

    def _base_comm(self) -> Communicator:
        return self._base

    def _world_rank(self, r: int) -> int:
        return self._ranks[r]

    def _new_request(self, describe: str, kind: str) -> Request:
        req = self._base._new_request(describe, kind)
        req._comm = self
        return req

    # Its messages travel through the base communicator in its own context; ``ctx`` is always 0
    # here (sub-communicators are made from the base communicator, never from one another).
    def _start_send(self, dest: int, tag: int, obj: Any, size: int, req: Request, ctx: int = 0) -> None:
        self._base._start_send(self._ranks[dest], tag, obj, size, req, ctx=self._ctx)

    def _post_recv(self, source: int, tag: int, req: Request, ctx: int = 0) -> None:
        src = source if source == ANY_SOURCE else self._ranks[source]
        self._base._post_recv(src, tag, req, ctx=self._ctx)

    async def _block(self, requests: Sequence[Request]) -> None:
        await self._base._block(requests)

    def _poll(self) -> Any:
        return self._base._poll()

    def _raise_if_failed(self) -> None:
        self._base._raise_if_failed()

    def _iprobe(self, source: int, tag: int, ctx: int = 0) -> Status | None:
        src = source if source == ANY_SOURCE else self._ranks[source]
        status = self._base._iprobe(src, tag, self._ctx)
        if status is not None:
            status.source = self._group.get(status.source, status.source)
        return status

    async def _wait_arrival(self) -> None:
        await self._base._wait_arrival()

    async def _block_any(self, requests: Sequence[Request]) -> None:
        await self._base._block_any(requests)

    def _cancel(self, request: Request) -> bool:
        return self._base._cancel(request)

    def _take(self, request: Request, status: Status | None) -> Any:
        value = self._base._take(request, None)
        if status is not None and request.status is not None:
            _copy_status(request.status, status)
            status.source = self._group.get(request.status.source, request.status.source)
        return value

    def wtime(self) -> float:
        return self._base.wtime()

    def compute(self, seconds: float) -> Any:
        return self._base.compute(seconds)  # type: ignore[attr-defined]

    def sleep(self, seconds: float) -> Any:
        return self._base.sleep(seconds)  # type: ignore[attr-defined]

    def Free(self) -> None:  # noqa: N802
        """Nothing to release (mpi4py's name, for programs that call it)."""

    def __repr__(self) -> str:
        return f"<SubComm rank {self.rank} of {self.size}, world ranks {self._ranks[:8]}, context {self._ctx}>"


# --- errors that point at the user's line --------------------------------------------------


def user_frames(exc: BaseException, limit: int = 6) -> list[tuple[str, int, str]]:
    """(file, line, function) of the traceback's frames outside parcomm, the
    standard library and asyncio, innermost last."""
    import sysconfig
    import traceback

    stdlib = {
        os.path.abspath(p) for p in (sysconfig.get_paths().get("stdlib"), sysconfig.get_paths().get("platstdlib")) if p
    }
    out = []
    for fs in traceback.extract_tb(exc.__traceback__):
        path = os.path.abspath(fs.filename)
        if path.startswith(_PKG_DIR) or any(
            path.startswith(s + os.sep) and "site-packages" not in path for s in stdlib
        ):
            continue
        if fs.filename.startswith("<frozen"):
            continue
        out.append((fs.filename, fs.lineno or 0, fs.name))
    return out[-limit:]


def rank_error(rank: int, exc: BaseException) -> str:
    """One line for an exception raised by rank ``rank``'s program:
    ``rank R raised Type: message (at file:line in function)``, with the
    user's innermost frame (and up to two callers) only."""
    text = f"rank {rank} raised {type(exc).__name__}" + (f": {exc}" if str(exc) else "")
    frames = user_frames(exc)
    if frames:
        where = " <- ".join(f"{_short(f)}:{ln} in {fn}" for f, ln, fn in reversed(frames[-3:]))
        text += f" (at {where})"
    return text


def not_async_error(rank: int, program: Any) -> CommError:
    name = getattr(program, "__qualname__", None) or repr(program)
    code = getattr(program, "__code__", None)
    where = f"{_short(code.co_filename)}:{code.co_firstlineno}: " if code is not None else ""
    return CommError(
        f"rank {rank}: {where}the program {name} is a plain function; rank programs must be "
        f"`async def {getattr(program, '__name__', 'program')}(comm, ...)` and `await` the "
        "communicator's calls"
    )
