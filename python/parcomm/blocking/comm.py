"""``MPI.Comm``/``MPI.Intracomm``: mpi4py's blocking communicator over the
async :class:`~parcomm.comm.Communicator`.

Every call translates mpi4py's constants (``ANY_SOURCE`` is -2 here, as in
MPICH; ``PROC_NULL`` is a no-op peer) and buffer specs, then waits for the
async call through :func:`~.bridge.wait`. Buffer messages travel as their
packed bytes, so their simulated size is what the datatype and count say.
Buffer collectives move those bytes with the object collectives (the same
algorithms and sizes); reductions combine typed numpy arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..comm.base import ANY_SOURCE as BASE_ANY_SOURCE
from ..comm.base import RESERVED_TAG_BASE
from ..comm.base import Status as BaseStatus
from ..comm.ops import SUM, Op
from .bridge import charge, current, wait
from .buffers import IN_PLACE, Buf, is_in_place, message, vmessage
from .errors import ERROR_CLASSES, MPIException, Unsupported
from .requests import Message, Prequest, Request, poll_pause
from .status import ANY_SOURCE, ANY_TAG, PROC_NULL, UNDEFINED, Status, from_base, proc_null_status

__all__ = [
    "Comm",
    "Intracomm",
    "WorldComm",
    "SelfComm",
    "COMM_NULL",
    "COMM_WORLD",
    "COMM_SELF",
    "TOPOLOGY_CONSTRUCTORS",
    "TAG_UB",
    "IDENT",
    "CONGRUENT",
    "SIMILAR",
    "UNEQUAL",
]

TAG_UB = RESERVED_TAG_BASE - 1  # tags above are the collectives' own
IDENT, CONGRUENT, SIMILAR, UNEQUAL = 0, 1, 2, 3
KEYVAL_TAG_UB, KEYVAL_HOST, KEYVAL_IO, KEYVAL_WTIME_IS_GLOBAL = 0x64400001, 0x64400003, 0x64400005, 0x64400007

#: What ``Intracomm.Create_cart``/``Create_graph`` build, by kind ("cart",
#: "graph"): :mod:`.topology`, where those subclasses of Intracomm live, fills
#: it when imported (the MPI module imports it, so it is there for every program).
TOPOLOGY_CONSTRUCTORS: dict[str, Callable[..., Any]] = {}


class RawBytes(bytes):
    """The packed bytes of a buffer send: a lowercase ``recv`` unpickles them, as
    mpi4py's does (an empty message is None)."""


def _object(value: Any) -> Any:
    if isinstance(value, RawBytes):
        import pickle

        return pickle.loads(value) if value else None
    return value


def _err(cls: str, text: str) -> MPIException:
    return MPIException(ERROR_CLASSES[cls], text)


