"""``parcomm repro``: reproduce the seed papers' tables and figures."""

from __future__ import annotations

import errno
from pathlib import Path

import click

from .common import RunFailed, UserError


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
        raise UserError(f"--out {out}: cannot write a file in this directory: {_os_message(e, with_file=False)}") from None


@click.command()
@click.argument("studies", nargs=-1)
@click.option("--quick", is_flag=True, help="smaller sweeps that finish in minutes (CI and the demo)")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("results"), show_default=True,
              help="directory for tables (CSV/JSON), figures (PNG) and index.html")
@click.option("--seed", type=int, default=1, show_default=True)
def repro(studies: tuple[str, ...], quick: bool, out: Path, seed: int) -> None:
    """Run STUDIES (default: every study) and write their tables, figures and report.

    Each study compares the paper's figures with parcomm's in a
    "paper vs parcomm" table; results/index.html gathers them.
    """
    from rich.console import Console

    from ..studies import STUDIES, run_studies

    con = Console(stderr=True)
    names = list(studies) or list(STUDIES)
    unknown = [n for n in names if n not in STUDIES]
    if unknown:
        raise UserError(f"unknown study {', '.join(unknown)}; known: {', '.join(sorted(STUDIES))}")
    check_out_dir(out)  # a bad --out is the user's mistake: say so before minutes of work
    try:
        with con.status("running studies") as status:
            reports = run_studies(names, out, quick, seed, progress=lambda m: status.update(m))
    except ValueError as e:
        raise UserError(str(e)) from None
    except OSError as e:  # e.g. the disk filled up or --out vanished mid-run: the run failed, not the call
        raise RunFailed(f"writing the results in {out}: {_os_message(e)}") from None
    for rep in reports:
        con.print(f"[bold]{rep.name}[/]: {rep.title} ({rep.wall_s:.1f} s)")
        for c in rep.comparisons:
            mark = {True: "[green]agrees[/]", False: "[red]differs[/]", None: "—"}[c.agrees]
            con.print(f"  {c.quantity}: paper {c.paper} | parcomm {c.parcomm} | {mark}")
    con.print(f"report: {out / 'index.html'}")
