"""Tests of parcomm.platform: builders, short form, units, RTO schemes, TOML files."""

from __future__ import annotations

import json
import pathlib
import re

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]

import parcomm.platform as pp
from parcomm.platform import units

TOP_KEYS = {"name", "hosts", "switches", "links", "segments", "routers"}
HOST_KEYS = {"name", "mtu", "nic_queue_packets", "send_overhead", "recv_overhead", "tcp", "timing_noise_s"}


# --- the schema comes from the core ----------------------------------------------


def test_tcp_defaults_are_the_cores():
    """LINUX_TCP is TcpSpec::default() as the core serializes it: a platform built from it and
    one with no tcp tables at all (serde's defaults) simulate identically."""
    from parcomm import _core

    schema = json.loads(_core.platform_schema())
    assert schema["defaults"]["tcp"] == pp.LINUX_TCP
    assert pp.LINUX_TCP["rto_min_s"] == 0.2 and pp.LINUX_TCP["initial_cwnd_segments"] == 10
    bare = pp.star(2)
    for h in bare["hosts"]:
        del h["tcp"]
    runs = []
    for p in (pp.star(2), bare):
        sim = _core.Simulation(pp.to_json(p), 1)
        sim.send(0, 1, 1 << 20)
        sim.receive(1, 1 << 20)
        runs.append(sim.run_until_completion())
    assert runs[0] == runs[1]


def test_element_helpers_emit_every_field_the_core_serializes():
    """A helper's dict, round-tripped through the core's own defaults, has the same keys."""
    from parcomm import _core

    defaults = json.loads(_core.platform_schema())["defaults"]
    p = pp.star(2)
    assert set(p) == TOP_KEYS
    assert set(p["hosts"][0]) == set(defaults["host"]) == HOST_KEYS
    assert set(p["switches"][0]) == set(defaults["switch"])
    assert set(p["links"][0]) == set(defaults["link"])


def test_host_helper_fills_defaults_and_merges_partial_tcp():
    h = pp.host("a", tcp={"rto_min_s": "300ms"}, send_overhead=("10us", 1e-9))
    assert h["mtu"] == 1500 and h["nic_queue_packets"] == 1000
    assert h["tcp"]["rto_min_s"] == pytest.approx(0.3)
    assert h["tcp"]["rto_max_s"] == pp.LINUX_TCP["rto_max_s"]
    assert set(h["tcp"]) == set(pp.TCP_FIELDS)
    assert h["send_overhead"] == {"fixed_s": pytest.approx(10e-6), "per_byte_s": 1e-9, "jitter_s": 0.0}
    assert h["recv_overhead"] == {"fixed_s": 0.0, "per_byte_s": 0.0, "jitter_s": 0.0}
    with pytest.raises(pp.PlatformError, match="rto_minimum"):
        pp.host("a", tcp={"rto_minimum": 1})


def test_link_helper_fault_injection():
    l = pp.link("a", "b", "1G", drop_nth=[1, "2"])
    assert l["drop_nth"] == [1, 2]
    assert pp.link("a", "b", "1G")["drop_nth"] == []


def test_rto_completes_partial_tcp_tables():
    p = pp.star(2)
    p["hosts"][0]["tcp"] = {"rto_min_s": 0.5, "rto_max_s": 2.0}  # partial, as a TOML author might write
    del p["hosts"][1]["tcp"]
    out = pp.apply_rto(p, "fixed", 0.3)
    assert all(set(h["tcp"]) == set(pp.TCP_FIELDS) for h in out["hosts"])
    assert _bounds(out) == {"h0": (0.3, 0.3), "h1": (0.3, 0.3)}


