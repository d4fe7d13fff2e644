"""``parcomm bcast``: broadcast a large object from S3 to many nodes (Chiba et al.).

``parcomm bcast s3://BUCKET/KEY --out PATH`` is the tool (``get`` is the
default subcommand); ``prepare`` makes the hash list it verifies against;
``sim`` runs the same protocol on the simulated storage/network model;
``serve`` and ``proxy`` give a local S3 (versitygw) and its variability
proxy for trying it out; ``demo`` does all of it in one go.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import click

from ..platform.units import parse_size
from .common import Duration, RunFailed, UserError, emit_json, parse_with

ALGOS = ("flat", "nonsteal", "steal")
#: --verify choices (parcomm.apps.bcast.real.VERIFY_MODES; not imported here: the CLI starts fast)
VERIFY_MODES = ("whole", "pieces")
#: --write choices (parcomm.apps.bcast.real.WRITE_MODES)
WRITE_MODES = ("cached", "direct")


class _DefaultGet(click.Group):
    """``parcomm bcast s3://...`` means ``parcomm bcast get s3://...``."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["get", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_DefaultGet)
def bcast() -> None:
    """Broadcast an object from S3-compatible storage to many nodes (Chiba et al.).

    \b
    parcomm bcast prepare s3://data/model.bin            # once: hash list for verification
    parcomm bcast s3://data/model.bin --out /tmp/model.bin --local 4
    mpiexec -n 32 parcomm bcast s3://data/model.bin --out /scratch/model.bin --mpi
    parcomm bcast sim --nodes 32 --size 1GB --algo steal  # the protocol on a storage model
    parcomm bcast demo                                    # local S3 + 4 nodes, end to end

    Endpoint and credentials: --endpoint-url or AWS_ENDPOINT_URL, and
    AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_REGION, as for the AWS CLI;
    or --profile NAME (~/.aws/config and credentials), or --no-sign-request for
    a public bucket. The hash list lives beside the object (KEY.parcomm.json)
    unless --manifest-url puts it in another bucket or a file.
    """


def _s3_options(f):
    f = click.option("--endpoint-url", default=None, help="S3 endpoint (default: AWS_ENDPOINT_URL or AWS)")(f)
    f = click.option("--region", default=None, help="S3 region (default: AWS_REGION, the profile's, or us-east-1)")(f)
    f = click.option(
        "--profile",
        "aws_profile",
        default=None,
        help="AWS profile from ~/.aws/config and ~/.aws/credentials, as `aws --profile` (default: AWS_PROFILE)",
    )(f)
    f = click.option(
        "--no-sign-request",
        "anonymous",
        is_flag=True,
        help="anonymous, unsigned requests, for public buckets (as `aws --no-sign-request`)",
    )(f)
    f = click.option(
        "--manifest-url",
        default=None,
        help="where the hash list is: s3://BUCKET/KEY or a file path (default: KEY.parcomm.json next to the "
        "object); for buckets you may only read",
    )(f)
    return f


def _s3_config(endpoint_url, region, aws_profile=None, anonymous=False):
    from ..apps.bcast.s3 import S3Config

    try:
        return S3Config.from_env(endpoint_url=endpoint_url, region=region, profile=aws_profile, anonymous=anonymous)
    except ValueError as exc:
        raise UserError(str(exc)) from None


def _check_manifest_url(manifest_url):
    """A malformed --manifest-url is the user's mistake: say so before any node starts."""
    from ..apps.bcast.manifest import manifest_location
    from ..apps.bcast.s3 import S3Error

    if manifest_url is None:
        return None
    try:
        manifest_location(manifest_url)
    except S3Error as exc:
        raise UserError(f"--manifest-url {manifest_url}: {str(exc).split(': ', 1)[-1]}") from None
    return manifest_url


