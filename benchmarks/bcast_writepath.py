"""Where the page-cache write of a broadcast's output costs CPU (issue 34, item 1).

Each variant writes one object of ``--size`` bytes as 1 MiB pieces to a fresh file on
the output's filesystem, in its own process, and reports that process's CPU seconds
(user + system, rusage) per GB. Variants are run interleaved, in a random order per
round, and the file is removed between runs. Nothing here hashes or receives: it is
the write alone, the 46 % of client CPU the profile put in ``copy_folio_from_iter_atomic``.

    python3 benchmarks/bcast_writepath.py --size 1GiB --repeat 3 --dir /work/tmp

Variants (what the driver did, and what each alternative changes):

* ``seq``: pwrite of 1 MiB pieces in order from one reused page-aligned buffer.
* ``seq+fallocate``: the file reserved first (posix_fallocate, as OutputWriter does).
* ``random+fallocate``: pieces in a random order (as a swarm delivers them).
* ``fallocate+mmap``: and the whole file mapped read-only meanwhile (FileStore's map).
* ``fallocate+mmap+readback``: and every piece read back through that map after its
  write (the in-order whole-object sha256 of ``--verify whole``, without the hash).
* ``64KiB`` / ``8MiB``: other write sizes.
* ``unaligned``: every offset shifted by 512 bytes.
* ``2 threads``: two writers at once (two GETs).
* ``sync_file_range``: writeback started after every 8 MiB (SYNC_FILE_RANGE_WRITE).
* ``fadvise DONTNEED``: and pages dropped after writeback.
* ``via mmap``: memcpy into a writable shared mapping instead of pwrite.
* ``fresh buffer``: a new buffer per piece (as ``bytes`` from a decoder would be).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import mmap
import os
import random
import resource
import statistics
import subprocess
import sys
import threading
from pathlib import Path

PIECE = 1 << 20
VARIANTS = [
    "seq",
    "seq+fallocate",
    "random+fallocate",
    "fallocate+mmap",
    "fallocate+mmap+readback",
    "64KiB",
    "8MiB",
    "unaligned",
    "2 threads",
    "sync_file_range",
    "fadvise DONTNEED",
    "via mmap",
    "fresh buffer",
]


def _sync_file_range(fd: int, offset: int, length: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.sync_file_range(fd, ctypes.c_int64(offset), ctypes.c_int64(length), 2)  # SYNC_FILE_RANGE_WRITE


def write_variant(variant: str, path: str, size: int) -> float:
    """Write ``size`` bytes to ``path`` as ``variant`` says; this process's CPU seconds."""
    piece = {"64KiB": 64 << 10, "8MiB": 8 << 20}.get(variant, PIECE)
    buf = mmap.mmap(-1, piece)
    buf.write(os.urandom(piece))
    view = memoryview(buf)
    t0 = resource.getrusage(resource.RUSAGE_SELF)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    if variant != "seq":
        os.posix_fallocate(fd, 0, size)
    offsets = list(range(0, size, piece))
    if variant == "random+fallocate":
        random.Random(1).shuffle(offsets)
    shift = 512 if variant == "unaligned" else 0
    if variant == "via mmap":
        target = mmap.mmap(fd, size)
        for off in offsets:
            target[off : off + piece] = view
        target.close()
    elif variant == "2 threads":
        halves = [offsets[0::2], offsets[1::2]]

        def run(mine: list[int]) -> None:
            for off in mine:
                os.pwrite(fd, view, off)

        threads = [threading.Thread(target=run, args=(h,)) for h in halves]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    else:
        mapped = mmap.mmap(fd, size, prot=mmap.PROT_READ) if "mmap" in variant else None
        sink = 0
        for i, off in enumerate(offsets):
            data = view if variant != "fresh buffer" else bytes(view)
            os.pwrite(fd, data[: min(piece, size - off - shift)] if shift else data, off + shift)
            if variant == "fallocate+mmap+readback":
                sink ^= memoryview(mapped)[off : off + piece].tobytes()[-1]  # touch every page once
            if variant in ("sync_file_range", "fadvise DONTNEED") and (i + 1) % 8 == 0:
                start = off - 7 * piece
                _sync_file_range(fd, start, 8 * piece)
                if variant == "fadvise DONTNEED" and start >= 16 * piece:
                    os.posix_fadvise(fd, start - 16 * piece, 8 * piece, os.POSIX_FADV_DONTNEED)
        if mapped is not None:
            mapped.close()
    os.fsync(fd)
    os.close(fd)
    t1 = resource.getrusage(resource.RUSAGE_SELF)
    return (t1.ru_utime - t0.ru_utime) + (t1.ru_stime - t0.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="1GiB")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default=None, help="directory on the output's filesystem (default: a temp dir)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--one", nargs=2, metavar=("VARIANT", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    from parcomm.platform.units import parse_size

    size = parse_size(args.size)
    if args.one:
        print(write_variant(args.one[0], args.one[1], size))
        return 0
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="parcomm-writepath-", dir=args.dir))
    samples: dict[str, list[float]] = {v: [] for v in VARIANTS}
    load = [os.getloadavg()]
    rng = random.Random()
    try:
        for rnd in range(args.repeat):
            order = VARIANTS[:]
            rng.shuffle(order)
            for variant in order:
                path = folder / "out"
                cmd = [sys.executable, __file__, "--size", str(size), "--one", variant, str(path)]
                cpu = float(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
                path.unlink()
                samples[variant].append(cpu)
                print(f"round {rnd} {variant:24} {cpu / (size / 1e9):6.3f} CPU s/GB", file=sys.stderr, flush=True)
    finally:
        for p in folder.iterdir():
            p.unlink()
        folder.rmdir()
    load.append(os.getloadavg())
    base = statistics.median(samples["seq+fallocate"])
    rows = {}
    print(f"\n{size / 2**20:.0f} MiB, median of {args.repeat} interleaved rounds; load {load[0]} -> {load[1]}")
    for v, runs in samples.items():
        med = statistics.median(runs)
        rows[v] = {"cpu_s_per_GB": med / (size / 1e9), "vs_seq_fallocate": med / base, "samples": runs}
        print(f"{v:24} {med / (size / 1e9):6.3f} CPU s/GB  {med / base:5.2f}x")
    out = args.out or Path(__file__).resolve().parent / "results" / "bcast_writepath.json"
    out.write_text(json.dumps({"size": size, "repeat": args.repeat, "loadavg": load, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
