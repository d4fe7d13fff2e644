"""``parcomm conformance``: the simulator held to real Linux TCP, scenario by scenario."""

from __future__ import annotations

import datetime
import fnmatch
import json
import os
import platform as _platform
import subprocess
from typing import Any

import click

from .common import UserError, emit_json

DEFAULT_OUT = os.path.join("benchmarks", "results", "conformance.json")


def _select(scenarios: list, quick_names: list[str], only: tuple[str, ...], quick: bool) -> list:
    chosen = scenarios
    if quick:
        chosen = [s for s in chosen if s.name in set(quick_names)]
    if only:
        pats = [p.strip() for o in only for p in o.split(",") if p.strip()]
        chosen = [s for s in chosen if any(fnmatch.fnmatchcase(s.name, p) for p in pats)]
        if not chosen:
            raise UserError(f"--only: no scenario matches {', '.join(pats)} (see `parcomm conformance --list`)")
    return chosen


def _profiles(text: str) -> list[str]:
    from ..conformance import PROFILES

    names = [p.strip() for p in text.split(",") if p.strip()]
    bad = [p for p in names if p not in PROFILES]
    if not names or bad:
        raise UserError(f"--profile: unknown profile {bad[0] if bad else '(empty)'!r} (known: {', '.join(PROFILES)})")
    return names


def _commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=os.path.dirname(__file__),
        )
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _document(rows: list[dict], profiles: list[str], matrix: str, complete: bool) -> dict:
    from importlib.metadata import version

    from ..conformance import METRICS, NOISE_LIMIT, summarize
    from ..conformance.runner import KERNEL_COUNTERS

    return {
        "complete": complete,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "parcomm": version("parcomm"),
        "commit": _commit(),
        "kernel": _platform.release(),
        "cpus": os.cpu_count(),
        "matrix": matrix,
        "profiles": profiles,
        "noise_limit": NOISE_LIMIT,
        "metrics": {m: {"kernel": KERNEL_COUNTERS[m][0], "simulator": KERNEL_COUNTERS[m][1]} for m in METRICS},
        "summary": [summarize(rows, p) for p in profiles],
        "scenarios": rows,
    }


def _write(doc: dict, path: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, allow_nan=False)
        f.write("\n")
    os.replace(tmp, path)  # a crash mid-write keeps the previous file


def _pair(k: Any, s: Any) -> str:
    f = lambda v: "-" if v is None else f"{v:g}"  # noqa: E731
    return f"{f(k)}/{f(s)}"


