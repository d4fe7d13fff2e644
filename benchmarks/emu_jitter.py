"""How evenly do the emulated hosts' frames reach the switch? The timing noise of the
referee (real Linux TCP in namespaces), measured, before any of it goes into the
simulator.

The simulator's hosts send like an ideal NIC: a sender's frames leave back to back
at the link rate, exactly one serialization time apart when the window allows, and
frames of senders with the same rate interleave in a fixed order at the switch. The
conformance traces (docs/conformance-results.md) show the kernel's incast flows
sharing the port where the simulator's lose whole windows to one flow. One
candidate cause is timing noise on the way into the switch: htb's dequeues from
hrtimers, the veth pair's softirq batches, two CPUs shared by every namespace.
This measures it, on the emulated cluster the conformance suite uses:

* each sender's **inter-arrival gaps** of full frames at its bridge port, in units
  of one serialization time at the link rate (1538 bytes of wire time for a
  1514-byte frame: ``emu/shaping.py``). 1.0 is an ideal NIC; below 1.0 the frames
  bunched on the way in (the port's own htb allows a burst of two frames);
  above, the sender was idle or window-limited;
* the **run length** at the bottleneck: in the merged arrival order of all
  senders' data frames, how many consecutive frames come from the same sender
  (1.0 when senders interleave frame by frame, as equal-rate ideal NICs do);
* the **phase noise**: each frame's arrival time minus the time an ideal NIC would
  have sent it within its train (a train: frames less than 2 serialization times
  apart), whose spread is the per-packet jitter a simulator would add.

Kernel receive timestamps (SO_TIMESTAMPNS) are taken when a frame enters the bridge
port, so the capture process reading them late does not move them; it does use
CPU the senders share, which the notes say. Needs root.

    sudo python3 benchmarks/emu_jitter.py --senders 1,4,16 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
WIRE_OVERHEAD = 24  # preamble + FCS + inter-frame gap (emu/shaping.py ETHERNET_WIRE_OVERHEAD)
FULL_FRAME = 1400  # captured length at or above which a frame is a full data segment


def serialization_s(captured_len: int, rate_bps: float) -> float:
    return (captured_len + WIRE_OVERHEAD) * 8 / rate_bps


def analyze(cap: dict, sender_devs: list[int], rate_bps: float) -> dict:
    """The three measures of the module docstring from one capture."""
    dev = np.asarray(cap["dev"], dtype=np.int64)
    out = np.asarray(cap["outgoing"], dtype=bool)
    length = np.asarray(cap["length"], dtype=np.int64)
    t = np.asarray(cap["t_ns"], dtype=np.int64) / 1e9
    data = (~out) & (length >= FULL_FRAME) & np.isin(dev, sender_devs)
    unit = serialization_s(int(np.median(length[data])) if data.any() else 1514, rate_bps)
    gaps, phase, bunch_sizes, bunch_periods = [], [], [], []
    for d in sender_devs:
        ts = np.sort(t[data & (dev == d)])
        if len(ts) < 3:
            continue
        g = np.diff(ts) / unit
        gaps.append(g)
        # bunches: frames that reached the port less than half a serialization time apart
        first = np.concatenate([[0], np.nonzero(g >= 0.5)[0] + 1])
        bunch_sizes.append(np.diff(np.concatenate([first, [len(ts)]])))
        bunch_periods.append(np.diff(ts[first]) * 1e6)
        # trains: frames less than two serialization times apart; within one, the ideal
        # NIC sends the j-th frame j serialization times after the first
        starts = np.concatenate([[0], np.nonzero(g >= 2.0)[0] + 1])
        ends = np.concatenate([starts[1:], [len(ts)]])
        for a, b in zip(starts, ends):
            if b - a >= 4:
                ideal = ts[a] + unit * np.arange(b - a)
                dev_s = ts[a:b] - ideal
                phase.append(dev_s - np.median(dev_s))
    order = np.argsort(t[data], kind="stable")
    src = dev[data][order]
    runs = np.diff(np.concatenate([[0], np.nonzero(np.diff(src))[0] + 1, [len(src)]])) if len(src) else np.array([])
    allg = np.concatenate(gaps) if gaps else np.array([])
    ph = np.concatenate(phase) * 1e6 if phase else np.array([])
    bs = np.concatenate(bunch_sizes) if bunch_sizes else np.array([])
    bp = np.concatenate(bunch_periods) if bunch_periods else np.array([])

    def q(a: np.ndarray, p: float) -> float | None:
        return float(np.percentile(a, p)) if len(a) else None

    return {
        "data_frames": int(data.sum()),
        "capture_drops": int(sum(cap["capture_drops"])),
        "serialization_us": unit * 1e6,
        "gap_over_serialization": {f"p{p}": q(allg, p) for p in (1, 10, 50, 90, 99)},
        "bunched_share": float((allg < 0.5).mean()) if len(allg) else None,
        "bunch_frames": {"mean": float(bs.mean()) if len(bs) else None, "p50": q(bs, 50), "p90": q(bs, 90)},
        "bunch_start_to_start_us": {f"p{p}": q(bp, p) for p in (10, 50, 90)},
        "run_length_mean": float(runs.mean()) if len(runs) else None,
        "run_length_p99": q(runs, 99),
        "phase_noise_us": {f"p{p}": q(ph, p) for p in (1, 10, 50, 90, 99)}
        | {"std": float(ph.std()) if len(ph) else None},
    }


def measure(senders: int, nbytes: int, rate: str, buffer: str, rto_min: str) -> dict:
    from parcomm.emu import EmuCluster
    from parcomm.emu.launcher import spawn

    platform = f"star:{senders + 1},rate={rate},buffer={buffer},rto_min={rto_min}"
    with EmuCluster(platform) as cl, tempfile.TemporaryDirectory() as tmp:
        lay = cl.layout
        assert lay is not None
        devs = [h.port for h in lay.hosts]
        cap_file, ready = os.path.join(tmp, "cap.json"), os.path.join(tmp, "ready")
        proc = spawn(
            lay.switch_ns,
            [
                sys.executable,
                str(HERE / "emu_jitter_capture.py"),
                "--devs",
                ",".join(devs),
                "--out",
                cap_file,
                "--ready",
                ready,
                "--seconds",
                "120",
            ],
            os.path.join(tmp, "capture.log"),
        )
        try:
            deadline = time.monotonic() + 20
            while not os.path.exists(ready):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("capture did not start: " + Path(tmp, "capture.log").read_text()[-2000:])
                time.sleep(0.05)
            res = cl.incast_raw(nbytes, senders, receiver=0)
        finally:
            proc.send_signal(signal.SIGTERM)  # our own child, by pid
            try:
                proc.wait(timeout=30)
            except Exception:
                proc.kill()
                proc.wait()
        cap = json.loads(Path(cap_file).read_text())
        out = analyze(cap, list(range(1, senders + 1)), lay.hosts[0].rate_bps)
        out["incast_time_s"] = res.time
        out["port_drops"] = int(res.port_drops())
        return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--senders", default="1,4,16", help="comma-separated sender counts")
    ap.add_argument("--size", default="256KiB", help="bytes each sender sends")
    ap.add_argument("--rate", default="100M", help="link rate of every host")
    ap.add_argument("--buffer", default="128KiB", help="switch port buffer")
    ap.add_argument("--rto-min", default="200ms")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(HERE / "results" / "emu_jitter.json"))
    args = ap.parse_args()
    from parcomm.platform.units import parse_size

    nbytes = parse_size(args.size, "--size")
    rows = []
    for rep in range(args.repeat):  # interleaved: every sender count once per round
        for s in (int(x) for x in args.senders.split(",")):
            r = measure(s, nbytes, args.rate, args.buffer, args.rto_min)
            r.update(senders=s, round=rep, load_average_1min=os.getloadavg()[0])  # the noise may depend on it
            rows.append(r)
            g, ph = r["gap_over_serialization"], r["phase_noise_us"]
            print(
                f"senders {s:3d} round {rep}: gaps/serialization p10 {g['p10']:.2f} p50 {g['p50']:.2f} "
                f"p90 {g['p90']:.2f}; bunched {r['bunched_share']:.1%}; bunches of {r['bunch_frames']['mean']:.1f} "
                f"frames every {r['bunch_start_to_start_us']['p50']:.0f} us (median); "
                f"run length mean {r['run_length_mean']:.2f}; "
                f"phase noise std {ph['std']:.1f} us (p1 {ph['p1']:.1f}, p99 {ph['p99']:.1f}); "
                f"capture drops {r['capture_drops']}",
                flush=True,
            )
    doc = {
        "what": "arrival timing of emulated hosts' full frames at the switch (benchmarks/emu_jitter.py)",
        "command": "python3 benchmarks/emu_jitter.py " + " ".join(sys.argv[1:]),
        "machine_cpus": os.cpu_count(),
        "settings": {"size": nbytes, "rate": args.rate, "buffer": args.buffer, "rto_min": args.rto_min},
        "rows": rows,
    }
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
