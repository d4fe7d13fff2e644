"""The one mapping from a TCP profile to every backend (``platform/tcp_backends.toml``).

Every ``TcpSpec`` field has a row; every ``route``/``sysctl`` row has the code that applies it
(``emu/tcpknobs.py``) and a test here that flipping the field flips the knob; every ``fixed``
row is reported when a platform asks the kernel for something else; and the emulated kernel
runs the congestion control the platform names.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from netns import needs_netns
from parcomm.emu.layout import HostPlan
from parcomm.emu.tcpknobs import ROUTE_KNOBS, SYSCTL_KNOBS, knobs_for
from parcomm.platform.fields import TCP_FIELDS
from parcomm.platform.schema import tcp_spec
from parcomm.platform.tcp_backends import backend_rows, kernel_mismatches

ROWS = backend_rows()


def _knobs(**tcp):
    h = HostPlan(0, "h0", "x", "10.0.0.1", "p0", 1e8, 1500, 1000, tcp_spec(**tcp))
    return knobs_for(h, have_rto_max=True, have_rto_min_us=True, kernel={"hystart": True})


def test_every_tcp_field_has_exactly_one_row():
    assert sorted(ROWS) == sorted(TCP_FIELDS), "a TcpSpec field without a row in tcp_backends.toml (or a stale row)"


def test_every_settable_row_has_its_knob_and_no_knob_lacks_a_row():
    settable = {k for k, r in ROWS.items() if r["kind"] in ("route", "sysctl")}
    assert set(ROUTE_KNOBS) == {k for k, r in ROWS.items() if r["kind"] == "route"}
    assert set(SYSCTL_KNOBS) == {k for k, r in ROWS.items() if r["kind"] == "sysctl"}
    assert set(ROUTE_KNOBS) | set(SYSCTL_KNOBS) == settable


# one test per settable row: the field's value reaches its knob ------------------------------

SYSCTL_CASES = {
    "sack": [({"sack": True}, "net.ipv4.tcp_sack", 1), ({"sack": False}, "net.ipv4.tcp_sack", 0)],
    "tail_loss_probe": [
        ({"tail_loss_probe": True}, "net.ipv4.tcp_early_retrans", 3),
        ({"tail_loss_probe": False}, "net.ipv4.tcp_early_retrans", 0),
    ],
    "cwnd_restart_after_idle": [
        ({"cwnd_restart_after_idle": True}, "net.ipv4.tcp_slow_start_after_idle", 1),
        ({"cwnd_restart_after_idle": False}, "net.ipv4.tcp_slow_start_after_idle", 0),
    ],
    "timestamps": [
        ({"timestamps": True}, "net.ipv4.tcp_timestamps", 1),
        ({"timestamps": False}, "net.ipv4.tcp_timestamps", 0),
    ],
    "rack": [({"rack": True}, "net.ipv4.tcp_recovery", 1), ({"rack": False}, "net.ipv4.tcp_recovery", 0)],
    "cubic": [
        ({"cubic": True}, "net.ipv4.tcp_congestion_control", "cubic"),
        ({"cubic": False}, "net.ipv4.tcp_congestion_control", "reno"),
    ],
    "frto": [({"frto": True}, "net.ipv4.tcp_frto", 2), ({"frto": False}, "net.ipv4.tcp_frto", 0)],
    "congestion_control": [
        ({"stack": "linux", "congestion_control": "reno"}, "net.ipv4.tcp_congestion_control", "reno"),
        ({"stack": "rfc", "congestion_control": "cubic"}, "net.ipv4.tcp_congestion_control", "cubic"),
    ],
    "loss_detection": [
        ({"stack": "rfc", "loss_detection": "sack"}, "net.ipv4.tcp_sack", 1),
        ({"stack": "rfc", "loss_detection": "rack"}, "net.ipv4.tcp_recovery", 1),
        ({"stack": "linux", "loss_detection": "dupack", "recovery_rate": "rfc6675"}, "net.ipv4.tcp_sack", 0),
    ],
    "dupack_threshold": [({"dupack_threshold": 5}, "net.ipv4.tcp_reordering", 5)],
    "rto_max_s": [({"rto_max_s": 60.0}, "net.ipv4.tcp_rto_max_ms", 60000)],
    "sndbuf_bytes": [
        ({"sndbuf_bytes": 1 << 20, "sndbuf_initial_bytes": 0}, "net.ipv4.tcp_wmem", "4096 1048576 1048576")
    ],
    "sndbuf_initial_bytes": [
        ({"sndbuf_bytes": 1 << 20, "sndbuf_initial_bytes": 16384}, "net.ipv4.tcp_wmem", "4096 16384 1048576")
    ],
    "rcvbuf_bytes": [({"rcvbuf_bytes": 1 << 18}, "net.ipv4.tcp_rmem", "4096 262144 262144")],
}


@pytest.mark.parametrize("field", sorted(k for k, r in ROWS.items() if r["kind"] == "sysctl"))
def test_sysctl_row_reaches_the_kernel(field):
    assert field in SYSCTL_CASES, f"no test case for the sysctl row {field}"
    for tcp, key, value in SYSCTL_CASES[field]:
        assert _knobs(**tcp).sysctls[key] == value, (field, tcp)


ROUTE_CASES = {
    "rto_min_s": [({"rto_min_s": 0.005}, "rto_min 5ms")],
    "initial_cwnd_segments": [({"initial_cwnd_segments": 4}, "initcwnd 4")],
    "delayed_ack": [({"delayed_ack": False}, "quickack 1")],
}


@pytest.mark.parametrize("field", sorted(k for k, r in ROWS.items() if r["kind"] == "route"))
def test_route_row_reaches_the_kernel(field):
    assert field in ROUTE_CASES, f"no test case for the route row {field}"
    for tcp, metric in ROUTE_CASES[field]:
        assert metric in _knobs(**tcp).route_metrics, (field, tcp)
    if field == "delayed_ack":  # on: the kernel's own delayed ACKs, no quickack metric
        assert "quickack 1" not in _knobs(delayed_ack=True).route_metrics
    if field == "rto_min_s":
        assert _knobs(rto_min_s=0.005).sysctls["net.ipv4.tcp_rto_min_us"] == 5000


@pytest.mark.parametrize("field", sorted(k for k, r in ROWS.items() if r["kind"] in ("fixed", "global")))
def test_fixed_row_is_reported_when_the_platform_asks_otherwise(field):
    row = ROWS[field]
    base = tcp_spec(stack="linux", delayed_ack=True)  # hystart and quickack count only with cubic / delayed ACKs
    assert kernel_mismatches(base, {"hystart": True}) == []  # the linux stack is what the kernel does
    if isinstance(row["kernel"], bool):
        other = not row["kernel"]
    elif isinstance(row["kernel"], str):  # a named slot: the other name
        other = {"prr": "rfc6675", "linux": "rfc6298"}[row["kernel"]]
    else:
        other = row["kernel"] * 2 + 0.001
    bent = kernel_mismatches({**base, field: other}, {"hystart": True})
    assert len(bent) == 1 and bent[0].startswith(f"tcp.{field} ="), bent
    assert any(
        m.startswith(f"tcp.{field} =")
        for m in _knobs(**{"stack": "linux", "delayed_ack": True, field: other}).mismatches
    )


def test_the_rfc_stack_is_not_what_the_kernel_runs_and_says_so():
    bent = {m.split(" =")[0] for m in _knobs(stack="rfc").mismatches}
    assert {"tcp.linux_rto", "tcp.prr", "tcp.clock_granularity_s"} <= bent


def test_every_row_names_its_source():
    for name, row in ROWS.items():
        assert row["source"] and row["simulator"] and row["linux"], name


# the kernel runs what the platform names -----------------------------------------------------


def _cc_in(netns: str) -> str:
    from parcomm.emu.netns import in_netns

    def read() -> str:
        with open("/proc/sys/net/ipv4/tcp_congestion_control") as f:
            return f.read().strip()

    return in_netns(netns, read)


@needs_netns
@pytest.mark.skipif(
    "cubic" not in Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    if os.path.exists("/proc/sys/net/ipv4/tcp_available_congestion_control")
    else True,
    reason="this kernel has no CUBIC",
)
@pytest.mark.parametrize("stack,cc", [("linux", "cubic"), ("rfc", "reno")])
def test_the_emulated_kernel_runs_the_congestion_control_the_platform_names(stack, cc):
    from parcomm.emu import EmuCluster
    from parcomm.emu.tcpknobs import ALLOWED_CC
    from parcomm.platform import as_platform

    allowed_before = Path(ALLOWED_CC).read_text()
    with EmuCluster(as_platform(f"star:2,rate=100M,stack={stack}")) as cl:
        assert [_cc_in(h.netns) for h in cl.layout.hosts] == [cc, cc]
        res = cl.incast_raw(64 * 1024, 1)
        assert res.time > 0
    assert Path(ALLOWED_CC).read_text() == allowed_before  # the machine's list is as it was
