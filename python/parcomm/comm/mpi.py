"""MPIComm: rank programs under MPI (mpi4py + the MPICH wheel from PyPI).

Run with ``mpiexec -n N python -m parcomm run mpi --program MODULE:FUNC``, or
let ``parcomm run mpi --procs N`` (or :func:`run_mpi`) start ``mpiexec``.

**Messages.** Lowercase methods send Python objects, as in mpi4py: the object
is pickled at send time into one MPI message of bytes: a 16-byte header
(pickled length, declared ``nbytes``), the pickle, and zero padding up to
``nbytes`` when the declared size exceeds the pickle, so MPI really moves
``max(nbytes, len(pickle))`` payload bytes (the rule SocketComm follows).
``isend`` is ``MPI_Isend``; ``irecv`` is a matched probe (``MPI_Improbe``)
followed by ``MPI_Imrecv`` into a buffer of the probed size, so messages of
any size arrive without guessing a buffer (mpi4py's own ``irecv`` needs one).
Posted receives probe in the order they were posted, which keeps MPI's
matching order. MPI itself chooses eager or rendezvous by its own limits
(the simulator and SocketComm use 128 KiB, MPICH CH3's default), and messages
to self go through MPI too.

**Waiting by polling.** The rank program runs on asyncio; a ``wait`` polls
``MPI_Test`` on its requests (which also drives MPI's progress engine) with
``await asyncio.sleep(0)`` between polls, so the coroutine driver is plain
asyncio and a request completes within one poll of MPI completing it. The
trade-off: polling has the lowest latency (~100 µs for a Python-level round
trip here) but keeps a core busy per waiting rank, which hurts when ranks
outnumber cores. So each poll also calls ``sched_yield`` (a rank sharing the
core runs first), and a wait that has seen no progress for ``spin_s``
(default 50 ms) sleeps between polls, 0.1 ms doubling to 1 ms: long waits
cost little CPU, at up to ~1 ms of extra latency (epoll's granularity). Real
sleeps for every idle poll were measured 10-30x slower for small exchanges
on 2 cores. ``compute`` polls once per millisecond, like an MPI library with
asynchronous progress.

**Failures.** A rank whose program raises or times out prints one line
``error: rank R ...`` to stderr and exits with status 1 without finalizing;
the process manager then ends the whole job (MPI's default error semantics,
as ``MPI_Abort``, which MPICH's Hydra handles less cleanly: it leaves a
topology file in /tmp). :func:`run_mpi` turns that line into a
:class:`~parcomm.comm.CommError`.
"""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Awaitable, Callable, Sequence

from ..result import Result
from .aio import (
    AioCommBase,
    CommTimeout,
    RankResult,
    Request,
    import_path_env,
    jsonable,
    program_ref,
    resolve_program,
    run_program,
    summarize_errors,
    wire_nbytes,
)
from .base import ANY_SOURCE, ANY_TAG, RESERVED_TAG_BASE, CommError, Status

__all__ = ["MPIComm", "run_mpi", "run_mpi_rank", "mpi_runner", "find_mpiexec", "under_mpi"]

_HDR = struct.Struct("!QQ")  # pickled length, declared nbytes
_RESULT_TAG = RESERVED_TAG_BASE + 0xFFFFE

#: Environment variables that process managers set in every rank (MPICH's
#: Hydra and PMI, PMIx, Open MPI, MVAPICH).
MPI_ENV_VARS = ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")


def under_mpi() -> bool:
    """Whether this process was started by an MPI process manager (mpiexec)."""
    return any(v in os.environ for v in MPI_ENV_VARS)


def find_mpiexec() -> str:
    """Path of ``mpiexec``: $PARCOMM_MPIEXEC, else the one the MPICH wheel put
    beside this Python (sys.prefix/bin), else the first on PATH."""
    env = os.environ.get("PARCOMM_MPIEXEC")
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise CommError(f"PARCOMM_MPIEXEC={env} is not an executable file")
        return env
    for d in (Path(sys.prefix) / "bin", Path(sys.executable).resolve().parent, Path(sys.executable).parent):
        cand = d / "mpiexec"
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    found = shutil.which("mpiexec")
    if found:
        return found
    raise CommError(
        "mpiexec not found: install the MPICH wheel (`pip install mpich`, a parcomm dependency) "
        f"into this Python ({sys.prefix}), or set PARCOMM_MPIEXEC to an mpiexec matching mpi4py's MPI"
    )


