"""The demo study runs end to end and writes what the report promises."""

import json

from parcomm.studies import run_studies


def test_rto_study_quick_writes_tables_figures_and_report(tmp_path):
    (rep,) = run_studies(["rto"], tmp_path, quick=True, seed=1)
    out = tmp_path / "rto"
    for name in ("incast", "alltoall", "stacks"):
        rows = json.loads((out / f"{name}.json").read_text())
        assert rows and (out / f"{name}.csv").read_text().count("\n") == len(rows) + 1
    for fig in rep.figures:
        with open(fig, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    html = (tmp_path / "index.html").read_text()
    assert "paper vs parcomm" in html and "Alltoall" in html
    # The study's own verdicts: the A/B inversion reproduces, and the incast collapse under the
    # period kernel. (Under the default stack with host noise, 16 senders keep 0.20 of one sender's
    # goodput at 200 ms, at the study's 0.2 line: that verdict is left to the measurement.)
    assert [c.agrees for c in rep.comparisons][1:4] == [True, True, True]
    # Every case again under seed 001's kernel profile, beside the earlier settings.
    stacks = json.loads((out / "stacks.json").read_text())
    assert len(stacks) == len(json.loads((out / "incast.json").read_text())) + len(
        json.loads((out / "alltoall.json").read_text())
    )
    assert all(r["linux-2.6.11_time_s"] > 0 and r["before_time_s"] > 0 for r in stacks)
    assert all("rfc_time_s" in r for r in stacks if r["workload"] == "incast")  # the RFC transport beside the default
    assert any("Linux 2.6.11 stack" in c.quantity for c in rep.comparisons)


def test_unknown_study_is_a_clear_error(tmp_path):
    import pytest

    with pytest.raises(ValueError, match="unknown study nosuch"):
        run_studies(["nosuch"], tmp_path, quick=True)
