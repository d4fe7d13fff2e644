"""Speed of the heat-equation kernels against this machine's memory bandwidth.

One step of the 5-point update must read the grid once and write it once:
the same main-memory traffic as a STREAM copy of the grid (a[:] = b, 16
bytes per point counted; the hardware may add a write-allocate read to
both). So the bound is "a step cannot be faster than copying the grid", and
a kernel's fraction of it is copy time / step time. Everything is measured
in ONE run, one process, one core, the functions interleaved (a fluctuation
of the machine's bandwidth hits all alike), best of several repetitions
after a warm-up (pages touched, caches and frequency settled):

* ``copy``: ``np.copyto`` of N*N doubles (glibc ``memcpy``: ``rep movsb`` or
  non-temporal stores depending on the size);
* ``scale``: ``np.multiply(b, 3.0, out=a)`` of N*N doubles (STREAM's Scale:
  the same traffic through ordinary vector loads and stores);
* the **bound** is the faster of the two (the stricter comparison);
* ``rust``: the fused kernel, ``parcomm._core.heat_update`` (the solver's default);
* ``numpy``: the blocked numpy kernel (reference / fallback);
* ``naive``: the one-line numpy expression, for scale.

    python3 benchmarks/heat_kernel.py [--sizes 1024,2048,4096] [--reps 9] [--json] [--save]

``--save`` writes benchmarks/results/heat_kernel.json. Reported per grid size
N (N x N points, float64): ns per point and GB/s (16 B per point) of each,
the ratios rust/bound and numpy/bound (bound time / kernel time),
rust vs numpy, and MFlop/s (6 flops per point). Before timing, the Rust and
numpy kernels are checked to give the same bits.
"""

from __future__ import annotations

import argparse
import json
import os
import platform as _platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

import numpy as np  # noqa: E402
from parcomm.apps.heat.kernel import FLOPS_PER_POINT, RUST_KERNEL, HeatKernel, naive_step  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "heat_kernel.json"


def best_of(fns, reps: int) -> list[float]:
    """Best time of each function; the functions run interleaved."""
    for fn in fns:
        fn()  # warm-up
    best = [float("inf")] * len(fns)
    for _ in range(reps):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


def measure(n: int, reps: int, r: float = 0.2) -> dict:
    rng = np.random.default_rng(1)
    u = rng.random((n + 2, n + 2))
    v_rust, v_np = np.zeros_like(u), np.zeros_like(u)
    # STREAM copy of the same amount of data: read n*n doubles, write n*n doubles.
    src = rng.random(n * n)
    dst = np.zeros_like(src)
    k_np = HeatKernel(u.shape, r, backend="numpy")
    k_rust = HeatKernel(u.shape, r, backend="rust")
    k_rust.update(u, v_rust)
    k_np.update(u, v_np)
    if not np.array_equal(v_rust, v_np):
        raise SystemExit(f"N = {n}: the Rust and numpy kernels disagree")
    t_copy, t_scale, t_rust, t_np = best_of(
        [
            lambda: np.copyto(dst, src),
            lambda: np.multiply(src, 3.0, out=dst),
            lambda: k_rust.update(u, v_rust),
            lambda: k_np.update(u, v_np),
        ],
        reps,
    )
    t_bound = min(t_copy, t_scale)
    (t_naive,) = best_of([lambda: naive_step(u, v_np, r)], max(3, reps // 3))
    pts = n * n
    row = {"N": n, "grid_MiB": round(8 * pts / 2**20, 1)}
    for name, t in (
        ("copy", t_copy),
        ("scale", t_scale),
        ("bound", t_bound),
        ("rust", t_rust),
        ("numpy", t_np),
        ("naive", t_naive),
    ):
        row[f"{name}_s"] = t
        row[f"{name}_ns_per_point"] = t / pts * 1e9
        row[f"{name}_GBps"] = 16 * pts / t / 1e9
    row["bound_is"] = "copy" if t_copy <= t_scale else "scale"
    row["rust_of_bound"] = t_bound / t_rust
    row["numpy_of_bound"] = t_bound / t_np
    row["naive_of_bound"] = t_bound / t_naive
    row["rust_of_copy"] = t_copy / t_rust
    row["numpy_of_copy"] = t_copy / t_np
    row["rust_speedup_over_numpy"] = t_np / t_rust
    row["rust_MFlops"] = FLOPS_PER_POINT * pts / t_rust / 1e6
    row["numpy_MFlops"] = FLOPS_PER_POINT * pts / t_np / 1e6
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="512,1024,2048,4096,6144")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--save", action="store_true", help=f"write {RESULTS.relative_to(RESULTS.parent.parent.parent)}")
    a = ap.parse_args()
    if not RUST_KERNEL:
        raise SystemExit("parcomm._core has no heat_update: rebuild with python3 -m pip install -e . --no-deps")
    load_before = os.getloadavg()[0]
    rows = [measure(int(s), a.reps) for s in a.sizes.split(",")]
    out = {
        "machine": _platform.platform(),
        "cpus": os.cpu_count(),
        "reps": a.reps,
        "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],  # before, after: a shared machine
        "command": "python3 benchmarks/heat_kernel.py " + " ".join(sys.argv[1:]),
        "rows": rows,
    }
    if a.save:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(out, indent=1) + "\n")
    if a.json:
        print(json.dumps(out, indent=1))
        return
    print(
        f"{'N':>6} {'MiB':>6} | {'copy':>6} {'scale':>6} {'bound GB/s':>10} | {'rust':>6} {'GB/s':>6} {'/bound':>6} | "
        f"{'numpy':>6} {'GB/s':>6} {'/bound':>6} | {'rust/numpy':>10} {'naive/bd':>8}   (ns per point)"
    )
    for x in rows:
        print(
            f"{x['N']:>6} {x['grid_MiB']:>6} | {x['copy_ns_per_point']:>6.3f} {x['scale_ns_per_point']:>6.3f} "
            f"{x['bound_GBps']:>10.2f} | "
            f"{x['rust_ns_per_point']:>6.3f} {x['rust_GBps']:>6.2f} {100 * x['rust_of_bound']:>5.0f}% | "
            f"{x['numpy_ns_per_point']:>6.3f} {x['numpy_GBps']:>6.2f} {100 * x['numpy_of_bound']:>5.0f}% | "
            f"{x['rust_speedup_over_numpy']:>9.2f}x {100 * x['naive_of_bound']:>7.0f}%"
        )


if __name__ == "__main__":
    main()
