"""The simulator's physics seen from Python: TCP incast and RTO, the Alltoall
A/B inversion of seed 001, determinism, 802.3x flow control, and shared
CSMA/CD segments joined by a router (seed 002)."""

from __future__ import annotations

import pytest
from parcomm.collectives import alltoall_a, alltoall_b, gather_linear
from parcomm.comm import run_sim
from parcomm.platform import opteron_cluster, segments_router, set_rto, star

KiB = 1024
MiB = 1024 * KiB

# --- incast ----------------------------------------------------------------------------

INCAST_BLOCK = 256 * KiB


async def _incast(comm):
    await gather_linear(comm, None, root=0, nbytes=INCAST_BLOCK)


_incast_cache: dict = {}


def _incast_run(senders: int, rto_min_s: float | None, flow_control: bool = False):
    key = (senders, rto_min_s, flow_control)
    if key not in _incast_cache:
        plat = star(senders + 1, buffer="32KiB", flow_control=flow_control)
        if rto_min_s is not None:
            plat = set_rto(plat, rto_min_s=rto_min_s)
        _incast_cache[key] = run_sim(_incast, plat, seed=1)
    return _incast_cache[key]


def _goodput(senders: int, res) -> float:
    return senders * INCAST_BLOCK / res.time


def test_incast_collapses_with_200ms_rto_min():
    one = _incast_run(1, 0.2)
    many = _incast_run(16, 0.2)
    # one sender runs near line rate and loses nothing: 256 KiB take 2.2 ms on the wire, plus
    # about two round trips of slow start from IW10, each frame waiting 95 us on average in its
    # host (the default host timing noise, platform/defaults.py): ~0.74 Gbit/s
    assert _goodput(1, one) > 0.65 * 1e9 / 8
    assert one.host_totals()["timeouts"] == 0 and one.port_drops() == 0
    # sixteen overflow the 32 KiB port in front of the root and wait for 200 ms RTOs
    # (at least one 200 ms RTO on top of 34 ms of wire time: at most ~1/5 of one sender's goodput)
    assert _goodput(16, many) < 0.25 * _goodput(1, one)
    assert many.host_totals()["timeouts"] > 0
    assert many.port_drops() > 0
    assert many.time >= 0.2  # at least one full minimum RTO


def test_incast_recovers_with_1ms_rto_min():
    slow = _incast_run(16, 0.2)
    fast = _incast_run(16, 0.001)
    assert _goodput(16, fast) >= 3 * _goodput(16, slow)
    # the losses are still there; only the wait after them is shorter
    assert fast.host_totals()["timeouts"] > 0
    assert fast.port_drops() > 0


def test_incast_with_flow_control_has_no_drops():
    res = _incast_run(16, 0.2, flow_control=True)
    assert res.port_drops() == 0
    totals = res.host_totals()
    assert totals["timeouts"] == 0
    assert totals["bytes_retransmitted"] == 0
    # lossless backpressure keeps the root's link busy
    assert _goodput(16, res) > 0.8 * 1e9 / 8
    # the same incast without flow control drops packets
    assert _incast_run(16, 0.2).port_drops() > 0


# --- Alltoall A vs B on the Opteron cluster (seed 001) ---------------------------------

_OPTERON = {}


def _opteron_alltoall(algo: str, m: int):
    key = (algo, m)
    if key not in _OPTERON:
        if "platform" not in _OPTERON:
            _OPTERON["platform"] = opteron_cluster(64)
        prog = {"A": alltoall_a, "B": alltoall_b}[algo]
        _OPTERON[key] = run_sim(prog, _OPTERON["platform"], seed=1, kwargs={"nbytes": m})
    return _OPTERON[key]


def test_opteron_small_messages_a_is_faster_than_b():
    a = _opteron_alltoall("A", 1 * KiB)
    b = _opteron_alltoall("B", 1 * KiB)
    assert a.time < b.time
    assert a.host_totals()["timeouts"] == 0


@pytest.mark.parametrize("m", [256 * KiB, 1 * MiB])
def test_opteron_large_messages_b_is_faster_and_a_times_out(m):
    a = _opteron_alltoall("A", m)
    b = _opteron_alltoall("B", m)
    assert b.time < a.time
    assert a.host_totals()["timeouts"] > 0
    assert a.port_drops() > 0
    assert b.host_totals()["timeouts"] == 0
    # no algorithm beats the link: each rank sends 63 blocks at 1 Gbit/s
    assert b.time > 63 * m * 8 / 1e9


