"""``parcomm bcast``'s data plane against the tools people use to pull an object
from S3, on this machine: versitygw on 127.0.0.1 serving one object, outputs
on the local disk, every output's sha256 checked afterwards (outside the timing).

Contenders, run interleaved (one round = every contender once, in order), so
the machine's drift hits all of them alike:

* ``s5cmd``: ``s5cmd cp`` of the whole object (its default concurrency and
  part size), then ``openssl dgst -sha256`` (SHA-NI: 4x coreutils' sha256sum
  here) and ``sync`` of the output: the same guarantees as parcomm (verified,
  durable). s5cmd alone verifies nothing.
* ``boto3``: ``download_file`` with the transfer manager's defaults, then the
  same sha256 and fsync.
* ``parcomm``: ``parcomm bcast get --local N`` (steal; per-piece verification,
  whole sha256 computed as it arrives, fsync, atomic rename).
* ``parcomm --write direct``: the same, the output written with O_DIRECT
  (no page-cache copy; the file is not left in memory).
* ``parcomm --verify pieces``: per-piece verification only (the hash list
  vouches for the whole; one sha256 pass fewer), and with ``--write direct``.

With ``--nodes N`` > 1 the baselines run N copies at once (each node pulls the
whole object: origin egress N x); parcomm's N nodes pull it once (1 x) and
exchange pieces over loopback TCP.

Reported per contender: per-node MB/s (object size / wall time of the whole
command, start-up included: what a user waits for), client CPU seconds per GB
delivered (user + system of the command and its children, from rusage), and
the ratio to s5cmd. Medians over ``--repeat`` rounds.

    python3 benchmarks/bcast_dataplane.py --size 1GiB --nodes 1 --repeat 3
    python3 benchmarks/bcast_dataplane.py --size 1GiB --nodes 4 --repeat 3

Needs versitygw (``scripts/install-versitygw.sh``) and s5cmd on PATH or in
~/go/bin (see ../shared/BASELINES.md for how it was built here); without
s5cmd that contender is skipped and said so.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from parcomm.apps.bcast import manifest
from parcomm.apps.bcast.s3 import S3Client
from parcomm.apps.bcast.versitygw import VersityGW, ensure_versitygw
from parcomm.platform.units import parse_size

HERE = Path(__file__).resolve().parent
BOTO3_NODE = """
import hashlib, os, sys, boto3
from boto3.s3.transfer import TransferConfig
out = sys.argv[1]
s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL_S3"])
s3.download_file("bench", "obj", out, Config=TransferConfig())
h = hashlib.sha256()
with open(out, "rb") as f:
    while block := f.read(1 << 22):
        h.update(block)
    os.fsync(f.fileno())
