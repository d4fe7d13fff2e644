"""``parcomm bcast`` against its baselines on identical emulated platforms (issue 9).

One emulated platform (parcomm.apps.bcast.emu: N node namespaces with shaped
NICs, one storage namespace with versitygw behind the pacing proxy, the
seed-004 profile scaled to this machine), and on it, one after another:

* parcomm bcast: flat, nonsteal, steal, and steal with more S3 connections,
  --overlap and more peers;
* (a) flat tree with k concurrent ranged GETs per node (boto3 transfer
  manager defaults: 8 MiB parts, 10 threads);
* (b) MPICH MPI_Bcast after rank 0 downloaded the object (k ranged GETs);
* (c) a libtorrent swarm: each node injects its 1/N of the pieces fetched from
  S3; and one seeded by rank 0 after a full download.

Each result: completion time (slowest node, from the moment every node has
joined to its output's last write), bound/time (1.0 = the lower bound of
parcomm.models.storage_broadcast), origin egress / object size (the proxy's
count of GET body bytes), every output's sha256 checked.

    sudo python benchmarks/bcast_baselines.py --nodes 16 --size 64MiB
    sudo python benchmarks/bcast_baselines.py --nodes 4 --size 8MiB --quick   # a smoke run

Needs root (network namespaces), versitygw, mpich/mpi4py, and libtorrent
(``pip install .[bench]``).

The baselines are benchmark harness, not product: their node programs are
``bcast_baselines_node.py`` (next to this file), started in the node
namespaces by the library's :meth:`parcomm.apps.bcast.emu.EmuBcast.run_nodes`
(mpiexec by :func:`parcomm.emu.launcher.spawn`, its outputs checked and timed
by :meth:`~parcomm.apps.bcast.emu.EmuBcast.collect`); the run_* functions
below are their harness side.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform as _platform
import sys
import time
from pathlib import Path
from typing import Sequence

from parcomm.apps.bcast.emu import (
    SCALE_NOTE,
    EmuBcast,
    EmuBcastPlatform,
    EmuRunResult,
    cpu_busy,
    cpu_times,
    netns_available,
    object_bytes,
    stop_pid,
)
from parcomm.emu.launcher import spawn
from parcomm.platform.units import parse_size

HERE = Path(__file__).resolve().parent
#: The baselines' node programs, run by path in each node namespace.
NODE = HERE / "bcast_baselines_node.py"
if str(HERE) not in sys.path:  # imported by path (tests): find the node module next to this file
    sys.path.insert(0, str(HERE))
import bcast_baselines_node as B  # noqa: E402

#: name -> (kind, options). "parcomm" options go to EmuBcast.run_parcomm.
METHODS: dict[str, tuple[str, dict]] = {
    "parcomm-flat": ("parcomm", {"algo": "flat", "connections": 2}),
    "parcomm-nonsteal": ("parcomm", {"algo": "nonsteal", "connections": 2}),
    "parcomm-steal": ("parcomm", {"algo": "steal", "connections": 2}),
    "parcomm-steal-c4": ("parcomm", {"algo": "steal", "connections": 4}),
    "parcomm-steal-overlap": ("parcomm", {"algo": "steal", "connections": 2, "overlap": True}),
    "parcomm-steal-c4-overlap": ("parcomm", {"algo": "steal", "connections": 4, "overlap": True}),
    "parcomm-steal-c4-overlap-p8": ("parcomm", {"algo": "steal", "connections": 4, "overlap": True, "peers": 8}),
    # Beyond the paper: upload to the neighbours holding least (a job's nodes cooperate), re-chosen each second.
    "parcomm-steal-overlap-neediest": (
        "parcomm",
        {"algo": "steal", "connections": 2, "overlap": True, "serve": "neediest", "choke_interval": 1.0},
    ),
    "parcomm-steal-overlap-neediest-r1": (
        "parcomm",
        {"algo": "steal", "connections": 2, "overlap": True, "serve": "neediest", "choke_interval": 1.0, "requests": 1},
    ),
    # The same with the data plane's cheaper settings (issue 17): one sha256 pass, O_DIRECT output.
    "parcomm-steal-overlap-neediest-r1-pieces": (
        "parcomm",
        {
            **{"algo": "steal", "connections": 2, "overlap": True, "serve": "neediest", "choke_interval": 1.0},
            **{"requests": 1, "verify": "pieces", "write": "direct"},
        },
    ),
    # Neighbours: 6 instead of 4 (more uploaders to pull from once storage is done).
    "parcomm-steal-overlap-neediest-r1-p6": (
        "parcomm",
        {
            **{"algo": "steal", "connections": 2, "overlap": True, "serve": "neediest", "choke_interval": 1.0},
            **{"requests": 1, "peers": 6},
        },
    ),
    # Three GETs per node at once: the object enters the swarm sooner (16 x 3 GETs at
    # 0.3-0.9 MB/s each stay under the 133 Mbit/s storage NIC).
    "parcomm-steal-c3-overlap-neediest-r1": (
        "parcomm",
        {"algo": "steal", "connections": 3, "overlap": True, "serve": "neediest", "choke_interval": 1.0, "requests": 1},
    ),
    "parcomm-steal-overlap-r1": ("parcomm", {"algo": "steal", "connections": 2, "overlap": True, "requests": 1}),
    "parcomm-steal-c4-overlap-neediest": (
        "parcomm",
        {"algo": "steal", "connections": 4, "overlap": True, "serve": "neediest", "choke_interval": 1.0},
    ),
    "ranged-k10": ("ranged", {"k": B.BOTO3_CONCURRENCY}),
    # Tuned: parts of 1 MiB, so a slow GET (the profile's slow mode) holds back 1 MiB, not 8.
    "ranged-k10-1MiB": ("ranged", {"k": B.BOTO3_CONCURRENCY, "part": 1 << 20}),
    "mpich-bcast": ("mpi", {"k": B.BOTO3_CONCURRENCY}),
    "libtorrent-inject": ("torrent", {"seeding": "inject"}),
    "libtorrent-seed1": ("torrent", {"seeding": "one"}),
}
QUICK = ["parcomm-steal", "parcomm-steal-c4-overlap", "ranged-k10", "mpich-bcast", "libtorrent-inject"]


# ---------------------------------------------------------------- the baselines' harness side


def _node_argv(eb: EmuBcast, kind: str, run_dir: Path, rank: int, extra: Sequence[str]) -> list[str]:
    return [
        sys.executable,
        str(NODE),
        kind,
        "--out",
        str(run_dir / "out" / f"object.{rank}"),
        "--rdv",
        str(run_dir / "rdv"),
        "--rank",
        str(rank),
        "--nodes",
        str(eb.platform.nodes),
        "--bind",
        eb.node_addr[rank],
        *extra,
    ]


def run_ranged(
    eb: EmuBcast, k: int = B.BOTO3_CONCURRENCY, part: int = B.BOTO3_PART, timeout: float = 900.0
) -> EmuRunResult:
    run_dir = eb.new_run_dir(f"ranged-k{k}")
    extra = ["--k", str(k), "--part", str(part), "--timeout", str(timeout)]
    return eb.run_nodes(
        f"flat ranged GETs k={k} part={part >> 20}MiB",
        {"k": k, "part": part},
        lambda r: _node_argv(eb, "ranged", run_dir, r, extra),
        timeout + 60,
        run_dir,
    )


def run_torrent(
    eb: EmuBcast,
    k: int = B.BOTO3_CONCURRENCY,
    part: int = B.BOTO3_PART,
    piece: int = 1 << 20,
    seeding: str = "inject",
    timeout: float = 900.0,
) -> EmuRunResult:
    run_dir = eb.new_run_dir(f"torrent-{seeding}")
    torrent = run_dir / "object.torrent"
    torrent.write_bytes(B.make_torrent_bytes(object_bytes(eb.size, eb.seed), "object.bin", piece))
    extra = [
        "--k",
        str(k),
        "--part",
        str(part),
        "--piece",
        str(piece),
        "--timeout",
        str(timeout),
        "--peers",
        json.dumps(eb.node_addr),
        "--torrent",
        str(torrent),
        "--seeding",
        seeding,
    ]
    label = (
        "libtorrent swarm, 1/N each injected from S3"
        if seeding == "inject"
        else "libtorrent swarm, rank 0 from S3 then seeds"
    )
    return eb.run_nodes(
        f"{label} (k={k})",
        {"k": k, "part": part, "piece": piece, "seeding": seeding},
        lambda r: _node_argv(eb, "torrent", run_dir, r, extra),
        timeout + 60,
        run_dir,
    )


NSEXEC = """#!/bin/sh
# hydra's launcher: "$0 [ssh options] HOST COMMAND": run COMMAND in HOST's network namespace.
map="$PARCOMM_NS_MAP"
while [ $# -gt 0 ]; do
  case "$1" in -*) shift ;; *) break ;; esac
