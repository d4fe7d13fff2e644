"""Reductions written once over point-to-point: binomial reduce, and
allreduce by recursive doubling, by a ring (reduce-scatter then allgather,
for numpy arrays) or as reduce + broadcast.

Contributions are combined in rank order (``op(lower, higher)``), so
non-commutative operations (list concatenation by ``SUM``, user ops) give
the same answer under every backend and every algorithm but the ring, which
needs a commutative op. ``nbytes`` is the simulated size of one
contribution (default: its real size).
"""

from __future__ import annotations

from typing import Any

from ..comm.base import payload_nbytes
from ..comm.ops import Op
from .bcast import bcast_binomial
from .tags import ALLREDUCE, REDUCE


def _size(obj: Any, nbytes: int | None) -> int:
    return payload_nbytes(obj) if nbytes is None else nbytes


async def reduce_binomial(comm: Any, data: Any, op: Op, root: int = 0, nbytes: int | None = None) -> Any:
    """Binomial tree towards rank 0 (each rank combines its children's ranges
    in order), then rank 0 hands the result to ``root`` if that is another
    rank (MPICH's way for non-commutative ops)."""
    r, p = comm.rank, comm.size
    acc = data
    mask = 1
    while mask < p:
        if r & mask:
            await comm.send(acc, dest=r - mask, tag=REDUCE, nbytes=_size(acc, nbytes))
            break
        if r + mask < p:
            got = await comm.recv(source=r + mask, tag=REDUCE)
            acc = op(acc, got)
        mask <<= 1
    if root == 0:
        return acc if r == 0 else None
    if r == 0:
        await comm.send(acc, dest=root, tag=REDUCE, nbytes=_size(acc, nbytes))
        return None
    if r == root:
        return await comm.recv(source=0, tag=REDUCE)
    return None


async def allreduce_recursive_doubling(comm: Any, data: Any, op: Op, nbytes: int | None = None) -> Any:
    """MPICH's short-message allreduce: ranks beyond the largest power of two
    fold into a partner first, log2 steps of pairwise exchange, then the
    result goes back to the folded ranks."""
    r, p = comm.rank, comm.size
    pof2 = 1
    while pof2 * 2 <= p:
        pof2 *= 2
    rem = p - pof2
    acc = data
    if r < 2 * rem:
        if r % 2 == 0:
            await comm.send(acc, dest=r + 1, tag=ALLREDUCE, nbytes=_size(acc, nbytes))
            newrank = -1
        else:
            got = await comm.recv(source=r - 1, tag=ALLREDUCE)
            acc = op(got, acc)
            newrank = r // 2
    else:
        newrank = r - rem
    if newrank != -1:
        mask = 1
        while mask < pof2:
            newdst = newrank ^ mask
            dst = newdst * 2 + 1 if newdst < rem else newdst + rem
            got = await comm.sendrecv(
                acc, dest=dst, sendtag=ALLREDUCE, source=dst, recvtag=ALLREDUCE, nbytes=_size(acc, nbytes)
            )
            acc = op(got, acc) if dst < r else op(acc, got)
            mask <<= 1
    if r < 2 * rem:
        if r % 2:
            await comm.send(acc, dest=r - 1, tag=ALLREDUCE, nbytes=_size(acc, nbytes))
        else:
            acc = await comm.recv(source=r + 1, tag=ALLREDUCE)
    return acc


async def allreduce_ring(comm: Any, data: Any, op: Op, nbytes: int | None = None) -> Any:
    """Ring reduce-scatter then ring allgather on a numpy array cut into P
    pieces: each rank sends about 2m bytes whatever P (the bandwidth-optimal
    choice for large arrays; needs a commutative op)."""
    import numpy as np

    if not isinstance(data, np.ndarray):
        raise ValueError("allreduce algorithm 'ring' works on numpy arrays; use 'recursive_doubling' for objects")
    if not op.commute:
        raise ValueError(f"allreduce algorithm 'ring' needs a commutative op, {op!r} is not")
    r, p = comm.rank, comm.size
    if p == 1:
        return data.copy()
    flat = np.array(data, copy=True).reshape(-1)
    pieces = [c.copy() for c in np.array_split(flat, p)]
    scale = (nbytes / max(1, data.nbytes)) if nbytes is not None else None

    def size(piece: Any) -> int | None:
        return None if scale is None else int(piece.nbytes * scale)

    left, right = (r - 1) % p, (r + 1) % p
    for s in range(p - 1):
        out_i, in_i = (r - s) % p, (r - s - 1) % p
        got = await comm.sendrecv(
            pieces[out_i], dest=right, sendtag=ALLREDUCE, source=left, recvtag=ALLREDUCE, nbytes=size(pieces[out_i])
        )
        pieces[in_i] = op(got, pieces[in_i])
    for s in range(p - 1):
        out_i, in_i = (r + 1 - s) % p, (r - s) % p
        pieces[in_i] = await comm.sendrecv(
            pieces[out_i], dest=right, sendtag=ALLREDUCE, source=left, recvtag=ALLREDUCE, nbytes=size(pieces[out_i])
        )
    return np.concatenate(pieces).reshape(data.shape)


async def allreduce_reduce_bcast(comm: Any, data: Any, op: Op, nbytes: int | None = None) -> Any:
    """Binomial reduce to rank 0, then binomial broadcast."""
    acc = await reduce_binomial(comm, data, op, 0, nbytes)
    return await bcast_binomial(comm, acc, 0, nbytes=nbytes)


REDUCE_ALGORITHMS = {"binomial": reduce_binomial}
ALLREDUCE_ALGORITHMS = {
    "recursive_doubling": allreduce_recursive_doubling,
    "ring": allreduce_ring,
    "reduce_bcast": allreduce_reduce_bcast,
}