def _bcast_config(
    piece_size, work_pieces, connections, peers, overlap, seed, serve="uploaders", choke_interval=5.0, requests=4
):
    from ..apps.bcast.node import BcastConfig

    kwargs = {
        "work_pieces": work_pieces,
        "s3_connections": connections,
        "peers": peers,
        "overlap_phases": overlap,
        "seed": seed,
        "serve_neediest": serve == "neediest",
        "choke_interval": choke_interval,
        "max_requests": requests,
    }
    if piece_size is not None:
        kwargs["piece_size"] = parse_with(lambda v: parse_size(v, "--piece-size"), piece_size, "--piece-size")
    try:
        return BcastConfig(**kwargs)
    except (TypeError, ValueError) as exc:
        message = str(exc)
        for field_name, option in _OPTION_OF_FIELD.items():  # name the option the user typed
            message = message.replace(f"BcastConfig.{field_name} ", f"{option} ")
        raise UserError(message.replace("BcastConfig.", "--").replace("_", "-")) from None


#: BcastConfig fields whose command-line option has another name.
_OPTION_OF_FIELD = {"s3_connections": "--connections", "max_requests": "--requests", "overlap_phases": "--overlap"}


def _protocol_options(f):
    for opt in reversed(
        [
            click.option(
                "--algo",
                type=click.Choice(ALGOS),
                default="steal",
                show_default=True,
                help="flat: every node downloads all; nonsteal/steal: 1/N each, then exchange (Chiba et al. §4)",
            ),
            click.option(
                "--work-pieces",
                type=int,
                default=8,
                show_default=True,
                help="pieces per work: one ranged GET and the unit of stealing (paper: 100 x 32 KB)",
            ),
            click.option("--connections", type=int, default=2, show_default=True, help="concurrent S3 GETs per node"),
            click.option("--peers", type=int, default=4, show_default=True, help="neighbours each node exchanges with"),
            click.option(
                "--overlap/--no-overlap",
                default=False,
                show_default=True,
                help="exchange pieces while still downloading (the paper's future work)",
            ),
            click.option(
                "--serve",
                type=click.Choice(["uploaders", "neediest"]),
                default="uploaders",
                show_default=True,
                help="whom a node uploads to: the neighbours that upload most to it (BitTorrent, the paper)"
                " or those holding least (cooperative: shortens the tail)",
            ),
            click.option(
                "--choke-interval",
                type=Duration(),
                default="5s",
                show_default=True,
                help="how often a node re-chooses whom it uploads to",
            ),
            click.option(
                "--requests",
                type=int,
                default=4,
                show_default=True,
                help="pieces a node keeps requested from each neighbour (more hides latency, fewer avoids"
                " overflowing its own link)",
            ),
            click.option("--seed", type=int, default=0, show_default=True, help="seeds the protocol's random choices"),
        ]
    ):
        f = opt(f)
    return f


#: A broadcast that has not finished within 30 days will not: a longer limit is a typo.
_MAX_TIMEOUT_S = 30 * 86400.0
#: Node processes on one machine: each is a Python process with its own buffers.
_MAX_LOCAL = 256
#: Nodes of one broadcast: every node holds a connection to every other.
_MAX_NODES = 4096


def _fail(exc: Exception) -> None:
    raise UserError(str(exc)) from None


def _check_out(out: str, ranks: range) -> None:
    """A mistake in --out is the user's: one line per process, before any node starts."""
    from ..apps.bcast.output import OutputError, check_output_path

    for rank in ranks:
        try:
            check_output_path(out.replace("{rank}", str(rank)))
        except OutputError as exc:
            raise UserError(f"--out {exc}") from None


