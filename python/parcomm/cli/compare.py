"""``parcomm compare``: the same workload on the simulator and the emulated cluster.

Both backends get the same platform dict (rate, port buffer, MTU, per-host
RTO bounds, the TCP stack: the kernel through ``platform/tcp_backends.toml``,
whose fields the kernel cannot follow are printed as warnings); the table
shows completion times and retransmission counts side by side, and the ratio
emulated / simulated, under a title naming the stack and the timing noise the
simulator ran. Each point runs ``--repeat`` times on each backend (the
simulator with seeds ``--seed`` .. ``--seed + repeat - 1``), medians shown. The emulation needs root; with
``--backends sim`` the command runs anywhere. The numbers come from
:func:`parcomm.result.compare`; this module runs the workloads and formats.
"""

from __future__ import annotations

from typing import Any

import click

from ..platform.units import parse_duration, parse_size
from ..result import Result, WayComparison
from ..result import compare as compare_results
from .common import UserError, emit_json, load_platform, parse_with
from .emu import EMU_PLATFORM_HELP, SCHEMES, check_emulable, make_progress

BACKENDS = ("sim", "emu")


def _list(text: str, option: str, parse) -> list:
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if not items:
        raise UserError(f"{option}: empty list")
    out = []
    for t in items:
        try:
            out.append(parse(t))
        except ValueError as e:
            raise UserError(str(e)) from None
    return out


def _backends(text: str) -> list[str]:
    names = _list(text, "--backends", str)
    bad = [b for b in names if b not in BACKENDS]
    if bad:
        raise UserError(f"--backends: unknown backend '{bad[0]}' (expected a list of {', '.join(BACKENDS)})")
    return names


def _compared(rows: list[dict], runs: list[list[Result]]) -> list[WayComparison]:
    """Each point's results compared; its row gets every way's summary (sim first, as in the JSON)."""
    out = []
    for row, results in zip(rows, runs):
        c = compare_results(results)
        for way in BACKENDS:
            if way in c:
                row[way] = c[way].row()
        out.append(c)
    return out


def _n(x: Any) -> str:
    return "-" if x is None else f"{x:g}"


def _transport(plat: dict) -> dict:
    from ..platform.defaults import transport_of

    return transport_of(plat)


def _title(title: str, plat: dict) -> str:
    from ..platform.defaults import transport_label

    return f"{title}\nsimulator: {transport_label(plat)}"


def _kernel_notes(runs: list[list[Result]]) -> list[str]:
    """What the emulated kernels were told they could not do (tcpknobs: fixed rows of the mapping)."""
    return sorted({n for point in runs for r in point if r.way == "emu" for n in r.extra.get("tcp_notes", [])})


def _warn(notes: list[str]) -> None:
    for n in notes:
        click.echo(f"warning: emulated kernel: {n}", err=True)


def _print(
    rows: list[dict], comparisons: list[WayComparison], keys: list[str], title: str, backends: list[str]
) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title)
    for k in keys:
        t.add_column(k)
    if "sim" in backends:
        for c in ("sim ms", "sim retx", "sim RTOs"):
            t.add_column(c, justify="right")
    if "emu" in backends:
        for c in ("emu ms", "emu retx", "emu RTOs"):
            t.add_column(c, justify="right")
    if len(backends) == 2:
        t.add_column("emu/sim", justify="right")
    for r, cmp in zip(rows, comparisons):
        cells = [str(r[k]) for k in keys]
        for b in backends:
            x = cmp[b]
            cells += [f"{x.time_s * 1e3:.2f}", _n(x.segments_retransmitted), _n(x.timeouts)]
        if len(backends) == 2:
            ratio = cmp.ratio("emu", to="sim")
            cells.append("-" if ratio is None else f"{ratio:.2f}")
        t.add_row(*cells)
    Console().print(t)