print(h.hexdigest())
"""


def find_s5cmd() -> str | None:
    found = shutil.which("s5cmd")
    if found:
        return found
    home = Path.home() / "go" / "bin" / "s5cmd"
    return str(home) if home.exists() else None


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            h.update(block)
    return h.hexdigest()


def commands(name: str, nodes: int, outdir: Path, s5cmd: str | None, endpoint: str) -> list[list[str]]:
    """The processes a contender starts at once, and the outputs they write."""
    if name == "s5cmd":
        return [
            [
                "sh",
                "-c",
                f'"{s5cmd}" --endpoint-url {endpoint} cp s3://bench/obj "$1" >/dev/null && openssl dgst -sha256 "$1" >/dev/null'
                ' && sync "$1"',
                "s5cmd",
                str(outdir / f"out.{r}"),
            ]
            for r in range(nodes)
        ]
    if name == "boto3":
        return [[sys.executable, "-c", BOTO3_NODE, str(outdir / f"out.{r}")] for r in range(nodes)]
    if name.startswith("parcomm"):
        out = str(outdir / "out.{rank}")
        extra = name.split()[1:]  # "parcomm --verify pieces --write direct"
        return [
            [
                sys.executable,
                "-m",
                "parcomm",
                "bcast",
                "get",
                "s3://bench/obj",
                "--out",
                out,
                "--local",
                str(nodes),
                *extra,
            ]
        ]
    raise ValueError(name)


def run_once(cmds: list[list[str]], env: dict) -> tuple[float, float]:
    """Wall seconds until every process ended, and their CPU seconds (user + system, children included)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    procs = [subprocess.Popen(c, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for c in cmds]
    errors = [p.communicate(timeout=900)[1] for p in procs]
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    for p, err in zip(procs, errors):
        if p.returncode != 0:
            raise RuntimeError(f"{cmds[0][:3]} exited {p.returncode}: {err.decode(errors='replace')[-400:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="1GiB", help="object size (default 1GiB)")
    ap.add_argument("--nodes", type=int, default=1, help="nodes on this machine (default 1)")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved rounds (default 3)")
    ap.add_argument("--out", type=Path, default=None, help="JSON results (default benchmarks/results/...)")
    args = ap.parse_args()
    size = parse_size(args.size)
    s5cmd = find_s5cmd()
    contenders = (["s5cmd"] if s5cmd else []) + [
        "boto3",
        "parcomm",
        "parcomm --write direct",
        "parcomm --verify pieces",
        "parcomm --verify pieces --write direct",
    ]
    if not s5cmd:
        print("s5cmd not found: that contender is skipped", file=sys.stderr)
    binary = ensure_versitygw(install=False)
    samples: dict[str, list[tuple[float, float]]] = {c: [] for c in contenders}
    load_start = os.getloadavg()  # the machine is shared: say how busy it was
    with tempfile.TemporaryDirectory(prefix="parcomm-dataplane-", dir=os.environ.get("BENCH_DIR")) as tmp:
        root, outdir = Path(tmp, "s3"), Path(tmp, "out")
        root.mkdir()
        outdir.mkdir()
        data = os.urandom(size)
        digest = hashlib.sha256(data).hexdigest()
        with VersityGW(root, binary=binary) as gw:
            gw.create_bucket("bench")
            client = S3Client(gw.s3_config())
            client.put_bytes("s3://bench/obj", data)
            del data
            manifest.prepare("s3://bench/obj", 1 << 20, client=client)
            env = {**os.environ, **gw.environ(), "AWS_ENDPOINT_URL": gw.endpoint_url}
            for rnd in range(args.repeat + 1):  # round 0 warms the page cache and the interpreters
                for name in contenders:
                    for f in outdir.iterdir():
                        f.unlink()
                    wall, cpu = run_once(commands(name, args.nodes, outdir, s5cmd, gw.endpoint_url), env)
                    outs = sorted(outdir.iterdir())
                    if len(outs) != args.nodes or any(sha256_file(p) != digest for p in outs):
                        raise RuntimeError(f"{name}: outputs missing or wrong ({[p.name for p in outs]})")
                    if rnd:
                        samples[name].append((wall, cpu))
                    print(f"round {rnd} {name:23} {wall:6.2f} s  cpu {cpu:6.2f} s", file=sys.stderr, flush=True)
    rows = {}
    for name, runs in samples.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        rows[name] = {
            "wall_s": wall,
            "per_node_MBps": size / wall / 1e6,
            "cpu_s_per_GB": cpu / (size * args.nodes / 1e9),
            "egress_x": 1.0 if name.startswith("parcomm") else float(args.nodes),
            "samples": runs,
        }
    base = rows.get("s5cmd")
    load = " / ".join(f"{a:.2f}" for a in os.getloadavg())
    print(f"\n{size / 2**20:.0f} MiB object, {args.nodes} node(s), median of {args.repeat} interleaved rounds")
    print(f"load average at start {' / '.join(f'{a:.2f}' for a in load_start)}, at end {load}")
    print(f"{'':23} {'MB/s/node':>10} {'CPU s/GB':>9} {'egress':>7} {'vs s5cmd':>9}")
    for name, r in rows.items():
        ratio = f"{r['per_node_MBps'] / base['per_node_MBps']:.2f}x" if base else "-"
        print(f"{name:23} {r['per_node_MBps']:10.0f} {r['cpu_s_per_GB']:9.2f} {r['egress_x']:6.2f}x {ratio:>9}")
    out = args.out or HERE / "results" / f"bcast_dataplane_n{args.nodes}.json"
    out.write_text(
        json.dumps(
            {
                "size": size,
                "nodes": args.nodes,
                "repeat": args.repeat,
                "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                "s5cmd": s5cmd,
                "loadavg_start": load_start,
                "loadavg_end": os.getloadavg(),
                "rows": rows,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
