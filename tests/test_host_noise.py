"""Host timing noise (``HostSpec.timing_noise_s``): a measured property of a host, the default of
every platform (``platform/defaults.py``), deterministic per seed; noise 0 is the ideal wire."""

from __future__ import annotations

import parcomm.platform as pp
import pytest
from parcomm.conformance.workloads import sim_incast
from parcomm.platform.defaults import DEFAULT_STACK, DEFAULT_TIMING_NOISE_S, transport_label, transport_of


def _incast(spec: str, seed: int = 1):
    return sim_incast(pp.as_platform(spec), 8, 64 * 1024, seed=seed, time_limit_s=30)


def test_every_entry_point_gets_the_validated_default():
    from parcomm.platform.loader import loads

    star = pp.star(3)
    short = pp.as_platform("star:3")
    toml = loads('[[hosts]]\nname = "a"\n[[hosts]]\nname = "b"\n[[links]]\na = "a"\nb = "b"\nrate_bps = "1G"\n')
    fabric = pp.as_platform("fattree:4")
    for p in (star, short, toml, fabric):
        assert transport_of(p) == {"stack": DEFAULT_STACK, "noise": "host timing noise 190 us", "validated": True}
        assert all(h["timing_noise_s"] == DEFAULT_TIMING_NOISE_S for h in p["hosts"])


def test_the_short_form_names_the_stack_and_the_noise():
    assert transport_label(pp.as_platform("star:3,stack=rfc,noise=ideal")) == "stack rfc, ideal wire (unvalidated)"
    assert transport_of(pp.as_platform("star:3,noise=50us"))["noise"] == "host timing noise 50 us"
    with pytest.raises(ValueError, match="star: stack: unknown stack 'bsd'"):
        pp.as_platform("star:3,stack=bsd")
    with pytest.raises(ValueError, match="star: noise"):
        pp.as_platform("star:3,noise=loud")


def test_period_clusters_keep_their_stack_and_no_host_noise():
    for spec in ("atm:4", "segments:2x2", "opteron:4"):
        t = transport_of(pp.as_platform(spec))
        assert t["noise"] == "ideal wire" and not t["validated"], spec
    assert transport_of(pp.as_platform("atm:4"))["stack"] == "solaris-2.5.1"


def test_noise_zero_is_the_ideal_wire_and_noise_is_deterministic_per_seed():
    ideal = _incast("star:9,rate=100M,buffer=32KiB,rto_min=5ms,noise=0")
    noisy, again = (_incast("star:9,rate=100M,buffer=32KiB,rto_min=5ms") for _ in range(2))
    assert noisy.time == again.time and noisy.counters == again.counters
    assert noisy.counters != ideal.counters
    assert _incast("star:9,rate=100M,buffer=32KiB,rto_min=5ms", seed=2).counters != noisy.counters


def test_noise_desynchronises_the_senders_as_the_kernel_is():
    # docs/conformance-results.md: at 4 x 64 KiB into a 32 KiB port, rto_min 200 ms, the kernel
    # finishes in 22 ms without an RTO; on an ideal wire the simulated senders stay in lockstep.
    spec = "star:5,rate=100M,buffer=32KiB"
    ideal = sim_incast(pp.as_platform(spec + ",noise=0"), 4, 64 * 1024, seed=1)
    noisy = [sim_incast(pp.as_platform(spec), 4, 64 * 1024, seed=s) for s in (1, 2, 3)]
    assert ideal.time > 0.2
    assert sorted(r.time for r in noisy)[1] < 0.05


def test_host_noise_is_checked_with_the_field_named():
    p = pp.star(2)
    p["hosts"][1]["timing_noise_s"] = -1e-6
    with pytest.raises(pp.PlatformError, match=r"hosts\.h1\.timing_noise_s"):
        pp.validate(p)
    q = pp.star(2, framing="atm", timing_noise_s=0)
    q["hosts"][0]["timing_noise_s"] = 1e-4
    with pytest.raises(pp.PlatformError, match=r"hosts\.h0\.timing_noise_s: .*ATM"):
        pp.validate(q)
    toml = (
        '[[hosts]]\nname = "a"\n[[hosts]]\nname = "b"\n[[links]]\na = "a"\nb = "b"\nrate_bps = "1G"\nframing = "atm"\n'
    )
    assert transport_of(pp.loads(toml))["noise"] == "ideal wire"  # no default noise where it cannot apply
