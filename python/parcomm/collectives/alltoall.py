"""Alltoall algorithms A and B of seed 001 (Nomura & Ishikawa), Figs. 6 and 7.

Both pair rank r with r XOR i in phase i = 1..P-1, so P must be a power of two
(the paper assumes it too, §4). The local copy is omitted as in the paper.

A (Fig. 6): post every receive, send to each partner in turn, wait for all.
B (Fig. 7): per phase, receive, send, wait — one partner at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .tags import ALLTOALL


def _check(comm: Any, blocks: Sequence[Any] | None) -> None:
    p = comm.size
    if p & (p - 1):
        raise ValueError(f"alltoall A/B pair ranks by XOR and need a power-of-two size, got {p}")
    if blocks is not None and len(blocks) != p:
        raise ValueError(f"alltoall needs one block per rank ({p}), got {len(blocks)}")


async def alltoall_a(comm: Any, blocks: Sequence[Any] | None = None, nbytes: int | None = None) -> list[Any]:
    """Returns the blocks received, indexed by source (own block kept)."""
    _check(comm, blocks)
    r, p = comm.rank, comm.size
    out: list[Any] = [None] * p
    out[r] = blocks[r] if blocks is not None else None
    reqs = [comm.irecv(source=r ^ i, tag=ALLTOALL) for i in range(1, p)]
    for i in range(1, p):
        await comm.send(blocks[r ^ i] if blocks is not None else None, dest=r ^ i, tag=ALLTOALL, nbytes=nbytes)
    for i, v in zip(range(1, p), await comm.waitall(reqs)):
        out[r ^ i] = v
    return out


async def alltoall_b(comm: Any, blocks: Sequence[Any] | None = None, nbytes: int | None = None) -> list[Any]:
    _check(comm, blocks)
    r, p = comm.rank, comm.size
    out: list[Any] = [None] * p
    out[r] = blocks[r] if blocks is not None else None
    for i in range(1, p):
        peer = r ^ i
        req = comm.irecv(source=peer, tag=ALLTOALL)
        await comm.send(blocks[peer] if blocks is not None else None, dest=peer, tag=ALLTOALL, nbytes=nbytes)
        out[peer] = await comm.wait(req)
    return out


ALLTOALL_ALGORITHMS = {"A": alltoall_a, "B": alltoall_b}


def _check_any(comm: Any, blocks: Sequence[Any] | None) -> None:
    if blocks is None or not hasattr(blocks, "__len__") or len(blocks) != comm.size:
        got = len(blocks) if blocks is not None and hasattr(blocks, "__len__") else repr(blocks)[:60]
        raise ValueError(f"alltoall needs one item per rank ({comm.size}), got {got}")


async def alltoall_scattered(comm: Any, blocks: Sequence[Any], nbytes: int | None = None) -> list[Any]:
    """MPICH's medium-message alltoall: post every receive and every send at
    once, then wait for all (any number of ranks)."""
    _check_any(comm, blocks)
    r, p = comm.rank, comm.size
    out: list[Any] = [None] * p
    out[r] = blocks[r]
    order = [(r + i) % p for i in range(1, p)]
    rreqs = [comm.irecv(source=(r - i) % p, tag=ALLTOALL) for i in range(1, p)]
    sreqs = [comm.isend(blocks[d], dest=d, tag=ALLTOALL, nbytes=nbytes) for d in order]
    got = await comm.waitall(rreqs + sreqs)
    for i, v in zip(range(1, p), got):
        out[(r - i) % p] = v
    return out


async def alltoall_pairwise(comm: Any, blocks: Sequence[Any], nbytes: int | None = None) -> list[Any]:
    """MPICH's long-message alltoall: P-1 steps of one exchange each, with
    partner r XOR i for power-of-two sizes, else send to r+i, receive from r-i."""
    _check_any(comm, blocks)
    r, p = comm.rank, comm.size
    out: list[Any] = [None] * p
    out[r] = blocks[r]
    pow2 = not (p & (p - 1))
    for i in range(1, p):
        dst, src = (r ^ i, r ^ i) if pow2 else ((r + i) % p, (r - i) % p)
        out[src] = await comm.sendrecv(
            blocks[dst], dest=dst, sendtag=ALLTOALL, source=src, recvtag=ALLTOALL, nbytes=nbytes
        )
    return out
