"""What an emulated cluster looks like, computed from a platform dict (no I/O).

The emulation supports what real queues and shaping can reproduce: a star of
hosts on one switch, links with a rate, switch ports with a finite buffer in
bytes (``bfifo``) or packets (``pfifo``). Anything that would need
``netem`` (propagation delay, random loss, fault injection) or a switch
feature Linux bridges lack (802.3x flow control, ATM cells) is refused with a
message naming the field: a silently different experiment is worse than none.
Per-host CPU overheads are not emulated either (the real CPU is used) and are
listed in ``Layout.not_emulated``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

from ..platform.schema import tcp_spec
from .naming import RunName
from .shell import EmuError

__all__ = ["HostPlan", "Layout", "plan", "choose_subnet", "MAX_HOSTS"]

#: Hosts per cluster: one /24 (254 addresses) less a margin.
MAX_HOSTS = 250
HOST_DEV = "eth0"
BRIDGE = "br0"


@dataclass
class HostPlan:
    index: int
    name: str  # the platform's host name (h0, h1, ...)
    netns: str
    addr: str  # e.g. 10.213.0.1
    port: str  # the switch-side veth, named p<index> in the switch namespace
    rate_bps: float
    mtu: int
    nic_queue_packets: int
    tcp: dict


@dataclass
class Layout:
    run: RunName
    hosts: list[HostPlan]
    subnet: str  # e.g. 10.213.0.0/24
    buffer: dict  # {"size": n, "unit": "bytes" | "packets"}
    switch_name: str
    platform_name: str
    not_emulated: list[str] = field(default_factory=list)

    @property
    def switch_ns(self) -> str:
        return self.run.switch_ns

    @property
    def prefix_len(self) -> int:
        return ipaddress.ip_network(self.subnet).prefixlen

    def namespaces(self) -> list[str]:
        return [h.netns for h in self.hosts] + [self.switch_ns]


def choose_subnet(routes_in_use: Iterable[str], second_octets: Iterable[int] = (213,)) -> str:
    """The first 10.<a>.<b>.0/24 that overlaps no route in ``routes_in_use``.

    Only our own namespaces ever carry these addresses; avoiding the
    machine's routes keeps a reader of ``ip addr`` from confusing the two.
    """
    used = []
    for r in routes_in_use:
        try:
            net = ipaddress.ip_network(r, strict=False)
        except ValueError:
            continue
        if net.prefixlen > 0:  # a default route overlaps everything; ignore it
            used.append(net)
    for a in second_octets:
        for b in range(256):
            cand = ipaddress.ip_network(f"10.{a}.{b}.0/24")
            if not any(cand.overlaps(u) for u in used):
                return str(cand)
    raise EmuError("no free 10.213.x.0/24 subnet: every one overlaps a route of this machine")


def _refuse(what: str) -> NoReturn:
    raise EmuError(f"cannot emulate {what}")


def plan(platform: Mapping[str, Any], run: RunName, subnet: str = "10.213.0.0/24") -> Layout:
    """Check that ``platform`` can be emulated and lay it out on namespaces."""
    hosts = platform.get("hosts") or []
    sw = _the_switch(platform, hosts)
    swname = sw["name"]
    buf = dict(sw["buffer"])
    _check_switch(sw, buf)
    link_of = _host_links(platform, swname, {h["name"] for h in hosts})
    net = ipaddress.ip_network(subnet)
    out, not_emulated = _host_plans(hosts, link_of, swname, run, list(net.hosts()))
    run.namespaces = [h.netns for h in out] + [run.switch_ns]
    return Layout(
        run=run,
        hosts=out,
        subnet=str(net),
        buffer=buf,
        switch_name=swname,
        platform_name=str(platform.get("name", "")),
        not_emulated=not_emulated,
    )


def _the_switch(platform: Mapping[str, Any], hosts: list) -> Mapping[str, Any]:
    """The one switch of a star platform (hosts on one switch, at most :data:`MAX_HOSTS`)."""
    switches = platform.get("switches") or []
    if platform.get("segments"):
        _refuse("shared segments (CSMA/CD buses): only star platforms (hosts on one switch) are supported")
    if platform.get("routers"):
        _refuse("routers: only star platforms (hosts on one switch) are supported")
    if len(switches) != 1:
        _refuse(f"{len(switches)} switches: only star platforms (hosts on one switch) are supported")
    if not hosts:
        _refuse("a platform without hosts")
    if len(hosts) > MAX_HOSTS:
        _refuse(f"{len(hosts)} hosts: at most {MAX_HOSTS} fit one /24")
    return switches[0]


def _check_switch(sw: Mapping[str, Any], buf: dict) -> None:
    """Refuse what a Linux bridge with shaped ports cannot do."""
    swname = sw["name"]
    if buf["unit"] not in ("bytes", "packets"):
        _refuse(f"switch {swname}: a buffer in {buf['unit']} (ATM cells); use bytes or packets")
    if sw.get("flow_control"):
        _refuse(f"switch {swname}: flow_control (802.3x PAUSE); a Linux bridge drops instead")
    if sw.get("early_packet_discard"):
        _refuse(f"switch {swname}: early_packet_discard (ATM)")
    if float(sw.get("latency_s") or 0) > 0:
        _refuse(f"switch {swname}: latency_s > 0 needs netem, which this kernel lacks")


def _host_links(platform: Mapping[str, Any], swname: str, names: set[str]) -> dict[str, Mapping[str, Any]]:
    """Each host's one link to the switch, by host name; links netem would be needed for are refused."""
    link_of: dict[str, Mapping[str, Any]] = {}
    for ln in platform.get("links") or []:
        a, b = ln["a"], ln["b"]
        host_end = a if b == swname else b if a == swname else None
        if host_end is None or host_end not in names:
            _refuse(f"link {a}-{b}: every link must join a host to switch {swname}")
        if host_end in link_of:
            _refuse(f"host {host_end}: more than one link")
        if float(ln.get("loss") or 0) > 0:
            _refuse(
                f"link {a}-{b}: random loss needs netem, which this kernel lacks (losses here come from full queues)"
            )
        if float(ln.get("propagation_s") or 0) > 0:
            _refuse(f"link {a}-{b}: propagation_s > 0 needs netem, which this kernel lacks")
        if ln.get("drop_nth"):
            _refuse(f"link {a}-{b}: drop_nth fault injection (simulator only)")
        if ln.get("framing", "ethernet") == "atm":
            _refuse(f"link {a}-{b}: ATM framing")
        link_of[host_end] = ln
    return link_of


