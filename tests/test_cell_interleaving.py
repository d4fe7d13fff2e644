"""Cell interleaving at the ATM switch (``atm_cluster(..., cell_interleaving=True)``).

A cell switch interleaves the cells of frames arriving together from many
hosts; once an output port's 2048 cells are full, every frame still arriving
loses cells and fails the receiver's AAL5 check (the TCP-over-ATM collapse of
Romanow & Floyd 1995). The store-and-forward model (the default) admits about
ten whole frames of such a burst and refuses the rest. Off, every result is
what it was before the option existed.
"""

from __future__ import annotations

import json

import pytest
from parcomm import _core
from parcomm import platform as pp
from parcomm.comm import run_sim

SEGMENT = 9140  # one 9180-byte IP packet, 192 cells


def incast(n, nbytes, *, rto=None, seed=0, until_s=None, **options):
    """Hosts 1..n-1 each send ``nbytes`` to host 0 at t = 0 on ``atm_cluster(n)``.

    Returns (arrival times in ns, counters), run to the last arrival or to ``until_s``.
    """
    plat = pp.atm_cluster(n, **options)
    if rto:
        plat = pp.apply_rto(plat, *rto)
    sim = _core.Simulation(json.dumps(plat), seed)
    ops = {sim.send(i, 0, nbytes) for i in range(1, n)}
    if until_s is not None:
        sim.run_until(until_s)
        return [], sim.counters()
    arrived = []
    while len(arrived) < len(ops):
        done = sim.run_until_completion(600.0)
        assert done, "the simulation ran dry"
        arrived += [t for op, kind, _, t in done if kind == "arrived" and op in ops]
    return arrived, sim.counters()


def to_h0(counters):
    ports = counters["ports"]
    i = ports["name"].index("sw0->h0")
    return {k: ports[k][i] for k in ("drops", "cell_drops", "max_occupancy")}


def totals(counters, key):
    return sum(counters["hosts"][key])


# --- off: bit-identical ------------------------------------------------------


def test_off_is_the_run_it_was_before_the_option():
    # Recorded on the unmodified core (commit 7928530), store-and-forward:
    # 16 hosts send 64 KiB each to h0 at once.
    arrived, c = incast(17, 65536)
    assert max(arrived) == 710_301_525
    assert c["events"] == 1115
    assert to_h0(c) == {"drops": 36, "cell_drops": 5798, "max_occupancy": 2048}
    assert (totals(c, "timeouts"), totals(c, "corrupt_discards")) == (22, 5)
    assert pp.atm_cluster(4)["switches"][0]["cell_interleaving"] is False
    explicit = incast(17, 65536, cell_interleaving=False)
    assert (explicit[0], explicit[1]) == (arrived, c)


def test_off_with_early_packet_discard_is_unchanged():
    # Also recorded on the unmodified core: EPD refuses whole frames.
    arrived, c = incast(33, 20000, early_packet_discard=True)
    assert max(arrived) == 1_453_429_386
    assert (to_h0(c)["drops"], to_h0(c)["cell_drops"]) == (36, 6912)
    assert (totals(c, "timeouts"), totals(c, "corrupt_discards")) == (36, 0)


# --- on: the collapse ------------------------------------------------------------


def test_a_synchronized_burst_corrupts_every_frame():
    # 32 hosts, one 192-cell frame each, before any timeout fires.
    _, sf = incast(33, SEGMENT, until_s=0.1)
    _, ci = incast(33, SEGMENT, until_s=0.1, cell_interleaving=True)
    # Store-and-forward: 10 whole frames, the 11th truncated, 21 refused.
    assert to_h0(sf)["drops"] == 22 and totals(sf, "corrupt_discards") == 1
    # Cells: 32*192 arrive while 192 leave; 31*192 - 2048 = 3904 overflow,
    # 122 cells from every frame, so all 32 fail AAL5 at h0.
    assert to_h0(ci) == {"drops": 32, "cell_drops": 32 * 122, "max_occupancy": 2048}
    assert totals(ci, "corrupt_discards") == 32


