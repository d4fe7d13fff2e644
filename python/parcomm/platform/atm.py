"""``atm_cluster``: the 100-PC ATM cluster of seed 000 (Oguchi et al.).

Seed 000: "ATM 結合 PC クラスタの TCP 再送機構の解析と並列データマイニングの性能向上"
(/work/shared/seeds/000_49c869cdbedd6988.txt). Section numbers below refer
to that paper.
"""

from __future__ import annotations

from typing import Any

from .schema import PlatformError, host, link, make_platform, switch, tcp_spec
from .star import _host_count
from .units import parse_buffer

__all__ = [
    "atm_cluster",
    "ATM_OC3_LINE_BPS",
    "ATM_OC3_PAYLOAD_BPS",
    "AN1000_PORTS",
    "AN1000_BUFFER_CELLS",
    "IP_OVER_ATM_MTU",
    "SOLARIS_2_5_1_TCP",
    "PPRO200_SEND_OVERHEAD",
    "PPRO200_RECV_OVERHEAD",
]

# --- link ----------------------------------------------------------------
#: OC-3 / STS-3c line rate, 155.52 Mbit/s (ITU-T G.707, ANSI T1.105). §2 of the
#: paper: "155Mbps ATM LAN", UTP-5 interfaces (ATM Forum af-phy-0015, which
#: uses the same STS-3c framing on Category 5 copper).
ATM_OC3_LINE_BPS = 155.52e6
#: STS-3c payload capacity, 149.76 Mbit/s: 260 of the 270 columns of each
#: 125 us frame carry ATM cells; the rest is SONET section/line/path overhead.
#: The link rate we give the core is THIS one, because framing "atm" already
#: counts every 53-byte cell (5-byte header included) as wire bytes: the cell
#: stream runs at 149.76 Mbit/s, i.e. 353,207 cells/s. Using 155.52 Mbit/s
#: would overstate the usable bandwidth by 3.8 %.
ATM_OC3_PAYLOAD_BPS = 149.76e6

# --- switch --------------------------------------------------------------
#: Hitachi AN1000-20: 128 ports of 155 Mbit/s UTP-5 (§2).
AN1000_PORTS = 128
#: "各ポートあたりのバッファサイズは2kセル" (§2): 2k cells per port. Read as
#: 2 x 1024 = 2048 cells, since buffer memories are sized in powers of two
#: (note: ``units.parse_count("2k")`` is 2000 by the SI rule; "2Ki" is 2048).
AN1000_BUFFER_CELLS = 2048
#: Cell transit latency of the switch. NOT in the paper: an assumption of
#: 10 us, the order of magnitude of store-and-forward ATM LAN switches of the
#: mid-1990s; it is small next to the 2.8 us x cells serialization of a packet.
AN1000_LATENCY_S = 10e-6

# --- hosts ---------------------------------------------------------------
#: IP over ATM default MTU, RFC 1626 (also RFC 1577 §5): 9180 bytes. The paper
#: (§2) uses the RFC 1483 LLC/SNAP PVC driver, which is framing "atm" in spec.rs.
IP_OVER_ATM_MTU = 9180

#: TCP of Solaris 2.5.1 for x86 (Table 1), as ``ndd /dev/tcp`` defaults.
SOLARIS_2_5_1_TCP = tcp_spec(stack="solaris-2.5.1")  # platform/stacks/solaris-2.5.1.toml: values and sources

#: Per-message software overheads of a 200 MHz Pentium Pro running the
#: Solaris 2.5.1 STREAMS TCP/IP stack (Table 1). NOT measured in the paper:
#: an estimate. Fixed part 60 us per send and per receive (socket call,
#: STREAMS put procedures, TCP/IP header processing and an interrupt on the
#: receive side), the order of magnitude of kernel TCP on 200 MHz-class
#: hosts of 1996-97 (one-way small-message latency ~100-200 us). Per byte:
#: two passes over the data (user/kernel copy plus software checksum, the
#: Interphase 5515 does no checksum offload) at ~100 MB/s memory bandwidth
#: of the 440FX chipset -> 0.02 us/byte.
PPRO200_SEND_OVERHEAD = {"fixed_s": 60e-6, "per_byte_s": 0.02e-6}
PPRO200_RECV_OVERHEAD = {"fixed_s": 60e-6, "per_byte_s": 0.02e-6}

