"""Kernel counters of an emulated run, in the simulator's column layout.

Per host, each namespace's own ``/proc/net/snmp`` and ``/proc/net/netstat``
(read as ``/proc/thread-self/net/...`` from a thread that joined the
namespace); per port, the leaf qdisc's counters from ``tc -s qdisc``. A run
reports the difference between a snapshot before and one after it.

Columns follow ``Simulation.counters()`` (crates/parcomm-py/src/lib.rs):

==========================  ===============================================
simulator column            kernel source
==========================  ===============================================
hosts.segments_sent         TcpExt TCPOrigDataSent + Tcp RetransSegs (data segments incl. retransmissions)
hosts.segments_retransmitted  Tcp RetransSegs
hosts.timeouts              TcpExt TCPTimeouts (RTO expirations)
hosts.fast_retransmits      TcpExt TCPFastRetrans
hosts.nic_drops             drops of the host's eth0 pfifo
hosts.bytes_sent, bytes_retransmitted
                            None here: the namespace has no TCP payload-byte counter;
                            ``EmuCluster.run`` fills them from the ranks' TCP_INFO
hosts.corrupt_discards, cpu_busy_s
                            None
ports.tx_packets, drops     leaf qdisc "sent ... pkt", "dropped"
ports.max_occupancy         highest backlog seen by the queue sampler (None when not sampled)
ports.cell_drops, wire_losses, mean_occupancy
                            None (no cells; no wire losses without netem)
==========================  ===============================================

Extra host columns the simulator lacks: ``out_segs`` (Tcp OutSegs, ACKs
included), ``lost_retransmits`` (TCPLostRetransmit), ``loss_probes``
(TCPLossProbes, tail loss probes), ``spurious_rtos`` (TCPSpuriousRTOs),
``syn_retransmits`` (TCPSynRetrans), ``ip_out_octets`` (IpExt OutOctets, all
IP bytes sent incl. headers and ACKs).
"""

from __future__ import annotations

import contextlib
from typing import Any

from .layout import HOST_DEV, Layout
from .netns import in_netns
from .shaping import qdisc_stats

__all__ = ["parse_proc_tables", "read_proc_counters", "Snapshot", "snapshot", "delta", "HOST_COLUMNS", "PORT_COLUMNS"]

HOST_COLUMNS = (
    "name",
    "bytes_sent",
    "bytes_retransmitted",
    "segments_sent",
    "segments_retransmitted",
    "timeouts",
    "fast_retransmits",
    "nic_drops",
    "corrupt_discards",
    "cpu_busy_s",
    # kernel extras
    "out_segs",
    "lost_retransmits",
    "loss_probes",
    "spurious_rtos",
    "syn_retransmits",
    "ip_out_octets",
    "recoveries",
)
PORT_COLUMNS = (
    "name",
    "unit",
    "capacity",
    "tx_packets",
    "drops",
    "cell_drops",
    "wire_losses",
    "max_occupancy",
    "mean_occupancy",
)

_KERNEL = {  # our column: (table, field)
    "retrans_segs": ("Tcp", "RetransSegs"),
    "out_segs": ("Tcp", "OutSegs"),
    "orig_data_sent": ("TcpExt", "TCPOrigDataSent"),
    "timeouts": ("TcpExt", "TCPTimeouts"),
    "fast_retransmits": ("TcpExt", "TCPFastRetrans"),
    "lost_retransmits": ("TcpExt", "TCPLostRetransmit"),
    "loss_probes": ("TcpExt", "TCPLossProbes"),
    "spurious_rtos": ("TcpExt", "TCPSpuriousRTOs"),
    "syn_retransmits": ("TcpExt", "TCPSynRetrans"),
    "ip_out_octets": ("IpExt", "OutOctets"),
    # Entries into fast recovery (tcp_enter_recovery() in tcp_input.c counts one of the two).
    "sack_recoveries": ("TcpExt", "TCPSackRecovery"),
    "reno_recoveries": ("TcpExt", "TCPRenoRecovery"),
}


def parse_proc_tables(text: str) -> dict[str, dict[str, int]]:
    """``/proc/net/snmp``-style text (header line, value line per table) as nested dicts."""
    tables: dict[str, dict[str, int]] = {}
    lines = text.splitlines()
    for head, vals in zip(lines[::2], lines[1::2]):
        name, _, keys = head.partition(":")
        vname, _, values = vals.partition(":")
        if name != vname:
            continue
        row = {}
        for k, v in zip(keys.split(), values.split()):
            with contextlib.suppress(ValueError):
                row[k] = int(v)
        tables.setdefault(name.strip(), {}).update(row)
    return tables


