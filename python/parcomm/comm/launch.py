"""Starting SocketComm ranks: one rank in this process (:func:`run_rank`, what
``python -m parcomm run socket`` calls), or N local ranks as processes on
loopback (:func:`run_local`), and a measurement runner over them."""

from __future__ import annotations

import asyncio
import multiprocessing
import multiprocessing.connection
import os
import pickle
import socket as _socket
import time
import traceback
from typing import Any, Awaitable, Callable, Sequence

from .. import lifetime
from ..auth import JobKey
from ..result import Result
from .aio import (
    CommTimeout,
    ProgramError,
    RankResult,
    import_path_env,
    resolve_program,
    run_program,
    summarize_errors,
)
from .base import CommError
from .sim import DEFAULT_EAGER_LIMIT
from .socket import _LINGER_GRACE_S, SocketComm, _listen
from .sockopts import _check_sock_options, kernel_tcp_counters, read_addresses

# --- running one rank -------------------------------------------------------------------


async def _run_rank_async(
    program: Callable[..., Awaitable[Any]],
    rank: int,
    size: int,
    addresses: Sequence[tuple[str, int]],
    args: Sequence[Any],
    kwargs: dict[str, Any],
    sock_options: dict[str, Any] | None,
    timeout: float | None,
    connect_timeout: float,
    eager_limit: int,
    listener: _socket.socket | None,
    key: JobKey | None,
    trace: bool = False,
    rendezvous: str = "sender",
) -> RankResult:
    comm = SocketComm(
        rank,
        size,
        addresses,
        sock_options=sock_options,
        eager_limit=eager_limit,
        connect_timeout=connect_timeout,
        key=key,
        rendezvous=rendezvous,
    )
    loop = asyncio.get_running_loop()
    try:
        await comm._open(listener)
        listener = None
        try:
            await asyncio.wait_for(comm._sync(), connect_timeout)
        except asyncio.TimeoutError:
            raise CommError(f"rank {rank}: the start barrier did not complete within {connect_timeout:g} s") from None
        comm._t0 = time.perf_counter()
        start_s = time.time()
        if trace:
            comm._trace = []
        deadline = None if timeout is None else loop.time() + timeout
        result = await run_program(comm, program, args, kwargs, timeout)
        elapsed = comm.wtime()
        finish_s = time.time()
        linger = None if deadline is None else deadline + _LINGER_GRACE_S
        counters = await comm._shutdown(linger)
        return RankResult(rank, result, start_s, finish_s, elapsed, counters, trace=comm._trace)
    except BaseException:
        if listener is not None:
            listener.close()
        await comm._abort()
        raise


def run_rank(
    program: str | Callable[..., Awaitable[Any]],
    rank: int,
    size: int,
    addresses: str | os.PathLike | Sequence[tuple[str, int]],
    *,
    args: Sequence[Any] = (),
    kwargs: dict[str, Any] | None = None,
    sock_options: dict[str, Any] | None = None,
    timeout: float | None = None,
    connect_timeout: float = 30.0,
    eager_limit: int = DEFAULT_EAGER_LIMIT,
    key: JobKey | None = None,
    _listener: _socket.socket | None = None,
    trace: bool = False,
    rendezvous: str = "sender",
) -> RankResult:
    """Run rank ``rank`` of ``size`` in this process over the TCP mesh.

    ``addresses`` is an addresses file or a list of ``(host, port)``, one per
    rank; this rank listens on ``addresses[rank]``. ``program`` is an ``async
    def`` function or a ``"module:function"`` string. ``timeout`` bounds the
    program (then a :class:`CommTimeout` lists what it was waiting for);
    ``connect_timeout`` bounds building the mesh. ``key`` is the job's shared
    secret (default: from ``$PARCOMM_JOB_KEY``); every connection proves it
    before anything else is read. Returns a
    :class:`RankResult` (the program's result, its start and finish times and
    this rank's TCP counters); a failure raises :class:`CommError`.
    """
    prog = resolve_program(program)
    addrs = read_addresses(addresses)
    if size > len(addrs):
        raise CommError(f"{size} ranks need {size} addresses; the list has {len(addrs)}")
    return asyncio.run(
        _run_rank_async(
            prog,
            rank,
            size,
            addrs,
            tuple(args),
            dict(kwargs or {}),
            sock_options,
            timeout,
            connect_timeout,
            eager_limit,
            _listener,
            key,
            trace,
            rendezvous,
        )
    )


