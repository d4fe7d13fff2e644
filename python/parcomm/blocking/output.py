"""A script's standard streams, as mpiexec gives them to ranks.

* stdout and stderr: each rank's lines, in the order the ranks wrote them;
  with ``tag_output`` each line starts with ``[rank] `` (Hydra's
  ``-prepend-rank``). ``to_stderr`` sends the ranks' stdout to stderr, so a
  run's ``--json`` document is alone on stdout.
* stdin: rank 0 reads the run's standard input; the other ranks read an
  empty stream (mpiexec forwards stdin to rank 0 only).

Under the simulator every rank shares one interpreter, so these streams ask
which rank is running (its greenlet) on each write.
"""

from __future__ import annotations

import io
from typing import Any, TextIO

import greenlet

__all__ = ["RankOutput", "RankInput"]


def _rank() -> int | None:
    ctx = getattr(greenlet.getcurrent(), "ctx", None)
    return None if ctx is None else ctx.comm.rank


class RankOutput(io.TextIOBase):
    """Stands for sys.stdout or sys.stderr while scripts run."""

    def __init__(self, target: TextIO, tag_output: bool, rank: int | None = None):
        self._target = target
        self._tag = tag_output
        self._rank = rank  # this process's rank when it is one rank (run mpi); else asked per write
        self._partial: dict[int, str] = {}  # a rank's unfinished line (tagged output only)

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._target, "encoding", "utf-8")

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._target.fileno()

    def write(self, text: str) -> int:
        rank = self._rank if self._rank is not None else _rank()
        if rank is None or not self._tag:
            return self._target.write(text)
        pending = self._partial.pop(rank, "") + text
        lines = pending.split("\n")
        self._partial[rank] = lines.pop()
        if lines:  # whole lines in one write, flushed: lines of ranks sharing a pipe never mix
            self._target.write("".join(f"[{rank}] {line}\n" for line in lines))
            self._target.flush()
        return len(text)

    def finish_rank(self, rank: int) -> None:
        """A rank ended: its unfinished line goes out as it is."""
        rest = self._partial.pop(rank, "")
        if rest:
            self._target.write(f"[{rank}] {rest}\n")

    def flush(self) -> None:
        self._target.flush()


class RankInput(io.TextIOBase):
    """Stands for sys.stdin while scripts run: rank 0's is ``source``, the others' empty."""

    def __init__(self, source: TextIO | None):
        self._source = source if source is not None else io.StringIO("")
        self._empty = io.StringIO("")

    def _stream(self) -> Any:
        rank = _rank()
        return self._source if rank in (None, 0) else self._empty

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> str:
        return self._stream().read(size)

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        return self._stream().readline(size)

    def __iter__(self) -> Any:
        return iter(self._stream().readline, "")

    def isatty(self) -> bool:
        return False