def test_wire_accounting_matches_spec_rs():
    assert pp.atm_cells(9180) == 192  # (9180 + 16) / 48 rounded up
    assert pp.wire_bytes("atm", 9180) == 192 * 53
    assert pp.wire_bytes("ethernet", 1500) == 1538
    assert pp.wire_bytes("ethernet", 20) == 84  # 64-byte minimum frame + 20
    assert pp.wire_bytes("raw", 777) == 777


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda p: p["hosts"][0].__setitem__("mtu", 100), "hosts.h0.mtu"),
        (lambda p: p["links"][0].__setitem__("b", "nope"), "links[0].b"),
        (lambda p: p["switches"][0]["buffer"].__setitem__("size", 10), "switches.sw0.buffer.size"),
        (lambda p: p["hosts"][1]["tcp"].__setitem__("rto_max_s", 0.1), "hosts.h1.tcp.rto_max_s"),
        (lambda p: p["hosts"][0].__setitem__("colour", "red"), "colour"),
        (lambda p: p["links"][1].__setitem__("loss", 1.0), "links[1].loss"),
        (lambda p: p["switches"][0].__setitem__("early_packet_discard", True), "early_packet_discard"),
        (lambda p: p["hosts"].append(dict(p["hosts"][0])), "duplicate name 'h0'"),
        (lambda p: p["links"][0].__setitem__("drop_nth", [3, 0]), "links[0].drop_nth"),
    ],
)
def test_validate_names_the_offending_field(mutate, field):
    p = pp.star(2)
    mutate(p)
    with pytest.raises(pp.PlatformError) as err:
        pp.validate(p)
    assert field in str(err.value)


def test_sack_and_tlp_are_optional_bools_default_off():
    assert pp.TCP_OPTIONAL == (
        "sack",
        "tail_loss_probe",
        "sndbuf_initial_bytes",
        "cwnd_restart_after_idle",
        "timer_tick_s",
        "linux_rto",
        "timestamps",
        "rack",
        "prr",
        "cubic",
        "quickack",
        "frto",
        "hystart",
        "congestion_control",
        "loss_detection",
        "recovery_rate",
        "rto_rules",
    )
    # the named strategy choices: None means "read the legacy booleans above"
    assert all(pp.LINUX_TCP[f] is None for f in ("congestion_control", "loss_detection", "recovery_rate", "rto_rules"))
    assert all(
        pp.LINUX_TCP[f] is False
        for f in (
            "sack",
            "tail_loss_probe",
            "cwnd_restart_after_idle",
            "linux_rto",
            "timestamps",
            "rack",
            "prr",
            "cubic",
            "quickack",
            "frto",
            "hystart",
        )
    )
    assert pp.LINUX_TCP["sndbuf_initial_bytes"] == 0  # 0 = no send-buffer autotuning
    assert pp.LINUX_TCP["timer_tick_s"] == 0.0  # 0 = timers fire exactly
    # A tcp table written before the fields existed is still complete and valid.
    p = pp.star(2)
    for f in pp.TCP_OPTIONAL:
        del p["hosts"][0]["tcp"][f]
    pp.validate(p)
    old = {k: v for k, v in pp.LINUX_TCP.items() if k not in pp.TCP_OPTIONAL}
    assert pp.tcp_spec(old) == pp.LINUX_TCP
    assert pp.tcp_spec(sack="true", tail_loss_probe=True)["sack"] is True
    p["hosts"][1]["tcp"]["sack"] = 1
    with pytest.raises(pp.PlatformError, match="hosts.h1.tcp.sack"):
        pp.validate(p)
    # No period cluster's builder turns them on, nor star on the RFC stack; star's default stack does.
    for b in (pp.star(2, tcp={"stack": "rfc"}), pp.opteron_cluster(2), pp.atm_cluster(2), pp.segments_router(2, 1)):
        assert all(not h["tcp"][f] for h in b["hosts"] for f in pp.TCP_OPTIONAL)
    assert all(pp.star(2)["hosts"][0]["tcp"][f] for f in ("sack", "tail_loss_probe", "rack", "cubic"))


# --- builders ---------------------------------------------------------------