class Comm:
    """mpi4py's ``MPI.Comm`` (point-to-point, probes, attributes)."""

    _c: Any  # the async Communicator

    def __init__(self, c: Any = None, name: str = ""):
        if isinstance(c, Comm):  # MPI.Comm(other): a new object for the same communicator
            c, name = c._c, name or c._name
        elif c is not None and not hasattr(c, "_new_request"):
            raise TypeError(f"{type(self).__name__}() takes a communicator, got {type(c).__name__}")
        self._c = c
        self._name = name
        self._info: Any = None
        self._buffer: Any = None

    def __reduce__(self) -> Any:
        for name in ("COMM_WORLD", "COMM_SELF"):
            key = "world" if name == "COMM_WORLD" else "self"
            if self._c is not None and self._c is current().objects.get(key):
                return (_predefined_copy, (name, type(self) is not WorldComm and type(self) is not SelfComm))
        if self._c is None:
            return (_predefined_copy, ("COMM_NULL", type(self) is not _NullComm))
        raise ValueError(f"cannot pickle {self!r}: only predefined communicators travel between processes")

    # --- identity -----------------------------------------------------------------------
    def _comm(self) -> Any:
        c = self._c
        if c is None:
            raise _err("ERR_COMM", "invalid communicator (MPI.COMM_NULL)")
        return c

    def Get_rank(self) -> int:  # noqa: N802
        return self._comm().rank

    def Get_size(self) -> int:  # noqa: N802
        return self._comm().size

    @property
    def rank(self) -> int:
        return self._comm().rank

    @property
    def size(self) -> int:
        return self._comm().size

    def Get_name(self) -> str:  # noqa: N802
        return self._name

    def Set_name(self, name: str) -> None:  # noqa: N802
        self._name = str(name)

    @property
    def name(self) -> str:
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        self._name = str(value)

    def Is_inter(self) -> bool:  # noqa: N802
        return False

    def Is_intra(self) -> bool:  # noqa: N802
        return True

    @property
    def is_inter(self) -> bool:
        return False

    @property
    def is_intra(self) -> bool:
        return True

    def Get_topology(self) -> int:  # noqa: N802
        return UNDEFINED

    @property
    def topology(self) -> int:
        return self.Get_topology()

    def Get_group(self) -> Any:  # noqa: N802
        from .group import Group

        c = self._comm()
        return Group([c._world_rank(r) for r in range(c.size)])

    @property
    def group(self) -> Any:
        return self.Get_group()

    def Get_attr(self, keyval: int) -> Any:  # noqa: N802
        if keyval == KEYVAL_TAG_UB:
            return TAG_UB
        if keyval in (KEYVAL_HOST, KEYVAL_IO):
            return PROC_NULL if keyval == KEYVAL_HOST else self.Get_rank()
        if keyval == KEYVAL_WTIME_IS_GLOBAL:
            return 1 if current().objects.get("simulated") else 0
        return None

    def Get_info(self) -> Any:  # noqa: N802
        from .misc import Info

        return Info(self._info or {})

    def Set_info(self, info: Any) -> None:  # noqa: N802
        self._info = dict(info or {})

    @property
    def info(self) -> Any:
        return self.Get_info()

    @info.setter
    def info(self, value: Any) -> None:
        self.Set_info(value)

    @classmethod
    def Get_parent(cls) -> Comm:  # noqa: N802
        """No parent: processes are never spawned here."""
        return COMM_NULL

    def Attach_buffer(self, buf: Any) -> None:  # noqa: N802
        """Buffered sends complete as standard ones here, so the buffer is only kept."""
        self._buffer = buf

    def Detach_buffer(self) -> Any:  # noqa: N802
        buf, self._buffer = self._buffer, None
        return buf

    def Flush_buffer(self) -> None:  # noqa: N802
        """Nothing is held back: buffered sends went as standard ones."""

    def Iflush_buffer(self) -> Request:  # noqa: N802
        return Request()

    def Get_errhandler(self) -> Any:  # noqa: N802
        from .misc import ERRORS_ARE_FATAL

        return ERRORS_ARE_FATAL

    def Set_errhandler(self, errhandler: Any) -> None:  # noqa: N802
        """Errors always raise ``MPI.Exception`` here, as mpi4py's default ERRORS_RETURN does."""

    def Compare(self, other: Comm) -> int:  # noqa: N802
        a, b = self._comm(), other._comm()
        if a is b:
            return IDENT
        ga = [a._world_rank(r) for r in range(a.size)]
        gb = [b._world_rank(r) for r in range(b.size)]
        if ga == gb:
            return CONGRUENT
        return SIMILAR if sorted(ga) == sorted(gb) else UNEQUAL

    def Abort(self, errorcode: int = 0) -> None:  # noqa: N802
        from .misc import AbortRun

        raise AbortRun(int(errorcode), self._comm().rank)

    def Free(self) -> None:  # noqa: N802
        if self._c is None:
            raise _err("ERR_COMM", "MPI_Comm_free: the communicator is already null")
        self._c = None

    def __bool__(self) -> bool:
        return self._c is not None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Comm):
            return NotImplemented
        return self._c is other._c

    def __hash__(self) -> int:
        return id(self._c)

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.{type(self).__name__}: {self._name or hex(id(self))}>"

    # --- argument translation -----------------------------------------------------------
    def _dest(self, dest: Any) -> int | None:
        if dest == PROC_NULL:
            return None
        if not isinstance(dest, (int, np.integer)) or isinstance(dest, bool):
            raise _err("ERR_RANK", f"invalid rank {dest!r}")
        if not 0 <= dest < self._comm().size:
            raise _err("ERR_RANK", f"invalid rank {dest} (communicator of size {self._comm().size})")
        return int(dest)

    def _source(self, source: Any) -> int | None:
        if source == ANY_SOURCE:
            return BASE_ANY_SOURCE
        return self._dest(source)

    @staticmethod
    def _tag(tag: Any, recv: bool = False) -> int:
        if recv and tag == ANY_TAG:
            return int(tag)
        if not isinstance(tag, (int, np.integer)) or isinstance(tag, bool) or not 0 <= tag <= TAG_UB:
            raise _err("ERR_TAG", f"invalid tag {tag!r} (0..{TAG_UB})")
        return int(tag)

    # --- point-to-point, objects -----------------------------------------------------------
    def send(self, obj: Any, dest: int, tag: int = 0) -> None:
        d, t = self._dest(dest), self._tag(tag)
        if d is not None:
            wait(self._comm().send(obj, d, t))
        else:
            charge()

    def ssend(self, obj: Any, dest: int, tag: int = 0) -> None:
        d, t = self._dest(dest), self._tag(tag)
        if d is not None:
            wait(self._comm().ssend(obj, d, t))
        else:
            charge()

    bsend = send  # buffered: completes at once, as a standard eager send does

    def recv(self, buf: Any = None, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None) -> Any:
        s, t = self._source(source), self._tag(tag, recv=True)
        if s is None:
            charge()
            proc_null_status(status)
            return None
        st = BaseStatus()
        value = wait(self._comm().recv(None, s, t, st))
        from_base(st, status)
        return _object(value)

    def sendrecv(
        self,
        sendobj: Any,
        dest: int,
        sendtag: int = 0,
        recvbuf: Any = None,
        source: int = ANY_SOURCE,
        recvtag: int = ANY_TAG,
        status: Status | None = None,
    ) -> Any:
        rreq = self.irecv(None, source, recvtag)
        sreq = self.isend(sendobj, dest, sendtag)
        Request.waitall([sreq])
        return rreq.wait(status)

    def isend(self, obj: Any, dest: int, tag: int = 0) -> Request:
        charge()
        d, t = self._dest(dest), self._tag(tag)
        if d is None:
            return Request(proc_null=True)
        return Request(self._comm().isend(obj, d, t))

    def issend(self, obj: Any, dest: int, tag: int = 0) -> Request:
        charge()
        d, t = self._dest(dest), self._tag(tag)
        if d is None:
            return Request(proc_null=True)
        return Request(self._comm().issend(obj, d, t))

    ibsend = isend

    def irecv(self, buf: Any = None, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:
        charge()
        s, t = self._source(source), self._tag(tag, recv=True)
        if s is None:
            return Request(proc_null=True)
        return Request(self._comm().irecv(None, s, t), lambda value, st: _object(value))

    # --- point-to-point, buffers -----------------------------------------------------------
    def Isend(self, buf: Any, dest: int, tag: int = 0, _synchronous: bool = False) -> Request:  # noqa: N802
        charge()
        b = message(buf, f"rank {self.rank}: Isend buffer")
        d, t = self._dest(dest), self._tag(tag)
        if d is None:
            return Request(proc_null=True)
        data = RawBytes(b.pack())
        start = self._comm().issend if _synchronous else self._comm().isend
        return Request(start(data, d, t, nbytes=len(data)))

    def Issend(self, buf: Any, dest: int, tag: int = 0) -> Request:  # noqa: N802
        return self.Isend(buf, dest, tag, _synchronous=True)

    Ibsend = Isend
    Irsend = Isend

    def Send(self, buf: Any, dest: int, tag: int = 0) -> None:  # noqa: N802
        self.Isend(buf, dest, tag).Wait()

    def Ssend(self, buf: Any, dest: int, tag: int = 0) -> None:  # noqa: N802
        self.Issend(buf, dest, tag).Wait()

    Bsend = Send
    Rsend = Send

    def Irecv(self, buf: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:  # noqa: N802
        charge()
        b = message(buf, f"rank {self.rank}: Irecv buffer")
        s, t = self._source(source), self._tag(tag, recv=True)
        if s is None:
            return Request(proc_null=True)
        what = f"rank {self.rank}: Recv"

        def fill(value: Any, st: Any) -> None:
            n = b.unpack(value, what) if value is not None else 0
            st.nbytes = n

        return Request(self._comm().irecv(None, s, t), fill)

    def Recv(  # noqa: N802
        self, buf: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None
    ) -> None:
        self.Irecv(buf, source, tag).Wait(status)

    def Sendrecv(  # noqa: N802
        self,
        sendbuf: Any,
        dest: int,
        sendtag: int = 0,
        recvbuf: Any = None,
        source: int = ANY_SOURCE,
        recvtag: int = ANY_TAG,
        status: Status | None = None,
    ) -> None:
        rreq = self.Irecv(recvbuf, source, recvtag)
        sreq = self.Isend(sendbuf, dest, sendtag)
        sreq.Wait()
        rreq.Wait(status)

    def Isendrecv(  # noqa: N802
        self,
        sendbuf: Any,
        dest: int,
        sendtag: int = 0,
        recvbuf: Any = None,
        source: int = ANY_SOURCE,
        recvtag: int = ANY_TAG,
    ) -> Request:
        """Done before it returns (both halves at once, so no deadlock): a completed request."""
        st = Status()
        self.Sendrecv(sendbuf, dest, sendtag, recvbuf, source, recvtag, st)
        return _completed(st)

    def Isendrecv_replace(  # noqa: N802
        self, buf: Any, dest: int, sendtag: int = 0, source: int = ANY_SOURCE, recvtag: int = ANY_TAG
    ) -> Request:
        st = Status()
        self.Sendrecv_replace(buf, dest, sendtag, source, recvtag, st)
        return _completed(st)

    def isendrecv(
        self,
        sendobj: Any,
        dest: int,
        sendtag: int = 0,
        recvbuf: Any = None,
        source: int = ANY_SOURCE,
        recvtag: int = ANY_TAG,
    ) -> Request:
        st = Status()
        value = self.sendrecv(sendobj, dest, sendtag, None, source, recvtag, st)
        return _completed(st, value)

    def Sendrecv_replace(  # noqa: N802
        self,
        buf: Any,
        dest: int,
        sendtag: int = 0,
        source: int = ANY_SOURCE,
        recvtag: int = ANY_TAG,
        status: Status | None = None,
    ) -> None:
        b = message(buf, f"rank {self.rank}: Sendrecv_replace buffer")
        data = b.pack()
        d = self._dest(dest)
        sreq = (
            Request(proc_null=True)
            if d is None
            else Request(self._comm().isend(data, d, self._tag(sendtag), nbytes=len(data)))
        )
        self.Recv(buf, source, recvtag, status)
        sreq.Wait()

    # persistent requests
    def Send_init(self, buf: Any, dest: int, tag: int = 0) -> Prequest:  # noqa: N802
        return Prequest(lambda: self.Isend(buf, dest, tag))

    def Ssend_init(self, buf: Any, dest: int, tag: int = 0) -> Prequest:  # noqa: N802
        return Prequest(lambda: self.Issend(buf, dest, tag))

    Bsend_init = Send_init
    Rsend_init = Send_init

    def Recv_init(self, buf: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Prequest:  # noqa: N802
        return Prequest(lambda: self.Irecv(buf, source, tag))

    # --- probes -------------------------------------------------------------------------
    def _probe_once(self, source: int, tag: int, status: Status | None) -> bool:
        s, t = self._source(source), self._tag(tag, recv=True)
        if s is None:
            proc_null_status(status)
            return True
        st = self._comm()._iprobe(s, t)
        if st is None:
            return False
        from_base(st, status)
        return True

    def Iprobe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None) -> bool:  # noqa: N802
        charge()
        if self._probe_once(source, tag, status):
            return True
        poll_pause()
        return self._probe_once(source, tag, status)

    iprobe = Iprobe

    def Probe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None) -> bool:  # noqa: N802
        charge()
        while not self._probe_once(source, tag, status):
            wait(self._comm()._wait_arrival())
        return True

    probe = Probe

    def Mprobe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None) -> Message:  # noqa: N802
        st = status if status is not None else Status()
        self.Probe(source, tag, st)
        return self._message(st)

    mprobe = Mprobe

    def Improbe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None) -> Message | None:  # noqa: N802
        st = status if status is not None else Status()
        if not self.Iprobe(source, tag, st):
            return None
        return self._message(st)

    improbe = Improbe

    def _message(self, st: Status) -> Message:
        if st.source == PROC_NULL:
            return Message(proc_null=True)
        return Message(self, st.source, st.tag)

    # --- what is not here ------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        from .misc import unsupported_attribute

        return unsupported_attribute(f"Comm.{name}", name)


