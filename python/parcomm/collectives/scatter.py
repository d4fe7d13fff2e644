"""Scatter of Python objects: binomial tree (MPICH's choice) or linear.

In the binomial tree the root hands each subtree's items to its top rank,
which passes the rest on; ``nbytes`` is the simulated size of one item.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..comm.base import payload_nbytes
from .tags import SCATTER_OBJ


def _check(comm: Any, items: Sequence[Any] | None, root: int) -> list[Any]:
    if comm.rank != root:
        return []
    if items is None or not hasattr(items, "__len__"):
        raise ValueError(f"scatter at the root needs a sequence of {comm.size} items, got {items!r}"[:200])
    if len(items) != comm.size:
        raise ValueError(f"scatter needs one item per rank ({comm.size}), got {len(items)}")
    return list(items)


async def scatter_binomial(
    comm: Any, items: Sequence[Any] | None = None, root: int = 0, nbytes: int | None = None
) -> Any:
    r, p = comm.rank, comm.size
    rel = (r - root) % p
    have: dict[int, Any] = {}
    if r == root:
        have = dict(enumerate(_check(comm, items, root)))
        have = {(k - root) % p: v for k, v in have.items()}  # by relative rank
    mask = 1
    while mask < p:
        if rel & mask:
            have = await comm.recv(source=(rel - mask + root) % p, tag=SCATTER_OBJ)
            break
        mask <<= 1
    mask >>= 1
    while mask > 0:
        if rel + mask < p:
            sub = {j: have.pop(j) for j in range(rel + mask, min(rel + 2 * mask, p))}
            size = len(sub) * nbytes if nbytes is not None else payload_nbytes(sub)
            await comm.send(sub, dest=(rel + mask + root) % p, tag=SCATTER_OBJ, nbytes=size)
        mask >>= 1
    return have[rel]


async def scatter_linear(
    comm: Any, items: Sequence[Any] | None = None, root: int = 0, nbytes: int | None = None
) -> Any:
    r, p = comm.rank, comm.size
    if r != root:
        return await comm.recv(source=root, tag=SCATTER_OBJ)
    seq = _check(comm, items, root)
    reqs = [comm.isend(seq[d], dest=d, tag=SCATTER_OBJ, nbytes=nbytes) for d in range(p) if d != root]
    await comm.waitall(reqs)
    return seq[root]


SCATTER_ALGORITHMS = {"binomial": scatter_binomial, "linear": scatter_linear}