def test_star_shape_and_defaults():
    p = pp.star(5)
    assert set(p) == TOP_KEYS
    assert [h["name"] for h in p["hosts"]] == [f"h{i}" for i in range(5)]
    assert [s["name"] for s in p["switches"]] == ["sw0"]
    assert [(l["a"], l["b"]) for l in p["links"]] == [(f"h{i}", "sw0") for i in range(5)]
    assert all(l["rate_bps"] == 1e9 and l["framing"] == "ethernet" for l in p["links"])
    assert p["switches"][0]["flow_control"] is False
    # The validated default (platform/defaults.py): the linux stack on hosts with the measured timing noise.
    assert all(h["tcp"] == pp.tcp_spec(stack="linux") for h in p["hosts"])
    assert all(h["timing_noise_s"] == 190e-6 for h in p["hosts"])
    assert all(h["tcp"] == pp.LINUX_TCP for h in pp.star(2, tcp={"stack": "rfc"})["hosts"])
    assert p["segments"] == [] and p["routers"] == []


def test_star_options_and_host_options():
    p = pp.star(
        3,
        rate_bps="100M",
        buffer="100 packets",
        flow_control=True,
        propagation_s="1us",
        mtu=9000,
        tcp={"rto_min_s": 0.05},
        nic_queue_packets=64,
    )
    assert all(l["rate_bps"] == 100e6 and l["propagation_s"] == pytest.approx(1e-6) for l in p["links"])
    assert p["switches"][0]["buffer"] == {"size": 100, "unit": "packets"}
    assert p["switches"][0]["flow_control"] is True
    assert all(h["mtu"] == 9000 and h["nic_queue_packets"] == 64 for h in p["hosts"])
    assert all(h["tcp"]["rto_min_s"] == 0.05 for h in p["hosts"])
    with pytest.raises(pp.PlatformError, match="colour"):
        pp.star(2, colour="red")
    with pytest.raises(pp.PlatformError, match="at least 1"):
        pp.star(0)


def test_atm_cluster_matches_seed_000():
    p = pp.atm_cluster()
    assert p["name"] == "atm-100"
    assert len(p["hosts"]) == 100 and len(p["links"]) == 100
    (sw,) = p["switches"]
    assert sw["buffer"] == {"size": 2048, "unit": "cells"}
    assert sw["flow_control"] is False  # UBR
    assert all(l["framing"] == "atm" for l in p["links"])
    assert all(l["rate_bps"] == pytest.approx(149.76e6) for l in p["links"])
    assert pytest.approx(155.52e6) == pp.ATM_OC3_LINE_BPS
    for h in p["hosts"]:
        assert h["mtu"] == 9180
        assert h["tcp"]["rto_min_s"] == pytest.approx(0.2)
        assert h["tcp"]["rto_max_s"] == pytest.approx(60.0)
        assert h["tcp"]["sndbuf_bytes"] >= h["mtu"] - 40
        assert h["send_overhead"]["fixed_s"] > 0
    with pytest.raises(pp.PlatformError, match="128 ports"):
        pp.atm_cluster(129)
    assert len(pp.atm_cluster(8)["hosts"]) == 8
    assert pp.atm_cluster(4, tcp={"rto_max_s": 0.3})["hosts"][0]["tcp"]["rto_max_s"] == 0.3


def test_opteron_cluster_matches_seed_001():
    p = pp.opteron_cluster()
    assert len(p["hosts"]) == 64 and len(p["links"]) == 64
    (sw,) = p["switches"]
    assert sw["flow_control"] is False
    assert sw["buffer"]["unit"] == "bytes" and sw["buffer"]["size"] == 128 * 1024
    assert all(l["rate_bps"] == 1e9 and l["framing"] == "ethernet" for l in p["links"])
    t = p["hosts"][0]["tcp"]
    assert (t["rto_min_s"], t["rto_max_s"]) == (pytest.approx(0.2), pytest.approx(120.0))
    assert pp.opteron_cluster(8, buffer="32KiB")["switches"][0]["buffer"]["size"] == 32768


