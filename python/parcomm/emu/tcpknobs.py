"""Per-host TCP settings: what the platform's ``tcp`` table becomes in Linux.

=====================  ===============================================  ==========================
platform field         Linux knob (inside the host's namespace)         note
=====================  ===============================================  ==========================
rto_min_s              route metric ``rto_min`` on the subnet route   ms resolution
                       route, and ``net.ipv4.tcp_rto_min_us``
rto_max_s              ``net.ipv4.tcp_rto_max_ms`` (Linux >= 6.15)      kernel range [1 s, 120 s]
initial_cwnd_segments  route metric ``initcwnd``
delayed_ack = false    route metric ``quickack 1``                      true keeps Linux's own
dupack_threshold       ``net.ipv4.tcp_reordering``
sndbuf/rcvbuf_bytes    ``tcp_wmem``/``tcp_rmem`` default and max        autotuning capped there
(NewReno)              ``tcp_congestion_control = reno``
=====================  ===============================================  ==========================

Also ``tcp_no_metrics_save = 1``, so one run's RTT and ssthresh estimates do
not leak into the next through the route cache. Everything else (SACK, RACK,
tail loss probes, the 1 s initial RTO) stays as the kernel ships it: this is
the real Linux stack, and the docs say where it differs from the simulator.
A caller may set kernel TCP settings the platform does not describe
(``EmuCluster(..., sysctls={"net.ipv4.tcp_sack": 0})``; the conformance
suite does so to match a scenario): only ``net.ipv4.tcp_*`` keys.

The per-node random RTO schemes of seed 000 §5.2 need no code here:
``parcomm.platform.apply_rto`` draws each host's MIN/MAX into the platform,
and each host's namespace gets its own values.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from .layout import HOST_DEV, HostPlan, Layout
from .netns import in_netns
from .shell import EmuError, batch
from .topology import write_sysctls

__all__ = ["HostKnobs", "knobs_for", "apply", "kernel_has", "check_extra_sysctls"]

#: Bounds the kernel enforces on net.ipv4.tcp_rto_max_ms (net/ipv4/sysctl_net_ipv4.c).
RTO_MAX_FLOOR_MS = 1000
RTO_MAX_CEIL_MS = 120000


@dataclass
class HostKnobs:
    """What one host gets, and what had to be bent to fit the kernel."""

    route_metrics: list[str]
    sysctls: dict[str, object]
    rto_min_ms: int
    rto_max_ms: int | None
    notes: list[str] = field(default_factory=list)


def kernel_has(netns: str, key: str) -> bool:
    """Whether the kernel offers ``key`` (e.g. ``net.ipv4.tcp_rto_max_ms``) inside ``netns``."""
    path = "/proc/sys/" + key.replace(".", "/")
    return bool(in_netns(netns, lambda: os.path.exists(path)))


def knobs_for(h: HostPlan, *, have_rto_max: bool, have_rto_min_us: bool) -> HostKnobs:
    tcp = h.tcp
    notes: list[str] = []
    rto_min_ms = max(1, int(round(float(tcp["rto_min_s"]) * 1e3)))
    if abs(rto_min_ms - float(tcp["rto_min_s"]) * 1e3) > 1e-6:
        notes.append(
            f"rto_min {float(tcp['rto_min_s']) * 1e3:g} ms rounded to {rto_min_ms} ms (route metrics are in ms)"
        )
    metrics = [
        f"rto_min {rto_min_ms}ms",
        f"initcwnd {int(tcp['initial_cwnd_segments'])}",
    ]
    if not tcp.get("delayed_ack"):
        metrics.append("quickack 1")
    sysctls: dict[str, object] = {
        "net.ipv4.tcp_congestion_control": "reno",
        "net.ipv4.tcp_no_metrics_save": 1,
        "net.ipv4.tcp_reordering": int(tcp["dupack_threshold"]),
        "net.ipv4.tcp_wmem": f"4096 {int(tcp['sndbuf_bytes'])} {int(tcp['sndbuf_bytes'])}",
        "net.ipv4.tcp_rmem": f"4096 {int(tcp['rcvbuf_bytes'])} {int(tcp['rcvbuf_bytes'])}",
    }
    if have_rto_min_us:
        sysctls["net.ipv4.tcp_rto_min_us"] = rto_min_ms * 1000
    rto_max_ms: int | None = None
    if have_rto_max:
        want = float(tcp["rto_max_s"]) * 1e3
        rto_max_ms = int(min(max(round(want), RTO_MAX_FLOOR_MS), RTO_MAX_CEIL_MS))
        if rto_max_ms != round(want):
            notes.append(
                f"rto_max {want:g} ms clamped to {rto_max_ms} ms (kernel range {RTO_MAX_FLOOR_MS}-{RTO_MAX_CEIL_MS} ms)"
            )
        sysctls["net.ipv4.tcp_rto_max_ms"] = rto_max_ms
    else:
        notes.append(
            "rto_max not applied: this kernel has no net.ipv4.tcp_rto_max_ms (Linux < 6.15); RTO max stays 120 s"
        )
    return HostKnobs(metrics, sysctls, rto_min_ms, rto_max_ms, notes)


def check_extra_sysctls(extra: Mapping[str, object]) -> dict[str, object]:
    """Kernel TCP settings beyond the platform (e.g. ``net.ipv4.tcp_sack``), checked.

    Only ``net.ipv4.tcp_*`` keys with an int or a short plain value: they are
    written into our own namespaces' ``/proc/sys``, nowhere else.
    """
    out: dict[str, object] = {}
    for k, v in extra.items():
        if not isinstance(k, str) or not re.fullmatch(r"net\.ipv4\.tcp_[a-z0-9_]{1,40}", k):
            raise EmuError(f"sysctl {k!r}: only net.ipv4.tcp_* settings can be given")
        if (
            isinstance(v, bool)
            or not isinstance(v, (int, str))
            or (isinstance(v, str) and not re.fullmatch(r"[\w .-]{1,64}", v))
        ):
            raise EmuError(f"sysctl {k}: value {v!r} is not a number or a short word")
        out[k] = v
    return out


def apply(layout: Layout, extra: Mapping[str, object] | None = None) -> dict[str, HostKnobs]:
    """Set every host's route metrics and sysctls (plus ``extra``); returns them by host name."""
    probe = layout.hosts[0].netns
    have_max = kernel_has(probe, "net.ipv4.tcp_rto_max_ms")
    have_min_us = kernel_has(probe, "net.ipv4.tcp_rto_min_us")
    out: dict[str, HostKnobs] = {}
    for h in layout.hosts:
        k = knobs_for(h, have_rto_max=have_max, have_rto_min_us=have_min_us)
        k.sysctls.update(extra or {})
        batch(
            "ip",
            [
                f"route replace {layout.subnet} dev {HOST_DEV} proto kernel scope link src {h.addr} "
                + " ".join(k.route_metrics)
            ],
            netns=h.netns,
            what=f"route metrics of host {h.name}",
        )
        write_sysctls(h.netns, k.sysctls)
        out[h.name] = k
    return out
