"""Broadcasts: binomial tree, and van de Geijn's scatter + ring allgather
(Barnett et al., "Interprocessor collective communication library", 1994),
which moves about 2m bytes per rank instead of m·log2 P for large m.

Payloads are symbolic when ``data`` is None (only ``nbytes`` is simulated);
bytes-like data is really split and reassembled.
"""

from __future__ import annotations

from typing import Any

from ..comm.base import payload_nbytes
from .tags import ALLGATHER, BCAST, SCATTER


def _check_root(comm: Any, root: int) -> None:
    if not isinstance(root, int) or not 0 <= root < comm.size:
        raise ValueError(f"bcast root {root!r} is not a rank of this communicator (size {comm.size})")


async def bcast_binomial(comm: Any, data: Any = None, root: int = 0, nbytes: int | None = None) -> Any:
    _check_root(comm, root)
    r, p = comm.rank, comm.size
    rel = (r - root) % p
    size = payload_nbytes(data) if nbytes is None else nbytes
    # Receive from the parent: the rank that differs in our lowest set bit.
    mask = 1
    while mask < p:
        if rel & mask:
            data = await comm.recv(source=(rel - mask + root) % p, tag=BCAST)
            if nbytes is None:  # forward what arrived at its own size
                size = payload_nbytes(data)
            break
        mask <<= 1
    # Send to children below that bit, largest subtree first.
    mask >>= 1
    while mask > 0:
        if rel + mask < p:
            await comm.send(data, dest=(rel + mask + root) % p, tag=BCAST, nbytes=size)
        mask >>= 1
    return data


def _chunks(total: int, p: int) -> list[tuple[int, int]]:
    """(offset, length) of each rank's piece; the first total % p get one more byte."""
    base, extra = divmod(total, p)
    out, off = [], 0
    for i in range(p):
        n = base + (1 if i < extra else 0)
        out.append((off, n))
        off += n
    return out


async def bcast_scatter_allgather(comm: Any, data: Any = None, root: int = 0, nbytes: int | None = None) -> Any:
    _check_root(comm, root)
    r, p = comm.rank, comm.size
    rel = (r - root) % p
    if r == root:
        total = payload_nbytes(data) if nbytes is None else nbytes
    else:
        total = 0
    # Everyone learns the size first (a symbolic run knows it from nbytes).
    if nbytes is None:
        total = await bcast_binomial(comm, total, root, nbytes=8)
    else:
        total = nbytes
    chunks = _chunks(total, p)
    real = data is not None and isinstance(data, (bytes, bytearray, memoryview))
    pieces: list[Any] = [None] * p
    if r == root:
        for i, (off, n) in enumerate(chunks):
            pieces[i] = bytes(data[off : off + n]) if real else None

    # Binomial scatter on relative ranks: a subtree rooted at rel owns pieces rel..rel+mask-1.
    mask = 1
    while mask < p:
        if rel & mask:
            got = await comm.recv(source=(rel - mask + root) % p, tag=SCATTER)
            for j, piece in got.items():
                pieces[j] = piece
            break
        mask <<= 1
    mask >>= 1
    while mask > 0:
        if rel + mask < p:
            sub = range(rel + mask, min(rel + 2 * mask, p))
            size = sum(chunks[j][1] for j in sub)
            await comm.send({j: pieces[j] for j in sub}, dest=(rel + mask + root) % p, tag=SCATTER, nbytes=size)
        mask >>= 1

    # Ring allgather: in step s, pass on the piece received in step s-1.
    left, right = (r - 1) % p, (r + 1) % p
    have = rel
    for _ in range(p - 1):
        req = comm.irecv(source=left, tag=ALLGATHER)
        await comm.send((have, pieces[have]), dest=right, tag=ALLGATHER, nbytes=chunks[have][1])
        have, piece = await comm.wait(req)
        pieces[have] = piece
    if all(isinstance(x, bytes) for x in pieces):
        return b"".join(pieces)
    return data if r == root else None


BCAST_ALGORITHMS = {"binomial": bcast_binomial, "scatter_allgather": bcast_scatter_allgather}
