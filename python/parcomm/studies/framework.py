"""Running studies and writing their results: tables, figures, an HTML report."""

from __future__ import annotations

import csv
import importlib
import time
from concurrent.futures import Executor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from .. import strictjson

# Study name -> module. Later issues add one line each.
STUDIES: dict[str, str] = {
    "rto": "parcomm.studies.rto",
    "shimokuni": "parcomm.studies.shimokuni",
    "nomura": "parcomm.studies.nomura",
    "hironaka": "parcomm.studies.hironaka",
    "oguchi": "parcomm.studies.oguchi",
    "chiba": "parcomm.studies.chiba",
}

#: One line per study, for ``parcomm repro --list`` and ``--help``.
SUMMARIES: dict[str, str] = {
    "rto": "incast and Alltoall A vs B under a 200 ms vs 1 ms RTO minimum (Oguchi et al.; Nomura & Ishikawa)",
    "shimokuni": "reliable multicast repair routers: delay and buffers, model beside simulator (Shimokuni et al.)",
    "nomura": "PlogP, PlogP-BR and PlogP-BR+ against simulated (and, in full runs, emulated MPICH) Alltoall A and B: error and selection penalty (Nomura & Ishikawa, Fig. 8)",
    "hironaka": "PVM heat equation on 16 shared 10BASE-T segments and a router, task placement (Hironaka)",
    "oguchi": "HPA mining on a 100-PC ATM cluster: cell loss, RTO MIN/MAX and random RTOs (Oguchi et al.)",
    "chiba": "broadcast from cloud storage: flat tree, non-steal, steal, up to 1,024 nodes (Chiba et al.)",
}


@dataclass
class Comparison:
    """One line of the "paper vs parcomm" table.

    ``agrees`` is given as a :class:`.rules.Verdict` (a function of :mod:`.rules` computes it),
    so that the rule that decided travels with the row: after construction ``agrees`` is the
    verdict (None: not comparable one to one) and ``rule`` the rule as data.
    """

    quantity: str
    paper: str
    parcomm: str
    agrees: Any = None
    note: str = ""
    #: Where the paper and parcomm disagree, why: the mechanism and the evidence for it, or
    #: plainly that the cause is not known (the report shows it under "Why it differs").
    why: str = ""
    rule: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from .rules import Verdict, rule_problems

        if isinstance(self.agrees, Verdict):
            self.rule = self.agrees.rule.as_dict()
            self.agrees = self.agrees.agrees
        problems = rule_problems(self.rule)
        if problems:  # a verdict without its rule is a study's bug, found at once
            raise ValueError(f"comparison {self.quantity!r}: {'; '.join(problems)} (give agrees= a rules.Verdict)")


#: The four ways parcomm answers a question (README "What it answers, four ways").
WAYS = ("model", "simulate", "emulate", "run")
#: Markers for a way that has no value in a row of :attr:`StudyReport.ways`.
NOT_IN_QUICK = "not run in quick mode"
NEEDS_ROOT = "needs root"
NOT_IN_STUDY = "not in this study"


def way_row(quantity: str, note: str = "", **cells: str | None) -> dict[str, Any]:
    """One row of a study's "four ways" table: ``quantity`` and a cell per way of :data:`WAYS`.

    A cell is the value that way gave (text, with its unit), or a marker saying why there is
    none: pass ``skip(reason)`` (e.g. ``skip(NOT_IN_QUICK)``); a way left out is
    :data:`NOT_IN_STUDY`. ``skipped`` lists the ways whose cell is such a marker.
    """
    unknown = set(cells) - set(WAYS)
    if unknown:
        raise ValueError(f"unknown way(s) {sorted(unknown)}; the ways are {WAYS}")
    row: dict[str, Any] = {"quantity": quantity}
    skipped = []
    for w in WAYS:
        cell = cells.get(w)
        if cell is None:
            cell = skip(NOT_IN_STUDY)
        if isinstance(cell, _Skip):
            skipped.append(w)
        row[w] = str(cell)
    row["skipped"] = skipped
    row["note"] = note
    return row


class _Skip(str):
    """A cell of :func:`way_row` that says why a way gave no value."""


