"""Nothing a launcher starts outlives it; nothing it leaves behind outlives the next run.

One module for every launcher (``run local`` ranks, ``bcast --local`` nodes,
the emulation's rank processes; the emulation's namespace watchdog in
``emu/reaper.py`` builds on the same owner check):

* **Children die with their parent.** :func:`die_with_parent` asks the kernel
  (``prctl(PR_SET_PDEATHSIG, SIGKILL)``) to kill this process when the thread
  that forked it ends, ``kill -9`` included. Set in the child, it races with a
  parent that dies first, so :func:`tie_to` then checks that the launcher
  (pid and start time: a recycled pid is not taken for it) is still alive.
  ``run local`` ranks are forked by multiprocessing's fork server, which lives
  as long as any of them does: they watch their pipe to the launcher instead
  (:func:`die_when_closed`), which the kernel closes when the launcher dies.
* **Temporary directories are swept by the next run.** A directory made by
  :func:`owned_temp_dir` is named ``parcomm-<kind>-<pid>-<start>-XXXXXXXX``;
  multiprocessing's own ``pymp-*`` directory gets an empty marker
  ``.parcomm-owner-<pid>-<start>`` (:func:`mark_multiprocessing_temp_dir`).
  :func:`sweep_temp_dirs` removes only such directories, only of this user
  (never through a link), and only when their owner is dead.
* **A file is written whole or not at all.** :func:`partial_file` writes
  beside the target under a fresh name carrying the writer's pid and start
  time, renames it into place on success and removes it on failure; the next
  write of the same target removes those of dead writers.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import re
import secrets
import select
import shutil
import signal
import socket
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import BinaryIO, NamedTuple

__all__ = [
    "Owner",
    "proc_start_time",
    "this_process",
    "alive",
    "die_with_parent",
    "tie_to",
    "die_when_closed",
    "owned_temp_dir",
    "mark_multiprocessing_temp_dir",
    "sweep_temp_dirs",
    "partial_file",
    "sweep_partial_files",
]

_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_OWNED_RE = re.compile(r"^parcomm-([a-z]+)-(\d+)-(\d+)-[A-Za-z0-9_]+$")
_MARK_RE = re.compile(r"^\.parcomm-owner-(\d+)-(\d+)$")
_MP_PREFIX = "pymp-"


class Owner(NamedTuple):
    """A process, told apart from a later one with the same pid by its start time."""

    pid: int
    start: int | None


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (field 3 first), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode(errors="replace")
    except OSError:
        return None
    # comm (field 2) may contain spaces and parentheses: split after the last ')'.
    return data[data.rfind(")") + 2 :].split()


def proc_start_time(pid: int) -> int | None:
    """Field 22 of /proc/<pid>/stat (clock ticks since boot), or None if no such process."""
    rest = _stat_fields(pid)
    try:
        return int(rest[19]) if rest else None
    except (IndexError, ValueError):
        return None


def this_process() -> Owner:
    pid = os.getpid()
    return Owner(pid, proc_start_time(pid))


def alive(owner: Owner) -> bool:
    """Whether ``owner`` still runs (the same process, not a later one with its pid, and not a
    zombie: a killed process its parent has not reaped yet is dead)."""
    rest = _stat_fields(owner.pid)
    if not rest or rest[0] in ("Z", "X"):
        return False
    try:
        return owner.start is None or int(rest[19]) == owner.start
    except (IndexError, ValueError):
        return False


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None


_LIBC = _libc()


def die_with_parent(sig: int = signal.SIGKILL) -> bool:
    """Have the kernel send ``sig`` to this process when its parent (thread) ends.
    False where the kernel cannot (not Linux): then only :func:`tie_to`'s check holds.
    Safe between fork and exec (``preexec_fn``): one system call, no allocation."""
    return _LIBC is not None and _LIBC.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0


def die_when_closed(fd: int) -> threading.Thread:
    """Kill this process (SIGKILL, as ``PR_SET_PDEATHSIG`` would) once the other end of the
    stream socket ``fd`` is closed, which the kernel does when the process holding it dies.
    For children whose parent is not their launcher (multiprocessing's fork server forks
    them, and lives as long as they do): their pipe to the launcher is the launcher's life.
    Data waiting on ``fd`` is left for its reader (the end is seen once the reader has taken
    what came before it). Returns the (daemon) watching thread."""
    watched = socket.socket(fileno=os.dup(fd))  # ours alone: the caller may close its copy

    def watch() -> None:
        while True:
            select.select([watched], [], [])
            try:
                pending = watched.recv(1, socket.MSG_PEEK)
            except OSError:
                pending = b""
            if not pending:
                os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(0.05)  # a message for the reader: let it take it, then watch again

    thread = threading.Thread(target=watch, name="parcomm-die-with-launcher", daemon=True)
    thread.start()
    return thread


def tie_to(owner: Owner) -> bool:
    """In a child of ``owner`` (the launcher): die with it, then make sure it did not die before
    that took effect (a child is re-parented the moment its parent dies, reaped or not).
    False: the launcher is gone, the caller should exit at once."""
    die_with_parent()
    return os.getppid() == owner.pid and alive(owner)


# --------------------------------------------------------------------------- temporary dirs


def owned_temp_dir(kind: str) -> str:
    """A new private (0700) directory in the temporary directory, named for ``kind`` and this
    process, so that :func:`sweep_temp_dirs` removes it once we are dead."""
    if not re.fullmatch(r"[a-z]+", kind):
        raise ValueError(f"temp dir kind must be lowercase letters, got {kind!r}")
    me = this_process()
    return tempfile.mkdtemp(prefix=f"parcomm-{kind}-{me.pid}-{me.start or 0}-")


def mark_multiprocessing_temp_dir() -> str | None:
    """Mark this process's multiprocessing temp dir (``pymp-*``, which holds the fork server's
    socket and is removed only at a clean exit) as ours, so the next run sweeps it after a
    ``kill -9``. Returns its path (None if it could not be marked)."""
    from multiprocessing import util

    try:
        path = util.get_temp_dir()
        me = this_process()
        with open(os.path.join(path, f".parcomm-owner-{me.pid}-{me.start or 0}"), "x"):
            pass
    except FileExistsError:
        pass
    except OSError:
        return None
    return path


def _our_directory(path: str) -> bool:
    """A real directory (not a link to one) of this user."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()


