"""``parcomm bcast`` in the emulated cluster: real processes, real TCP, shaped NICs.

The platform (:class:`EmuBcastPlatform`) is a star of ``nodes + 1`` network
namespaces built by :class:`parcomm.emu.EmuCluster` (veth + Linux bridge, htb
shaping on every port, our own subnet, a reaper against ``kill -9``):

* hosts ``0 .. N-1`` are the nodes; each NIC is shaped to ``node_rate_bps``
  in both directions (the switch port towards the node and the node's own
  ``eth0``);
* host ``N`` is the storage: one process (:func:`storage_main`) running
  versitygw on the namespace's loopback and a :class:`~.proxy.PacingProxy`
  on the namespace's address, which paces every GET at a rate drawn from the
  scaled seed-004 profile. The storage NIC is shaped to ``storage_rate_bps``:
  that is the aggregate storage limit S.

A broadcast run (:meth:`EmuBcast.run_parcomm`) starts one real
``python -m parcomm bcast URL --rendezvous-dir DIR --rank R --nodes N --bind
ADDR ...`` per node in its namespace (:func:`parcomm.emu.launcher.spawn`);
the benchmark's baselines (``benchmarks/bcast_baselines.py``, outside the
library) start their own node programs on the same platform with
:meth:`EmuBcast.run_nodes` (or start mpiexec themselves and hand the outputs to
:meth:`EmuBcast.collect`).
Every output's sha256 is checked against the object's. Timing is the same
for every method: the clock starts when the last node registered in the
rendezvous directory (all nodes up, none has fetched anything) and node i
completes at the modification time of its output file (its last byte
written); the namespaces share the machine's clock.

Everything started is stopped by its pid; the namespaces go on leaving the
``with`` block, on an exception, on SIGTERM/SIGINT, and (reaper) after
``kill -9`` of this process.

Scaling (see :data:`SCALE_NOTE`): this machine has 2 cores, so the rates are
scaled down from the simulator's ``chiba2010`` profile (EC2 small, ~250 Mbit/s
NIC, S3 GETs at 3.5-11 MB/s) by one factor, keeping every ratio.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

from ...auth import KEY_ENV, JobKey
from .launch import read_status, write_status
from .storage_model import CHIBA2010

BUCKET = "bench"
KEY = "object.bin"
URL = f"s3://{BUCKET}/{KEY}"
STORAGE_PORT = 9000
MB = 1e6

#: TCP payload per byte on the wire at MTU 1500 (1448 B of payload with timestamps
#: in a 1514 B frame as htb counts it): a shaped link carries at most this share.
PAYLOAD_EFFICIENCY = 1448 / 1514

#: The simulator's default profile (storage_model.CHIBA2010, from seed 004 Fig. 1-4, each
#: value with its source there), read once: per-GET rates in MB/s as (weight, low, high),
#: uniform within a mode; the NIC assumption (EC2 small, 2010); the first-byte latency.
CHIBA2010_MODES = tuple((m["weight"], m["low_mb_s"], m["high_mb_s"]) for m in CHIBA2010["modes"])
CHIBA2010_NIC_MB_S = float(CHIBA2010["nic_down_mb_s"])
CHIBA2010_LATENCY_S = float(CHIBA2010["request_latency_s"])

SCALE_NOTE = (
    "All rates are the simulator's chiba2010 profile (seed 004) times one factor "
    "k = node_rate / 30 MB/s: node NIC 30 MB/s (EC2 small ~250 Mbit/s, assumption) -> node_rate; "
    "per-GET storage rates "
    + " / ".join(f"{lo:g}-{hi:g}" for _, lo, hi in CHIBA2010_MODES)
    + " MB/s with weights "
    + " / ".join(f"{w:g}" for w, _, _ in CHIBA2010_MODES)
    + " (Fig. 1/3) -> times k; "
    "storage aggregate: the paper saw no limit up to 32 nodes (Fig. 5) and about 50 MB/s summed over 8 "
    "nodes (Fig. 4), i.e. ~200 MB/s at 32 nodes if linear; we take S = 200 MB/s times k (an assumption: "
    "a lower estimate of S3's limit). Latencies are not scaled (0.05 s first byte, as the simulator)."
)


@dataclass(frozen=True)
class EmuBcastPlatform:
    """Rates of the emulated platform (bits/s for links, bytes/s for the profile)."""

    nodes: int
    node_rate_bps: float = 40e6  # each node's NIC, each way
    storage_rate_bps: float | None = None  # the storage NIC = aggregate limit S; None: 200 MB/s * k
    latency_s: float = CHIBA2010_LATENCY_S  # first-byte latency of each GET
    switch_buffer_bytes: int = 256 * 1024  # per switch port (bfifo)
    profile_scale: float | None = None  # None: k = node_rate / 30 MB/s
    error_rate: float = 0.0  # 503 SlowDown injected by the proxy

    @property
    def scale(self) -> float:
        if self.profile_scale is not None:
            return self.profile_scale
        return (self.node_rate_bps / 8) / (CHIBA2010_NIC_MB_S * MB)

    @property
    def storage_bps(self) -> float:
        return self.storage_rate_bps if self.storage_rate_bps is not None else 200 * MB * 8 * self.scale

    @property
    def modes(self) -> list[tuple[float, float, float]]:
        """(weight, low, high) per-GET rates in bytes/s."""
        return [(w, lo * MB * self.scale, hi * MB * self.scale) for w, lo, hi in CHIBA2010_MODES]

    @property
    def mean_get_rate(self) -> float:
        modes = self.modes
        return sum(w * (lo + hi) / 2 for w, lo, hi in modes) / sum(w for w, _, _ in modes)

    def payload_rate(self, bps: float) -> float:
        """TCP payload bytes/s a link of ``bps`` carries at most."""
        return bps / 8 * PAYLOAD_EFFICIENCY

    def platform_dict(self) -> dict:
        """The star platform for :class:`parcomm.emu.EmuCluster` (hosts h0..hN-1, storage last)."""
        from ...platform import as_platform

        base = as_platform(f"star:{self.nodes + 1},rate={int(self.node_rate_bps)}")
        base["name"] = f"bcast-{self.nodes}"
        base["switches"][0]["buffer"] = {"size": int(self.switch_buffer_bytes), "unit": "bytes"}
        storage = base["hosts"][-1]["name"]
        for link in base["links"]:
            if storage in (link["a"], link["b"]):
                link["rate_bps"] = float(self.storage_bps)
        # The storage relays many flows; node buffers as the platform default (256 KiB).
        for h in base["hosts"]:
            h["tcp"] = {**h["tcp"], "sndbuf_bytes": 1 << 20, "rcvbuf_bytes": 1 << 20}
        return base

    def bound(self, size: int, piece_size: int = 0):
        """The lower bound of :mod:`parcomm.models.storage_broadcast` on this platform.

        A node may open as many storage connections as it likes, so its own
        storage rate is taken as its NIC's (the bound is then the same for
        every method and setting).
        """
        from ...models.storage_broadcast import broadcast_lower_bound

        b = self.payload_rate(self.node_rate_bps)
        return broadcast_lower_bound(
            size,
            self.nodes,
            storage_rate=self.payload_rate(self.storage_bps),
            node_storage_rate=b,
            b_down=b,
            b_up=b,
            latency_s=self.latency_s,
            piece_size=piece_size,
        )

    def describe(self) -> dict:
        return {
            "nodes": self.nodes,
            "node_rate_mbit_s": self.node_rate_bps / 1e6,
            "storage_rate_mbit_s": self.storage_bps / 1e6,
            "scale_from_chiba2010": self.scale,
            "per_get_modes_mb_s": [(w, lo / MB, hi / MB) for w, lo, hi in self.modes],
            "mean_get_rate_mb_s": self.mean_get_rate / MB,
            "first_byte_latency_s": self.latency_s,
            "switch_buffer_bytes": self.switch_buffer_bytes,
            "error_rate": self.error_rate,
            "note": SCALE_NOTE,
        }


# ---------------------------------------------------------------- processes


def stop_pid(proc: subprocess.Popen, grace: float = 5.0) -> None:
    """SIGTERM our own child, then SIGKILL it if it lingers."""
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=grace)
        except ProcessLookupError:
            pass


def wait_all(procs: Sequence[subprocess.Popen], timeout: float) -> list[int | None]:
    """Wait for every process up to ``timeout`` s; kill (by pid) those still running."""
    deadline = time.monotonic() + timeout
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        time.sleep(0.05)
    codes = []
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
            codes.append(None)
        else:
            codes.append(p.returncode)
    return codes


# ---------------------------------------------------------------- the storage namespace


def object_bytes(size: int, seed: int) -> bytes:
    import numpy as np

    return np.random.default_rng(seed).bytes(size)


def storage_main(argv: Sequence[str] | None = None) -> int:
    """Inside the storage namespace: versitygw on loopback, the object and its hash
    list, and the pacing proxy on ``--listen``. Writes ``--ready`` (JSON) once
    serving; on SIGUSR1 writes the proxy's counters to ``--stats``; stops on SIGTERM."""
    p = argparse.ArgumentParser(prog="parcomm.apps.bcast.emu storage")
    p.add_argument("--root", required=True)
    p.add_argument("--listen", required=True, help="HOST:PORT of the proxy")
    p.add_argument("--size", type=int, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--piece-size", type=int, default=1 << 20)
    p.add_argument("--modes", required=True, help="JSON [[weight, low B/s, high B/s], ...]")
    p.add_argument("--latency", type=float, default=0.0)
    p.add_argument("--error-rate", type=float, default=0.0)
    p.add_argument("--ready", required=True)
    p.add_argument("--stats", required=True)
    args = p.parse_args(argv)

    from . import manifest
    from .proxy import PacingProxy
    from .s3 import S3Client
    from .versitygw import VersityGW, ensure_versitygw

    modes = [tuple(m) for m in json.loads(args.modes)]
    total = sum(w for w, _, _ in modes)

    def draw(rng: random.Random) -> float:
        x = rng.random() * total
        for w, lo, hi in modes:
            if x < w:
                return rng.uniform(lo, hi)
            x -= w
        return rng.uniform(modes[-1][1], modes[-1][2])

    got: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
        signal.signal(sig, lambda s, _f: got.append(s))
    host, _, port = args.listen.rpartition(":")
    data = object_bytes(args.size, args.seed)
    with VersityGW(args.root, binary=ensure_versitygw(install=False)) as gw:
        gw.create_bucket(BUCKET)
        client = S3Client(gw.s3_config())
        client.put_bytes(URL, data)
        manifest.prepare(URL, args.piece_size, client=client)
        sha = hashlib.sha256(data).hexdigest()
        del data
        with PacingProxy(
            gw.endpoint_url,
            profile=draw,
            first_byte_latency=args.latency,
            error_rate=args.error_rate,
            seed=args.seed,
            host=host,
            port=int(port),
        ) as proxy:
            write_status(
                args.ready,
                {
                    "endpoint": proxy.endpoint_url,
                    "sha256": sha,
                    "size": args.size,
                    "pid": os.getpid(),
                    **gw.environ(),
                    "AWS_ENDPOINT_URL_S3": proxy.endpoint_url,
                },
            )
            seq = 0
            while True:
                while not got:
                    signal.pause() if hasattr(signal, "pause") else time.sleep(0.1)
                sig = got.pop(0)
                if sig == signal.SIGUSR1:
                    seq += 1
                    snap = asdict(proxy.snapshot())
                    rates = snap.pop("rates")
                    write_status(args.stats, {"seq": seq, **snap, "rates_drawn": len(rates), "rates": rates[-5000:]})
                else:
                    break
    return 0


# ---------------------------------------------------------------- a run's result


@dataclass
class EmuRunResult:
    method: str  # e.g. "parcomm steal", "flat-ranged k=10"
    options: dict
    nodes: int
    size: int
    completion_s: float  # slowest node, from the common start
    node_times_s: list[float]
    reported_s: list[float]  # each node's own report (parcomm) or None
    bytes_from_storage: list[int]
    bytes_from_peers: list[int]
    origin_egress_bytes: int  # the proxy's count of GET body bytes
    storage_requests: int
    all_match: bool
    errors: dict = field(default_factory=dict)
    bound_s: float = 0.0
    wall_s: float = 0.0
    extra: dict = field(default_factory=dict)

    @property
    def fraction_of_bound(self) -> float:
        """bound / completion (1.0 = at the physical limit)."""
        return self.bound_s / self.completion_s if self.completion_s > 0 else 0.0

    @property
    def egress_ratio(self) -> float:
        return self.origin_egress_bytes / self.size if self.size else 0.0

    def to_dict(self) -> dict:
        return {**asdict(self), "fraction_of_bound": self.fraction_of_bound, "egress_ratio": self.egress_ratio}

    def line(self) -> str:
        return (
            f"{self.method:<34} {self.completion_s:7.2f} s  bound/time {self.fraction_of_bound:5.2f}  "
            f"egress {self.egress_ratio:5.2f}x  ok={self.all_match}"
            + (f"  errors={self.errors}" if self.errors else "")
        )


# ---------------------------------------------------------------- the harness


class EmuBcast:
    """An emulated platform with a storage namespace, for broadcast runs.

    ::

        with EmuBcast(EmuBcastPlatform(nodes=16), size=64 << 20) as eb:
            res = eb.run_parcomm("steal", connections=4)
            print(res.line())
    """

    def __init__(
        self,
        platform: EmuBcastPlatform,
        size: int,
        *,
        piece_size: int = 1 << 20,
        seed: int = 0,
        workdir: str | None = None,
        keep: bool = False,
    ) -> None:
        self.platform, self.size, self.piece_size, self.seed = platform, size, piece_size, seed
        self.keep = keep
        self._workdir_arg = workdir
        self.cluster = None
        self.storage: subprocess.Popen | None = None
        self.ready: dict = {}
        self.runs = 0

    # -- life cycle
    def __enter__(self) -> "EmuBcast":
        return self.up()

    def __exit__(self, *exc) -> None:
        self.down()

    def up(self) -> "EmuBcast":
        from ...emu import EmuCluster
        from .versitygw import ensure_versitygw

        ensure_versitygw(install=False)  # fail before building anything
        self.cluster = EmuCluster(self.platform.platform_dict(), sample_interval_s=None, keep_workdir=self.keep)
        try:
            self.cluster.up()
            # Inside the cluster's work directory unless given: the reaper, the next start-up's
            # sweep and `parcomm emu cleanup` then remove it with the cluster's, even after kill -9.
            self.work = Path(self._workdir_arg) if self._workdir_arg else Path(self.cluster.workdir) / "bcast"
            self.work.mkdir(parents=True, exist_ok=True)
            self._start_storage()
        except BaseException:
            self.down()
            raise
        return self

    def down(self) -> None:
        try:
            if self.storage is not None:
                stop_pid(self.storage, grace=10.0)
                self.storage = None
        finally:
            if self.cluster is not None:
                self.cluster.down()
                self.cluster = None
            if not self.keep and getattr(self, "work", None) is not None:
                shutil.rmtree(self.work, ignore_errors=True)

    @property
    def node_ns(self) -> list[str]:
        return self.cluster.namespaces[: self.platform.nodes]

    @property
    def node_addr(self) -> list[str]:
        return self.cluster.addresses[: self.platform.nodes]

    @property
    def storage_ns(self) -> str:
        return self.cluster.namespaces[self.platform.nodes]

    @property
    def storage_addr(self) -> str:
        return self.cluster.addresses[self.platform.nodes]

    def env(self) -> dict[str, str]:
        """S3 settings and the job key for node processes (secrets via the environment, not argv)."""
        if not hasattr(self, "_key"):
            self._key = JobKey.generate()  # one job: every node of this emulated cluster
        return {**{k: v for k, v in self.ready.items() if k.startswith("AWS_")}, KEY_ENV: self._key.hex()}

    def _start_storage(self) -> None:
        pf = self.platform
        root = self.work / "s3"
        root.mkdir(exist_ok=True)
        self._ready_path, self._stats_path = self.work / "storage-ready.json", self.work / "storage-stats.json"
        argv = [
            sys.executable,
            "-m",
            "parcomm.apps.bcast.emu",
            "storage",
            "--root",
            str(root),
            "--listen",
            f"{self.storage_addr}:{STORAGE_PORT}",
            "--size",
            str(self.size),
            "--seed",
            str(self.seed),
            "--piece-size",
            str(self.piece_size),
            "--modes",
            json.dumps(pf.modes),
            "--latency",
            str(pf.latency_s),
            "--error-rate",
            str(pf.error_rate),
            "--ready",
            str(self._ready_path),
            "--stats",
            str(self._stats_path),
        ]
        from ...emu.launcher import spawn

        self.storage = spawn(self.storage_ns, argv, self.work / "storage.log")
        deadline = time.monotonic() + 120 + self.size / 20e6
        while time.monotonic() < deadline:
            ready = read_status(self._ready_path)
            if ready is not None:
                self.ready = ready
                return
            if self.storage.poll() is not None:
                break
            time.sleep(0.1)
        log = (self.work / "storage.log").read_text(errors="replace")[-2000:]
        raise RuntimeError(f"the storage namespace did not come up: {log}")

    def proxy_stats(self) -> dict:
        """The proxy's counters now (asks the storage process with SIGUSR1)."""
        before = (read_status(self._stats_path) or {}).get("seq", 0)
        self.storage.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            stats = read_status(self._stats_path)
            if stats is not None and stats.get("seq", 0) > before:
                return stats
            time.sleep(0.02)
        raise RuntimeError("the storage process did not report its counters")

    # -- one run of N node processes
    def new_run_dir(self, name: str) -> Path:
        self.runs += 1
        d = self.work / f"run{self.runs:02d}-{name}"
        (d / "rdv").mkdir(parents=True)
        (d / "out").mkdir()
        (d / "log").mkdir()
        return d

    def run_nodes(
        self, method: str, options: dict, argv_for_rank, timeout: float, run_dir: Path, parse_report=None
    ) -> EmuRunResult:
        """Start ``argv_for_rank(rank)`` in every node namespace, wait, check, time."""
        from ...emu.launcher import spawn

        n = self.platform.nodes
        before = self.proxy_stats()
        t_launch = time.time()
        cpu0 = cpu_times()
        procs = [
            spawn(self.node_ns[r], argv_for_rank(r), run_dir / "log" / f"{r}.log", env=self.env()) for r in range(n)
        ]
        try:
            codes = wait_all(procs, timeout)
        finally:
            for p in procs:
                stop_pid(p)
        wall = time.time() - t_launch
        cpu = cpu_busy(cpu0, cpu_times())
        errors: dict = {}
        reports = []
        for r in range(n):
            log = (run_dir / "log" / f"{r}.log").read_text(errors="replace")
            if codes[r] != 0:
                errors[r] = f"exit {codes[r]}: " + " | ".join(log.strip().splitlines()[-3:])
            reports.append(parse_report(log) if parse_report else _last_json(log))
        return self.collect(
            method,
            options,
            run_dir,
            before=before,
            t_launch=t_launch,
            wall=wall,
            errors=errors,
            reports=reports,
            extra={"cpu_busy": round(cpu, 3)},
        )

    def collect(
        self,
        method: str,
        options: dict,
        run_dir: Path,
        *,
        before: dict,
        t_launch: float,
        wall: float,
        errors: dict,
        reports: Sequence[dict | None],
        extra: dict | None = None,
    ) -> EmuRunResult:
        """The result of a run whose node programs have ended, however they were started.

        Every output ``run_dir/out/object.R`` is checked against the object's
        sha256 and timed from the last registration in ``run_dir/rdv`` (the
        launch if some node never registered) to its last write; the proxy's
        counters are taken since ``before``; ``reports[r]`` is node r's own
        report (bytes from storage and peers, seconds) or None; ``errors``
        makes the run fail. The outputs are deleted.
        """
        n = self.platform.nodes
        time.sleep(0.3)  # let the proxy finish counting the last bodies
        after = self.proxy_stats()
        rdv = [run_dir / "rdv" / f"rank-{r}.json" for r in range(n)]
        starts = [f.stat().st_mtime for f in rdv if f.exists()]
        t0 = max(starts) if len(starts) == n else t_launch
        times, matches = [], []
        for r in range(n):
            out = run_dir / "out" / f"object.{r}"
            ok = out.exists() and out.stat().st_size == self.size and _sha256_file(out) == self.ready["sha256"]
            matches.append(ok)
            times.append(out.stat().st_mtime - t0 if out.exists() else float("nan"))
        from_storage = [int((rep or {}).get("bytes_from_storage", 0)) for rep in reports]
        from_peers = [int((rep or {}).get("bytes_from_peers", 0)) for rep in reports]
        reported = [(rep or {}).get("run_s") for rep in reports]
        ok_times = [t for t in times if t == t]
        res = EmuRunResult(
            method=method,
            options=options,
            nodes=n,
            size=self.size,
            completion_s=max(ok_times) if len(ok_times) == n else float("inf"),
            node_times_s=times,
            reported_s=reported,
            bytes_from_storage=from_storage,
            bytes_from_peers=from_peers,
            origin_egress_bytes=after["bytes_served"] - before["bytes_served"],
            storage_requests=after["get_requests"] - before["get_requests"],
            all_match=all(matches) and not errors,
            errors=errors,
            bound_s=self.platform.bound(self.size, self.piece_size).seconds,
            wall_s=wall,
            extra={
                "start_skew_s": (max(starts) - min(starts)) if starts else None,
                **(extra or {}),
                "injected_errors": after["injected_errors"] - before["injected_errors"],
                "rates_drawn_mb_s": _new_rates(before, after),
            },
        )
        for r in range(n):  # outputs can be large: keep only what is needed
            (run_dir / "out" / f"object.{r}").unlink(missing_ok=True)
        return res

    def run_parcomm(
        self,
        algo: str = "steal",
        *,
        connections: int = 2,
        overlap: bool = False,
        work_pieces: int = 8,
        peers: int = 4,
        seed: int = 0,
        timeout: float = 600.0,
        serve: str = "uploaders",
        choke_interval: float = 5.0,
        requests: int = 4,
        verify: str = "whole",
        write: str = "cached",
    ) -> EmuRunResult:
        """One broadcast with the real tool, ``python -m parcomm bcast ...`` on every node."""
        opts = {
            "algo": algo,
            "connections": connections,
            "overlap": overlap,
            "work_pieces": work_pieces,
            "peers": peers,
            "seed": seed,
            "serve": serve,
            "choke_interval": choke_interval,
            "requests": requests,
            "verify": verify,
            "write": write,
        }
        name = f"parcomm-{algo}-c{connections}" + ("-overlap" if overlap else "") + f"-p{peers}"
        run_dir = self.new_run_dir(name)
        flags = _bcast_flags(opts, timeout) + ["--nodes", str(self.platform.nodes)]
        flags += ["--endpoint-url", self.ready["endpoint"], "--rendezvous-dir", str(run_dir / "rdv")]

        def argv(rank: int) -> list[str]:
            out = str(run_dir / "out" / f"object.{rank}")
            where = ["--rank", str(rank), "--bind", self.node_addr[rank], "--out", out]
            return [sys.executable, "-m", "parcomm", "bcast", URL, *where, *flags]

        def parse(log: str) -> dict | None:
            doc = _last_json(log)
            nodes = (doc or {}).get("nodes") or []
            return nodes[0] if nodes else None

        label = _bcast_label(opts)
        return self.run_nodes(label, opts, argv, timeout + 60, run_dir, parse_report=parse)


def _bcast_flags(opts: dict, timeout: float) -> list[str]:
    """The options every node of one ``parcomm bcast`` run gets (run_parcomm's keywords)."""
    named = {
        "--algo": opts["algo"],
        "--connections": opts["connections"],
        "--work-pieces": opts["work_pieces"],
        "--peers": opts["peers"],
        "--seed": opts["seed"],
        "--serve": opts["serve"],
        "--choke-interval": f"{opts['choke_interval']:g}s",
        "--requests": opts["requests"],
        "--verify": opts["verify"],
        "--write": opts["write"],
        "--timeout": f"{timeout:g}s",
    }
    flags = [str(x) for pair in named.items() for x in pair]
    return flags + ["--overlap" if opts["overlap"] else "--no-overlap", "--json"]


def _bcast_label(opts: dict) -> str:
    """A run's name in tables: what differs from the defaults."""
    return (
        f"parcomm {opts['algo']} c={opts['connections']}"
        + (" overlap" if opts["overlap"] else "")
        + (f" peers={opts['peers']}" if opts["peers"] != 4 else "")
        + (f" serve={opts['serve']}" if opts["serve"] != "uploaders" else "")
        + (f" choke={opts['choke_interval']:g}s" if opts["choke_interval"] != 5.0 else "")
        + (f" requests={opts['requests']}" if opts["requests"] != 4 else "")
        + (f" verify={opts['verify']}" if opts["verify"] != "whole" else "")
        + (f" write={opts['write']}" if opts["write"] != "cached" else "")
        + f" work={opts['work_pieces']}"
    )


def cpu_times() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    with open("/proc/stat") as f:
        vals = [float(x) for x in f.readline().split()[1:]]
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0.0)
    return sum(vals) - idle, sum(vals)


