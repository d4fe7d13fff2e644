"""The HTML report as a person sees it: headless Chromium renders ``index.html`` of a real
(quick) study at 1400 px width and saves a screenshot.

The screenshot is written to ``results/screenshots/report-1400.png`` in the repository
(``$PARCOMM_SCREENSHOT_DIR`` to put it elsewhere). Skipped when Chromium is not installed
(``apt-get install chromium fonts-noto-cjk``; CI installs both).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from parcomm.studies import run_studies

#: Text a reader must never see: a generator's placeholder where a list came out empty, Python's
#: own words for nothing, a module path or a source file.
PLACEHOLDERS = (
    re.compile(r"\b(?:at|from|to|beats [AB] at|out at):? none\b"),
    re.compile(r"(?<![\w\-])- B\b"),
    re.compile(r"\b(?:None|nan|NaN)\b"),
)
INTERNAL = (
    re.compile(r"\bparcomm\.[a-z_]+"),
    re.compile(r"\b[\w/]+\.(?:py|toml)\b"),
    re.compile(r"\b(?:apps|studies|platform|cli|crates)/\w"),
    re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+){2,}\b"),  # a column or function name: sim_all_arrival_ms
)


def _visible(fragment: str) -> str:
    import html as html_mod

    fragment = re.sub(r"<(style|script)[^>]*>.*?</\1>", " ", fragment, flags=re.S)
    return html_mod.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", fragment)))


def page_problems(page: str) -> list[str]:
    """What a reader of the report would trip over: "why it differs" boxes that repeat their row,
    placeholders, module paths and column names in the visible text (the CSV links excepted), verdicts
    without a rule."""
    out = []
    rows = {
        m.group(1): m.group(2) for m in re.finditer(r"<tr class='v-\w+' id='([\w-]+-row\d+)'>(.*?)</tr>", page, re.S)
    }
    for box_id, body in re.findall(r"<div class='why' id='([\w-]+)'>(.*?)</div>", page, re.S):
        row = rows.get(box_id.replace("-why", "-row"))
        cells = [_visible(c).strip() for c in re.findall(r"<td>(.*?)</td>", row or "", re.S)]
        text = _visible(re.sub(r"^<a [^>]*>.*?</a>(<br>)?", "", body)).strip()
        if row is None:
            out.append(f"why box {box_id} has no row")
        elif not text or text in cells or any(len(c) > 20 and c in text for c in cells[1:3]):
            out.append(f"why box {box_id} repeats its row: {text[:120]}")
    if re.search(r"class='rule bad'>no rule", page):
        out.append("a verdict without its rule")
    seen = _visible(re.sub(r"<small class='foot'>.*?</small>", " ", page, flags=re.S))
    for pat in PLACEHOLDERS + INTERNAL:
        for m in pat.finditer(seen):
            out.append(f"{m.group(0)!r} in ...{seen[max(0, m.start() - 60) : m.end() + 30]}...")
    return out


CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("results")
    run_studies(["rto"], out, quick=True, seed=1)
    return out


def test_report_has_a_front_page_and_no_internal_words(report):
    page = (report / "index.html").read_text()
    for must in (
        "paper vs parcomm",
        "Quick mode",
        "Contents",
        "href='#rto'",
        "commit",
        "machine",
        "parcomm</b>",
        "agrees",
        "Figure 1.",
        "<figcaption>",
    ):
        assert must in page, must
    captions = re.findall(r"<figcaption><b>Figure \d+\.</b> ([^<]*)</figcaption>", page)
    assert captions and not any(c.endswith(".png") for c in captions), captions  # real captions, not file names
    text = re.sub(r"<[^>]+>", " ", page)
    for word in ("issue 7", "module docstring", "seed 000", "seed 001"):
        assert word not in text, word
    assert "width='640'" not in page
    assert page_problems(page) == []


def test_the_page_check_catches_what_the_report_must_not_show():
    from parcomm.studies.report import section_html

    def row(q, paper, parcomm, agrees, why=""):
        return {
            "quantity": q,
            "paper": paper,
            "parcomm": parcomm,
            "agrees": agrees,
            "why": why,
            "rule": {"kind": "tolerance", "text": "within ±20 % of ~26"},
        }

    rep = {
        "name": "x",
        "title": "t",
        "source": "s",
        "comparisons": [
            row("a", "~26 MFlop/s at N = 330", "15.4 MFlop/s, comm share 80 %", False, "15.4 MFlop/s, comm share 80 %"),
            row("b", "1", "simulated A first times out at - B; B beats A at none", None),
            row("c", "1", "see parcomm.platform.opteron and sim_all_arrival_ms", True),
            row("d", "1", "2", True) | {"rule": {}},
        ],
    }
    problems = page_problems(section_html(rep))
    for want in ("repeats its row", "'- B'", "at none'", "parcomm.platform", "sim_all_arrival_ms", "without its rule"):
        assert any(want in p for p in problems), (want, problems)


def test_every_verdict_in_the_json_carries_its_rule(report):
    import json

    from parcomm.studies.rules import rule_problems

    for path in report.glob("*/report.json"):
        for c in json.loads(path.read_text())["comparisons"]:
            assert rule_problems(c["rule"]) == [], c


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (apt-get install chromium)")
def test_report_screenshot_at_1400px(report, tmp_path):
    shots = Path(
        os.environ.get("PARCOMM_SCREENSHOT_DIR") or Path(__file__).resolve().parents[1] / "results" / "screenshots"
    )
    shots.mkdir(parents=True, exist_ok=True)
    shot = shots / "report-1400.png"
    shot.unlink(missing_ok=True)
    # A Japanese line, as the papers' quotes in the studies' notes are: it must render in a CJK font.
    page = report / "index.html"
    page.write_text(
        page.read_text().replace(
            "<h2 id='summary'>Summary</h2>", "<h2 id='summary'>Summary</h2><p lang='ja'>各段、1段おき、2段おき</p>"
        )
    )
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--mute-audio",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1400,2000",
        f"--screenshot={shot}",
        page.as_uri(),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, start_new_session=True)
    assert shot.exists(), proc.stderr[-2000:]
    assert _png_size(shot) == (1400, 2000)
    assert shot.stat().st_size > 50_000  # a rendered page, not a blank one
    fonts = (
        subprocess.run(["fc-list", ":lang=ja", "family"], capture_output=True, text=True).stdout
        if shutil.which("fc-list")
        else ""
    )
    if os.environ.get("CI") and not fonts.strip():
        pytest.fail("no Japanese font installed (apt-get install fonts-noto-cjk)")
