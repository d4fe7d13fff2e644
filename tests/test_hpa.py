"""Seed 000's application: the Quest generator, serial Apriori and HPA.

HPA (simulator with P = 1, 4, 16 and MPI with 4 ranks) and the serial
Apriori must give exactly the frequent itemsets and supports of an
independent reference: efficient-apriori when installed (the `test` extra),
else brute-force counting of every subset on the small data sets used here.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import numpy as np
import pytest
from parcomm.apps.hpa.apriori import Encoder, apriori, apriori_gen, min_count, rules
from parcomm.apps.hpa.hpa import hpa, levels_to_dict, merge_result
from parcomm.apps.hpa.quest import (
    QuestParams,
    TransactionFileError,
    Transactions,
    generate_transactions,
    load,
    make_patterns,
    read_quest,
    read_text,
    write_quest,
    write_text,
)
from parcomm.cli import main as cli_main
from parcomm.comm import CommError, run_mpi, run_sim

DATASETS = {
    "small": QuestParams(transactions=3000, avg_len=6, avg_pattern_len=3, items=200, patterns=60, seed=11),
    "skewed": QuestParams(transactions=4000, avg_len=8, avg_pattern_len=4, items=400, patterns=40, seed=12),
    "wide": QuestParams(transactions=2000, avg_len=5, avg_pattern_len=2, items=2000, patterns=300, seed=13),
}
SUPPORT = {"small": 0.02, "skewed": 0.03, "wide": 0.005}


def reference_itemsets(rows: list[list[int]], min_support: float) -> dict[tuple[int, ...], int]:
    """Independent reference: efficient-apriori, else brute force."""
    try:
        from efficient_apriori import apriori as ea
    except ImportError:
        return _brute_force(rows, min_support)
    its, _ = ea([tuple(r) for r in rows], min_support=min_support, min_confidence=1.0, max_length=10**6)
    return {tuple(sorted(k)): v for level in its.values() for k, v in level.items()}


def _brute_force(rows, min_support):
    c = Counter()
    for r in rows:
        for k in range(1, len(r) + 1):
            c.update(combinations(sorted(r), k))
    m = min_count(min_support, len(rows))
    return {k: v for k, v in c.items() if v >= m}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Each data set as a 4-part binary file, its rows and its reference."""
    d = tmp_path_factory.mktemp("quest")
    out = {}
    for name, p in DATASETS.items():
        path = d / f"{name}.qtx"
        write_quest(path, p, parts=4)
        rows = load(path).to_lists()
        out[name] = (str(path), rows, reference_itemsets(rows, SUPPORT[name]))
    return out


# --- generator ---------------------------------------------------------------------------


def test_same_seed_same_file_and_different_seed_differs(tmp_path):
    p = QuestParams(transactions=20000, items=300, patterns=100, seed=7)
    write_quest(tmp_path / "a.qtx", p, parts=3)
    write_quest(tmp_path / "b.qtx", p, parts=3)
    write_quest(tmp_path / "c.qtx", QuestParams(transactions=20000, items=300, patterns=100, seed=8), parts=3)
    a, b, c = ((tmp_path / f).read_bytes() for f in ("a.qtx", "b.qtx", "c.qtx"))
    assert a == b and a != c


