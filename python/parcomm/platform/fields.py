"""What the Rust core says a platform is: its fields, their defaults, which are optional, the
enum values and the upper bounds, read once from ``_core.platform_schema()`` (spec.rs and
spec_check.rs). The one source of these facts on the Python side; ``schema`` builds on them.
"""

from __future__ import annotations

import json
from typing import Any

from .. import _core


class PlatformError(ValueError):
    """A platform description the core would refuse; the message names the field."""


# the schema, as the core defines it ----------------------------------------------

_SCHEMA = json.loads(_core.platform_schema())
_DEFAULTS = _SCHEMA["defaults"]

#: Every field of each element kind (``platform``, ``host``, ``tcp``, ``switch``, ``link``,
#: ``segment``, ``router``), in declaration order.
FIELDS: dict[str, tuple[str, ...]] = {kind: tuple(d) for kind, d in _DEFAULTS.items()}

#: Upper bounds the core checks (``spec_check.rs``): ``hosts``, ``mtu``, ``name_chars``, ...
LIMITS: dict[str, float] = dict(_SCHEMA["limits"])
#: Hosts in one platform (the core's route table grows with their number).
MAX_HOSTS: int = int(LIMITS["hosts"])

#: ``default_mtu()`` in spec.rs: Ethernet payload (IEEE 802.3).
DEFAULT_MTU: int = _DEFAULTS["host"]["mtu"]
#: ``default_nic_queue()`` in spec.rs: Linux ``txqueuelen`` for Ethernet devices.
DEFAULT_NIC_QUEUE_PACKETS: int = _DEFAULTS["host"]["nic_queue_packets"]
#: ``default_framing()`` in spec.rs.
DEFAULT_FRAMING: str = _DEFAULTS["link"]["framing"]
#: ``Framing`` variants (serde ``rename_all = "lowercase"``).
FRAMINGS: tuple[str, ...] = tuple(_SCHEMA["enums"]["framing"])

#: ``impl Default for TcpSpec`` (Linux-like: TCP_RTO_MIN 200 ms, TCP_RTO_MAX 120 s, RFC 6298's
#: initial 1 s, IW10 of RFC 6928; the Linux options such as SACK off so that results stay
#: comparable). Every emitted ``tcp`` dict carries all of its fields, in declaration order.
LINUX_TCP: dict[str, Any] = dict(_DEFAULTS["tcp"])

#: Field names of ``TcpSpec``, in declaration order.
TCP_FIELDS = tuple(LINUX_TCP)

#: ``TcpSpec`` fields with ``#[serde(default)]`` (false or 0, i.e. off): a ``tcp`` table may omit them.
TCP_OPTIONAL = tuple(f for f in TCP_FIELDS if f in _SCHEMA["optional"]["tcp"])

#: The named TCP strategy slots and the legacy booleans each replaces (``TcpSpec::choices``):
#: ``{"congestion_control": ["cubic"], "loss_detection": ["sack", "rack"], ...}``.
TCP_LEGACY: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in _SCHEMA["tcp_legacy"].items()}
#: Flags that belong to one choice of a slot: ``{"hystart": {"congestion_control": "cubic"}}``.
TCP_OPTION_OF: dict[str, dict[str, str]] = dict(_SCHEMA["tcp_option_of"])

#: Keyword options of ``host`` other than the name (what builders pass through).
HOST_OPTIONS = tuple(f for f in _DEFAULTS["host"] if f != "name")
