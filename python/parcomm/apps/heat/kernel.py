"""The explicit finite-difference step of the 2D heat equation (seed 002 §3).

``u_t = alpha (u_xx + u_yy)`` on a uniform grid with spacing h and time step
dt; with ``r = alpha dt / h^2`` the five-point update of every interior point is

    v[i, j] = r * (((u[i-1, j] + u[i+1, j]) + u[i, j-1]) + u[i, j+1]) + (1 - 4r) * u[i, j]

in exactly this order of operations, so a point's new value depends only on
the five values, never on how the grid is cut into blocks or tasks: the
parallel solver equals the serial one bit for bit. That is C = 6 floating
point operations per point (3 + 1 additions, 2 multiplications), the C of
§3.1. The scheme is stable for r <= 1/4 (von Neumann); larger r raises
:class:`StabilityError`.

Arrays are *padded*: a task's n_y x n_x points live in ``u[1:-1, 1:-1]`` of an
``(n_y + 2) x (n_x + 2)`` array whose outer ring holds the neighbours'
boundary values (halo) or the fixed boundary temperature (0).

Two implementations of exactly this update, selected by ``HeatKernel(backend=...)``:

* ``"rust"`` (the default when the compiled core has it):
  ``parcomm._core.heat_update``, the fused loop of
  ``crates/parcomm-core/src/kernels/heat.rs``, in place on the numpy arrays
  through the buffer protocol. One pass per row reads ``u`` and writes ``v``
  once: the main-memory traffic of a STREAM copy. For grids larger than the
  cache it runs at about the speed of a STREAM-like copy or scale of the same
  data (83-102 % at 32-128 MiB on this machine), but at ~60 % of glibc's
  ``memcpy`` for a 288 MiB grid, where ``memcpy`` switches to non-temporal
  stores (``benchmarks/heat_kernel.py``; results in
  ``benchmarks/results/heat_kernel.json``). Same operations in the same
  order, no fused multiply-add: the same bits as the numpy kernel.
* ``"numpy"``: the reference and fallback, below.

The numpy kernel. numpy evaluates an expression one operation at a time, each a full
pass over its operands, so a naive ``v[1:-1,1:-1] = ...`` streams the grid
through main memory ~10 times and allocates temporaries every step; and an
operation on a 2D view with padded rows goes through numpy's buffered
iterator, which copies every operand once more. This kernel

* treats a full-width rectangle of the padded array as one contiguous range
  of the flattened array (the halo columns inside the range get values that
  are reset afterwards), so every operand is a contiguous 1D slice and no
  buffering happens;
* walks that range in chunks of :data:`DEFAULT_BLOCK_BYTES`, so the six
  passes of a chunk (3 + 1 additions, 2 multiplications, written straight
  into the output with ``out=``) hit the cache and main memory sees one read
  of ``u`` and one write of ``v`` per step: the traffic of a STREAM copy;
* keeps one preallocated scratch chunk: nothing is allocated per step.

What bounds it on a small core is then numpy's per-pass speed in cache, not
memory: six passes of ~0.45 ns per element here against ~1.1-1.5 ns per point
for the copy, so numpy alone reaches about 40 % of the copy bound on this
machine (and 4-5x the naive expression); the fused Rust loop removes the six
passes.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "BACKENDS",
    "FLOPS_PER_POINT",
    "RUST_KERNEL",
    "STABILITY_LIMIT",
    "StabilityError",
    "HeatKernel",
    "check_r",
    "naive_step",
]

try:  # the fused kernel of the compiled core (absent from an older build: numpy only)
    from ..._core import heat_update as _rust_update
except ImportError:  # pragma: no cover - depends on the build
    _rust_update = None

#: Whether the compiled core provides the fused kernel.
RUST_KERNEL = _rust_update is not None
#: ``auto`` picks ``rust`` when available, else ``numpy``.
BACKENDS = ("auto", "rust", "numpy")

#: Operations per grid point and step (the paper's C): 4 additions, 2 multiplications.
FLOPS_PER_POINT = 6
#: Explicit 5-point scheme in 2D: stable iff r = alpha dt / h^2 <= 1/4.
STABILITY_LIMIT = 0.25

#: Bytes of one scratch block (measured best of 32 KiB..2 MiB on this machine:
#: the block and its shifted operands stay in L2/L3).
DEFAULT_BLOCK_BYTES = 512 * 1024


class StabilityError(ValueError):
    """The time step violates the explicit scheme's stability limit."""


def check_r(r: float) -> float:
    r = float(r)
    if not np.isfinite(r) or r <= 0:
        raise StabilityError(f"r = alpha*dt/h^2 must be positive, got {r}")
    if r > STABILITY_LIMIT:
        raise StabilityError(
            f"r = alpha*dt/h^2 = {r:g} exceeds the stability limit 1/4 of the explicit 5-point scheme; "
            f"use a time step dt <= h^2/(4 alpha)"
        )
    return r


def naive_step(u: np.ndarray, v: np.ndarray, r: float) -> None:
    """Reference: the same formula in one numpy expression (allocates temporaries)."""
    v[1:-1, 1:-1] = r * (((u[:-2, 1:-1] + u[2:, 1:-1]) + u[1:-1, :-2]) + u[1:-1, 2:]) + (1.0 - 4.0 * r) * u[1:-1, 1:-1]


