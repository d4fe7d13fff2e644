"""``MPI.Request`` (blocking ``Wait``/``Test`` and the any/all/some forms),
``MPI.Prequest`` and ``MPI.Message``, over the async Communicator's requests.

A request wraps the async layer's request and what to do once it completes
(unpack into a receive buffer). A completed request becomes the null
request, as in MPI. A ``Test`` that finds nothing done lets the engine move
(real backends: one event-loop turn; the simulator: ``POLL_COST_S`` of
simulated time, or a polling loop would never see time pass).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .bridge import current, wait
from .status import PROC_NULL, UNDEFINED, Status, from_base, proc_null_status

__all__ = ["Request", "Prequest", "Message", "REQUEST_NULL", "MESSAGE_NULL", "MESSAGE_NO_PROC", "poll_pause"]

#: Simulated seconds a fruitless Test/Iprobe costs (the time a polling loop takes per turn).
POLL_COST_S = 1e-6


def poll_pause() -> None:
    """Let the engine make progress after a fruitless test (see the module docstring)."""
    ctx = current()
    wait(ctx.comm.sleep(POLL_COST_S if ctx.objects.get("simulated") else 0.0))


class Request:
    """mpi4py's ``MPI.Request``."""

    __slots__ = ("_r", "_finish", "_value", "_status", "_proc_null", "_null", "__weakref__")

    def __init__(self, r: Any = None, finish: Callable[[Any, Any], Any] | None = None, proc_null: bool = False):
        self._r = r  # the async layer's request (None: already complete, or null)
        self._finish = finish  # (value, base status) -> the value the program sees
        self._value: Any = None
        self._status: Any = None
        self._proc_null = proc_null
        self._null = r is None and not proc_null

    # --- one request ------------------------------------------------------------------
    def _ready(self) -> bool:
        r = self._r
        return r is None or r.done

    def _complete(self, status: Status | None) -> Any:
        """Take the result of a done request and become null."""
        if self._null:
            if status is not None:
                Status.__init__(status)
            return None
        if self._proc_null:
            proc_null_status(status)
            self._proc_null, self._null = False, True
            return None
        r = self._r
        if r is None:  # an inactive persistent request
            if status is not None:
                Status.__init__(status)
            return None
        from ..comm.base import Status as BaseStatus

        st = BaseStatus()
        value = r._comm._take(r, st)
        if self._finish is not None:
            value = self._finish(value, st)
        from_base(st, status)
        self._r, self._null = None, True
        return value

    def Wait(self, status: Status | None = None) -> bool:  # noqa: N802
        self.wait(status)
        return True

    def wait(self, status: Status | None = None) -> Any:
        if self._r is not None and not self._r.done:
            wait(current().comm._block((self._r,)))
        return self._complete(status)

    def Test(self, status: Status | None = None) -> bool:  # noqa: N802
        return self.test(status)[0]

    def test(self, status: Status | None = None) -> tuple[bool, Any]:
        if self._r is not None:
            self._r._comm._poll()
            if not self._r.done:
                poll_pause()
                if not self._r.done:
                    return False, None
        return True, self._complete(status)

    def Get_status(self, status: Status | None = None) -> bool:  # noqa: N802
        if self._ready():
            if status is not None and self._r is not None and self._r.status is not None:
                from_base(self._r.status, status)
            return True
        poll_pause()
        return self._ready()

    def get_status(self, status: Status | None = None) -> bool:
        return self.Get_status(status)

    def Cancel(self) -> None:  # noqa: N802
        if self._r is not None:
            ctx = current()
            ctx.comm._cancel(self._r)

    cancel = Cancel

    def Free(self) -> None:  # noqa: N802
        self._r, self._null, self._proc_null = None, True, False

    free = Free

    def __bool__(self) -> bool:
        return not self._null

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Request):
            return NotImplemented
        return self is other or (self._null and other._null)

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return "<mpi4py.MPI.Request: null>" if self._null else f"<mpi4py.MPI.Request {self._r!r}>"

    # --- several ----------------------------------------------------------------------
    @staticmethod
    def _block_any(requests: Sequence[Request]) -> None:
        pending = [q._r for q in requests if q._r is not None and not q._r.done]
        if pending:
            wait(current().comm._block_any(pending))

    @classmethod
    def Waitall(cls, requests: Sequence[Request], statuses: list | None = None) -> bool:  # noqa: N802
        cls.waitall(requests, statuses)
        return True

    @classmethod
    def waitall(cls, requests: Sequence[Request], statuses: list | None = None) -> list[Any]:
        reqs = list(requests)
        pending = [q._r for q in reqs if q._r is not None and not q._r.done]
        if pending:
            wait(current().comm._block(pending))
        return cls._complete_all(reqs, statuses)

    @staticmethod
    def _complete_all(reqs: list[Request], statuses: Any) -> list[Any]:
        out = []
        for i, q in enumerate(reqs):
            st = Status() if statuses is not None else None
            out.append(q._complete(st))
            if statuses is not None:
                _store_status(statuses, i, st)
        return out

    @classmethod
    def Get_status_all(cls, requests: Sequence[Request], statuses: Any = None) -> bool:  # noqa: N802
        reqs = list(requests)
        if not all(q._ready() for q in reqs):
            poll_pause()
        done = all(q._ready() for q in reqs)
        if done and statuses is not None:
            for i, q in enumerate(reqs):
                st = Status()
                q.Get_status(st)
                _store_status(statuses, i, st)
        return done

    get_status_all = Get_status_all

    @classmethod
    def Get_status_any(cls, requests: Sequence[Request], status: Status | None = None) -> tuple[int, bool]:  # noqa: N802
        reqs = list(requests)
        active = [i for i, q in enumerate(reqs) if not q._null]
        if not active:
            if status is not None:
                Status.__init__(status)
            return UNDEFINED, True
        for attempt in (0, 1):
            for i in active:
                if reqs[i]._ready():
                    reqs[i].Get_status(status)
                    return i, True
            if attempt == 0:
                poll_pause()
        return UNDEFINED, False

    get_status_any = Get_status_any

    @classmethod
    def Get_status_some(cls, requests: Sequence[Request], statuses: Any = None) -> list[int] | None:  # noqa: N802
        reqs = list(requests)
        active = [i for i, q in enumerate(reqs) if not q._null]
        if not active:
            return None
        if not any(reqs[i]._ready() for i in active):
            poll_pause()
        out = []
        for i in active:
            if reqs[i]._ready():
                st = Status()
                reqs[i].Get_status(st)
                if statuses is not None:
                    _store_status(statuses, i, st)
                out.append(i)
        return out

    get_status_some = Get_status_some

    @classmethod
    def Testall(cls, requests: Sequence[Request], statuses: list | None = None) -> bool:  # noqa: N802
        return cls.testall(requests, statuses)[0]

    @classmethod
    def testall(cls, requests: Sequence[Request], statuses: list | None = None) -> tuple[bool, list[Any] | None]:
        reqs = list(requests)
        if not all(q._ready() for q in reqs):
            poll_pause()
            if not all(q._ready() for q in reqs):
                return False, None
        return True, cls._complete_all(reqs, statuses)

    @classmethod
    def Waitany(cls, requests: Sequence[Request], status: Status | None = None) -> int:  # noqa: N802
        return cls.waitany(requests, status)[0]

    @classmethod
    def waitany(cls, requests: Sequence[Request], status: Status | None = None) -> tuple[int, Any]:
        reqs = list(requests)
        active = [i for i, q in enumerate(reqs) if not q._null]
        if not active:
            if status is not None:
                Status.__init__(status)
            return UNDEFINED, None
        while True:
            for i in active:
                if reqs[i]._ready():
                    return i, reqs[i]._complete(status)
            cls._block_any([reqs[i] for i in active])

    @classmethod
    def Testany(cls, requests: Sequence[Request], status: Status | None = None) -> tuple[int, bool]:  # noqa: N802
        index, flag, _ = cls.testany(requests, status)
        return index, flag

    @classmethod
    def testany(cls, requests: Sequence[Request], status: Status | None = None) -> tuple[int, bool, Any]:
        reqs = list(requests)
        active = [i for i, q in enumerate(reqs) if not q._null]
        if not active:
            if status is not None:
                Status.__init__(status)
            return UNDEFINED, True, None
        for attempt in (0, 1):
            for i in active:
                if reqs[i]._ready():
                    return i, True, reqs[i]._complete(status)
            if attempt == 0:
                poll_pause()
        return UNDEFINED, False, None

    @classmethod
    def Waitsome(cls, requests: Sequence[Request], statuses: list | None = None) -> list[int] | None:  # noqa: N802
        return cls.waitsome(requests, statuses)[0]

    @classmethod
    def waitsome(cls, requests: Sequence[Request], statuses: list | None = None) -> tuple[list[int] | None, list]:
        reqs = list(requests)
        active = [i for i, q in enumerate(reqs) if not q._null]
        if not active:
            return None, None  # type: ignore[return-value]
        if not any(reqs[i]._ready() for i in active):
            cls._block_any([reqs[i] for i in active])
        return cls._some(reqs, active, statuses)

    @classmethod
    def Testsome(cls, requests: Sequence[Request], statuses: list | None = None) -> list[int] | None:  # noqa: N802
        return cls.testsome(requests, statuses)[0]

    @classmethod
    def testsome(cls, requests: Sequence[Request], statuses: list | None = None) -> tuple[list[int] | None, list]:
        reqs = list(requests)
        active = [i for i, q in enumerate(reqs) if not q._null]
        if not active:
            return None, None  # type: ignore[return-value]
        if not any(reqs[i]._ready() for i in active):
            poll_pause()
        return cls._some(reqs, active, statuses)

    @staticmethod
    def _some(reqs: list[Request], active: list[int], statuses: list | None) -> tuple[list[int], list]:
        indices, values = [], []
        for i in active:
            if reqs[i]._ready():
                st = Status()
                values.append(reqs[i]._complete(st))
                indices.append(i)
                if statuses is not None:  # the k-th completed request's status goes k-th
                    _store_status(statuses, len(indices) - 1, st)
        return indices, values

    @classmethod
    def Cancelall(cls, requests: Sequence[Request]) -> None:  # noqa: N802
        for q in requests:
            q.Cancel()

    @classmethod
    def Startall(cls, requests: Sequence[Prequest]) -> None:  # noqa: N802
        for q in requests:
            q.Start()