@bcast.command()
@click.argument("url")
@click.option(
    "--out",
    "-o",
    required=True,
    help="output file; with --local N, {rank} in it or .RANK appended; with --mpi, {rank} in it where ranks"
    " share a host or directory (refused otherwise); - streams the object to stdout in order",
)
@click.option("--local", "local", type=int, default=None, help="run N node processes on this machine")
@click.option("--mpi", is_flag=True, help="nodes are the ranks of mpiexec; they meet through MPI")
@click.option("--rendezvous", default=None, metavar="HOST:PORT", help="rank 0 listens here, the others register")
@click.option("--rendezvous-dir", default=None, type=click.Path(file_okay=False), help="shared directory to meet in")
@click.option("--rank", type=int, default=None, help="this node's rank (with --rendezvous/--rendezvous-dir)")
@click.option("--nodes", type=int, default=None, help="number of nodes (with --rendezvous/--rendezvous-dir)")
@click.option("--bind", default="127.0.0.1", show_default=True, help="address the peer listener binds")
@click.option("--advertise", default=None, help="address other nodes use to reach this one (default: --bind)")
@_protocol_options
@click.option(
    "--timeout",
    type=Duration(),
    default="1h",
    show_default=True,
    help="give up after this long, with a unit (e.g. 600s, 1h)",
)
@click.option(
    "--join-timeout",
    type=Duration(),
    default="30s",
    show_default=True,
    help="a node not reachable this long after start is counted out: its share goes to the next rank;"
    " started later (or restarted after a crash) it joins and fetches from the others",
)
@_s3_options
@click.option(
    "--key-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="the job's shared key with --rendezvous/--rendezvous-dir (mode 600; `parcomm keygen FILE`); "
    "default: $PARCOMM_JOB_KEY. --local and --mpi make their own",
)
@click.option(
    "--verify",
    type=click.Choice(VERIFY_MODES),
    default="pieces",
    show_default=True,
    help="pieces: every byte hashed once, as its piece arrives, against the hash list (the root of trust); whole:"
    " and the whole object's sha256 in order (one more pass, ~0.5 CPU s/GB; guards only against our own write bugs)",
)
@click.option(
    "--write",
    type=click.Choice(WRITE_MODES),
    default="cached",
    show_default=True,
    help="how --out is written: cached (the page cache, as cp: a reader right after finds it in memory) or direct"
    " (O_DIRECT on local disk filesystems: 0.4-1.4 CPU s/GB less here, but the output is not left in memory)",
)
@click.option("--json", "as_json", is_flag=True, help="print the per-node reports as JSON")
def get(
    url,
    out,
    local,
    mpi,
    rendezvous,
    rendezvous_dir,
    rank,
    nodes,
    bind,
    advertise,
    algo,
    work_pieces,
    connections,
    peers,
    overlap,
    serve,
    choke_interval,
    requests,
    seed,
    timeout,
    join_timeout,
    endpoint_url,
    region,
    aws_profile,
    anonymous,
    manifest_url,
    key_file,
    verify,
    write,
    as_json,
) -> None:
    """Download s3://BUCKET/KEY to --out on every node, cooperatively.

    Nodes prove to each other that they hold the job's key on every
    connection; a process without it cannot join, send pieces or learn the
    peer table. With --rendezvous or --rendezvous-dir give every node the
    same key (--key-file or $PARCOMM_JOB_KEY)."""
    import os

    # A node does no linear algebra: numpy (the protocol's arrays) must not start OpenBLAS
    # threads in this process, nor in the --local children, which inherit it. A user's setting stands.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from ..apps.bcast.launch import Job
    from ..apps.bcast.s3 import S3Error, parse_s3_url

    try:
        parse_s3_url(url)
    except S3Error as exc:
        _fail(exc)
    meet = _Meeting(local, mpi, rendezvous, rendezvous_dir, rank, nodes, bind, advertise)
    meet.check()
    out = _checked_out(out, meet, as_json)
    _check_timeouts(timeout, join_timeout)
    key = meet.key(key_file)
    job = Job(
        url,
        out,
        algo,
        _bcast_config(None, work_pieces, connections, peers, overlap, seed, serve, choke_interval, requests),
        _s3_config(endpoint_url, region, aws_profile, anonymous),
        timeout=timeout,
        join_timeout=join_timeout,
        manifest_url=_check_manifest_url(manifest_url),
        verify=verify,
        write=write,
    )
    _run_and_report(job, meet, key, out, as_json)


