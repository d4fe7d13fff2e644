"""Names, ownership and teardown of everything an emulated run creates.

Every object of a run lives in network namespaces named
``pce-<pid>-<tag>-<role>``: ``<pid>`` is the process that owns the run,
``<tag>`` four random hex digits (two runs of one process differ), ``<role>``
``sw`` for the switch or ``n<i>`` for host i. Veths and the bridge exist only
inside these namespaces, so deleting the namespaces deletes everything; the
machine's own network (the root namespace) is never touched.

A state file ``<STATE_DIR>/<pid>-<tag>.json`` records the owner's pid and its
start time (``/proc/<pid>/stat`` field 22), so a recycled pid is not taken
for a live owner. A run is *stale* when its owner is dead (or is another
process that reused the pid); :func:`cleanup_stale` removes stale runs only,
never those of a live process. Without a state file a live pid counts as the
owner: when in doubt, leave it.

A run's scratch files (addresses, rank logs and results) live in a work
directory ``<tmp>/parcomm-emu-<pid>-<tag>-XXXXXXXX``, named for the run and
recorded in its state file, so whoever removes a dead run's namespaces (the
owner, its reaper, the next run's sweep, ``parcomm emu cleanup``) removes
its work directory too. One holding a ``.keep`` file was kept on purpose
(``EmuCluster(keep_workdir=True)``) and is never swept.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import stat
import tempfile
import time
from dataclasses import dataclass, field

from ..lifetime import proc_start_time
from .shell import EmuError, run, tool

__all__ = [
    "PREFIX",
    "RunName",
    "new_run",
    "list_runs",
    "owner_alive",
    "remove_run",
    "cleanup_stale",
    "sweep",
    "Removed",
    "make_workdir",
    "state_dir",
]

PREFIX = "pce"
_NS_RE = re.compile(rf"^{PREFIX}-(\d+)-([0-9a-f]{{4}})-([a-z0-9]+)$")
_STATE_DIRS = ("/run/parcomm/emu", "/tmp/parcomm-emu")
WORKDIR_PREFIX = "parcomm-emu-"
_WORKDIR_RE = re.compile(rf"^{WORKDIR_PREFIX}(\d+)-([0-9a-f]{{4}})-[A-Za-z0-9_]+$")
KEEP_MARK = ".keep"


def state_dir() -> str:
    """The first writable of /run/parcomm/emu and /tmp/parcomm-emu (created if needed)."""
    for d in _STATE_DIRS:
        try:
            os.makedirs(d, mode=0o755, exist_ok=True)
            if os.access(d, os.W_OK):
                return d
        except OSError:
            continue
    raise EmuError(f"no writable state directory among {', '.join(_STATE_DIRS)}")


@dataclass
class RunName:
    """The names of one run's objects."""

    pid: int
    tag: str
    namespaces: list[str] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return f"{self.pid}-{self.tag}"

    def ns(self, role: str) -> str:
        return f"{PREFIX}-{self.pid}-{self.tag}-{role}"

    @property
    def switch_ns(self) -> str:
        return self.ns("sw")

    def host_ns(self, i: int) -> str:
        return self.ns(f"n{i}")

    @property
    def state_file(self) -> str:
        return os.path.join(state_dir(), f"{self.run_id}.json")

    def record(self, **extra) -> None:
        """Write the state file (atomically) before any object is created."""
        data = {
            "pid": self.pid,
            "start_time": proc_start_time(self.pid),
            "created": time.time(),
            "namespaces": self.namespaces,
            **extra,
        }
        tmp = self.state_file + ".tmp"
        with open(tmp, "w") as f:
            json.dump(data, f)
        os.replace(tmp, self.state_file)


def new_run() -> RunName:
    """A fresh name for a run owned by this process."""
    existing = {(r.pid, r.tag) for r in list_runs()}
    while True:
        name = RunName(os.getpid(), secrets.token_hex(2))
        if (name.pid, name.tag) not in existing:
            return name


def _netns_names() -> list[str]:
    out = run([tool("ip"), "netns", "list"], what="ip netns list").stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def list_runs() -> list[RunName]:
    """Every run with a namespace or a state file on this machine, alive or not."""
    runs: dict[tuple[int, str], RunName] = {}
    for ns in _netns_names():
        m = _NS_RE.match(ns)
        if m:
            key = (int(m.group(1)), m.group(2))
            runs.setdefault(key, RunName(*key)).namespaces.append(ns)
    try:
        d = state_dir()
        files = os.listdir(d)
    except (EmuError, OSError):
        files = []
    for fn in files:
        m = re.match(r"^(\d+)-([0-9a-f]{4})\.json$", fn)
        if m:
            runs.setdefault((int(m.group(1)), m.group(2)), RunName(int(m.group(1)), m.group(2)))
    for path in _workdirs():  # a run killed after its state file went may have left only this
        m = _WORKDIR_RE.match(os.path.basename(path))
        if m:
            runs.setdefault((int(m.group(1)), m.group(2)), RunName(int(m.group(1)), m.group(2)))
    return sorted(runs.values(), key=lambda r: (r.pid, r.tag))


def make_workdir(run_name: RunName, *, keep: bool = False) -> str:
    """Create the run's work directory (mode 700) in the temporary directory; ``keep``: never swept."""
    path = tempfile.mkdtemp(prefix=f"{WORKDIR_PREFIX}{run_name.run_id}-")
    if keep:
        with open(os.path.join(path, KEEP_MARK), "w"):
            pass
    return path


