"""Starting processes inside a host's namespace; one process per rank, bounded in time.

:func:`spawn` starts one program as ``ip netns exec <ns> <argv>`` (``ip``
joins the namespace and then ``exec``s the command, so the child's pid is the
program's pid), with ``PR_SET_PDEATHSIG = SIGKILL``: if the parent dies, even
by ``kill -9``, the kernel kills the child too. Everything that starts
programs in the emulation's namespaces (:func:`launch`, the bcast emulation's
storage and nodes, the bcast benchmark's baselines) starts them with it. Everything is bounded:
past ``timeout_s`` the ranks still running are killed (only these pids, the
ones we started) and :class:`~parcomm.emu.shell.EmuError` names them; if one
rank fails the others are killed at once instead of waiting for them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..lifetime import die_with_parent
from .shell import EmuError, tool

__all__ = ["RankSpec", "RankOutcome", "launch", "spawn"]


def _die_with_parent() -> None:  # runs in the child between fork and exec
    die_with_parent(signal.SIGKILL)


def spawn(
    netns: str, argv: Sequence[str], log_path: str | os.PathLike, env: Mapping[str, str] | None = None
) -> subprocess.Popen:
    """Start ``argv`` in network namespace ``netns``, stdout and stderr to ``log_path``.

    The child gets this process's environment with ``env`` over it and
    ``PYTHONUNBUFFERED=1``, no stdin, and dies with this process. Stopping it
    is the caller's job (by this pid only).
    """
    with open(log_path, "wb") as log:  # the child holds its own copy of the descriptor
        return subprocess.Popen(
            [tool("ip"), "netns", "exec", netns, *argv],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent,
            env={**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"},
        )


@dataclass
class RankSpec:
    rank: int
    netns: str
    argv: list[str]
    log_path: str  # stdout and stderr go here


@dataclass
class RankOutcome:
    rank: int
    returncode: int | None  # None: killed at the timeout
    wall_s: float
    log_path: str

    def log_tail(self, lines: int = 6) -> str:
        try:
            with open(self.log_path, errors="replace") as f:
                text = f.read().strip().splitlines()
        except OSError:
            return ""
        return "\n".join(text[-lines:])


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)


def launch(specs: Sequence[RankSpec], timeout_s: float, *, poll_s: float = 0.02) -> list[RankOutcome]:
    """Run every rank to completion (or until ``timeout_s``); raise ``EmuError`` on any failure."""
    tool("ip")  # fail before starting anything
    procs: list[tuple[RankSpec, subprocess.Popen, float]] = []
    try:
        for s in specs:
            procs.append((s, spawn(s.netns, s.argv, s.log_path), time.monotonic()))
        deadline = time.monotonic() + timeout_s
        ended: dict[int, float] = {}
        failed: RankSpec | None = None
        while len(ended) < len(procs):
            for s, p, t0 in procs:
                if s.rank not in ended and p.poll() is not None:
                    ended[s.rank] = time.monotonic() - t0
                    if p.returncode != 0 and failed is None:
                        failed = s
            if failed is not None or time.monotonic() > deadline:
                break
            time.sleep(poll_s)
        outcomes = []
        for s, p, t0 in procs:
            if p.poll() is None:
                _kill(p)
                outcomes.append(RankOutcome(s.rank, None, time.monotonic() - t0, s.log_path))
            else:
                outcomes.append(RankOutcome(s.rank, p.returncode, ended.get(s.rank, time.monotonic() - t0), s.log_path))
    finally:
        for _s, p, _t in procs:
            _kill(p)
    bad = [o for o in outcomes if o.returncode != 0]
    if failed is not None:
        first = next(o for o in outcomes if o.rank == failed.rank)
        raise EmuError(f"rank {first.rank} exited with status {first.returncode}: {first.log_tail() or '(no output)'}")
    if bad:
        ranks = ", ".join(str(o.rank) for o in bad[:8])
        raise EmuError(
            f"ranks {ranks} still running after the {timeout_s:g} s timeout; killed. Last words of rank {bad[0].rank}: {bad[0].log_tail() or '(none)'}"
        )
    return outcomes