def test_segments_router_matches_seed_002():
    p = pp.segments_router()
    assert len(p["hosts"]) == 130
    assert len(p["segments"]) == 16
    sizes = [len(s["members"]) - 1 for s in p["segments"]]  # minus the router
    assert sorted(sizes) == [8] * 14 + [9] * 2
    (r,) = p["routers"]
    assert r["name"] == "r0"
    assert r["forward_pps"] == 100_000 and r["backplane_bps"] == 533e6
    assert all("r0" in s["members"] for s in p["segments"])
    assert all(s["rate_bps"] == 10e6 and s["collisions"] is True for s in p["segments"])
    hosts_in_segments = [m for s in p["segments"] for m in s["members"] if m != "r0"]
    assert sorted(hosts_in_segments) == sorted(h["name"] for h in p["hosts"])  # each exactly once
    assert p["switches"] == [] and p["links"] == []


def test_segments_router_host_counts():
    p = pp.segments_router(16, 8)
    assert len(p["hosts"]) == 128
    assert all(len(s["members"]) == 9 for s in p["segments"])
    assert p["segments"][1]["members"][:2] == ["h8", "h9"]  # consecutive numbering
    assert len(pp.segments_router(4, n_hosts=10)["hosts"]) == 10
    assert pp.distribute_hosts(130, 16) == [9, 9] + [8] * 14
    with pytest.raises(pp.PlatformError, match="disagrees"):
        pp.segments_router(4, 2, n_hosts=9)
    with pytest.raises(pp.PlatformError, match="cannot fill"):
        pp.segments_router(16, n_hosts=10)


@pytest.mark.parametrize(
    "p",
    [pp.star(3), pp.atm_cluster(4), pp.opteron_cluster(4), pp.segments_router(3, 2)],
    ids=["star", "atm", "opteron", "segments"],
)
def test_builders_emit_json_the_core_reads(p):
    back = json.loads(pp.to_json(p))
    assert back == p
    assert set(back) == TOP_KEYS
    assert all(set(h) == HOST_KEYS and set(h["tcp"]) == set(pp.TCP_FIELDS) for h in back["hosts"])


# --- short form -------------------------------------------------------------


def test_short_form_kinds():
    assert len(pp.from_spec_string("star:64")["hosts"]) == 64
    p = pp.from_spec_string("star:64,rate=1G,buffer=64KiB,fc=on")
    assert p["switches"][0]["buffer"] == {"size": 65536, "unit": "bytes"}
    assert p["switches"][0]["flow_control"] is True
    assert p["links"][0]["rate_bps"] == 1e9
    assert pp.from_spec_string("atm:100") == pp.atm_cluster(100)
    assert pp.from_spec_string("opteron:64") == pp.opteron_cluster(64)
    assert pp.from_spec_string("segments:16x8") == pp.segments_router(16, 8)
    assert len(pp.from_spec_string("segments")["hosts"]) == 130
    assert len(pp.from_spec_string("atm")["hosts"]) == 100


def test_short_form_options():
    p = pp.from_spec_string("atm:10,buffer=4Ki,epd=on,epd_threshold=3000,rto_min=250ms,rto_max=350ms")
    assert p["switches"][0]["buffer"] == {"size": 4096, "unit": "cells"}
    assert p["switches"][0]["early_packet_discard"] is True
    assert p["switches"][0]["epd_threshold_cells"] == 3000
    assert all(h["tcp"]["rto_min_s"] == 0.25 and h["tcp"]["rto_max_s"] == 0.35 for h in p["hosts"])
    s = pp.from_spec_string("segments:4x3,rate=100M,collisions=off,router_buffer=64KiB")
    assert s["segments"][0]["rate_bps"] == 100e6 and s["segments"][0]["collisions"] is False
    assert s["routers"][0]["buffer"] == {"size": 65536, "unit": "bytes"}


