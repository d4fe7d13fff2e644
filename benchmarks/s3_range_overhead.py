"""S3 GET cost vs range size, against versitygw on 127.0.0.1 (one keep-alive
connection): why `parcomm bcast` fetches whole works (8 MiB) per GET.

    python3 benchmarks/s3_range_overhead.py

Prints ms per GET and MB/s per range size, and a least-squares fit
time = overhead + size / rate.
"""

import os
import statistics
import tempfile
import time

from parcomm.apps.bcast.s3 import S3Client
from parcomm.apps.bcast.versitygw import VersityGW

SIZE = 64 * 1024 * 1024
with tempfile.TemporaryDirectory() as root, VersityGW(root) as gw:
    gw.create_bucket("bench")
    c = S3Client(gw.s3_config())
    url = "s3://bench/obj"
    c.put_bytes(url, os.urandom(SIZE))
    c.get_bytes(url, 0, 1 << 20)  # warm up (client creation, page cache)
    print(f"{'range':>8} {'GETs':>5} {'ms/GET':>8} {'MB/s':>8}")
    rows = []
    for kib in [32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]:
        n = max(8, min(400, (48 << 20) // (kib << 10)))
        unit = kib << 10
        t0 = time.perf_counter()
        for i in range(n):
            start = (i * unit) % (SIZE - unit)
            c.get_range(url, start, start + unit, lambda o, d: None, chunk_size=unit)
        dt = (time.perf_counter() - t0) / n
        rows.append((unit, dt))
        print(f"{kib:>6}Ki {n:>5} {dt * 1e3:8.2f} {unit / dt / 1e6:8.1f}")
    # least squares t = overhead + size / bandwidth
    xs = [u for u, _ in rows]
    ys = [t for _, t in rows]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    print(f"fit: overhead {1e3 * (my - slope * mx):.2f} ms/GET, streaming {1 / slope / 1e6:.0f} MB/s")
