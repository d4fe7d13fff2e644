"""One scenario traced on both sides: per-flow congestion window, retransmissions, RTOs.

The tool for diagnosing a disagreement: ``parcomm conformance --only NAME
--trace FILE``. The kernel side comes from its own tracepoints
(:mod:`parcomm.emu.ktrace`), the simulator side from the core's stream
trace (``Simulation.enable_trace``). The simulator traces bare streams, so
it traces the ``incast`` workload; a ``program`` scenario gets the kernel
side only, and the figure says so.
"""

from __future__ import annotations

import time
from typing import Any

from .matrix import Scenario
from .profiles import profile_overrides
from .runner import emu_once, emu_sysctls
from .workloads import sim_incast

__all__ = ["trace_scenario", "HEADER_BYTES", "SAMPLE_INTERVAL_S"]

#: sock_diag sampling period of the emulated senders (each sample is one dump per namespace).
SAMPLE_INTERVAL_S = 0.001
#: A socket that had more than this acknowledged sent data, not just a go byte or a handshake.
SENDER_BYTES = 4096

#: IPv4 + TCP headers as the core's packets carry them (crates/parcomm-core/src/net/packet.rs
#: HEADER_BYTES, no timestamp option): MSS = MTU - 40. (Linux adds 12 bytes of timestamps: 1448.)
HEADER_BYTES = 40


def _kernel_flows(samples: list[dict], kt: Any, t0: float) -> list[dict]:
    """Sender sockets' samples (sock_diag) with the tracepoints' retransmissions and RTOs."""
    flows: dict[tuple, dict] = {}
    for p in samples:
        key = (p["src"], p["sport"], p["dst"], p["dport"])
        fl = flows.setdefault(
            key,
            {
                "flow": f"{p['src']}:{p['sport']}->{p['dst']}:{p['dport']}",
                "t": [],
                "cwnd": [],
                "ssthresh": [],
                "rto_s": [],
                "srtt_us": [],
                "acked": 0,
                "retransmits": [],
                "timeouts": [],
            },
        )
        fl["t"].append(p["t"] - t0)
        fl["cwnd"].append(p["cwnd"])
        fl["ssthresh"].append(p["ssthresh"])
        fl["rto_s"].append(p["rto_us"] * 1e-6)
        fl["srtt_us"].append(p["rtt_us"])
        fl["acked"] = max(fl["acked"], p["bytes_acked"])
    # Tracepoints see every namespace; only our sampled sockets' 4-tuples are ours.
    for r in kt.retransmits:
        fl = flows.get((r["src"], r["sport"], r["dst"], r["dport"]))
        if fl is not None:
            fl["retransmits"].append(r["t"] - t0)
    for s in kt.states:
        fl = flows.get((s["src"], s["sport"], s["dst"], s["dport"]))
        if fl is not None and s["state"] == "loss":
            fl["timeouts"].append(s["t"] - t0)
    out = []
    for fl in flows.values():
        if fl.pop("acked") > SENDER_BYTES or fl["retransmits"]:  # a socket that sent data, not only received
            fl["cwnd_at_timeouts"] = [1] * len(fl["timeouts"])
            out.append(fl)
    return sorted(out, key=lambda f: f["flow"])


def _sim_flows(tr: dict, mss: int) -> list[dict]:
    flows: dict[tuple, dict] = {}
    last_rtx: dict[tuple, int] = {}
    last_to: dict[tuple, int] = {}
    for i in range(len(tr["t"])):
        key = (tr["src"][i], tr["dst"][i])
        t = tr["t"][i] * 1e-9
        fl = flows.setdefault(
            key,
            {
                "flow": f"h{key[0]}->h{key[1]}",
                "t": [],
                "cwnd": [],
                "rto_s": [],
                "srtt_us": [],
                "retransmits": [],
                "timeouts": [],
            },
        )
        fl["t"].append(t)
        fl["cwnd"].append(tr["cwnd"][i] / mss)
        fl["rto_s"].append(tr["rto"][i] * 1e-9)
        fl["srtt_us"].append(tr["srtt"][i] / 1e3)
        rtx, to = tr["segments_retransmitted"][i], tr["timeouts"][i]
        if rtx > last_rtx.get(key, 0):
            fl["retransmits"].extend([t] * (rtx - last_rtx.get(key, 0)))
        if to > last_to.get(key, 0):
            fl["timeouts"].append(t)
        last_rtx[key], last_to[key] = rtx, to
    for fl in flows.values():
        fl["cwnd_at_timeouts"] = [1] * len(fl["timeouts"])
    return [flows[k] for k in sorted(flows)]


def trace_scenario(sc: Scenario, profile: str, *, emulate: bool = True, seed: int = 1) -> dict:
    """Run ``sc`` once on each side with tracing on; returns both traces as data."""
    data: dict[str, Any] = {"scenario": sc.name, "profile": profile, "emu": None, "sim": None}
    if emulate:
        from ..emu import EmuCluster
        from ..emu.ktrace import KernelTrace
        from ..emu.sockdiag import SocketSampler

        with EmuCluster(sc.platform(), sysctls=emu_sysctls(sc)) as cl:
            senders = cl.namespaces[1 : sc.senders + 1] if sc.workload == "incast" else cl.namespaces[: sc.ranks]
            with KernelTrace(cl.addresses) as kt, SocketSampler(senders, SAMPLE_INTERVAL_S) as sampler:
                res = emu_once(cl, sc)
            ex = res.extra
            t0 = ex["t0_monotonic"] if "t0_monotonic" in ex else ex["t0_wall"] - (time.time() - time.monotonic())
            assert kt.result is not None
            data["emu"] = {
                "flows": _kernel_flows(sampler.samples, kt.result, t0),
                "lost_events": kt.result.lost_events,
                "samples": len(sampler.samples),
            }
            data["emu_s"] = res.time
    if sc.workload == "incast":
        plat = sc.platform(**profile_overrides(profile, sc.tcp["sack"]))
        r = sim_incast(plat, sc.senders, sc.size, seed=seed, trace=True)
        mss = int(plat["hosts"][0]["mtu"]) - HEADER_BYTES
        data["sim"] = {"flows": _sim_flows(r.trace or {}, mss), "dropped_samples": (r.trace or {}).get("dropped", 0)}
        data["sim_s"] = r.time
    else:
        data["sim"] = {"flows": [], "note": "the simulator traces incast scenarios only"}
    return data