def _removable_workdir(path: str, run_name: RunName | None = None) -> bool:
    """One of our work directories (of ``run_name`` if given), ours to delete and not kept."""
    m = _WORKDIR_RE.match(os.path.basename(path))
    if not m or (run_name is not None and (int(m.group(1)), m.group(2)) != (run_name.pid, run_name.tag)):
        return False
    try:
        st = os.lstat(path)
    except OSError:
        return False
    # A real directory of our own user: never follow a symlink or delete another user's files.
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        return False
    return not os.path.lexists(os.path.join(path, KEEP_MARK))


def _workdirs() -> list[str]:
    """Our unkept work directories in the temporary directory (any run, alive or not)."""
    top = tempfile.gettempdir()
    try:
        names = [n for n in os.listdir(top) if n.startswith(WORKDIR_PREFIX)]
    except OSError:
        return []
    return [os.path.join(top, n) for n in sorted(names) if _removable_workdir(os.path.join(top, n))]


def _recorded_workdir(run_name: RunName) -> str | None:
    try:
        with open(os.path.join(state_dir(), f"{run_name.run_id}.json")) as f:
            path = json.load(f).get("workdir")
    except (OSError, ValueError, EmuError, AttributeError):
        return None
    return path if isinstance(path, str) and os.path.isabs(path) else None


def _remove_workdirs(run_name: RunName) -> list[str]:
    """Delete the run's work directories (the recorded one, wherever it is, and any in the temp dir)."""
    found = [p for p in _workdirs() if _removable_workdir(p, run_name)]
    recorded = _recorded_workdir(run_name)
    if recorded and recorded not in found and _removable_workdir(recorded, run_name):
        found.append(recorded)
    removed = []
    for path in found:
        shutil.rmtree(path, ignore_errors=True)  # rmtree does not follow symlinks inside
        if not os.path.lexists(path):
            removed.append(path)
    return removed


def _recorded_start(run_name: RunName) -> int | None:
    try:
        with open(os.path.join(state_dir(), f"{run_name.run_id}.json")) as f:
            return json.load(f).get("start_time")
    except (OSError, ValueError, EmuError):
        return None


def owner_alive(run_name: RunName) -> bool:
    """True if the process that created the run still exists (same pid, same start time)."""
    now = proc_start_time(run_name.pid)
    if now is None:
        return False
    recorded = _recorded_start(run_name)
    return recorded is None or recorded == now


def _kill_namespace_processes(ns: str) -> None:
    """SIGKILL what still runs inside one of our namespaces (ranks of a dead run)."""
    out = run([tool("ip"), "netns", "pids", ns], check=False, what=f"ip netns pids {ns}").stdout
    for tok in out.split():
        try:
            pid = int(tok)
        except ValueError:
            continue
        if pid == os.getpid():
            continue
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@dataclass
class Removed:
    """What a removal or sweep deleted."""

    namespaces: list[str] = field(default_factory=list)
    workdirs: list[str] = field(default_factory=list)

    def __iadd__(self, other: Removed) -> Removed:
        self.namespaces += other.namespaces
        self.workdirs += other.workdirs
        return self


def remove_run(run_name: RunName, namespaces: list[str] | None = None, *, workdirs: bool = True) -> list[str]:
    """Delete a run's namespaces (and so its veths and bridge), its work directory
    (unless ``workdirs`` is false or it is kept) and its state file.

    Idempotent: objects already gone are skipped. Returns the namespaces removed.
    """
    return _remove_run(run_name, namespaces, workdirs=workdirs).namespaces


def _remove_run(run_name: RunName, namespaces: list[str] | None = None, *, workdirs: bool = True) -> Removed:
    wanted = set(namespaces or [])
    for ns in _netns_names():
        m = _NS_RE.match(ns)
        if m and int(m.group(1)) == run_name.pid and m.group(2) == run_name.tag:
            wanted.add(ns)
    present = set(_netns_names())
    removed = []
    # Hosts first, the switch last: processes in host namespaces lose their
    # links before the bridge goes.
    for ns in sorted(wanted, key=lambda n: n.endswith("-sw")):
        if ns not in present:
            continue
        _kill_namespace_processes(ns)
        proc = run([tool("ip"), "netns", "del", ns], check=False, what=f"ip netns del {ns}")
        if proc.returncode == 0 or ns not in _netns_names():
            removed.append(ns)
        else:
            raise EmuError(f"could not delete namespace {ns}: {proc.stderr.strip()}")
    # The state file goes last: it names the work directory and keeps the run listed until all is gone.
    dirs = _remove_workdirs(run_name) if workdirs else []
    with contextlib.suppress(OSError, EmuError):
        os.unlink(os.path.join(state_dir(), f"{run_name.run_id}.json"))
    return Removed(removed, dirs)


def sweep(*, all_runs: bool = False) -> Removed:
    """Remove the namespaces and work directories of every run whose owner is dead
    (``all_runs``: of every run, live or not); kept work directories stay."""
    removed = Removed()
    for r in list_runs():
        if all_runs or not owner_alive(r):
            removed += _remove_run(r)
    return removed


def cleanup_stale() -> list[str]:
    """Remove the objects of every run whose owner is dead; returns the namespaces removed."""
    return sweep().namespaces
