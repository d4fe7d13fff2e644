"""``parcomm repro``: reproduce the five papers' tables and figures."""

from __future__ import annotations

import errno
import threading
from pathlib import Path
from typing import Any

import click

from .common import SEED, IntIn, RunFailed, UserError, emit_json


def _os_message(e: OSError, with_file: bool = True) -> str:
    where = f"{e.filename}: " if e.filename and with_file else ""
    name = errno.errorcode.get(e.errno or 0)
    return f"{where}{(e.strerror or str(e)).lower()}" + (f" ({name})" if name else "")


def check_out_dir(out: Path) -> None:
    """Create ``out`` if needed and prove it writable by writing to it; UserError (exit 2) in one line if not."""
    import tempfile

    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"--out {out}: cannot create the directory: {_os_message(e)}") from None
    try:
        # access() says yes to root whatever the mode bits (and in /proc); writing a file says the truth.
        with tempfile.NamedTemporaryFile(dir=out, prefix=".parcomm-probe-"):
            pass
    except OSError as e:
        raise UserError(
            f"--out {out}: cannot write a file in this directory: {_os_message(e, with_file=False)}"
        ) from None


def _study_lines() -> str:
    from ..studies.framework import STUDIES, SUMMARIES

    width = max(map(len, STUDIES))
    return "\n".join(f"  {n:{width}}  {SUMMARIES.get(n, '')}" for n in STUDIES)


class _ReproCommand(click.Command):
    """``repro --help`` lists the studies, one line each."""

    def format_epilog(self, ctx, formatter) -> None:
        formatter.write_paragraph()
        formatter.write_text("Studies:")
        with formatter.indentation():
            for line in _study_lines().splitlines():
                formatter.write(line + "\n")
        super().format_epilog(ctx, formatter)


def _print_list(as_json: bool) -> None:
    from ..studies.framework import STUDIES, SUMMARIES

    if as_json:
        emit_json([{"study": n, "summary": SUMMARIES.get(n, "")} for n in STUDIES])
    else:
        click.echo(_study_lines())


def _summary_rows(reports) -> list[dict]:
    from ..studies.report import tally

    rows = []
    for rep in reports:
        a, d, n = tally([{"agrees": c.agrees} for c in rep.comparisons])
        rows.append(
            {
                "study": rep.name,
                "agree": a,
                "differ": d,
                "not_comparable": n,
                "wall_s": round(rep.wall_s, 3),
                "quick": rep.quick,
                "comparisons": [
                    {"quantity": c.quantity, "paper": c.paper, "parcomm": c.parcomm, "agrees": c.agrees, "rule": c.rule}
                    for c in rep.comparisons
                ],
                "headline": rep.headline,
            }
        )
    return rows


def _print_results(reports, out: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    from ..studies.report import user_text

    con = Console(soft_wrap=False)  # stdout: the results; cells wrap, nothing is cut
    verdict = {True: "[green]agrees[/]", False: "[red]differs[/]", None: "not comparable"}
    for rep in reports:
        table = Table(
            title=f"[bold]{rep.name}[/]: {user_text(rep.title)} ({rep.wall_s:.1f} s)",
            title_justify="left",
            show_lines=False,
            expand=False,
        )
        table.add_column("quantity", overflow="fold")
        table.add_column("paper", overflow="fold")
        table.add_column("parcomm", overflow="fold")
        table.add_column("verdict", overflow="fold", no_wrap=True)
        table.add_column("rule", overflow="fold")
        for c in rep.comparisons:
            table.add_row(
                user_text(c.quantity),
                user_text(c.paper),
                user_text(c.parcomm),
                verdict[c.agrees],
                c.rule.get("text", ""),
            )
        con.print(table)
        for h in rep.headline:
            con.print(f"  [bold]{h['status']}[/]: {user_text(h['text'])}", highlight=False, soft_wrap=True)
    rows = _summary_rows(reports)
    con.print(
        f"agree {sum(r['agree'] for r in rows)}, differ {sum(r['differ'] for r in rows)}, "
        f"not comparable {sum(r['not_comparable'] for r in rows)}; report: {out / 'index.html'}"
    )


@click.command(cls=_ReproCommand)
@click.argument("studies", nargs=-1, metavar="[STUDY]...")
@click.option("--quick", is_flag=True, help="smaller sweeps that finish in minutes (CI and the demo)")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("results"),
    show_default=True,
    help="directory for tables (CSV/JSON), figures (PNG) and index.html",
)
@click.option("--seed", type=SEED, default=1, show_default=True, help="seed of every simulation's random streams")
@click.option(
    "--workers",
    "-j",
    type=IntIn(1, 4096),
    default=None,
    help="processes that run simulations [default: one per core; 1 runs everything in this process]",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "mpi"]),
    default="local",
    show_default=True,
    help="local: a process pool on this machine; mpi: mpi4py.futures (run under "
    "`mpiexec -n N python -m mpi4py.futures -m parcomm repro --executor mpi`)",
)
@click.option("--list", "list_only", is_flag=True, help="list the studies, one line each, and exit")
@click.option("--json", "as_json", is_flag=True, help="print the verdicts per study as JSON on stdout")
def repro(
    studies: tuple[str, ...],
    quick: bool,
    out: Path,
    seed: int,
    workers: int | None,
    executor: str,
    list_only: bool,
    as_json: bool,
) -> None:
    """Reproduce the papers' tables and figures: run STUDY... (default: every study) and write
    their tables, figures and the report OUT/index.html.

    Each study compares the paper's values with parcomm's, quantity by quantity (agrees,
    differs, not comparable); the report gathers them on one page. Independent simulations run
    in parallel (--workers, --executor); the numbers are the same whatever runs them.
    Progress goes to stderr, results to stdout.
    """
    if list_only:
        _print_list(as_json)
        return
    names = _study_names(studies)
    check_out_dir(out)  # a bad --out is the user's mistake: say so before minutes of work
    pool = _executor(executor, workers)
    reports = _run_with_progress(names, out, quick, seed, pool, executor)
    if as_json:
        emit_json(
            {
                "out": str(out),
                "report": str(out / "index.html"),
                "quick": quick,
                "seed": seed,
                "studies": _summary_rows(reports),
            }
        )
    else:
        _print_results(reports, out)