def _dead(pid: str, start: str) -> bool:
    return not alive(Owner(int(pid), int(start) or None))


def _mp_owner_dead(path: str) -> bool:
    """A ``pymp-*`` dir marked by :func:`mark_multiprocessing_temp_dir` whose owner is dead."""
    try:
        names = os.listdir(path)
    except OSError:
        return False
    marks = [m for m in map(_MARK_RE.match, names) if m]
    return bool(marks) and all(_dead(m.group(1), m.group(2)) for m in marks)


def sweep_temp_dirs(kinds: tuple[str, ...] = ("bcast",), *, multiprocessing_dirs: bool = True) -> list[str]:
    """Remove our temporary directories whose owner is dead: ``parcomm-<kind>-*`` for each of
    ``kinds``, and marked ``pymp-*``. Returns the paths removed. Never raises."""
    top = tempfile.gettempdir()
    try:
        names = os.listdir(top)
    except OSError:
        return []
    removed = []
    for name in names:
        path = os.path.join(top, name)
        m = _OWNED_RE.match(name)
        if m and m.group(1) in kinds:
            stale = _dead(m.group(2), m.group(3))
        elif multiprocessing_dirs and name.startswith(_MP_PREFIX):
            stale = _our_directory(path) and _mp_owner_dead(path)
        else:
            continue
        if stale and _our_directory(path):
            with contextlib.suppress(OSError):
                shutil.rmtree(path)  # does not follow links inside
            if not os.path.lexists(path):
                removed.append(path)
    return removed


# --------------------------------------------------------------------------- partial files

_PARTIAL_RE = re.compile(r"^\.(.+)\.parcomm-(\d+)-(\d+)-[0-9a-f]{16}\.part$")


@contextlib.contextmanager
def partial_file(path: str | os.PathLike[str], mode: int = 0o666) -> Iterator[BinaryIO]:
    """Write ``path`` through a partial file beside it, renamed into place only when the
    ``with`` block succeeds; removed if it fails. The partial file is new
    (``O_EXCL|O_NOFOLLOW``: nothing planted at its name is followed or reused) and named
    ``.NAME.parcomm-<pid>-<start>-<random>.part``, so after a ``kill -9`` the next write of
    ``path`` removes it (:func:`sweep_partial_files`)."""
    from .safefiles import create_exclusive

    target = os.fspath(path)
    folder, name = os.path.split(target)
    sweep_partial_files(target)
    me = this_process()
    temp = os.path.join(folder, f".{name}.parcomm-{me.pid}-{me.start or 0}-{secrets.token_hex(8)}.part")
    fd = create_exclusive(temp, mode=mode)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def sweep_partial_files(path: str | os.PathLike[str]) -> list[str]:
    """Remove the partial files of ``path`` (see :func:`partial_file`) left by dead writers:
    only regular files of this user, never a link. Returns the paths removed."""
    folder, name = os.path.split(os.fspath(path))
    try:
        entries = os.listdir(folder or ".")
    except OSError:
        return []
    removed = []
    for entry in entries:
        m = _PARTIAL_RE.match(entry)
        if not m or m.group(1) != name or not _dead(m.group(2), m.group(3)):
            continue
        full = os.path.join(folder, entry)
        try:
            info = os.lstat(full)
            if stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid():
                os.unlink(full)
                removed.append(full)
        except OSError:
            pass
    return removed
