"""Per-rank timelines as Chrome / Perfetto trace-event JSON.

With tracing on (``run_sim(..., trace=True)``, ``run_local(..., trace=True)``,
``run_mpi(..., trace=True)``, or ``--trace FILE`` on the command line) each
rank's communicator records what its program did: ``isend``/``irecv`` as
instants, every blocking ``wait`` as a span naming what it waited for,
``compute``/``sleep`` and each collective call as spans. Times are the
communicator's ``wtime()``: simulated seconds under the simulator, seconds
since the common start under the real backends. Open the file in
https://ui.perfetto.dev or chrome://tracing: one row per rank.
"""

from __future__ import annotations

import json
import os
from typing import Any, Sequence

from .base import tag_label

__all__ = ["chrome_trace", "write_chrome_trace", "MAX_EVENTS"]

#: Events kept per rank (a runaway program must not exhaust memory); the rest are counted.
MAX_EVENTS = 200_000


def chrome_trace(traces: Sequence[Sequence[tuple] | None], backend: str = "", platform: str = "") -> dict[str, Any]:
    """The trace-event document for per-rank event lists
    ``(phase, name, t0_s, t1_s, args)``."""
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": f"{backend} {platform}".strip()}},
    ]
    for rank, evs in enumerate(traces):
        events.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": rank, "args": {"name": f"rank {rank}"}})
        for ph, name, t0, t1, args in evs or ():
            e: dict[str, Any] = {"name": name, "ph": ph, "pid": 0, "tid": rank, "ts": round(t0 * 1e6, 3)}
            if ph == "X":
                e["dur"] = round(max(0.0, t1 - t0) * 1e6, 3)
            else:
                e["s"] = "t"
            if args:
                e["args"] = {k: tag_label(v) if k == "tag" and isinstance(v, int) else v for k, v in args.items()}
            events.append(e)
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def write_chrome_trace(
    path: str | os.PathLike, traces: Sequence[Sequence[tuple] | None], backend: str = "", platform: str = ""
) -> None:
    with open(path, "w") as f:
        json.dump(chrome_trace(traces, backend, platform), f, default=repr)
        f.write("\n")
