"""The HTML report: ``results/index.html``, a dashboard of every study on disk.

The front page says when, with what and where the results were made (date, parcomm version
and commit, machine, executor), warns when they come from ``--quick``, and tallies each
study's "paper vs parcomm" verdicts: agree, differ, not comparable. Then a table of contents
and one section per study: its verdicts (each disagreement with its explanation), its "four
ways" table (model / simulate / emulate / run side by side, with a marker where a way was not
run), its figures at full width with captions (the paper's values drawn hollow beside
parcomm's), the paper's transcribed values with where each comes from, and its notes.

The index is built from each study's ``report.json``, so studies run one at a time add up.
User-facing text names the papers by first author, never by their place in the project.
"""

from __future__ import annotations

import html
import json
import platform
import re
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

#: The five papers, by their place in the project's list and by first author.
PAPERS = {
    "000": (
        "oguchi",
        "Oguchi et al.",
        "Oguchi, Shintani, Tamura, Kitsuregawa: TCP retransmission on an "
        "ATM-connected PC cluster and parallel data mining",
    ),
    "001": (
        "nomura",
        "Nomura & Ishikawa",
        "Nomura, Ishikawa: a communication model considering retransmission control (PlogP-BR)",
    ),
    "002": ("hironaka", "Hironaka", "Hironaka: PVM performance on a large workstation cluster"),
    "003": (
        "shimokuni",
        "Shimokuni et al.",
        "Shimokuni, Koga, Jinzaki: reliable multicast for wide-area parallel and distributed systems",
    ),
    "004": (
        "chiba",
        "Chiba et al.",
        "Chiba, Kielmann, den Burger, Matsuoka: dynamic optimization for large data broadcast on clouds",
    ),
}

_SEED_PAREN = re.compile(r"\bseed[ -](\d{3}) \(([^()]*)\)")
_SEEDS = re.compile(r"\bseeds?[ -](\d{3})((?:\s*(?:,|/|and|&)\s*\d{3})*)")
_ISSUE = re.compile(r"\bissues? \d+(?:,? item \d+)?(?:'s)?:?", re.IGNORECASE)


def user_text(text: str) -> str:
    """``text`` as a reader of the report should see it: papers by first author instead of
    "seed 000", no issue numbers, no pointers into the source code's docstrings."""

    def author(num: str) -> str:
        return PAPERS[num][1] if num in PAPERS else f"paper {num}"

    text = _SEED_PAREN.sub(lambda m: author(m.group(1)), text)

    def many(m: re.Match) -> str:
        nums = [m.group(1), *re.findall(r"\d{3}", m.group(2) or "")]
        return " and ".join(author(n) for n in nums)

    text = _SEEDS.sub(many, text)
    text = _ISSUE.sub("", text)
    text = re.sub(r"\bissue (target|targets)\b", r"\1", text)
    text = re.sub(r"see the module docstring", "see the study's documentation", text)
    text = re.sub(r"\bthe module docstring\b", "the study's documentation", text)
    text = re.sub(r"\(\s+", "(", text)
    text = re.sub(r"\s*\(\)", "", text)
    return re.sub(r"[ \t]{2,}", " ", text).strip()