# --- running N local ranks ---------------------------------------------------------------

# How failures rank when several ranks report one: the cause first, the consequences after.
_ERROR_ORDER = {"raised": 0, "setup": 0, "died": 1, "timeout": 2, "hung": 3, "lost": 4}


def _classify(exc: BaseException) -> str:
    if isinstance(exc, CommTimeout):
        return "timeout"
    msg = str(exc)
    if "lost the connection" in msg:
        return "lost"
    if isinstance(exc, CommError) and " raised " in msg:
        return "raised"
    return "raised" if not isinstance(exc, CommError) else "setup"


def _local_rank_main(
    conn: multiprocessing.connection.Connection,
    program: Any,
    rank: int,
    size: int,
    args: Sequence[Any],
    kwargs: dict[str, Any],
    sock_options: dict[str, Any] | None,
    timeout: float | None,
    connect_timeout: float,
    eager_limit: int,
    host: str,
    key: JobKey,
    trace: bool = False,
    rendezvous: str = "sender",
) -> None:
    """Body of one local rank process (started by :func:`run_local`); it dies with the
    launcher, even after a ``kill -9`` of it (the pipe ``conn`` then closes)."""
    lifetime.die_when_closed(conn.fileno())
    listener = None
    try:
        try:
            prog = resolve_program(program)
            listener = _listen(host, 0, _check_sock_options(sock_options))
            conn.send(("port", listener.getsockname()[1]))
            if not conn.poll(connect_timeout + 30.0):
                raise CommError(f"rank {rank}: the launcher never sent the addresses")
            msg = conn.recv()
            if msg[0] != "addresses":
                return
            res = run_rank(
                prog,
                rank,
                size,
                msg[1],
                args=args,
                kwargs=kwargs,
                sock_options=sock_options,
                timeout=timeout,
                connect_timeout=connect_timeout,
                eager_limit=eager_limit,
                key=key,
                _listener=listener,
                trace=trace,
                rendezvous=rendezvous,
            )
            listener = None
        except BaseException as e:  # report every failure to the launcher, in one line
            if listener is not None:
                listener.close()
            kind = _classify(e)
            text = (
                str(e)
                if isinstance(e, (CommError, ProgramError))
                else f"rank {rank} raised {type(e).__name__}" + (f": {e}" if str(e) else "")
            )
            conn.send(("error", kind, text, "".join(traceback.format_exception(e))[-4000:]))
            return
        try:
            conn.send(("done", res))
        except Exception as e:  # the result does not pickle
            conn.send(
                (
                    "error",
                    "raised",
                    f"rank {rank}: its result cannot be sent back to the launcher ({type(e).__name__}: {e})",
                    "",
                )
            )
    finally:
        conn.close()


def _combine_errors(errors: dict[int, tuple[str, str]]) -> CommError:
    ordered = sorted(errors.items(), key=lambda kv: (_ERROR_ORDER.get(kv[1][0], 9), kv[0]))
    best = _ERROR_ORDER.get(ordered[0][1][0], 9)
    main = [msg for _, (kind, msg) in ordered if _ERROR_ORDER.get(kind, 9) == best]
    others = len(ordered) - len(main)
    text = summarize_errors(main)
    if others:
        text += f" ({others} other rank{'s' if others > 1 else ''} failed as a consequence)"
    if ordered[0][1][0] in ("timeout", "hung"):
        return CommTimeout(text)
    return CommError(text)


