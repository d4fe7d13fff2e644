"""The collectives as the Communicator offers them: one function per
collective, an ``algorithm=`` to choose, and MPICH's rules as the default.

Every function takes the communicator first and only awaits its
point-to-point methods, so it runs under every backend; the Communicator's
methods (``comm.bcast(...)``, ``comm.Allreduce(...)``) call these.

Default algorithms (MPICH 4 CH3 defaults, ``MPIR_CVAR_*``), decided on what
every rank knows alike (a collective's size is known everywhere only when
``nbytes`` is given or for buffers; Python objects may differ in size from
rank to rank, so without ``nbytes`` the choice depends on P only):

===========  ===========================================================
bcast        binomial below 12 KiB or under 8 ranks, else scatter + ring
             allgather (MPICH's recursive-doubling allgather for medium
             sizes is not implemented: the ring is used)
reduce       binomial (MPICH's Rabenseifner reduce for long messages: not
             implemented)
allreduce    recursive doubling up to 2 KiB, for objects and for
             non-commutative ops; above, the ring (reduce-scatter +
             allgather, the bandwidth-optimal family MPICH's Rabenseifner
             belongs to) for numpy arrays
scatter      binomial
gather       binomial
allgather    recursive doubling for power-of-two sizes below 512 KiB in
             all, else the ring (MPICH's Bruck for small non-powers of two:
             not implemented, the ring is used)
alltoall     scattered (all at once) up to 32 KiB per block, else pairwise
             (MPICH's Bruck for tiny blocks: not implemented); seed 001's
             A and B on request
===========  ===========================================================
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..comm.ops import as_op
from .allgather import ALLGATHER_ALGORITHMS
from .alltoall import alltoall_a, alltoall_b, alltoall_pairwise, alltoall_scattered
from .bcast import bcast_binomial, bcast_scatter_allgather
from .gather import GATHER_ALGORITHMS
from .reduce import ALLREDUCE_ALGORITHMS, REDUCE_ALGORITHMS
from .scatter import SCATTER_ALGORITHMS

__all__ = [
    "bcast",
    "reduce",
    "allreduce",
    "scatter",
    "gather",
    "allgather",
    "alltoall",
    "Bcast",
    "Reduce",
    "Allreduce",
    "Allgather",
    "Alltoall",
    "Scatter",
    "Gather",
    "ALGORITHMS",
]

BCAST_SHORT = 12288  # MPIR_CVAR_BCAST_SHORT_MSG_SIZE
BCAST_MIN_PROCS = 8  # MPIR_CVAR_BCAST_MIN_PROCS
ALLREDUCE_SHORT = 2048  # MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE
ALLGATHER_LONG = 524288  # MPIR_CVAR_ALLGATHER_LONG_MSG_SIZE
ALLTOALL_MEDIUM = 32768  # MPIR_CVAR_ALLTOALL_MEDIUM_MSG_SIZE


async def _bcast_obj_sa(comm: Any, obj: Any, root: int, nbytes: int | None) -> Any:
    """Scatter + allgather of an object: the root pickles it and the bytes are
    split (their size is broadcast first). A symbolic broadcast (``obj`` None
    at the root, ``nbytes`` given) moves only simulated bytes."""
    import pickle

    data = None
    if comm.rank == root:
        data = None if (obj is None and nbytes is not None) else pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    length = await bcast_binomial(
        comm, -1 if data is None and comm.rank == root else (len(data) if data is not None else None), root, nbytes=8
    )
    if length == -1:  # symbolic
        await bcast_scatter_allgather(comm, None, root, nbytes=nbytes)
        return None
    got = await bcast_scatter_allgather(comm, data, root, nbytes=length)
    return obj if comm.rank == root else pickle.loads(got)


_BCAST = {"binomial": bcast_binomial, "scatter_allgather": None}
_ALLTOALL = {"scattered": alltoall_scattered, "pairwise": alltoall_pairwise, "A": alltoall_a, "B": alltoall_b}

#: Every collective's algorithms, by name (for ``algorithm=``).
ALGORITHMS: dict[str, tuple[str, ...]] = {
    "bcast": tuple(_BCAST),
    "reduce": tuple(REDUCE_ALGORITHMS),
    "allreduce": tuple(ALLREDUCE_ALGORITHMS),
    "scatter": tuple(SCATTER_ALGORITHMS),
    "gather": tuple(GATHER_ALGORITHMS),
    "allgather": tuple(ALGORITHMS_ALLGATHER := ALLGATHER_ALGORITHMS),
    "alltoall": tuple(_ALLTOALL),
}


def _pick(collective: str, algorithm: str | None, default: str) -> str:
    if algorithm is None:
        return default
    names = ALGORITHMS[collective]
    for n in names:
        if n.lower() == str(algorithm).lower():
            return n
    raise ValueError(f"{collective}: unknown algorithm {algorithm!r}; choose one of {', '.join(names)}")


def _root(comm: Any, root: Any, what: str) -> None:
    if not isinstance(root, int) or isinstance(root, bool) or not 0 <= root < comm.size:
        raise ValueError(f"{what}: root {root!r} is not a rank of this communicator (size {comm.size})")


def _nbytes(nbytes: Any, what: str) -> int | None:
    if nbytes is None:
        return None
    if not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes < 0:
        raise ValueError(f"{what}: nbytes must be a non-negative int, got {nbytes!r}")
    return nbytes


def _pow2(p: int) -> bool:
    return not (p & (p - 1))


# --- objects ---------------------------------------------------------------------------------


async def bcast(
    comm: Any, obj: Any = None, root: int = 0, *, algorithm: str | None = None, nbytes: int | None = None
) -> Any:
    """``obj`` from ``root`` to every rank."""
    _root(comm, root, "bcast")
    nbytes = _nbytes(nbytes, "bcast")
    default = "binomial"
    if nbytes is not None and nbytes >= BCAST_SHORT and comm.size >= BCAST_MIN_PROCS:
        default = "scatter_allgather"
    algo = _pick("bcast", algorithm, default)
    if algo == "binomial":
        return await bcast_binomial(comm, obj, root, nbytes=nbytes)
    return await _bcast_obj_sa(comm, obj, root, nbytes)


async def reduce(
    comm: Any, sendobj: Any, op: Any = None, root: int = 0, *, algorithm: str | None = None, nbytes: int | None = None
) -> Any:
    """``op`` over every rank's ``sendobj``, at ``root`` (None elsewhere)."""
    _root(comm, root, "reduce")
    the_op = as_op("SUM" if op is None else op, "reduce: op")
    algo = _pick("reduce", algorithm, "binomial")
    return await REDUCE_ALGORITHMS[algo](comm, sendobj, the_op, root, _nbytes(nbytes, "reduce"))


