"""The papers' transcribed values and the report's "four ways" table.

* every value in ``parcomm.studies.paper_data`` cites its figure/table and section and says how
  it was obtained; approximate ones say how the paper qualifies them; the exact and text ones
  occur in the paper's text as printed (when the papers are on this machine);
* a study's section of the report shows the paper's values (in its figures and in a table of
  where each comes from) and the four ways side by side, with a marker where a way was not run;
* ``report.json`` stays strict JSON.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from parcomm.studies import paper_data, run_studies
from parcomm.studies.framework import (
    NEEDS_ROOT,
    NOT_IN_QUICK,
    NOT_IN_STUDY,
    WAYS,
    emulation_skip,
    skip,
    way_row,
)
from parcomm.studies.report import section_html

STUDIES = sorted(paper_data.MODULES)
#: Each study's paper in shared/seeds (INDEX.md).
SEED = {"oguchi": "000", "nomura": "001", "hironaka": "002", "shimokuni": "003", "chiba": "004"}
CITE = re.compile(r"(Table|Fig\.|Figs\.|§|study-4 table)")


def _seeds_dir() -> Path | None:
    here = Path(__file__).resolve().parents[1]
    for d in (Path("/work/shared/seeds"), here.parent / "shared" / "seeds", here / "shared" / "seeds"):
        if (d / "INDEX.md").exists():
            return d
    return None


@pytest.mark.parametrize("study", STUDIES)
def test_every_paper_value_cites_where_it_comes_from(study):
    vals = paper_data.values(study)
    assert vals, study
    keys = [v.key for v in vals]
    assert len(keys) == len(set(keys)), "keys must be unique"
    for v in vals:
        assert CITE.search(v.cite), (study, v.key, v.cite)
        assert v.how in paper_data.HOW
        if v.how in ("text", "digitized"):
            assert v.approx, (study, v.key)  # how the paper qualifies it ("about", "±x")
        if v.how == "derived":
            assert v.note, (study, v.key)  # the arithmetic
        assert v.quantity and v.shown()
        assert v.label().startswith("paper (") and v.cite in v.label()
    for fig, why in paper_data.no_values(study).items():
        assert CITE.search(fig) and why, (study, fig)
    # The report's rows: every value, then every figure without readable values.
    rows = paper_data.for_report(study)
    assert len(rows) == len(vals) + len(paper_data.no_values(study))
    assert all(r["cite"] for r in rows)


def test_a_value_without_citation_or_qualifier_is_refused():
    with pytest.raises(ValueError, match="citation"):
        paper_data.PaperValue("k", "q", 1.0, "s", " ", "exact")
    with pytest.raises(ValueError, match="approx"):
        paper_data.PaperValue("k", "q", 1.0, "s", "Fig. 1", "text")
    with pytest.raises(ValueError, match="how"):
        paper_data.PaperValue("k", "q", 1.0, "s", "Fig. 1", "guessed")


def _spellings(x: float) -> set[str]:
    out = {f"{x:g}", f"{x * 100:g}"}
    if float(x).is_integer():
        out |= {str(int(x)), f"{int(x):,}"}
    return out


@pytest.mark.parametrize("study", STUDIES)
def test_printed_values_occur_in_the_papers_text(study):
    seeds = _seeds_dir()
    if seeds is None:
        pytest.skip("the papers' text (shared/seeds) is not on this machine")
    (path,) = seeds.glob(f"{SEED[study]}_*.txt")
    text = path.read_text()
    for v in paper_data.values(study):
        if v.how not in ("exact", "text"):
            continue
        for x in {v.low, v.high}:
            assert any(s in text for s in _spellings(x)), (study, v.key, x)


def test_tables_the_studies_compare_with_come_from_the_paper_data():
    from parcomm.studies import chiba, hironaka, oguchi, shimokuni

    assert oguchi.PAPER_TABLE2 == paper_data.module("oguchi").TABLE2
    assert [r["time_s"] for r in oguchi.PAPER_TABLE2] == [11.2, 69.8, 3.2, 6.2, 12.1]
    assert paper_data.get("oguchi", "T345").value == 21.5
    for var, row in shimokuni.STUDY4_PAPER.items():
        assert row[:4] == paper_data.module("shimokuni").STUDY4[var]
    assert shimokuni.STUDY4_PAPER["A"][:4] == (417, 1.0, 28.9, 28.9)
    assert (hironaka.PAPER_MFLOPS_330, hironaka.PAPER_MFLOPS_MAX) == (26.0, 56.0)
    assert chiba.PAPER["steal_over_flat_32"][1] == 1.7 and chiba.PAPER["phase1_16_32"][1] == (3.0, 4.0)


def test_way_row_marks_the_ways_without_a_value():
    row = way_row("Alltoall A, P = 8: time", model="1.2 ms", simulate="1.5 ms", emulate=skip(NOT_IN_QUICK))
    assert [row[w] for w in WAYS] == ["1.2 ms", "1.5 ms", NOT_IN_QUICK, NOT_IN_STUDY]
    assert row["skipped"] == ["emulate", "run"]
    with pytest.raises(ValueError, match="unknown way"):
        way_row("x", measure="1")
    assert emulation_skip(True, None, False) == NOT_IN_QUICK
    assert emulation_skip(False, "the emulation needs root (CAP_NET_ADMIN)", False) == NEEDS_ROOT
    assert emulation_skip(False, "iproute2 (ip, tc) is not installed", False) == "iproute2 (ip, tc) is not installed"
    assert emulation_skip(False, None, True) is None


def test_section_shows_the_four_ways_and_the_papers_values():
    rep = {
        "name": "nomura",
        "title": "t",
        "source": "seed 001 (Nomura & Ishikawa)",
        "comparisons": [],
        "figures": [],
        "quick": True,
        "ways": [
            way_row("Alltoall A, P = 8, m = 1024 B: time", model="1 ms", simulate="2 ms", emulate=skip(NOT_IN_QUICK))
        ],
        "paper_values": paper_data.for_report("nomura"),
    }
    page = section_html(rep)
    assert "id='nomura-ways'" in page and "Four ways" in page
    for head in ("model (closed form)", "simulate (packet-level)", "emulate (real TCP, namespaces)", "run (real"):
        assert head in page
    assert "<td class='skip'>not run in quick mode</td>" in page
    assert "<td class='skip'>not in this study</td>" in page
    assert "<td>2 ms</td>" in page
    assert "id='nomura-paper'" in page and "Fig. 8, §4.3" in page and "no readable values" in page
    assert "seed 001" not in page  # papers by first author


def _strict_load(path: Path):
    def refuse(name):
        raise ValueError(f"{name} is not JSON")

    return json.loads(path.read_text(), parse_constant=refuse)


def test_quick_study_report_has_paper_series_and_four_ways(tmp_path):
    (rep,) = run_studies(["shimokuni"], tmp_path, quick=True, seed=1)
    saved = _strict_load(tmp_path / "shimokuni" / "report.json")
    assert saved["ways"] and saved["paper_values"]
    # The study-4 table by the model and the simulator, side by side, with the paper's value beside.
    s4 = [r for r in saved["ways"] if r["quantity"].startswith("study 4, placement")]
    assert [r["quantity"][19] for r in s4] == list("ABCDE")
    assert all(r["model"].endswith(" ms") and r["simulate"].endswith(")") for r in s4)
    assert all(r["skipped"] == ["emulate", "run"] for r in s4)
    assert "paper 417 ms" in s4[0]["note"]
    assert (tmp_path / "shimokuni" / "four_ways.csv").exists()
    assert (tmp_path / "shimokuni" / "paper_values.csv").exists()
    page = (tmp_path / "index.html").read_text()
    assert "id='shimokuni-ways'" in page and "href='#shimokuni-ways'" in page
    # The figure with the paper's table says so in its caption; a figure without readable values says that.
    caps = re.findall(r"<figcaption><b>Figure \d+\.</b> ([^<]*)</figcaption>", page)
    assert any("paper&#x27;s printed study-4 table" in c for c in caps), caps
    assert any("not in its text" in c for c in caps)
    assert rep.captions["study4_tradeoff.png"].count("hollow") == 1


def test_four_ways_fill_the_emulated_column_when_the_emulation_ran(tmp_path):
    """The full, root path (not run in CI): emulated rows go into the emulate column."""
    from parcomm.studies import chiba, nomura, oguchi
    from parcomm.studies.framework import StudyContext, StudyReport

    full = StudyContext(out_dir=tmp_path, quick=False)
    quick = StudyContext(out_dir=tmp_path, quick=True)

    # nomura: MPICH on the emulated cluster at P = 8 (and 16); P = 64 is simulated only.
    def nrow(profile, procs, algo, m, t):
        return {
            "profile": profile,
            "procs": procs,
            "algo": algo,
            "size_bytes": m,
            "actual_s": t,
            "timeouts": 0,
            **{f"{k}_s": t * 1.1 for k in nomura.MODELS},
        }

    sim = [nrow(nomura.PAPER_PROFILE, p, a, m, 0.01) for p in (8, 64) for a in "AB" for m in nomura.WAY_SIZES]
    emu = [nrow(nomura.nomura_emu.PROFILE, p, a, m, 0.05) for p in (8, 16) for a in "AB" for m in nomura.WAY_SIZES]
    rows = nomura._ways(full, sim + emu)
    p8 = [r for r in rows if "P = 8," in r["quantity"]]
    p64 = [r for r in rows if "P = 64," in r["quantity"]]
    assert len(rows) == 12 and all("MPICH at 100 Mbit/s" in r["emulate"] for r in p8)
    assert all(r["emulate"] == "emulated at P = 8, 16 only" and "emulate" in r["skipped"] for r in p64)
    assert all(r["emulate"] == NOT_IN_QUICK for r in nomura._ways(quick, sim))

    # chiba: real parcomm bcast processes in namespaces.
    f2 = [
        {"algo": a, "slowest_s": 20.0, "fastest_s": 10.0, "fraction_of_bound": 0.5, "bound_s": 10.0}
        for a in chiba.ALGOS
    ]
    f11 = [{"algo": a, "nodes": n, "total_mb_s": 10.0 * (1 + (a != "flat"))} for a in chiba.ALGOS for n in (4, 32)]
    rep = StudyReport("chiba", "t", "s")
    rep.tables["emu_fig2_9_10"] = [dict(r, slowest_s=2.0, fastest_s=1.0) for r in f2]
    rep.tables["emu_fig11"] = [dict(r, nodes=16) for r in f11 if r["nodes"] == 4]
    rows = chiba._ways(full, rep, chiba.Plan(False), f2, f11)
    assert all(not r["emulate"].startswith("not") for r in rows), rows
    assert rows[-1]["emulate"] == "2.00x at 16 nodes" and rows[-1]["simulate"] == "2.00x at 32 nodes"
    assert all(
        r["emulate"] == NOT_IN_QUICK
        for r in chiba._ways(quick, StudyReport("chiba", "t", "s"), chiba.Plan(True), f2, f11)
    )

    # oguchi: the pass-end exchange, emulated beside its two simulated twins.
    lab = oguchi._label(oguchi.EMU_HOSTS, oguchi.EMU_CONFS[0])
    e = [
        {"rto": lab, "backend": b, "runs": n, "time_s": 1.0, "retx_bytes_per_host": 2e3, "timeouts": 3}
        for b, n in (("emulated (Linux TCP)", 3), ("simulated (sack-tlp twin)", 1), ("simulated-linux (linux twin)", 1))
    ]
    rows = oguchi._ways(full, {"pass3plus_s": 3.0}, e, "", 100)
    assert rows[0]["simulate"] == "3.00 s" and "paper 21.5 s" in rows[0]["note"]
    assert rows[1]["emulate"].endswith("(mean of 3)") and "SACK+TLP" in rows[1]["simulate"]
    assert rows[2]["emulate"] == "not run (see the notes)"
    assert oguchi._ways(quick, {"pass3plus_s": 3.0}, [], "", 100)[1]["emulate"] == NOT_IN_QUICK