def _common(f):
    opts = [
        click.option("--backends", default="sim,emu", show_default=True, help="comma list of sim, emu"),
        click.option("--rto-max", default=None, help="TCP RTO maximum for every host"),
        click.option(
            "--rto-scheme",
            type=click.Choice(SCHEMES),
            default=None,
            help="per-host RTO of Oguchi et al. (§5.2) with X = each --rto-min",
        ),
        click.option("--seed", type=int, default=1, show_default=True, help="simulator seed and RTO-scheme seed"),
        click.option(
            "--repeat",
            type=int,
            default=3,
            show_default=True,
            help="runs per point on each backend: emulated runs, simulator seeds from --seed (medians shown)",
        ),
        click.option("--timeout", default="120s", show_default=True, help="time limit of each emulated run"),
        click.option("--json", "as_json", is_flag=True, help="print every point as JSON"),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def _emu_cluster(plat: dict):
    from ..emu import EmuCluster

    return EmuCluster(plat)


@click.group()
def compare() -> None:
    """The simulator and the emulated cluster side by side, same platform parameters.

    \b
    Examples:
      parcomm compare alltoall --platform star:16,rate=100M,buffer=32KiB --algo A,B --size 4KiB,256KiB
      parcomm compare incast --platform star:17,rate=100M,buffer=32KiB --senders 4,8,16 --rto-min 200ms,5ms
    """


@compare.command()
@click.option(
    "--platform", "platform_spec", default="star:16,rate=100M,buffer=32KiB", show_default=True, help=EMU_PLATFORM_HELP
)
@click.option("--algo", default="A,B", show_default=True, help="comma list of A, B (Nomura & Ishikawa, Figs. 6, 7)")
@click.option("--size", default="4KiB,256KiB", show_default=True, help="comma list of bytes per rank pair")
@click.option("--rto-min", default=None, help="TCP RTO minimum for every host")
@_common
def alltoall(platform_spec, algo, size, rto_min, backends, rto_max, rto_scheme, seed, repeat, timeout, as_json) -> None:
    """Alltoall A/B: simulated vs emulated times and retransmissions."""
    from ..collectives import ALLTOALL_ALGORITHMS
    from ..comm import CommError, run_sim
    from ..emu import EmuError

    algos = _list(algo, "--algo", lambda a: a.upper())
    bad = [a for a in algos if a not in ALLTOALL_ALGORITHMS]
    if bad:
        raise UserError(f"--algo: unknown algorithm '{bad[0]}' (expected A or B)")
    sizes = _list(size, "--size", lambda v: parse_size(v, "--size"))
    bks = _backends(backends)
    plat = load_platform(platform_spec, rto_min, rto_max, rto_scheme, seed)
    n = len(plat["hosts"])
    if n & (n - 1):
        raise UserError(f"alltoall A/B need a power-of-two number of hosts, the platform has {n}")
    if repeat < 1:
        raise UserError(f"--repeat must be at least 1, got {repeat}")
    limit = parse_with(lambda v: parse_duration(v, "--timeout", require_unit=True), timeout, "--timeout")
    if "emu" in bks:
        check_emulable(plat)
    points = [(a, m) for a in algos for m in sizes]
    rows = [{"algo": a, "size_bytes": m} for a, m in points]
    runs: list[list[Result]] = [[] for _ in points]
    bar = make_progress()
    try:
        with bar:
            if "sim" in bks:
                task = bar.add_task("simulating", total=len(points))
                for point, (a, m) in zip(runs, points):
                    for k in range(repeat):
                        point.append(run_sim(ALLTOALL_ALGORITHMS[a], plat, seed=seed + k, kwargs={"nbytes": m}))
                    bar.advance(task)
            if "emu" in bks:
                task = bar.add_task("emulating", total=len(points) * repeat)
                with _emu_cluster(plat) as cl:
                    for point, (a, m) in zip(runs, points):
                        for _ in range(repeat):
                            point.append(
                                cl.run(
                                    f"parcomm.collectives:alltoall_{a.lower()}", kwargs={"nbytes": m}, timeout_s=limit
                                )
                            )
                            bar.advance(task)
    except (CommError, ValueError) as e:
        raise UserError(str(e)) from None
    except EmuError as e:
        raise click.ClickException(str(e)) from None
    comparisons = _compared(rows, runs)
    notes = _kernel_notes(runs)
    if as_json:
        emit_json(
            {
                "workload": "alltoall",
                "platform": platform_spec,
                "transport": _transport(plat),
                "kernel_notes": notes,
                "backends": bks,
                "points": rows,
            }
        )
        return
    _warn(notes)
    _print(rows, comparisons, ["algo", "size_bytes"], _title(f"alltoall on {platform_spec} ({n} hosts)", plat), bks)


@compare.command()
@click.option(
    "--platform",
    "platform_spec",
    default="star:17,rate=100M,buffer=32KiB",
    show_default=True,
    help=EMU_PLATFORM_HELP + "; host 0 receives",
)
@click.option("--senders", default="4,8,16", show_default=True, help="comma list of sender counts (hosts 1..N send)")
@click.option("--size", default="64KiB", show_default=True, help="bytes each sender sends")
@click.option("--rto-min", default="200ms,5ms", show_default=True, help="comma list of RTO minima")
@_common
def incast(
    platform_spec, senders, size, rto_min, backends, rto_max, rto_scheme, seed, repeat, timeout, as_json
) -> None:
    """Incast (N senders, one receiver port): simulated gather vs raw kernel TCP."""
    from ..collectives import gather_linear
    from ..comm import CommError, run_sim
    from ..emu import EmuError

    nbytes = _list(size, "--size", lambda v: parse_size(v, "--size"))[0]
    counts = _list(senders, "--senders", int)
    rtos = _list(rto_min, "--rto-min", str)
    bks = _backends(backends)
    if repeat < 1:
        raise UserError(f"--repeat must be at least 1, got {repeat}")
    limit = parse_with(lambda v: parse_duration(v, "--timeout", require_unit=True), timeout, "--timeout")
    plats = {r: load_platform(platform_spec, r, rto_max, rto_scheme, seed) for r in rtos}
    n = len(next(iter(plats.values()))["hosts"])
    bad = [k for k in counts if not 1 <= k <= n - 1]
    if bad:
        raise UserError(f"--senders: {bad[0]} is not in 1..{n - 1} for {n} hosts")
    if "emu" in bks:
        check_emulable(next(iter(plats.values())))
    rows = [{"rto_min": r, "senders": k} for r in rtos for k in counts]
    runs: list[list[Result]] = [[] for _ in rows]
    bar = make_progress()
    try:
        with bar:
            if "sim" in bks:
                task = bar.add_task("simulating", total=len(rows))
                for row, point in zip(rows, runs):
                    for k in range(repeat):
                        # Sent eagerly, as the raw sockets do: no rendezvous above 128 KiB.
                        res = run_sim(
                            gather_linear,
                            plats[row["rto_min"]],
                            row["senders"] + 1,
                            seed=seed + k,
                            kwargs={"nbytes": nbytes},
                            eager_limit=max(nbytes + 1, 1 << 17),
                        )
                        point.append(res)
                    bar.advance(task)
            if "emu" in bks:
                task = bar.add_task("emulating", total=len(rows) * repeat)
                for r in rtos:
                    with _emu_cluster(plats[r]) as cl:
                        for row, point in zip(rows, runs):
                            if row["rto_min"] != r:
                                continue
                            for _ in range(repeat):
                                point.append(cl.incast_raw(nbytes, row["senders"], timeout_s=limit))
                                bar.advance(task)
    except (CommError, ValueError) as e:
        raise UserError(str(e)) from None
    except EmuError as e:
        raise click.ClickException(str(e)) from None
    comparisons = _compared(rows, runs)
    first = next(iter(plats.values()))
    notes = _kernel_notes(runs)
    if as_json:
        emit_json(
            {
                "workload": "incast",
                "platform": platform_spec,
                "transport": _transport(first),
                "kernel_notes": notes,
                "size_bytes": nbytes,
                "backends": bks,
                "points": rows,
            }
        )
        return
    _warn(notes)
    title = _title(f"incast of {nbytes} B per sender on {platform_spec}", first)
    _print(rows, comparisons, ["rto_min", "senders"], title, bks)