@pytest.mark.parametrize(
    "text, message",
    [
        ("star:abc", "star: host count 'abc' is not an integer"),
        ("star", "star: needs a host count"),
        ("star:0", "star: host count must be at least 1"),
        ("ring:8", "unknown kind 'ring'"),
        ("", "empty description"),
        ("star:4,rate", "option 'rate' is not KEY=VALUE"),
        ("star:4,colour=red", "star: unknown option 'colour'"),
        ("star:4,rate=1Q", "'1Q'"),
        ("star:4,buffer=64Kb", "'64Kb'"),
        ("star:4,fc=maybe", "'maybe'"),
        ("star:4,,fc=on", "empty option"),
        ("star:4,rate=1G,rate=2G", "given twice"),
        ("segments:16x", "hosts per segment missing"),
        ("segments:ax8", "segments: segment count 'a' is not an integer"),
        ("segments:16xb", "segments: hosts per segment 'b' is not an integer"),
        ("atm:300", "128 ports"),
        ("atm:", "empty size"),
        ("opteron:4,epd=on", "opteron: unknown option 'epd'"),
    ],
)
def test_short_form_errors_name_the_bad_part(text, message):
    with pytest.raises(ValueError) as err:
        pp.from_spec_string(text)
    assert message in str(err.value)


# --- units ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1500", 1500),
        (1500, 1500),
        ("9180B", 9180),
        ("64KiB", 65536),
        ("1MiB", 1 << 20),
        ("64KB", 64000),
        ("64kB", 64000),
        ("2k", 2000),
        ("2Ki", 2048),
        ("1.5KiB", 1536),
        ("10 bytes", 10),
    ],
)
def test_parse_size(text, expected):
    assert units.parse_size(text) == expected


@pytest.mark.parametrize("bad", ["abc", "64Kb", "64QB", "-5", "1.3B", "", "1.5"])
def test_parse_size_errors_name_the_value(bad):
    with pytest.raises(ValueError) as err:
        units.parse_size(bad, "buffer")
    assert f"'{bad}'" in str(err.value) and str(err.value).startswith("buffer: ")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1G", 1e9),
        ("155M", 155e6),
        ("10Mbps", 10e6),
        ("1Gbit/s", 1e9),
        ("149.76 Mbit/s", 149.76e6),
        ("100kb/s", 1e5),
        ("125MB/s", 1e9),
        (2.5e9, 2.5e9),
    ],
)
def test_parse_rate(text, expected):
    assert units.parse_rate(text) == pytest.approx(expected)


@pytest.mark.parametrize("bad", ["1Gi", "10 furlongs", "0", "-1G", "fast"])
def test_parse_rate_errors_name_the_value(bad):
    with pytest.raises(ValueError, match=re.escape(f"'{bad}'")):
        units.parse_rate(bad)


@pytest.mark.parametrize(
    "text, expected",
    [("200ms", 0.2), ("60s", 60.0), ("1us", 1e-6), ("0.2", 0.2), ("10 ns", 1e-8), ("2min", 120.0), (3, 3.0)],
)
def test_parse_duration(text, expected):
    assert units.parse_duration(text) == pytest.approx(expected)


@pytest.mark.parametrize("bad", ["5 parsecs", "-1s", "soon", "200MS"])
def test_parse_duration_errors_name_the_value(bad):
    with pytest.raises(ValueError, match=re.escape(f"'{bad}'")):
        units.parse_duration(bad)


def test_parse_buffer_and_count():
    assert units.parse_buffer("64KiB") == {"size": 65536, "unit": "bytes"}
    assert units.parse_buffer("100 packets") == {"size": 100, "unit": "packets"}
    assert units.parse_buffer("2Ki cells") == {"size": 2048, "unit": "cells"}
    assert units.parse_buffer(2048, "cells") == {"size": 2048, "unit": "cells"}
    assert units.parse_buffer({"size": "1MiB"}) == {"size": 1 << 20, "unit": "bytes"}
    assert units.parse_count("2k") == 2000 and units.parse_count("2Ki") == 2048
    with pytest.raises(ValueError, match="'10 min'"):
        units.parse_buffer("10 min")
    with pytest.raises(ValueError, match="'lots'"):
        units.parse_bool("lots")


