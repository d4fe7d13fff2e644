"""``parcomm bcast`` in the emulated cluster (parcomm.apps.bcast.emu).

The emulated runs need root, ``ip netns``, ``tc`` and versitygw; they are
skipped with the reason otherwise. Kept small (4 nodes, 4 MiB) to stay well
under a minute on a 2-core machine.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from parcomm.apps.bcast.emu import EmuBcast, EmuBcastPlatform, netns_available

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
_WHY_NOT = netns_available()
needs_emu = pytest.mark.skipif(_WHY_NOT is not None, reason=f"emulation: {_WHY_NOT}")


def _namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def test_platform_scaling_keeps_the_profile_ratios():
    pf = EmuBcastPlatform(nodes=16, node_rate_bps=40e6)
    assert pf.scale == pytest.approx(5e6 / 30e6)
    # chiba2010: 3.5..11 MB/s per GET against a 30 MB/s NIC -> the same ratios at 5 MB/s
    lows = [lo for _, lo, _ in pf.modes]
    assert lows[0] == pytest.approx(3.5e6 * pf.scale)
    assert pf.storage_bps == pytest.approx(200e6 * 8 * pf.scale)
    plat = pf.platform_dict()
    assert len(plat["hosts"]) == 17
    rates = sorted(link["rate_bps"] for link in plat["links"])
    assert rates[0] == 40e6 and rates[-1] == pytest.approx(pf.storage_bps)


def test_bound_is_the_node_nic_when_storage_is_ample():
    pf = EmuBcastPlatform(nodes=16, node_rate_bps=40e6)
    size = 64 << 20
    b = pf.bound(size)
    assert b.binding == "per_node_download"
    assert b.seconds >= size / (40e6 / 8)


@needs_emu
def test_small_emulated_broadcast_steal_is_correct_and_egress_is_one_object():
    pf = EmuBcastPlatform(nodes=4, node_rate_bps=40e6)
    with EmuBcast(pf, 4 << 20, piece_size=256 << 10) as eb:
        res = eb.run_parcomm("steal", connections=2, work_pieces=2, timeout=120)
        ours = set(eb.cluster.namespaces)
    assert res.all_match, res.errors
    assert res.egress_ratio <= 1.05
    assert sum(res.bytes_from_storage) <= 1.05 * (4 << 20)
    assert all(0 < t < 120 for t in res.node_times_s)
    assert res.completion_s >= 0.9 * res.bound_s  # nobody beats physics (10 % slack: file mtimes)
    assert not (ours & _namespaces()), "namespaces left behind"


@needs_emu
def test_namespaces_removed_on_failure():
    pf = EmuBcastPlatform(nodes=2, node_rate_bps=40e6)
    with pytest.raises(RuntimeError, match="boom"):
        with EmuBcast(pf, 1 << 20) as eb:
            ours = set(eb.cluster.namespaces)
            assert ours <= _namespaces()
            raise RuntimeError("boom")
    assert not (ours & _namespaces())


def test_the_baselines_are_benchmark_harness_outside_the_library():
    """Issue 20: the baselines (ranged GETs, MPICH, libtorrent) live in benchmarks/; the library keeps
    what ``parcomm bcast`` and the studies use. Both halves still parse their arguments."""
    import parcomm.apps.bcast as pkg

    assert not (Path(pkg.__file__).parent / "baselines.py").exists()
    for script, expect in (("bcast_baselines.py", "--methods"), ("bcast_baselines_node.py", "{ranged,mpi,torrent}")):
        out = subprocess.run(
            [sys.executable, str(BENCH / script), "--help"], capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0 and expect in out.stdout, out.stderr
