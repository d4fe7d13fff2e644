"""Speed of the heat-equation kernel against this machine's memory bandwidth.

One step of the 5-point update must read the grid once and write it once:
the same main-memory traffic as a STREAM copy of the grid (a[:] = b, 16
bytes per point counted, plus the write-allocate read the hardware adds to
both). So the bound is "a step cannot be faster than copying the grid", and
the kernel's fraction of it is copy time / step time, measured in the same
process, one core, best of several repetitions after a warm-up (pages
touched, caches and frequency settled).

    python3 benchmarks/heat_kernel.py [--sizes 1024,2048,4096] [--reps 7] [--json]

Reported per grid size N (N x N points, float64): copy time and bandwidth,
blocked-kernel time and its fraction of the copy bound, the naive one-line
numpy expression for comparison, and MFlop/s (6 flops per point).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

import numpy as np  # noqa: E402

from parcomm.apps.heat.kernel import FLOPS_PER_POINT, HeatKernel, naive_step  # noqa: E402


def best_of(fns, reps: int) -> list[float]:
    """Best time of each function; the functions run interleaved, so a
    fluctuation of the machine's memory bandwidth (a VM's neighbours) hits
    the copy and the kernel alike."""
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
    v = np.zeros_like(u)
    # STREAM copy of the same amount of data: read n*n doubles, write n*n doubles.
    src = rng.random(n * n)
    dst = np.zeros_like(src)
    k = HeatKernel(u.shape, r)
    t_copy, t_kernel = best_of([lambda: np.copyto(dst, src), lambda: k.update(u, v)], reps)
    (t_naive,) = best_of([lambda: naive_step(u, v, r)], max(3, reps // 2))
    pts = n * n
    return {
        "N": n,
        "grid_MiB": round(8 * pts / 2**20, 1),
        "copy_s": t_copy,
        "copy_GBps": 16 * pts / t_copy / 1e9,
        "kernel_s": t_kernel,
        "kernel_GBps": 16 * pts / t_kernel / 1e9,
        "fraction_of_copy_bound": t_copy / t_kernel,
        "naive_s": t_naive,
        "naive_fraction": t_copy / t_naive,
        "kernel_MFlops": FLOPS_PER_POINT * pts / t_kernel / 1e6,
        "block_elements": k._scratch.size,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="512,1024,2048,4096,6144")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows = [measure(int(s), a.reps) for s in a.sizes.split(",")]
    if a.json:
        print(json.dumps(rows, indent=1))
        return
    print(f"{'N':>6} {'MiB':>7} {'copy ms':>9} {'copy GB/s':>10} {'kernel ms':>10} {'GB/s':>6} {'of bound':>9} "
          f"{'naive ms':>9} {'of bound':>9} {'MFlop/s':>8}")
    for x in rows:
        print(f"{x['N']:>6} {x['grid_MiB']:>7} {x['copy_s'] * 1e3:>9.2f} {x['copy_GBps']:>10.2f} "
              f"{x['kernel_s'] * 1e3:>10.2f} {x['kernel_GBps']:>6.2f} {100 * x['fraction_of_copy_bound']:>8.0f}% "
              f"{x['naive_s'] * 1e3:>9.2f} {100 * x['naive_fraction']:>8.0f}% {x['kernel_MFlops']:>8.0f}")


if __name__ == "__main__":
    main()