def skip(reason: str) -> str:
    return _Skip(reason)


def emulation_skip(quick: bool, why_not: str | None, ran: bool) -> str | None:
    """The marker for an emulated cell: None when the emulation ran (its values go in),
    else why not: quick mode, root or a tool missing, or it failed."""
    if ran:
        return None
    if quick:
        return skip(NOT_IN_QUICK)
    if why_not:
        return skip(NEEDS_ROOT if "root" in why_not else why_not)
    return skip("not run (see the notes)")


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
    #: Figure file name (``fig8_p64.png``) -> caption; filled by :meth:`StudyContext.save_figure`.
    captions: dict[str, str] = field(default_factory=dict)
    quick: bool = False
    #: The "four ways" table: rows of :func:`way_row` (model / simulate / emulate / run side by side).
    ways: list[dict[str, Any]] = field(default_factory=list)
    #: The paper's transcribed values this study uses (:func:`.paper_data.for_report`).
    paper_values: list[dict[str, Any]] = field(default_factory=list)
    #: The study's findings in a few sentences, each from :func:`finding` (computed from the
    #: comparisons, so they move with the numbers); the report puts them at the top.
    headline: list[dict[str, str]] = field(default_factory=list)


#: A finding's status, from its comparison's verdict.
STATUS = {True: "reproduced", False: "not reproduced", None: "not comparable"}


def finding(c: Comparison, claim: str, mechanism: str = "") -> dict[str, str]:
    """One sentence of a study's headline: ``claim`` (the paper's, in a few words), its status
    from ``c``'s verdict, parcomm's value and the mechanism. Where the row differs and it has a
    "why", that is the mechanism; otherwise ``mechanism`` (what makes the value come out so)."""
    how = (c.why or "The cause is not known.") if c.agrees is False else mechanism
    text = f"{claim}: paper {c.paper}, parcomm {c.parcomm}"
    if how:
        text += f". {how}"
    return {"status": STATUS[c.agrees], "text": text if text.endswith(".") else text + ".", "quantity": c.quantity}


def find(rep: StudyReport, start: str) -> Comparison | None:
    """The first comparison whose quantity starts with ``start``."""
    return next((c for c in rep.comparisons if c.quantity.startswith(start)), None)


@dataclass
class StudyContext:
    out_dir: Path
    quick: bool = False
    seed: int = 1
    progress: Callable[[str], None] = lambda msg: None
    #: Where :meth:`map` runs independent simulations (None: here, one after another).
    executor: Executor | None = None
    #: Called as ``step(done, total)`` while :meth:`map` collects results.
    step: Callable[[int, int], None] = lambda done, total: None
    captions: dict[str, str] = field(default_factory=dict)
    #: Set by :func:`run_studies` when studies run side by side on threads: pyplot is not
    #: thread-safe, so a study takes this lock at its first plot and keeps it until it ends.
    plot_lock: Any = None
    _plotting: bool = False
    #: Order of this study's runs on a shared pool (lower first; see :class:`_PriorityPool`).
    priority: int = 0

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any], what: str = "") -> list[Any]:
        """``[fn(x) for x in items]``, run on the context's executor; results in the order of ``items``.

        ``fn`` must be a module-level function and ``items`` picklable, because a process pool
        or MPI runs them elsewhere. Runs are deterministic, so the results do not depend on
        the executor (see :mod:`.executor`).
        """
        items = list(items)
        total = len(items)
        if what:
            self.progress(f"{what} ({total} runs)")
        self.step(0, total)
        if self.executor is None or total < 2:
            out = []
            for i, x in enumerate(items):
                out.append(fn(x))
                self.step(i + 1, total)
            return out
        if isinstance(self.executor, _PriorityPool):
            futures = [self.executor.submit_at(self.priority, fn, x) for x in items]
        else:
            futures = [self.executor.submit(fn, x) for x in items]
        out = []
        for i, fut in enumerate(futures):
            out.append(fut.result())
            self.step(i + 1, total)
        return out

    def figure_path(self, name: str) -> Path:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        return self.out_dir / f"{name}.png"

    def pyplot(self):
        """matplotlib.pyplot on the file-only Agg backend (no display needed), with fonts that
        also cover Japanese text (Noto Sans CJK or IPA Gothic where installed)."""
        if self.plot_lock is not None and not self._plotting:
            self.plot_lock.acquire()
            self._plotting = True
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib import font_manager

        have = {f.name for f in font_manager.fontManager.ttflist}
        cjk = [f for f in ("Noto Sans CJK JP", "IPAGothic", "IPAexGothic") if f in have]
        plt.rcParams["font.family"] = ["DejaVu Sans", *cjk]
        return plt

    def save_figure(self, fig, name: str, caption: str | None = None) -> str:
        """Add legend (where the study made none) and grid, write ``name.png`` and close the figure.

        ``caption`` is the text under the figure in the report; by default the figure's
        title and its panels' titles.
        """
        titles = []
        for ax in fig.axes:
            if ax.get_legend() is None and ax.get_legend_handles_labels()[0]:
                ax.legend()  # a legend the study placed itself stays as it is
            ax.grid(alpha=0.3)
            if ax.get_title():
                titles.append(ax.get_title())
        sup = fig._suptitle.get_text() if getattr(fig, "_suptitle", None) is not None else ""
        if caption is None:
            caption = sup + (": " if sup and titles else "") + "; ".join(titles) if (sup or titles) else name
        path = self.figure_path(name)
        self.captions[path.name] = " ".join(caption.split())
        fig.tight_layout()
        fig.savefig(path, dpi=150)
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
    path.with_suffix(".json").write_text(strictjson.dumps(rows))


