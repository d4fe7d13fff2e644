"""One Communicator (mpi4py's names and argument order, ``async def`` rank
programs), several backends.

A rank program is ``async def program(comm, *args)``; it may only await the
communicator's own methods (point-to-point ``send/recv/isend/irecv/sendrecv``,
``wait/waitall``, the collectives ``barrier/bcast/reduce/allreduce/scatter/
gather/allgather/alltoall``, their uppercase numpy-buffer forms, ``compute``,
``sleep``), so the same program runs under every backend: :class:`SimComm`
(simulated), :class:`SocketComm` (a TCP mesh on asyncio; :func:`run_local`,
:func:`run_rank`) and :class:`MPIComm` (mpi4py + MPICH; :func:`run_mpi`).
All three are :class:`Communicator` subclasses: everything above point-to-point is
written once (:mod:`parcomm.comm.communicator`, :mod:`parcomm.collectives`).
``MPI.SUM``, ``MPI.MAX``, ... are the reduction ops. Importing this package
does not initialize MPI.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .base import ANY_SOURCE, ANY_TAG, CommError, DeadlockError, Status
from .communicator import Communicator, Request
from .ops import MAX, MAXLOC, MIN, MINLOC, MPI, PROD, SUM, Op

if TYPE_CHECKING:
    from ..result import Result
    from .aio import CommTimeout, ProgramError, RankResult, resolve_program
    from .launch import run_local, run_rank
    from .mpi import MPIComm, run_mpi
    from .sim import SimComm, run_sim
    from .socket import SocketComm

#: The backends load on first use: a process that only needs the Communicator's base
#: (``parcomm.collectives`` registering itself, a ``parcomm bcast`` node) skips asyncio's
#: event loop machinery, the socket mesh and MPI's module (~40 ms of CPU per process).
_LAZY = {
    "Result": "..result",
    "CommTimeout": ".aio",
    "ProgramError": ".aio",
    "RankResult": ".aio",
    "resolve_program": ".aio",
    "run_local": ".launch",
    "run_rank": ".launch",
    "MPIComm": ".mpi",
    "run_mpi": ".mpi",
    "SimComm": ".sim",
    "run_sim": ".sim",
    "SocketComm": ".socket",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # once: later lookups are plain attribute reads
    return value


__all__ = [
    "ANY_SOURCE",
    "Communicator",
    "MAX",
    "MAXLOC",
    "MIN",
    "MINLOC",
    "MPI",
    "Op",
    "PROD",
    "Request",
    "SUM",
    "ANY_TAG",
    "CommError",
    "CommTimeout",
    "DeadlockError",
    "MPIComm",
    "ProgramError",
    "RankResult",
    "Result",
    "SimComm",
    "SocketComm",
    "Status",
    "resolve_program",
    "run_local",
    "run_mpi",
    "run_rank",
    "run_sim",
]
