"""Rate and finite buffers with the qdiscs this kernel has: htb + bfifo/pfifo.

The kernels of these machines have no ``netem``, ``fq``, ``fq_codel``,
``red`` or ``prio``; ``htb``, ``tbf``, ``bfifo``, ``pfifo`` and
``pfifo_fast`` exist. Every port gets the same two-level tree::

    root 1: htb default 1
      class 1:1 htb rate R ceil R burst B cburst B
        leaf 10: bfifo limit BYTES      (switch port, buffer in bytes)
                 pfifo limit PACKETS    (switch port in packets; host NIC queue)

* switch port ``p<i>`` (bridge side of host i's veth, egress towards host
  i): rate = the link's rate, leaf = the switch's port buffer. This is the
  output-queued switch port of the simulator, and where incast drops happen.
* host NIC ``eth0`` (egress towards the switch): rate = the link's rate, leaf
  = ``pfifo limit nic_queue_packets``, the simulator's NIC queue.

``bfifo`` counts the bytes of each queued frame as the kernel sees it (the
Ethernet header and IP packet, 1514 bytes for a full frame at MTU 1500; no
preamble, FCS or inter-frame gap). htb's rate counts the same bytes unless
told otherwise, so each class adds ``overhead 24`` (8 preamble + 4 FCS + 12
inter-frame gap): a full frame then costs 1538 bytes of link time, as on a
real Ethernet and in the simulator (``wire_bytes`` in spec.rs), not 1514,
which would make every emulated link 1.6 % faster than its rate. htb's ``burst`` is how many bytes may leave
back to back after an idle period; a real link has none, so we keep it at
two full frames (the smallest that still lets htb reach its rate with
hrtimer-driven dequeues).
"""

from __future__ import annotations

import json

from .layout import HOST_DEV, Layout
from .shell import batch, run, tool

__all__ = ["port_tree", "shape", "qdisc_stats", "LEAF_HANDLE", "LEAF_HANDLE_ID"]

#: The leaf qdisc's handle: "10:" in tc's (hexadecimal) notation, 0x10 << 16 in netlink.
LEAF_HANDLE = "10:"
LEAF_HANDLE_ID = 0x10 << 16


#: Ethernet bytes on the wire that the kernel's frame length leaves out: preamble
#: and start delimiter (8), FCS (4), inter-frame gap (12) -- IEEE 802.3 clause 4.
ETHERNET_WIRE_OVERHEAD = 24


def port_tree(dev: str, rate_bps: float, mtu: int, leaf: str, limit: int) -> list[str]:
    """``tc -batch`` lines for one shaped port (see the module docstring)."""
    frame = mtu + 14
    burst = 2 * frame
    rate = f"{int(round(rate_bps))}bit"
    return [
        f"qdisc replace dev {dev} root handle 1: htb default 1",
        f"class add dev {dev} parent 1: classid 1:1 htb rate {rate} ceil {rate} overhead {ETHERNET_WIRE_OVERHEAD} "
        f"burst {burst} cburst {burst} quantum {frame}",
        f"qdisc add dev {dev} parent 1:1 handle {LEAF_HANDLE} {leaf} limit {int(limit)}",
    ]


def shape(layout: Layout) -> None:
    """Install the port trees of every switch port and host NIC."""
    leaf = "bfifo" if layout.buffer["unit"] == "bytes" else "pfifo"
    sw_lines = []
    for h in layout.hosts:
        sw_lines += port_tree(h.port, h.rate_bps, h.mtu, leaf, layout.buffer["size"])
    batch("tc", sw_lines, netns=layout.switch_ns, what="shaping switch ports")
    for h in layout.hosts:
        batch(
            "tc",
            port_tree(HOST_DEV, h.rate_bps, h.mtu, "pfifo", h.nic_queue_packets),
            netns=h.netns,
            what=f"shaping host {h.name}",
        )


def qdisc_stats(netns: str) -> dict[str, dict]:
    """Per device, the leaf qdisc's counters: ``{dev: {sent_bytes, sent_packets, drops, backlog_bytes, qlen}}``."""
    out = run([tool("tc"), "-n", netns, "-s", "-j", "qdisc", "show"], what=f"tc -s qdisc in {netns}").stdout
    stats: dict[str, dict] = {}
    for q in json.loads(out or "[]"):
        if q.get("handle") != LEAF_HANDLE:
            continue
        stats[q["dev"]] = {
            "sent_bytes": int(q.get("bytes", 0)),
            "sent_packets": int(q.get("packets", 0)),
            "drops": int(q.get("drops", 0)),
            "backlog_bytes": int(q.get("backlog", 0)),
            "qlen": int(q.get("qlen", 0)),
        }
    return stats