def read_proc_counters(netns: str) -> dict[str, dict[str, int]]:
    """Both files of one namespace, parsed."""

    def work() -> str:
        parts = []
        for fn in ("snmp", "netstat"):
            with open(f"/proc/thread-self/net/{fn}") as f:
                parts.append(f.read())
        return "\n".join(p.rstrip("\n") for p in parts)

    return parse_proc_tables(in_netns(netns, work))


Snapshot = dict[str, Any]


def snapshot(layout: Layout) -> Snapshot:
    """Everything countable, now."""
    hosts = {}
    nics = {}
    for h in layout.hosts:
        t = read_proc_counters(h.netns)
        hosts[h.name] = {col: t.get(tab, {}).get(fld) for col, (tab, fld) in _KERNEL.items()}
        nics[h.name] = qdisc_stats(h.netns).get(HOST_DEV, {})
    return {"hosts": hosts, "nics": nics, "ports": qdisc_stats(layout.switch_ns)}


def _d(after: Any, before: Any) -> Any:
    if after is None or before is None:
        return None
    return after - before


def delta(layout: Layout, before: Snapshot, after: Snapshot, max_backlog: dict[str, int] | None = None) -> dict:
    """Counters of what happened between two snapshots, as columns."""
    hc: dict[str, list] = {c: [] for c in HOST_COLUMNS}
    for h in layout.hosts:
        b, a = before["hosts"][h.name], after["hosts"][h.name]
        d = {k: _d(a.get(k), b.get(k)) for k in _KERNEL}
        nic_drops = _d(after["nics"][h.name].get("drops"), before["nics"][h.name].get("drops"))
        seg = (
            None
            if d["orig_data_sent"] is None or d["retrans_segs"] is None
            else d["orig_data_sent"] + d["retrans_segs"]
        )
        row = {
            "name": h.name,
            "bytes_sent": None,
            "bytes_retransmitted": None,
            "segments_sent": seg,
            "segments_retransmitted": d["retrans_segs"],
            "timeouts": d["timeouts"],
            "fast_retransmits": d["fast_retransmits"],
            "nic_drops": nic_drops,
            "corrupt_discards": None,
            "cpu_busy_s": None,
            "out_segs": d["out_segs"],
            "lost_retransmits": d["lost_retransmits"],
            "loss_probes": d["loss_probes"],
            "spurious_rtos": d["spurious_rtos"],
            "syn_retransmits": d["syn_retransmits"],
            "ip_out_octets": d["ip_out_octets"],
            "recoveries": None
            if d["sack_recoveries"] is None or d["reno_recoveries"] is None
            else d["sack_recoveries"] + d["reno_recoveries"],
        }
        for c in HOST_COLUMNS:
            hc[c].append(row[c])

    pc: dict[str, list] = {c: [] for c in PORT_COLUMNS}
    sw = layout.switch_name
    port_unit = layout.buffer["unit"]
    for h in layout.hosts:
        for name, b, a, unit, cap, key in (
            (
                f"{h.name}->{sw}",
                before["nics"][h.name],
                after["nics"][h.name],
                "packets",
                h.nic_queue_packets,
                f"{h.name}:{HOST_DEV}",
            ),
            (
                f"{sw}->{h.name}",
                before["ports"].get(h.port, {}),
                after["ports"].get(h.port, {}),
                port_unit,
                layout.buffer["size"],
                h.port,
            ),
        ):
            pc["name"].append(name)
            pc["unit"].append(unit)
            pc["capacity"].append(int(cap))
            pc["tx_packets"].append(_d(a.get("sent_packets"), b.get("sent_packets")))
            pc["drops"].append(_d(a.get("drops"), b.get("drops")))
            pc["cell_drops"].append(None)
            pc["wire_losses"].append(None)
            pc["max_occupancy"].append(None if max_backlog is None else max_backlog.get(key))
            pc["mean_occupancy"].append(None)
    return {
        "hosts": hc,
        "ports": pc,
        "buses": {"name": [], "frames": [], "collisions": [], "drops": [], "utilization": []},
        "routers": {"name": [], "forwarded": [], "drops": [], "max_occupancy": []},
    }