def _study_names(studies: tuple[str, ...]) -> list[str]:
    """The studies to run (default: all), refusing unknown names before any work."""
    from ..studies import STUDIES

    names = list(studies) or list(STUDIES)
    unknown = [n for n in names if n not in STUDIES]
    if unknown:
        raise UserError(f"unknown study {', '.join(unknown)}; known: {', '.join(STUDIES)} (see parcomm repro --list)")
    return names


def _executor(executor: str, workers: int | None) -> Any:
    """The pool that runs the simulations; a bad --executor/--workers is the user's error."""
    from ..studies.executor import make_executor

    try:
        return make_executor(executor, workers)
    except ValueError as e:
        raise UserError(str(e)) from None


class _StudyProgress:
    """Progress on stderr of studies running at once: one overall bar (with the latest
    message), one bar per running study, and a line per finished study with its verdicts.
    The callbacks come from worker threads, hence the lock."""

    def __init__(self, bar: Any, total: int):
        self.bar = bar
        self.overall = bar.add_task("studies", total=total, what="")
        self.tasks: dict[str, Any] = {}
        self.lock = threading.Lock()

    def step(self, study: str, done: int, total: int) -> None:
        with self.lock:
            if study not in self.tasks:
                self.tasks[study] = self.bar.add_task(f"  {study}", total=None, what="")
            self.bar.update(self.tasks[study], completed=done, total=total or None)

    def progress(self, msg: str) -> None:
        self.bar.update(self.overall, what=msg[:70])

    def finished(self, rep) -> None:
        from ..studies.report import tally

        with self.lock:
            if rep.name in self.tasks:
                self.bar.remove_task(self.tasks.pop(rep.name))
            self.bar.advance(self.overall)
        a, d, n = tally([{"agrees": c.agrees} for c in rep.comparisons])
        self.bar.console.print(
            f"{rep.name}: done in {rep.wall_s:.1f} s ({a} agree, {d} differ, {n} not comparable)",
            highlight=False,
            soft_wrap=True,
        )


def _run_with_progress(names: list[str], out: Path, quick: bool, seed: int, pool: Any, executor: str) -> list:
    """Run the studies on ``pool`` with progress on stderr; a bad value is the user's error,
    a dead worker or a failed write is a failed run."""
    from concurrent.futures import BrokenExecutor

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..studies import run_studies

    err = Console(stderr=True)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[what]}", style="dim"),
    )
    try:
        with pool, Progress(*columns, console=err, transient=not err.is_terminal) as bar:
            p = _StudyProgress(bar, len(names))
            return run_studies(
                names, out, quick, seed, progress=p.progress, executor=pool, step=p.step, done=p.finished
            )
    except ValueError as e:
        raise UserError(str(e)) from None
    except BrokenExecutor as e:  # a worker died (killed, out of memory): the run failed
        raise RunFailed(f"a worker process of --executor {executor} died: {e}") from None
    except OSError as e:  # e.g. the disk filled up or --out vanished mid-run: the run failed, not the call
        raise RunFailed(f"writing the results in {out}: {_os_message(e)}") from None