class HeatKernel:
    """Allocation-free 5-point update for padded arrays of one shape: the
    fused Rust loop (``backend="rust"``, the default when built) or blocked
    numpy passes (``backend="numpy"``, the reference); both give the same bits.
    The Rust path needs C-contiguous float64 arrays; other arrays take the
    numpy path."""

    def __init__(
        self,
        shape: tuple[int, int],
        r: float,
        *,
        block_bytes: int = DEFAULT_BLOCK_BYTES,
        dtype=np.float64,
        backend: str = "auto",
    ):
        self.r = check_r(r)
        if backend not in BACKENDS:
            raise ValueError(f"unknown kernel backend {backend!r}; known: {', '.join(BACKENDS)}")
        if backend == "rust" and not RUST_KERNEL:
            raise ValueError("backend 'rust' needs parcomm._core.heat_update; rebuild with pip install -e .")
        self.backend = (
            "rust"
            if backend == "auto" and RUST_KERNEL and np.dtype(dtype) == np.float64
            else ("numpy" if backend == "auto" else backend)
        )
        self.c0 = 1.0 - 4.0 * self.r
        ny, nx = int(shape[0]), int(shape[1])
        if ny < 3 or nx < 3:
            raise ValueError(f"padded arrays need at least 3x3 entries, got {ny}x{nx}")
        self.shape = (ny, nx)
        width = nx - 2
        self.block_rows = max(1, int(block_bytes) // (8 * max(1, width)))
        self._scratch = np.empty((self.block_rows, width), dtype=dtype)

    def update(
        self, u: np.ndarray, v: np.ndarray, rows: tuple[int, int] | None = None, cols: tuple[int, int] | None = None
    ) -> int:
        """Write the new values of the points ``rows x cols`` (padded indices,
        half open; default: every interior point) into ``v``; returns the
        number of points updated.

        The Rust kernel writes exactly the rectangle and nothing else. In the
        numpy kernel, a rectangle as wide as the interior (or :meth:`interior`'s) is updated
        as one contiguous range of the flattened array: between two rows the
        range also covers the halo columns (and, for :meth:`interior`, the
        task's first and last column, which :meth:`boundary` writes later).
        The halo columns of ``v`` are set back to 0 afterwards (the fixed
        boundary; a neighbour's values replace them before they are read).
        Contiguous operands let numpy skip its iterator's buffer copies: each
        operation is one streaming pass over the block.
        """
        ny, nx = self.shape
        i0, i1 = rows if rows is not None else (1, ny - 1)
        j0, j1 = cols if cols is not None else (1, nx - 1)
        if i1 <= i0 or j1 <= j0:
            return 0
        if (
            self.backend == "rust"
            and u.dtype == np.float64
            and v.dtype == np.float64
            and u.flags.c_contiguous
            and v.flags.c_contiguous
            and u.shape == v.shape == self.shape
        ):
            return _rust_update(u, v, self.r, i0, i1, j0, j1)
        if (j0, j1) in ((1, nx - 1), (2, nx - 2)) and i1 - i0 > 1 and u.flags.c_contiguous and v.flags.c_contiguous:
            self._flat(u.reshape(-1), v.reshape(-1), i0 * nx + j0, (i1 - 1) * nx + j1)
            v[i0:i1, 0] = 0.0
            v[i0:i1, nx - 1] = 0.0
        else:
            self._blocks(u, v, i0, i1, j0, j1)
        return (i1 - i0) * (j1 - j0)

    def _flat(self, u: np.ndarray, v: np.ndarray, start: int, stop: int) -> None:
        r, c0, step, nx = self.r, self.c0, self._scratch.size, self.shape[1]
        add, mul = np.add, np.multiply
        scratch = self._scratch.reshape(-1)
        for a in range(start, stop, step):
            b = min(a + step, stop)
            out = v[a:b]
            tmp = scratch[: b - a]
            add(u[a - nx : b - nx], u[a + nx : b + nx], out=out)
            add(out, u[a - 1 : b - 1], out=out)
            add(out, u[a + 1 : b + 1], out=out)
            mul(out, r, out=out)
            mul(u[a:b], c0, out=tmp)
            add(out, tmp, out=out)

    def _blocks(self, u: np.ndarray, v: np.ndarray, i0: int, i1: int, j0: int, j1: int) -> None:
        r, c0, br = self.r, self.c0, self.block_rows
        add, mul = np.add, np.multiply
        for a in range(i0, i1, br):
            b = min(a + br, i1)
            out = v[a:b, j0:j1]
            tmp = self._scratch[: b - a, : j1 - j0]
            add(u[a - 1 : b - 1, j0:j1], u[a + 1 : b + 1, j0:j1], out=out)
            add(out, u[a:b, j0 - 1 : j1 - 1], out=out)
            add(out, u[a:b, j0 + 1 : j1 + 1], out=out)
            mul(out, r, out=out)
            mul(u[a:b, j0:j1], c0, out=tmp)
            add(out, tmp, out=out)

    def interior(self, u: np.ndarray, v: np.ndarray) -> int:
        """Points that need no halo value (all but the outermost ring of the task)."""
        ny, nx = self.shape
        return self.update(u, v, (2, ny - 2), (2, nx - 2))

    def boundary(self, u: np.ndarray, v: np.ndarray) -> int:
        """The outermost ring of the task's points (they read the halo)."""
        ny, nx = self.shape
        n = self.update(u, v, (1, 2), (1, nx - 1))
        if ny - 2 > 1:
            n += self.update(u, v, (ny - 2, ny - 1), (1, nx - 1))
        if ny - 2 > 2:
            n += self.update(u, v, (2, ny - 2), (1, 2))
            if nx - 2 > 1:
                n += self.update(u, v, (2, ny - 2), (nx - 2, nx - 1))
        return n