def _print_tables(doc: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console()
    if not con.is_terminal:  # a pipe or file: rows whole, not folded at 80 columns
        con = Console(width=170)
    for prof in doc["profiles"]:
        t = Table(title=f"simulator profile '{prof}' against real Linux TCP (counters: kernel/simulator)")
        for c, j in (
            ("scenario", "left"),
            ("kernel ms", "right"),
            ("spread", "right"),
            ("sim ms", "right"),
            ("error", "right"),
            ("RTOs", "right"),
            ("recov", "right"),
            ("TLPs", "right"),
            ("retx", "right"),
            ("drops", "right"),
        ):
            t.add_column(c, justify=j, overflow="fold")
        for r in doc["scenarios"]:
            e, s = r.get("emu"), r["sim"].get(prof)
            cells = [r["name"]]
            cells += [
                f"{e['median_s'] * 1e3:.2f}" if e else (r.get("emu_error") or "-")[:40],
                "-" if not e or e["spread"] is None else f"{e['spread']:.0%}" + (" !" if r["noisy"] else ""),
            ]
            cells += [
                f"{s['median_s'] * 1e3:.2f}" if s else "-",
                "-" if not s or s["error"] is None else f"{s['error']:+.0%}",
            ]
            for m in ("timeouts", "recoveries", "loss_probes", "retransmitted", "port_drops"):
                cells.append(_pair(e["counters"][m] if e else None, s["counters"][m] if s else None))
            t.add_row(*cells)
        con.print(t)
    for s in doc["summary"]:
        if s["median_abs_error"] is None:
            con.print(
                f"[bold]{s['profile']}[/bold]: no scenario could decide agreement "
                f"({s['noisy']} too noisy, {s['emu_failed']} failed in the emulation)"
            )
            continue
        worst = ", ".join(f"{w['name']} {w['error']:+.0%}" for w in s["largest"])
        con.print(
            f"[bold]{s['profile']}[/bold]: median |error| {s['median_abs_error']:.0%} over {s['decided']} scenarios; "
            f"{s['within_10pct']:.0%} within 10 %, {s['within_25pct']:.0%} within 25 %; RTO counts agree in "
            f"{s['timeouts_agree']:.0%}, RTO incidence (runs with an RTO) within 20 points in "
            f"{'-' if s.get('rto_incidence_agree') is None else format(s['rto_incidence_agree'], '.0%')}"
            f" ({s['noisy']} too noisy to decide, {s['emu_failed']} failed). Largest: {worst}"
        )


@click.command()
@click.argument("matrix", required=False, type=click.Path(dir_okay=False))
@click.option(
    "--only",
    multiple=True,
    metavar="NAME",
    help="run only scenarios whose name matches (shell pattern, e.g. 'incast-*-rto5ms-*'; repeatable or comma list)",
)
@click.option("--quick", is_flag=True, help="run the matrix's quick subset (the CI check)")
@click.option(
    "--repeat",
    type=click.IntRange(1, 20),
    default=None,
    help="emulated runs and simulator seeds per scenario [default: each scenario's own, 3 in the built-in matrix]",
)
@click.option(
    "--profile",
    "profile_list",
    default="stock",
    show_default=True,
    help="comma list of simulator TCP profiles: stock (what every entry point runs: the linux stack "
    "whole), rfc (NewReno, no SACK), sack-tlp (SACK and tail loss probes), linux (the RFC transport with "
    "the linux stack's mechanisms: Linux RTO rules, timestamps, RACK-TLP, PRR, F-RTO); every profile's "
    "hosts have the referee's measured timing noise (matrix.toml jitter)",
)
@click.option(
    "--backends",
    type=click.Choice(["sim,emu", "sim", "emu"]),
    default="sim,emu",
    show_default=True,
    help="sim alone runs anywhere; emu needs root and network namespaces",
)
@click.option(
    "--out",
    default=None,
    type=click.Path(dir_okay=False),
    help=f"where the results go, rewritten after every scenario [default: {DEFAULT_OUT} in a parcomm "
    "checkout, else ./conformance.json]",
)
@click.option(
    "--plot",
    "plot_path",
    default=None,
    type=click.Path(dir_okay=False),
    help="also draw the fidelity scatter (simulated vs real, log-log) to this PNG/SVG/PDF",
)
@click.option(
    "--report",
    "report_dir",
    default=None,
    type=click.Path(file_okay=False),
    help="also add the fidelity page to the HTML report in this directory (e.g. results) and regenerate its index.html",
)
@click.option(
    "--trace",
    "trace_path",
    default=None,
    type=click.Path(dir_okay=False),
    help="trace ONE scenario (--only NAME) on both sides instead: per-flow cwnd, retransmissions and "
    "RTOs over time, drawn to this file, data beside it as .json",
)
@click.option(
    "--reuse-emu",
    "reuse_path",
    default=None,
    type=click.Path(dir_okay=False, exists=True),
    help="take the emulated runs of an earlier results file where a scenario is unchanged "
    "(same parameters and repeats), and run only the simulator for it",
)
@click.option("--list", "list_only", is_flag=True, help="list the scenarios and exit")
@click.option("--json", "as_json", is_flag=True, help="print the results document as JSON on stdout")
def conformance(
    matrix,
    only,
    quick,
    repeat,
    profile_list,
    backends,
    out,
    plot_path,
    report_dir,
    trace_path,
    reuse_path,
    list_only,
    as_json,
) -> None:
    """The simulator against real Linux TCP (the emulation), scenario by scenario.

    Each scenario of MATRIX (default: the built-in matrix, see
    docs/conformance.md) runs in the emulation and in the simulator under
    each --profile. One row per scenario: the kernel's median completion
    time and its run-to-run spread (marked ! above 25 %: too noisy to
    decide), the simulator's time and error, and the loss-recovery counters
    of both (kernel/simulator): RTO timeouts, fast-recovery episodes, tail
    loss probes, retransmitted segments, port drops. The summary gives the
    median |error| and the share within 10 % and 25 %.

    \b
    Examples:
      parcomm conformance --quick
      parcomm conformance --only 'incast-*-rto200ms-*' --repeat 5 --plot fidelity.png
      parcomm conformance --only incast-8x64KiB-rto200ms-buf32KiB --trace incast8.png
      parcomm conformance --backends sim --json
    """
    from ..conformance.matrix import DEFAULT_MATRIX

    matrix = matrix or DEFAULT_MATRIX
    scenarios, quick_names = _load(matrix)
    chosen = _select(scenarios, quick_names, only, quick)
    profiles = _profiles(profile_list)
    if list_only:
        for s in chosen:
            click.echo(f"{s.name:45s} {s.describe()}" + (f"  ({s.about})" if s.about else ""))
        return
    bks = tuple(backends.split(","))
    if "emu" in bks or trace_path:
        _require_emulation()
    if trace_path:
        _trace(chosen, profiles[0], trace_path, as_json)
        return
    out = _out_path(out)
    recorded = _recorded(reuse_path) if reuse_path else None
    rows = _run_with_progress(chosen, profiles, matrix, bks, repeat, recorded, out)
    doc = _document(rows, profiles, matrix, complete=True)
    _write(doc, out)
    if plot_path:
        from ..conformance.plot import plot_fidelity

        plot_fidelity(doc, plot_path)
    if report_dir:
        from ..conformance.report import write_fidelity

        index = write_fidelity(doc, report_dir)
        click.echo(f"report: {index}", err=True)
    if as_json:
        emit_json(doc)
        return
    _print_tables(doc)
    click.echo(f"results: {out}" + (f"; figure: {plot_path}" if plot_path else ""), err=True)


def _load(matrix: str) -> tuple[list, list[str]]:
    """The matrix's scenarios and its quick subset's names; a bad matrix is the user's error."""
    from ..conformance import MatrixError, load_matrix

    try:
        return load_matrix(matrix)
    except MatrixError as e:
        raise UserError(str(e)) from None


def _require_emulation() -> None:
    """Refuse, before anything runs, to need the emulation where it cannot run (no root)."""
    from ..emu import EmuError, require_root

    try:
        require_root()
    except EmuError as e:
        raise UserError(f"{e} (the emulation is the referee; --backends sim runs the simulator alone)") from None


def _out_path(out: str | None) -> str:
    """Where the results go (``--out``, else :data:`DEFAULT_OUT` in a checkout, else
    ./conformance.json), refused before any run if its directory does not exist."""
    if out is None:
        out = DEFAULT_OUT if os.path.isdir(os.path.dirname(DEFAULT_OUT)) else "conformance.json"
    out_dir = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(out_dir):
        raise UserError(f"--out: directory {out_dir} does not exist")
    return out


def _run_with_progress(
    chosen: list,
    profiles: list[str],
    matrix: str,
    bks: tuple[str, ...],
    repeat: int | None,
    recorded: dict[str, dict] | None,
    out: str,
) -> list[dict]:
    """Run the chosen scenarios under a progress bar, rewriting ``out`` (marked incomplete)
    after every scenario so an interruption keeps what finished; the rows come back in the
    matrix's order. Ctrl-C exits with status 130 after saying what was kept."""
    from ..conformance import NOISE_LIMIT, run_scenarios
    from .emu import make_progress

    rows: list[dict] = []
    bar = make_progress()
    with bar:
        task = bar.add_task("conformance", total=len(chosen))

        def on_result(r):
            rows.append(r.as_dict(NOISE_LIMIT))
            _write(_document(rows, profiles, matrix, complete=False), out)
            bar.advance(task)

        try:
            run_scenarios(
                chosen,
                profiles,
                backends=bks,
                repeat=repeat,
                on_result=on_result,
                recorded=recorded,
                on_step=lambda m: bar.update(task, description=m[:60]),
            )
        except KeyboardInterrupt:
            click.echo(f"interrupted: {len(rows)} of {len(chosen)} scenarios kept in {out}", err=True)
            raise SystemExit(130) from None
    order = {s.name: i for i, s in enumerate(chosen)}
    rows.sort(key=lambda r: order[r["name"]])
    return rows


def _recorded(path: str) -> dict[str, dict]:
    """Rows of an earlier results document, by scenario name (checked enough to use)."""
    try:
        if os.path.getsize(path) > 64 << 20:
            raise UserError(f"--reuse-emu: {path} is larger than 64 MiB")
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise UserError(f"--reuse-emu: cannot read {path}: {e}") from None
    rows = doc.get("scenarios") if isinstance(doc, dict) else None
    if not isinstance(rows, list) or not all(isinstance(r, dict) and isinstance(r.get("name"), str) for r in rows):
        raise UserError(f"--reuse-emu: {path} is not a conformance results file (no scenarios list)")
    return {r["name"]: r for r in rows}


def _trace(chosen: list, profile: str, path: str, as_json: bool) -> None:
    from ..conformance.plot import plot_trace
    from ..conformance.trace import trace_scenario
    from ..emu.ktrace import available

    if len(chosen) != 1:
        raise UserError(f"--trace takes exactly one scenario (--only NAME); {len(chosen)} match")
    why = available()
    if why:
        raise UserError(f"--trace: {why}")
    base, _ = os.path.splitext(path)
    if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise UserError(f"--trace: directory of {path} does not exist")
    data = trace_scenario(chosen[0], profile)
    with open(base + ".json", "w") as f:
        json.dump(data, f, allow_nan=False)
    plot_trace(data, path)
    if as_json:
        emit_json(data)
        return
    for side in ("emu", "sim"):
        d = data.get(side) or {}
        fl = d.get("flows", [])
        click.echo(
            f"{side}: {len(fl)} flows, {sum(len(f['retransmits']) for f in fl)} retransmissions, "
            f"{sum(len(f['timeouts']) for f in fl)} RTOs" + (f" ({d['note']})" if d.get("note") else "")
        )
    click.echo(f"figure: {path}; data: {base}.json", err=True)
