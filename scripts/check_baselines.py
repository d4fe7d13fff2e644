"""Hold the type and lint baselines to "may only shrink" (scripts/style-check).

``mypy``: mypy over all of ``python/parcomm`` (mypy.ini); each file may have at most the errors
``scripts/mypy-baseline.txt`` allows it, a file not listed none. A file with fewer errors than
listed fails too, so that its line is lowered (or deleted) and the baseline stays true, the way
``tests/test_layers.py`` holds the long-function list.

``ruff``: each line of the per-file B/UP/SIM baseline in ruff.toml must still silence a finding;
a fixed file's line must go.

Usage: ``python scripts/check_baselines.py mypy|ruff``; exit 1 with one line per problem.
"""

from __future__ import annotations

import collections
import json
import pathlib
import re
import subprocess
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
MYPY_BASELINE = ROOT / "scripts" / "mypy-baseline.txt"
#: The rule families whose findings ruff.toml baselines per file (issue 32).
BASELINED = ("B", "UP", "SIM")


def _mypy_counts() -> collections.Counter[str]:
    run = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True)
    if run.returncode not in (0, 1) or "error: " not in run.stdout and run.returncode == 1:
        sys.exit(f"mypy did not run: {run.stdout[-500:]}{run.stderr[-500:]}")
    errors = re.findall(r"^(python/[^:]+\.pyi?):\d+: error:", run.stdout, re.M)
    return collections.Counter(errors)


def _mypy_baseline() -> dict[str, int]:
    allowed = {}
    for line in MYPY_BASELINE.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            count, path = line.split(maxsplit=1)
            allowed[path] = int(count)
    return allowed


def check_mypy() -> list[str]:
    counts, allowed = _mypy_counts(), _mypy_baseline()
    problems = []
    for path in sorted(set(counts) | set(allowed)):
        n, limit = counts.get(path, 0), allowed.get(path, 0)
        if n > limit:
            problems.append(f"{path}: {n} mypy errors, baseline allows {limit} (run mypy and fix the new ones)")
        elif n < limit:
            problems.append(f"{path}: {n} mypy errors, baseline says {limit}: lower its line in {MYPY_BASELINE.name}")
    if not problems:
        print(f"mypy: {sum(counts.values())} errors in {len(counts)} files, within the baseline")
    return problems


def check_ruff() -> list[str]:
    config = tomllib.loads((ROOT / "ruff.toml").read_text())
    ignores = config["lint"]["per-file-ignores"]
    listed = {f: {c for c in codes if c.startswith(BASELINED)} for f, codes in ignores.items() if "*" not in f}
    listed = {f: codes for f, codes in listed.items() if codes}
    if not listed:
        return []
    cmd = [sys.executable, "-m", "ruff", "check", "--isolated", "--output-format", "json", "--exit-zero"]
    cmd += ["--target-version", "py311", "--select", ",".join(BASELINED), *sorted(listed)]
    found = collections.defaultdict(set)
    for e in json.loads(subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True).stdout):
        found[pathlib.Path(e["filename"]).relative_to(ROOT).as_posix()].add(e["code"])
    return [
        f"ruff.toml: {f} no longer has {', '.join(sorted(codes - found[f]))}: remove it from its baseline line"
        for f, codes in sorted(listed.items())
        if codes - found[f]
    ]


if __name__ == "__main__":
    which = sys.argv[1:] or ["mypy", "ruff"]
    problems = [p for w in which for p in {"mypy": check_mypy, "ruff": check_ruff}[w]()]
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)
