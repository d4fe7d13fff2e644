"""Linear gather: every rank sends its block straight to the root, which has
posted all its receives. With many ranks and a shallow switch port in front
of the root this is the classic TCP incast pattern."""

from __future__ import annotations

from typing import Any

from .tags import GATHER


async def gather_linear(comm: Any, data: Any = None, root: int = 0, nbytes: int | None = None) -> list[Any] | None:
    r, p = comm.rank, comm.size
    if r != root:
        await comm.send(data, dest=root, tag=GATHER, nbytes=nbytes)
        return None
    sources = [s for s in range(p) if s != root]
    values = await comm.waitall([comm.irecv(source=s, tag=GATHER) for s in sources])
    out: list[Any] = [None] * p
    out[root] = data
    for s, v in zip(sources, values):
        out[s] = v
    return out


async def gather_binomial(comm: Any, data: Any = None, root: int = 0, nbytes: int | None = None) -> list[Any] | None:
    """Binomial tree (MPICH's gather): each rank collects its subtree's items
    and passes them to its parent in one message. ``nbytes`` is the simulated
    size of one item."""
    from ..comm.base import payload_nbytes
    from .tags import GATHER_TREE

    r, p = comm.rank, comm.size
    rel = (r - root) % p
    have = {r: data}
    mask = 1
    while mask < p:
        if rel & mask:
            size = len(have) * nbytes if nbytes is not None else payload_nbytes(have)
            await comm.send(have, dest=(rel - mask + root) % p, tag=GATHER_TREE, nbytes=size)
            return None
        if rel + mask < p:
            have.update(await comm.recv(source=(rel + mask + root) % p, tag=GATHER_TREE))
        mask <<= 1
    return [have[i] for i in range(p)]


GATHER_ALGORITHMS = {"binomial": gather_binomial, "linear": gather_linear}
