"""Cartesian and graph topologies (``Create_cart``, ``Shift``, ``Sub``,
``Compute_dims``, ``Create_graph``): arithmetic on ranks over a duplicated
communicator. ``reorder`` is accepted and ignored (rank r keeps rank r), as
MPICH does on a flat machine."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .comm import COMM_NULL, TOPOLOGY_CONSTRUCTORS, Intracomm
from .status import PROC_NULL, UNDEFINED

__all__ = ["Cartcomm", "Graphcomm", "create_cart", "create_graph", "compute_dims", "CART", "GRAPH"]

# MPICH's topology kinds
GRAPH, CART, DIST_GRAPH = 1, 2, 3


class Cartcomm(Intracomm):
    """mpi4py's ``MPI.Cartcomm``."""

    def __init__(self, c: Any, dims: list[int], periods: list[bool]):
        super().__init__(c)
        self.dims, self.periods = dims, periods

    def Get_topology(self) -> int:  # noqa: N802
        return CART

    def Get_dim(self) -> int:  # noqa: N802
        return len(self.dims)

    ndim = property(Get_dim)

    def Get_topo(self) -> tuple[list[int], list[int], list[int]]:  # noqa: N802
        return list(self.dims), [int(p) for p in self.periods], self.Get_coords(self.Get_rank())

    topo = property(Get_topo)

    @property
    def coords(self) -> list[int]:
        return self.Get_coords(self.Get_rank())

    def Get_coords(self, rank: int) -> list[int]:  # noqa: N802
        coords = []
        for d in reversed(self.dims):  # row-major, as MPI
            coords.append(rank % d)
            rank //= d
        return coords[::-1]

    def Get_cart_rank(self, coords: Sequence[int]) -> int:  # noqa: N802
        rank = 0
        for c, d, p in zip(coords, self.dims, self.periods):
            if p:
                c %= d
            elif not 0 <= c < d:
                from .errors import ERROR_CLASSES, MPIException

                raise MPIException(ERROR_CLASSES["ERR_ARG"], f"MPI_Cart_rank: coordinate {c} outside 0..{d - 1}")
            rank = rank * d + c
        return rank

    def Shift(self, direction: int, disp: int) -> tuple[int, int]:  # noqa: N802
        me = self.Get_coords(self.Get_rank())
        return self._neighbour(me, direction, -disp), self._neighbour(me, direction, disp)

    def _neighbour(self, coords: list[int], direction: int, step: int) -> int:
        c = list(coords)
        c[direction] += step
        d = self.dims[direction]
        if not self.periods[direction] and not 0 <= c[direction] < d:
            return PROC_NULL
        c[direction] %= d
        return self.Get_cart_rank(c)

    def Sub(self, remain_dims: Sequence[bool]) -> Cartcomm:  # noqa: N802
        me = self.Get_coords(self.Get_rank())
        color = 0
        key = 0
        for c, d, keep in zip(me, self.dims, remain_dims):
            if keep:
                key = key * d + c
            else:
                color = color * d + c
        sub = self.Split(color, key)
        return Cartcomm(
            sub._c,
            [d for d, k in zip(self.dims, remain_dims) if k],
            [p for p, k in zip(self.periods, remain_dims) if k],
        )

    def Dup(self, info: Any = None) -> Cartcomm:  # noqa: N802
        return Cartcomm(super().Dup()._c, list(self.dims), list(self.periods))


class Graphcomm(Intracomm):
    """mpi4py's ``MPI.Graphcomm``."""

    def __init__(self, c: Any, index: list[int], edges: list[int]):
        super().__init__(c)
        self.index, self.edges = index, edges

    def Get_topology(self) -> int:  # noqa: N802
        return GRAPH

    def Get_dims(self) -> tuple[int, int]:  # noqa: N802
        return len(self.index), len(self.edges)

    def Get_topo(self) -> tuple[list[int], list[int]]:  # noqa: N802
        return list(self.index), list(self.edges)

    def Get_neighbors_count(self, rank: int) -> int:  # noqa: N802
        return len(self.Get_neighbors(rank))

    def Get_neighbors(self, rank: int) -> list[int]:  # noqa: N802
        lo = self.index[rank - 1] if rank > 0 else 0
        return list(self.edges[lo : self.index[rank]])

    @property
    def neighbors(self) -> list[int]:
        return self.Get_neighbors(self.Get_rank())

    @property
    def nneighbors(self) -> int:
        return len(self.neighbors)


def compute_dims(nnodes: int, dims: int | Sequence[int]) -> list[int]:
    """``MPI.Compute_dims``: a balanced factorisation of ``nnodes``; nonzero entries are kept."""
    out = [0] * dims if isinstance(dims, int) else [int(d) for d in dims]
    fixed = 1
    for d in out:
        if d:
            fixed *= d
    if fixed == 0 or nnodes % fixed:
        raise ValueError(f"Compute_dims: {nnodes} nodes do not divide into the fixed dimensions {out}")
    free = [i for i, d in enumerate(out) if d == 0]
    rest = nnodes // fixed
    sizes = [1] * len(free)
    # the prime factors of the rest, largest first, each to the smallest dimension so far
    factors = []
    n, p = rest, 2
    while p * p <= n:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    if n > 1:
        factors.append(n)
    for f in sorted(factors, reverse=True):
        if sizes:
            i = sizes.index(min(sizes))
            sizes[i] *= f
    for i, s in zip(free, sorted(sizes, reverse=True)):
        out[i] = s
    return out


def create_cart(comm: Intracomm, dims: Sequence[int], periods: Sequence[bool] | None, reorder: bool) -> Any:
    dims = [int(d) for d in dims]
    periods = [bool(p) for p in periods] if periods is not None else [False] * len(dims)
    if len(periods) != len(dims):
        raise ValueError(f"Create_cart: {len(periods)} periods for {len(dims)} dimensions")
    n = 1
    for d in dims:
        n *= d
    if n > comm.Get_size():
        from .errors import ERROR_CLASSES, MPIException

        raise MPIException(
            ERROR_CLASSES["ERR_DIMS"], f"Create_cart: {dims} needs {n} ranks; the communicator has {comm.Get_size()}"
        )
    inside = comm.Get_rank() < n
    sub = comm.Split(0 if inside else UNDEFINED, comm.Get_rank())
    return Cartcomm(sub._c, dims, periods) if inside else COMM_NULL


def create_graph(comm: Intracomm, index: Sequence[int], edges: Sequence[int], reorder: bool) -> Any:
    index, edges = [int(i) for i in index], [int(e) for e in edges]
    inside = comm.Get_rank() < len(index)
    sub = comm.Split(0 if inside else UNDEFINED, comm.Get_rank())
    return Graphcomm(sub._c, index, edges) if inside else COMM_NULL


TOPOLOGY_CONSTRUCTORS.update(cart=create_cart, graph=create_graph)