#: One-way propagation of each host-switch cable: ~20 m of UTP-5 at ~0.65 c
#: = 0.1 us. Assumption (machine-room cabling); negligible either way.
CABLE_PROPAGATION_S = 1e-7


def atm_cluster(
    n: int = 100,
    *,
    rate_bps: Any = ATM_OC3_PAYLOAD_BPS,
    buffer_cells: Any = AN1000_BUFFER_CELLS,
    early_packet_discard: bool = False,
    epd_threshold_cells: int | None = None,
    cell_interleaving: bool = False,
    switch_latency_s: Any = AN1000_LATENCY_S,
    propagation_s: Any = CABLE_PROPAGATION_S,
    mtu: Any = IP_OVER_ATM_MTU,
    tcp: dict | None = None,
    name: str | None = None,
) -> dict:
    """n Pentium Pro PCs (``h0``..) on one Hitachi AN1000-20 ATM switch ``sw0``.

    Defaults reproduce seed 000 §2 and Table 1: 149.76 Mbit/s cell rate per
    link (see ``ATM_OC3_PAYLOAD_BPS`` for why not 155.52), 2048 cells of
    output buffer per port, UBR (no flow control; the switch drops cells when
    a port buffer overflows), no early packet discard (the paper does not
    say the switch had it; its TCP retransmissions come from plain cell loss),
    AAL5 LLC/SNAP framing, MTU 9180 and Solaris 2.5.1 TCP
    (RTO MIN 200 ms, MAX 60000 ms). ``tcp`` overrides fields of
    ``SOLARIS_2_5_1_TCP``; to vary the RTO per node use ``rto.apply_rto``.

    ``cell_interleaving=True`` switches cells, as the AN1000 does: the cells
    of frames arriving together from many hosts interleave at an output port,
    and once its 2048 cells are full every frame still arriving loses cells
    (then fails the receiver's AAL5 check). The default keeps the
    store-and-forward model, where a frame is admitted or truncated whole
    when its last bit arrives.

    ``n`` must be 1..128: the AN1000-20 has 128 ports. Use
    ``star(n, framing="atm", ...)`` for a hypothetical larger switch.
    """
    n = _host_count(n, "atm")
    if n > AN1000_PORTS:
        raise PlatformError(
            f"atm: host count {n} exceeds the {AN1000_PORTS} ports of the AN1000-20 switch;"
            " use star(n, framing='atm', ...) for a larger hypothetical switch"
        )
    host_tcp = tcp_spec(SOLARIS_2_5_1_TCP, **(tcp or {}))
    hosts = [
        host(
            f"h{i}",
            mtu=mtu,
            send_overhead=PPRO200_SEND_OVERHEAD,
            recv_overhead=PPRO200_RECV_OVERHEAD,
            tcp=host_tcp,
            timing_noise_s=0.0,  # per-frame host noise is for frame links; a cell switch takes cells as they come
        )
        for i in range(n)
    ]
    sw = switch(
        "sw0",
        parse_buffer(buffer_cells, "cells", "atm: buffer"),
        flow_control=False,  # UBR: no ABR/credit flow control (§2, §4.1)
        early_packet_discard=early_packet_discard,
        epd_threshold_cells=epd_threshold_cells,
        latency_s=switch_latency_s,
        cell_interleaving=cell_interleaving,
    )
    links = [link(h["name"], "sw0", rate_bps, propagation_s=propagation_s, framing="atm") for h in hosts]
    return make_platform(name or f"atm-{n}", hosts, [sw], links)
