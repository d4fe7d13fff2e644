"""A watchdog that removes a run's namespaces if its owner dies without doing so.

``EmuCluster`` starts ``python -m parcomm.emu.reaper PID TAG`` in its own
session as soon as the run's state file exists. The reaper polls every
``POLL_S``: when the state file is gone the owner tore down itself and the
reaper exits; when the owner is dead (or its pid now belongs to another
process) the reaper removes the run's objects and exits. So even after
``kill -9`` nothing of the run survives for more than a fraction of a second,
and the next start's stale sweep is only a second line of defence.
"""

from __future__ import annotations

import os
import sys
import time

from .naming import RunName, owner_alive, remove_run, state_dir

POLL_S = 0.25


def watch(pid: int, tag: str) -> int:
    run = RunName(pid, tag)
    path = os.path.join(state_dir(), f"{run.run_id}.json")
    while True:
        if not os.path.exists(path):
            return 0
        if not owner_alive(run):
            remove_run(run)
            return 0
        time.sleep(POLL_S)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m parcomm.emu.reaper PID TAG", file=sys.stderr)
        return 2
    return watch(int(args[0]), args[1])


if __name__ == "__main__":
    sys.exit(main())