done
host="$1"; shift
ns=$(printf '%s\\n' "$map" | tr ' ' '\\n' | grep "^$host=" | cut -d= -f2)
[ -n "$ns" ] || { echo "nsexec: no namespace for $host" >&2; exit 1; }
# A UTS namespace of its own with its own host name: MPICH tells local ranks
# (shared memory) from remote ones (netmod, TCP) by host name, and network
# namespaces share the machine's; without this every rank is "local".
exec ip netns exec "$ns" unshare --uts sh -c "hostname node-$(echo $host | tr . -); $*"
"""


def run_mpi(
    eb: EmuBcast, k: int = B.BOTO3_CONCURRENCY, part: int = B.BOTO3_PART, timeout: float = 900.0
) -> EmuRunResult:
    """MPICH's mpiexec (hydra) runs in node 0's namespace; its launcher (a shell
    script given as ``-launcher-exec``) starts the hydra proxy of host ADDR in
    ADDR's namespace, so every rank runs in its own node namespace and MPICH's
    TCP traffic crosses the shaped NICs and the bridge."""
    import shutil as _sh

    run_dir = eb.new_run_dir("mpi")
    script = run_dir / "nsexec.sh"
    script.write_text(NSEXEC)
    script.chmod(0o755)
    mpiexec = _sh.which("mpiexec.hydra") or _sh.which("mpiexec")
    nodes = eb.platform.nodes
    ns_map = " ".join(f"{a}={ns}" for a, ns in zip(eb.node_addr, eb.node_ns))
    argv_mpi = [
        mpiexec,
        "-launcher",
        "ssh",
        "-launcher-exec",
        str(script),
        "-hosts",
        ",".join(eb.node_addr),
        "-n",
        str(nodes),
        "-ppn",
        "1",
        "-iface",
        "eth0",
        "-genv",
        "PARCOMM_NS_MAP",
        ns_map,
        # Network only: no shared memory between ranks (they share /dev/shm and the boot
        # id, so MPICH and UCX would otherwise move the data through memory, unshaped).
        "-genv",
        "MPIR_CVAR_NOLOCAL",
        "1",
        "-genv",
        "UCX_TLS",
        "tcp,self",
        "-genv",
        "UCX_NET_DEVICES",
        "eth0",
        "-genv",
        "FI_PROVIDER",
        "tcp",
        sys.executable,
        str(NODE),
        "mpi",
        "--out",
        str(run_dir / "out" / "object.{rank}"),
        "--rdv",
        str(run_dir / "rdv"),
        "--k",
        str(k),
        "--part",
        str(part),
        "--timeout",
        str(timeout),
    ]
    before = eb.proxy_stats()
    t_launch = time.time()
    cpu0 = cpu_times()
    proc = spawn(eb.node_ns[0], argv_mpi, run_dir / "log" / "mpiexec.log", env={**eb.env(), "PARCOMM_NS_MAP": ns_map})
    try:
        proc.wait(timeout=timeout + 60)
    except Exception:
        pass
    finally:
        stop_pid(proc)
    wall = time.time() - t_launch
    cpu = cpu_busy(cpu0, cpu_times())
    log = (run_dir / "log" / "mpiexec.log").read_text(errors="replace")
    reports: dict[int, dict] = {}
    for line in log.splitlines():
        if line.startswith("{"):
            try:
                doc = json.loads(line)
                reports[int(doc["rank"])] = doc
            except (ValueError, KeyError):
                pass
    code = proc.returncode
    errors = {} if code == 0 else {"mpiexec": f"exit {code}: " + " | ".join(log.strip().splitlines()[-4:])}
    return eb.collect(
        "MPICH MPI_Bcast after 1 download",
        {"k": k, "part": part},
        run_dir,
        before=before,
        t_launch=t_launch,
        wall=wall,
        errors=errors,
        reports=[reports.get(r) for r in range(nodes)],
        extra={
            "download_s": reports.get(0, {}).get("download_s"),
            "mpi_library": reports.get(0, {}).get("mpi_library"),
            "cpu_busy": round(cpu, 3),
        },
    )


def run_method(eb: EmuBcast, name: str, work_pieces: int, timeout: float):
    kind, opts = METHODS[name]
    if kind == "parcomm":
        return eb.run_parcomm(work_pieces=work_pieces, timeout=timeout, **opts)
    if kind == "ranged":
        return run_ranged(eb, timeout=timeout, **opts)
    if kind == "mpi":
        return run_mpi(eb, timeout=timeout, **opts)
    return run_torrent(eb, piece=eb.piece_size, timeout=timeout, **opts)


def markdown(doc: dict) -> str:
    pf = doc["platform"]
    lines = [
        f"# parcomm bcast vs baselines, emulated, {pf['nodes']} nodes, {doc['size'] / 2**20:.0f} MiB",
        "",
        f"Platform: node NIC {pf['node_rate_mbit_s']:.0f} Mbit/s each way, storage NIC (aggregate S) "
        f"{pf['storage_rate_mbit_s']:.0f} Mbit/s, per-GET rates drawn from "
        + ", ".join(f"{w:.0%} U({lo:.2f}, {hi:.2f})" for w, lo, hi in pf["per_get_modes_mb_s"])
        + f" MB/s, first byte {pf['first_byte_latency_s']} s; pieces {doc['piece_size'] >> 10} KiB. "
        f"Lower bound {doc['bound']['seconds']:.2f} s ({doc['bound']['binding']}).",
        "",
        f"Command: `{doc['command']}`",
        "",
        "| method | completion s (median) | trials (all, s) | bound/time | origin egress / size | all sha256 ok | CPU busy |",
        "|---|---:|---:|---:|---:|:---:|---:|",
    ]
    for row in doc["summary"]:
        every = ", ".join(f"{t:.1f}" for t in row["all_times_s"])
        lines.append(
            f"| {row['method']} | {row['completion_s']:.2f} | {row['trials']} ({every}) | {row['fraction_of_bound']:.2f} "
            f"| {row['egress_ratio']:.2f} | {'yes' if row['all_match'] else 'NO'} | {row['cpu_busy']:.0%} |"
        )
    lines += [
        "",
        "bound/time: the lower bound over the median completion time (1.0 = at the bound). CPU busy: the "
        "whole machine (2 cores, shared with other work) during the run.",
        "",
        SCALE_NOTE,
        "",
    ]
    return "\n".join(lines)


def summarize(results: list[dict]) -> list[dict]:
    by: dict[str, list[dict]] = {}
    for r in results:
        by.setdefault(r["name"], []).append(r)
    rows = []
    for name, rs in by.items():
        times = sorted(r["completion_s"] for r in rs)
        med = times[len(times) // 2] if len(times) % 2 else sum(times[len(times) // 2 - 1 : len(times) // 2 + 1]) / 2
        bound = rs[0]["bound_s"]
        rows.append(
            {
                "name": name,
                "method": rs[0]["method"],
                "completion_s": med,
                "trials": len(rs),
                "all_times_s": times,
                "fraction_of_bound": bound / med if med else 0.0,
                "egress_ratio": max(r["egress_ratio"] for r in rs),
                "all_match": all(r["all_match"] for r in rs),
                "cpu_busy": max((r["extra"].get("cpu_busy") or 0.0) for r in rs),
            }
        )
    rows.sort(key=lambda r: r["completion_s"])
    return rows


def render(path: str) -> str:
    """Re-write the markdown table of a results JSON (``--render``)."""
    doc = json.loads(Path(path).read_text())
    doc["summary"] = summarize(doc["results"])
    Path(path).with_suffix(".md").write_text(markdown(doc))
    return markdown(doc)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=16)
    p.add_argument("--size", default="32MiB")
    p.add_argument("--piece-size", default="256KiB")
    p.add_argument("--work-pieces", type=int, default=2)
    p.add_argument("--node-rate", type=float, default=20e6, help="node NIC, bit/s")
    p.add_argument(
        "--storage-rate", type=float, default=None, help="storage NIC = aggregate S, bit/s (default: scaled)"
    )
    p.add_argument("--methods", default=None, help="comma-separated subset of: " + ",".join(METHODS))
    p.add_argument("--quick", action="store_true", help="only " + ",".join(QUICK))
    p.add_argument("--trials", type=int, default=1)
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("--out", default=str(HERE / "results" / "bcast_baselines.json"))
    p.add_argument("--keep", action="store_true", help="keep the work directory (logs)")
    p.add_argument(
        "--merge",
        action="store_true",
        help="add these results to --out's (same size and platform) as further trials; failed runs of the same methods are dropped",
    )
    p.add_argument("--render", action="store_true", help="only re-write --out's markdown table from its JSON")
    args = p.parse_args(argv)
    if args.render:
        print(render(args.out))
        return 0
    why = netns_available()
    if why:
        print(f"cannot run the emulation: {why}", file=sys.stderr)
        return 2
    size = parse_size(args.size, "--size")
    piece = parse_size(args.piece_size, "--piece-size")
    names = QUICK if args.quick else (args.methods.split(",") if args.methods else list(METHODS))
    unknown = [n for n in names if n not in METHODS]
    if unknown:
        p.error(f"unknown methods {unknown}")
    pf = EmuBcastPlatform(nodes=args.nodes, node_rate_bps=args.node_rate, storage_rate_bps=args.storage_rate)
    bound = pf.bound(size, piece)
    results = []
    t0 = time.time()
    with EmuBcast(pf, size, piece_size=piece, keep=args.keep) as eb:
        print(f"platform up in {eb.cluster.setup_s:.1f} s; work dir {eb.work}; bound {bound.seconds:.2f} s", flush=True)
        for trial in range(args.trials):
            for name in names:
                res = run_method(eb, name, args.work_pieces, args.timeout)
                print(f"[{trial}] {res.line()}  cpu {res.extra.get('cpu_busy')}", flush=True)
                results.append({"name": name, "trial": trial, **res.to_dict()})
    command = "python benchmarks/bcast_baselines.py " + " ".join(sys.argv[1:] if argv is None else argv)
    out = Path(args.out)
    commands = [command]
    if args.merge and out.exists():
        old = json.loads(out.read_text())
        if old["size"] != size or old["platform"] != json.loads(json.dumps(pf.describe())):
            p.error(f"--merge: {out} is for another size or platform")
        # Keep earlier trials (a failed one of a method run again is replaced); number the new ones after them.
        kept = [r for r in old["results"] if not (r["name"] in names and not r["all_match"])]
        for r in results:
            r["trial"] += sum(1 for k in kept if k["name"] == r["name"])
        results = kept + results
        commands = old.get("commands", [old["command"]]) + commands
    doc = {
        "commands": commands,
        "command": " && ".join(commands),
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0)),
        "machine": {"cpus": os.cpu_count(), "kernel": _platform.release(), "python": _platform.python_version()},
        "size": size,
        "piece_size": piece,
        "work_pieces": args.work_pieces,
        "platform": pf.describe(),
        "bound": dataclasses.asdict(bound),
        "summary": summarize(results),
        "results": results,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1, default=float))
    out.with_suffix(".md").write_text(markdown(doc))
    print(markdown(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