def _is_array(x: Any) -> bool:
    return type(x).__module__ == "numpy" and hasattr(x, "shape")


async def allreduce(
    comm: Any, sendobj: Any, op: Any = None, *, algorithm: str | None = None, nbytes: int | None = None
) -> Any:
    """``op`` over every rank's ``sendobj``, at every rank."""
    the_op = as_op("SUM" if op is None else op, "allreduce: op")
    nbytes = _nbytes(nbytes, "allreduce")
    size = nbytes if nbytes is not None else (sendobj.nbytes if _is_array(sendobj) else None)
    default = "recursive_doubling"
    if _is_array(sendobj) and the_op.commute and size is not None and size > ALLREDUCE_SHORT and comm.size > 2:
        default = "ring"
    algo = _pick("allreduce", algorithm, default)
    return await ALLREDUCE_ALGORITHMS[algo](comm, sendobj, the_op, nbytes)


async def scatter(
    comm: Any,
    sendobj: Sequence[Any] | None = None,
    root: int = 0,
    *,
    algorithm: str | None = None,
    nbytes: int | None = None,
) -> Any:
    """``sendobj[r]`` (given at the root) to each rank r."""
    _root(comm, root, "scatter")
    algo = _pick("scatter", algorithm, "binomial")
    return await SCATTER_ALGORITHMS[algo](comm, sendobj, root, _nbytes(nbytes, "scatter"))


async def gather(
    comm: Any, sendobj: Any, root: int = 0, *, algorithm: str | None = None, nbytes: int | None = None
) -> list[Any] | None:
    """Every rank's ``sendobj`` as a list at ``root`` (None elsewhere)."""
    _root(comm, root, "gather")
    algo = _pick("gather", algorithm, "binomial")
    return await GATHER_ALGORITHMS[algo](comm, sendobj, root, _nbytes(nbytes, "gather"))


async def allgather(comm: Any, sendobj: Any, *, algorithm: str | None = None, nbytes: int | None = None) -> list[Any]:
    """Every rank's ``sendobj`` as a list, at every rank."""
    nbytes = _nbytes(nbytes, "allgather")
    p = comm.size
    default = "recursive_doubling" if _pow2(p) and (nbytes is None or nbytes * p < ALLGATHER_LONG) else "ring"
    algo = _pick("allgather", algorithm, default)
    return await ALGORITHMS_ALLGATHER[algo](comm, sendobj, nbytes)


async def alltoall(
    comm: Any, sendobj: Sequence[Any], *, algorithm: str | None = None, nbytes: int | None = None
) -> list[Any]:
    """``sendobj[d]`` to each rank d; returns what each rank sent this one, by source."""
    nbytes = _nbytes(nbytes, "alltoall")
    if sendobj is None or not hasattr(sendobj, "__len__") or len(sendobj) != comm.size:
        got = len(sendobj) if sendobj is not None and hasattr(sendobj, "__len__") else repr(sendobj)[:60]
        raise ValueError(f"alltoall needs one item per rank ({comm.size}), got {got}")
    default = "pairwise" if nbytes is not None and nbytes > ALLTOALL_MEDIUM else "scattered"
    algo = _pick("alltoall", algorithm, default)
    if algo in ("A", "B") and not _pow2(comm.size):
        raise ValueError(f"alltoall algorithm {algo} pairs ranks by XOR and needs a power-of-two size, got {comm.size}")
    return await _ALLTOALL[algo](comm, list(sendobj), nbytes=nbytes)


