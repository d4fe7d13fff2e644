"""Seed 000's mechanisms on small configurations (the ``oguchi`` study runs them at scale).

Behaviour only: losses at the synchronized pass-end exchange through the
AN1000's 2k-cell port buffers, long backoffs with MAX = 60 s, relief from
per-node random RTOs; and HPA's weighted, count-only blocks finding exactly
the reference itemsets.
"""

from __future__ import annotations

import numpy as np
import pytest
from parcomm.apps.hpa.apriori import apriori
from parcomm.apps.hpa.hpa import CostModel, hpa, levels_to_dict, merge_result, spread_scales, work_profile
from parcomm.apps.hpa.quest import QuestParams, load, write_quest
from parcomm.comm import CommError, run_sim
from parcomm.result import HOST_COLUMNS, Result, compare
from parcomm.studies import STUDIES
from parcomm.studies.oguchi import EMU_HOSTS, _emulation_row, _platform, pass_end_skeleton

P = 32
OWNERS = (0, 1, 2, 3)  # a pass with few candidates: few owners receive from everyone
SKELETON = {"rounds": 4, "owners": OWNERS, "nbytes": 8192}


def _skeleton(rto, buffer_cells=2048, cells=False, tick=0.0, time_limit=None):
    """The pass-end exchange alone. By default on store-and-forward ports with
    exact timers (the simplest model that shows each mechanism); ``cells``
    and ``tick`` switch on the AN1000's cell interleaving and Solaris' 10 ms
    timer ticks, as the study uses them."""
    plat = _platform(P, rto, 1, buffer_cells, cell_interleaving=cells, timer_tick_s=tick)
    res = run_sim(pass_end_skeleton, plat, P, seed=1, kwargs=SKELETON, time_limit=time_limit)
    return res.time, res.host_totals()


def test_pass_end_exchange_overflows_2k_cell_ports_but_not_an_ample_buffer():
    t, tot = _skeleton(("minmax", 0.2, 60.0))
    t_ample, tot_ample = _skeleton(("minmax", 0.2, 60.0), buffer_cells=1 << 20)
    assert tot["timeouts"] > 0 and tot["bytes_retransmitted"] > 0
    assert tot_ample["timeouts"] == 0 and tot_ample["bytes_retransmitted"] == 0
    # every round waits for at least one 200 ms timeout; without losses a round is ~70 ms
    assert t > 4 * 0.2 > t_ample


@pytest.mark.parametrize("cells,tick", [(False, 0.0), (True, 0.01)])
def test_short_max_cuts_the_backoff_of_synchronized_retransmissions(cells, tick):
    t_default, _ = _skeleton(("minmax", 0.2, 60.0), cells=cells, tick=tick)
    t_short, _ = _skeleton(("minmax", 0.2, 0.3), cells=cells, tick=tick)  # MAX = MIN + 100 ms (Fig. 3)
    assert t_short < 0.5 * t_default


def test_interleaved_cells_and_identical_timers_collide_until_the_rto_is_random():
    # Cell interleaving tears every frame of a synchronized burst; identical
    # hosts with exact timers then retransmit in lockstep and tear them all
    # again, round after round. Per-node random RTOs spread the rounds.
    with pytest.raises(CommError, match="time limit"):
        _skeleton(("fixed", 0.2), cells=True, time_limit=60.0)
    t_rand, rand = _skeleton(("random_both", 0.2), cells=True, time_limit=60.0)
    assert t_rand < 5.0 and rand["timeouts"] > 0
    # Clock ticks with their own phase per host (Solaris: 10 ms) also break the lockstep.
    t_tick, _ = _skeleton(("fixed", 0.2), cells=True, tick=0.01, time_limit=60.0)
    assert t_tick < 5.0


