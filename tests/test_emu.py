"""The emulated cluster (parcomm.emu): real Linux TCP in network namespaces.

The first group needs nothing special (layouts, knobs, parsers). The rest
needs root and ``ip netns``; they are skipped with the reason otherwise.
Every address used lives only inside namespaces these tests create.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import textwrap
import time

import pytest
from parcomm.platform import apply_rto, as_platform

# --------------------------------------------------------------------------- helpers


def _netns_works() -> str | None:
    """None if we can create namespaces here, else why not.

    (tests/netns.py has the same check; this file keeps its own because the
    emulated ranks import it by path, without tests/ on their sys.path.)"""
    if os.geteuid() != 0:
        return "needs root (CAP_NET_ADMIN) to create network namespaces"
    try:
        proc = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"`ip netns` unavailable: {e}"
    if proc.returncode != 0:
        return f"`ip netns list` failed: {proc.stderr.strip()}"
    return None


_WHY_NOT = _netns_works()
needs_netns = pytest.mark.skipif(_WHY_NOT is not None, reason=f"emulation: {_WHY_NOT}")


def _namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def _root_links() -> set[str]:
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, timeout=10).stdout
    return {line.split(":")[1].strip() for line in out.splitlines() if ":" in line}


# Rank programs with real data (top level, so each rank process can load this file).


async def alltoall_data(comm, algo="A", nbytes=2048):
    from parcomm.collectives import ALLTOALL_ALGORITHMS

    blocks = [f"{comm.rank}->{d}" for d in range(comm.size)]
    return await ALLTOALL_ALGORITHMS[algo](comm, blocks, nbytes=nbytes)


async def bcast_data(comm, algo="binomial", nbytes=65536):
    from parcomm.collectives import BCAST_ALGORITHMS

    data = {"from": "root", "values": list(range(20))} if comm.rank == 0 else None
    return await BCAST_ALGORITHMS[algo](comm, data, root=0, nbytes=nbytes)


async def gather_data(comm, nbytes=30000):
    from parcomm.collectives import gather_linear

    return await gather_linear(comm, data=comm.rank * 11, root=0, nbytes=nbytes)


# --------------------------------------------------------------------------- no root needed


def test_layout_of_a_star():
    from parcomm.emu.layout import plan
    from parcomm.emu.naming import RunName

    lay = plan(as_platform("star:4,rate=100M,buffer=20 packets,mtu=9000"), RunName(123, "abcd"), "10.213.7.0/24")
    assert [h.addr for h in lay.hosts] == ["10.213.7.1", "10.213.7.2", "10.213.7.3", "10.213.7.4"]
    assert [h.netns for h in lay.hosts][0] == "pce-123-abcd-n0"
    assert lay.switch_ns == "pce-123-abcd-sw"
    assert lay.buffer == {"size": 20, "unit": "packets"}
    assert {h.rate_bps for h in lay.hosts} == {1e8} and {h.mtu for h in lay.hosts} == {9000}


@pytest.mark.parametrize(
    "spec, words",
    [
        ("atm:4", "cells"),
        ("star:4,loss=0.01", "netem"),
        ("star:4,prop=1ms", "netem"),
        ("star:4,fc=on", "flow_control"),
        ("segments:2x2", "segments"),
    ],
)
def test_layout_refuses_what_it_cannot_emulate(spec, words):
    from parcomm.emu import EmuError
    from parcomm.emu.layout import plan
    from parcomm.emu.naming import RunName

    with pytest.raises(EmuError, match=words):
        plan(as_platform(spec), RunName(1, "0000"))


def test_subnet_avoids_the_machines_routes():
    from parcomm.emu.layout import choose_subnet

    assert choose_subnet(["default", "192.168.1.0/24"]) == "10.213.0.0/24"
    assert choose_subnet(["10.213.0.0/24", "10.213.1.0/25", "0.0.0.0/0"]) == "10.213.2.0/24"


def test_tcp_knobs_follow_the_platform_and_the_kernel_limits():
    from parcomm.emu.layout import plan
    from parcomm.emu.naming import RunName
    from parcomm.emu.tcpknobs import knobs_for

    plat = apply_rto(as_platform("star:3"), "fixed", "250ms")  # MIN = MAX = 250 ms
    h = plan(plat, RunName(1, "0000")).hosts[0]
    k = knobs_for(h, have_rto_max=True, have_rto_min_us=True)
    # the default stack (linux) delays ACKs as the kernel does: no quickack metric
    assert "rto_min 250ms" in k.route_metrics and "quickack 1" not in k.route_metrics
    assert k.sysctls["net.ipv4.tcp_rto_min_us"] == 250000
    assert k.rto_max_ms == 1000 and any("clamped" in n for n in k.notes)  # kernel floor is 1 s
    k2 = knobs_for(h, have_rto_max=False, have_rto_min_us=False)
    assert k2.rto_max_ms is None and any("tcp_rto_max_ms" in n for n in k2.notes)


def test_proc_tables_parse():
    from parcomm.emu.counters import parse_proc_tables

    text = "Tcp: RtoMin OutSegs RetransSegs\nTcp: 200 17 3\nTcpExt: TCPTimeouts\nTcpExt: 2\n"
    t = parse_proc_tables(text)
    assert t["Tcp"]["RetransSegs"] == 3 and t["TcpExt"]["TCPTimeouts"] == 2


def test_port_tree_lines():
    from parcomm.emu.shaping import port_tree

    lines = port_tree("p3", 1e8, 1500, "bfifo", 32768)
    assert lines[0].startswith("qdisc replace dev p3 root handle 1: htb")
    assert "rate 100000000bit ceil 100000000bit overhead 24" in lines[1]
    assert lines[2].endswith("bfifo limit 32768")


def test_program_references():
    from parcomm.collectives import alltoall_a
    from parcomm.emu import EmuError, program_ref

    assert program_ref(alltoall_a) == "parcomm.collectives.alltoall:alltoall_a"
    assert program_ref(alltoall_data).endswith("test_emu.py:alltoall_data")
    with pytest.raises(EmuError):
        program_ref(lambda comm: None)


def test_without_root_a_clear_error(monkeypatch, capsys):
    from parcomm.cli import main
    from parcomm.emu import EmuError, require_root

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(EmuError, match="root"):
        require_root()
    rc = main(["emu", "run", "incast", "--platform", "star:3"])
    err = capsys.readouterr().err
    assert rc == 2 and "root" in err and "Traceback" not in err


def test_cli_refuses_an_atm_platform(capsys):
    from parcomm.cli import main

    rc = main(["emu", "run", "incast", "--platform", "atm:4"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "cells" in err


def test_compare_sim_only_runs_anywhere(capsys):
    from parcomm.cli import main

    rc = main(
        [
            "compare",
            "alltoall",
            "--platform",
            "star:4,rate=100M",
            "--algo",
            "A,B",
            "--size",
            "4KiB",
            "--backends",
            "sim",
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and [p["algo"] for p in out["points"]] == ["A", "B"]
    assert all(p["sim"]["time_s"] > 0 and "emu" not in p for p in out["points"])


# --------------------------------------------------------------------------- root


@needs_netns
def test_cluster_comes_up_and_goes_away_without_a_trace():
    from parcomm.emu import EmuCluster
    from parcomm.emu.naming import state_dir
    from parcomm.emu.netns import get_offloads

    before_links = _root_links()
    with EmuCluster("star:8,rate=100M,buffer=32KiB") as cl:
        ours = set(cl.namespaces)
        assert len(ours) == 9 and ours <= _namespaces()
        sw = cl.layout.switch_ns
        links = subprocess.run(["ip", "-n", sw, "-o", "link"], capture_output=True, text=True).stdout
        assert "br0" in links and all(f"p{i}@" in links for i in range(8))
        qd = subprocess.run(["tc", "-n", sw, "qdisc", "show", "dev", "p3"], capture_output=True, text=True).stdout
        assert "htb" in qd and "bfifo" in qd and "limit 32Kb" in qd
        route = subprocess.run(["ip", "-n", cl.layout.hosts[2].netns, "route"], capture_output=True, text=True).stdout
        assert "rto_min lock 200ms" in route
        assert get_offloads(cl.layout.hosts[2].netns, "eth0") | {"sg": False} == {
            "sg": False,
            "tso": False,
            "gso": False,
            "gro": False,
        }
        assert _root_links() == before_links  # nothing appeared in the machine's own namespace
        state = os.path.join(state_dir(), f"{cl.layout.run.run_id}.json")
        assert os.path.exists(state)
        workdir = cl.workdir
        assert os.path.isdir(workdir) and json.load(open(state))["workdir"] == workdir
    assert not ours & _namespaces()  # (other runs, e.g. a concurrent test session, may come and go)
    assert not os.path.exists(state) and not os.path.exists(workdir)
    assert _root_links() == before_links


@needs_netns
def test_per_host_rto_schemes_reach_each_namespace():
    from parcomm.emu import EmuCluster
    from parcomm.emu.netns import in_netns

    plat = apply_rto(as_platform("star:4,rate=100M"), "random_min", "200ms", seed=7)
    want = [round(h["tcp"]["rto_min_s"] * 1e3) for h in plat["hosts"]]
    assert len(set(want)) > 1  # the scheme draws per host
    with EmuCluster(plat, sample_interval_s=None) as cl:
        got = [cl.knobs[h.name].rto_min_ms for h in cl.layout.hosts]
        kernel = [
            int(in_netns(h.netns, lambda: open("/proc/sys/net/ipv4/tcp_rto_min_us").read())) // 1000
            for h in cl.layout.hosts
        ]
        routes = [
            subprocess.run(["ip", "-n", h.netns, "route"], capture_output=True, text=True).stdout
            for h in cl.layout.hosts
        ]
        if os.path.exists("/proc/sys/net/ipv4/tcp_rto_max_ms"):
            maxes = [
                int(in_netns(h.netns, lambda: open("/proc/sys/net/ipv4/tcp_rto_max_ms").read()))
                for h in cl.layout.hosts
            ]
            assert maxes == [1000] * 4  # MIN + 100 ms < 1 s: clamped to the kernel's floor
    assert got == want and kernel == want
    assert all(f"rto_min lock {w}ms" in r for w, r in zip(want, routes))


@needs_netns
def test_incast_shows_kernel_timeouts_and_rto_min_shortens_it():
    """8 senders x 64 KiB into one 100 Mbit/s port with a 16 KiB bfifo."""
    from parcomm.emu import EmuCluster

    med, timeouts, drops = {}, {}, {}
    for rto in ("200ms", "5ms"):
        with EmuCluster(f"star:9,rate=100M,buffer=16KiB,rto_min={rto}") as cl:
            runs = [cl.incast_raw(64 * 1024) for _ in range(3)]
        med[rto] = statistics.median(r.time for r in runs)
        timeouts[rto] = sum(r.host_totals()["timeouts"] for r in runs)
        drops[rto] = sum(r.port_drops() for r in runs)
        for r in runs:  # every byte arrived
            assert set(r.results[0].values()) == {64 * 1024}
            assert r.counters["ports"]["name"][1] == "sw0->h0"
    assert drops["200ms"] > 0 and timeouts["200ms"] > 0, (drops, timeouts)
    assert med["200ms"] > 2 * med["5ms"], med


@needs_netns
def test_collectives_give_the_simulators_data_results():
    from parcomm.comm import run_sim
    from parcomm.emu import EmuCluster
    from parcomm.result import Result

    plat = as_platform("star:8,rate=100M,buffer=64KiB")
    cases = [
        (alltoall_data, {"algo": "A", "nbytes": 2048}),
        (alltoall_data, {"algo": "B", "nbytes": 200000}),  # above the eager limit: rendezvous
        (bcast_data, {"algo": "scatter_allgather", "nbytes": 65536}),
        (gather_data, {"nbytes": 30000}),
    ]
    with EmuCluster(plat) as cl:
        for prog, kw in cases:
            emu = cl.run(prog, kwargs=kw, timeout_s=60)
            sim = run_sim(prog, plat, kwargs=kw)
            assert json.loads(json.dumps(sim.results)) == emu.results, prog.__name__
            assert len(emu.finish_times) == 8 and emu.time > 0
            assert emu.counters["hosts"]["segments_sent"][1] > 0
            assert emu.counters["hosts"]["bytes_sent"][1] > 0  # from the ranks' TCP_INFO
            # one result type: the same columns summed, the same meaning
            assert type(emu) is type(sim) is Result and (emu.way, sim.way) == ("emu", "sim")
            assert list(emu.host_totals()) == list(sim.host_totals())
            assert emu.host_totals()["bytes_sent"] > 0


_CHILD = textwrap.dedent(
    """
    import sys
    from parcomm.emu import EmuCluster
    cl = EmuCluster("star:5,rate=10M,buffer=16KiB", reaper={reaper})
    cl.up()
    print("UP", cl.layout.run.run_id, " ".join(cl.namespaces), flush=True)
    cl.incast_raw(8 * 1024 * 1024, timeout_s=60)   # ~27 s at 10 Mbit/s: killed long before
    cl.down()
    """
)


def _start_child(reaper: bool) -> tuple[subprocess.Popen, str, list[str]]:
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD.format(reaper=reaper)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    line = child.stdout.readline().split()
    assert line and line[0] == "UP", child.stderr.read() if child.poll() is not None else line
    return child, line[1], line[2:]


def _wait_gone(names: list[str], seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not set(names) & _namespaces():
            return True
        time.sleep(0.1)
    return False


@needs_netns
@pytest.mark.parametrize("reaper", [True, False], ids=["reaper", "next-start-sweeps"])
def test_kill_9_mid_run_leaks_nothing(reaper):
    from parcomm.emu import EmuCluster
    from parcomm.emu.naming import state_dir

    child, run_id, names = _start_child(reaper)
    time.sleep(1.5)  # the incast is under way
    assert set(names) <= _namespaces()
    pids = subprocess.run(["ip", "netns", "pids", names[0]], capture_output=True, text=True).stdout.split()
    assert pids, "the receiver should be running in host 0's namespace"
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=10)
    child.stdout.close()
    child.stderr.close()
    if reaper:
        assert _wait_gone(names, 10), "the reaper did not remove the dead run's namespaces"
    else:
        time.sleep(0.5)
        assert set(names) <= _namespaces()  # left behind, until the next start
    with EmuCluster("star:3,rate=100M") as cl:
        if not reaper:
            assert set(names) <= set(cl.stale_removed)
        assert not set(names) & _namespaces()
        res = cl.incast_raw(64 * 1024)
        assert res.results[0] == {"h1": 65536, "h2": 65536}
        assert res.counters["hosts"]["syn_retransmits"] == [0, 0, 0]
    assert not set(names) & _namespaces()
    assert not os.path.exists(os.path.join(state_dir(), f"{run_id}.json"))
    import glob
    import tempfile

    assert not glob.glob(os.path.join(tempfile.gettempdir(), f"parcomm-emu-{run_id}-*"))  # nor its work directory
    for p in pids:  # the dead run's ranks died with it (PR_SET_PDEATHSIG)
        assert not os.path.exists(f"/proc/{p}") or open(f"/proc/{p}/stat").read().split()[2] == "Z"


@needs_netns
def test_sigterm_tears_down():
    child, _run_id, names = _start_child(False)
    time.sleep(0.5)
    child.send_signal(signal.SIGTERM)
    child.wait(timeout=20)
    child.stdout.close()
    child.stderr.close()
    assert not set(names) & _namespaces()


@needs_netns
def test_cli_emu_cleanup_and_run(capsys):
    from parcomm.cli import main

    assert main(["emu", "cleanup"]) == 0
    assert "removed" in capsys.readouterr().out
    rc = main(["emu", "run", "incast", "--platform", "star:5,rate=100M,buffer=16KiB", "--size", "32KiB", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["summary"]["senders"] == 4 and out["runs"][0]["time_s"] > 0
    assert len(out["runs"][0]["counters"]["hosts"]["timeouts"]) == 5
