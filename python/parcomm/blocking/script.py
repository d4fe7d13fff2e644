"""Running an unmodified ``from mpi4py import MPI`` script as a rank program.

:func:`script_program` is an ordinary ``async def`` rank program, so every
way that runs rank programs (``sim run``, ``emu run``, ``run local``) runs
scripts too. For each rank it makes a :class:`~.bridge.RankContext`,
installs parcomm's ``mpi4py`` in ``sys.modules`` for the length of the run
(:func:`mpi4py_installed`: the real mpi4py, if it was imported, is put back
after), and executes the script as ``__main__`` in a greenlet
(:func:`~.bridge.drive`). ``sys.exit(0)`` ends a rank normally; another
status is an error of that rank.

Under the simulator all ranks share one interpreter: each rank gets a fresh
``__main__`` namespace, but modules the script imports are imported once
and shared, as threads of one MPI process would share them.
"""

from __future__ import annotations

import io
import os
import runpy
import sys
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..comm.aio import is_script_ref
from .bridge import RankContext, drive
from .misc import AbortRun
from .output import RankInput, RankOutput

__all__ = ["script_program", "mpi4py_installed", "is_script_ref", "SELF_CONTEXT"]

#: The communicator context of COMM_SELF (messages to oneself; no Split reaches it).
SELF_CONTEXT = 0xFFFF

_installed = 0
_saved: dict[str, Any] = {}


def _shim_package() -> types.ModuleType:
    from . import MPI

    pkg = types.ModuleType("mpi4py", "parcomm's implementation of mpi4py (inside a parcomm run)")
    pkg.__path__ = []  # a package: `import mpi4py.MPI` looks in sys.modules
    pkg.MPI = MPI  # type: ignore[attr-defined]
    pkg.__version__ = "4.1.2"  # type: ignore[attr-defined] # the mpi4py release whose tests referee this surface
    pkg.rc = types.SimpleNamespace(  # type: ignore[attr-defined]
        initialize=True, threads=True, thread_level="multiple", finalize=None, fast_reduce=True, recv_mprobe=True
    )
    pkg.get_include = lambda: ""  # type: ignore[attr-defined]
    pkg.get_config = lambda: {}  # type: ignore[attr-defined]
    pkg.profile = lambda *a, **k: None  # type: ignore[attr-defined]
    return pkg


@contextmanager
def mpi4py_installed(
    tag_output: bool = False, to_stderr: bool = False, stdin_text: str | None = None
) -> Iterator[None]:
    """Inside, ``import mpi4py`` / ``from mpi4py import MPI`` give parcomm's
    implementation and the standard streams are the ranks' (:mod:`.output`).
    Every rank of a run enters it; the first sets it up, the last restores."""
    global _installed
    if _installed == 0:
        for name in [n for n in sys.modules if n == "mpi4py" or n.startswith("mpi4py.")]:
            _saved[name] = sys.modules.pop(name)
        pkg = _shim_package()
        sys.modules["mpi4py"] = pkg
        sys.modules["mpi4py.MPI"] = pkg.MPI  # type: ignore[attr-defined]
        _saved["<streams>"] = (sys.stdout, sys.stderr, sys.stdin)
        out_target = sys.stderr if to_stderr else sys.stdout
        sys.stdout = RankOutput(out_target, tag_output)  # type: ignore[assignment]
        sys.stderr = RankOutput(sys.stderr, tag_output)  # type: ignore[assignment]
        source = io.StringIO(stdin_text) if stdin_text is not None else _saved["<streams>"][2]
        sys.stdin = RankInput(source)  # type: ignore[assignment]
    _installed += 1
    try:
        yield
    finally:
        _installed -= 1
        if _installed == 0:
            for name in [n for n in sys.modules if n == "mpi4py" or n.startswith("mpi4py.")]:
                del sys.modules[name]
            sys.stdout.flush()
            sys.stdout, sys.stderr, sys.stdin = _saved.pop("<streams>")
            sys.modules.update(_saved)
            _saved.clear()


def make_context(comm: Any, cpu_scale: float | None) -> RankContext:
    from ..comm.communicator import SubComm

    ctx = RankContext(comm, cpu_scale)
    ctx.objects["world"] = comm
    ctx.objects["self"] = SubComm(comm, [comm.rank], SELF_CONTEXT)
    ctx.objects["simulated"] = type(comm).__name__ == "SimComm"
    return ctx


class ScriptExit(Exception):
    """A rank's script called ``sys.exit`` with a nonzero status."""


def _run_main(path: str, argv: Sequence[str]) -> None:
    old_argv, old_path0 = sys.argv, sys.path[0] if sys.path else None
    sys.argv = [path, *argv]
    script_dir = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, script_dir)
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as e:
        if e.code not in (None, 0):
            raise ScriptExit(f"{os.path.basename(path)} exited with status {e.code}") from None
    finally:
        sys.argv = old_argv
        if sys.path and sys.path[0] == script_dir:
            del sys.path[0]
        _ = old_path0


async def script_program(
    comm: Any,
    *,
    script: str,
    argv: Sequence[str] = (),
    cpu_scale: float | None = None,
    tag_output: bool = False,
    to_stderr: bool = False,
    stdin_text: str | None = None,
) -> None:
    """Rank program: run ``script`` (a path) with parcomm's mpi4py; returns None, as a script does.

    ``cpu_scale``: charge the CPU time between calls to simulated time (see
    :mod:`.bridge`); ``tag_output``, ``to_stderr``, ``stdin_text``: the
    streams (see :mod:`.output`; ``stdin_text`` is rank 0's input when the
    launcher read it for a rank in another process)."""
    if cpu_scale is not None and (not isinstance(cpu_scale, (int, float)) or cpu_scale < 0):
        raise ValueError(f"cpu_scale must be a non-negative number, got {cpu_scale!r}")
    with mpi4py_installed(tag_output, to_stderr, stdin_text):
        ctx = make_context(comm, cpu_scale or None)
        try:
            await drive(ctx, _run_main, script, list(argv))
        except AbortRun as e:  # MPI_Abort ends the whole run, as mpiexec kills every rank
            from ..comm.base import CommError

            raise CommError(str(e)) from None
        finally:
            for stream in (sys.stdout, sys.stderr):
                if isinstance(stream, RankOutput):
                    stream.finish_rank(comm.rank)
