"""``parcomm bcast``'s data plane against the tools people use to pull an object
from S3, on this machine: versitygw on 127.0.0.1 serving one object, outputs
on the local disk, every output's sha256 checked afterwards (outside the timing).

Contenders, run interleaved (one round = every contender once, in a random
order drawn per round), so the machine's drift hits all of them alike:

* ``s5cmd``: plain ``s5cmd cp`` of the whole object (its default concurrency
  and part size): what users run. It verifies nothing and does not fsync.
* ``s5cmd+sha256+sync``: the same, then ``openssl dgst -sha256`` (SHA-NI: 4x
  coreutils' sha256sum here) and ``sync`` of the output: parcomm's guarantees
  (verified, durable). The digest openssl prints is compared with the object's.
* ``boto3`` (``--boto3``): ``download_file`` with the transfer manager's
  defaults, then the same sha256 (compared) and fsync.
* ``parcomm``: ``parcomm bcast get --local N`` with default flags (steal; every
  piece's sha256 against the hash list, fsync, atomic rename).
* more with ``--contender "parcomm --write direct"`` and the like.

Every output's sha256 is checked afterwards, outside the timing. Origin egress
and the server's CPU are measured at the server: the bytes versitygw's process
wrote (``wchar`` in /proc/PID/io: its sockets, sendfile included) and its
user + system CPU, per run, divided by the object's size.

With ``--nodes N`` > 1 the baselines run N copies at once (each node pulls the
whole object: origin egress N x); parcomm's N nodes pull it once (1 x) and
exchange pieces over loopback TCP.

Reported per contender: per-node MB/s (object size / wall time of the whole
command, start-up included: what a user waits for), client CPU seconds per GB
delivered (user + system of the command and its children, from rusage),
origin egress (x the object), server CPU seconds per GB delivered, and the
ratios to both s5cmd rows. Medians over ``--repeat`` rounds; the ratios are
also given per round (the same round's runs, side by side).

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
import random
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
S5CMD_PLAIN = "s5cmd"
S5CMD_CHECKED = "s5cmd+sha256+sync"


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
    if name == S5CMD_PLAIN:
        return [
            [s5cmd or "s5cmd", "--endpoint-url", endpoint, "cp", "s3://bench/obj", str(outdir / f"out.{r}")]
            for r in range(nodes)
        ]
    if name == S5CMD_CHECKED:
        return [
            [
                "sh",
                "-c",
                f'"{s5cmd}" --endpoint-url {endpoint} cp s3://bench/obj "$1" >/dev/null && openssl dgst -sha256 -r "$1"'
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


def server_counters(pid: int) -> tuple[int, float]:
    """Bytes the server process wrote (sockets and sendfile included) and its CPU seconds so far."""
    io = Path(f"/proc/{pid}/io").read_text()
    wchar = int(next(line.split()[1] for line in io.splitlines() if line.startswith("wchar:")))
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rfind(")") + 2 :].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    return wchar, cpu


def run_once(cmds: list[list[str]], env: dict, server_pid: int, digest: str) -> dict:
    """Run one contender's processes at once: wall seconds until every one ended, their CPU
    seconds (user + system, children included), the server's bytes written and CPU seconds.
    A digest a contender printed (``openssl dgst -r``, boto3's) must be the object's."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wrote0, server0 = server_counters(server_pid)
    t0 = time.perf_counter()
    procs = [subprocess.Popen(c, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for c in cmds]
    outputs = [p.communicate(timeout=900) for p in procs]
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    wrote1, server1 = server_counters(server_pid)
    for p, (out, err) in zip(procs, outputs):
        if p.returncode != 0:
            raise RuntimeError(f"{cmds[0][:3]} exited {p.returncode}: {err.decode(errors='replace')[-400:]}")
        printed = out.decode(errors="replace").split()
        if cmds[0][0] in ("sh", sys.executable) and "parcomm" not in cmds[0] and printed[:1] != [digest]:
            raise RuntimeError(f"{cmds[0][:3]}: printed digest {printed[:1]} is not the object's {digest}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "server_wrote": wrote1 - wrote0, "server_cpu": server1 - server0}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="1GiB", help="object size (default 1GiB)")
    ap.add_argument("--nodes", type=int, default=1, help="nodes on this machine (default 1)")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved rounds (default 3)")
    ap.add_argument("--out", type=Path, default=None, help="JSON results (default benchmarks/results/...)")
    ap.add_argument("--boto3", action="store_true", help="add boto3's download_file (+ sha256, fsync)")
    ap.add_argument(
        "--contender", action="append", default=[], metavar="'parcomm FLAGS'", help="another parcomm row (repeatable)"
    )
    ap.add_argument("--seed", type=int, default=None, help="seed of the per-round order (default: random)")
    args = ap.parse_args()
    size = parse_size(args.size)
    s5cmd = find_s5cmd()
    contenders = ([S5CMD_PLAIN, S5CMD_CHECKED] if s5cmd else []) + (["boto3"] if args.boto3 else []) + ["parcomm"]
    contenders += [c for c in args.contender if c.startswith("parcomm ")]
    if not s5cmd:
        print("s5cmd not found: those contenders are skipped", file=sys.stderr)
    binary = ensure_versitygw(install=False)
    samples: dict[str, list[dict]] = {c: [] for c in contenders}
    rng = random.Random(args.seed)
    orders = []
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
            server = gw.pid
            assert server is not None
            for rnd in range(args.repeat + 1):  # round 0 warms the page cache and the interpreters
                order = contenders[:]
                rng.shuffle(order)
                orders.append(order)
                for name in order:
                    for f in outdir.iterdir():
                        f.unlink()
                    run = run_once(commands(name, args.nodes, outdir, s5cmd, gw.endpoint_url), env, server, digest)
                    outs = sorted(outdir.iterdir())
                    if len(outs) != args.nodes or any(sha256_file(p) != digest for p in outs):
                        raise RuntimeError(f"{name}: outputs missing or wrong ({[p.name for p in outs]})")
                    if rnd:
                        samples[name].append(run)
                    print(
                        f"round {rnd} {name:23} {run['wall']:6.2f} s  cpu {run['cpu']:6.2f} s  "
                        f"egress {run['server_wrote'] / size:5.2f}x  server cpu {run['server_cpu']:5.2f} s",
                        file=sys.stderr,
                        flush=True,
                    )
    delivered_gb = size * args.nodes / 1e9
    rows = {}
    for name, runs in samples.items():
        wall = statistics.median(r["wall"] for r in runs)
        rows[name] = {
            "wall_s": wall,
            "per_node_MBps": size / wall / 1e6,
            "cpu_s_per_GB": statistics.median(r["cpu"] for r in runs) / delivered_gb,
            "egress_x": statistics.median(r["server_wrote"] for r in runs) / size,  # measured at the server
            "server_cpu_s_per_GB": statistics.median(r["server_cpu"] for r in runs) / delivered_gb,
            "samples": runs,
        }
    # Ratios within each round (the same minutes of this shared machine), then their median.
    for row in rows.values():
        for base in (S5CMD_PLAIN, S5CMD_CHECKED):
            if base in rows:
                per_round = [b["wall"] / r["wall"] for r, b in zip(row["samples"], rows[base]["samples"])]
                row[f"speed_vs_{base}"] = statistics.median(per_round)
                row[f"speed_vs_{base}_per_round"] = per_round
    load = " / ".join(f"{a:.2f}" for a in os.getloadavg())
    print(f"\n{size / 2**20:.0f} MiB object, {args.nodes} node(s), median of {args.repeat} interleaved rounds")
    print(f"load average at start {' / '.join(f'{a:.2f}' for a in load_start)}, at end {load}")
    print(
        f"{'':23} {'MB/s/node':>10} {'CPU s/GB':>9} {'egress':>7} {'srv CPU/GB':>10}"
        f" {'vs s5cmd':>9} {'vs s5cmd+sha+sync':>18}"
    )
    for name, r in rows.items():
        vs = [f"{r[k]:.2f}x" if k in r else "-" for k in (f"speed_vs_{S5CMD_PLAIN}", f"speed_vs_{S5CMD_CHECKED}")]
        print(
            f"{name:23} {r['per_node_MBps']:10.0f} {r['cpu_s_per_GB']:9.2f} {r['egress_x']:6.2f}x"
            f" {r['server_cpu_s_per_GB']:10.2f} {vs[0]:>9} {vs[1]:>18}"
        )
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
                "orders": orders,
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
