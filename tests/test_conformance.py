"""The conformance suite (parcomm.conformance, `parcomm conformance`).

Matrix checking, profiles, the simulator side, summaries and the samplers'
parsers need nothing special. The emulated runs need root and network
namespaces and are skipped with the reason otherwise; every address they
use lives only inside namespaces the suite creates.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading

import pytest
from netns import needs_netns  # noqa: E402
from parcomm.conformance import MatrixError, load_matrix, parse_matrix, profile_overrides, summarize
from parcomm.conformance.runner import sim_side, spread
from parcomm.conformance.workloads import sim_incast
from parcomm.emu.ktrace import available as trace_unavailable
from parcomm.emu.ktrace import parse_trace
from parcomm.emu.sockdiag import _dump, parse_dump


def _cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "parcomm", "conformance", *args], capture_output=True, text=True, timeout=timeout
    )


# --------------------------------------------------------------------------- the matrix


def test_default_matrix_covers_what_the_suite_promises():
    scenarios, quick = load_matrix()
    names = {s.name for s in scenarios}
    assert len(scenarios) >= 24
    incast = [s for s in scenarios if s.name.startswith("incast-") and s.name.count("-") == 3]
    got = {(s.senders, s.tcp["rto_min_s"], s.buffer["size"]) for s in incast}
    want = {(n, r, b) for n in (1, 2, 4, 8, 16, 32) for r in (0.2, 0.005, 0.001) for b in (32 << 10, 128 << 10)}
    assert want <= got
    programs = {s.program for s in scenarios if s.workload == "program"}
    assert {"parcomm.collectives:alltoall_a", "parcomm.collectives:alltoall_b"} <= programs
    assert any("pass_end" in p for p in programs) and any("barriers" in p for p in programs)
    assert any(s.rates_bps for s in scenarios), "a many-to-one with a slow receiver"
    assert any(s.workload == "incast" and s.senders == 1 and s.size >= 1 << 20 for s in scenarios), "a bulk flow"
    assert quick and set(quick) <= names


def _doc(**scenario):
    base = {"name": "x", "workload": "incast", "hosts": 3, "senders": 2}
    base.update(scenario)
    return {"scenario": [base]}


@pytest.mark.parametrize(
    "patch, needle",
    [
        ({"colour": 1}, "unknown key 'colour'"),
        ({"senders": 3}, "senders: 3 is out of range 1..2"),
        ({"size": "lots"}, "size"),
        ({"tcp": {"rto_min": "0.1ms"}}, "rto_min"),
        ({"tcp": {"rto_max": "500s"}}, "rto_max"),
        ({"tcp": {"nagle": True}}, "unknown key 'nagle'"),
        ({"buffer": "100 cells"}, "byte or packet buffers"),
        ({"rate": "10G"}, "more than the emulation sustains"),
        ({"rates": {"h7": "10M"}}, "'h7' is not a host"),
        ({"senders": [1, 2]}, "must contain {senders}"),
        ({"workload": "program", "senders": None}, "program"),
        ({"repeat": 0}, "repeat: 0 is out of range"),
    ],
)
def test_matrix_errors_name_the_scenario_and_field(patch, needle):
    doc = _doc(**{k: v for k, v in patch.items() if v is not None})
    if patch.get("senders", 0) is None:
        del doc["scenario"][0]["senders"]
    with pytest.raises(MatrixError) as e:
        parse_matrix(doc, "m.toml")
    assert needle in str(e.value)
    assert "m.toml" in str(e.value)


def test_sweeps_expand_into_named_scenarios_and_duplicates_are_refused():
    sc, _ = parse_matrix(_doc(name="i-{senders}-{rto_min}", senders=[1, 2], tcp={"rto_min": ["5ms", "1ms"]}))
    assert [s.name for s in sc] == ["i-1-5ms", "i-1-1ms", "i-2-5ms", "i-2-1ms"]
    assert [s.tcp["rto_min_s"] for s in sc] == [0.005, 0.001, 0.005, 0.001]
    with pytest.raises(MatrixError, match="two scenarios are named 'x'"):
        parse_matrix({"scenario": [_doc()["scenario"][0]] * 2})
    with pytest.raises(MatrixError, match="no scenario is named 'y'"):
        parse_matrix({**_doc(), "quick": ["y"]})


def test_scenario_platform_gives_both_sides_the_same_tcp_and_the_slow_link():
    sc, _ = parse_matrix(_doc(tcp={"rto_min": "5ms", "delayed_ack": True, "initial_window": 4}, rates={"h0": "20M"}))
    plat = sc[0].platform()
    tcp = plat["hosts"][0]["tcp"]
    assert (tcp["rto_min_s"], tcp["delayed_ack"], tcp["initial_cwnd_segments"], tcp["sack"]) == (0.005, True, 4, True)
    rates = {ln["a"]: ln["rate_bps"] for ln in plat["links"]}
    assert rates == {"h0": 20e6, "h1": 100e6, "h2": 100e6}


def test_profiles():
    assert profile_overrides("rfc", True) == {"stack": "rfc", "sack": False, "tail_loss_probe": False}
    assert profile_overrides("sack-tlp", True) == {"stack": "rfc", "sack": True, "tail_loss_probe": True}
    assert profile_overrides("stock", True) == {}  # what every entry point runs, the scenario's settings over it
    # Linux's own rule: no loss probes, RACK or PRR without SACK (tcp_schedule_loss_probe(), tcp_is_sack())
    assert profile_overrides("stock", False) == {"rack": False, "tail_loss_probe": False, "prr": False}
    assert profile_overrides("sack-tlp", False)["sack"] is False  # the kernel has SACK off: so does the peer
    with pytest.raises(ValueError, match="unknown simulator profile"):
        profile_overrides("cubic", True)


def test_a_scenario_gives_both_sides_the_stack_it_names():
    from parcomm.conformance.matrix import RENO_FIXED_BUFFERS
    from parcomm.platform.defaults import transport_of

    sc, _ = parse_matrix(_doc(jitter="190us", tcp={"stock": True, "delayed_ack": True}))
    plat = sc[0].platform()
    t = plat["hosts"][0]["tcp"]
    assert t["cubic"] and t["hystart"] and t["sndbuf_initial_bytes"] > 0 and t["delayed_ack"]
    assert transport_of(plat) == {"stack": "linux", "noise": "host timing noise 190 us", "validated": True}
    assert plat["hosts"][0]["timing_noise_s"] == 190e-6 and all(ln["jitter_s"] == 0 for ln in plat["links"])
    reno, _ = parse_matrix(_doc())  # rows without stock: Reno with fixed buffers, as the kernel ran them
    t = reno[0].platform()["hosts"][0]["tcp"]
    assert all(t[k] == v for k, v in RENO_FIXED_BUFFERS.items()) and "stock" not in reno[0].tcp


def test_rto_incidence_is_the_share_of_runs_with_a_timeout():
    from parcomm.conformance.summary import incidence_agrees, rto_incidence

    side = {"runs": [{"timeouts": 0}, {"timeouts": 3}, {"timeouts": 1}, {"timeouts": 0}]}
    assert rto_incidence(side) == 0.5 and rto_incidence({"runs": []}) is None
    assert incidence_agrees(0.5, 0.7) and not incidence_agrees(0.5, 0.8) and incidence_agrees(None, 1.0) is None


# --------------------------------------------------------------------------- the simulator side


def test_a_lone_flow_takes_its_serialization_time_and_the_simulator_is_deterministic():
    sc, _ = parse_matrix(_doc(senders=1, size="64KiB"))
    side = sim_side(sc[0], "rfc", [1, 2])
    # 64 KiB in 45 segments of 1460 B, 1538 B on the wire each (Ethernet), at 100 Mbit/s: 5.5 ms, plus one ACK.
    wire = 45 * 1538 * 8 / 100e6
    assert wire <= side["median_s"] <= wire * 1.05
    assert side["times_s"][0] == side["times_s"][1] and side["counters"]["timeouts"] == 0
    assert sim_side(sc[0], "rfc", [1, 2]) == side


def test_incast_on_the_core_matches_the_stream_trace():
    sc, _ = parse_matrix(_doc(hosts=9, senders=8, buffer="32KiB"))
    r = sim_incast(sc[0].platform(), 8, 64 << 10, trace=True)
    timeouts = sum(r.counters["hosts"]["timeouts"])
    assert timeouts > 0, "8 x 64 KiB into a 32 KiB port at rto_min 200 ms times out in today's simulator"
    last = {}
    for s, n in zip(r.trace["src"], r.trace["timeouts"]):
        last[s] = n
    assert sum(last.values()) == timeouts
    assert sorted(set(r.trace["src"])) == list(range(1, 9))


def test_summary_excludes_noisy_scenarios_and_counts_shares():
    def row(name, emu, sim, noisy=False, rto=(0, 0)):
        return {
            "name": name,
            "emu": {"median_s": emu, "counters": {"timeouts": rto[0]}},
            "noisy": noisy,
            "sim": {"p": {"median_s": sim, "error": sim / emu - 1, "counters": {"timeouts": rto[1]}}},
        }

    rows = [
        row("a", 1.0, 1.05, rto=(1, 3)),
        row("b", 1.0, 1.2, rto=(10, 13)),
        row("c", 1.0, 3.0, rto=(10, 2)),
        row("d", 1.0, 9.0, noisy=True),
    ]
    s = summarize(rows, "p")
    assert s["decided"] == 3 and s["noisy"] == 1
    assert s["median_abs_error"] == pytest.approx(0.2)
    assert s["within_10pct"] == pytest.approx(1 / 3) and s["within_25pct"] == pytest.approx(2 / 3)
    assert s["largest"][0]["name"] == "c"
    assert s["timeouts_agree"] == pytest.approx(2 / 3)  # 1 vs 3 (within 2), 10 vs 13 (30 %); not 10 vs 2
    assert spread([1.0, 1.5, 2.0]) == pytest.approx(0.5 / 1.5) and spread([1.0]) is None
    # One outlier in five (an RTO the other runs escaped) moves the range, not the middle half.
    assert spread([0.02, 0.021, 0.022, 0.023, 0.22]) == pytest.approx(0.002 / 0.022)


# --------------------------------------------------------------------------- kernel samplers


def test_sock_diag_sees_a_loopback_connection_with_its_tcp_info():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    port = srv.getsockname()[1]
    got = []
    t = threading.Thread(target=lambda: got.append(srv.accept()), daemon=True)
    t.start()
    c = socket.create_connection(("127.0.0.1", port))
    t.join(5)
    c.sendall(b"x" * 100_000)
    nl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 4)
    nl.settimeout(2)
    try:
        mine = [r for r in _dump(nl, 1) if r["dport"] == port and r["sport"] == c.getsockname()[1]]
    finally:
        nl.close()
        c.close()
        got[0][0].close()
        srv.close()
    assert len(mine) == 1
    assert mine[0]["cwnd"] >= 1 and mine[0]["rto_us"] >= 200_000 and mine[0]["bytes_acked"] > 0
    assert parse_dump(b"") == ([], False) and parse_dump(b"\x00" * 7) == ([], False)


def test_trace_text_is_parsed_and_other_machines_flows_are_left_out():
    text = "\n".join(
        [
            "# tracer: nop",
            "  python3-1 [001] ..s2.  10.500000: tcp_retransmit_skb: skbaddr=0 skaddr=0 family=AF_INET sport=4000 "
            "dport=17000 saddr=10.213.0.2 daddr=10.213.0.1 saddrv6=::ffff:10.213.0.2 daddrv6=::ffff:10.213.0.1 "
            "state=TCP_ESTABLISHED err=0",
            "  python3-1 [001] ..s2.  10.600000: tcp_cong_state_set: family=AF_INET sport=4000 dport=17000 "
            "saddr=10.213.0.2 daddr=10.213.0.1 saddrv6=x daddrv6=y cong_state=4",
            "  other-2 [000] ..s2.  10.700000: tcp_retransmit_skb: skbaddr=0 skaddr=0 family=AF_INET sport=1 dport=2 "
            "saddr=127.0.0.1 daddr=127.0.0.1 saddrv6=x daddrv6=y state=TCP_ESTABLISHED err=0",
            "garbage line",
        ]
    )
    r = parse_trace(text, keep={"10.213.0.2"})
    assert [x["t"] for x in r.retransmits] == [10.5]
    assert r.states == [
        {"t": 10.6, "src": "10.213.0.2", "sport": 4000, "dst": "10.213.0.1", "dport": 17000, "state": "loss"}
    ]


# --------------------------------------------------------------------------- the command


def test_cli_lists_and_refuses_bad_input_clearly(tmp_path):
    p = _cli("--list")
    assert p.returncode == 0 and "incast-32x64KiB-rto1ms-buf128KiB" in p.stdout
    p = _cli("--only", "nothing-*", "--backends", "sim")
    assert p.returncode == 2 and "no scenario matches nothing-*" in p.stderr and "Traceback" not in p.stderr
    bad = tmp_path / "m.toml"
    bad.write_text('[[scenario]]\nname = "a"\nworkload = "incast"\nhosts = 3\nsenders = 2\nsize = "12 parsecs"\n')
    p = _cli(str(bad), "--backends", "sim")
    assert p.returncode == 2 and "scenario 'a'.size" in p.stderr and "Traceback" not in p.stderr
    p = _cli("--profile", "cubic", "--backends", "sim")
    assert p.returncode == 2 and "unknown profile 'cubic'" in p.stderr


def test_cli_simulator_only_writes_strict_json(tmp_path):
    out = tmp_path / "c.json"
    rep = tmp_path / "results"
    p = _cli(
        "--only",
        "incast-*-rto200ms-buf32KiB",
        "--backends",
        "sim",
        "--repeat",
        "1",
        "--out",
        str(out),
        "--json",
        "--report",
        str(rep),
    )
    assert p.returncode == 0, p.stderr
    index = (rep / "index.html").read_text()
    assert "Fidelity: the simulator against real Linux TCP" in index and "fidelity/fidelity.png" in index
    assert (rep / "fidelity" / "scenarios.csv").read_text().count("\n") == 7
    doc = json.loads(p.stdout)
    assert json.loads(out.read_text()) == doc and doc["complete"]
    assert [r["name"] for r in doc["scenarios"]] == [
        f"incast-{n}x64KiB-rto200ms-buf32KiB" for n in (1, 2, 4, 8, 16, 32)
    ]
    assert all(r["emu"] is None and r["sim"]["stock"]["error"] is None for r in doc["scenarios"])
    assert doc["summary"][0]["decided"] == 0 and doc["summary"][0]["median_abs_error"] is None


@needs_netns
def test_quick_subset_runs_both_sides_and_a_lone_flow_agrees(tmp_path):
    out, fig = tmp_path / "c.json", tmp_path / "f.png"
    p = _cli("--quick", "--repeat", "2", "--out", str(out), "--plot", str(fig), "--json", timeout=900)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert len(doc["scenarios"]) == 6 and fig.stat().st_size > 10_000
    rows = {r["name"]: r for r in doc["scenarios"]}
    assert all(r["emu"] and len(r["emu"]["times_s"]) == 2 for r in rows.values()), [
        r["emu_error"] for r in rows.values()
    ]
    lone = rows["incast-1x64KiB-rto200ms-buf32KiB"]
    # One flow, no loss: both sides are the wire time of 64 KiB at 100 Mbit/s (5.5 ms) plus host costs.
    assert 0.005 < lone["emu"]["median_s"] < 0.05 and lone["emu"]["counters"]["timeouts"] == 0
    if not lone["noisy"]:
        assert abs(lone["sim"]["stock"]["error"]) < 0.25
    # The kernel's drop counter sees the incast overflow the port.
    assert rows["incast-8x64KiB-rto200ms-buf32KiB"]["emu"]["counters"]["port_drops"] > 0


@needs_netns
@pytest.mark.skipif(trace_unavailable() is not None, reason=f"kernel tracing: {trace_unavailable()}")
def test_trace_shows_both_sides_flows(tmp_path):
    fig = tmp_path / "t.png"
    p = _cli("--only", "incast-8x64KiB-rto200ms-buf32KiB", "--trace", str(fig), timeout=300)
    assert p.returncode == 0, p.stderr
    data = json.loads((tmp_path / "t.json").read_text())
    assert len(data["sim"]["flows"]) == 8
    assert 1 <= len(data["emu"]["flows"]) <= 8  # sampled senders (a flow done between two samples can be missed)
    assert sum(len(f["retransmits"]) for f in data["emu"]["flows"]) > 0
    assert fig.stat().st_size > 10_000
    assert not [d for d in os.listdir("/sys/kernel/tracing/instances") if d.startswith("parcomm-")]


def test_recorded_kernel_runs_are_reused_only_from_the_same_harness():
    from parcomm.conformance.matrix import load_matrix
    from parcomm.conformance.runner import EMU_HARNESS, ScenarioResult, reusable

    sc = load_matrix()[0][0]
    res = ScenarioResult(sc)
    res.emu = {"times_s": [0.1] * sc.repeat, "runs": [{}] * sc.repeat, "median_s": 0.1, "spread": 0.0}
    row = res.as_dict(0.25)
    assert row["emu_harness"] == EMU_HARNESS
    assert reusable(sc, row, None) is row
    # Kernel runs measured by an earlier harness (or none recorded) are run again.
    assert reusable(sc, {**row, "emu_harness": EMU_HARNESS - 1}, None) is None
    assert reusable(sc, {k: v for k, v in row.items() if k != "emu_harness"}, None) is None
    assert reusable(sc, row, sc.repeat + 1) is None
