"""TCP stack profiles as data (platform/stacks/*.toml, parcomm.platform.stack)."""

from __future__ import annotations

import pytest
from parcomm.collectives import gather_linear
from parcomm.comm import run_sim
from parcomm.platform import loads, star
from parcomm.platform.atm import SOLARIS_2_5_1_TCP
from parcomm.platform.opteron import LINUX_2_6_11_TCP
from parcomm.platform.schema import LINUX_TCP, PlatformError, tcp_spec
from parcomm.platform.stack import STACKS, stack_fields, stack_info


def test_every_stack_is_a_valid_partial_tcp_table_with_its_sources():
    assert {"rfc", "linux", "linux-2.6.11", "solaris-2.5.1"} <= set(STACKS)
    for name in STACKS:
        info = stack_info(name)
        assert info["about"], name
        tcp_spec(stack=name)  # every value coerces and is in range
    assert tcp_spec(stack="rfc") == LINUX_TCP  # the simulator's default transport
    linux = stack_fields("linux")
    assert all(linux[k] for k in ("sack", "rack", "tail_loss_probe", "prr", "linux_rto", "timestamps", "frto"))
    old = stack_fields("linux-2.6.11")
    assert old["sack"] and not (old["rack"] or old["tail_loss_probe"] or old["prr"])  # TLP 3.10, RACK 4.4, PRR 3.2
    assert linux["cubic"] and linux["hystart"] and "hystart" not in stack_info("linux")["not_modelled"]


def test_the_period_builders_take_their_values_from_the_stack_files():
    # The builders' TCP before the files existed (the studies' numbers depend on them).
    assert (
        LINUX_2_6_11_TCP["rto_initial_s"],
        LINUX_2_6_11_TCP["initial_cwnd_segments"],
        LINUX_2_6_11_TCP["sndbuf_bytes"],
        LINUX_2_6_11_TCP["rcvbuf_bytes"],
    ) == (3.0, 3, 131072, 174760)
    assert not (LINUX_2_6_11_TCP["sack"] or LINUX_2_6_11_TCP["linux_rto"])
    assert (
        SOLARIS_2_5_1_TCP["rto_max_s"],
        SOLARIS_2_5_1_TCP["clock_granularity_s"],
        SOLARIS_2_5_1_TCP["initial_cwnd_segments"],
        SOLARIS_2_5_1_TCP["delayed_ack_timeout_s"],
    ) == (60.0, 0.01, 1, 0.05)
    for k, v in stack_fields("solaris-2.5.1").items():
        assert SOLARIS_2_5_1_TCP[k] == tcp_spec(**{k: v})[k]


def test_a_stack_is_used_by_name_and_overridden_field_by_field():
    p = star(2, tcp={"stack": "linux", "rto_min_s": "5ms"})
    t = p["hosts"][0]["tcp"]
    assert t["rack"] and t["timestamps"] and t["rto_min_s"] == 0.005 and t["clock_granularity_s"] == 0.004
    f = loads('builder = "star"\nn = 2\ntcp = { stack = "solaris-2.5.1", rto_max_s = "30s" }\n', "p.toml")
    assert f["hosts"][1]["tcp"]["rto_max_s"] == 30.0 and f["hosts"][1]["tcp"]["rto_initial_s"] == 3.0
    with pytest.raises(PlatformError, match="unknown stack 'bsd'.*linux"):
        star(2, tcp={"stack": "bsd"})
    with pytest.raises(PlatformError, match="tcp.stack must be a name"):
        star(2, tcp={"stack": 4})


def test_the_linux_stack_simulates_an_incast_with_fewer_timeouts_than_the_rfc_transport():
    def run(stack):
        # On an ideal wire: the stacks' mechanisms alone (with host noise both escape the lockstep)
        plat = star(9, rate_bps="100M", buffer="32KiB", tcp={"stack": stack, "delayed_ack": False}, timing_noise_s=0)
        return run_sim(gather_linear, plat, 9, seed=1, kwargs={"nbytes": 64 << 10}, eager_limit=1 << 20)

    rfc, linux = run("rfc"), run("linux")
    assert linux.host_totals()["timeouts"] < rfc.host_totals()["timeouts"]
    assert linux.time < rfc.time


def test_a_stacks_mechanisms_are_its_kernel_behaviour_not_the_experiments_sizes():
    from parcomm.platform.stack import MECHANISMS, stack_fields, stack_mechanisms

    linux = stack_mechanisms("linux")
    assert set(linux) <= set(MECHANISMS) and linux["rack"] and linux["linux_rto"]
    assert all(linux[k] == stack_fields("linux")[k] for k in linux)
    assert "rto_min_s" not in linux and "sndbuf_bytes" not in linux and "cubic" not in linux


def test_oguchis_simulated_twins_differ_only_in_the_stack_mechanisms():
    from parcomm.platform.stack import stack_mechanisms
    from parcomm.studies.oguchi import _emu_platform

    kernel, old, new = (_emu_platform(("fixed", 0.2), 1, t) for t in (None, "sack-tlp", "linux"))
    assert old["hosts"][0]["tcp"]["sack"] and old["hosts"][0]["tcp"]["tail_loss_probe"]
    assert not old["hosts"][0]["tcp"]["rack"]
    for h, k in zip(new["hosts"], kernel["hosts"]):
        assert {f: v for f, v in h["tcp"].items() if k["tcp"].get(f) != v} == {
            f: v for f, v in stack_mechanisms("linux").items() if k["tcp"].get(f) != v
        }
        assert h["tcp"]["rto_min_s"] == k["tcp"]["rto_min_s"]