def _host_plans(
    hosts: list, link_of: Mapping[str, Mapping[str, Any]], swname: str, run: RunName, addrs: list
) -> tuple[list[HostPlan], list[str]]:
    """Each host's namespace, address and link; and what of the hosts is not emulated (sorted)."""
    out: list[HostPlan] = []
    not_emulated: set[str] = set()
    for i, h in enumerate(hosts):
        if h["name"] not in link_of:
            _refuse(f"host {h['name']}: no link to switch {swname}")
        ln = link_of[h["name"]]
        for side in ("send_overhead", "recv_overhead"):
            ov = h.get(side) or {}
            if any(float(ov.get(k) or 0) for k in ("fixed_s", "per_byte_s", "jitter_s")):
                not_emulated.add(f"hosts[].{side} (the real CPU and kernel take their own time)")
        tcp = tcp_spec(**(h.get("tcp") or {}))
        out.append(
            HostPlan(
                index=i,
                name=h["name"],
                netns=run.host_ns(i),
                addr=str(addrs[i]),
                port=f"p{i}",
                rate_bps=float(ln["rate_bps"]),
                mtu=int(h.get("mtu") or 1500),
                nic_queue_packets=int(h.get("nic_queue_packets") or 1000),
                tcp=tcp,
            )
        )
    if any(h.tcp.get("clock_granularity_s") not in (None, 0.001) for h in out):
        not_emulated.add("tcp.clock_granularity_s (Linux keeps its own timer granularity)")
    if any(h.tcp.get("rto_initial_s") not in (None, 1.0) for h in out):
        not_emulated.add("tcp.rto_initial_s (Linux's initial RTO is 1 s)")
    return out, sorted(not_emulated)
