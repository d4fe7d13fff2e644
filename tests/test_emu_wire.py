"""The emulated host link behaves like a wire: a sender's full frames reach the
switch one serialization time apart, not in bunches of GSO segments released at
once (measured with kernel receive timestamps on the bridge port, by the same
capture as benchmarks/emu_jitter.py). Needs root and ``ip netns``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from netns import needs_netns

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "emu_jitter.py"


def _bench():
    spec = importlib.util.spec_from_file_location("emu_jitter", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@needs_netns
def test_one_sender_arrives_paced_at_the_link_rate():
    r = _bench().measure(1, 256 * 1024, "100M", "128KiB", "200ms")
    assert r["capture_drops"] == 0 and r["data_frames"] >= 170  # 256 KiB is 181 full segments
    gaps = r["gap_over_serialization"]
    # An ideal NIC: 1.0. With GSO bunches (before): median 0.01, 92 % of gaps under half a frame.
    assert 0.95 <= gaps["p50"] <= 1.05, r
    assert r["bunched_share"] < 0.05, r
    assert r["bunch_frames"]["p90"] == 1.0, r


def test_analysis_of_a_synthetic_capture():
    """The measures themselves, on frames whose timing is known."""
    ej = _bench()
    unit = ej.serialization_s(1514, 100e6)
    # sender 1: paced frames; sender 2: bunches of 4 frames 1 us apart, every 4 units
    t1 = [i * unit for i in range(40)]
    t2 = [b * 4 * unit + j * 1e-6 + unit / 2 for b in range(10) for j in range(4)]
    cap = {
        "dev": [1] * 40 + [2] * 40,
        "outgoing": [0] * 80,
        "length": [1514] * 80,
        "t_ns": [round(t * 1e9) for t in t1 + t2],
        "capture_drops": [0, 0, 0],
    }
    paced = ej.analyze({**cap, "dev": [1] * 40 + [0] * 40}, [1], 100e6)
    assert abs(paced["gap_over_serialization"]["p50"] - 1.0) < 1e-6
    assert paced["bunch_frames"]["mean"] == 1.0 and paced["bunched_share"] == 0.0
    bunched = ej.analyze({**cap, "dev": [0] * 40 + [2] * 40}, [2], 100e6)
    assert bunched["bunch_frames"]["mean"] == 4.0
    assert abs(bunched["bunch_start_to_start_us"]["p50"] - 4 * unit * 1e6) < 0.01
    both = ej.analyze(cap, [1, 2], 100e6)
    assert both["run_length_mean"] > 1.0  # sender 2's bunches arrive as runs