class MPIComm(AioCommBase):
    """The communicator a rank program receives under MPI."""

    def __init__(
        self, comm: Any = None, *, spin_s: float = 0.05, max_backoff_s: float = 1e-3, collective_comm: Any = None
    ):
        super().__init__()
        try:
            from mpi4py import MPI
        except ImportError as e:  # pragma: no cover - mpi4py is a dependency
            raise CommError(f"MPIComm needs mpi4py ({e}); `pip install mpi4py mpich`") from None
        self._MPI = MPI
        self._comm = MPI.COMM_WORLD if comm is None else comm
        # Collectives' reserved tags travel on a communicator of their own (when
        # given), so the program's ANY_TAG receives never take their messages.
        self._ccomm = self._comm if collective_comm is None else collective_comm
        self.rank = self._comm.Get_rank()
        self.size = self._comm.Get_size()
        ub = self._comm.Get_attr(MPI.TAG_UB)
        self._tag_ub = int(ub) if ub is not None else 32767
        self.spin_s = float(spin_s)
        self.max_backoff_s = float(max_backoff_s)
        # (MPI communicator, source, tag, our request)
        self._probing: list[tuple[Any, int, int, Request]] = []
        # (MPI request, our request, buffer, kind, status)
        self._active: list[tuple[Any, Request, Any, str, Any]] = []

    def Split(self, color: int = 0, key: int = 0) -> Any:  # noqa: N802
        """``sub = await comm.Split(color, key)``: MPI_Comm_split itself (and
        of the collectives' communicator beside it)."""
        self._check_awaited()
        return self._pending(self._split(color, key), "comm.Split()")

    def Dup(self) -> Any:  # noqa: N802
        """``dup = await comm.Dup()``: MPI_Comm_split with one color, as a duplicate."""
        self._check_awaited()
        return self._pending(self._split(0, self.rank), "comm.Dup()")

    async def _split(self, color: int, key: int) -> "MPIComm | None":
        from .communicator import UNDEFINED

        if not isinstance(color, int) or isinstance(color, bool) or (color < 0 and color != UNDEFINED):
            raise CommError(f"rank {self.rank}: Split color must be a non-negative int or MPI.UNDEFINED, got {color!r}")
        if not isinstance(key, int) or isinstance(key, bool):
            raise CommError(f"rank {self.rank}: Split key must be an int, got {key!r}")
        MPI = self._MPI
        c = MPI.UNDEFINED if color == UNDEFINED else color
        new = self._comm.Split(c, key)
        newc = self._ccomm.Split(c, key) if self._ccomm is not self._comm else None
        if new == MPI.COMM_NULL:
            return None
        sub = MPIComm(new, spin_s=self.spin_s, max_backoff_s=self.max_backoff_s, collective_comm=newc)
        sub._t0 = self._t0
        return sub

    def _check_tag(self, tag: Any, allow_any: bool) -> None:
        super()._check_tag(tag, allow_any)
        if tag > self._tag_ub:
            raise CommError(f"rank {self.rank}: tag {tag} exceeds this MPI's MPI_TAG_UB ({self._tag_ub})")

    def _send_pickled(self, dest: int, tag: int, data: bytes, size: int, req: Request, ctx: int = 0) -> None:
        pad = wire_nbytes(size, len(data)) - len(data)
        frame = bytearray(_HDR.size + len(data) + pad)
        _HDR.pack_into(frame, 0, len(data), size)
        frame[_HDR.size : _HDR.size + len(data)] = data
        mcomm = self._ccomm if tag >= RESERVED_TAG_BASE else self._comm
        mreq = mcomm.Isend([frame, self._MPI.BYTE], dest=dest, tag=tag)
        self._active.append((mreq, req, frame, "send", None))

    def _post_recv(self, source: int, tag: int, req: Request, ctx: int = 0) -> None:
        src = self._MPI.ANY_SOURCE if source == ANY_SOURCE else source
        mtag = self._MPI.ANY_TAG if tag == ANY_TAG else tag
        mcomm = self._ccomm if tag >= RESERVED_TAG_BASE else self._comm
        self._probing.append((mcomm, src, mtag, req))

    def _poll(self) -> bool:
        """One round of progress; True if anything matched or completed."""
        MPI = self._MPI
        progressed = False
        if self._probing:
            still = []
            for mcomm, src, tag, req in self._probing:
                if req.done:
                    continue
                st = MPI.Status()
                msg = mcomm.Improbe(src, tag, st)
                if msg is None:
                    still.append((mcomm, src, tag, req))
                    continue
                buf = bytearray(st.Get_count(MPI.BYTE))
                self._active.append((msg.Irecv([buf, MPI.BYTE]), req, buf, "recv", (st.Get_source(), st.Get_tag())))
                progressed = True
            self._probing = still
        if self._active:
            still_active = []
            for item in self._active:
                mreq, req, buf, kind, info = item
                if not mreq.Test():
                    still_active.append(item)
                    continue
                progressed = True
                if kind == "send":
                    req._finish()
                else:
                    self._deliver(req, buf, *info)
                self._pending_reqs.discard(req)
            self._active = still_active
        return progressed

    def _deliver(self, req: Request, buf: bytearray, source: int, tag: int) -> None:
        plen, nbytes = _HDR.unpack_from(buf, 0)
        try:
            value = pickle.loads(memoryview(buf)[_HDR.size : _HDR.size + plen])
        except Exception as e:
            req._fail(
                CommError(
                    f"rank {self.rank}: cannot unpickle the message from rank {source} tag {tag}: "
                    f"{type(e).__name__}: {e}"
                )
            )
            return
        req._finish(value, Status(source, tag, nbytes))

    async def _wait_until(self, requests: Sequence[Request]) -> None:
        t_idle = time.perf_counter()
        backoff = 1e-4
        while True:
            if self._poll():
                t_idle = time.perf_counter()
                backoff = 1e-4
            if all(r.done for r in requests):
                return
            if time.perf_counter() - t_idle < self.spin_s:
                os.sched_yield()  # stay runnable, but let a rank sharing this core run first
                await asyncio.sleep(0)
            else:
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.max_backoff_s)

    async def _flush(self) -> None:
        sends = [r for r in self._pending_reqs if r.kind == "send" and not r.done]
        if sends:
            await self._wait_until(sends)


