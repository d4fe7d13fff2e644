"""Allgather of Python objects: recursive doubling (power-of-two sizes) or a
ring (any size). ``nbytes`` is the simulated size of one rank's item."""

from __future__ import annotations

from typing import Any

from ..comm.base import payload_nbytes
from .tags import ALLGATHER_OBJ


async def allgather_ring(comm: Any, data: Any, nbytes: int | None = None) -> list[Any]:
    r, p = comm.rank, comm.size
    out: list[Any] = [None] * p
    out[r] = data
    left, right = (r - 1) % p, (r + 1) % p
    have = r
    for _ in range(p - 1):
        item = out[have]
        have = (have - 1) % p
        out[have] = await comm.sendrecv(
            item, dest=right, sendtag=ALLGATHER_OBJ, source=left, recvtag=ALLGATHER_OBJ, nbytes=nbytes
        )
    return out


async def allgather_recursive_doubling(comm: Any, data: Any, nbytes: int | None = None) -> list[Any]:
    r, p = comm.rank, comm.size
    if p & (p - 1):
        raise ValueError(f"allgather by recursive doubling needs a power-of-two size, got {p}; use 'ring'")
    have = {r: data}
    mask = 1
    while mask < p:
        peer = r ^ mask
        size = len(have) * nbytes if nbytes is not None else payload_nbytes(have)
        got = await comm.sendrecv(
            have, dest=peer, sendtag=ALLGATHER_OBJ, source=peer, recvtag=ALLGATHER_OBJ, nbytes=size
        )
        have.update(got)
        mask <<= 1
    return [have[i] for i in range(p)]


ALLGATHER_ALGORITHMS = {"ring": allgather_ring, "recursive_doubling": allgather_recursive_doubling}
