"""How the nodes of a real broadcast start and find each other.

* :func:`run_one` — this process is one node; it learns the others through a
  rendezvous address, a shared directory, or MPI (``mpiexec -n N``).
* :func:`run_local` — N node processes on this machine (``--local N``): the
  parent reserves their listening sockets, starts them, shows progress from
  their status files and collects their reports.

Every node checks the object and its hash list *before* joining, so a
missing object or bad credentials is one clear error per node and no output
file anywhere.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Mapping

from ... import lifetime
from ...auth import KEY_ENV, JobKey, JobKeyError, resolve_key
from . import manifest as manifests
from .node import BcastConfig
from .real import BcastError, NodeReport, Progress, RealNode, is_usage_error
from .rendezvous import Endpoint, RendezvousError, local_table, reserve_local_sockets, via_address, via_directory
from .s3 import DeadlineExceeded, S3Client, S3Config


@dataclass(frozen=True)
class Job:
    """What every node of one broadcast is told."""

    url: str
    out: str  # may contain {rank}
    algo: str = "steal"
    config: BcastConfig = BcastConfig()
    s3: S3Config = S3Config()
    timeout: float = 3600.0
    linger: float = 60.0
    join_timeout: float = 30.0  # s: a rank not reachable by then is counted out (it may join later)
    faults: dict = dataclasses.field(default_factory=dict)  # rank -> [fault, ...] (tests)
    manifest_url: str | None = None  # where the hash list is, if not the sidecar next to the object
    verify: str = "pieces"  # "pieces": every piece's sha256 (one pass); "whole": and the whole object's
    write: str = "cached"  # "cached": through the page cache; "direct": O_DIRECT (real.WRITE_MODES)

    def out_for(self, rank: int) -> str:
        return self.out.replace("{rank}", str(rank))

    def to_json(self) -> str:
        return json.dumps({**dataclasses.asdict(self), "config": self.config.to_dict()})

    @classmethod
    def from_json(cls, text: str) -> "Job":
        raw = json.loads(text)
        return cls(
            **{
                **raw,
                "config": BcastConfig(**raw["config"]),
                "s3": S3Config(**raw["s3"]),
                "faults": {int(k): v for k, v in raw.get("faults", {}).items()},
            }
        )


def check_object(job: Job, client: S3Client) -> manifests.Manifest:
    """HEAD the object and load its hash list (raises S3Error subclasses; BcastError when
    the job's deadline passes first)."""
    try:
        info = client.head(job.url)
        return manifests.load(job.url, client=client, info=info, manifest_url=job.manifest_url)
    except DeadlineExceeded as exc:
        raise BcastError(f"no completion within {job.timeout:g} s (--timeout): {exc}") from None


def _node(
    job: Job,
    rank: int,
    table: list[Endpoint],
    listen: socket.socket,
    client: S3Client,
    manifest: manifests.Manifest,
    on_progress: Callable[[Progress], None] | None,
    key: JobKey,
    out=None,
) -> NodeReport:
    config = replace(job.config, piece_size=manifest.piece_size)
    node = RealNode(
        rank,
        table,
        listen,
        job.url,
        job.out_for(rank) if out is None else out,
        manifest,
        algo=job.algo,
        config=config,
        client=client,
        key=key,
        on_progress=on_progress,
        timeout=job.timeout,
        linger=job.linger,
        join_timeout=job.join_timeout,
        faults=tuple(job.faults.get(rank, ())),
        verify=job.verify,
        write=job.write,
    )
    return node.run()


def run_one(
    job: Job,
    *,
    rank: int | None = None,
    nodes: int | None = None,
    rendezvous: str | None = None,
    rendezvous_dir: str | None = None,
    mpi: bool = False,
    bind: str = "127.0.0.1",
    advertise: str | None = None,
    key: JobKey | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    comm=None,
    out=None,
) -> NodeReport:
    """This process is one node of the broadcast.

    ``comm`` is an mpi4py communicator whose ranks are the nodes (``mpi``: its
    COMM_WORLD). ``out`` overrides the job's output for this node: a path,
    ``"-"`` or a writable buffer (:func:`.api.broadcast_into`). A lone node
    (``nodes=1``) needs no way to meet.

    ``key`` is the job's shared secret: with ``mpi`` rank 0 makes one and sends
    it over MPI (whose channel the job already trusts); with a rendezvous every
    node must be given the same one (default: ``$PARCOMM_JOB_KEY``).
    """
    if mpi and comm is None:
        from mpi4py import MPI  # only this mode needs MPI

        comm = MPI.COMM_WORLD
    if comm is not None:
        rank, nodes = comm.Get_rank(), comm.Get_size()
        secret = comm.bcast(JobKey.generate().hex() if rank == 0 else None, root=0)
        key = JobKey.from_hex(secret, origin="the key rank 0 sent")
        path = job.out_for(rank) if out is None else out
        if isinstance(path, str) and path != "-":
            check_distinct_outputs(comm, path)
    if rank is None or nodes is None:
        raise BcastError("give --rank and --nodes with --rendezvous/--rendezvous-dir (or use --mpi or --local)")
    if not 0 <= rank < nodes:
        raise BcastError(f"--rank {rank} is not in 0..{nodes - 1}")
    if key is None and nodes == 1 and rendezvous is None and rendezvous_dir is None:
        key = JobKey.generate()  # a lone node: nobody to meet, nobody to let in
    if key is None:
        try:
            key = resolve_key()
        except JobKeyError as exc:
            raise BcastError(str(exc)) from None
    client = S3Client(job.s3, seed=rank, deadline=time.monotonic() + job.timeout)
    manifest = check_object(job, client)
    (listen,) = reserve_local_sockets(1, bind)
    me = (advertise or listen.getsockname()[0], listen.getsockname()[1])
    name = f"{job.url}#{manifest.etag}"
    try:
        if comm is not None:
            table = [tuple(e) for e in comm.allgather(me)]
        elif rendezvous_dir is not None:
            table = via_directory(rendezvous_dir, rank, nodes, me, key=key, job=name, timeout=min(job.timeout, 300))
        elif rendezvous is not None:
            host, _, port = rendezvous.rpartition(":")
            if not host or not port.isdigit():
                raise BcastError(f"--rendezvous must be HOST:PORT, got {rendezvous!r}")
            table = asyncio.run(
                via_address(rank, nodes, (host, int(port)), me, key=key, job=name, timeout=min(job.timeout, 300))
            )
        elif nodes == 1:
            table = [me]
        else:
            raise BcastError("choose how nodes meet: --local N, --mpi, --rendezvous HOST:PORT or --rendezvous-dir DIR")
    except RendezvousError as exc:
        listen.close()
        raise BcastError(str(exc)) from None
    try:
        return _node(job, rank, table, listen, client, manifest, on_progress, key, out)
    finally:
        listen.close()


class SharedOutput(BcastError):
    """Two ranks would write one file: a usage error, found before anything is fetched."""


def check_distinct_outputs(comm, path: str) -> None:
    """Refuse outputs that are one file for two ranks: the same path on one host, or
    the same name in a directory the ranks share (NFS...), which each rank sees as a
    marker file another rank made there. Collective over ``comm``; every rank raises
    the same :class:`SharedOutput`, so none starts.
    """
    rank = comm.Get_rank()
    token = comm.bcast(os.urandom(8).hex() if rank == 0 else None, root=0)
    target = Path(path).absolute()
    prefix = f".parcomm-out-{token}-"
    marker = target.parent / f"{prefix}{rank}"
    try:
        marker.touch(exist_ok=False)
    except OSError:
        marker = None  # an unwritable directory fails later with its own clear error
    comm.Barrier()
    seen: list[int] = []
    try:
        seen = [int(n[len(prefix) :]) for n in os.listdir(target.parent) if n.startswith(prefix)]
    except (OSError, ValueError):
        pass
    comm.Barrier()  # everyone has looked before anyone removes its marker
    if marker is not None:
        marker.unlink(missing_ok=True)
    here = (socket.gethostname(), os.path.realpath(target))
    every = comm.allgather((here, target.name, sorted(seen)))
    clash: set[int] = set()
    for r, (where_r, name_r, seen_r) in enumerate(every):
        for s, (where_s, name_s, _) in enumerate(every):
            if r < s and (where_r == where_s or (s in seen_r and name_r == name_s)):
                clash.update((r, s))
    if clash:
        ranks = sorted(clash)
        shown = ", ".join(map(str, ranks[:8])) + (", ..." if len(ranks) > 8 else "")
        raise SharedOutput(
            f"--out {path}: ranks {shown} would write the same file; put {{rank}} in the path "
            f"(e.g. --out {path}.{{rank}})"
        )


# ---------------------------------------------------------------- --local N


def keys_from_environment(s3: S3Config, environ: Mapping[str, str] | None = None) -> S3Config:
    """The keys :func:`run_local` passed in our environment, back in the configuration: what
    boto3's chain would find there first, and what lets :class:`S3Client` skip boto3."""
    env = os.environ if environ is None else environ
    if s3.profile or s3.anonymous or s3.access_key or not env.get("AWS_ACCESS_KEY_ID"):
        return s3
    if not env.get("AWS_SECRET_ACCESS_KEY"):
        return s3
    return replace(
        s3,
        access_key=env["AWS_ACCESS_KEY_ID"],
        secret_key=env["AWS_SECRET_ACCESS_KEY"],
        session_token=env.get("AWS_SESSION_TOKEN") or None,
    )


def child_main(argv: list[str]) -> int:
    """Entry of one ``--local`` child: ``python -m parcomm.apps.bcast.launch SPEC``."""
    spec = json.loads(argv[0])
    if "parent" in spec and not lifetime.tie_to(lifetime.Owner(*spec["parent"])):
        return 1  # the launcher died before we could tie our life to it
    job = Job.from_json(spec["job"])
    rank, status = spec["rank"], Path(spec["status"])
    listen = socket.socket(fileno=spec["fd"])
    table = [tuple(e) for e in spec["table"]]
    progress_file = status / f"progress-{rank}.json"
    report_file = status / f"report-{rank}.json"
    write_status(progress_file, {"pid": os.getpid(), "held": 0, "pieces": 0})

    def on_progress(p: Progress) -> None:
        write_status(progress_file, {"pid": os.getpid(), **dataclasses.asdict(p)})

    try:
        key = resolve_key()  # the parent's fresh key, in our environment
        job = replace(job, s3=keys_from_environment(job.s3))
        client = S3Client(job.s3, seed=rank, deadline=time.monotonic() + job.timeout)
        manifest = check_object(job, client)
        report = _node(job, rank, table, listen, client, manifest, on_progress, key)
    except Exception as exc:  # reported to the parent, which prints one line per node
        error = {"rank": rank, "error": str(exc) or type(exc).__name__, "usage": is_usage_error(exc)}
        write_status(report_file, error)
        return 1
    write_status(report_file, {"rank": rank, "report": report.to_dict()})
    return 0


@dataclass
class LocalResult:
    reports: list[NodeReport]
    errors: dict[int, str]
    seconds: float
    usage_errors: set[int] = dataclasses.field(default_factory=set)  # ranks whose error was the user's input
    unreported_egress: int = 0  # bytes failed or killed nodes had read from storage (their last progress)


def _node_env(job: Job) -> dict[str, str]:
    """The node processes' environment: ours, plus the job's S3 credentials and this run's key."""
    # Secrets go to the children through their environment, never their argv (ps shows argv).
    env = dict(os.environ)
    for var, value in (
        ("AWS_ACCESS_KEY_ID", job.s3.access_key),
        ("AWS_SECRET_ACCESS_KEY", job.s3.secret_key),
        ("AWS_SESSION_TOKEN", job.s3.session_token),
    ):
        if value is not None:
            env[var] = value
    if job.s3.access_key is not None and job.s3.session_token is None:
        env.pop("AWS_SESSION_TOKEN", None)  # the user's token belongs to other keys than ours
    env[KEY_ENV] = JobKey.generate().hex()  # this run's members: our children, nobody else
    # A node does no linear algebra: numpy's OpenBLAS threads would only start and spin at
    # import (~0.06 CPU s per child here). A user's own setting stands.
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    return env


def _collect_results(job: Job, procs: list[subprocess.Popen], status: Path, start: float) -> LocalResult:
    """Every node's report or error, once the nodes exited (or the timeout passed:
    those still running are killed)."""
    reports, errors, usage = [], {}, set()
    for rank, proc in enumerate(procs):
        if proc.poll() is None:
            proc.kill()  # our own child, past the job's timeout
            proc.wait()
            errors[rank] = f"killed after {job.timeout:.0f} s without finishing"
            continue
        result = read_status(status / f"report-{rank}.json")
        if result is None:
            errors[rank] = f"exited with status {proc.returncode} without a report"
        elif "error" in result:
            errors[rank] = result["error"]
            if result.get("usage"):
                usage.add(rank)
        else:
            reports.append(NodeReport(**{k: v for k, v in result["report"].items() if k != "throughput_Bps"}))
    # What nodes that left no report had fetched still left the storage: count it.
    lost = sum(int((read_status(status / f"progress-{r}.json") or {}).get("bytes_from_storage", 0)) for r in errors)
    return LocalResult(reports, errors, time.monotonic() - start, usage, lost)


def run_local(
    job: Job, nodes: int, *, on_tick: Callable[[dict[int, dict]], None] | None = None, status_dir: str | None = None
) -> LocalResult:
    """Run ``nodes`` node processes here; returns every node's report or error.

    ``on_tick(progress_by_rank)`` is called a few times a second (progress bars).
    """
    if nodes < 1:
        raise BcastError(f"--local must be at least 1, got {nodes}")
    lifetime.sweep_temp_dirs()  # status dirs of launchers killed by -9
    socks = reserve_local_sockets(nodes)
    table = local_table(socks)
    tmp = lifetime.owned_temp_dir("bcast") if status_dir is None else None
    status = Path(status_dir or tmp or "")
    status.mkdir(parents=True, exist_ok=True)
    procs: list[subprocess.Popen] = []
    start = time.monotonic()
    env = _node_env(job)
    public = replace(job, s3=replace(job.s3, access_key=None, secret_key=None, session_token=None))
    try:
        for rank, sock in enumerate(socks):
            spec = {
                "job": public.to_json(),
                "rank": rank,
                "fd": sock.fileno(),
                "table": table,
                "status": str(status),
                "parent": lifetime.this_process(),  # the child dies with us, even by kill -9
            }
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "parcomm.apps.bcast.launch", json.dumps(spec)],
                    pass_fds=[sock.fileno()],
                    env=env,
                )
            )
        for sock in socks:
            sock.close()  # the children hold them now
        deadline = start + job.timeout + 30
        while any(p.poll() is None for p in procs):
            if on_tick is not None:
                on_tick(_read_progress(status, nodes))
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if on_tick is not None:
            on_tick(_read_progress(status, nodes))
        return _collect_results(job, procs, status, start)
    finally:
        for sock in socks:
            sock.close()
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.wait()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def write_status(path: str | os.PathLike, payload: dict) -> None:
    """Atomically replace a small JSON file (readers never see half of it)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(payload))
    os.replace(tmp, path)


def read_status(path: str | os.PathLike) -> dict | None:
    """A JSON file written by :func:`write_status`; None if absent or unreadable."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def _read_progress(status: Path, nodes: int) -> dict[int, dict]:
    found = {}
    for rank in range(nodes):
        entry = read_status(status / f"progress-{rank}.json")
        if entry is not None:
            found[rank] = entry
    return found


if __name__ == "__main__":
    sys.exit(child_main(sys.argv[1:]))
