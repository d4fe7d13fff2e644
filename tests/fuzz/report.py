"""Print the fuzz corpus's inputs and outcomes per format.

    python tests/fuzz/report.py                 # every format of every tests/fuzz/formats_*.py
    python tests/fuzz/report.py --only "platform TOML" --examples
    python tests/fuzz/report.py --seed 7 --scale 0.1

Exit status 1 if any input ended as an unclear error, a traceback or a blow-up.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness  # noqa: E402


def discover() -> list[harness.Format]:
    """The FORMATS of every ``formats_*.py`` module next to this file, in name order."""
    formats = []
    for path in sorted(HERE.glob("formats_*.py")):
        formats += getattr(importlib.import_module(path.stem), "FORMATS", [])
    return formats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=harness.SEED)
    ap.add_argument("--only", action="append", default=[], help="run only this format (repeatable)")
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of each format's inputs to run")
    ap.add_argument("--jobs", type=int, default=None, help="worker processes at a time (default: CPUs)")
    ap.add_argument("--examples", action="store_true", help="show examples of every bad outcome")
    args = ap.parse_args(argv)
    formats = [f for f in discover() if not args.only or f.name in args.only]
    if not formats:
        ap.error(f"no format named {', '.join(args.only)}")
    counts = {f.name: max(1, round(f.count * args.scale)) for f in formats}
    t0 = time.perf_counter()
    results = harness.run_formats(formats, seed=args.seed, jobs=args.jobs, counts=counts)
    print(harness.table(results.values()))
    print(f"seed {args.seed}, {time.perf_counter() - t0:.1f} s wall")
    bad = [r for r in results.values() if r.bad]
    if args.examples or bad:
        for r in bad:
            print("\n" + r.summary())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
