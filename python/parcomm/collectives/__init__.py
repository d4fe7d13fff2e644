"""Collective operations written once as rank programs over point-to-point.

Each takes the communicator first and only awaits its point-to-point
methods, so it runs under every backend. The Communicator's own methods
(``await comm.allreduce(x, op=MPI.SUM)``) call the functions of
:mod:`parcomm.collectives.api`, which choose an algorithm by MPICH's rules
unless ``algorithm=`` names one. The named algorithms (``alltoall_a``,
``bcast_binomial``, ...) stay callable as rank programs of their own, as the
studies use them. ``nbytes`` sets the simulated size when payloads are symbolic.
"""

from .allgather import ALLGATHER_ALGORITHMS, allgather_recursive_doubling, allgather_ring
from .alltoall import ALLTOALL_ALGORITHMS, alltoall_a, alltoall_b, alltoall_pairwise, alltoall_scattered

# The collectives by their mpi4py names (these shadow the submodules of the
# same name as attributes: `from parcomm.collectives import bcast` is the function).
from .api import (  # noqa: E402
    ALGORITHMS,
    Allgather,
    Allreduce,
    Alltoall,
    Bcast,
    Gather,
    Reduce,
    Scatter,
    allgather,
    allreduce,
    alltoall,
    bcast,
    gather,
    reduce,
    scatter,
)
from .barrier import barrier
from .bcast import BCAST_ALGORITHMS, bcast_binomial, bcast_scatter_allgather
from .gather import GATHER_ALGORITHMS, gather_binomial, gather_linear
from .reduce import (
    ALLREDUCE_ALGORITHMS,
    REDUCE_ALGORITHMS,
    allreduce_recursive_doubling,
    allreduce_reduce_bcast,
    allreduce_ring,
    reduce_binomial,
)
from .scatter import SCATTER_ALGORITHMS, scatter_binomial, scatter_linear

__all__ = [
    "ALGORITHMS",
    "ALLGATHER_ALGORITHMS",
    "ALLREDUCE_ALGORITHMS",
    "ALLTOALL_ALGORITHMS",
    "BCAST_ALGORITHMS",
    "GATHER_ALGORITHMS",
    "REDUCE_ALGORITHMS",
    "SCATTER_ALGORITHMS",
    "Allgather",
    "Allreduce",
    "Alltoall",
    "Bcast",
    "Gather",
    "Reduce",
    "Scatter",
    "allgather",
    "allgather_recursive_doubling",
    "allgather_ring",
    "allreduce",
    "allreduce_recursive_doubling",
    "allreduce_reduce_bcast",
    "allreduce_ring",
    "alltoall",
    "alltoall_a",
    "alltoall_b",
    "alltoall_pairwise",
    "alltoall_scattered",
    "barrier",
    "bcast",
    "bcast_binomial",
    "bcast_scatter_allgather",
    "gather",
    "gather_binomial",
    "gather_linear",
    "reduce",
    "reduce_binomial",
    "scatter",
    "scatter_binomial",
    "scatter_linear",
]

# The Communicator's collective methods (comm.bcast(), comm.barrier(), ...) and the named programs
# of ``--program`` run these functions; the comm layer below learns them here, never by import.
from ..comm.communicator import register_collectives  # noqa: E402

register_collectives({name: globals()[name] for name in __all__ if callable(globals()[name])})
