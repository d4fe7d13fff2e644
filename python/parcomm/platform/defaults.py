"""The validated configuration: what every platform gets unless it says otherwise.

The conformance suite (``docs/conformance.md``) is the referee: whatever it
validates against the real kernel is the default of every entry point, and
these two constants are the one place that says so. ``schema.tcp_spec`` and
``schema.host`` read them; builders, short forms, platform files, ``run_sim``,
``parcomm sim``/``compare`` and the studies all build hosts through those.

* ``DEFAULT_STACK``: the TCP profile ``platform/stacks/linux.toml``.
* ``DEFAULT_TIMING_NOISE_S``: each host's transmit timing noise (spec.rs
  ``HostSpec::timing_noise_s``): a frame reaches the link up to this much later
  than an ideal NIC would send it, uniform, drawn per frame, order kept. The
  value is the referee's measurement: with 4 and 16 senders, each frame's
  arrival at the switch deviates from an ideal NIC's schedule by 52.4 and
  56.4 us standard deviation (``benchmarks/results/emu_jitter.json``,
  ``phase_noise_us.std``; ``python3 benchmarks/emu_jitter.py --senders 1,4,16
  --repeat 3``); a uniform draw of that standard deviation spans
  55 us x sqrt(12) = 190 us. Kept in order, such draws also give the runs of
  2-3 frames the capture shows (``net/port.rs`` test
  ``host_noise_gives_the_measured_spread_and_runs``).

``IDEAL_WIRE`` (noise 0) stays available, and every output names it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "DEFAULT_STACK",
    "DEFAULT_TIMING_NOISE_S",
    "IDEAL_WIRE",
    "IDENTITY_FIELDS",
    "transport_of",
    "transport_label",
]

DEFAULT_STACK = "linux"
DEFAULT_TIMING_NOISE_S = 190e-6
IDEAL_WIRE = 0.0

#: The ``tcp`` fields that say which stack a host runs (its mechanisms and congestion
#: control), as opposed to what an experiment sets (RTO bounds, delayed ACKs, buffers).
IDENTITY_FIELDS = ("cubic", "hystart")  # beside stack.MECHANISMS


def _stack_of(tcp: Mapping[str, Any]) -> tuple[str, list[str]]:
    """The shipped profile closest to ``tcp`` on its identity fields, and the fields that differ."""
    from .fields import LINUX_TCP
    from .stack import MECHANISMS, STACKS, stack_fields

    keys = (*MECHANISMS, *IDENTITY_FIELDS)
    best: tuple[str, list[str]] | None = None
    for name in (DEFAULT_STACK, *[s for s in STACKS if s != DEFAULT_STACK]):
        ref = {**LINUX_TCP, **stack_fields(name)}  # a profile over the spec's defaults, as tcp_spec builds it
        diff = [k for k in keys if k in tcp and tcp[k] != ref[k]]
        if best is None or len(diff) < len(best[1]):
            best = (name, diff)
    assert best is not None
    return best


def transport_of(platform: Mapping[str, Any]) -> dict[str, Any]:
    """Which stack and which timing noise a platform runs, for every table and ``--json``.

    ``stack``: a profile name, ``"<name>+<field>=<value>,..."`` where hosts
    differ from it in a mechanism, or ``"mixed"``; ``noise``: ``"ideal wire"``
    or the host noise (and link jitter) in microseconds; ``validated``: the
    default configuration of ``DEFAULT_STACK`` and ``DEFAULT_TIMING_NOISE_S``.
    """
    labels, noises, jitters = set(), set(), set()
    for h in platform.get("hosts", []):
        tcp = h.get("tcp") or {}
        name, diff = _stack_of(tcp)
        labels.add(name + "".join(f"+{k}={str(tcp[k]).lower()}" for k in diff))
        noises.add(float(h.get("timing_noise_s") or 0.0))
    for ln in platform.get("links", []):
        jitters.add(float(ln.get("jitter_s") or 0.0))
    stack = labels.pop() if len(labels) == 1 else "mixed"
    parts = []
    if noises - {0.0}:
        parts.append("host timing noise " + "/".join(f"{n * 1e6:g} us" for n in sorted(noises)))
    if jitters - {0.0}:
        parts.append("link jitter " + "/".join(f"{j * 1e6:g} us" for j in sorted(jitters)))
    noise = " + ".join(parts) if parts else "ideal wire"
    validated = stack == DEFAULT_STACK and noises == {DEFAULT_TIMING_NOISE_S} and not jitters - {0.0}
    return {"stack": stack, "noise": noise, "validated": validated}


def transport_label(platform: Mapping[str, Any]) -> str:
    """One line: ``stack linux, host timing noise 190 us (validated)``."""
    t = transport_of(platform)
    tag = "validated" if t["validated"] else "unvalidated"
    return f"stack {t['stack']}, {t['noise']} ({tag})"
