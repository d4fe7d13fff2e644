"""Topologies as plain data, plus builders for the seed papers' clusters.

A platform is a ``dict`` matching the serde structs of
``crates/parcomm-core/src/spec.rs`` (keys ``name``, ``hosts``, ``switches``,
``links``, ``segments``, ``routers``; SI units: seconds, bits/s, bytes); pass
``to_json(platform)`` to the core.

Builders:

* ``star(n, ...)`` -- n hosts on one switch;
* ``atm_cluster(n=100)`` -- seed 000, 155 Mbit/s ATM, 2048-cell port buffers, UBR;
* ``opteron_cluster(n=64)`` -- seed 001, 1 GbE switch without flow control;
* ``fat_tree(k)``, ``leaf_spine(L, S, H)`` -- multi-path fabrics (ECMP in the core);
* ``segments_router(16)`` -- seed 002, 130 hosts on 16 shared 10BASE-T segments
  joined by a Cisco 7000 router;
* ``from_spec_string("star:64,rate=1G")`` -- the CLI's short form;
* ``load("platform.toml")`` -- TOML files, explicit or ``builder = "..."``.

``apply_rto``/``set_rto`` set TCP retransmission bounds (seed 000 §5.2
schemes). Unit parsers live in ``parcomm.platform.units``.
"""

from .atm import ATM_OC3_LINE_BPS, ATM_OC3_PAYLOAD_BPS, SOLARIS_2_5_1_TCP, atm_cluster
from .fabric import fat_tree, leaf_spine
from .loader import from_mapping, load, loads
from .opteron import LINUX_2_6_11_TCP, opteron_cluster
from .rto import RTO_SCHEMES, apply_rto, host_rng, set_rto
from .schema import (
    DEFAULT_MTU,
    DEFAULT_NIC_QUEUE_PACKETS,
    FRAMINGS,
    LINUX_TCP,
    TCP_FIELDS,
    TCP_OPTIONAL,
    PlatformError,
    atm_cells,
    buffer,
    host,
    link,
    make_platform,
    overhead,
    router,
    segment,
    switch,
    tcp_spec,
    to_json,
    validate,
    wire_bytes,
)
from .segments import SUNOS_4_1_3_TCP, distribute_hosts, segments_router
from .shortform import BUILDERS, from_spec_string
from .star import star
from .units import parse_bool, parse_buffer, parse_count, parse_duration, parse_rate, parse_size

__all__ = [
    "as_platform",
    # data model
    "PlatformError",
    "DEFAULT_MTU",
    "DEFAULT_NIC_QUEUE_PACKETS",
    "FRAMINGS",
    "LINUX_TCP",
    "TCP_FIELDS",
    "TCP_OPTIONAL",
    "tcp_spec",
    "overhead",
    "host",
    "buffer",
    "switch",
    "link",
    "segment",
    "router",
    "make_platform",
    "validate",
    "to_json",
    "atm_cells",
    "wire_bytes",
    # builders
    "star",
    "atm_cluster",
    "opteron_cluster",
    "segments_router",
    "fat_tree",
    "leaf_spine",
    "distribute_hosts",
    "BUILDERS",
    "from_spec_string",
    "load",
    "loads",
    "from_mapping",
    # TCP presets
    "SOLARIS_2_5_1_TCP",
    "LINUX_2_6_11_TCP",
    "SUNOS_4_1_3_TCP",
    "ATM_OC3_LINE_BPS",
    "ATM_OC3_PAYLOAD_BPS",
    # RTO
    "RTO_SCHEMES",
    "apply_rto",
    "set_rto",
    "host_rng",
    # units
    "parse_size",
    "parse_count",
    "parse_rate",
    "parse_duration",
    "parse_buffer",
    "parse_bool",
]


def as_platform(spec: "dict | str") -> dict:
    """A platform from a dict (validated: it may come from a user), a short form (``"star:64"``)
    or a ``.toml`` path."""
    if isinstance(spec, dict):
        return validate(spec)
    if isinstance(spec, str) and spec.endswith(".toml"):
        return load(spec)
    return from_spec_string(spec)
