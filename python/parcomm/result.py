"""One result type for the four ways of answering (model, sim, emu, run), and comparing them.

Every way that runs rank programs returns a :class:`Result`: the simulator
(:func:`parcomm.comm.run_sim`), the emulated cluster
(:class:`parcomm.emu.EmuCluster`) and the real backends
(:func:`parcomm.comm.run_local`, :func:`parcomm.comm.run_mpi`). The fields
mean the same in each, and so does :meth:`Result.host_totals`:

* ``finish_times[r]``: seconds from the common start to rank r's finish
  (simulated seconds for ``sim``; real seconds for ``emu`` and ``run``);
  ``time`` is their maximum, the completion time.
* ``counters``: columns named as the simulator names them (``hosts``,
  ``ports``, ...), one entry per host or port; an entry a way cannot
  measure is ``None``.
* ``host_totals()``: for each column of ``host_columns``, the sum over the
  hosts, or ``None`` when the way did not measure that column on every host
  (the column is absent, or some host's entry is ``None``). ``None`` means
  "not measured", never zero.

:func:`compare` sets results of several ways side by side (``parcomm
compare`` formats what it returns).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = [
    "DETERMINISTIC_WAYS",
    "HOST_COLUMNS",
    "WAYS",
    "WayComparison",
    "RankTiming",
    "Result",
    "WaySummary",
    "compare",
]

#: The four ways, in the order the project names them.
WAYS = ("model", "sim", "emu", "run")
#: Ways whose answer is a function of their inputs (a closed form; the simulator with its seed).
DETERMINISTIC_WAYS = frozenset({"model", "sim"})
#: The per-host TCP columns the simulator and the emulation both report, in the same units; the
#: default ``host_columns`` of a result.
HOST_COLUMNS: tuple[str, ...] = (
    "bytes_sent",
    "bytes_retransmitted",
    "segments_retransmitted",
    "timeouts",
    "fast_retransmits",
)


class RankTiming(Protocol):
    """One rank's wall-clock record in a real run (:class:`parcomm.comm.RankResult` is one)."""

    rank: int
    result: Any
    start_s: float
    finish_s: float
    elapsed_s: float
    trace: list | None


@dataclass
class Result:
    """What a run returns, whichever way it ran (see the module's docstring for the meanings).

    ``way`` is one of :data:`WAYS`; ``backend`` names the machinery within it
    (``"sim"``, ``"emu"``, ``"socket"``, ``"mpi"``; the way's name when not
    given). ``wall_s`` is the wall time the producer spent. ``seed`` and
    ``events`` are the simulator's (``None`` elsewhere). ``host_columns`` are
    the columns :meth:`host_totals` sums: :data:`HOST_COLUMNS` for the
    simulator and the emulation, and for a real run the columns TCP_INFO gave
    its sockets. ``extra`` holds what only one way has (settings, notes, raw
    timings, traces).
    """

    way: str
    finish_times: list[float]
    results: list[Any]
    counters: dict[str, Any]
    wall_s: float
    backend: str = ""
    platform: str = ""
    seed: int | None = None
    events: int | None = None
    host_columns: tuple[str, ...] = HOST_COLUMNS
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.way not in WAYS:
            raise ValueError(f"way must be one of {', '.join(WAYS)}, got {self.way!r}")
        if not self.backend:
            self.backend = self.way

    @property
    def time(self) -> float:
        """Completion time: when the last rank finished."""
        return max(self.finish_times) if self.finish_times else 0.0

    def host_totals(self) -> dict[str, int | None]:
        """Each column of ``host_columns`` summed over the hosts; ``None``: not measured on every host."""
        hosts = self.counters.get("hosts") or {}
        out: dict[str, int | None] = {}
        for k in self.host_columns:
            vals = hosts.get(k)
            out[k] = None if vals is None or any(v is None for v in vals) else int(sum(vals))
        return out

    def port_drops(self) -> int:
        """Drops at the switch ports and host NIC queues (ports whose drops were not measured add none)."""
        drops = (self.counters.get("ports") or {}).get("drops") or []
        return int(sum(v for v in drops if v is not None))

    @classmethod
    def from_ranks(
        cls,
        ranks: Sequence[RankTiming],
        backend: str,
        wall_s: float,
        counters: dict[str, Any] | None = None,
        platform: str = "",
        extra: dict[str, Any] | None = None,
    ) -> Result:
        """A real run's result from its ranks' wall-clock records: times from the earliest start.

        ``host_columns`` are the ``counters["hosts"]`` columns given (what the
        ranks' sockets measured); traces, when the ranks kept them, go to
        ``extra["trace"]`` on the common clock.
        """
        t0 = min(r.start_s for r in ranks)
        traces = [r.trace for r in ranks]
        if any(t is not None for t in traces):
            # on the common clock: each rank's wtime() counts from its own start
            extra = {
                **(extra or {}),
                "trace": [
                    [
                        (ph, n, a + r.start_s - t0, None if b is None else b + r.start_s - t0, g)
                        for ph, n, a, b, g in (r.trace or ())
                    ]
                    for r in ranks
                ],
            }
        counters = counters or {}
        return cls(
            way="run",
            finish_times=[r.finish_s - t0 for r in ranks],
            results=[r.result for r in ranks],
            counters=counters,
            wall_s=wall_s,
            backend=backend,
            platform=platform,
            host_columns=tuple(k for k in counters.get("hosts", {}) if k != "name"),
            extra={"elapsed_s": [r.elapsed_s for r in ranks], "start_s": [r.start_s for r in ranks], **(extra or {})},
        )


