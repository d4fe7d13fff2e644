"""Timing noise on links (``jitter_s``): the simulator's model of a referee whose
frames do not reach the switch exactly on an ideal wire's schedule
(benchmarks/emu_jitter.py measures it on the emulated cluster)."""

from __future__ import annotations

from dataclasses import replace

import parcomm.platform as pp
import pytest
from parcomm.conformance.matrix import load_matrix
from parcomm.conformance.runner import sim_side
from parcomm.conformance.workloads import sim_incast


def _incast(jitter: str, seed: int = 1):
    plat = pp.as_platform(f"star:9,rate=100M,buffer=32KiB,rto_min=5ms,noise=ideal,jitter={jitter}")
    return sim_incast(plat, 8, 64 * 1024, seed=seed, time_limit_s=30)


def test_no_jitter_is_the_ideal_wire_bit_for_bit():
    a = _incast("0s")
    b = sim_incast(
        pp.as_platform("star:9,rate=100M,buffer=32KiB,rto_min=5ms,noise=ideal"), 8, 64 * 1024, seed=1, time_limit_s=30
    )
    assert a.time == b.time and a.counters == b.counters


def test_jitter_changes_who_loses_and_is_deterministic():
    ideal, noisy, again = _incast("0s"), _incast("190us"), _incast("190us")
    assert noisy.time == again.time and noisy.counters == again.counters  # same seed, same run
    assert noisy.counters != ideal.counters  # the arrival order at the port moved
    assert _incast("190us", seed=2).counters != noisy.counters  # the noise follows the seed


def test_jitter_is_checked_with_the_field_named():
    plat = pp.as_platform("star:2,rate=100M")
    plat["links"][0]["jitter_s"] = -1e-6
    with pytest.raises(pp.PlatformError, match=r"links\[0\]\.jitter_s"):
        pp.validate(plat)
    plat["links"][0]["jitter_s"] = 1e-4
    plat["links"][0]["framing"] = "atm"
    with pytest.raises(pp.PlatformError, match="not ATM"):
        pp.validate(plat)
    with pytest.raises(ValueError, match="star: jitter: duration 'abc'"):
        pp.as_platform("star:2,jitter=abc")


def test_every_scenario_runs_on_the_referees_measured_noise():
    scenarios, _ = load_matrix()
    assert {sc.jitter_s for sc in scenarios} == {190e-6}  # matrix.toml [defaults] jitter
    sc = next(s for s in scenarios if s.name == "incast-8x64KiB-rto5ms-buf32KiB")
    # the hosts' timing noise (HostSpec.timing_noise_s), not the links'
    assert all(h["timing_noise_s"] == 190e-6 for h in sc.platform()["hosts"])
    assert all(ln["jitter_s"] == 0 for ln in sc.platform()["links"])
    ideal = replace(sc, jitter_s=0.0)
    assert sim_side(sc, "linux", seeds=[1]) != sim_side(ideal, "linux", seeds=[1])  # it reaches the simulator
