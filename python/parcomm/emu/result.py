"""What an emulated run returns: shaped like :class:`parcomm.comm.SimResult`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..comm.base import CompletionTime

__all__ = ["EmuResult"]


@dataclass
class EmuResult(CompletionTime):
    """Times are real seconds, measured from the moment every rank was ready.

    ``counters`` has the simulator's columns (``hosts``, ``ports``, ...);
    entries the kernel cannot give are ``None``. ``extra`` records the TCP
    settings each host got, what could not be emulated, and raw timings.
    """

    finish_times: list[float]
    results: list[Any]
    counters: dict[str, Any]
    wall_s: float
    platform: str = ""
    backend: str = "emu"
    extra: dict[str, Any] = field(default_factory=dict)

    def host_totals(self) -> dict[str, int | None]:
        """Sums over hosts; ``None`` for a column the kernel does not provide."""
        h = self.counters["hosts"]
        out: dict[str, int | None] = {}
        for k in ("bytes_sent", "bytes_retransmitted", "segments_retransmitted", "timeouts", "fast_retransmits"):
            vals = h.get(k) or []
            out[k] = None if any(v is None for v in vals) else int(sum(vals))
        return out

    def port_drops(self) -> int:
        """Drops at the switch ports and host NIC queues."""
        return int(sum(v for v in self.counters["ports"]["drops"] if v is not None))
