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