class Intracomm(Comm):
    """mpi4py's ``MPI.Intracomm``: collectives, Split/Dup, topologies."""

    # --- communicators ------------------------------------------------------------------
    def Dup(self, info: Any = None) -> Intracomm:  # noqa: N802
        return Intracomm(wait(self._comm().Dup()), self._name)

    Clone = Dup

    def Dup_with_info(self, info: Any) -> Intracomm:  # noqa: N802
        return self.Dup(info)

    def Idup(self, info: Any = None) -> tuple[Intracomm, Request]:  # noqa: N802
        """Done at once: the new communicator and a completed request."""
        return self.Dup(info), Request()

    def Idup_with_info(self, info: Any) -> tuple[Intracomm, Request]:  # noqa: N802
        return self.Idup(info)

    def Create_group(self, group: Any, tag: int = 0) -> Intracomm:  # noqa: N802
        """Collective over ``group``'s members only (MPI_Comm_create_group)."""
        c = self._comm()
        return _group_comm(c._base_comm(), [int(w) for w in group._ranks])

    @classmethod
    def Create_from_group(  # noqa: N802
        cls, group: Any, stringtag: str = "org.mpi4py", info: Any = None, errhandler: Any = None
    ) -> Intracomm:
        return _group_comm(current().objects["world"], [int(w) for w in group._ranks])

    def Split(self, color: int = 0, key: int = 0) -> Intracomm:  # noqa: N802
        sub = wait(self._comm().Split(UNDEFINED if color == UNDEFINED else color, key))
        return Intracomm(sub) if sub is not None else COMM_NULL

    def Split_type(self, split_type: int, key: int = 0, info: Any = None) -> Intracomm:  # noqa: N802
        # every rank is its own "shared-memory node" under the simulator (one host each)
        return self.Split(UNDEFINED if split_type == UNDEFINED else self.Get_rank(), key)

    def Create(self, group: Any) -> Intracomm:  # noqa: N802
        c = self._comm()
        mine = c._world_rank(c.rank)
        ranks = list(group._ranks)
        color = 0 if mine in ranks else UNDEFINED
        return self.Split(color, ranks.index(mine) if mine in ranks else 0)

    def Create_cart(  # noqa: N802
        self, dims: Sequence[int], periods: Sequence[bool] | None = None, reorder: bool = False
    ) -> Any:
        return TOPOLOGY_CONSTRUCTORS["cart"](self, dims, periods, reorder)

    def Create_graph(self, index: Sequence[int], edges: Sequence[int], reorder: bool = False) -> Any:  # noqa: N802
        return TOPOLOGY_CONSTRUCTORS["graph"](self, index, edges, reorder)

    # --- collectives, objects -------------------------------------------------------------
    def barrier(self) -> None:
        wait(self._comm().barrier())

    Barrier = barrier

    def bcast(self, obj: Any = None, root: int = 0) -> Any:
        return wait(self._comm().bcast(obj, self._root(root)))

    def gather(self, sendobj: Any, root: int = 0) -> list[Any] | None:
        return wait(self._comm().gather(sendobj, self._root(root)))

    def scatter(self, sendobj: Sequence[Any] | None = None, root: int = 0) -> Any:
        c = self._comm()
        r = self._root(root)
        if c.rank == r:
            items = list(sendobj) if sendobj is not None else [None] * c.size
            if len(items) != c.size:
                raise ValueError(f"scatter: expected {c.size} items, got {len(items)}")
            sendobj = items
        return wait(c.scatter(sendobj, r))

    def allgather(self, sendobj: Any) -> list[Any]:
        return wait(self._comm().allgather(sendobj))

    def alltoall(self, sendobj: Sequence[Any]) -> list[Any]:
        c = self._comm()
        items = list(sendobj) if sendobj is not None else [None] * c.size
        if len(items) != c.size:
            raise ValueError(f"alltoall: expected {c.size} items, got {len(items)}")
        return wait(c.alltoall(items))

    def reduce(self, sendobj: Any, op: Any = SUM, root: int = 0) -> Any:
        return wait(self._comm().reduce(sendobj, _op(op), self._root(root)))

    def allreduce(self, sendobj: Any, op: Any = SUM) -> Any:
        return wait(self._comm().allreduce(sendobj, _op(op)))

    def scan(self, sendobj: Any, op: Any = SUM) -> Any:
        from ..collectives.scan import scan

        return wait(scan(self._comm(), sendobj, _op(op), exclusive=False))

    def exscan(self, sendobj: Any, op: Any = SUM) -> Any:
        from ..collectives.scan import scan

        return wait(scan(self._comm(), sendobj, _op(op), exclusive=True))

    def _root(self, root: Any) -> int:
        c = self._comm()
        if not isinstance(root, (int, np.integer)) or isinstance(root, bool) or not 0 <= root < c.size:
            raise _err("ERR_ROOT", f"invalid root {root!r} (communicator of size {c.size})")
        return int(root)

    # nonblocking object collectives: done at once, as a completed request
    def ibarrier(self) -> Request:
        self.barrier()
        return Request()

    Ibarrier = ibarrier

    # --- collectives, buffers ---------------------------------------------------------------
    def Bcast(self, buf: Any, root: int = 0) -> None:  # noqa: N802
        c = self._comm()
        r = self._root(root)
        b = message(buf, f"rank {c.rank}: Bcast buffer")
        data = wait(c.bcast(b.pack() if c.rank == r else None, r))
        if c.rank != r:
            b.unpack(data, f"rank {c.rank}: Bcast")

    def Gather(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:  # noqa: N802
        c = self._comm()
        r = self._root(root)
        if c.rank == r:
            rv = vmessage(recvbuf, c.size, f"rank {c.rank}: Gather recvbuf")
            mine = rv.block(c.rank).pack() if is_in_place(sendbuf) else message(sendbuf, "Gather sendbuf").pack()
        else:
            mine = message(sendbuf, f"rank {c.rank}: Gather sendbuf").pack()
        blobs = wait(c.gather(mine, r))
        if c.rank == r:
            for i, blob in enumerate(blobs):
                if not (i == r and is_in_place(sendbuf)):
                    rv.block(i).unpack(blob, f"rank {c.rank}: Gather")

    Gatherv = Gather

    def Scatter(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:  # noqa: N802
        c = self._comm()
        r = self._root(root)
        blobs = None
        if c.rank == r:
            sv = vmessage(sendbuf, c.size, f"rank {c.rank}: Scatter sendbuf")
            blobs = [sv.block(i).pack() for i in range(c.size)]
        data = wait(c.scatter(blobs, r))
        if recvbuf is not None and not (c.rank == r and is_in_place(recvbuf)):
            message(recvbuf, f"rank {c.rank}: Scatter recvbuf").unpack(data, f"rank {c.rank}: Scatter")

    Scatterv = Scatter

    def Allgather(self, sendbuf: Any, recvbuf: Any) -> None:  # noqa: N802
        c = self._comm()
        rv = vmessage(recvbuf, c.size, f"rank {c.rank}: Allgather recvbuf")
        mine = rv.block(c.rank).pack() if is_in_place(sendbuf) else message(sendbuf, "Allgather sendbuf").pack()
        blobs = wait(c.allgather(mine))
        for i, blob in enumerate(blobs):
            rv.block(i).unpack(blob, f"rank {c.rank}: Allgather")

    Allgatherv = Allgather

    def Alltoall(self, sendbuf: Any, recvbuf: Any) -> None:  # noqa: N802
        c = self._comm()
        rv = vmessage(recvbuf, c.size, f"rank {c.rank}: Alltoall recvbuf")
        sv = rv if is_in_place(sendbuf) else vmessage(sendbuf, c.size, f"rank {c.rank}: Alltoall sendbuf")
        blobs = wait(c.alltoall([sv.block(i).pack() for i in range(c.size)]))
        for i, blob in enumerate(blobs):
            rv.block(i).unpack(blob, f"rank {c.rank}: Alltoall")

    Alltoallv = Alltoall

    def _typed_send(self, sendbuf: Any, recv: Buf | None, what: str) -> tuple[np.ndarray, Buf | None]:
        if is_in_place(sendbuf):
            if recv is None:
                raise ValueError(f"{what}: MPI.IN_PLACE needs a receive buffer")
            return recv.typed(), recv
        return message(sendbuf, what).typed(), recv

    def Reduce(self, sendbuf: Any, recvbuf: Any, op: Any = SUM, root: int = 0) -> None:  # noqa: N802
        c = self._comm()
        r = self._root(root)
        recv = message(recvbuf, f"rank {c.rank}: Reduce recvbuf") if c.rank == r and recvbuf is not None else None
        arr, _ = self._typed_send(sendbuf, recv, f"rank {c.rank}: Reduce sendbuf")
        result = wait(c.reduce(arr, _op(op), r))
        if c.rank == r and recv is not None:
            recv.store_typed(np.asarray(result))

    def Allreduce(self, sendbuf: Any, recvbuf: Any, op: Any = SUM) -> None:  # noqa: N802
        c = self._comm()
        recv = message(recvbuf, f"rank {c.rank}: Allreduce recvbuf")
        arr, _ = self._typed_send(sendbuf, recv, f"rank {c.rank}: Allreduce sendbuf")
        result = wait(c.allreduce(arr, _op(op)))
        recv.store_typed(np.asarray(result))

    def Reduce_scatter_block(self, sendbuf: Any, recvbuf: Any, op: Any = SUM) -> None:  # noqa: N802
        c = self._comm()
        recv = message(recvbuf, f"rank {c.rank}: Reduce_scatter_block recvbuf")
        if is_in_place(sendbuf):
            full = message(recvbuf[0] if isinstance(recvbuf, (list, tuple)) else recvbuf, "recvbuf").typed()
            n = full.size // c.size
        else:
            full = message(sendbuf, f"rank {c.rank}: Reduce_scatter_block sendbuf").typed()
            n = recv.count
        result = np.asarray(wait(c.allreduce(full, _op(op))))
        recv.count = n
        recv.store_typed(result[c.rank * n : (c.rank + 1) * n])

    def Reduce_scatter(  # noqa: N802
        self, sendbuf: Any, recvbuf: Any, recvcounts: Sequence[int] | None = None, op: Any = SUM
    ) -> None:
        c = self._comm()
        recv = message(recvbuf, f"rank {c.rank}: Reduce_scatter recvbuf")
        if is_in_place(sendbuf):
            full = message(recvbuf[0] if isinstance(recvbuf, (list, tuple)) else recvbuf, "recvbuf").typed()
        else:
            full = message(sendbuf, f"rank {c.rank}: Reduce_scatter sendbuf").typed()
        counts = list(recvcounts) if recvcounts is not None else wait(c.allgather(recv.count))
        result = np.asarray(wait(c.allreduce(full, _op(op))))
        start = sum(counts[: c.rank])
        recv.count = counts[c.rank]
        recv.store_typed(result[start : start + counts[c.rank]])

    def Scan(self, sendbuf: Any, recvbuf: Any, op: Any = SUM) -> None:  # noqa: N802
        self._scan(sendbuf, recvbuf, op, exclusive=False)

    def Exscan(self, sendbuf: Any, recvbuf: Any, op: Any = SUM) -> None:  # noqa: N802
        self._scan(sendbuf, recvbuf, op, exclusive=True)

    def _scan(self, sendbuf: Any, recvbuf: Any, op: Any, exclusive: bool) -> None:
        from ..collectives.scan import scan

        c = self._comm()
        recv = message(recvbuf, f"rank {c.rank}: Scan recvbuf")
        arr, _ = self._typed_send(sendbuf, recv, f"rank {c.rank}: Scan sendbuf")
        result = wait(scan(c, arr, _op(op), exclusive=exclusive))
        if result is not None:
            recv.store_typed(np.asarray(result))

    # nonblocking buffer collectives: complete before returning (a completed request)
    def Ibcast(self, buf: Any, root: int = 0) -> Request:  # noqa: N802
        self.Bcast(buf, root)
        return Request()

    def Iallreduce(self, sendbuf: Any, recvbuf: Any, op: Any = SUM) -> Request:  # noqa: N802
        self.Allreduce(sendbuf, recvbuf, op)
        return Request()

    def Ireduce(self, sendbuf: Any, recvbuf: Any, op: Any = SUM, root: int = 0) -> Request:  # noqa: N802
        self.Reduce(sendbuf, recvbuf, op, root)
        return Request()

    def Igather(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> Request:  # noqa: N802
        self.Gather(sendbuf, recvbuf, root)
        return Request()

    def Iscatter(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> Request:  # noqa: N802
        self.Scatter(sendbuf, recvbuf, root)
        return Request()

    def Iallgather(self, sendbuf: Any, recvbuf: Any) -> Request:  # noqa: N802
        self.Allgather(sendbuf, recvbuf)
        return Request()

    def Ialltoall(self, sendbuf: Any, recvbuf: Any) -> Request:  # noqa: N802
        self.Alltoall(sendbuf, recvbuf)
        return Request()


class _Completed(Request):
    """A request whose operation already finished, with its status and value."""

    __slots__ = ("_done_status", "_done_value")

    def __init__(self, status: Status, value: Any = None):
        super().__init__(None, None, proc_null=True)  # not null until waited for
        self._done_status, self._done_value = status, value

    def _complete(self, status: Status | None) -> Any:
        if self._null:
            return super()._complete(status)
        if status is not None:
            Status.__init__(status, self._done_status)
        self._proc_null, self._null = False, True
        return self._done_value

    def Get_status(self, status: Status | None = None) -> bool:  # noqa: N802
        if status is not None and not self._null:
            Status.__init__(status, self._done_status)
        return True


def _completed(status: Status, value: Any = None) -> Request:
    return _Completed(status, value)


def _group_comm(base: Any, world_ranks: list[int]) -> Intracomm:
    """A communicator of ``world_ranks`` made by its members alone: the first
    member learns every member's highest context id and hands out the next."""
    from ..collectives.tags import CREATE_GROUP
    from ..comm.communicator import SubComm

    me = base.rank
    if me not in world_ranks:
        return COMM_NULL
    leader = world_ranks[0]
    if me == leader:
        highs = [base._ctx_high] + [wait(base.recv(None, w, CREATE_GROUP)) for w in world_ranks[1:]]
        ctx = max(highs) + 1
        for w in world_ranks[1:]:
            wait(base.send(ctx, w, CREATE_GROUP))
    else:
        wait(base.send(base._ctx_high, leader, CREATE_GROUP))
        ctx = wait(base.recv(None, leader, CREATE_GROUP))
    base._ctx_high = ctx
    return Intracomm(SubComm(base, world_ranks, ctx))


def _predefined_copy(name: str, copy: bool) -> Comm:
    comm = _PREDEFINED[name]
    if not copy:
        return comm
    return Comm(None) if name == "COMM_NULL" else Intracomm(comm)


def _op(op: Any) -> Op:
    if isinstance(op, Op):
        return op
    from ..comm.ops import as_op

    return as_op(op)


class _RankBound(Intracomm):
    """A predefined communicator (COMM_WORLD, COMM_SELF): one object for the
    program, which means the running rank's own communicator."""

    _key = ""

    def __init__(self, name: str):
        self._name = name
        self._info = None

    @property
    def _buffer(self) -> Any:  # type: ignore[override]
        return current().objects.get(f"{self._key}-buffer")

    @_buffer.setter
    def _buffer(self, value: Any) -> None:
        current().objects[f"{self._key}-buffer"] = value

    @property  # type: ignore[override]
    def _c(self) -> Any:
        return current().objects[self._key]

    def Free(self) -> None:  # noqa: N802
        raise _err("ERR_COMM", f"MPI_Comm_free: {self._name} cannot be freed")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Comm):
            return NotImplemented
        return self._c is other._c

    def __hash__(self) -> int:
        return hash(self._key)


class WorldComm(_RankBound):
    _key = "world"


class SelfComm(_RankBound):
    _key = "self"


class _NullComm(Comm):
    def __init__(self) -> None:
        super().__init__(None, "MPI_COMM_NULL")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Comm):
            return NotImplemented
        return not other


COMM_NULL = _NullComm()
COMM_WORLD = WorldComm("MPI_COMM_WORLD")
COMM_SELF = SelfComm("MPI_COMM_SELF")
_PREDEFINED: dict[str, Comm] = {"COMM_WORLD": COMM_WORLD, "COMM_SELF": COMM_SELF, "COMM_NULL": COMM_NULL}
_ = (IN_PLACE, Unsupported)  # re-exported by the MPI module
