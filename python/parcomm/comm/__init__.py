"""One Communicator API (mpi4py names, ``async def`` rank programs), several backends.

A rank program is ``async def program(comm, *args)``; it may only await the
communicator's own methods (``send``, ``recv``, ``wait``, ``waitall``,
``barrier``, ``compute``, ``sleep``), so the same program runs under every
backend: :class:`SimComm` today, MPI and asyncio sockets next.
"""

from .base import ANY_SOURCE, ANY_TAG, CommError, DeadlockError, Status
from .sim import SimComm, SimResult, run_sim

__all__ = [
    "ANY_SOURCE",
    "ANY_TAG",
    "CommError",
    "DeadlockError",
    "SimComm",
    "SimResult",
    "Status",
    "run_sim",
]
