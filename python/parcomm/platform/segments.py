"""``segments_router``: 130 SPARCstation LX on 16 shared Ethernets and one router (seed 002).

Seed 002: Hironaka, "大規模ワークステーション・クラスタにおける PVM の性能評価"
(/work/shared/seeds/002_951607c59a412fc7.txt). §2, Table 1 (workstation),
Table 2 (router), Fig. 1 (topology); §5 measures ping-pong times inside and
across segments.
"""

from __future__ import annotations

from typing import Any

from .schema import MAX_HOSTS, PlatformError, host, make_platform, router, segment, tcp_spec
from .star import _host_count
from .units import parse_buffer

__all__ = [
    "segments_router",
    "SEGMENT_BPS",
    "PAPER_HOSTS",
    "PAPER_SEGMENTS",
    "CISCO_7000_PPS",
    "CISCO_7000_BACKPLANE_BPS",
    "CISCO_HOLD_QUEUE_PACKETS",
    "SUNOS_4_1_3_TCP",
    "SPARC_LX_SEND_OVERHEAD",
    "SPARC_LX_RECV_OVERHEAD",
    "distribute_hosts",
]

#: Table 1: "Ethernet 10BaseT (10Mbps)". Each segment is one collision domain
#: (10BASE-T repeater hubs, IEEE 802.3 clause 14/27), modelled as a shared
#: medium with CSMA/CD (segments[].collisions = true).
SEGMENT_BPS = 10e6
#: §2: 130 workstations ("ワークステーション130台") ...
PAPER_HOSTS = 130
#: ... in 16 Ethernet segments of 8-9 machines each ("8~9台ごとに16本").
PAPER_SEGMENTS = 16

#: Table 2, Cisco 7000: "転送レート 100,000 pps 以上" (at least 100k packets/s).
#: We use the stated lower bound.
CISCO_7000_PPS = 100_000.0
#: Table 2: "インタフェース間データバス 533 Mbps" -- the CxBus between
#: interface processors (Cisco 7000 hardware documentation: "The high-speed
#: Cisco Extended Bus (CxBus) transfers information at 533 Mbps").
CISCO_7000_BACKPLANE_BPS = 533e6
#: Output buffer per router interface: 40 packets, the Cisco IOS default
#: output hold queue ("hold-queue 40 out"). Not in the paper; the IOS default
#: is the best documented figure for a router of that generation.
CISCO_HOLD_QUEUE_PACKETS = 40

#: One-way propagation across a hub segment: ASSUMPTION of 1 us -- two
#: 100 m 10BASE-T drops (the 802.3 maximum) at ~0.6 c plus repeater delay;
#: well within the 51.2 us slot time.
SEGMENT_PROPAGATION_S = 1e-6

#: TCP of the workstations. The paper does not name the OS; ASSUMPTION: SunOS
#: 4.1.3 (Solaris 1.1), the BSD 4.3-derived system SPARCstation LX shipped
#: with in 1992-94 (PVM 3.3 supports it as arch SUN4). BSD timer constants:
SUNOS_4_1_3_TCP = tcp_spec(
    stack="rfc",  # BSD timers over the simulator's RFC transport, not the default Linux profile
    # TCPTV_MIN = 2 slow-timer ticks of 500 ms = 1 s; TCPTV_REXMTMAX = 64 s.
    rto_min_s=1.0,
    rto_max_s=64.0,
    # Initial RTO from TCPTV_SRTTDFLT = 3 s: ((0 >> 2) + (3 s << 2)) >> 1 = 6 s.
    rto_initial_s=6.0,
    # PR_SLOWHZ = 2: retransmission timers tick every 500 ms.
    clock_granularity_s=0.5,
    # 4.3BSD-Tahoe slow start from one segment.
    initial_cwnd_segments=1,
    # tcp_sendspace = tcp_recvspace = 4096 (4.3BSD tcp_usrreq.c, 1024*4).
    sndbuf_bytes=4096,
    rcvbuf_bytes=4096,
    # Delayed ACKs flushed by the 200 ms fast timer (PR_FASTHZ = 5).
    delayed_ack=True,
    delayed_ack_timeout_s=0.2,
    # tcprexmtthresh = 3 (4.3BSD-Tahoe fast retransmit).
    dupack_threshold=3,
)

#: Per-message overheads of PVM 3.3 on a 50 MHz microSPARC (Table 1: 59.1 MIPS).
#: ESTIMATE derived from §5.1 / Fig. 5: message time is flat up to ~1000 bytes
#: and proportional above, i.e. the fixed cost equals the size-dependent cost
#: at ~1000 bytes. Per byte and side we take three passes over the data (PVM
#: pack into its buffer, socket copy, software checksum) at ~20 MB/s memory
#: bandwidth -> 0.15 us/byte; with 0.8 us/byte on the 10 Mbit/s wire the
#: size-dependent cost of 1000 bytes is ~1.1 ms, so the fixed cost is split
#: 0.5 ms per send and 0.5 ms per receive.
#: Route: these overheads describe a task-to-task TCP connection (PVM's
#: PvmRouteDirect). The paper does not say which route it used; PVM 3.3's
#: default route goes task -> local pvmd (Unix-domain socket) ->
#: remote pvmd (UDP with the daemons' own acknowledgement protocol) -> task
#: (PVM developers' description of the routes, section "Performance" of
#: https://netlib.org/utk/papers/pvm-ijsa/node3.html); pvm_advise(3PVM) puts the direct route
#: "up to a factor of two better". The knee of Fig. 5 was measured on whatever
#: route the paper used, so the estimate below already holds that route's
#: costs to the extent the knee does; the study's what-if doubles them as a
#: bound (parcomm.studies.hironaka).
SPARC_LX_SEND_OVERHEAD = {"fixed_s": 0.5e-3, "per_byte_s": 0.15e-6}
SPARC_LX_RECV_OVERHEAD = {"fixed_s": 0.5e-3, "per_byte_s": 0.15e-6}

