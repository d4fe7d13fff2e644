"""Bringing a :class:`~parcomm.emu.layout.Layout` up: namespaces, bridge, veths, addresses.

::

    netns <run>-n0            netns <run>-sw                 netns <run>-n1
    eth0 10.213.0.1 ── veth ── p0 ─┐                 ┌─ p1 ── veth ── eth0 10.213.0.2
                                   └──── br0 ────────┘          ...

Each veth is created inside the switch namespace with its peer placed
straight into the host namespace, so nothing ever appears in the machine's
own (root) namespace. IPv6 is disabled in our namespaces so router
solicitations and MLD reports add no traffic to the measured queues, and
every host gets permanent neighbour (ARP) entries for all others and the
bridge static forwarding entries for every host: no ARP exchange delays a
first connection and no frame is flooded to every port while the bridge
learns (the simulator has neither).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping

from .layout import BRIDGE, HOST_DEV, Layout
from .netns import in_netns, set_offloads
from .shell import batch, run, tool

__all__ = ["create", "write_sysctls"]


def write_sysctls(netns: str, values: Mapping[str, object]) -> dict[str, str]:
    """Write ``net.*`` sysctls inside ``netns`` (via /proc/sys on a thread in it).

    Returns what the kernel reads back. A key the kernel lacks raises
    ``FileNotFoundError`` with the key in its message.
    """

    def work() -> dict[str, str]:
        got = {}
        for key, value in values.items():
            path = "/proc/sys/" + key.replace(".", "/")
            with open(path, "w") as f:
                f.write(f"{value}\n")
            with open(path) as f:
                got[key] = f.read().strip()
        return got

    return in_netns(netns, work)


def create(layout: Layout) -> None:
    """Create every namespace and link of ``layout`` (call ``naming.remove_run`` to undo)."""
    batch("ip", [f"netns add {ns}" for ns in layout.namespaces()], what="creating namespaces")
    sw = layout.switch_ns
    lines = [
        "link set lo up",
        f"link add {BRIDGE} type bridge stp_state 0 forward_delay 0",
    ]
    for h in layout.hosts:
        lines += [
            f"link add {h.port} mtu {h.mtu} type veth peer name {HOST_DEV} mtu {h.mtu} netns {h.netns}",
            f"link set {h.port} master {BRIDGE}",
            f"link set {h.port} up",
        ]
    lines.append(f"link set {BRIDGE} up")
    no_v6 = {"net.ipv6.conf.all.disable_ipv6": 1, "net.ipv6.conf.default.disable_ipv6": 1}
    _try_sysctls(sw, no_v6)
    batch("ip", lines, netns=sw, what="building the switch")
    set_offloads(sw, [h.port for h in layout.hosts])
    for h in layout.hosts:
        _try_sysctls(h.netns, no_v6)
        batch(
            "ip",
            [
                "link set lo up",
                f"addr add {h.addr}/{layout.prefix_len} dev {HOST_DEV}",
                f"link set {HOST_DEV} up",
                # TCP always builds GSO packets (segmented after the qdisc), so the host's htb
                # would release up to ~1 ms of segments at once and the switch would get them
                # at veth speed. One segment per packet makes the emulated link a wire: frames
                # reach the switch one serialization time apart (benchmarks/emu_jitter.py).
                f"link set {HOST_DEV} gso_max_segs 1",
            ],
            netns=h.netns,
            what=f"configuring host {h.name}",
        )
        set_offloads(h.netns, [HOST_DEV])
    _static_neighbours(layout)


def _mac(netns: str, dev: str) -> str:
    out = run(
        [tool("ip"), "-n", netns, "-j", "link", "show", "dev", dev], what=f"reading the MAC of {dev} in {netns}"
    ).stdout
    return json.loads(out)[0]["address"]


def _static_neighbours(layout: Layout) -> None:
    macs = {h.index: _mac(h.netns, HOST_DEV) for h in layout.hosts}
    batch(
        "bridge",
        [f"fdb replace {macs[h.index]} dev {h.port} master static" for h in layout.hosts],
        netns=layout.switch_ns,
        what="static forwarding entries of the switch",
    )
    for h in layout.hosts:
        batch(
            "ip",
            [
                f"neigh replace {o.addr} lladdr {macs[o.index]} dev {HOST_DEV} nud permanent"
                for o in layout.hosts
                if o is not h
            ],
            netns=h.netns,
            what=f"neighbour entries of host {h.name}",
        )


def _try_sysctls(netns: str, values: Mapping[str, object]) -> None:
    with contextlib.suppress(OSError):  # a kernel without IPv6: nothing to silence
        write_sysctls(netns, values)