# --- one rank under mpiexec ---------------------------------------------------------------


def _rank_error_text(rank: int, e: BaseException) -> str:
    if isinstance(e, CommError):
        return str(e)
    return f"rank {rank} raised {type(e).__name__}: {e}"


def run_mpi_rank(
    program: str | Callable[..., Awaitable[Any]],
    *,
    args: Sequence[Any] = (),
    kwargs: dict[str, Any] | None = None,
    timeout: float | None = None,
    out: str | os.PathLike | None = None,
    pickle_out: str | os.PathLike | None = None,
    spin_s: float = 0.05,
    trace: bool = False,
) -> Result | None:
    """Run this process's rank of ``program`` (we are under mpiexec).

    All ranks pass a start barrier, run the program, complete their sends,
    then send rank 0 their :class:`RankResult`; rank 0 writes ``out`` (JSON:
    ``size``, ``finish_times``, ``results`` and one record per rank with
    ``rank, result, start_s, finish_s, elapsed_s``) and ``pickle_out`` (the
    exact Python results, for :func:`run_mpi`). Returns the gathered
    :class:`Result` on rank 0 and None elsewhere. A failure prints
    ``error: rank R ...`` on stderr and ends the process with status 1,
    which makes the process manager end the job.
    """
    from mpi4py import MPI

    rank = MPI.COMM_WORLD.Get_rank()
    wall0 = time.perf_counter()
    try:
        prog = resolve_program(program)
        _, ranks = asyncio.run(_mpi_main(prog, tuple(args), dict(kwargs or {}), timeout, spin_s, trace))
        if ranks is None:
            return None
        _write_outputs(ranks, out, pickle_out)
        return Result.from_ranks(
            ranks, backend="mpi", wall_s=time.perf_counter() - wall0, counters={}, platform=f"mpi:{len(ranks)}"
        )
    except BaseException as e:  # noqa: BLE001 - any failure must end the whole job, not hang it
        sys.stdout.flush()
        sys.stderr.write(f"error: {_rank_error_text(rank, e)}\n")
        sys.stderr.flush()
        # Exit at once with status 1: the process manager ends the other ranks
        # (as MPI_Abort would; Hydra's abort path also leaves its topology file
        # /tmp/hydra_hwloc_xmlfile_* behind, a plain failed exit does not).
        os._exit(1)


