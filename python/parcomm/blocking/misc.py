"""The module-level calls of ``mpi4py.MPI`` that are not about a communicator:
time, processor name, init/finalize, error handlers, Abort, ``Info``, and the
clear error for what parcomm does not implement."""

from __future__ import annotations

import socket
from typing import Any, NoReturn

from .bridge import current, wait
from .errors import Unsupported

__all__ = ["AbortRun", "Wtime", "Wtick", "Get_processor_name", "Info", "unsupported_attribute", "UNSUPPORTED"]


class AbortRun(BaseException):
    """``comm.Abort(errorcode)``: ends the whole run with exit status ``errorcode``
    (a BaseException, so a program's ``except Exception`` does not swallow it)."""

    def __init__(self, errorcode: int, rank: int):
        self.errorcode, self.rank = errorcode, rank
        super().__init__(f"rank {rank} called MPI_Abort with error code {errorcode}")


def Wtime() -> float:  # noqa: N802 - mpi4py's name
    """Seconds: simulated under the simulator, wall-clock for real runs."""
    ctx = current()
    if ctx.cpu_scale is not None:
        from .bridge import charge

        charge()  # the compute done so far is part of "now"
    return ctx.comm.wtime()


def Wtick() -> float:  # noqa: N802
    """The clock's resolution: the simulator counts nanoseconds."""
    return 1e-9


def Get_processor_name() -> str:  # noqa: N802
    """The simulated host's name (``host<i>``); the machine's name for real runs."""
    ctx = current()
    host = ctx.objects.get("host_name")
    return host if host else socket.gethostname()


def Pcontrol(level: int) -> None:  # noqa: N802
    """Profiling control: nothing to do."""


class Errhandler:
    def __init__(self, name: str):
        self.name = name

    def Free(self) -> None:  # noqa: N802
        """Predefined handlers are not freed."""

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Errhandler: {self.name}>"


ERRORS_ARE_FATAL = Errhandler("ERRORS_ARE_FATAL")
ERRORS_RETURN = Errhandler("ERRORS_RETURN")
ERRORS_ABORT = Errhandler("ERRORS_ABORT")
ERRHANDLER_NULL = Errhandler("ERRHANDLER_NULL")

# What is not implemented, and the part of MPI it belongs to.
UNSUPPORTED = {
    "Win": "one-sided communication (MPI_Win)",
    "File": "MPI-IO (MPI_File)",
    "Open_port": "dynamic process management",
    "Close_port": "dynamic process management",
    "Lookup_name": "dynamic process management",
    "Publish_name": "dynamic process management",
    "Unpublish_name": "dynamic process management",
    "Intercomm": "intercommunicators",
    "Session": "MPI sessions",
    "Spawn": "dynamic process management (spawn)",
    "Spawn_multiple": "dynamic process management (spawn)",
    "Accept": "dynamic process management",
    "Connect": "dynamic process management",
    "Join": "dynamic process management",
    "Get_parent": "dynamic process management",
    "Create_intercomm": "intercommunicators",
    "Register_datarep": "MPI-IO",
    "Create_dist_graph": "distributed graph topologies",
    "Create_dist_graph_adjacent": "distributed graph topologies",
    "Neighbor_allgather": "neighborhood collectives",
    "Neighbor_alltoall": "neighborhood collectives",
}


def unsupported_attribute(call: str, name: str) -> NoReturn:
    why = UNSUPPORTED.get(name)
    if why is not None:
        raise Unsupported(f"MPI.{call}", why)
    raise AttributeError(f"{call}: parcomm's mpi4py has no attribute {name!r}")


def sleep_rank(seconds: float) -> None:
    """Idle this rank (simulated seconds under the simulator)."""
    wait(current().comm.sleep(float(seconds)))


class Info(dict):
    """``MPI.Info``: string keys and values (accepted, and ignored by every call)."""

    @classmethod
    def Create(cls, items: Any = None) -> Info:  # noqa: N802
        return cls(items or {})

    def Set(self, key: str, value: str) -> None:  # noqa: N802
        self[str(key)] = str(value)

    def Get(self, key: str) -> str | None:  # noqa: N802
        return self.get(key)

    def Delete(self, key: str) -> None:  # noqa: N802
        del self[key]

    def Get_nkeys(self) -> int:  # noqa: N802
        return len(self)

    def Get_nthkey(self, n: int) -> str:  # noqa: N802
        return list(self)[n]

    def Dup(self) -> Info:  # noqa: N802
        return Info(self)

    def Free(self) -> None:  # noqa: N802
        self.clear()
