"""The packet-level multicast simulator (seed 003) through its Python wrapper."""

from __future__ import annotations

import json
import math

import pytest
from parcomm.apps.mcast.sim import McastSimResult, simulate

LAN = (0.003, 0.05, 1e9)  # study 4 (§4 1.4): local networks N1, N8
BACKBONE = (0.030, 0.002, 622e6)  # N2-N7
STUDY4 = [LAN] + [BACKBONE] * 6 + [LAN]


def path(segments, repair_at=(), packet_bytes=1024) -> dict:
    """src -n1-> r1 -n2-> ... -> rcv; router ri joins ni and n(i+1)."""
    k = len(segments)
    names = ["src"] + [f"r{i}" for i in range(1, k)] + ["rcv"]
    nodes = [{"name": "src", "kind": "source"}]
    nodes += [{"name": f"r{i}", "kind": "router", "repair": i in repair_at} for i in range(1, k)]
    nodes.append({"name": "rcv", "kind": "receiver"})
    nets = [
        {"name": f"n{i + 1}", "parent": names[i], "child": names[i + 1], "delay_s": d, "loss": l, "rate_bps": r}
        for i, (d, l, r) in enumerate(segments)
    ]
    return {"name": "path", "source": "src", "packet_bytes": packet_bytes, "nodes": nodes, "networks": nets}


def tx(nbytes: int, rate: float) -> float:
    return math.ceil(nbytes * 8 * 1e9 / rate) * 1e-9


def test_lossless_path_delay_is_exact():
    segs = [(0.001, 0.0, 1e9), (0.005, 0.0, 1e8), (0.002, 0.0, 1e7)]
    r = simulate(path(segs, packet_bytes=1000), packets=100, rate_pps=1000, seed=1)
    assert isinstance(r, McastSimResult) and r.complete and r.delivered == 100 and r.stopped == ""
    expect = sum(d + tx(1000, rate) for d, _, rate in segs)
    assert all(d == pytest.approx(expect, abs=1e-9) for d in r.packet["delay_s"])
    assert r.delay["p99_s"] == pytest.approx(expect, abs=1e-9)
    assert r.receiver("rcv")["mean_delay_s"] == pytest.approx(expect, abs=1e-9)
    assert sum(r.retransmissions.values()) == 0


def test_repair_at_every_router_beats_comet_rm_on_a_lossy_8_segment_path():
    t = path(STUDY4)
    comet = simulate(t, packets=3000, rate_pps=1000, repair="none", seed=1)
    every = simulate(t, packets=3000, rate_pps=1000, repair="all", seed=1)
    assert comet.complete and every.complete
    assert every.mean_delay_s < 0.9 * comet.mean_delay_s
    assert every.delay["p99_s"] < comet.delay["p99_s"]
    # Comet RM routers hold nothing; the source holds a round trip's worth.
    assert comet.buffers["peak_packets"][1:] == [0] * 7
    assert comet.buffer("src")["peak_packets"] > max(every.buffers["peak_packets"])
    # With repair everywhere, backbone losses are repaired hop by hop, so
    # the lossy LANs carry most retransmissions.
    assert every.network("n1")["data_retransmitted"] > every.network("n4")["data_retransmitted"]


def test_comet_rm_release_time_matches_the_papers_study4_delay():
    # Under Comet RM the source learns that a packet reached the receiver one
    # round trip (372 ms) per attempt after sending it: 372 ms / P(success)
    # = 417 ms on study 4's route, the paper's figure for A.
    r = simulate(path(STUDY4), packets=5000, rate_pps=1000, repair="none", seed=2)
    p = 0.95**2 * 0.998**6
    rtt = sum(2 * d + tx(1024, rate) + tx(40, rate) for d, _, rate in STUDY4)
    assert r.release["mean_s"] == pytest.approx(rtt / p, rel=0.02)
    assert r.release["mean_s"] == pytest.approx(0.417, rel=0.02)


def test_boundary_repair_is_close_to_repair_everywhere_with_less_buffer():
    t = path(STUDY4, repair_at=(1, 7))  # both ends of the backbone
    boundary = simulate(t, packets=3000, rate_pps=1000, seed=3)  # repair="tree": the flags
    every = simulate(t, packets=3000, rate_pps=1000, repair="all", seed=3)
    comet = simulate(t, packets=3000, rate_pps=1000, repair="none", seed=3)
    assert boundary.buffers["repair"] == [False, True, False, False, False, False, False, True]
    assert every.mean_delay_s < boundary.mean_delay_s < comet.mean_delay_s
    assert boundary.mean_delay_s < 1.05 * every.mean_delay_s
    assert sum(boundary.buffers["mean_bytes"]) < sum(every.buffers["mean_bytes"])


def test_same_seed_same_result_and_seeds_differ():
    t = path(STUDY4, repair_at=(1, 7))
    kw = dict(packets=1000, rate_pps=2000, ack_loss=True)
    a, b, c = simulate(t, seed=5, **kw), simulate(t, seed=5, **kw), simulate(t, seed=6, **kw)
    strip = lambda r: {k: v for k, v in r.__dict__.items() if k != "wall_s"}  # noqa: E731
    assert json.dumps(strip(a), sort_keys=True) == json.dumps(strip(b), sort_keys=True)
    assert a.delay != c.delay
    assert a.complete and sum(a.networks["acks_lost"]) > 0


def test_params_as_dict_keywords_and_unit_strings():
    t = path([(0.001, 0.0, 1e9)], packet_bytes=1000)
    r = simulate(t, {"packets": 10, "rate_bps": "8M", "seed": 1}, packets=20)
    assert r.packets == 20 and r.params["rate_bps"] == 8e6
    assert r.packet["first_tx_s"][1] == pytest.approx(0.001)  # 8 Mbit/s of 1000-byte packets
    cut = simulate(t, packets=100, rate_pps=100, time_limit_s="50ms")
    assert not cut.complete and 0 < cut.delivered < 100 and cut.stopped.startswith("time_limit_s")
    assert math.isnan(cut.packet["delay_s"][-1])


def test_accepts_tree_objects_and_files(tmp_path):
    tree = pytest.importorskip("parcomm.platform.mcast_tree")
    t = tree.validate(path(STUDY4))
    f = tmp_path / "t.json"
    f.write_text(json.dumps(path(STUDY4)))
    a = simulate(t, packets=200, rate_pps=1000, seed=1)
    b = simulate(str(f), packets=200, rate_pps=1000, seed=1)
    assert a.delay == b.delay


def test_bad_trees_and_parameters_raise_value_errors_naming_the_field():
    good = path([(0.001, 0.0, 1e9), (0.001, 0.0, 1e9)])
    bad = json.loads(json.dumps(good))
    bad["networks"][1]["loss"] = 1.0
    with pytest.raises(ValueError, match=r"networks\[1\].*loss"):
        simulate(bad)
    cyc = json.loads(json.dumps(good))
    cyc["nodes"].append({"name": "x", "kind": "router"})
    cyc["networks"].append({"name": "loop", "parent": "x", "child": "x2", "delay_s": 0, "loss": 0, "rate_bps": 1e9})
    with pytest.raises(ValueError):
        simulate(cyc)
    with pytest.raises(ValueError, match="window"):
        simulate(good, window=0)
    with pytest.raises(ValueError, match="rate_pps and rate_bps"):
        simulate(good, rate_pps=1, rate_bps=1)
    with pytest.raises(ValueError, match="repair"):
        simulate(good, repair="some")
    with pytest.raises(ValueError, match="pakets"):
        simulate(good, pakets=3)