def _context(program: Any) -> Any:
    """Fresh processes, quickly: a fork server (a clean interpreter started
    once per launching process, with parcomm, the caller's main module and
    the program's module imported) forks each rank; where there is none,
    spawn. (Spawning each rank re-imports everything: ~0.5 s per rank.)"""
    try:
        ctx = multiprocessing.get_context("forkserver")
    except ValueError:  # pragma: no cover - platforms without fork
        return multiprocessing.get_context("spawn")
    preload = ["__main__", "parcomm.comm.socket"]
    module = program.partition(":")[0] if isinstance(program, str) else getattr(program, "__module__", None)
    if module and not module.endswith(".py") and module not in ("__main__", "__mp_main__"):
        preload.append(module)
    ctx.set_forkserver_preload(preload)  # used when the server starts (the first run)
    # The server must see our sys.path to preload the program's module (Python
    # 3.11's forkserver does not pass it on), so it starts with it as PYTHONPATH.
    from multiprocessing import forkserver

    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = import_path_env()["PYTHONPATH"]
    try:
        forkserver.ensure_running()
        lifetime.mark_multiprocessing_temp_dir()  # its socket's directory: swept if we are killed
    finally:
        if old is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = old
    return ctx


def _ready(
    conns: list[multiprocessing.connection.Connection],
    waiting: list[multiprocessing.connection.Connection],
    timeout: float,
) -> list[int]:
    """The ranks whose pipe (one of ``waiting``) has something to read, in the order
    ``multiprocessing.connection.wait`` gives them (within ``timeout`` seconds)."""
    ready = multiprocessing.connection.wait(waiting, timeout=timeout)
    return [next(r for r, c in enumerate(conns) if c is obj) for obj in ready]


def run_local(
    program: str | Callable[..., Awaitable[Any]],
    size: int,
    *,
    args: Sequence[Any] = (),
    kwargs: dict[str, Any] | None = None,
    timeout: float = 60.0,
    sock_options: dict[str, Any] | None = None,
    connect_timeout: float = 30.0,
    eager_limit: int = DEFAULT_EAGER_LIMIT,
    host: str = "127.0.0.1",
    trace: bool = False,
    rendezvous: str = "sender",
) -> Result:
    """Run ``program`` on ``size`` ranks, one local process each (forked by
    multiprocessing's fork server: a clean interpreter, started once per
    launching process, that has parcomm and the program's module imported;
    spawn where there is none), over a SocketComm mesh on ``host`` (loopback
    by default).

    ``program`` is a module-level ``async def`` function or a
    ``"module:function"`` string (it must be importable in a fresh process);
    ``args`` and ``kwargs`` must pickle. Each rank listens on a port the
    kernel picks and reports it to this launcher (a tiny registry), which
    hands every rank the full list. ``timeout`` bounds each rank's program;
    the launcher gives up ``connect_timeout`` + a grace later and ends any
    rank process still alive. ``sock_options`` defaults to ``{"nodelay":
    True}``.

    Returns a :class:`Result`: ``finish_times`` from the earliest start,
    ``results`` per rank, and ``counters``: ``hosts`` holds each rank's own
    sockets' TCP_INFO counters (exact), ``kernel`` the deltas of this
    namespace's ``/proc/net`` TCP counters over the run, which are
    machine-wide (every TCP socket on the host, not only ours).
    A failing rank raises :class:`CommError` (:class:`CommTimeout` for a
    time-out) naming the root cause first.
    """
    opts = _check_local_args(program, size, rendezvous, sock_options)
    kwargs = dict(kwargs or {})
    lifetime.sweep_temp_dirs()  # what a launcher killed by -9 left in the temporary directory
    ctx = _context(program)
    # A fresh secret per run, handed to each rank through its private start-up pipe:
    # a process on this machine that races to connect to a rank's port cannot join.
    key = JobKey.generate()
    before = kernel_tcp_counters()
    wall0 = time.perf_counter()
    procs: list[Any] = []
    conns: list[multiprocessing.connection.Connection] = []
    outcomes: dict[int, RankResult] = {}
    errors: dict[int, tuple[str, str]] = {}
    try:
        rank_args = (tuple(args), kwargs, opts, timeout, connect_timeout, eager_limit, host, key, trace, rendezvous)
        _start_ranks(ctx, program, size, rank_args, procs, conns)
        # 1. the registry: every rank reports its port
        ports = _gather_ports(procs, conns, errors, connect_timeout)
        addresses = [(host, ports[r]) for r in range(size)]
        for c in conns:
            c.send(("addresses", addresses))
        # 2. results (or failures)
        _gather_results(procs, conns, outcomes, errors, connect_timeout, timeout)
    finally:
        _end_ranks(procs, conns, errors)
    after = kernel_tcp_counters()
    ranks = [outcomes[r] for r in range(size)]
    return Result.from_ranks(
        ranks,
        backend="socket",
        wall_s=time.perf_counter() - wall0,
        counters=_run_counters(ranks, before, after),
        platform=f"local:{size}@{host}",
        extra={"sock_options": opts},
    )