async def _mpi_main(prog, args, kwargs, timeout, spin_s, trace=False) -> tuple[RankResult, list[RankResult] | None]:
    from mpi4py import MPI

    # The program gets its own communicator, and the start barrier and the
    # results travel on another, so a receive with ANY_TAG in the program can
    # never take a message that is not the program's (MPI contexts).
    world_p, world_c, world_k = MPI.COMM_WORLD.Dup(), MPI.COMM_WORLD.Dup(), MPI.COMM_WORLD.Dup()
    try:
        return await _mpi_main_on(
            MPIComm(world_p, spin_s=spin_s, collective_comm=world_k),
            MPIComm(world_c, spin_s=spin_s),
            prog,
            args,
            kwargs,
            timeout,
            trace,
        )
    finally:
        world_p.Free()
        world_c.Free()
        world_k.Free()


async def _mpi_main_on(comm: MPIComm, ctl: MPIComm, prog, args, kwargs, timeout, trace=False):
    await ctl._sync()
    comm._t0 = time.perf_counter()
    start_s = time.time()
    if trace:
        comm._trace = []
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    result = await run_program(comm, prog, args, kwargs, timeout)
    elapsed = comm.wtime()
    finish_s = time.time()

    def remaining() -> float | None:
        return None if deadline is None else max(0.0, deadline - loop.time()) + 2.0

    try:
        await asyncio.wait_for(comm._flush(), remaining())
    except asyncio.TimeoutError:
        raise CommTimeout(
            f"rank {comm.rank}: finished, but its sends never completed (no matching receive?): "
            + ", ".join(comm.pending_descriptions())
        ) from None
    mine = RankResult(comm.rank, result, start_s, finish_s, elapsed, trace=comm._trace)
    if comm.rank != 0:
        await asyncio.wait_for(ctl.send(mine, dest=0, tag=_RESULT_TAG), remaining())
        return mine, None
    reqs = [ctl.irecv(source=r, tag=_RESULT_TAG) for r in range(1, comm.size)]
    try:
        others = await asyncio.wait_for(ctl.waitall(reqs), remaining())
    except asyncio.TimeoutError:
        late = [r for r, q in zip(range(1, comm.size), reqs) if not q.done]
        raise CommTimeout(f"rank 0: finished, but ranks {late[:8]} did not finish within the time limit") from None
    return mine, [mine, *others]


def _write_outputs(ranks: list[RankResult] | None, out, pickle_out) -> None:
    if ranks is None:
        return
    t0 = min(r.start_s for r in ranks)
    if out is not None:
        doc = {
            "backend": "mpi",
            "size": len(ranks),
            "finish_times": [r.finish_s - t0 for r in ranks],
            "results": [jsonable(r.result) for r in ranks],
            "ranks": [{k: v for k, v in r.to_json().items() if k != "counters"} for r in ranks],
        }
        Path(out).write_text(json.dumps(doc, indent=1, default=repr) + "\n")
    if pickle_out is not None:
        with open(pickle_out, "wb") as f:
            pickle.dump(ranks, f, protocol=pickle.HIGHEST_PROTOCOL)


# --- launching mpiexec --------------------------------------------------------------------


def _mpi_failure(stderr: str, returncode: int) -> CommError:
    lines = [ln.strip() for ln in stderr.splitlines()]
    ours = [ln[len("error: ") :] for ln in lines if ln.startswith("error: rank ")]
    if ours:
        text = summarize_errors(list(dict.fromkeys(ours)))
        if all("timed out" in o for o in ours):
            return CommTimeout(text)
        return CommError(text)
    tail = " | ".join([ln for ln in lines if ln][-3:]) or "no output"
    return CommError(f"mpiexec failed with exit status {returncode}: {tail}")


