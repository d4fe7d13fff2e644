"""``opteron_cluster``: the 64-node Opteron / Gigabit Ethernet cluster of seed 001.

Seed 001: Nomura and Ishikawa, "再送制御を考慮した通信モデルの設計"
(/work/shared/seeds/001_ac23822a879d7729.txt). Table 1 gives the cluster;
§3.1 explains why the switch's lack of flow control matters (RTO penalties
when a port queue of q bytes overflows).
"""

from __future__ import annotations

from typing import Any

from .schema import host, link, make_platform, switch, tcp_spec
from .star import _host_count
from .units import parse_buffer

__all__ = [
    "opteron_cluster",
    "GBE_BPS",
    "GBE_SWITCH_BUFFER",
    "LINUX_2_6_11_TCP",
    "OPTERON_SEND_OVERHEAD",
    "OPTERON_RECV_OVERHEAD",
]

#: Table 1: Broadcom Tigon3 1 Gbps adapters; 1000BASE-T data rate is
#: 1,000,000,000 bit/s (IEEE 802.3ab). Ethernet framing overhead (preamble,
#: header, FCS, inter-frame gap) is added by framing "ethernet".
GBE_BPS = 1e9

#: Switch output buffer per port: 128 KiB. ASSUMPTION -- the paper estimates
#: the queue length q from the delay difference between an idle and a full
#: port times the link rate (§3.1) but prints no value. Commodity GbE
#: switches of the period share a packet memory of ~1-4 MB among 24-48
#: ports (e.g. 2 MB per switch ASIC in the Cisco Catalyst 2960-S, see
#: people.ucsc.edu/~warner/Bufs/), i.e. 40-170 KB per port when shared
#: evenly, and a single congested port may borrow more; 128 KiB sits in the
#: middle. With E_q(m, n) = 1 iff q < (n-1) m (eq. 1) and n = P-1 phases for
#: Alltoall algorithm A (eq. 6), this puts the onset of RTO penalties at
#: m > q/62 ~ 2.1 KiB for P = 64 and m > q/6 ~ 21 KiB for P = 8. Pass
#: ``buffer=`` to fit a measured q.
GBE_SWITCH_BUFFER = 128 * 1024

#: Store-and-forward latency of the switch (lookup and forwarding, beyond the
#: frame serialization the core already models): ASSUMPTION of 3 us, the
#: typical datasheet figure for 64-byte frames on GbE access switches of 2005.
GBE_SWITCH_LATENCY_S = 3e-6

#: TCP of Linux 2.6.11 SMP (Table 1), kernel defaults.
LINUX_2_6_11_TCP = tcp_spec(
    stack="linux-2.6.11",  # platform/stacks/linux-2.6.11.toml: every value and its source
    # Left off by the builder (a study turns them on where it says so): SACK and
    # the window restart after idle (the seed-001 study sets both), timestamps
    # Linux's RTO rules and quick-ACK mode (the studies' numbers were obtained without them).
    sack=False,
    cwnd_restart_after_idle=False,
    timestamps=False,
    linux_rto=False,
    quickack=False,
)

#: Per-message software overheads of a 2 GHz Opteron with Linux 2.6 TCP and
#: YAMPII (Table 1). NOT given numerically in the paper (its PlogP parameters
#: appear only in Fig. 8): an ESTIMATE. One-way 0-byte TCP latency on GbE
#: of that period was typically ~25-35 us; after ~1.4 us of wire/switch
#: serialization and the 3 us switch latency above, ~25 us remain for the
#: hosts: 5 us on the send side (syscall, TCP/IP output, doorbell), 20 us on
#: the receive side (interrupt, tg3 receive interrupt coalescing, TCP/IP
#: input, wake-up). Per byte: one copy each side (checksums are offloaded by
#: the Tigon3) at ~2 GB/s memcpy bandwidth -> 0.5 ns/byte.
#:
#: Jitter: identical simulated hosts stay in perfect lockstep, and then the
#: XOR pairing of Alltoall A never puts two senders on one receiver. Real
#: nodes drift: operating-system noise (timer ticks, daemons, interrupt
#: moderation) delays individual messages by tens of microseconds on Linux
#: clusters (Petrini, Kerbyson & Pakin, SC'03, measured noise of this order
#: on 2003-era Linux nodes). ASSUMPTION: each message's overhead varies
#: uniformly by up to 20 us on either side. Set ``jitter_s=0`` to remove it.
OS_NOISE_JITTER_S = 20e-6
OPTERON_SEND_OVERHEAD = {"fixed_s": 5e-6, "per_byte_s": 0.5e-9, "jitter_s": OS_NOISE_JITTER_S}
OPTERON_RECV_OVERHEAD = {"fixed_s": 20e-6, "per_byte_s": 0.5e-9, "jitter_s": OS_NOISE_JITTER_S}

#: One-way cable propagation, ~20 m of Cat 5e at ~0.65 c. Assumption.
CABLE_PROPAGATION_S = 1e-7


def opteron_cluster(
    n: int = 64,
    *,
    rate_bps: Any = GBE_BPS,
    buffer: Any = GBE_SWITCH_BUFFER,
    flow_control: bool = False,
    switch_latency_s: Any = GBE_SWITCH_LATENCY_S,
    propagation_s: Any = CABLE_PROPAGATION_S,
    mtu: Any = 1500,
    tcp: dict | None = None,
    jitter_s: Any = OS_NOISE_JITTER_S,
    name: str | None = None,
    timing_noise_s: Any = 0.0,
) -> dict:
    """n dual-Opteron nodes (``h0``..) on one Gigabit Ethernet switch ``sw0``.

    Defaults follow seed 001 Table 1 and §3.1: 64 nodes, 1 Gbit/s links,
    standard 1500-byte MTU (no jumbo frames are mentioned), a switch WITHOUT
    flow control (so overflowing output queues drop packets and TCP waits
    for RTO), Linux 2.6.11 TCP (RTO min 200 ms, max 120 s). ``buffer`` is the
    per-port queue q in bytes (default 128 KiB, an assumption; see
    ``GBE_SWITCH_BUFFER``). ``tcp`` overrides fields of ``LINUX_2_6_11_TCP``.
    NIC transmit queue: ``txqueuelen`` 1000, the Linux Ethernet default
    (ether_setup), which is also the spec default. A period cluster: its
    operating-system noise is the overheads' ``jitter_s`` above, so the
    hosts' transmit ``timing_noise_s`` (measured on today's referee,
    ``defaults.py``) is 0 unless asked for.
    """
    n = _host_count(n, "opteron")
    host_tcp = tcp_spec(LINUX_2_6_11_TCP, **(tcp or {}))
    hosts = [
        host(
            f"h{i}",
            mtu=mtu,
            nic_queue_packets=1000,
            send_overhead={**OPTERON_SEND_OVERHEAD, "jitter_s": jitter_s},
            recv_overhead={**OPTERON_RECV_OVERHEAD, "jitter_s": jitter_s},
            tcp=host_tcp,
            timing_noise_s=timing_noise_s,
        )
        for i in range(n)
    ]
    sw = switch(
        "sw0",
        parse_buffer(buffer, "bytes", "opteron: buffer"),
        flow_control=flow_control,
        latency_s=switch_latency_s,
    )
    links = [link(h["name"], "sw0", rate_bps, propagation_s=propagation_s, framing="ethernet") for h in hosts]
    return make_platform(name or f"opteron-{n}", hosts, [sw], links)