def test_random_rto_per_node_beats_one_fixed_value_at_the_same_min():
    t_fixed, fixed = _skeleton(("fixed", 0.2))
    t_rand, rand = _skeleton(("random_both", 0.2))  # MIN = MAX in 200..300 ms per node (Figs. 4-5)
    assert t_rand < t_fixed
    assert rand["bytes_retransmitted"] < fixed["bytes_retransmitted"]


@pytest.fixture(scope="module")
def small_data(tmp_path_factory):
    path = tmp_path_factory.mktemp("oguchi") / "q.qtx"
    write_quest(path, QuestParams(transactions=3000, avg_len=8, avg_pattern_len=3, items=200, patterns=100, seed=5), 8)
    return str(path)


@pytest.mark.parametrize("payload", ["itemsets", "counts"])
def test_weighted_hpa_finds_the_reference_itemsets_times_the_weight(small_data, payload):
    ref = apriori(load(small_data), 0.02).itemsets()
    res = run_sim(
        hpa, "atm:8", 8, seed=1, kwargs={"path": small_data, "min_support": 0.02, "weight": 3, "payload": payload}
    )
    m = merge_result(res.results)
    assert levels_to_dict(m["levels"]) == {k: 3 * v for k, v in ref.items()}
    assert m["n_transactions"] == 3 * 3000


def test_count_payload_sends_the_same_bytes_as_itemset_blocks(small_data):
    kw = {"path": small_data, "min_support": 0.02, "weight": 2}
    a = merge_result(run_sim(hpa, "atm:8", 8, seed=1, kwargs={**kw, "payload": "itemsets"}).results)
    b = merge_result(run_sim(hpa, "atm:8", 8, seed=1, kwargs={**kw, "payload": "counts"}).results)
    assert [p["bytes_sent"] for p in a["passes"]] == [p["bytes_sent"] for p in b["passes"]]
    assert [p["blocks_sent"] for p in a["passes"]] == [p["blocks_sent"] for p in b["passes"]]


def test_spread_scales_keep_the_mean_and_shrink_the_spread(small_data):
    cost = CostModel(per_transaction_s=1e-6, per_subset_s=2e-6, per_probe_s=2e-6, per_candidate_s=0, per_item_s=1e-6)
    prof = work_profile(small_data, 8, 0.02, cost, weight=4)
    sc = spread_scales(prof["cpu"], 0.5)
    for k in prof["cpu"][0]:
        x = np.array([c[k] for c in prof["cpu"]])
        y = np.array([c[k] * s[k] for c, s in zip(prof["cpu"], sc)])
        assert y.mean() == pytest.approx(x.mean())
        assert y.std() == pytest.approx(0.5 * x.std())


def test_study_is_registered():
    assert STUDIES["oguchi"] == "parcomm.studies.oguchi"


def test_the_emulation_table_gives_means_and_ranges_of_compares_summary():
    def run(time, retx, timeouts, drops):
        hosts = {k: [0] for k in HOST_COLUMNS}
        hosts.update(bytes_retransmitted=[retx], timeouts=[timeouts], fast_retransmits=[1])
        counters = {"hosts": hosts, "ports": {"drops": [drops]}}
        return Result(way="emu", finish_times=[time], results=[None], counters=counters, wall_s=0)

    runs = [run(1.0, 32_000, 2, 5), run(3.0, 96_000, 4, 1), run(2.0, 64_000, 0, 0)]
    row = _emulation_row("P32 fixed X=200ms", "emulated (Linux TCP)", compare(runs)["emu"], ["rto_min raised"])
    assert row["runs"] == 3 and row["time_s"] == 2.0 and (row["time_min_s"], row["time_max_s"]) == (1.0, 3.0)
    assert row["retx_bytes_per_host"] == 64_000 / EMU_HOSTS and row["retx_max"] == 96_000 / EMU_HOSTS
    assert row["timeouts"] == 2.0 and row["fast_retransmits"] == 1.0 and row["port_drops"] == 2.0
    assert row["tcp_notes"] == "1 settings adjusted by the kernel, e.g. rto_min raised"