def run_mpi(
    program: str | Callable[..., Awaitable[Any]],
    size: int,
    *,
    args: Sequence[Any] = (),
    kwargs: dict[str, Any] | None = None,
    timeout: float = 60.0,
    start_timeout: float = 60.0,
    mpiexec: str | None = None,
    mpiexec_args: Sequence[str] = (),
    spin_s: float = 0.05,
    out: str | os.PathLike | None = None,
    trace: bool = False,
) -> Result:
    """Run ``program`` on ``size`` MPI ranks: ``mpiexec -n size python -m
    parcomm run mpi ...``, then return a :class:`Result` with the exact
    Python results (rank 0 pickles them). ``program`` must be importable by
    name in the ranks (module-level, or ``"module:function"``; the ranks get
    this process's ``sys.path``). ``timeout`` bounds each rank's program;
    mpiexec is killed ``start_timeout`` seconds after that. ``counters`` is
    empty: MPI does not expose TCP counters (over shared memory there are none).
    With ``out``, rank 0 also writes the JSON results file there.
    """
    if not isinstance(size, int) or size < 1:
        raise CommError(f"size must be at least 1, got {size!r}")
    ref = program_ref(program)
    exe = mpiexec or find_mpiexec()
    wall0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="parcomm-mpi-") as tmp:
        call = Path(tmp) / "call.pkl"
        with open(call, "wb") as f:
            pickle.dump({"args": tuple(args), "kwargs": dict(kwargs or {})}, f)
        pout = Path(tmp) / "result.pkl"
        cmd = [exe, *mpiexec_args, "-n", str(size), *_rank_command(ref, call, pout, spin_s, timeout, out, trace)]
        limit = (timeout if timeout is not None else 1e9) + start_timeout
        _run_mpiexec(cmd, size, limit)
        try:
            with open(pout, "rb") as f:
                ranks = pickle.load(f)
        except (OSError, EOFError, pickle.UnpicklingError) as e:
            raise CommError(f"mpiexec succeeded but rank 0 wrote no results ({e})") from None
    return Result.from_ranks(
        ranks,
        backend="mpi",
        wall_s=time.perf_counter() - wall0,
        counters={},
        platform=f"mpi:{size}",
        extra={"mpiexec": exe},
    )


def _rank_command(
    ref: str,
    call: Path,
    pout: Path,
    spin_s: float,
    timeout: float | None,
    out: str | os.PathLike | None,
    trace: bool,
) -> list[str]:
    """What mpiexec starts in every rank: ``python -m parcomm run mpi ...``."""
    cmd = [
        sys.executable,
        "-m",
        "parcomm",
        "run",
        "mpi",
        "--program",
        ref,
        "--call-pickle",
        str(call),
        "--pickle-out",
        str(pout),
        "--spin",
        str(spin_s),
    ]
    cmd += ["--timeout", f"{timeout:g}s" if timeout is not None else "none"]
    if out is not None:
        cmd += ["--out", str(Path(out).resolve())]
    if trace:
        cmd += ["--trace-ranks"]
    return cmd


def _run_mpiexec(cmd: list[str], size: int, limit: float) -> None:
    """Run ``cmd`` (mpiexec) to its end, killing its process group after ``limit`` seconds;
    its failure as the ranks' errors, its other output passed on to stderr."""
    proc = subprocess.Popen(
        cmd,
        env=import_path_env(),
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        _, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise CommTimeout(f"mpiexec -n {size} did not finish within {limit:g} s and was killed") from None
    except BaseException:
        _kill_group(proc)
        raise
    if proc.returncode != 0:
        raise _mpi_failure(err, proc.returncode)
    if err.strip():
        sys.stderr.write(err)


def mpi_runner(procs: int, **run_kw: Any) -> Callable[[Any, dict], list]:
    """A runner for :mod:`parcomm.measure`: ``runner(program, kwargs)``
    runs the program on ``procs`` MPI ranks (one mpiexec per call) and
    returns the per-rank results."""

    def run(program: Any, kwargs: dict) -> list:
        return run_mpi(program, procs, kwargs=kwargs, **run_kw).results

    return run


def _kill_group(proc: subprocess.Popen) -> None:
    """End mpiexec and the rank processes it started (its own session)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:  # pragma: no cover
        proc.kill()
        proc.communicate()
