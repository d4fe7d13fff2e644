"""Dissemination barrier (Hensgen, Finkel & Manber 1988): ceil(log2 P) rounds;
in round k rank r signals r + 2^k and waits for r - 2^k. Works for any P."""

from __future__ import annotations

from typing import Any

from .tags import BARRIER


async def barrier(comm: Any, tag: int = BARRIER) -> None:
    r, p = comm.rank, comm.size
    k = 1
    while k < p:
        req = comm.irecv(source=(r - k) % p, tag=tag)
        await comm.send(None, dest=(r + k) % p, tag=tag, nbytes=0)
        await comm.wait(req)
        k <<= 1
