"""Where a study's independent simulations run: in this process, a local process pool, or MPI.

A study hands its independent runs to :meth:`StudyContext.map`, which sends them to one of
these executors and returns the results in the order of the inputs. Every simulation is
deterministic (its seed is part of its input), and results come back by pickling, which keeps
every float's bits, so a study's numbers are the same whatever the executor and however many
workers it has; ``tests/test_repro_executor.py`` checks it.

* ``serial``: in this process, one after another (``--workers 1``).
* ``local``: a :class:`concurrent.futures.ProcessPoolExecutor` on this machine's cores
  (the default, one worker per core). Workers start from a fork server, not by forking the
  caller, because the caller runs a progress display on a thread.
* ``mpi``: :class:`mpi4py.futures.MPIPoolExecutor`. Started as
  ``mpiexec -n N python -m mpi4py.futures -m parcomm repro --executor mpi``, rank 0 runs the
  studies and the other N - 1 ranks run simulations; started alone, it spawns ``--workers``
  worker processes through MPI (where the MPI library allows spawning).
"""

from __future__ import annotations

import os
from concurrent.futures import Executor, Future
from typing import Any, Callable

EXECUTORS = ("local", "mpi")


class SerialExecutor(Executor):
    """Runs each call at once in this process; the reference every other executor must match."""

    max_workers = 1

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        fut: Future = Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # delivered by result(), as a pool would
            fut.set_exception(exc)
        return fut


def default_workers() -> int:
    """One worker per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def make_executor(kind: str = "local", workers: int | None = None) -> Executor:
    """An executor of ``kind`` (``local`` or ``mpi``) with ``workers`` workers.

    ``local`` with one worker is the in-process :class:`SerialExecutor`. Use it as a context
    manager, so the workers end with the run.
    """
    if kind not in EXECUTORS:
        raise ValueError(f"--executor: unknown executor {kind!r}; known: {', '.join(EXECUTORS)}")
    if workers is not None and workers < 1:
        raise ValueError(f"--workers: {workers} is not a positive number of workers")
    if kind == "mpi":
        try:
            from mpi4py.futures import MPIPoolExecutor
        except ImportError as exc:  # pragma: no cover - mpi4py is a dependency
            raise ValueError(f"--executor mpi needs mpi4py.futures: {exc}") from None
        ex = MPIPoolExecutor(max_workers=workers) if workers else MPIPoolExecutor()
        ex.max_workers = workers  # type: ignore[attr-defined]
        return ex
    n = workers or default_workers()
    if n == 1:
        return SerialExecutor()
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    ex = ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context("forkserver"))
    ex.max_workers = n  # type: ignore[attr-defined]
    return ex


def describe(ex: Executor | None) -> str:
    """``serial``, ``local process pool, 2 workers`` or ``MPI pool``: for the report."""
    if ex is None or isinstance(ex, SerialExecutor):
        return "serial (in process)"
    n = getattr(ex, "max_workers", None)
    kind = "MPI pool (mpi4py.futures)" if type(ex).__module__.startswith("mpi4py") else "local process pool"
    return f"{kind}, {n} workers" if n else kind
