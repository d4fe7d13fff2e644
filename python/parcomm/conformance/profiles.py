"""Simulator TCP profiles: which of the simulator's transport options it runs with.

The scenario fixes what both sides share (RTO bounds, delayed ACKs,
initial window, whether SACK is allowed). A profile picks the simulator's
loss-recovery machinery on top; the kernel always runs its own (SACK when
the scenario allows it, RACK-TLP, Linux's RTO rules).

``stock``     what every entry point runs (``platform/defaults.py``): the
              ``linux`` stack whole, on hosts with the measured timing noise,
              with the scenario's settings; CUBIC and autotuned buffers
              where the scenario is ``stock``, as the kernel then runs.
``rfc``       the simulator's RFC transport (stack ``rfc``; the default
              before issue 31): NewReno (RFC 6582), no SACK, no tail loss
              probes, whatever the scenario allows.
``sack-tlp``  SACK (RFC 2018/6675) where the scenario allows it, plus tail
              loss probes (RFC 8985 §7).
``linux``     over the RFC transport, the mechanisms of the ``linux`` stack profile
              (``platform/stacks/linux.toml``): Linux's RTO rules and RTT
              sampling with timestamps, 4 ms jiffies
              (``tcp.linux_rto``, ``tcp.timestamps``), and where the scenario
              allows SACK, RACK loss detection, TLP with Linux's PTO and
              PRR in recovery (``tcp.rack``, ``tcp.tail_loss_probe``,
              ``tcp.prr``): the closest the
              simulator comes to the kernel today.

The referee's timing noise is the scenario's (``jitter`` in
``matrix.toml``), given to every profile's hosts (``timing_noise_s``).
"""

from __future__ import annotations

from typing import Any

# What profile ``linux`` takes from the ``linux`` stack (platform/stacks/linux.toml): the
# kernel's mechanisms and timer granularity. The rest (RTO bounds, delayed ACKs, initial
# window, buffers) is the scenario's, given to kernel and simulator alike.
from ..platform.stack import MECHANISMS as LINUX_MECHANISMS

__all__ = ["PROFILES", "profile_overrides", "LINUX_MECHANISMS"]

PROFILES: dict[str, str] = {
    "stock": "the default of every entry point: the linux stack whole, with the scenario's settings",
    "rfc": "NewReno, no SACK, no TLP (the simulator's RFC transport)",
    "sack-tlp": "SACK where the scenario allows it, and tail loss probes",
    "linux": "Linux's RTO rules, timestamp RTT samples, RACK and Linux's TLP (with SACK)",
}


def profile_overrides(profile: str, sack_allowed: bool) -> dict[str, Any]:
    """The simulator's ``tcp`` fields of ``profile`` for a scenario."""
    if profile == "stock":
        # The kernel's own rule: loss probes, RACK and PRR only on SACK connections
        # (tcp_schedule_loss_probe(), tcp_is_sack()); the simulator does not gate them itself.
        return {} if sack_allowed else {"rack": False, "tail_loss_probe": False, "prr": False}
    if profile == "rfc":
        return {"stack": "rfc", "sack": False, "tail_loss_probe": False}
    if profile == "sack-tlp":
        return {"stack": "rfc", "sack": bool(sack_allowed), "tail_loss_probe": True}
    if profile == "linux":
        from ..platform.stack import stack_mechanisms

        out = {"stack": "rfc", **stack_mechanisms("linux")}
        # SACK-based machinery only where the scenario negotiates SACK (Linux
        # schedules loss probes only on SACK connections: tcp_schedule_loss_probe()).
        for k in ("sack", "rack", "tail_loss_probe", "prr"):
            out[k] = bool(out[k] and sack_allowed)
        return out
    raise ValueError(f"unknown simulator profile {profile!r} (known: {', '.join(PROFILES)})")