# --- RTO schemes ---------------------------------------------------------------


def _bounds(p):
    return {h["name"]: (h["tcp"]["rto_min_s"], h["tcp"]["rto_max_s"]) for h in p["hosts"]}


def test_rto_fixed():
    p = pp.apply_rto(pp.atm_cluster(20), "fixed", "200ms", seed=1)
    assert set(_bounds(p).values()) == {(0.2, 0.2)}


def test_rto_random_min_ranges():
    p = pp.apply_rto(pp.atm_cluster(100), "random_min", 0.25, seed=7)
    b = _bounds(p)
    for lo, hi in b.values():
        assert 0.25 <= lo <= 0.35
        assert hi == pytest.approx(lo + 0.1)
    assert len({lo for lo, _ in b.values()}) == 100  # every node draws its own value
    mins = sorted(lo for lo, _ in b.values())
    assert mins[0] < 0.27 and mins[-1] > 0.33  # spread over the interval


def test_rto_random_both_ranges():
    b = _bounds(pp.apply_rto(pp.star(50), "random_both", 0.2, seed=3))
    assert all(lo == hi and 0.2 <= lo <= 0.3 for lo, hi in b.values())
    assert len(set(b.values())) == 50


def test_rto_deterministic_and_per_host_independent():
    base = pp.star(10)
    a = _bounds(pp.apply_rto(base, "random_min", 0.2, seed=42))
    assert a == _bounds(pp.apply_rto(base, "random_min", 0.2, seed=42))
    assert a != _bounds(pp.apply_rto(base, "random_min", 0.2, seed=43))
    bigger = _bounds(pp.apply_rto(pp.star(20), "random_min", 0.2, seed=42))
    assert all(bigger[name] == a[name] for name in a)  # more hosts, same draws for h0..h9


def test_rto_returns_new_dict_and_rejects_bad_scheme():
    base = pp.atm_cluster(4)
    before = json.dumps(base)
    out = pp.apply_rto(base, "random_both", 0.3, seed=0)
    assert json.dumps(base) == before
    assert out is not base and out["hosts"][0] is not base["hosts"][0]
    with pytest.raises(pp.PlatformError, match="random_max"):
        pp.apply_rto(base, "random_max", 0.3, seed=0)
    with pytest.raises(ValueError, match="'soon'"):
        pp.apply_rto(base, "fixed", "soon", seed=0)


def test_set_rto():
    base = pp.opteron_cluster(4)
    p = pp.set_rto(base, rto_min_s="250ms", rto_max_s="350ms")
    assert set(_bounds(p).values()) == {(0.25, 0.35)}
    assert base["hosts"][0]["tcp"]["rto_min_s"] == 0.2  # input untouched
    only = pp.set_rto(base, rto_max_s=1.0, hosts=["h1"])
    assert _bounds(only)["h1"] == (0.2, 1.0) and _bounds(only)["h0"] == (0.2, 120.0)
    with pytest.raises(pp.PlatformError, match="hosts.h0.tcp.rto_max_s"):
        pp.set_rto(base, rto_max_s=0.1)
    with pytest.raises(pp.PlatformError, match="h9"):
        pp.set_rto(base, rto_min_s=0.1, hosts=["h9"])


# --- TOML files -----------------------------------------------------------------

