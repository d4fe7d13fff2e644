"""One Result type for the four ways (issue 20): one meaning of host_totals(), and compare()."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from parcomm.comm import run_local, run_sim
from parcomm.result import HOST_COLUMNS, Result, compare


async def _ping(comm, nbytes=20000):
    if comm.rank == 0:
        await comm.send(b"x", dest=1, nbytes=nbytes)
    else:
        return await comm.recv(source=0)


def _hosts(**cols):
    return {"hosts": {"name": ["h0", "h1"], **cols}, "ports": {"drops": [1, None, 2]}}


def test_host_totals_sums_each_column_and_none_means_not_measured():
    full = {k: [1, 2] for k in HOST_COLUMNS}
    r = Result(way="emu", finish_times=[0.5, 1.0], results=[None, None], counters=_hosts(**full), wall_s=1.0)
    assert r.host_totals() == {k: 3 for k in HOST_COLUMNS}
    assert r.time == 1.0 and r.backend == "emu"
    assert r.port_drops() == 3  # a port whose drops were not measured adds none
    partly = {**full, "bytes_sent": [None, 5]}
    del partly["fast_retransmits"]
    r = Result(way="emu", finish_times=[1.0], results=[None], counters=_hosts(**partly), wall_s=1.0)
    tot = r.host_totals()
    assert tot["bytes_sent"] is None and tot["fast_retransmits"] is None and tot["timeouts"] == 3
    assert list(tot) == list(HOST_COLUMNS)  # the same keys whatever was measured


def test_a_result_names_one_of_the_four_ways():
    with pytest.raises(ValueError, match="way must be one of"):
        Result(way="emulated", finish_times=[], results=[], counters={}, wall_s=0.0)
    assert Result(way="model", finish_times=[], results=[], counters={}, wall_s=0.0).time == 0.0


def test_the_simulator_returns_a_result():
    res = run_sim(_ping, "star:2", seed=1)
    assert type(res) is Result and res.way == "sim" and res.backend == "sim" and res.seed == 1
    assert res.events and res.events > 0
    tot = res.host_totals()
    assert list(tot) == list(HOST_COLUMNS) and all(isinstance(v, int) for v in tot.values())
    assert tot["bytes_sent"] >= 20000


@dataclass
class _Rank:
    rank: int
    result: object
    start_s: float
    finish_s: float
    elapsed_s: float
    trace: list | None = None


def test_from_ranks_counts_from_the_earliest_start_and_sums_the_measured_columns():
    ranks = [_Rank(0, "a", 10.0, 10.5, 0.5), _Rank(1, "b", 10.25, 11.0, 0.75)]
    counters = {"hosts": {"name": ["rank0", "rank1"], "bytes_sent": [3, 4], "segments_sent": [1, 1]}}
    r = Result.from_ranks(ranks, backend="socket", wall_s=2.0, counters=counters, platform="local:2")
    assert r.way == "run" and r.backend == "socket" and r.finish_times == [0.5, 1.0]
    assert r.results == ["a", "b"] and r.extra["start_s"] == [10.0, 10.25]
    assert r.host_totals() == {"bytes_sent": 7, "segments_sent": 2}  # what TCP_INFO gave
    assert Result.from_ranks(ranks, backend="mpi", wall_s=1.0).host_totals() == {}


def test_a_real_run_returns_a_result():
    res = run_local(_ping, 2, timeout=60)
    assert type(res) is Result and res.way == "run" and res.backend == "socket"
    assert res.results[1] == b"x" and res.time > 0


def _run(way, time, retx, timeouts=0, drops=0):
    hosts = {k: [0] for k in HOST_COLUMNS}
    hosts["segments_retransmitted"] = [retx]
    hosts["timeouts"] = [timeouts]
    return Result(
        way=way, finish_times=[time], results=[None], counters={"hosts": hosts, "ports": {"drops": [drops]}}, wall_s=0
    )


def test_compare_keeps_every_runs_figures_beside_the_medians():
    c = compare([_run("emu", 3.0, 5, 2, 1), _run("emu", 1.0, 6, 0, 4)])
    s = c["emu"]
    assert s.times_s == [3.0, 1.0] and s.port_drops_s == [1, 4] and s.port_drops == 2.5
    assert [t["segments_retransmitted"] for t in s.host_totals_s] == [5, 6]
    assert set(c.rows()["emu"]) == {"time_s", "times_s", "segments_retransmitted", "timeouts", "port_drops"}


def test_compare_summarizes_each_way_and_the_ratio():
    c = compare([_run("emu", 3.0, 5), _run("sim", 2.0, 4, 1, 7), _run("emu", 1.0, 6), _run("emu", 2.0, None)])
    assert list(c.ways) == ["sim", "emu"]  # the order of WAYS, not of the input
    assert c.rows()["sim"] == {"time_s": 2.0, "segments_retransmitted": 4, "timeouts": 1, "port_drops": 7}
    emu = c.rows()["emu"]
    assert emu["time_s"] == 2.0 and emu["times_s"] == [3.0, 1.0, 2.0]
    assert emu["segments_retransmitted"] is None  # one run did not measure it
    assert emu["timeouts"] == 0 and emu["port_drops"] == 0
    assert c.ratio("emu", to="sim") == 1.0 and c.ratio("run", to="sim") is None
    assert compare([_run("emu", 1.0, 0), _run("sim", 0.0, 0)]).ratio("emu", to="sim") is None
    # a deterministic way run once lists no spread; repeated, it does
    assert "times_s" in compare([_run("sim", 1.0, 0), _run("sim", 2.0, 0)]).rows()["sim"]
    with pytest.raises(ValueError):
        compare([])
