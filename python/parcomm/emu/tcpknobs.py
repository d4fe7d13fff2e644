"""Per-host TCP settings: what the platform's ``tcp`` table becomes in Linux.

Every ``TcpSpec`` field has a row in ``platform/tcp_backends.toml`` (its
simulator meaning, its Linux knob or why there is none); this module applies
the ``route`` and ``sysctl`` rows, one function per field (``ROUTE_KNOBS``,
``SYSCTL_KNOBS``; a test checks both cover the table), and reports the
``fixed`` and ``global`` rows a platform asks the kernel to break
(``HostKnobs.mismatches``): a stack the kernel cannot reproduce is named in
``extra["tcp_notes"]`` and by the CLI, never silently swapped. The congestion
control comes from the platform (``tcp.cubic``: ``cubic`` or ``reno``); CUBIC
is added to the machine's ``net.ipv4.tcp_allowed_congestion_control`` while the
namespaces are set, then the list is restored (a namespace other than the
machine's own may only choose an allowed one, tcp_set_default_congestion_control()).

Also ``tcp_no_metrics_save = 1``, so one run's RTT and ssthresh estimates do
not leak into the next through the route cache. A caller may set kernel TCP
settings beyond the platform (``EmuCluster(..., sysctls={...})``): only
``net.ipv4.tcp_*`` keys, applied after the table's.

The per-node random RTO schemes of seed 000 §5.2 need no code here:
``parcomm.platform.apply_rto`` draws each host's MIN/MAX into the platform,
and each host's namespace gets its own values.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..platform.tcp_backends import kernel_mismatches, resolve_slots
from .layout import HOST_DEV, HostPlan, Layout
from .netns import in_netns
from .shell import EmuError, batch
from .topology import write_sysctls

__all__ = [
    "HostKnobs",
    "knobs_for",
    "apply",
    "kernel_has",
    "check_extra_sysctls",
    "SYSCTL_KNOBS",
    "ROUTE_KNOBS",
    "machine_kernel",
    "allowing_congestion_control",
]

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
    #: ``fixed``/``global`` rows of ``tcp_backends.toml`` the platform asks the kernel to break.
    mismatches: list[str] = field(default_factory=list)


def kernel_has(netns: str, key: str) -> bool:
    """Whether the kernel offers ``key`` (e.g. ``net.ipv4.tcp_rto_max_ms``) inside ``netns``."""
    path = "/proc/sys/" + key.replace(".", "/")
    return bool(in_netns(netns, lambda: os.path.exists(path)))


def _on(flag: object, on: int, off: int = 0) -> int:
    return on if flag else off


#: ``sysctl`` rows of ``tcp_backends.toml``: field -> the per-namespace settings it becomes.
SYSCTL_KNOBS: dict[str, Callable[[Mapping[str, Any]], dict[str, object]]] = {
    "rto_max_s": lambda t: {},  # range-checked in knobs_for (kernel floor 1 s, needs Linux >= 6.15)
    "sndbuf_bytes": lambda t: {
        "net.ipv4.tcp_wmem": f"4096 {int(t['sndbuf_initial_bytes'] or t['sndbuf_bytes'])} {int(t['sndbuf_bytes'])}"
    },
    "sndbuf_initial_bytes": lambda t: {},  # tcp_wmem[1], written with sndbuf_bytes
    "rcvbuf_bytes": lambda t: {"net.ipv4.tcp_rmem": f"4096 {int(t['rcvbuf_bytes'])} {int(t['rcvbuf_bytes'])}"},
    "dupack_threshold": lambda t: {"net.ipv4.tcp_reordering": int(t["dupack_threshold"])},
    "sack": lambda t: {"net.ipv4.tcp_sack": _on(t["sack"], 1)},
    "tail_loss_probe": lambda t: {"net.ipv4.tcp_early_retrans": _on(t["tail_loss_probe"], 3)},
    "cwnd_restart_after_idle": lambda t: {"net.ipv4.tcp_slow_start_after_idle": _on(t["cwnd_restart_after_idle"], 1)},
    "timestamps": lambda t: {"net.ipv4.tcp_timestamps": _on(t["timestamps"], 1)},
    "rack": lambda t: {"net.ipv4.tcp_recovery": _on(t["rack"], 1)},
    "cubic": lambda t: {"net.ipv4.tcp_congestion_control": "cubic" if t["cubic"] else "reno"},
    "frto": lambda t: {"net.ipv4.tcp_frto": _on(t["frto"], 2)},
    # named slots: knobs_for has already written them onto the booleans above (resolve_slots)
    "congestion_control": lambda t: {},
    "loss_detection": lambda t: {},
}

#: ``route`` rows: field -> the metrics of the subnet route it becomes.
ROUTE_KNOBS: dict[str, Callable[[Mapping[str, Any]], list[str]]] = {
    "rto_min_s": lambda t: [f"rto_min {_rto_min_ms(t)}ms"],
    "initial_cwnd_segments": lambda t: [f"initcwnd {int(t['initial_cwnd_segments'])}"],
    "delayed_ack": lambda t: [] if t["delayed_ack"] else ["quickack 1"],
}


def _rto_min_ms(tcp: Mapping[str, Any]) -> int:
    return max(1, int(round(float(tcp["rto_min_s"]) * 1e3)))


def machine_kernel() -> dict[str, Any]:
    """The ``global`` rows as this machine has them (CUBIC's HyStart module parameter)."""
    try:
        with open("/sys/module/tcp_cubic/parameters/hystart") as f:
            return {"hystart": f.read().strip() not in ("0", "N")}
    except OSError:
        return {"hystart": False}


def knobs_for(
    h: HostPlan, *, have_rto_max: bool, have_rto_min_us: bool, kernel: Mapping[str, Any] | None = None
) -> HostKnobs:
    tcp = resolve_slots(h.tcp)
    notes: list[str] = []
    rto_min_ms = _rto_min_ms(tcp)
    if abs(rto_min_ms - float(tcp["rto_min_s"]) * 1e3) > 1e-6:
        notes.append(
            f"rto_min {float(tcp['rto_min_s']) * 1e3:g} ms rounded to {rto_min_ms} ms (route metrics are in ms)"
        )
    metrics = [m for knob in ROUTE_KNOBS.values() for m in knob(tcp)]
    sysctls: dict[str, object] = {"net.ipv4.tcp_no_metrics_save": 1}
    for knob in SYSCTL_KNOBS.values():
        sysctls.update(knob(tcp))
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
    mismatches = kernel_mismatches(tcp, kernel)
    notes += [f"not reproduced by the kernel: {m}" for m in mismatches]
    return HostKnobs(metrics, sysctls, rto_min_ms, rto_max_ms, notes, mismatches)


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


#: The machine-wide list of congestion controls a namespace other than the machine's own may pick.
ALLOWED_CC = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"


@contextlib.contextmanager
def allowing_congestion_control(names: set[str]) -> Iterator[None]:
    """``names`` added to the machine's allowed congestion controls for the block, then the list
    as it was restored (only if we changed it). Reno is always allowed."""
    try:
        with open(ALLOWED_CC) as f:
            before = f.read().split()
    except OSError:
        yield
        return
    missing = sorted(set(names) - set(before) - {"reno"})
    if not missing:
        yield
        return
    with open(ALLOWED_CC, "w") as f:
        f.write(" ".join([*before, *missing]) + "\n")
    try:
        yield
    finally:
        with open(ALLOWED_CC, "w") as f:
            f.write(" ".join(before) + "\n")


def apply(layout: Layout, extra: Mapping[str, object] | None = None) -> dict[str, HostKnobs]:
    """Set every host's route metrics and sysctls (plus ``extra``); returns them by host name."""
    probe = layout.hosts[0].netns
    have_max = kernel_has(probe, "net.ipv4.tcp_rto_max_ms")
    have_min_us = kernel_has(probe, "net.ipv4.tcp_rto_min_us")
    kernel = machine_kernel()
    out: dict[str, HostKnobs] = {}
    for h in layout.hosts:
        out[h.name] = knobs_for(h, have_rto_max=have_max, have_rto_min_us=have_min_us, kernel=kernel)
        out[h.name].sysctls.update(extra or {})
    wanted = {str(k.sysctls.get("net.ipv4.tcp_congestion_control", "reno")) for k in out.values()}
    with allowing_congestion_control(wanted):
        for h in layout.hosts:
            k = out[h.name]
            batch(
                "ip",
                [
                    f"route replace {layout.subnet} dev {HOST_DEV} proto kernel scope link src {h.addr} "
                    + " ".join(k.route_metrics)
                ],
                netns=h.netns,
                what=f"route metrics of host {h.name}",
            )
            got = write_sysctls(h.netns, k.sysctls)
            cc = got.get("net.ipv4.tcp_congestion_control")
            if cc is not None and cc != k.sysctls["net.ipv4.tcp_congestion_control"]:
                raise EmuError(
                    f"host {h.name}: the kernel runs {cc}, not {k.sysctls['net.ipv4.tcp_congestion_control']}"
                )
    return out