# --- buffers (numpy arrays) -----------------------------------------------------------------


def _bytes(arr: Any) -> bytes:
    import numpy as np

    return np.ascontiguousarray(arr).tobytes()


def _into(buf: Any, data: Any, what: str) -> None:
    import numpy as np

    src = np.asarray(data)
    if src.nbytes != buf.nbytes:
        raise ValueError(f"{what}: the receive buffer holds {buf.nbytes} bytes, the result is {src.nbytes}")
    buf.reshape(-1)[...] = src.reshape(-1).view(buf.dtype) if src.dtype != buf.dtype else src.reshape(-1)


async def Bcast(comm: Any, buf: Any, root: int = 0, *, algorithm: str | None = None) -> None:  # noqa: N802
    """Every rank's ``buf`` becomes the root's (all ranks give equal-sized buffers)."""
    import numpy as np

    _root(comm, root, "Bcast")
    n = buf.nbytes
    default = "scatter_allgather" if n >= BCAST_SHORT and comm.size >= BCAST_MIN_PROCS else "binomial"
    algo = _pick("bcast", algorithm, default)
    data = _bytes(buf) if comm.rank == root else None
    if algo == "binomial":
        got = await bcast_binomial(comm, data, root, nbytes=n)
    else:
        got = await bcast_scatter_allgather(comm, data, root, nbytes=n)
    if comm.rank != root:
        if not isinstance(got, bytes) or len(got) != n:
            raise ValueError(
                f"rank {comm.rank}: Bcast: the root's buffer is {len(got) if isinstance(got, bytes) else '?'}"
                f" bytes, this rank's {n}"
            )
        buf.reshape(-1)[...] = np.frombuffer(got, dtype=buf.dtype)


async def Reduce(
    comm: Any,
    sendbuf: Any,
    recvbuf: Any,
    op: Any = None,
    root: int = 0,
    *,  # noqa: N802
    algorithm: str | None = None,
) -> None:
    import numpy as np

    res = await reduce(comm, np.array(sendbuf, copy=True), op, root, algorithm=algorithm, nbytes=sendbuf.nbytes)
    if comm.rank == root:
        if recvbuf is None:
            raise ValueError("Reduce: the root needs a receive buffer")
        _into(recvbuf, res, "Reduce")


async def Allreduce(
    comm: Any,
    sendbuf: Any,
    recvbuf: Any,
    op: Any = None,
    *,  # noqa: N802
    algorithm: str | None = None,
) -> None:
    import numpy as np

    res = await allreduce(comm, np.array(sendbuf, copy=True), op, algorithm=algorithm, nbytes=sendbuf.nbytes)
    _into(recvbuf, res, "Allreduce")


async def Allgather(comm: Any, sendbuf: Any, recvbuf: Any, *, algorithm: str | None = None) -> None:  # noqa: N802
    import numpy as np

    items = await allgather(comm, np.array(sendbuf, copy=True), algorithm=algorithm, nbytes=sendbuf.nbytes)
    _into(recvbuf, np.concatenate([np.asarray(x).reshape(-1) for x in items]), "Allgather")


def _blocks(buf: Any, p: int, what: str) -> list[Any]:
    flat = buf.reshape(-1)
    if flat.size % p:
        raise ValueError(f"{what}: a buffer of {flat.size} items does not split into {p} equal blocks")
    k = flat.size // p
    return [flat[i * k : (i + 1) * k].copy() for i in range(p)]


async def Alltoall(comm: Any, sendbuf: Any, recvbuf: Any, *, algorithm: str | None = None) -> None:  # noqa: N802
    import numpy as np

    blocks = _blocks(sendbuf, comm.size, "Alltoall")
    got = await alltoall(comm, blocks, algorithm=algorithm, nbytes=blocks[0].nbytes)
    _into(recvbuf, np.concatenate(got), "Alltoall")


async def Scatter(comm: Any, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:  # noqa: N802
    blocks = _blocks(sendbuf, comm.size, "Scatter") if comm.rank == root else None
    got = await scatter(comm, blocks, root, nbytes=recvbuf.nbytes)
    _into(recvbuf, got, "Scatter")


async def Gather(comm: Any, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:  # noqa: N802
    import numpy as np

    got = await gather(comm, np.array(sendbuf, copy=True).reshape(-1), root, nbytes=sendbuf.nbytes)
    if comm.rank == root:
        if recvbuf is None:
            raise ValueError("Gather: the root needs a receive buffer")
        assert got is not None  # gather gives the root the list
        _into(recvbuf, np.concatenate(got), "Gather")