#: Interface output queue: IFQ_MAXLEN = 50 packets (4.3BSD net/if.h), the
#: ifqmaxlen of BSD-derived SunOS 4.
BSD_IFQ_MAXLEN = 50


def distribute_hosts(n_hosts: int, n_segments: int) -> list[int]:
    """Hosts per segment, as even as possible, larger segments first.

    ``distribute_hosts(130, 16) == [9, 9] + [8] * 14`` (the paper's 8-9 per segment).
    """
    base, extra = divmod(n_hosts, n_segments)
    return [base + 1] * extra + [base] * (n_segments - extra)


def _workstation(name: str, mtu: Any, tcp: dict) -> dict:
    return host(
        name,
        mtu=mtu,
        nic_queue_packets=BSD_IFQ_MAXLEN,
        send_overhead=SPARC_LX_SEND_OVERHEAD,
        recv_overhead=SPARC_LX_RECV_OVERHEAD,
        tcp=tcp,
        timing_noise_s=0.0,  # shared segments: the medium's contention (CSMA/CD backoff) is their noise
    )


def segments_router(
    n_segments: int = PAPER_SEGMENTS,
    hosts_per_segment: int | None = None,
    *,
    n_hosts: int | None = None,
    rate_bps: Any = SEGMENT_BPS,
    collisions: bool = True,
    propagation_s: Any = SEGMENT_PROPAGATION_S,
    forward_pps: float = CISCO_7000_PPS,
    backplane_bps: Any = CISCO_7000_BACKPLANE_BPS,
    router_buffer: Any = CISCO_HOLD_QUEUE_PACKETS,
    mtu: Any = 1500,
    tcp: dict | None = None,
    name: str | None = None,
) -> dict:
    """Shared 10 Mbit/s segments ``seg0``.. joined by one router ``r0`` (seed 002).

    Hosts are numbered ``h0``.. consecutively, segment by segment: with the
    defaults ``seg0`` holds ``h0``..``h8``, ``seg1`` ``h9``..``h17``, then 8
    hosts per segment up to ``h129`` in ``seg15``. The router is a member of
    every segment and forwards between them (Table 2: >= 100k packets/s,
    533 Mbit/s CxBus). Host counts:

    * neither ``hosts_per_segment`` nor ``n_hosts``: the paper's 130 hosts
      over ``n_segments`` (``distribute_hosts``);
    * ``hosts_per_segment=h``: exactly h per segment;
    * ``n_hosts=N``: N spread as evenly as possible.

    Every segment needs at least one host. ``router_buffer`` is per output
    interface, packets unless it names bytes (``"64KiB"``). ``tcp`` overrides
    fields of ``SUNOS_4_1_3_TCP``.
    """
    n_segments = _host_count(n_segments, "segments", "segment count")
    if hosts_per_segment is not None:
        hps = _host_count(hosts_per_segment, "segments", "hosts per segment")
        if n_hosts is not None and _host_count(n_hosts, "segments") != hps * n_segments:
            raise PlatformError(f"segments: n_hosts={n_hosts} disagrees with {n_segments} segments x {hps} hosts")
        counts = [hps] * n_segments
    else:
        total = PAPER_HOSTS if n_hosts is None else _host_count(n_hosts, "segments")
        if total < n_segments:
            raise PlatformError(
                f"segments: {total} hosts cannot fill {n_segments} segments (each needs at least one host)"
            )
        counts = distribute_hosts(total, n_segments)
    if sum(counts) > MAX_HOSTS:  # each factor may be within the limit, their product not
        raise PlatformError(
            f"segments: {n_segments} segments x {counts[0]} hosts is {sum(counts)} hosts,"
            f" above the limit of {MAX_HOSTS} (hosts in a platform)"
        )

    host_tcp = tcp_spec(SUNOS_4_1_3_TCP, **(tcp or {}))
    hosts, segments = [], []
    next_id = 0
    for s, count in enumerate(counts):
        members = []
        for _ in range(count):
            h = _workstation(f"h{next_id}", mtu, host_tcp)
            hosts.append(h)
            members.append(h["name"])
            next_id += 1
        members.append("r0")
        segments.append(segment(f"seg{s}", rate_bps, members, propagation_s=propagation_s, collisions=collisions))
    r0 = router(
        "r0",
        forward_pps=forward_pps,
        backplane_bps=backplane_bps,
        buffer=parse_buffer(router_buffer, "packets", "segments: router_buffer"),
    )
    if name is None:
        shape = f"{n_segments}x{counts[0]}" if len(set(counts)) == 1 else f"{n_segments}-{len(hosts)}"
        name = f"segments-{shape}"
    return make_platform(name, hosts, segments=segments, routers=[r0])
