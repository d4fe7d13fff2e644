"""One Communicator API (mpi4py names, ``async def`` rank programs), several backends.

A rank program is ``async def program(comm, *args)``; it may only await the
communicator's own methods (``send``, ``recv``, ``wait``, ``waitall``,
``barrier``, ``compute``, ``sleep``), so the same program runs under every
backend: :class:`SimComm` (simulated), :class:`SocketComm` (a TCP mesh on
asyncio; :func:`run_local`, :func:`run_rank`) and :class:`MPIComm` (mpi4py +
MPICH; :func:`run_mpi`). Importing this package does not initialize MPI.
"""

from .base import ANY_SOURCE, ANY_TAG, CommError, DeadlockError, Status
from .aio import CommTimeout, ProgramError, RankResult, RunResult, resolve_program
from .mpi import MPIComm, run_mpi
from .sim import SimComm, SimResult, run_sim
from .launch import run_local, run_rank
from .socket import SocketComm

__all__ = [
    "ANY_SOURCE",
    "ANY_TAG",
    "CommError",
    "CommTimeout",
    "DeadlockError",
    "MPIComm",
    "ProgramError",
    "RankResult",
    "RunResult",
    "SimComm",
    "SimResult",
    "SocketComm",
    "Status",
    "resolve_program",
    "run_local",
    "run_mpi",
    "run_rank",
    "run_sim",
]