def test_partitions_are_contiguous_blocks_whatever_the_reader(tmp_path):
    p = QuestParams(transactions=20000, items=300, patterns=100, seed=3)  # > 2 generator chunks
    whole = generate_transactions(p)
    write_quest(tmp_path / "q.qtx", p, parts=4)
    for size in (1, 3, 4, 7):
        parts = [read_quest(tmp_path / "q.qtx", r, size) for r in range(size)]
        assert sum(len(x) for x in parts) == len(whole)
        assert np.array_equal(np.concatenate([x.items for x in parts]), whole.items)
        assert [len(x) for x in parts] == [(r + 1) * len(whole) // size - r * len(whole) // size for r in range(size)]


def test_statistics_match_parameters():
    p = QuestParams(transactions=20000, avg_len=10, avg_pattern_len=4, items=1000, patterns=500, seed=5)
    pats = make_patterns(p)
    sizes = np.array([len(x) for x in pats.items])
    assert abs(sizes.mean() - 4) < 0.2  # Poisson pattern sizes, mean I
    assert abs(pats.weights.sum() - 1) < 1e-12
    w = pats.weights * p.patterns  # exponential with mean 1: sd 1, median ln 2
    assert abs(w.std() - 1) < 0.15 and abs(np.median(w) - np.log(2)) < 0.1
    shared = [len(np.intersect1d(a, b)) / len(b) for a, b in zip(pats.items, pats.items[1:])]
    assert 0.2 < np.mean(shared) < 0.6  # correlation 0.5 (exponential fraction, capped at 1)
    tx = generate_transactions(p)
    lens = tx.lengths
    assert abs(lens.mean() - 10) < 1.0  # Poisson sizes, mean T (duplicates across patterns removed)
    assert lens.min() >= 1
    freq = np.sort(np.bincount(tx.items, minlength=p.items))[::-1]
    top = freq[: p.items // 10].sum() / freq.sum()
    assert top > 0.3  # the 10 % most frequent items carry far more than 10 % of occurrences
    # pattern structure: the heaviest pattern's items occur together far more
    # often than they would independently
    j = int(np.argmax([w if len(x) >= 2 else 0 for w, x in zip(pats.weights, pats.items)]))
    a, b = pats.items[j][:2]
    rows = tx.to_lists()
    both = sum(1 for r in rows if a in r and b in r) / len(rows)
    pa = sum(1 for r in rows if a in r) / len(rows)
    pb = sum(1 for r in rows if b in r) / len(rows)
    assert both > 3 * pa * pb


def test_text_round_trip_and_normalisation(tmp_path):
    f = tmp_path / "t.txt"
    f.write_text("3 1 2\n# a comment\n\n5,5,4\n7\n")
    tx = read_text(f)
    assert tx.to_lists() == [[1, 2, 3], [4, 5], [7]]
    write_text(tmp_path / "u.txt", tx)
    assert read_text(tmp_path / "u.txt").to_lists() == tx.to_lists()


@pytest.mark.parametrize("line", ["1 2 x", "1 -2", "1.5 3"])
def test_malformed_line_is_named(tmp_path, line):
    f = tmp_path / "bad.txt"
    f.write_text(f"1 2 3\n4 5\n{line}\n6\n")
    with pytest.raises(TransactionFileError, match=r"bad.txt:3: "):
        read_text(f)


def test_cli_malformed_file_one_line_error(tmp_path, capsys):
    f = tmp_path / "bad.txt"
    f.write_text("1 2\n3 oops\n")
    assert cli_main(["mine", "run", str(f), "--algo", "serial"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.txt:2:" in err[0] and "'oops'" in err[0]


# --- serial Apriori ----------------------------------------------------------------------


@pytest.mark.parametrize("name", list(DATASETS))
def test_serial_apriori_matches_reference(data, name):
    path, rows, ref = data[name]
    res = apriori(load(path), SUPPORT[name])
    assert res.itemsets() == ref
    assert len(ref) > 50 and max(map(len, ref)) >= 3  # the data sets exercise several passes
    assert all(p["large"] == sum(1 for k in ref if len(k) == p["pass"]) for p in res.passes)
    assert res.passes[-1]["large"] == 0 or res.passes[-1]["pass"] == max(map(len, ref))


def test_brute_force_reference_agrees_with_efficient_apriori(data):
    pytest.importorskip("efficient_apriori")
    _, rows, ref = data["small"]
    assert _brute_force(rows[:400], SUPPORT["small"]) == reference_itemsets(rows[:400], SUPPORT["small"])


def test_byte_string_keys_give_the_same_counts(data, monkeypatch):
    path, _, ref = data["skewed"]
    monkeypatch.setattr(Encoder, "KEY_LIMIT", 1)  # force the big-endian byte-string keys
    assert apriori(load(path), SUPPORT["skewed"]).itemsets() == ref


def test_candidate_generation_joins_and_prunes():
    l2 = np.array([[1, 2], [1, 3], [1, 4], [2, 3], [3, 4]])
    # {1,2,3}: all subsets large; {1,2,4}: {2,4} missing; {1,3,4}: all large
    assert apriori_gen(l2).tolist() == [[1, 2, 3], [1, 3, 4]]


def test_rules_match_efficient_apriori(data):
    ea = pytest.importorskip("efficient_apriori")
    path, rows, _ = data["small"]
    res = apriori(load(path), SUPPORT["small"])
    mine = {(r.lhs, r.rhs): r.confidence for r in rules(res.itemsets(), len(rows), 0.6)}
    _, theirs = ea.apriori([tuple(r) for r in rows], min_support=SUPPORT["small"], min_confidence=0.6)
    ref = {(tuple(sorted(r.lhs)), tuple(sorted(r.rhs))): r.confidence for r in theirs}
    assert mine.keys() == ref.keys() and len(ref) > 10
    assert all(abs(mine[k] - ref[k]) < 1e-12 for k in ref)


def test_nothing_frequent():
    tx = Transactions.from_lists([[1, 2], [3], [4, 5]])
    res = apriori(tx, 0.9)
    assert res.itemsets() == {} and res.passes[0]["large"] == 0


# --- HPA -----------------------------------------------------------------------------------


@pytest.mark.parametrize("procs", [1, 4, 16])
@pytest.mark.parametrize("name", list(DATASETS))
def test_hpa_in_simulator_matches_reference(data, name, procs):
    path, _, ref = data[name]
    res = run_sim(hpa, "atm:16", procs, seed=1, kwargs={"path": path, "min_support": SUPPORT[name]})
    m = merge_result(res.results)
    assert levels_to_dict(m["levels"]) == ref
    serial = apriori(load(path), SUPPORT[name])
    assert [(p["candidates"], p["large"]) for p in m["passes"]] == [
        (p["candidates"], p["large"]) for p in serial.passes
    ]
    if procs > 1:  # candidates are really spread and itemsets really sent in blocks of at most 8 KB
        owned = [r["passes"][1]["owned_candidates"] for r in res.results]
        assert sum(owned) == m["passes"][1]["candidates"] and max(owned) < sum(owned)
        assert m["passes"][1]["blocks_sent"] > 0
        assert m["passes"][1]["bytes_sent"] <= m["passes"][1]["blocks_sent"] * 8192


def test_hpa_is_deterministic_in_simulator(data):
    path, _, _ = data["small"]
    kw = {"path": path, "min_support": SUPPORT["small"]}
    a = run_sim(hpa, "atm:16", 16, seed=3, kwargs=kw)
    b = run_sim(hpa, "atm:16", 16, seed=3, kwargs=kw)
    assert a.finish_times == b.finish_times and a.host_totals() == b.host_totals()


def test_hpa_under_mpi_4_ranks_matches_reference(data, mpi):
    for name in ("small", "wide"):
        path, _, ref = data[name]
        res = run_mpi("parcomm.apps.hpa.hpa:hpa", 4, kwargs={"path": path, "min_support": SUPPORT[name]}, timeout=120)
        assert levels_to_dict(merge_result(res.results)["levels"]) == ref


# --- CLI -----------------------------------------------------------------------------------


def test_cli_gen_and_run(tmp_path, capsys):
    import json

    f = tmp_path / "d.qtx"
    assert (
        cli_main(
            [
                "mine",
                "gen",
                str(f),
                "-D",
                "3k",
                "-N",
                "200",
                "-L",
                "60",
                "-T",
                "6",
                "-I",
                "3",
                "--seed",
                "11",
                "--parts",
                "4",
            ]
        )
        == 0
    )
    capsys.readouterr()
    outs = {}
    for algo in ("serial", "hpa"):
        isets = tmp_path / f"{algo}.itemsets"
        rl = tmp_path / f"{algo}.rules"
        assert (
            cli_main(
                [
                    "mine",
                    "run",
                    str(f),
                    "--algo",
                    algo,
                    "--procs",
                    "4",
                    "--min-support",
                    "2%",
                    "--min-conf",
                    "60%",
                    "--itemsets-out",
                    str(isets),
                    "--rules-out",
                    str(rl),
                    "--json",
                ]
            )
            == 0
        )
        outs[algo] = json.loads(capsys.readouterr().out)
        assert isets.read_text() and rl.read_text()
    s, h = outs["serial"], outs["hpa"]
    assert s["itemsets"] == h["itemsets"] > 0 and s["rules"] == h["rules"] > 0
    assert [p["candidates"] for p in s["passes"]] == [p["candidates"] for p in h["passes"]]
    assert (tmp_path / "serial.itemsets").read_text() == (tmp_path / "hpa.itemsets").read_text()
    assert cli_main(["mine", "run", str(f), "--algo", "serial", "--min-support", "2%"]) == 0
    out = capsys.readouterr().out
    assert "C (candidates)" in out and "L (large)" in out


def test_cli_bad_support_and_missing_file(tmp_path, capsys):
    assert cli_main(["mine", "run", str(tmp_path / "none.txt")]) == 2
    f = tmp_path / "ok.txt"
    f.write_text("1 2\n")
    assert cli_main(["mine", "run", str(f), "--min-support", "150%"]) == 2


def test_hpa_on_text_file_with_more_ranks_than_transactions(tmp_path):
    f = tmp_path / "tiny.txt"
    f.write_text("1 2 3\n1 2\n2 3 4\n")
    ref = _brute_force([[1, 2, 3], [1, 2], [2, 3, 4]], 0.5)
    res = run_sim(hpa, "atm:16", 16, kwargs={"path": str(f), "min_support": 0.5})
    assert levels_to_dict(merge_result(res.results)["levels"]) == ref == apriori(read_text(f), 0.5).itemsets()


@pytest.mark.parametrize("mode", ["bitmaps_chunked", "horizontal"])
def test_serial_counting_paths_agree(data, monkeypatch, mode):
    """Serial Apriori's fast paths (dense pair table in pass 2, TID bitmaps
    for k >= 3) and its general path (candidate subsets) find the same itemsets."""
    import importlib

    ap = importlib.import_module("parcomm.apps.hpa.apriori")
    path, rows, ref = data["skewed"]
    want = apriori(load(path), SUPPORT["skewed"]).itemsets()
    if mode == "bitmaps_chunked":
        monkeypatch.setattr(ap, "BITMAP_CHUNK", 64)
        monkeypatch.setattr(ap, "BITMAP_BUILD", 5000)
    else:
        monkeypatch.setattr(ap, "PAIR_LIMIT", 0)
        monkeypatch.setattr(ap, "BITMAP_WORDS", 0)
    assert ap.apriori(load(path), SUPPORT["skewed"]).itemsets() == want == ref


@pytest.mark.parametrize("name", ["skewed", "wide"])
def test_hpa_index_wire_and_large_blocks_match_reference(data, name):
    """HPA naming itemsets by their position in C_k (``wire="index"``), in
    blocks larger than the paper's, counts the same itemsets."""
    path, _, ref = data[name]
    kw = {"path": path, "min_support": SUPPORT[name], "wire": "index", "block_bytes": 1 << 16}
    res = run_sim(hpa, "atm:16", 4, seed=1, kwargs=kw)
    m = merge_result(res.results)
    assert levels_to_dict(m["levels"]) == ref
    assert m["passes"][1]["blocks_sent"] > 0
    with pytest.raises((ValueError, CommError), match="wire must be"):
        run_sim(hpa, "atm:16", 2, seed=1, kwargs={**kw, "wire": "hash"})


def test_hpa_index_wire_under_mpi_matches_reference(data, mpi):
    path, _, ref = data["skewed"]
    res = run_mpi(
        "parcomm.apps.hpa.hpa:hpa",
        2,
        kwargs={"path": path, "min_support": SUPPORT["skewed"], "wire": "index", "block_bytes": 1 << 20},
        timeout=120,
    )
    m = merge_result(res.results)
    assert levels_to_dict(m["levels"]) == ref
    assert all(r["process_cpu_s"] > 0 for r in res.results)