EXPLICIT = """
name = "pair"

[[hosts]]
name = "a"
mtu = "9180B"
tcp = { rto_min_s = "300ms", sndbuf_bytes = "64KiB", rcvbuf_bytes = "64KiB" }
send_overhead = { fixed_s = "20us" }

[[hosts]]
name = "b"
mtu = 9180
tcp = { sndbuf_bytes = "64KiB", rcvbuf_bytes = "64KiB" }

[[switches]]
name = "sw0"
buffer = { size = 2048, unit = "cells" }

[[links]]
a = "a"
b = "sw0"
rate_bps = "149.76M"
framing = "atm"

[[links]]
a = "b"
b = "sw0"
rate_bps = "149.76M"
framing = "atm"
"""


def test_load_explicit_toml(tmp_path):
    f = tmp_path / "pair.toml"
    f.write_text(EXPLICIT)
    p = pp.load(f)
    assert p["name"] == "pair" and [h["name"] for h in p["hosts"]] == ["a", "b"]
    assert p["hosts"][0]["tcp"]["rto_min_s"] == pytest.approx(0.3)
    assert p["hosts"][0]["tcp"]["sndbuf_bytes"] == 65536
    assert p["hosts"][0]["send_overhead"]["fixed_s"] == pytest.approx(20e-6)
    assert p["hosts"][1]["tcp"]["rto_max_s"] == pp.LINUX_TCP["rto_max_s"]
    assert p["switches"][0]["buffer"] == {"size": 2048, "unit": "cells"}
    assert p["links"][1]["rate_bps"] == pytest.approx(149.76e6)
    assert json.loads(pp.to_json(p)) == p


def test_load_builder_toml_with_rto(tmp_path):
    f = tmp_path / "star.toml"
    f.write_text(
        'builder = "star"\nn = 6\nrate_bps = "10G"\nbuffer = "1MiB"\nflow_control = true\n'
        'tcp = { rto_min_s = "1ms", rto_max_s = "1s" }\n'
        '[rto]\nscheme = "random_min"\nx_s = "250ms"\nseed = 5\n'
    )
    p = pp.load(f)
    assert len(p["hosts"]) == 6 and p["links"][0]["rate_bps"] == 1e10
    assert p["switches"][0]["buffer"]["size"] == 1 << 20 and p["switches"][0]["flow_control"]
    assert p == pp.apply_rto(
        pp.star(6, "10G", "1MiB", True, tcp={"rto_min_s": 0.001, "rto_max_s": 1.0}), "random_min", 0.25, 5
    )
    g = tmp_path / "atm.toml"
    g.write_text('builder = "atm_cluster"\nn = 12\n[rto]\nrto_min_s = 0.25\nrto_max_s = 0.35\n')
    assert set(_bounds(pp.load(g)).values()) == {(0.25, 0.35)}


@pytest.mark.parametrize(
    "text, field",
    [
        ('builder = "star"\nn = 4\ncolour = "red"\n', "colour"),
        ('builder = "ring"\nn = 4\n', "builder"),
        ('builder = "star"\nn = "abc"\n', "host count 'abc'"),
        ('builder = "star"\nn = 4\n[[hosts]]\nname = "x"\n', "hosts"),
        ('[[hosts]]\nname = "a"\nspeed = 3\n', "hosts[0] (a): unknown field(s) speed"),
        ('[[hosts]]\nname = "a"\n[[links]]\na = "a"\nb = "zz"\nrate_bps = "1G"\n', "links[0].b"),
        ('[[hosts]]\nname = "a"\nmtu = "15OO"\n', "hosts[0] (a)"),
        ('[[hosts]]\nname = "a"\n[rto]\nscheme = "fixed"\n', "rto: missing field(s) x_s"),
        ("name = \n", "invalid TOML"),
        ('name = "no hosts"\n', "hosts"),
    ],
)
def test_load_errors_name_file_and_field(tmp_path, text, field):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(pp.PlatformError) as err:
        pp.load(f)
    message = str(err.value)
    assert message.startswith(str(f) + ": ")
    assert field in message


def test_load_missing_file_names_it(tmp_path):
    missing = tmp_path / "nope.toml"
    with pytest.raises(pp.PlatformError, match="nope.toml"):
        pp.load(missing)