def _check_timeouts(timeout: float, join_timeout: float) -> None:
    for option, value in (("--timeout", timeout), ("--join-timeout", join_timeout)):
        if not 0 < value <= _MAX_TIMEOUT_S:
            raise UserError(f"{option} must be in (0, {_MAX_TIMEOUT_S:g}] seconds, got {value:g}")


def _run_and_report(job, meet: _Meeting, key, out: str, as_json: bool) -> None:
    """Run ``bcast get``'s nodes, print their summary and exit with its status
    (2: every node failed on what the user named; 1: the run failed)."""
    from ..apps.bcast.launch import SharedOutput
    from ..apps.bcast.output import OutputError
    from ..apps.bcast.real import BcastError, is_usage_error
    from ..apps.bcast.s3 import S3Error

    try:
        ran = _run_nodes(job, meet, key, as_json)
    except (S3Error, SharedOutput, BcastError, OutputError, OSError) as exc:
        # One node, and it failed: the same exit status as with --local N (2: what the user named
        # -- the object, its hash list, the credentials, --out; 1: the run), and --json still answers.
        usage = isinstance(exc, SharedOutput) or is_usage_error(exc)
        if as_json:
            _summarize([], {meet.rank or 0: str(exc)}, as_json)
            sys.exit(2 if usage else 1)
        if usage:
            _fail(exc)
        raise RunFailed(str(exc)) from None
    if ran is None:  # an MPI rank other than 0: rank 0 reports for all
        return
    reports, errors, usage_errors, unreported = ran
    _summarize(reports, errors, as_json, to_stderr=out == "-", unreported_egress=unreported)
    if errors:
        # Every node failed on what the user named: a usage error, as with one node.
        sys.exit(2 if not reports and set(errors) <= usage_errors else 1)


@dataclass(frozen=True)
class _Meeting:
    """How this command's nodes meet: exactly one of --local N, --mpi, --rendezvous
    HOST:PORT and --rendezvous-dir DIR, with what each needs."""

    local: int | None
    mpi: bool
    rendezvous: str | None
    rendezvous_dir: str | None
    rank: int | None
    nodes: int | None
    bind: str
    advertise: str | None

    @property
    def by_rendezvous(self) -> bool:
        return self.rendezvous is not None or self.rendezvous_dir is not None

    def check(self) -> None:
        modes = [
            m
            for m, on in (
                ("--local", self.local is not None),
                ("--mpi", self.mpi),
                ("--rendezvous", self.rendezvous),
                ("--rendezvous-dir", self.rendezvous_dir),
            )
            if on
        ]
        if len(modes) != 1:
            raise UserError(
                "choose exactly one of --local N, --mpi, --rendezvous HOST:PORT, --rendezvous-dir DIR"
                + (f" (got {' and '.join(modes)})" if modes else "")
            )
        if self.local is not None and not 1 <= self.local <= _MAX_LOCAL:
            raise UserError(f"--local must be in 1..{_MAX_LOCAL}, got {self.local}")
        if self.by_rendezvous:
            if self.rank is None or self.nodes is None:
                raise UserError("give --rank and --nodes with --rendezvous/--rendezvous-dir")
            if not 1 <= self.nodes <= _MAX_NODES or not 0 <= self.rank < self.nodes:
                raise UserError(
                    f"--nodes must be in 1..{_MAX_NODES} and --rank in 0..nodes-1, "
                    f"got --nodes {self.nodes} --rank {self.rank}"
                )

    def key(self, key_file):
        """The job key a rendezvous needs (--local and --mpi make their own)."""
        if not self.by_rendezvous:
            if key_file is not None:
                raise UserError("--key-file is for --rendezvous/--rendezvous-dir; --local and --mpi make their own key")
            return None
        from ..auth import JobKeyError, resolve_key

        try:
            return resolve_key(key_file)
        except JobKeyError as exc:
            raise UserError(str(exc)) from None


