"""``parcomm emu``: run collectives and incasts on the emulated cluster (root on Linux).

User mistakes (bad sizes, a platform the emulation cannot build, no root)
end with one ``error:`` line and exit status 2.
"""

from __future__ import annotations

import statistics
from typing import Any, Callable

import click

from ..platform.units import parse_duration, parse_size
from .common import RunFailed, UserError, emit_json, load_platform, parse_with

EMU_PLATFORM_HELP = (
    "a star platform: short form (star:8,rate=100M,buffer=32KiB; buffer in bytes or '20 packets') "
    "or a TOML file; the emulation refuses what it cannot reproduce (loss, delay, flow control, ATM)"
)
SCHEMES = ["fixed", "random_min", "random_both"]


def check_emulable(plat: dict) -> None:
    """Refuse a platform (or a missing root) before anything is created."""
    from ..emu import EmuError, require_root
    from ..emu.layout import plan
    from ..emu.naming import RunName

    try:
        plan(plat, RunName(0, "0000"))
        require_root()
    except EmuError as e:
        raise UserError(str(e)) from None


def make_progress():
    """A rich progress bar on stderr (drawn only on a terminal)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    con = Console(stderr=True)
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=con,
        transient=True,
        disable=not con.is_terminal,
    )


def _options(f):
    opts = [
        click.option(
            "--platform",
            "platform_spec",
            default="star:8,rate=100M,buffer=32KiB",
            show_default=True,
            help=EMU_PLATFORM_HELP,
        ),
        click.option("--rto-min", default=None, help="TCP RTO minimum (route rto_min) for every host, e.g. 5ms"),
        click.option("--rto-max", default=None, help="TCP RTO maximum (tcp_rto_max_ms, kernel range 1s-120s)"),
        click.option(
            "--rto-scheme",
            type=click.Choice(SCHEMES),
            default=None,
            help="per-host RTO of Oguchi et al. (§5.2) with X = --rto-min (drawn with --seed)",
        ),
        click.option("--seed", type=int, default=1, show_default=True, help="seed of the random RTO schemes"),
        click.option(
            "--repeat",
            type=int,
            default=1,
            show_default=True,
            help="runs on the same cluster; reports each and the median",
        ),
        click.option("--timeout", default="120s", show_default=True, help="time limit of each run"),
        click.option("--json", "as_json", is_flag=True, help="print every run's full result as JSON"),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def summary(res: Any) -> dict[str, Any]:
    tot = res.host_totals()
    return {
        "time_s": res.time,
        "wall_s": round(res.wall_s, 3),
        "segments_retransmitted": tot["segments_retransmitted"],
        "timeouts": tot["timeouts"],
        "fast_retransmits": tot["fast_retransmits"],
        "port_drops": res.port_drops(),
    }


def run_on_cluster(plat: dict, repeat: int, job: Callable[[Any], Any], label: str) -> tuple[list[Any], dict]:
    """Bring the cluster up, run ``job(cluster)`` ``repeat`` times, tear down."""
    from ..emu import EmuCluster, EmuError

    if repeat < 1:
        raise UserError(f"--repeat must be at least 1, got {repeat}")
    results = []
    bar = make_progress()
    try:
        with bar, EmuCluster(plat) as cl:
            task = bar.add_task(label, total=repeat)
            for _ in range(repeat):
                results.append(job(cl))
                bar.advance(task)
            info = cl.describe()
    except EmuError as e:
        raise click.ClickException(str(e)) from None
    except OSError as e:  # e.g. a full /tmp under the work directory: the run failed, in one line
        raise RunFailed(f"{e.filename + ': ' if e.filename else ''}{(e.strerror or str(e)).lower()}") from None
    return results, info


def report(results: list[Any], info: dict, what: dict, as_json: bool) -> None:
    rows = [summary(r) for r in results]
    med = statistics.median(r["time_s"] for r in rows)
    head = {
        **what,
        "platform": info.get("platform", ""),
        "hosts": len(info["hosts"]),
        "repeat": len(rows),
        "median_time_s": med,
    }
    if as_json:
        emit_json(
            {
                "summary": head,
                "runs": [
                    {**s, "finish_times_s": r.finish_times, "counters": r.counters} for s, r in zip(rows, results)
                ],
                "cluster": info,
                "notes": results[0].extra.get("tcp_notes", []) + results[0].extra.get("not_emulated", []),
            }
        )
        return
    from rich.console import Console
    from rich.table import Table

    con = Console()
    t = Table(title=" ".join(f"{k}={v}" for k, v in what.items()) + f"  (emulated, {len(info['hosts'])} namespaces)")
    for col in ("run", "time (ms)", "retx segs", "timeouts", "fast retx", "port drops", "wall (s)"):
        t.add_column(col, justify="right")
    for i, s in enumerate(rows):
        t.add_row(
            str(i + 1),
            f"{s['time_s'] * 1e3:.2f}",
            str(s["segments_retransmitted"]),
            str(s["timeouts"]),
            str(s["fast_retransmits"]),
            str(s["port_drops"]),
            f"{s['wall_s']:.2f}",
        )
    if len(rows) > 1:
        t.add_row("median", f"{med * 1e3:.2f}", "", "", "", "", "")
    con.print(t)
    rto = sorted({h["rto_min_ms"] for h in info["hosts"]})
    con.print(
        f"rto_min per host: {rto[0]}..{rto[-1]} ms"
        if len(rto) > 1
        else f"rto_min {rto[0]} ms, rto_max {info['hosts'][0]['rto_max_ms']} ms"
    )
    for note in results[0].extra.get("tcp_notes", []) + results[0].extra.get("not_emulated", []):
        con.print(f"note: {note}")


def _seconds(text: str, option: str) -> float:
    return parse_with(lambda v: parse_duration(v, option, require_unit=True), text, option)


@click.group()
def emu() -> None:
    """Run on an emulated cluster: real Linux TCP, one network namespace per host,
    switch ports shaped with tc (htb rate + bfifo/pfifo buffer). Needs root.

    \b
    Examples:
      parcomm emu run incast --platform star:9,rate=100M,buffer=16KiB --size 64KiB --rto-min 5ms --repeat 3
      parcomm emu run alltoall --platform star:8,rate=100M,buffer=32KiB --algo A --size 256KiB
      parcomm emu run examples/user_program/user_program.py:main -n 4 --kwargs '{"n": 1000}'
      parcomm emu cleanup
    """


class _RunGroup(click.Group):
    """``emu run`` takes a workload's name, or a user's PROGRAM (MODULE:FUNCTION, FILE.py:FUNCTION)."""

    def resolve_command(self, ctx, args):
        if args and args[0] not in self.commands and (":" in args[0] or args[0].endswith(".py")):
            return "program", self.commands["program"], args
        return super().resolve_command(ctx, args)


@emu.group(name="run", cls=_RunGroup)
def run_group() -> None:
    """Run one workload on a freshly built emulated cluster (torn down afterwards).

    \b
    WORKLOAD is incast, alltoall or bcast, or your own rank program:
      parcomm emu run mymodule:main --platform star:4,rate=100M,buffer=32KiB --kwargs '{"n": 1000}'
      parcomm emu run examples/user_program/user_program.py:main -n 4
    """


@run_group.command(name="program")
@click.argument("program")
@click.option("-n", "--procs", type=int, default=None, help="ranks, one per host from h0 [default: every host]")
@click.option("--kwargs", "kwargs_json", default=None, help="the program's keyword arguments as a JSON object")
@click.option("--tag-output", is_flag=True, help="prefix each line a rank printed with '[rank] '")
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@_options
def program_cmd(
    program,
    procs,
    kwargs_json,
    tag_output,
    script_args,
    platform_spec,
    rto_min,
    rto_max,
    rto_scheme,
    seed,
    repeat,
    timeout,
    as_json,
) -> None:
    """Your own rank program (an async def taking the communicator, or a whole
    mpi4py script, prog.py) over SocketComm, one rank per host. A script's
    ranks print into their hosts' logs; their output is shown after the run,
    rank by rank, and the table goes to stderr."""
    import os

    from ..comm.aio import ProgramError, parse_kwargs, resolve_program
    from .run import is_script, no_script_args, script_kwargs

    script = is_script(program)
    try:
        resolve_program(program)  # a missing module or function is a one-line error here, not in every rank
        if script:
            kwargs = script_kwargs(
                program, kwargs_json, script_args, as_json=False, tag_output=tag_output, read_stdin=True
            )
        else:
            no_script_args(program, script_args)
            kwargs = parse_kwargs(kwargs_json)
    except ProgramError as e:
        raise UserError(str(e)) from None
    path, sep, func = program.rpartition(":")
    if sep and path.endswith(".py"):
        program = f"{os.path.abspath(path)}:{func}"  # ranks start in their own namespaces; name the file fully
    elif script:
        program = os.path.abspath(program)
    plat = load_platform(platform_spec, rto_min, rto_max, rto_scheme, seed)
    check_emulable(plat)
    n = len(plat["hosts"])
    size = n if procs is None else procs
    if not 1 <= size <= n:
        raise UserError(f"-n/--procs must be in 1..{n} for {n} hosts, got {procs}")
    limit = _seconds(timeout, "--timeout")
    logs: list[list[str]] = []

    def job(cl: Any) -> Any:
        log_paths = [cl._path(f"{r}.log") for r in range(size)]  # this run's (named before it starts)
        res = cl.run(program, size, kwargs=kwargs, timeout_s=limit)
        if script:  # what each rank printed, read before the cluster (and its logs) is torn down
            logs.append([_read_log(p) for p in log_paths])
        return res

    results, info = run_on_cluster(plat, repeat, job, "program")
    info["platform"] = platform_spec
    if script:
        import sys

        out = sys.stderr if as_json else sys.stdout
        for run_logs in logs:
            for text in run_logs:
                out.write(text)
        out.flush()
    if repeat == 1:  # the table `sim run` and `run local|mpi|socket` print, and their --json document
        from .run import report_result

        report_result(
            results[0], "emu", platform_spec, as_json, extra={"port_drops": results[0].port_drops()}, script=script
        )
        return
    report(results, info, {"workload": program.rsplit("/", 1)[-1], "procs": size}, as_json)


def _read_log(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


@run_group.command()
@click.option("--size", default="64KiB", show_default=True, help="bytes each sender sends")
@click.option("--senders", type=int, default=None, help="number of senders (default: every host but the receiver)")
@click.option(
    "--via",
    type=click.Choice(["raw", "socket"]),
    default="raw",
    show_default=True,
    help="raw: plain sockets, one connection per sender (the kernel alone); "
    "socket: the gather_linear rank program over SocketComm",
)
@_options
def incast(size, senders, via, platform_spec, rto_min, rto_max, rto_scheme, seed, repeat, timeout, as_json) -> None:
    """N senders into one receiver through one shaped switch port (TCP incast)."""
    nbytes = parse_with(lambda v: parse_size(v, "--size"), size, "--size")
    plat = load_platform(platform_spec, rto_min, rto_max, rto_scheme, seed)
    check_emulable(plat)
    n = len(plat["hosts"])
    if senders is not None and not 1 <= senders <= n - 1:
        raise UserError(f"--senders must be in 1..{n - 1} for {n} hosts, got {senders}")
    limit = _seconds(timeout, "--timeout")
    if via == "raw":
        job = lambda cl: cl.incast_raw(nbytes, senders, timeout_s=limit)  # noqa: E731
    else:
        size_ranks = n if senders is None else senders + 1
        job = lambda cl: cl.run(
            "parcomm.collectives:gather_linear", size_ranks, kwargs={"nbytes": nbytes}, timeout_s=limit
        )  # noqa: E731
    results, info = run_on_cluster(plat, repeat, job, "incast")
    info["platform"] = platform_spec
    report(
        results,
        info,
        {"workload": "incast", "via": via, "size_bytes": nbytes, "senders": senders if senders is not None else n - 1},
        as_json,
    )


@run_group.command()
@click.option(
    "--algo",
    type=click.Choice(["A", "B"], case_sensitive=False),
    default="A",
    show_default=True,
    help="Nomura & Ishikawa's Fig. 6 (A) or Fig. 7 (B)",
)
@click.option("--size", default="64KiB", show_default=True, help="bytes each rank sends to each other rank")
@_options
def alltoall(algo, size, platform_spec, rto_min, rto_max, rto_scheme, seed, repeat, timeout, as_json) -> None:
    """Alltoall by algorithm A or B of Nomura & Ishikawa over SocketComm (power-of-two hosts)."""
    nbytes = parse_with(lambda v: parse_size(v, "--size"), size, "--size")
    plat = load_platform(platform_spec, rto_min, rto_max, rto_scheme, seed)
    check_emulable(plat)
    n = len(plat["hosts"])
    if n & (n - 1):
        raise UserError(f"alltoall A/B need a power-of-two number of hosts, the platform has {n}")
    limit = _seconds(timeout, "--timeout")
    prog = f"parcomm.collectives:alltoall_{algo.lower()}"
    results, info = run_on_cluster(
        plat, repeat, lambda cl: cl.run(prog, kwargs={"nbytes": nbytes}, timeout_s=limit), "alltoall"
    )
    info["platform"] = platform_spec
    report(results, info, {"workload": "alltoall", "algo": algo.upper(), "size_bytes": nbytes}, as_json)


@run_group.command()
@click.option(
    "--algo",
    type=click.Choice(["binomial", "scatter_allgather"]),
    default="binomial",
    show_default=True,
    help="binomial tree, or scatter + ring allgather (van de Geijn; for large messages)",
)
@click.option("--size", default="1MiB", show_default=True, help="bytes broadcast from the root")
@click.option("--root", type=int, default=0, show_default=True, help="rank that holds the data")
@_options
def bcast(algo, size, root, platform_spec, rto_min, rto_max, rto_scheme, seed, repeat, timeout, as_json) -> None:
    """Broadcast by binomial tree or scatter + allgather over SocketComm."""
    nbytes = parse_with(lambda v: parse_size(v, "--size"), size, "--size")
    plat = load_platform(platform_spec, rto_min, rto_max, rto_scheme, seed)
    check_emulable(plat)
    n = len(plat["hosts"])
    if not 0 <= root < n:
        raise UserError(f"--root must be in 0..{n - 1}, got {root}")
    limit = _seconds(timeout, "--timeout")
    prog = f"parcomm.collectives:bcast_{algo}"
    results, info = run_on_cluster(
        plat, repeat, lambda cl: cl.run(prog, kwargs={"nbytes": nbytes, "root": root}, timeout_s=limit), "bcast"
    )
    info["platform"] = platform_spec
    report(results, info, {"workload": "bcast", "algo": algo, "size_bytes": nbytes}, as_json)


@emu.command()
@click.option("--all", "all_runs", is_flag=True, help="also remove runs whose owner is still alive")
@click.option("--json", "as_json", is_flag=True, help="print the result as JSON")
def cleanup(all_runs, as_json) -> None:
    """Remove namespaces and work directories left by emulated runs whose process has died."""
    from ..emu import EmuError, require_root
    from ..emu.naming import sweep

    try:
        require_root()
        removed = sweep(all_runs=all_runs)
    except EmuError as e:
        raise UserError(str(e)) from None
    if as_json:
        emit_json({"removed": removed.namespaces, "workdirs": removed.workdirs})
    else:
        click.echo(
            f"removed {len(removed.namespaces)} namespace(s)"
            + (": " + ", ".join(removed.namespaces) if removed.namespaces else "")
            + f" and {len(removed.workdirs)} work director{'y' if len(removed.workdirs) == 1 else 'ies'}"
        )


@emu.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="print the result as JSON")
def list_cmd(as_json) -> None:
    """List emulated runs on this machine (live or stale)."""
    from ..emu import EmuError, list_runs, owner_alive, require_root

    try:
        require_root()
        runs = [
            {"run_id": r.run_id, "pid": r.pid, "alive": owner_alive(r), "namespaces": len(r.namespaces)}
            for r in list_runs()
        ]
    except EmuError as e:
        raise UserError(str(e)) from None
    if as_json:
        emit_json(runs)
    elif not runs:
        click.echo("no emulated runs")
    else:
        for r in runs:
            click.echo(
                f"{r['run_id']}  pid {r['pid']}  {'alive' if r['alive'] else 'STALE'}  {r['namespaces']} namespaces"
            )
