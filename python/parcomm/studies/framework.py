"""Running studies and writing their results: tables, figures, an HTML report."""

from __future__ import annotations

import csv
import html
import importlib
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

# Study name -> module. Later issues add one line each.
STUDIES: dict[str, str] = {
    "rto": "parcomm.studies.rto",
    "shimokuni": "parcomm.studies.shimokuni",
    "nomura": "parcomm.studies.nomura",
    "hironaka": "parcomm.studies.hironaka",
    "oguchi": "parcomm.studies.oguchi",
    "chiba": "parcomm.studies.chiba",
}


@dataclass
class Comparison:
    """One line of the "paper vs parcomm" table."""

    quantity: str
    paper: str
    parcomm: str
    agrees: bool | None = None  # None: not comparable one to one
    note: str = ""


@dataclass
class StudyReport:
    name: str
    title: str
    source: str
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    figures: list[str] = field(default_factory=list)
    comparisons: list[Comparison] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    wall_s: float = 0.0


@dataclass
class StudyContext:
    out_dir: Path
    quick: bool = False
    seed: int = 1
    progress: Callable[[str], None] = lambda msg: None

    def figure_path(self, name: str) -> Path:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        return self.out_dir / f"{name}.png"

    @staticmethod
    def pyplot():
        """matplotlib.pyplot on the file-only Agg backend (no display needed)."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        return plt

    def save_figure(self, fig, name: str) -> str:
        """Add legend and grid, write ``name.png`` and close the figure."""
        for ax in fig.axes:
            if ax.get_legend_handles_labels()[0]:
                ax.legend()
            ax.grid(alpha=0.3)
        path = self.figure_path(name)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        self.pyplot().close(fig)
        return str(path)


def _write_table(path: Path, rows: list[dict[str, Any]]) -> None:
    cols: list[str] = []
    for row in rows:
        cols += [k for k in row if k not in cols]
    with path.with_suffix(".csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    path.with_suffix(".json").write_text(json.dumps(rows, indent=1, default=str))


def _html_section(rep: StudyReport, out_dir: Path) -> str:
    e = html.escape
    parts = [f"<section id='{e(rep.name)}'><h2>{e(rep.title)}</h2><p><i>{e(rep.source)}</i></p>"]
    if rep.comparisons:
        parts.append("<table><tr><th>quantity</th><th>paper</th><th>parcomm</th><th>agrees</th><th>note</th></tr>")
        for c in rep.comparisons:
            mark = {True: "yes", False: "no", None: "—"}[c.agrees]
            parts.append(
                f"<tr><td>{e(c.quantity)}</td><td>{e(c.paper)}</td><td>{e(c.parcomm)}</td><td>{mark}</td><td>{e(c.note)}</td></tr>"
            )
        parts.append("</table>")
    for fig in rep.figures:
        rel = Path(fig).relative_to(out_dir.parent) if Path(fig).is_relative_to(out_dir.parent) else Path(fig)
        parts.append(f"<figure><img src='{e(str(rel))}' width='640'><figcaption>{e(Path(fig).stem)}</figcaption></figure>")
    for n in rep.notes:
        parts.append(f"<p>{e(n)}</p>")
    parts.append(f"<p><small>{rep.wall_s:.1f} s wall time; tables in {e(rep.name)}/*.csv</small></p></section>")
    return "\n".join(parts)


def run_studies(names: list[str], out: Path, quick: bool, seed: int = 1, progress: Callable[[str], None] = lambda m: None) -> list[StudyReport]:
    unknown = [n for n in names if n not in STUDIES]
    if unknown:
        raise ValueError(f"unknown study {', '.join(unknown)}; known: {', '.join(sorted(STUDIES))}")
    out.mkdir(parents=True, exist_ok=True)
    reports = []
    for name in names:
        mod = importlib.import_module(STUDIES[name])
        ctx = StudyContext(out_dir=out / name, quick=quick, seed=seed, progress=progress)
        ctx.out_dir.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        rep: StudyReport = mod.run(ctx)
        rep.wall_s = time.perf_counter() - t0
        for tname, rows in rep.tables.items():
            _write_table(ctx.out_dir / tname, rows)
        (ctx.out_dir / "report.json").write_text(json.dumps(asdict(rep), indent=1, default=str))
        (ctx.out_dir / "section.html").write_text(_html_section(rep, ctx.out_dir))
        reports.append(rep)
    # The index gathers every section written so far, so studies run one at a time add up.
    sections = [p.read_text() for p in sorted(out.glob("*/section.html"))]
    style = "body{font-family:sans-serif;max-width:60em;margin:auto} table{border-collapse:collapse} td,th{border:1px solid #999;padding:2px 6px}"
    (out / "index.html").write_text(
        f"<!doctype html><html><head><meta charset='utf-8'><title>parcomm studies</title><style>{style}</style></head>"
        f"<body><h1>parcomm: paper vs parcomm</h1>{''.join(sections)}</body></html>"
    )
    return reports