def _check_local_args(
    program: str | Callable[..., Awaitable[Any]], size: int, rendezvous: str, sock_options: dict[str, Any] | None
) -> dict[str, Any]:
    """Refuse in the launcher what would fail in every rank process (a bad size, rendezvous,
    program name or socket option, a program that cannot be pickled); return the socket
    options the ranks use."""
    if not isinstance(size, int) or size < 1:
        raise CommError(f"size must be at least 1, got {size!r}")
    if rendezvous not in ("sender", "receiver"):
        raise CommError(f"rendezvous must be 'sender' or 'receiver', got {rendezvous!r}")
    if isinstance(program, str):
        resolve_program(program)  # a bad name fails here, not in N processes
    else:
        try:
            pickle.dumps(program)
        except Exception:
            raise ProgramError(
                f"program {getattr(program, '__qualname__', program)!r} cannot be sent to another process; "
                "define it at module level or pass 'module:function'"
            ) from None
    return {"nodelay": True} if sock_options is None else _check_sock_options(sock_options)


def _start_ranks(
    ctx: Any,
    program: Any,
    size: int,
    rank_args: tuple[Any, ...],
    procs: list[Any],
    conns: list[multiprocessing.connection.Connection],
) -> None:
    """Start one process per rank running :func:`_local_rank_main` (``rank_args``: its
    arguments after the rank and size). Each process and the launcher's end of its pipe are
    appended to ``procs`` and ``conns`` as soon as it starts, so that the caller ends them
    even if a later start fails."""
    for r in range(size):
        parent_end, child_end = ctx.Pipe()
        p = ctx.Process(
            target=_local_rank_main,
            name=f"parcomm-rank-{r}",
            daemon=True,
            args=(child_end, program, r, size, *rank_args),
        )
        p.start()
        child_end.close()
        procs.append(p)
        conns.append(parent_end)


def _gather_ports(
    procs: list[Any],
    conns: list[multiprocessing.connection.Connection],
    errors: dict[int, tuple[str, str]],
    connect_timeout: float,
) -> dict[int, int]:
    """The registry: every rank's listening port, rank -> port. A rank that fails, dies or
    does not report within ``connect_timeout`` + 30 s goes into ``errors`` and the start is
    abandoned (raises the combined error) at the first such failure."""
    size = len(conns)
    ports: dict[int, int] = {}
    deadline = time.monotonic() + connect_timeout + 30.0
    while len(ports) + len(errors) < size and time.monotonic() < deadline:
        waiting = [c for r, c in enumerate(conns) if r not in ports and r not in errors]
        for r in _ready(conns, waiting, max(0.0, deadline - time.monotonic())):
            try:
                msg = conns[r].recv()
            except (EOFError, OSError):
                procs[r].join(2.0)
                errors[r] = (
                    "died",
                    f"rank {r} exited with code {procs[r].exitcode} while starting (see its "
                    "stderr; a script that calls run_local must do so under "
                    "`if __name__ == '__main__':`)",
                )
                continue
            if msg[0] == "port":
                ports[r] = msg[1]
            else:
                errors[r] = (msg[1], msg[2])
        if errors:
            break
    if errors or len(ports) < size:
        for r in range(size):
            if r not in ports and r not in errors:
                errors[r] = ("hung", f"rank {r} did not start within {connect_timeout + 30.0:g} s")
        raise _combine_errors(errors)
    return ports


