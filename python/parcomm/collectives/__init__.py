"""Collective operations written once as rank programs over the Communicator API.

Each takes the communicator first and only awaits its methods, so it runs under
every backend. ``nbytes`` sets the simulated size when payloads are symbolic.
"""

from .alltoall import ALLTOALL_ALGORITHMS, alltoall_a, alltoall_b
from .barrier import barrier
from .gather import gather_linear
from .bcast import BCAST_ALGORITHMS, bcast_binomial, bcast_scatter_allgather

__all__ = [
    "ALLTOALL_ALGORITHMS",
    "BCAST_ALGORITHMS",
    "alltoall_a",
    "alltoall_b",
    "barrier",
    "bcast_binomial",
    "bcast_scatter_allgather",
    "gather_linear",
]