def _html_section(rep: StudyReport, out_dir: Path) -> str:
    from .report import section_html

    return section_html(strictjson.strict(asdict(rep)), out_dir.parent)


#: Studies whose runs take longest go to a shared pool first, so that the long runs do not
#: queue behind many short ones (and the last minutes are not one long run on one worker).
HEAVIEST_FIRST = ["oguchi", "chiba", "nomura", "hironaka", "shimokuni", "rto"]


class _PriorityPool:
    """Feeds a pool at most ``slots`` calls at a time, lowest priority number first (FIFO within
    one priority), so studies running side by side share the workers in a chosen order. One
    feeder thread submits (never a pool's own callback thread)."""

    def __init__(self, executor: Executor, slots: int) -> None:
        import itertools
        import threading

        self._ex, self._slots, self._heap, self._busy, self._closed = executor, max(1, slots), [], 0, False
        self._seq, self._cv = itertools.count(), threading.Condition()
        self._feeder = threading.Thread(target=self._feed, name="study-pool-feeder", daemon=True)
        self._feeder.start()

    def submit_at(self, priority: int, fn: Callable[[Any], Any], arg: Any):
        import heapq
        from concurrent.futures import Future

        outer: Future = Future()
        with self._cv:
            heapq.heappush(self._heap, (priority, next(self._seq), fn, arg, outer))
            self._cv.notify()
        return outer

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify()
        self._feeder.join()

    def _feed(self) -> None:
        import heapq

        while True:
            with self._cv:
                while not self._closed and (self._busy >= self._slots or not self._heap):
                    self._cv.wait()
                if self._closed:
                    return
                _, _, fn, arg, outer = heapq.heappop(self._heap)
                self._busy += 1
            try:
                inner = self._ex.submit(fn, arg)
            except BaseException as exc:  # a broken pool: this call fails, the study reports it
                self._release()
                outer.set_exception(exc)
                continue
            inner.add_done_callback(lambda f, o=outer: self._done(f, o))

    def _release(self) -> None:
        with self._cv:
            self._busy -= 1
            self._cv.notify()

    def _done(self, inner, outer) -> None:
        self._release()
        exc = inner.exception()
        if exc is not None:
            outer.set_exception(exc)
        else:
            outer.set_result(inner.result())


