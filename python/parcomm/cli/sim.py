"""``parcomm sim``: run a collective, or a user's own rank program, on a simulated platform."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..platform.units import parse_duration, parse_size
from .common import SEED, IntIn, RunFailed, UserError, emit_json, load_platform, parse_with
from .run import COMPUTE_HELP, JSON_OUT_HELP, TAG_OUTPUT_HELP, program_output_to_stderr

PLATFORM_HELP = (
    "platform: a short form (star:64, star:64,rate=1G,buffer=64KiB,fc=off, atm:100, "
    "opteron:64, segments:16x8) or a TOML platform file"
)


def _common(f):
    opts = [
        click.option("--platform", "platform_spec", default="star:64", show_default=True, help=PLATFORM_HELP),
        click.option("--procs", "-n", type=IntIn(1), default=None, help="number of ranks (default: one per host)"),
        click.option("--rto-min", default=None, help="TCP RTO minimum for every host, e.g. 200ms"),
        click.option("--rto-max", default=None, help="TCP RTO maximum for every host, e.g. 60s"),
        click.option(
            "--rto-scheme",
            type=click.Choice(["fixed", "random_min", "random_both"]),
            default=None,
            help="per-host RTO of Oguchi et al. (§5.2) with X = --rto-min: fixed (MIN=MAX=X), "
            "random_min (MIN in [X,X+100ms], MAX=MIN+100ms), random_both (MIN=MAX in [X,X+100ms])",
        ),
        click.option("--seed", type=SEED, default=1, show_default=True, help="random seed (same seed, same result)"),
        click.option("--eager-limit", default="128KiB", show_default=True, help="larger messages use a rendezvous"),
        click.option("--time-limit", default="600s", show_default=True, help="give up after this much simulated time"),
        click.option("--json", "as_json", is_flag=True, help="print the full result as JSON"),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def _run(
    program,
    kwargs: dict,
    platform_spec,
    procs,
    rto_min,
    rto_max,
    rto_scheme,
    seed,
    eager_limit,
    time_limit,
    as_json,
    what: dict,
) -> None:
    from ..comm import CommError, run_sim

    plat = load_platform(platform_spec, rto_min, rto_max, rto_scheme, procs=procs)
    eager = parse_with(lambda v: parse_size(v, "--eager-limit"), eager_limit, "--eager-limit")
    limit = parse_with(lambda v: parse_duration(v, "--time-limit", require_unit=True), time_limit, "--time-limit")
    try:
        res = run_sim(program, plat, procs, seed=seed, kwargs=kwargs, eager_limit=eager, time_limit=limit)
    except (CommError, ValueError) as e:
        if "time limit" in str(e):  # say which option decides it; reaching it is a failed run, as under `sim run`
            raise RunFailed(f"{e} (--time-limit {time_limit})") from None
        raise UserError(str(e)) from None
    summary: dict[str, Any] = {
        **what,
        "platform": platform_spec,
        **_transport(plat),
        "procs": len(res.finish_times),
        "seed": seed,
        "time_s": res.time,
        "events": res.events,
        "wall_s": round(res.wall_s, 3),
        **res.host_totals(),
        "port_drops": res.port_drops(),
    }
    if as_json:
        emit_json({"summary": summary, "finish_times_s": res.finish_times, "counters": res.counters})
        return
    _print_tables(summary, res)


def _transport(plat: dict) -> dict:
    """Which TCP stack and timing noise ran, and whether that is the validated default."""
    from ..platform.defaults import transport_of

    return transport_of(plat)


def _print_tables(summary: dict, res) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console()
    t = Table(title="result", show_header=False)
    for k, v in summary.items():
        t.add_row(k, f"{v:.6f}" if isinstance(v, float) else str(v))
    con.print(t)
    h = res.counters["hosts"]
    rows = [i for i in range(len(h["name"])) if h["segments_retransmitted"][i] or h["timeouts"][i]]
    if rows:
        ht = Table(title=f"hosts with retransmissions ({len(rows)} of {len(h['name'])}; --json for all)")
        for col in ("host", "bytes sent", "retx bytes", "retx segs", "timeouts", "fast retx"):
            ht.add_column(col, justify="right")
        for i in rows[:20]:
            ht.add_row(
                h["name"][i],
                str(h["bytes_sent"][i]),
                str(h["bytes_retransmitted"][i]),
                str(h["segments_retransmitted"][i]),
                str(h["timeouts"][i]),
                str(h["fast_retransmits"][i]),
            )
        con.print(ht)
    p = res.counters["ports"]
    prow = [i for i in range(len(p["name"])) if p["drops"][i]]
    if prow:
        pt = Table(title=f"ports with drops ({len(prow)} of {len(p['name'])})")
        for col in ("port", "drops", "max queue", "capacity"):
            pt.add_column(col, justify="right")
        for i in prow[:20]:
            pt.add_row(
                p["name"][i], str(p["drops"][i]), f"{p['max_occupancy'][i]} {p['unit'][i]}", str(p["capacity"][i])
            )
        con.print(pt)


@click.group()
def sim() -> None:
    """Run collectives or your own rank programs on a simulated platform
    (packet-level, deterministic).

    \b
    Examples:
      parcomm sim run mymodule:main --platform star:8 --kwargs '{"n": 1000}' --json
      parcomm sim run examples/user_program/user_program.py:main --platform opteron:4
      parcomm sim alltoall --platform star:64 --algo A --size 64KiB --rto-min 200ms --rto-max 60s --seed 1
    """


@sim.command()
@click.option(
    "--algo",
    type=click.Choice(["A", "B"], case_sensitive=False),
    default="A",
    show_default=True,
    help="Nomura & Ishikawa's Fig. 6 (A: post all receives, send to each) or Fig. 7 (B: one partner per phase)",
)
@click.option("--size", default="64KiB", show_default=True, help="bytes each rank sends to each other rank")
@_common
def alltoall(algo, size, **kw) -> None:
    """Alltoall by algorithm A or B of Nomura & Ishikawa (power-of-two ranks)."""
    from ..collectives import ALLTOALL_ALGORITHMS

    nbytes = parse_with(lambda v: parse_size(v, "--size"), size, "--size")
    _run(
        ALLTOALL_ALGORITHMS[algo.upper()],
        {"nbytes": nbytes},
        what={"collective": "alltoall", "algo": algo.upper(), "size_bytes": nbytes},
        **kw,
    )


@sim.command()
@click.option(
    "--algo",
    type=click.Choice(["binomial", "scatter_allgather"]),
    default="binomial",
    show_default=True,
    help="binomial tree, or scatter + ring allgather (van de Geijn; for large messages)",
)
@click.option("--size", default="1MiB", show_default=True, help="bytes broadcast from the root")
@click.option("--root", type=int, default=0, show_default=True, help="rank that holds the data")
@_common
def bcast(algo, size, root, **kw) -> None:
    """Broadcast by binomial tree or scatter + allgather (van de Geijn)."""
    from ..collectives import BCAST_ALGORITHMS

    nbytes = parse_with(lambda v: parse_size(v, "--size"), size, "--size")
    _run(
        BCAST_ALGORITHMS[algo],
        {"nbytes": nbytes, "root": root},
        what={"collective": "bcast", "algo": algo, "size_bytes": nbytes},
        **kw,
    )


@sim.command()
@_common
def barrier(**kw) -> None:
    """Dissemination barrier."""
    from ..collectives import barrier as barrier_program

    _run(barrier_program, {}, what={"collective": "barrier"}, **kw)


@sim.command(name="run")
@click.argument("program_arg", metavar="[PROGRAM]", required=False)
@click.option(
    "--program",
    "program",
    default=None,
    help="the rank program: MODULE:FUNCTION or path/file.py:FUNCTION naming an `async def f(comm, ...)`, "
    "or a collective's name (also accepted as the first argument)",
)
@click.option(
    "--kwargs",
    "kwargs_json",
    default=None,
    help="keyword arguments for the program as a JSON object, e.g. '{\"nbytes\": 65536}'",
)
@click.option(
    "--rendezvous",
    type=click.Choice(["sender", "receiver"]),
    default="sender",
    show_default=True,
    help="large-message protocol: sender-driven (MPICH: RTS, CTS, data) or receiver-driven "
    "(as in Nomura & Ishikawa's MPI library: a posted receive sends a credit)",
)
@click.option(
    "--trace",
    "trace_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="write each rank's timeline (sends, receives, waits, compute, collectives; simulated time) to "
    "this file as Chrome/Perfetto trace-event JSON",
)
@click.option("--json-out", type=click.Path(dir_okay=False, path_type=Path), default=None, help=JSON_OUT_HELP)
@click.option("--tag-output", is_flag=True, help=TAG_OUTPUT_HELP)
@click.option("--compute-scale", type=click.FloatRange(min=0), default=0.0, show_default=True, help=COMPUTE_HELP)
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@_common
def run_program(
    program_arg,
    program,
    kwargs_json,
    rendezvous,
    trace_file,
    json_out,
    tag_output,
    compute_scale,
    script_args,
    platform_spec,
    procs,
    rto_min,
    rto_max,
    rto_scheme,
    seed,
    eager_limit,
    time_limit,
    as_json,
) -> None:
    """Simulate your own rank program: PROGRAM is MODULE:FUNCTION or
    path/file.py:FUNCTION naming an `async def f(comm, ...)` (the same program
    `parcomm run local|mpi|socket` runs for real). Prints each rank's finish
    time (simulated seconds) and return value; --json prints the same
    document as `parcomm run ... --json`, with the simulator's counters."""
    from ..comm import CommError, run_sim
    from ..comm.aio import ProgramError, resolve_program
    from .run import checked_kwargs, is_script, no_script_args, pick_program, report_result, script_kwargs, write_trace

    ref = pick_program(program_arg, program)
    script = is_script(ref)
    try:
        prog = resolve_program(ref)
        if script:  # a whole mpi4py script, unchanged (cli/run.py)
            kwargs = script_kwargs(
                ref, kwargs_json, script_args, as_json=as_json, tag_output=tag_output, cpu_scale=compute_scale
            )
        else:
            no_script_args(ref, script_args)
            kwargs = checked_kwargs(ref, kwargs_json)
    except ProgramError as e:
        raise UserError(str(e)) from None
    plat = load_platform(platform_spec, rto_min, rto_max, rto_scheme, procs=procs)
    eager = parse_with(lambda v: parse_size(v, "--eager-limit"), eager_limit, "--eager-limit")
    limit = parse_with(lambda v: parse_duration(v, "--time-limit", require_unit=True), time_limit, "--time-limit")
    try:
        with program_output_to_stderr(as_json):
            res = run_sim(
                prog,
                plat,
                procs,
                seed=seed,
                kwargs=kwargs,
                eager_limit=eager,
                time_limit=limit,
                rendezvous=rendezvous,
                trace=trace_file is not None,
            )
    except CommError as e:
        if "time limit" in str(e):
            raise RunFailed(f"{e} (--time-limit {time_limit})") from None
        raise RunFailed(str(e)) from None
    write_trace(trace_file, res, "sim", platform_spec)
    report_result(
        res,
        "sim",
        platform_spec,
        as_json,
        extra={
            **_transport(plat),
            "seed": seed,
            "events": res.events,
            **res.host_totals(),
            "port_drops": res.port_drops(),
        },
        json_out=json_out,
        script=script,
    )
