"""``star``: n hosts on one switch, the generic single-switch cluster."""

from __future__ import annotations

from typing import Any

from .schema import HOST_OPTIONS, MAX_HOSTS, PlatformError, host, link, make_platform, switch
from .units import parse_buffer, parse_count, shown

__all__ = ["star", "DEFAULT_STAR_BUFFER"]

#: Default per-port output buffer of ``star``: 128 KiB. An assumption, the
#: same order as a commodity Gigabit Ethernet switch (see ``opteron.py`` for
#: the reasoning); pass ``buffer=`` to model a specific switch.
DEFAULT_STAR_BUFFER = "128KiB"


def star(
    n: int,
    rate_bps: Any = 1e9,
    buffer: Any = DEFAULT_STAR_BUFFER,
    flow_control: bool = False,
    propagation_s: Any = 0.0,
    mtu: Any = 1500,
    framing: str = "ethernet",
    *,
    switch_latency_s: Any = 0.0,
    loss: float = 0.0,
    jitter_s: Any = 0.0,
    name: str | None = None,
    **host_options: Any,
) -> dict:
    """Hosts ``h0``..``h{n-1}``, each linked to the switch ``sw0``.

    Parameters (all accept unit strings):

    * ``rate_bps``: every link, bits/s. Default 1 Gbit/s (IEEE 802.3ab 1000BASE-T).
    * ``buffer``: switch output buffer per port; bytes unless it names a unit
      (``"100 packets"``, ``"2048 cells"``). Default 128 KiB (assumption, see
      ``DEFAULT_STAR_BUFFER``).
    * ``flow_control``: IEEE 802.3x PAUSE backpressure instead of drops.
    * ``propagation_s``: per link, one way. Default 0: a machine-room cable of
      tens of metres adds ~5 ns/m, negligible next to serialization.
    * ``mtu``: every host's IP MTU (bytes). Default 1500 (Ethernet).
    * ``framing``: ``"ethernet"``, ``"atm"`` or ``"raw"`` (wire accounting of spec.rs).
    * ``switch_latency_s``: fixed per-packet switching latency. Default 0.
    * ``loss``: random loss probability per packet per link. Default 0.
    * ``jitter_s``: timing noise per frame per link, uniform in [0, jitter_s),
      order kept. Default 0 (an ideal wire).
    * ``host_options``: passed to ``schema.host`` for every host:
      ``nic_queue_packets``, ``send_overhead``, ``recv_overhead``, ``tcp``
      (a partial TcpSpec dict over the default stack ``linux``, or the
      ``stack`` it names), ``timing_noise_s`` (default the measured 190 us;
      0 is the ideal wire). Both defaults: ``platform/defaults.py``.
    """
    n = _host_count(n, "star")
    unknown = set(host_options) - (set(HOST_OPTIONS) - {"mtu"})
    if unknown:
        raise PlatformError(
            f"star: unknown option(s) {', '.join(sorted(unknown))}"
            f" (host options are {', '.join(o for o in HOST_OPTIONS if o != 'mtu')})"
        )
    hosts = [host(f"h{i}", mtu=mtu, **host_options) for i in range(n)]
    sw = switch(
        "sw0",
        parse_buffer(buffer, "bytes", "star: buffer"),
        flow_control=flow_control,
        latency_s=switch_latency_s,
    )
    links = [
        link(h["name"], "sw0", rate_bps, propagation_s=propagation_s, loss=loss, jitter_s=jitter_s, framing=framing)
        for h in hosts
    ]
    return make_platform(name or f"star-{n}", hosts, [sw], links)


def _host_count(n: Any, builder: str, what: str = "host count", minimum: int = 1) -> int:
    """An integer >= minimum from ``n`` (int or digit string), else ``PlatformError``."""
    if isinstance(n, bool):
        raise PlatformError(f"{builder}: {what} {shown(n)} is not an integer")
    if isinstance(n, str):
        try:
            n = parse_count(n, f"{builder}: {what}")
        except ValueError as e:
            if "limit" in str(e) or "range" in str(e):
                raise PlatformError(
                    f"{builder}: {what} {shown(n)} is above the limit of {MAX_HOSTS} (hosts in a platform)"
                ) from None
            raise PlatformError(f"{builder}: {what} {shown(n)} is not an integer") from None
    if isinstance(n, float) and n.is_integer():
        n = int(n)
    if not isinstance(n, int):
        raise PlatformError(f"{builder}: {what} {shown(n)} is not an integer")
    if n < minimum:
        raise PlatformError(f"{builder}: {what} must be at least {minimum}, got {shown(n)}")
    if n > MAX_HOSTS:
        raise PlatformError(f"{builder}: {what} {shown(n)} is above the limit of {MAX_HOSTS} (hosts in a platform)")
    return n
