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