def _checked_out(out: str, meet: _Meeting, as_json: bool) -> str:
    """--out checked for every rank this process starts (one line, before any node
    starts); with --local N and no {rank} in it, .RANK appended."""
    local = meet.local
    if out == "-":
        if local is not None and local != 1:
            raise UserError(f"--out - streams one node's copy to stdout; with --local {local} give a file path")
        if meet.mpi:
            raise UserError("--out - cannot be used with --mpi: mpiexec merges every rank's stdout")
        if as_json:
            raise UserError("--out - and --json both write to stdout; choose one")
        return out
    first = meet.rank or 0
    _check_out(out, range(local) if local is not None else range(first, first + 1))
    if local is not None and local > 1 and "{rank}" not in out:
        out = out + ".{rank}"
    return out


def _run_nodes(job, meet: _Meeting, key, as_json: bool):
    """Run this command's nodes; their reports and errors by rank, or None on an MPI
    rank other than 0 (rank 0 gathers every report)."""
    from ..apps.bcast.launch import run_one

    if meet.local is not None and meet.local > 1:
        result = _run_local_with_bars(job, meet.local, quiet=as_json)
        return result.reports, result.errors, result.usage_errors, result.unreported_egress
    bar = _single_bar(as_json)
    try:
        report = run_one(  # --local 1 is this process alone: no child to start
            job,
            rank=0 if meet.local == 1 else meet.rank,
            nodes=1 if meet.local == 1 else meet.nodes,
            rendezvous=meet.rendezvous,
            rendezvous_dir=meet.rendezvous_dir,
            mpi=meet.mpi,
            bind=meet.bind,
            advertise=meet.advertise,
            key=key,
            on_progress=bar,
        )
    finally:
        bar.close()
    if not meet.mpi:
        return [report], {}, set(), 0
    from mpi4py import MPI

    gathered = MPI.COMM_WORLD.gather(report, root=0)
    return (gathered, {}, set(), 0) if MPI.COMM_WORLD.Get_rank() == 0 else None


class _single_bar:
    """A progress line for one node (stderr; silent when not a terminal or with --json)."""

    def __init__(self, quiet: bool) -> None:
        self.progress = None
        if not quiet and sys.stderr.isatty():
            from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

            self.progress = Progress(
                "[bold]bcast", BarColumn(), DownloadColumn(), TransferSpeedColumn(), transient=True
            )
            self.progress.start()
            self.task = self.progress.add_task("bcast", total=None)

    def __call__(self, p) -> None:
        if self.progress is not None:
            self.progress.update(self.task, **progress_in_bytes(p))

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()


def progress_in_bytes(p) -> dict:
    """A node's progress as the bar's ``completed``/``total``: bytes of the object (the bar's
    columns print bytes and bytes/s), not pieces."""
    return {"completed": p.bytes_held, "total": p.size or None}


def _run_local_with_bars(job, nodes: int, quiet: bool):
    from ..apps.bcast.launch import run_local

    if quiet or not sys.stderr.isatty():
        return run_local(job, nodes)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    shown = min(nodes, 16)  # one bar per node up to 16, then one for all
    with Progress(
        "{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), transient=False
    ) as progress:
        if nodes <= shown:
            tasks = {r: progress.add_task(f"node {r}", total=None) for r in range(nodes)}
        else:
            tasks = {"all": progress.add_task(f"{nodes} nodes", total=None)}

        def on_tick(by_rank: dict) -> None:
            if "all" in tasks:
                held = sum(e.get("held", 0) for e in by_rank.values())
                total = sum(e.get("pieces", 0) for e in by_rank.values()) or None
                progress.update(tasks["all"], completed=held, total=total)
                return
            for r, e in by_rank.items():
                progress.update(tasks[r], completed=e.get("held", 0), total=e.get("pieces") or None)

        return run_local(job, nodes, on_tick=on_tick)