def run_info(executor: str = "") -> dict[str, Any]:
    """Date, version, commit and machine, for the front page."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        ver = version("parcomm")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        ver = "unknown"
    commit = ""
    try:
        here = Path(__file__).resolve().parent
        commit = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
        if commit and dirty:
            commit += " (with uncommitted changes)"
    except (OSError, subprocess.SubprocessError):
        pass
    import os

    uname = platform.uname()
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "version": ver,
        "commit": commit or "unknown (not a git checkout)",
        "machine": f"{uname.node}: {uname.system} {uname.release} {uname.machine}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "executor": executor,
    }


def tally(comparisons: list[dict]) -> tuple[int, int, int]:
    """(agree, differ, not comparable)."""
    agree = sum(1 for c in comparisons if c.get("agrees") is True)
    differ = sum(1 for c in comparisons if c.get("agrees") is False)
    return agree, differ, len(comparisons) - agree - differ


def tally_by_rule(comparisons: list[dict]) -> dict[str, tuple[int, int, int]]:
    """Kind of rule (tolerance, direction, ...) -> (agree, differ, not comparable)."""
    from .rules import KINDS

    kinds = list(KINDS) + sorted({(c.get("rule") or {}).get("kind", "no rule") for c in comparisons} - set(KINDS))
    out = {}
    for k in kinds:
        mine = [c for c in comparisons if (c.get("rule") or {}).get("kind", "no rule") == k]
        if mine:
            out[k] = tally(mine)
    return out


def why_text(c: dict) -> str:
    """The "why it differs" of a row: the study's mechanism and evidence, or plainly that the
    cause is not known (never the row again, never its note)."""
    return c.get("why") or "The cause is not known: the study has not isolated it."


_CSS = """
:root{--ok:#1a7f37;--bad:#c0362c;--na:#6e7781;--bg:#f6f8fa;--line:#d0d7de}
*{box-sizing:border-box}
body{font-family:"Noto Sans","Noto Sans CJK JP","IPAGothic","IPAPGothic","DejaVu Sans",sans-serif;
 margin:0;color:#1f2328;line-height:1.45}
header{background:#24292f;color:#fff;padding:18px 32px}
header h1{margin:0 0 6px 0;font-size:26px}
header .meta{font-size:14px;opacity:.9;display:flex;flex-wrap:wrap;gap:2px 22px}
header .meta span{white-space:nowrap}
main{padding:0 32px 40px 32px;max-width:1600px;margin:auto}
.banner{background:#fff8c5;border:1px solid #d4a72c;padding:10px 16px;margin:16px 0;border-radius:6px}
table{border-collapse:collapse;margin:10px 0;width:100%}
td,th{border:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top;font-size:14px}
th{background:var(--bg)}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.tally td.num{font-size:16px;font-weight:600}
.ok{color:var(--ok)} .bad{color:var(--bad)} .na{color:var(--na)}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;color:#fff;font-size:12px;font-weight:600;
 white-space:nowrap}
.badge.ok{background:var(--ok);color:#fff} .badge.bad{background:var(--bad);color:#fff}
.badge.na{background:var(--na);color:#fff}
.bar{display:flex;height:10px;border-radius:5px;overflow:hidden;min-width:160px;background:#eee}
.bar div{height:100%}
nav.toc{background:var(--bg);border:1px solid var(--line);border-radius:6px;padding:8px 20px;margin:16px 0}
nav.toc ol{margin:4px 0} nav.toc li{margin:2px 0}
section.study{border-top:3px solid #24292f;margin-top:36px;padding-top:6px}
section.study h2{margin:6px 0}
.source{color:#57606a;font-style:italic}
.figs{display:grid;grid-template-columns:repeat(auto-fit,minmax(560px,1fr));gap:18px;margin:12px 0}
td.skip{color:var(--na);font-style:italic;background:#fafbfc}
table.ways td:first-child{width:26%}
details.paper{margin:8px 0} details.paper summary{cursor:pointer;color:#0969da}
figure{margin:0;min-width:0}
figure.wide{grid-column:1/-1}
figure img{width:100%;height:auto;border:1px solid var(--line);display:block;background:#fff}
figcaption{font-size:14px;color:#333;margin-top:4px}
.why{background:#fff5f5;border-left:4px solid var(--bad);padding:6px 12px;margin:8px 0}
.rule{display:block;color:#57606a;font-size:12px;margin-top:2px}
.headline{list-style:none;padding:0;margin:10px 0}
.headline li{margin:4px 0;padding:6px 10px;border-left:4px solid var(--na);background:var(--bg)}
.headline li.ok{border-color:var(--ok)} .headline li.bad{border-color:var(--bad)}
.headline li b{margin-right:6px}
.filter{margin:8px 0;font-size:14px}
body:has(#differs-only:checked) tr.v-ok, body:has(#differs-only:checked) tr.v-na{display:none}
.notes li{margin:4px 0}
small.foot{color:#57606a}
a{color:#0969da}
"""


def _bar(a: int, d: int, n: int) -> str:
    total = max(1, a + d + n)
    seg = "".join(
        f"<div class='{cls}' style='width:{100 * k / total:.1f}%;background:var(--{var})'></div>"
        for k, cls, var in ((a, "ok", "ok"), (d, "bad", "bad"), (n, "na", "na"))
        if k
    )
    return f"<div class='bar' title='{a} agree, {d} differ, {n} not comparable'>{seg}</div>"


def _verdict(agrees: bool | None) -> str:
    return {
        True: "<span class='badge ok'>agrees</span>",
        False: "<span class='badge bad'>differs</span>",
        None: "<span class='badge na'>not comparable</span>",
    }[agrees]


def _png_size(path: Path) -> tuple[int, int] | None:
    """(width, height) from a PNG's header, or None."""
    try:
        with path.open("rb") as f:
            head = f.read(24)
    except OSError:
        return None
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def section_html(rep: dict[str, Any], base: Path | None = None) -> str:
    """One study's section of the report, from its ``report.json``; ``base`` is the results
    directory (figures are in ``base/<study>/``)."""
    e = lambda s: html.escape(user_text(str(s)))  # noqa: E731
    name = html.escape(rep["name"])
    comps = rep.get("comparisons", [])
    a, d, n = tally(comps)
    parts = [
        f"<section class='study' id='{name}'><h2>{e(rep['title'])}</h2>",
        f"<p class='source'>Follows {e(rep['source'])}</p>",
        _headline_html(name, rep.get("headline", []), e),
        f"<p>{_verdict(True)} {a} &nbsp; {_verdict(False)} {d} &nbsp; {_verdict(None)} {n}"
        f"{' &nbsp; <b>quick mode</b>' if rep.get('quick') else ''}</p>",
    ]
    if comps:
        with_notes = any(c.get("note") for c in comps)
        with_full = any("full" in c for c in comps)
        parts.append(
            f"<h3 id='{name}-verdicts'>Paper vs parcomm</h3><table><tr><th>quantity</th><th>paper</th>"
            f"<th>parcomm</th><th>verdict</th>{'<th>full run</th>' if with_full else ''}"
            f"{'<th>note</th>' if with_notes else ''}</tr>"
        )
        figs = {Path(f).stem: i for i, f in enumerate(rep.get("figures", []), 1)}
        for i, c in enumerate(comps, 1):
            note = f"<td>{e(c.get('note', ''))}</td>" if with_notes else ""
            cls = {True: "v-ok", False: "v-bad", None: "v-na"}[c.get("agrees")]
            why_link = f" <a href='#{name}-why{i}'>why</a>" if c.get("agrees") is False else ""
            links = _row_links(name, c["quantity"], figs, rep.get("tables", {}))
            parts.append(
                f"<tr class='{cls}' id='{name}-row{i}'><td>{e(c['quantity'])}{links}</td><td>{e(c['paper'])}</td>"
                f"<td>{e(c['parcomm'])}</td><td>{_verdict(c.get('agrees'))}{why_link}{_rule_html(c, e)}</td>"
                f"{_full_html(c) if with_full else ''}{note}</tr>"
            )
        parts.append("</table>")
        differs = [(i, c) for i, c in enumerate(comps, 1) if c.get("agrees") is False]
        if differs:
            parts.append(f"<h3 id='{name}-why'>Why it differs</h3>")
            for i, c in differs:
                parts.append(
                    f"<div class='why' id='{name}-why{i}'><a href='#{name}-row{i}'><b>{e(c['quantity'])}</b></a>"
                    f"<br>{e(why_text(c))}</div>"
                )
    ways = rep.get("ways", [])
    if ways:
        parts.append(_ways_html(name, ways, e))
    figs = rep.get("figures", [])
    if figs:
        parts.append(f"<h3 id='{name}-figures'>Figures</h3><div class='figs'>")
        captions = rep.get("captions", {})
        for i, fig in enumerate(figs, 1):
            fname = Path(fig).name
            cap = captions.get(fname) or fname
            size = _png_size(base / rep["name"] / fname if base else Path(fig))
            wide = " class='wide'" if size and size[0] > 1.7 * size[1] else ""
            parts.append(
                f"<figure id='{name}-fig{i}'{wide}><a href='{name}/{html.escape(fname)}'>"
                f"<img src='{name}/{html.escape(fname)}' alt='{e(cap)}' loading='lazy'></a>"
                f"<figcaption><b>Figure {i}.</b> {e(cap)}</figcaption></figure>"
            )
        parts.append("</div>")
    pv = rep.get("paper_values", [])
    if pv:
        parts.append(_paper_values_html(name, pv, e))
    notes = rep.get("notes", [])
    if notes:
        parts.append(f"<h3 id='{name}-notes'>Method and notes</h3><ul class='notes'>")
        parts += [f"<li>{e(x)}</li>" for x in notes]
        parts.append("</ul>")
    tables = rep.get("tables", {})
    files = [*tables, *(["four_ways"] if ways else []), *(["paper_values"] if pv else [])]
    links = ", ".join(f"<a href='{name}/{html.escape(t)}.csv'>{html.escape(t)}</a>" for t in files)
    parts.append(
        f"<p><small class='foot'>{rep.get('wall_s', 0):.1f} s wall time. Tables (CSV, JSON beside them): "
        f"{links or 'none'}.</small></p></section>"
    )
    return "\n".join(parts)


_FIG_NUMBER = re.compile(r"\bFigs?\. (\d+)(?:\s*(?:-|and|,)\s*(\d+))?")


def _numbers(stem: str) -> set[int]:
    """The paper's figure numbers a file is named after: fig2_9_10 -> {2, 9, 10}."""
    m = re.match(r"fig(\d+(?:_\d+)*)(?:_|$)", stem)
    return {int(x) for x in m.group(1).split("_")} if m else set()


def _row_links(name: str, quantity: str, figs: dict[str, int], tables: dict[str, Any]) -> str:
    """Links from a verdict row to the figure and the CSV of the paper's figure it names."""
    out = []
    m = _FIG_NUMBER.search(quantity)
    if m:
        lo = int(m.group(1))
        wanted = set(range(lo, int(m.group(2) or lo) + 1))
        out += [f"<a href='#{name}-fig{i}'>figure {i}</a>" for stem, i in figs.items() if wanted & _numbers(stem)]
        out += [f"<a href='{name}/{html.escape(t)}.csv'>CSV</a>" for t in tables if wanted & _numbers(t)]
    m = re.match(r"(study|Table) (\d+(?:\.\d+)?)", quantity)  # a paper's numbered study or table
    if m and not out:
        stem = f"{m.group(1).lower()}{m.group(2).replace('.', '_')}"
        out += [f"<a href='{name}/{html.escape(t)}.csv'>CSV</a>" for t in tables if t == stem]
    return f"<br><small>{' · '.join(out)}</small>" if out else ""


def _full_html(c: dict[str, Any]) -> str:
    full = c.get("full", "no such row")
    return f"<td>{_verdict(full) if full in (True, False, None) else html.escape(str(full))}</td>"


def _rule_html(c: dict[str, Any], e) -> str:
    """The rule beside a verdict badge (its basis as the tooltip)."""
    rule = c.get("rule") or {}
    if not rule:
        return "<span class='rule bad'>no rule stated</span>"
    basis = f" title='{e(rule.get('basis', ''))}'" if rule.get("basis") else ""
    return f"<span class='rule'{basis}>{e(rule.get('kind', ''))}: {e(rule.get('text', ''))}</span>"


_STATUS_CLASS = {"reproduced": "ok", "not reproduced": "bad", "not comparable": "na"}


def _headline_html(name: str, headline: list[dict[str, str]], e) -> str:
    if not headline:
        return ""
    items = "".join(
        f"<li class='{_STATUS_CLASS.get(h.get('status', ''), 'na')}'><b>{e(h.get('status', ''))}</b>"
        f"{e(h.get('text', ''))}</li>"
        for h in headline
    )
    return f"<ul class='headline' id='{name}-headline'>{items}</ul>"


#: Column heads of the four-ways table.
_WAY_HEADS = {
    "model": "model (closed form)",
    "simulate": "simulate (packet-level)",
    "emulate": "emulate (real TCP, namespaces)",
    "run": "run (real processes)",
}


def _ways_html(name: str, ways: list[dict[str, Any]], e) -> str:
    """The four ways side by side: a column per way, a marker where a way was not run."""
    with_notes = any(r.get("note") for r in ways)
    head = "".join(f"<th>{_WAY_HEADS[w]}</th>" for w in _WAY_HEADS)
    rows = []
    for r in ways:
        skipped = set(r.get("skipped", []))
        cells = "".join(
            f"<td class='skip'>{e(r.get(w, ''))}</td>" if w in skipped else f"<td>{e(r.get(w, ''))}</td>"
            for w in _WAY_HEADS
        )
        note = f"<td>{e(r.get('note', ''))}</td>" if with_notes else ""
        rows.append(f"<tr><td>{e(r['quantity'])}</td>{cells}{note}</tr>")
    return (
        f"<h3 id='{name}-ways'>Four ways: model, simulate, emulate, run</h3>"
        "<p>The same quantities as each way gives them; a grey cell says why a way has no value here.</p>"
        f"<table class='ways'><tr><th>quantity</th>{head}{'<th>note</th>' if with_notes else ''}</tr>"
        f"{''.join(rows)}</table>"
    )


_HOW = {
    "exact": "exact (printed)",
    "text": "approximate, stated in the text",
    "derived": "derived from printed values",
    "digitized": "digitized from a curve",
    "none": "no readable values",
}


def _paper_values_html(name: str, pv: list[dict[str, Any]], e) -> str:
    """The paper's transcribed values (and the figures without any), folded."""
    rows = []
    for v in pv:
        how = _HOW.get(v.get("how", ""), v.get("how", ""))
        extra = "; ".join(x for x in (v.get("approx", ""), v.get("note", "")) if x)
        rows.append(
            f"<tr><td>{e(v.get('cite', ''))}</td><td>{e(v.get('quantity', ''))}</td><td class='num'>"
            f"{e(v.get('shown', ''))}</td><td>{e(how)}</td><td>{e(extra)}</td></tr>"
        )
    n = sum(1 for v in pv if v.get("how") != "none")
    return (
        f"<details class='paper' id='{name}-paper'><summary>The paper's values used here ({n} transcribed; "
        "where from, and how)</summary><table><tr><th>where</th><th>quantity</th><th>value</th><th>how</th>"
        f"<th>qualifier / note</th></tr>{''.join(rows)}</table></details>"
    )


def index_html(reports: list[dict[str, Any]], info: dict[str, Any], base: Path | None = None) -> str:
    """The whole report: front page, table of contents, then every study."""
    e = html.escape
    rows, toc = [], []
    tot = [0, 0, 0]
    for rep in reports:
        a, d, n = tally(rep.get("comparisons", []))
        tot = [tot[0] + a, tot[1] + d, tot[2] + n]
        name = e(rep["name"])
        rows.append(
            f"<tr><td><a href='#{name}'><b>{name}</b></a><br><small>{e(user_text(rep['title']))}</small></td>"
            f"<td class='num ok'>{a}</td><td class='num bad'>{d}</td><td class='num na'>{n}</td>"
            f"<td>{_bar(a, d, n)}</td><td class='num'>{rep.get('wall_s', 0):.0f} s"
            f"{' (quick)' if rep.get('quick') else ''}</td></tr>"
        )
        subs = [
            f"<a href='#{name}-verdicts'>paper vs parcomm</a>" if rep.get("comparisons") else "",
            f"<a href='#{name}-why'>why it differs</a>" if d else "",
            f"<a href='#{name}-ways'>four ways</a>" if rep.get("ways") else "",
            f"<a href='#{name}-figures'>figures</a>" if rep.get("figures") else "",
            f"<a href='#{name}-paper'>the paper's values</a>" if rep.get("paper_values") else "",
            f"<a href='#{name}-notes'>notes</a>" if rep.get("notes") else "",
        ]
        toc.append(
            f"<li><a href='#{name}'>{e(user_text(rep['title']))}</a> — "
            f"<small>{' · '.join(s for s in subs if s)}</small></li>"
        )
    rows.append(
        f"<tr><th>all studies</th><td class='num ok'>{tot[0]}</td><td class='num bad'>{tot[1]}</td>"
        f"<td class='num na'>{tot[2]}</td><td>{_bar(*tot)}</td><td></td></tr>"
    )
    quick = [r["name"] for r in reports if r.get("quick")]
    banner = ""
    if quick:
        banner = (
            "<div class='banner'><b>Quick mode.</b> "
            f"{'These studies' if len(quick) > 1 else 'This study'} ({e(', '.join(quick))}) ran with "
            "<code>--quick</code>: smaller sweeps, fewer seeds and sizes. Verdicts can differ from a full run "
            "(<code>parcomm repro</code> without <code>--quick</code>).</div>"
        )
    meta = "".join(
        f"<span><b>{k}</b> {e(str(v))}</span>"
        for k, v in (
            ("date", info.get("date", "")),
            ("parcomm", info.get("version", "")),
            ("commit", info.get("commit", "")),
            ("machine", info.get("machine", "")),
            ("executor", info.get("executor", "")),
        )
        if v
    )
    papers = "".join(f"<li><b>{e(short)}</b> — {e(full)}</li>" for _, short, full in PAPERS.values())
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>parcomm: paper vs parcomm</title><style>{_CSS}</style></head><body>"
        f"<header><h1>parcomm: paper vs parcomm</h1><div class='meta'>{meta}</div></header><main>{banner}"
        "<h2 id='summary'>Summary</h2><p>Each study reruns a paper's experiments with parcomm and compares "
        "quantity by quantity. Every verdict is given by the rule written beside it, chosen from the "
        "paper's own precision: a <b>tolerance</b> for a number, a <b>direction</b> for a trend, a named "
        "<b>criterion</b> otherwise. <b>agrees</b> when parcomm's value meets its rule, <b>differs</b> when it "
        "does not (each with the mechanism and its evidence, or a plain statement that the cause is not known), "
        "<b>not comparable</b> when the paper gives no value to compare one to one (the rule says why).</p>"
        "<table class='tally'><tr><th>study</th><th>agree</th><th>differ</th><th>not comparable</th><th></th>"
        f"<th>wall time</th></tr>{''.join(rows)}</table>"
        f"{_by_rule_html(reports)}"
        "<p class='filter'><label><input type='checkbox' id='differs-only'> show only the rows that differ</label></p>"
        f"<nav class='toc'><b>Contents</b><ol>{''.join(toc)}</ol></nav>"
        f"<details><summary>The papers</summary><ul>{papers}</ul></details>"
        f"{''.join(section_html(r, base) for r in reports)}"
        "</main></body></html>"
    )


def _by_rule_html(reports: list[dict[str, Any]]) -> str:
    """The verdicts of every study counted by the kind of rule that gave them."""
    from .rules import KINDS

    comps = [c for r in reports for c in r.get("comparisons", [])]
    by = tally_by_rule(comps)
    if not by:
        return ""
    what = {
        "tolerance": "a number within a band set by the paper's precision",
        "direction": "a trend or an order the paper states",
        "criterion": "a named yes/no test",
        "no paper value": "nothing to compare one to one",
    }
    rows = "".join(
        f"<tr><td><b>{html.escape(k)}</b><br><small>{html.escape(what.get(k, ''))}</small></td>"
        f"<td class='num ok'>{a}</td><td class='num bad'>{d}</td><td class='num na'>{n}</td><td>{_bar(a, d, n)}</td></tr>"
        for k, (a, d, n) in sorted(by.items(), key=lambda kv: (list(KINDS) + [kv[0]]).index(kv[0]))
    )
    return (
        "<table class='tally'><tr><th>verdicts by rule</th><th>agree</th><th>differ</th><th>not comparable</th>"
        f"<th></th></tr>{rows}</table>"
    )


def write_index(out: Path, info: dict[str, Any] | None = None, order: list[str] | None = None) -> Path:
    """Write ``out/index.html`` from every ``out/*/report.json``; studies in ``order`` first."""
    reports = []
    for p in sorted(out.glob("*/report.json")):
        try:
            reports.append(json.loads(p.read_text()))
        except (OSError, ValueError):
            continue
    rank = {n: i for i, n in enumerate(order or [])}
    reports.sort(key=lambda r: (rank.get(r.get("name"), len(rank)), r.get("name", "")))
    (out / "verdicts.json").write_text(json.dumps(verdicts(reports), indent=1, ensure_ascii=False))
    _beside_full_run(reports, FULL_VERDICTS)
    path = out / "index.html"
    path.write_text(index_html(reports, info or run_info(), out))
    return path


#: The verdicts of a full (not --quick) run, recorded from its ``verdicts.json``; a quick report
#: shows them beside its own.
FULL_VERDICTS = Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "repro_full_verdicts.json"


def verdicts(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every verdict of ``reports`` with its rule, one row each (``OUT/verdicts.json``)."""
    return [
        {
            "study": r.get("name"),
            "quick": bool(r.get("quick")),
            "quantity": c.get("quantity"),
            "agrees": c.get("agrees"),
            "rule": c.get("rule") or {},
        }
        for r in reports
        for c in r.get("comparisons", [])
    ]


def _beside_full_run(reports: list[dict[str, Any]], path: Path) -> None:
    """Give each quick report's comparison the full run's verdict for the same study and quantity
    (``full``: true/false/null, or "no such row" where the full run words it differently)."""
    if not any(r.get("quick") for r in reports):
        return
    try:
        full = {(v["study"], v["quantity"]): v["agrees"] for v in json.loads(path.read_text()) if not v.get("quick")}
    except (OSError, ValueError, KeyError, TypeError):
        return
    for r in reports:
        if r.get("quick"):
            for c in r.get("comparisons", []):
                c["full"] = full.get((r.get("name"), c.get("quantity")), "no such row")