def cpu_busy(before: tuple[float, float], after: tuple[float, float]) -> float:
    """Fraction of the machine's CPU time busy between two :func:`cpu_times` (all cores)."""
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total > 0 else 0.0


def _new_rates(before: dict, after: dict) -> list[float]:
    """Per-GET rates (MB/s) the proxy drew during one run."""
    k = min(after.get("rates_drawn", 0) - before.get("rates_drawn", 0), len(after.get("rates", [])))
    return [round(x / MB, 3) for x in after["rates"][len(after["rates"]) - k :]] if k > 0 else []


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def _last_json(text: str) -> dict | None:
    """The last line of ``text`` that parses as a JSON object (or the whole text)."""
    try:
        doc = json.loads(text)
        if isinstance(doc, dict):
            return doc
    except ValueError:
        pass
    start = text.rfind("\n{")
    while start >= -1:
        try:
            doc = json.loads(text[start + 1 :])
            if isinstance(doc, dict):
                return doc
        except ValueError:
            pass
        if start <= 0:
            break
        start = text.rfind("\n{", 0, start)
    return None


def netns_available() -> str | None:
    """None if the emulation can run here, else the reason it cannot."""
    if not sys.platform.startswith("linux"):
        return "network namespaces need Linux"
    if os.geteuid() != 0:
        return "the emulation needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN)"
    if shutil.which("ip") is None or shutil.which("tc") is None:
        return "iproute2 (ip, tc) is not installed"
    from .versitygw import find_versitygw

    if find_versitygw() is None:
        return "versitygw is not installed (scripts/install-versitygw.sh)"
    probe = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"ip netns does not work here: {probe.stderr.strip()}"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "storage":
        return storage_main(args[1:])
    print("usage: python -m parcomm.apps.bcast.emu storage ...", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