def _ranks(ranks: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"nodes 0-2, 5"``."""
    spans, start = [], None
    for i, r in enumerate(ranks):
        if start is None:
            start = r
        if i + 1 == len(ranks) or ranks[i + 1] != r + 1:
            spans.append(f"{start}" if start == r else f"{start}-{r}")
            start = None
    return ("node " if len(ranks) == 1 else "nodes ") + ", ".join(spans)


def _error_lines(errors: dict) -> list[str]:
    """One line per distinct failure, naming the nodes it happened on (the same S3 error on 32
    nodes is one line, not 32; a node's own "rank R: " prefix does not make it distinct)."""
    by_msg: dict[str, list[int]] = {}
    for rank, msg in sorted(errors.items()):
        text = str(msg).removeprefix(f"rank {rank}: ")
        by_msg.setdefault(text, []).append(rank)
    return [f"{_ranks(ranks)}: {msg}" for msg, ranks in by_msg.items()]


def _summarize(reports, errors, as_json: bool, to_stderr: bool = False, unreported_egress: int = 0) -> None:
    from ..apps.bcast.summary import summarize

    summary = summarize(reports, errors, unreported_egress)
    if as_json:
        emit_json(
            {
                "summary": summary,
                "nodes": [r.to_dict() for r in reports],
                "errors": {str(k): v for k, v in errors.items()},
            }
        )
        return
    from rich.console import Console
    from rich.table import Table

    for line in _error_lines(errors):
        click.echo(line, err=True)  # plain: one line per distinct failure, never wrapped
    console = Console(stderr=to_stderr)  # with --out - stdout carries the object
    if not reports:
        return
    table = Table(title="parcomm bcast")
    for col in ("node", "done s", "MB/s", "from S3 MB", "from peers MB", "S3 GETs", "retries", "conns", "output"):
        table.add_column(col, justify="right" if col not in ("output",) else "left", overflow="fold")
    for r in sorted(reports, key=lambda r: r.rank):
        table.add_row(
            str(r.rank),
            f"{r.complete_s:.2f}" if r.complete_s is not None else "-",
            f"{r.throughput / 1e6:.1f}",
            f"{r.bytes_from_storage / 1e6:.1f}",
            f"{r.bytes_from_peers / 1e6:.1f}",
            str(r.storage_requests),
            str(r.storage_retries),
            str(r.connections),
            r.output,
        )
    console.print(table)
    done = summary["completion_s"]
    if done["max"] is not None:
        click.echo(
            "completion "
            + "  ".join(f"{k} {v:.2f} s" for k, v in done.items())
            + f"  ({len(reports)} node{'s' * (len(reports) != 1)})",
            err=to_stderr,
        )
    if summary["size_bytes"]:
        click.echo(
            f"origin egress {summary['origin_egress_bytes'] / 1e6:.1f} MB = {summary['origin_egress_x']:.2f} x the "
            f"object; from peers {summary['bytes_from_peers'] / 1e6:.1f} MB; "
            f"S3 GETs {summary['storage_requests']}, retries {summary['storage_retries']}",
            err=to_stderr,
        )
        checked = {
            "whole": "every piece's sha256 and the whole object's",
            "pieces": "every piece's sha256 (--verify pieces)",
        }
        written = " (output written past the page cache: --write direct)" if summary["write"] == "direct" else ""
        click.echo(f"verified {checked.get(summary['verify'], summary['verify'])}{written}", err=to_stderr)
    procs = summary["procs"]
    if procs > 1:
        click.echo(
            f"peer connections {summary['peer_connections']} opened, at most {summary['peer_connections_max']} "
            f"by one node (one per ordered pair would be {procs * (procs - 1)})",
            err=to_stderr,
        )


@bcast.command()
@click.argument("url")
@click.option("--piece-size", default="1MiB", show_default=True, help="unit of verification and exchange")
@_s3_options
@click.option("--json", "as_json", is_flag=True, help="print the object's size, pieces and sha256 as JSON")
def prepare(url, piece_size, endpoint_url, region, aws_profile, anonymous, manifest_url, as_json) -> None:
    """Hash every piece of s3://BUCKET/KEY and store the list as KEY.parcomm.json
    (or at --manifest-url: another bucket, or a file the nodes can read)."""
    from ..apps.bcast import manifest
    from ..apps.bcast.s3 import S3Client, S3Error, parse_s3_url

    size = parse_with(lambda v: parse_size(v, "--piece-size"), piece_size, "--piece-size")
    if size <= 0:
        raise UserError(f"--piece-size must be positive, got {piece_size!r}")
    try:
        parse_s3_url(url)
    except S3Error as exc:
        _fail(exc)
    _check_manifest_url(manifest_url)
    config = _s3_config(endpoint_url, region, aws_profile, anonymous)
    try:
        m = manifest.prepare(url, size, client=S3Client(config), manifest_url=manifest_url)
    except (S3Error, ValueError) as exc:
        _fail(exc)
    info = {
        "url": url,
        "size_bytes": m.size,
        "pieces": m.num_pieces,
        "piece_size_bytes": m.piece_size,
        "sha256": m.sha256.hex(),
        "hash_list": manifest.hash_list_location(url, manifest_url),
    }
    if as_json:
        emit_json(info)
    else:
        click.echo(
            f"{url}: {m.size} bytes, {m.num_pieces} pieces of {m.piece_size} B, sha256 {m.sha256.hex()}; "
            f"hash list at {info['hash_list']}"
        )


@bcast.command()
@click.option(
    "--procs",
    "-n",
    "--nodes",
    "nodes",
    type=int,
    default=8,
    show_default=True,
    help="nodes that receive the object (--nodes is an alias)",
)
@click.option("--size", default="1GB", show_default=True, help="object size (1GB, 100MiB, ...)")
@click.option("--piece-size", default=None, help="piece size (default 1MiB; paper 32KB)")
@_protocol_options
@click.option(
    "--storage-profile",
    "--profile",
    "profile",
    default=None,
    help="storage/network model: a name (default chiba2010) or a TOML/JSON file (--profile is an alias)",
)
@click.option("--paper", is_flag=True, help="the paper's protocol settings: 32 KB pieces, works of 100, 1 connection")
@click.option("--json", "as_json", is_flag=True, help="print the simulation's result as JSON")
def sim(
    nodes,
    size,
    piece_size,
    algo,
    work_pieces,
    connections,
    peers,
    overlap,
    serve,
    choke_interval,
    requests,
    seed,
    profile,
    paper,
    as_json,
) -> None:
    """Run the broadcast protocol on the simulated storage and network model."""
    from ..apps.bcast.node import BcastConfig
    from ..apps.bcast.sim import simulate
    from ..apps.bcast.storage_model import ProfileError

    nbytes = parse_with(lambda v: parse_size(v, "--size"), size, "--size")
    if nodes < 1:
        raise UserError(f"--procs must be at least 1, got {nodes}")
    cfg = _bcast_config(piece_size, work_pieces, connections, peers, overlap, seed, serve, choke_interval, requests)
    if paper:
        cfg = BcastConfig.paper(peers=peers, overlap_phases=overlap, seed=seed)
    try:
        result = simulate(nodes, nbytes, algo, profile, seed, cfg)
    except (ProfileError, OSError) as exc:
        _fail(exc)
    if as_json:
        emit_json(result.to_dict())
        return
    phases = result.phase_means
    click.echo(
        f"{algo}: {nodes} nodes, {nbytes / 1e6:.0f} MB, profile {result.profile}: "
        f"slowest {result.completion_s:.1f} s, total throughput {result.total_mb_s:.1f} MB/s, "
        f"origin egress {result.origin_egress_bytes / max(nbytes, 1):.2f} x the object"
        + (f", phase 1 {phases['phase1_s']:.1f} s / phase 2 {phases['phase2_s']:.1f} s" if phases else "")
    )


@bcast.command()
@click.argument("directory", type=click.Path(file_okay=False))
@click.option("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
def serve(directory, port) -> None:
    """Serve DIRECTORY as S3 with versitygw on 127.0.0.1 (subdirectories are buckets)."""
    import signal

    from ..apps.bcast.versitygw import VersityGW, VersityGWNotAvailable, VersityGWStartError

    Path(directory).mkdir(parents=True, exist_ok=True)
    try:
        gw = VersityGW(directory, port=port or None).start()
    except (VersityGWNotAvailable, VersityGWStartError, TypeError) as exc:
        _fail(exc)
    try:
        for k, v in gw.environ().items():
            click.echo(f"export {k}={v}")
        click.echo("# serving; Ctrl-C stops", err=True)
        stop = {signal.SIGINT, signal.SIGTERM}
        signal.pthread_sigmask(signal.SIG_BLOCK, stop)  # delivered to sigwait, not as KeyboardInterrupt
        signal.sigwait(stop)
    finally:
        gw.stop()


@bcast.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.pass_context
def proxy(ctx) -> None:
    """A pacing/fault proxy in front of an S3 endpoint (see `parcomm bcast proxy -- --help`)."""
    from ..apps.bcast.proxy import main

    sys.exit(main(ctx.args))


@bcast.command()
@click.option(
    "--procs",
    "-n",
    "--nodes",
    "nodes",
    type=int,
    default=4,
    show_default=True,
    help="local node processes (--nodes is an alias)",
)
@click.option("--size", default="64MiB", show_default=True, help="size of the object broadcast (64MiB, 1GB, ...)")
@click.option(
    "--algo",
    type=click.Choice(ALGOS),
    default="steal",
    show_default=True,
    help="flat: every node downloads all; nonsteal/steal: 1/N each, then exchange",
)
@click.option("--json", "as_json", is_flag=True, help="print the demo's summary as JSON")
def demo(nodes, size, algo, as_json) -> None:
    """End to end on this machine: versitygw on 127.0.0.1, an object, its hash
    list, and a broadcast to N local nodes; every output checked.

    Needs versitygw (a local S3 server); the demo never installs anything itself.
    If it is missing it says so, with the command that installs it."""
    from ..apps.bcast.demo import run_demo
    from ..apps.bcast.versitygw import VERSITYGW_MODULE, VERSITYGW_VERSION, find_versitygw

    nbytes = parse_with(lambda v: parse_size(v, "--size"), size, "--size")
    if not 1 <= nodes <= _MAX_LOCAL:
        raise UserError(f"--procs must be in 1..{_MAX_LOCAL}, got {nodes}")
    if find_versitygw() is None:
        raise RunFailed(
            "versitygw (the local S3 server the demo starts) is not installed; install it with "
            f"`go install {VERSITYGW_MODULE}@{VERSITYGW_VERSION}` (needs Go; takes several minutes) "
            "or `bash scripts/install-versitygw.sh` in a clone, or point $PARCOMM_VERSITYGW at the binary"
        )
    try:
        summary = run_demo(nodes, nbytes, algo, quiet=as_json)
    except Exception as exc:  # versitygw missing, port trouble: one line, no traceback
        _fail(exc)
    if as_json:
        emit_json(summary)
    else:
        click.echo(
            f"demo: {summary['procs']} nodes got {summary['size_bytes']} bytes in {summary['time_s']:.2f} s "
            f"({summary['algo']}); every sha256 matched: {summary['all_match']}; "
            f"origin egress {summary['egress_ratio']:.2f} x"
        )