def run_studies(
    names: list[str],
    out: Path,
    quick: bool,
    seed: int = 1,
    progress: Callable[[str], None] = lambda m: None,
    executor: Executor | None = None,
    step: Callable[[str, int, int], None] | None = None,
    info: dict[str, Any] | None = None,
    done: Callable[[StudyReport], None] | None = None,
    side_by_side: bool | None = None,
) -> list[StudyReport]:
    """Run the studies ``names`` and write their results in ``out``; ``out/index.html`` gathers
    every study found there.

    Independent simulations inside a study go to ``executor`` (None: run here, one after
    another); the numbers do not depend on it. With a pool (``side_by_side``, the default
    when there is an executor with several workers) the studies themselves run side by side
    on threads of this process and share the pool, so one study's serial stretches do not
    leave the workers idle. ``progress(message)``, ``step(study, done, total)`` and
    ``done(report)`` report progress; the reports come back in the order of ``names``.
    """
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from .executor import describe
    from .report import run_info, write_index

    unknown = [n for n in names if n not in STUDIES]
    if unknown:
        raise ValueError(f"unknown study {', '.join(unknown)}; known: {', '.join(sorted(STUDIES))}")
    out.mkdir(parents=True, exist_ok=True)
    if side_by_side is None:
        side_by_side = executor is not None and (getattr(executor, "max_workers", None) or 2) > 1 and len(names) > 1
    plot_lock = threading.RLock() if side_by_side else None
    shared = _PriorityPool(executor, getattr(executor, "max_workers", None) or 2) if side_by_side else executor
    rank = {n: i for i, n in enumerate(HEAVIEST_FIRST)}
    index_lock = threading.Lock()
    info = info or run_info(describe(executor))

    def one(name: str) -> StudyReport:
        mod = importlib.import_module(STUDIES[name])
        ctx = StudyContext(
            out_dir=out / name,
            quick=quick,
            seed=seed,
            progress=progress,
            executor=shared,
            step=(lambda d, t, _n=name: step(_n, d, t)) if step else (lambda d, t: None),
            plot_lock=plot_lock,
            priority=rank.get(name, len(rank)),
        )
        ctx.out_dir.mkdir(parents=True, exist_ok=True)
        rep = _run_study(mod, ctx)
        _write_study(rep, ctx.out_dir)
        # The index gathers every study on disk, so studies run one at a time add up.
        with index_lock:
            write_index(out, info, order=list(STUDIES))
        if done:
            done(rep)
        return rep

    if not side_by_side:
        return [one(name) for name in names]
    try:
        with ThreadPoolExecutor(max_workers=len(names), thread_name_prefix="study") as threads:
            futures = [threads.submit(one, name) for name in names]
            return [f.result() for f in futures]
    finally:
        shared.close()


def _run_study(mod: Any, ctx: StudyContext) -> StudyReport:
    """``mod.run(ctx)``, timed, with the captions of its figures; the plot lock released after it."""
    t0 = time.perf_counter()
    try:
        rep: StudyReport = mod.run(ctx)
    finally:
        if ctx._plotting:
            ctx._plotting = False
            ctx.plot_lock.release()
    rep.wall_s = time.perf_counter() - t0
    rep.quick = ctx.quick
    no_run = getattr(mod, "NO_RUN", "")
    for row in rep.ways:  # the "run" cells left empty say the study's reason, not a generic marker
        if no_run and row.get("run") == NOT_IN_STUDY:
            row["run"] = no_run
    written = {f"{stem}.png": text for stem, text in getattr(mod, "CAPTIONS", {}).items()}
    rep.captions = {**ctx.captions, **{k: v for k, v in written.items() if k in ctx.captions}, **rep.captions}
    return rep


def _write_study(rep: StudyReport, out_dir: Path) -> None:
    """A study's tables (CSV and JSON), its report.json and its section of the HTML report."""
    for tname, rows in rep.tables.items():
        _write_table(out_dir / tname, rows)
    if rep.ways:
        _write_table(out_dir / "four_ways", [{k: v for k, v in r.items() if k != "skipped"} for r in rep.ways])
    if rep.paper_values:
        _write_table(out_dir / "paper_values", rep.paper_values)
    (out_dir / "report.json").write_text(strictjson.dumps(asdict(rep)))
    (out_dir / "section.html").write_text(_html_section(rep, out_dir))
