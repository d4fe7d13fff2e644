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

from ..result import Result
from .aio import CommTimeout, ProgramError, RankResult, resolve_program
from .base import ANY_SOURCE, ANY_TAG, CommError, DeadlockError, Status
from .communicator import Communicator, Request
from .launch import run_local, run_rank
from .mpi import MPIComm, run_mpi
from .ops import MAX, MAXLOC, MIN, MINLOC, MPI, PROD, SUM, Op
from .sim import SimComm, run_sim
from .socket import SocketComm

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
