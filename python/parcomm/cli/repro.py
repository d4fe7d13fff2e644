"""``parcomm repro``: reproduce the seed papers' tables and figures."""

from __future__ import annotations

from pathlib import Path

import click

from .common import UserError


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
    try:
        with con.status("running studies") as status:
            reports = run_studies(names, out, quick, seed, progress=lambda m: status.update(m))
    except ValueError as e:
        raise UserError(str(e)) from None
    for rep in reports:
        con.print(f"[bold]{rep.name}[/]: {rep.title} ({rep.wall_s:.1f} s)")
        for c in rep.comparisons:
            mark = {True: "[green]agrees[/]", False: "[red]differs[/]", None: "—"}[c.agrees]
            con.print(f"  {c.quantity}: paper {c.paper} | parcomm {c.parcomm} | {mark}")
    con.print(f"report: {out / 'index.html'}")