def test_tcp_recovers_all_bytes_through_a_cell_switch():
    # Per-node random RTOs (seed 000 §5.2) desynchronize the retransmissions;
    # with one fixed RTO every retry of a burst collides again.
    runs = {ci: incast(33, 65536, rto=("random_min", 0.25, 1), cell_interleaving=ci) for ci in (False, True)}
    for ci, (arrived, c) in runs.items():
        assert len(arrived) == 32, ci
        # Every byte was delivered; what was sent beyond 64 KiB per host was retransmission.
        assert totals(c, "bytes_sent") - totals(c, "bytes_retransmitted") == 32 * 65536
    sf, ci = runs[False][1], runs[True][1]
    # Store-and-forward mostly refuses whole frames; a cell switch carries them corrupt.
    assert totals(ci, "corrupt_discards") > 5 * totals(sf, "corrupt_discards")
    assert totals(ci, "corrupt_discards") == to_h0(ci)["drops"]
    assert totals(ci, "timeouts") > 0


async def gather(comm, nbytes):
    if comm.rank == 0:
        await comm.waitall([comm.irecv(source=s) for s in range(1, comm.size)])
    else:
        await comm.send(None, dest=0, nbytes=nbytes)


def test_a_gather_through_a_cell_switch_loses_every_first_frame_and_completes():
    # 32 ranks send two segments (eager) to rank 0 with cwnd 1: the first
    # frames form one synchronized burst.
    def run(ci):
        plat = pp.apply_rto(pp.atm_cluster(33, cell_interleaving=ci), "random_min", 0.25, 3)
        return run_sim(gather, plat, 33, seed=2, kwargs={"nbytes": 2 * SEGMENT})

    sf, ci = run(False), run(True)
    assert totals(sf.counters, "corrupt_discards") == 1
    assert totals(ci.counters, "corrupt_discards") == 32 == ci.host_totals()["timeouts"]
    assert len(ci.finish_times) == 33 and ci.time > 0.25  # every rank done, after an RTO
    again = run(True)
    assert (again.time, again.counters) == (ci.time, ci.counters)


def test_cell_interleaving_is_deterministic():
    a = incast(20, 4 * SEGMENT, rto=("random_min", 0.25, 4), cell_interleaving=True)
    b = incast(20, 4 * SEGMENT, rto=("random_min", 0.25, 4), cell_interleaving=True)
    assert a == b


# --- platform schema ---------------------------------------------------------------


def test_cell_interleaving_needs_a_cell_buffer():
    p = pp.star(2)
    p["switches"][0]["cell_interleaving"] = True
    with pytest.raises(pp.PlatformError, match=r"switches\.sw0\.cell_interleaving needs buffer\.unit"):
        pp.validate(p)
    with pytest.raises(ValueError, match="cell_interleaving"):
        _core.Simulation(json.dumps(p), 0)


def test_cell_interleaving_excludes_flow_control():
    p = pp.atm_cluster(2, cell_interleaving=True)
    p["switches"][0]["flow_control"] = True
    with pytest.raises(pp.PlatformError, match=r"switches\.sw0\.cell_interleaving.*flow_control"):
        pp.validate(p)


def test_cell_interleaving_must_be_a_bool():
    p = pp.atm_cluster(2)
    p["switches"][0]["cell_interleaving"] = "yes"
    with pytest.raises(pp.PlatformError, match="cell_interleaving"):
        pp.validate(p)


def test_short_form_and_toml_accept_cell_interleaving(tmp_path):
    assert pp.from_spec_string("atm:8,cells=on") == pp.atm_cluster(8, cell_interleaving=True)
    f = tmp_path / "atm.toml"
    f.write_text('builder = "atm_cluster"\nn = 4\ncell_interleaving = true\n')
    assert pp.load(f)["switches"][0]["cell_interleaving"] is True
    g = tmp_path / "sw.toml"
    g.write_text(
        '[[hosts]]\nname = "a"\n[[switches]]\nname = "sw"\nbuffer = { size = 2048, unit = "cells" }\n'
        'cell_interleaving = true\n[[links]]\na = "a"\nb = "sw"\nrate_bps = "149.76M"\nframing = "atm"\n'
    )
    assert pp.load(g)["switches"][0]["cell_interleaving"] is True