# --- comparing ways ------------------------------------------------------------------------------


def _median(values: Sequence[Any]) -> Any:
    """The median, or ``None`` when some value is ``None`` (a run that did not measure it)."""
    if any(v is None for v in values):
        return None
    return statistics.median(values)


@dataclass(frozen=True)
class WaySummary:
    """One way's runs of one workload: medians over the runs, and every run's figures.

    ``segments_retransmitted`` and ``timeouts`` are medians of
    :meth:`Result.host_totals` (``None`` if a run did not measure them),
    ``port_drops`` the median of :meth:`Result.port_drops`. ``times_s``,
    ``host_totals_s`` and ``port_drops_s`` hold each run's time,
    :meth:`Result.host_totals` and :meth:`Result.port_drops`, in run order,
    for a caller that reports another statistic (a mean, a range).
    """

    way: str
    runs: int
    time_s: float
    times_s: list[float]
    segments_retransmitted: float | None
    timeouts: float | None
    port_drops: float
    host_totals_s: list[dict[str, int | None]] = field(default_factory=list)
    port_drops_s: list[int] = field(default_factory=list)

    @classmethod
    def of(cls, way: str, results: Sequence[Result]) -> WaySummary:
        if not results:
            raise ValueError(f"no results for way {way!r}")
        times = [r.time for r in results]
        tots = [r.host_totals() for r in results]
        drops = [r.port_drops() for r in results]
        return cls(
            way=way,
            runs=len(results),
            time_s=statistics.median(times),
            times_s=times,
            segments_retransmitted=_median([t.get("segments_retransmitted") for t in tots]),
            timeouts=_median([t.get("timeouts") for t in tots]),
            port_drops=statistics.median(drops),
            host_totals_s=tots,
            port_drops_s=drops,
        )

    def row(self) -> dict[str, Any]:
        """As JSON: ``times_s`` (every run's time) unless the way is deterministic and ran once."""
        out: dict[str, Any] = {"time_s": self.time_s}
        if self.way not in DETERMINISTIC_WAYS or self.runs > 1:
            out["times_s"] = self.times_s
        out["segments_retransmitted"] = self.segments_retransmitted
        out["timeouts"] = self.timeouts
        out["port_drops"] = self.port_drops
        return out


@dataclass(frozen=True)
class WayComparison:
    """Results of one workload by way (:data:`WAYS` order)."""

    ways: dict[str, WaySummary]

    def __getitem__(self, way: str) -> WaySummary:
        return self.ways[way]

    def __contains__(self, way: object) -> bool:
        return way in self.ways

    def ratio(self, way: str, to: str) -> float | None:
        """``way``'s median time over ``to``'s; ``None`` if either is missing or ``to``'s is not positive."""
        if way not in self.ways or to not in self.ways or self.ways[to].time_s <= 0:
            return None
        return self.ways[way].time_s / self.ways[to].time_s

    def rows(self) -> dict[str, dict[str, Any]]:
        """Every way's :meth:`WaySummary.row`."""
        return {w: s.row() for w, s in self.ways.items()}


def compare(results: Iterable[Result]) -> WayComparison:
    """Group ``results`` (one workload, any ways, any number of runs each) by way and summarize each."""
    by: dict[str, list[Result]] = {}
    for r in results:
        by.setdefault(r.way, []).append(r)
    if not by:
        raise ValueError("compare() needs at least one result")
    return WayComparison({w: WaySummary.of(w, by[w]) for w in WAYS if w in by})