def _gather_results(
    procs: list[Any],
    conns: list[multiprocessing.connection.Connection],
    outcomes: dict[int, RankResult],
    errors: dict[int, tuple[str, str]],
    connect_timeout: float,
    timeout: float | None,
) -> None:
    """Every rank's :class:`RankResult` into ``outcomes``, or its failure into ``errors``;
    once one rank fails the others get 10 s more (they see the dropped connections), and a
    rank silent past the whole run's limit counts as hung. Raises the combined error if any
    rank failed."""
    size = len(conns)
    limit = connect_timeout + (timeout if timeout is not None else 1e9) + _LINGER_GRACE_S + 10.0
    deadline = time.monotonic() + limit
    while len(outcomes) + len(errors) < size and time.monotonic() < deadline:
        waiting = [c for r, c in enumerate(conns) if r not in outcomes and r not in errors]
        for r in _ready(conns, waiting, max(0.0, deadline - time.monotonic())):
            try:
                msg = conns[r].recv()
            except (EOFError, OSError):
                procs[r].join(1.0)
                errors[r] = ("died", f"rank {r} exited with code {procs[r].exitcode} before reporting")
                continue
            if msg[0] == "done":
                outcomes[r] = msg[1]
            else:
                errors[r] = (msg[1], msg[2])
        if errors:  # the others follow within a few seconds (they see the dropped connections)
            deadline = min(deadline, time.monotonic() + 10.0)
    for r in range(size):
        if r not in outcomes and r not in errors:
            errors[r] = ("hung", f"rank {r} did not finish within {limit:g} s and was ended")
    if errors:
        raise _combine_errors(errors)


def _end_ranks(
    procs: list[Any], conns: list[multiprocessing.connection.Connection], errors: dict[int, tuple[str, str]]
) -> None:
    """Let the rank processes exit (briefly when a rank failed), then terminate and, failing
    that, kill any still alive, and close the pipes."""
    for p in procs:
        p.join(timeout=5.0 if not errors else 0.5)
    for p in procs:
        if p.is_alive():
            p.terminate()
            p.join(2.0)
        if p.is_alive():
            p.kill()
            p.join(2.0)
    for c in conns:
        c.close()


def _run_counters(ranks: list[RankResult], before: dict[str, int], after: dict[str, int]) -> dict[str, Any]:
    """The run's counters: each rank's own TCP_INFO counters as host columns, and the
    machine-wide /proc/net TCP counters' deltas over the run."""
    hosts: dict[str, list[Any]] = {"name": [f"rank{r}" for r in range(len(ranks))]}
    keys = sorted({k for rr in ranks for k in rr.counters})
    for k in keys:
        hosts[k] = [rr.counters.get(k, 0) for rr in ranks]
    return {
        "hosts": hosts,
        "kernel": {k: after[k] - before.get(k, 0) for k in after},
        "kernel_scope": "machine-wide: every TCP socket in this network namespace during the run, not only parcomm's",
    }


def local_runner(procs: int, **run_kw: Any) -> Callable[[Any, dict], list]:
    """A runner for :mod:`parcomm.measure`: ``runner(program, kwargs)``
    runs the program on ``procs`` local SocketComm ranks and returns the
    per-rank results (one :func:`run_local` per call)."""

    def run(program: Any, kwargs: dict) -> list:
        return run_local(program, procs, kwargs=kwargs, **run_kw).results

    return run