# --- determinism -----------------------------------------------------------------------


async def _lossy_alltoall(comm):
    return await alltoall_b(comm, [(comm.rank, d) for d in range(comm.size)], nbytes=1 * MiB)


def test_same_seed_same_result_with_random_loss():
    plat = star(4, loss=0.001)
    r1 = run_sim(_lossy_alltoall, plat, seed=7)
    r2 = run_sim(_lossy_alltoall, plat, seed=7)
    assert sum(r1.counters["ports"]["wire_losses"]) > 0, "the run must exercise the random loss"
    assert r1.host_totals()["bytes_retransmitted"] > 0
    assert r1.finish_times == r2.finish_times
    assert r1.counters == r2.counters
    assert r1.events == r2.events
    assert r1.results == r2.results == [[(s, d) for s in range(4)] for d in range(4)]


def test_different_seeds_give_different_results():
    plat = star(4, loss=0.001)
    r1 = run_sim(_lossy_alltoall, plat, seed=7)
    r3 = run_sim(_lossy_alltoall, plat, seed=8)
    assert r1.finish_times != r3.finish_times
    assert r1.counters["ports"]["wire_losses"] != r3.counters["ports"]["wire_losses"]
    # the data still arrives intact
    assert r3.results == [[(s, d) for s in range(4)] for d in range(4)]


# --- shared segments and the router (seed 002) -----------------------------------------


async def _pairs(comm, pairs, nbytes):
    reqs = []
    for src, dst in pairs:
        if comm.rank == src:
            reqs.append(comm.isend(("from", src), dst, nbytes=nbytes))
        if comm.rank == dst:
            reqs.append(comm.irecv(src))
    return await comm.waitall(reqs)


def test_segments_cross_segment_message_goes_through_the_router():
    plat = segments_router(2, 4)  # seg0: h0..h3, seg1: h4..h7, router r0 on both
    assert [s["members"] for s in plat["segments"]] == [["h0", "h1", "h2", "h3", "r0"], ["h4", "h5", "h6", "h7", "r0"]]
    cross = run_sim(_pairs, plat, seed=1, kwargs={"pairs": [(0, 4)], "nbytes": 16 * KiB})
    local = run_sim(_pairs, plat, seed=1, kwargs={"pairs": [(0, 1)], "nbytes": 16 * KiB})
    assert cross.results[4] == [("from", 0)]
    assert local.results[1] == [("from", 0)]
    # across segments: the router forwards and both segments carry frames
    assert cross.counters["routers"]["name"] == ["r0"]
    assert cross.counters["routers"]["forwarded"][0] > 0
    assert all(f > 0 for f in cross.counters["buses"]["frames"])
    # within a segment: the router and the other segment see nothing
    assert local.counters["routers"]["forwarded"][0] == 0
    assert local.counters["buses"]["frames"][1] == 0
    assert local.counters["buses"]["frames"][0] > 0
    assert cross.time > local.time


def test_segments_contention_and_collisions_on_one_segment():
    plat = segments_router(2, 4)
    m = 64 * KiB
    one = run_sim(_pairs, plat, seed=1, kwargs={"pairs": [(0, 1)], "nbytes": m})
    ring = [(0, 1), (1, 2), (2, 3), (3, 0)]  # four concurrent pairs, all on seg0
    four = run_sim(_pairs, plat, seed=1, kwargs={"pairs": ring, "nbytes": m})
    assert all(four.results[r] is not None for r in range(4))
    wire = m * 8 / 10e6  # one message on the 10 Mbit/s medium
    # the shared medium carries four times the bytes: at least ~3 more message times
    assert four.time > one.time + 2.5 * wire
    seg0 = 0
    assert four.counters["buses"]["collisions"][seg0] > 0
    assert four.counters["buses"]["collisions"][seg0] > one.counters["buses"]["collisions"][seg0]
    assert four.counters["buses"]["utilization"][seg0] > one.counters["buses"]["utilization"][seg0]
    assert four.counters["routers"]["forwarded"][0] == 0
