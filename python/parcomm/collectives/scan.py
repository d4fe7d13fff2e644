"""Inclusive and exclusive prefix reductions (MPI_Scan, MPI_Exscan).

A linear chain, as MPICH's default for small communicators is simple too:
rank r waits for the prefix of ranks 0..r-1 from r-1, combines its own
contribution after it (``op(prefix, mine)``: rank order, so a
non-commutative op gives MPI's answer) and passes the new prefix to r+1.
P-1 messages, P-1 steps.
"""

from __future__ import annotations

from typing import Any

from ..comm.ops import as_op
from .tags import SCAN


async def scan(comm: Any, sendobj: Any, op: Any, exclusive: bool = False) -> Any:
    """The reduction of ranks 0..r (``exclusive``: 0..r-1, None at rank 0) at rank r."""
    op = as_op(op, "scan op")
    rank, size = comm.rank, comm.size
    before = None
    if rank > 0:
        before = await comm.recv(None, rank - 1, SCAN)
    upto = sendobj if before is None else op(before, sendobj)
    if rank + 1 < size:
        await comm.send(upto, rank + 1, SCAN)
    return before if exclusive else upto