def _store_status(statuses: Any, i: int, st: Status | None) -> None:
    """Put request i's status into the caller's list (filled in place, or extended)."""
    if st is None:
        return
    if i < len(statuses):
        if isinstance(statuses[i], Status):
            Status.__init__(statuses[i], st)
        else:
            statuses[i] = st
    elif isinstance(statuses, list):
        statuses.extend(Status() for _ in range(i - len(statuses)))
        statuses.append(st)


class Prequest(Request):
    """A persistent request (``Send_init``/``Recv_init``): ``Start`` begins one round."""

    __slots__ = ("_start",)

    def __init__(self, start: Callable[[], Request]):
        super().__init__()
        self._start = start
        self._null = False  # inactive, not null: Start() begins a round

    def Start(self) -> None:  # noqa: N802
        started = self._start()
        self._r, self._finish, self._proc_null, self._null = (
            started._r,
            started._finish,
            started._proc_null,
            started._null,
        )

    start = Start

    def _complete(self, status: Status | None) -> Any:
        value = super()._complete(status)
        self._null = self._start is None  # inactive until the next Start, not null (unless freed)
        return value

    def Free(self) -> None:  # noqa: N802
        super().Free()
        self._start = None  # type: ignore[assignment]


class Message:
    """A matched message (``Mprobe``/``Improbe``): receive it with ``recv``/``Recv``.

    It is received by source and tag: the probe saw it first in its queue, so
    it is the first message a receive for that source and tag takes.
    """

    __slots__ = ("_comm", "_source", "_tag", "_proc_null")

    def __init__(self, comm: Any = None, source: int = PROC_NULL, tag: int = 0, proc_null: bool = False):
        self._comm, self._source, self._tag, self._proc_null = comm, source, tag, proc_null

    def __bool__(self) -> bool:
        return self._comm is not None or self._proc_null

    def recv(self, status: Status | None = None) -> Any:
        comm = self._taken()
        if comm is None:
            proc_null_status(status)
            return None
        return comm.recv(None, self._source, self._tag, status)

    def Recv(self, buf: Any, status: Status | None = None) -> None:  # noqa: N802
        comm = self._taken()
        if comm is None:
            proc_null_status(status)
            return
        comm.Recv(buf, self._source, self._tag, status)

    def irecv(self) -> Request:
        comm = self._taken()
        return Request(proc_null=True) if comm is None else comm.irecv(None, self._source, self._tag)

    def Irecv(self, buf: Any) -> Request:  # noqa: N802
        comm = self._taken()
        return Request(proc_null=True) if comm is None else comm.Irecv(buf, self._source, self._tag)

    def _taken(self) -> Any:
        from .errors import ERROR_CLASSES, MPIException

        if self._comm is None and not self._proc_null:
            raise MPIException(ERROR_CLASSES["ERR_REQUEST"], "MPI_Mrecv: a null message")
        comm = self._comm
        self._comm, self._proc_null = None, False
        return comm


REQUEST_NULL = Request()
MESSAGE_NULL = Message()
MESSAGE_NO_PROC = Message(proc_null=True)
