"""What the real backends (SocketComm, MPIComm) share: an asyncio ``Request``,
the checks every communicator makes, real ``compute``/``sleep``, naming rank
programs across processes, the wire-size rule, and the result types.

Rank programs are the same ``async def program(comm, ...)`` as under
:class:`~parcomm.comm.SimComm`; here they run on an asyncio event loop, one
rank per process, and every ``await`` on the communicator is real I/O.

**Payload and size on the wire.** Both real backends pickle the object at
send time (so later changes by the sender are not seen, as in mpi4py) and
send ``max(nbytes, len(pickle))`` payload bytes: when the declared ``nbytes``
exceeds the pickle, zero padding follows it, so a program that says "this
message is 1 MiB" really puts 1 MiB on the wire, as the simulator assumed.
``nbytes`` defaults to :func:`~parcomm.comm.base.payload_nbytes`, exactly as
in SimComm, and is what ``Status.nbytes`` reports.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
import json
import os
import pickle
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Sequence

from .base import SYNC_TAG, CommError, Status
from .communicator import Communicator, collective, not_async_error, rank_error
from .communicator import Request as BaseRequest

__all__ = [
    "CommTimeout",
    "ProgramError",
    "RankResult",
    "Request",
    "NAMED_PROGRAMS",
    "resolve_program",
    "program_ref",
    "parse_kwargs",
    "jsonable",
    "wire_nbytes",
    "summarize_errors",
]

PICKLE_PROTOCOL = pickle.HIGHEST_PROTOCOL

#: Longest stretch (seconds) that ``compute`` spins before letting the event
#: loop run (socket readers and writers, MPI progress). Real hosts keep
#: moving data in the kernel while a process computes; yielding every
#: millisecond keeps our user-space buffers moving too, like an MPI library
#: with asynchronous progress.
COMPUTE_SLICE_S = 1e-3


class CommTimeout(CommError):
    """A rank did not finish within its time limit (a deadlock, or too slow)."""


class ProgramError(ValueError):
    """A rank program could not be named or loaded (bad ``module:function``)."""


# --- requests --------------------------------------------------------------------------


class Request(BaseRequest):
    """A pending operation of a real backend, as returned by ``isend``/``irecv``.

    Completion is an asyncio future resolved by the backend; a failure is kept
    on the request and raised by ``wait`` and ``test``, so the event loop never
    logs an exception nobody retrieved.
    """

    __slots__ = ("_fut", "_error")

    def __init__(self, comm: Any, describe: str, kind: str):
        super().__init__(comm, describe, kind)
        self._fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._error: BaseException | None = None

    @property
    def done(self) -> bool:
        return self._fut.done()

    def _finish(self, value: Any = None, status: Status | None = None) -> None:
        if not self._fut.done():
            self.value, self.status = value, status
            self._fut.set_result(None)

    def _fail(self, error: BaseException) -> None:
        if not self._fut.done():
            self._error = error
            self._fut.set_result(None)


# --- checks and behaviour shared by the real communicators ------------------------------


class AioCommBase(Communicator[Request]):
    """Real ``compute``/``sleep``/``wtime``, failure propagation and request
    bookkeeping for the asyncio backends; subclasses provide the transport
    (``_send_pickled``, ``_post_recv``, ``_poll``, ``_wait_until``). Everything
    else is :class:`~parcomm.comm.communicator.Communicator`'s."""

    rank: int
    size: int

    def __init__(self) -> None:
        self._t0 = time.perf_counter()
        self._pending_reqs: set[Request] = set()
        self._failure: CommError | None = None
        self._waiting_at_failure: list[str] = []

    def wtime(self) -> float:
        """Wall-clock seconds since this rank's program started."""
        return time.perf_counter() - self._t0

    def _raise_if_failed(self) -> None:
        if self._failure is not None:
            raise self._failure

    def _new_request(self, describe: str, kind: str) -> Request:
        req = Request(self, describe, kind)
        self._pending_reqs.add(req)
        return req

    def _fail_all(self, error: CommError) -> None:
        """The communicator is broken (a peer was lost): every pending and
        future operation fails with ``error``, as MPI aborts the job."""
        if self._failure is None:
            self._waiting_at_failure = self.pending_descriptions()
            self._failure = error
        for req in list(self._pending_reqs):
            req._fail(error)
        self._pending_reqs.clear()

    def pending_descriptions(self) -> list[str]:
        """What this rank waits for (or waited for when the communicator broke)."""
        if self._failure is not None:
            return list(self._waiting_at_failure)
        return [r.describe for r in self._pending_reqs if not r.done]

    def _start_send(self, dest: int, tag: int, obj: Any, size: int, req: Request, ctx: int = 0) -> None:
        data = pickle.dumps(obj, protocol=PICKLE_PROTOCOL)
        self._send_pickled(dest, tag, data, size, req, ctx)

    def _take(self, request: Request, status: Status | None) -> Any:
        self._pending_reqs.discard(request)
        if request._error is not None:
            raise request._error
        return super()._take(request, status)

    def _p2p(self) -> Any:
        return getattr(self, "_engine", None)  # SocketComm's engine; MPIComm has none

    async def _block_any(self, requests: Sequence[Request]) -> None:
        if hasattr(self, "_engine") and not any(r.done for r in requests):  # asyncio futures: wait for one
            await asyncio.wait([r._fut for r in requests], return_when=asyncio.FIRST_COMPLETED)
            return
        await super()._block_any(requests)

    async def _block(self, requests: Sequence[Request]) -> None:
        await self._wait_until(requests)

    def compute(self, seconds: float) -> Any:
        """``await comm.compute(s)``: really keep the CPU busy for ``s`` (a spin
        loop), letting the event loop move data every :data:`COMPUTE_SLICE_S`."""
        self._check_awaited()
        return self._pending(self._traced("compute", self._compute(seconds), {"s": seconds}), "comm.compute()")

    async def _compute(self, seconds: float) -> None:
        end = time.perf_counter() + max(0.0, float(seconds))
        while True:
            now = time.perf_counter()
            if now >= end:
                return
            stop = min(end, now + COMPUTE_SLICE_S)
            while time.perf_counter() < stop:
                pass
            self._poll()
            await asyncio.sleep(0)

    def sleep(self, seconds: float) -> Any:
        """``await comm.sleep(s)``: really sleep (the CPU is free for other processes)."""
        self._check_awaited()
        return self._pending(
            self._traced("sleep", asyncio.sleep(max(0.0, float(seconds))), {"s": seconds}), "comm.sleep()"
        )

    async def _sync(self) -> None:
        """Start barrier (dissemination, on a tag of its own), so all programs start together."""
        await collective("barrier")(self, tag=SYNC_TAG)

    # transport hooks ------------------------------------------------------------------
    def _send_pickled(
        self, dest: int, tag: int, data: bytes, size: int, req: Request, ctx: int = 0
    ) -> None:  # pragma: no cover
        raise NotImplementedError

    def _post_recv(self, source: int, tag: int, req: Request, ctx: int = 0) -> None:  # pragma: no cover
        raise NotImplementedError

    def _poll(self) -> Any:
        """Make progress without blocking (MPI polls; sockets need nothing)."""

    async def _wait_until(self, requests: Sequence[Request]) -> None:  # pragma: no cover
        raise NotImplementedError


def wire_nbytes(nbytes: int, pickled_len: int) -> int:
    """Payload bytes a message really puts on the wire: the pickle, padded with
    zeros up to the declared ``nbytes`` when that is larger."""
    return max(int(nbytes), int(pickled_len))


async def run_program(
    comm: Any,
    program: Callable[..., Awaitable[Any]],
    args: Sequence[Any],
    kwargs: dict[str, Any],
    timeout: float | None,
) -> Any:
    """Run one rank's program on ``comm`` with an optional time limit; errors
    become :class:`CommError` naming the rank (as SimComm does)."""
    coro = program(comm, *args, **kwargs)
    if not inspect.iscoroutine(coro):
        raise not_async_error(comm.rank, program)
    task = asyncio.ensure_future(coro)
    try:
        done, _ = await asyncio.wait([task], timeout=timeout)
        if not done:
            # what it waits for, read before cancelling it
            waiting = comm.pending_descriptions()
            what = ("; still waiting for: " + ", ".join(waiting[:6])) if waiting else ""
            raise CommTimeout(f"rank {comm.rank}: timed out after {timeout:g} s (a deadlock, or a rank too slow){what}")
        result = task.result()
        comm._check_awaited()  # a call dropped without await just before returning
        return result
    except CommError:
        raise
    except Exception as e:  # a bug in the rank program: say which rank, and where
        raise CommError(rank_error(comm.rank, e)) from e
    finally:
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


_RANK_PREFIX = re.compile(r"^rank (\d+)(:?) ")


def summarize_errors(messages: Sequence[str], limit: int = 4) -> str:
    """Join per-rank error lines, merging those that differ only in the rank:
    "rank 0 raised X: m", "rank 1 raised X: m" -> "ranks 0, 1 raised X: m"."""
    groups: dict[str, list[str]] = {}
    for msg in messages:
        m = _RANK_PREFIX.match(msg)
        key, who = (m.group(2) + " " + msg[m.end() :], m.group(1)) if m else (msg, "")
        groups.setdefault(key, []).append(who)
    parts = []
    for key, who in groups.items():
        ranks = sorted({w for w in who if w}, key=int)
        if not ranks:
            parts.append(key)
        elif len(ranks) == 1:
            parts.append(f"rank {ranks[0]}{key}")
        else:
            shown = ", ".join(ranks[:8]) + (", ..." if len(ranks) > 8 else "")
            parts.append(f"ranks {shown}{key}")
    text = "; ".join(parts[:limit])
    if len(parts) > limit:
        text += f"; and {len(parts) - limit} more"
    return text


# --- naming programs across processes ---------------------------------------------------

#: Collectives that ``--program NAME`` may name without a module.
NAMED_PROGRAMS = (
    "alltoall_a",
    "alltoall_b",
    "barrier",
    "bcast_binomial",
    "bcast_scatter_allgather",
    "gather_linear",
)


def _load_file_module(path: Path) -> Any:
    name = f"_parcomm_program_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ProgramError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def is_script_ref(ref: Any) -> bool:
    """Whether a program reference names a whole script (``prog.py``, no ``:function``)."""
    return isinstance(ref, str) and ref.strip().endswith(".py") and ":" not in os.path.basename(ref.strip())


def _import_from_cwd_too(name: str) -> Any:
    """Import ``name``; if it is not found and the working directory is not on
    sys.path (a console script's case), look there too, as ``python -m`` would."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        cwd = os.getcwd()
        if e.name != name.split(".")[0] or cwd in sys.path or "" in sys.path:
            raise
        sys.path.append(cwd)
        return importlib.import_module(name)


def resolve_program(ref: str | Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """The ``async def`` function a reference names.

    ``ref`` is a callable (returned as is), ``"module:function"`` (an
    importable module; ``function`` may be dotted), ``"path/file.py:function"``,
    or the bare name of a collective in :data:`NAMED_PROGRAMS` (from
    :mod:`parcomm.collectives`). Raises :class:`ProgramError` with a one-line
    message otherwise.
    """
    if callable(ref):
        return ref
    if not isinstance(ref, str) or not ref.strip():
        raise ProgramError(f"program must be MODULE:FUNCTION or a collective's name, got {ref!r}")
    ref = ref.strip()
    if is_script_ref(ref):  # a whole `from mpi4py import MPI` script, run as each rank's __main__
        import functools

        import parcomm

        script_program = importlib.import_module(parcomm.BLOCKING_SCRIPT_MODULE).script_program
        if not Path(ref).is_file():
            raise ProgramError(f"program {ref!r}: no such file")
        return functools.partial(script_program, script=str(Path(ref).resolve()))
    if ":" not in ref:
        if ref in NAMED_PROGRAMS:
            return collective(ref)
        raise ProgramError(f"program {ref!r} is neither MODULE:FUNCTION nor a collective ({', '.join(NAMED_PROGRAMS)})")
    mod_name, _, func_name = ref.rpartition(":")
    if not mod_name or not func_name:
        raise ProgramError(f"program {ref!r}: expected MODULE:FUNCTION")
    try:
        if mod_name.endswith(".py"):
            path = Path(mod_name)
            if not path.is_file():
                raise ProgramError(f"program {ref!r}: no such file {mod_name}")
            module = _load_file_module(path.resolve())
        else:
            module = _import_from_cwd_too(mod_name)
    except ProgramError:
        raise
    except ImportError as e:
        raise ProgramError(f"program {ref!r}: cannot import module {mod_name!r} ({e})") from None
    except Exception as e:  # the module itself failed while importing
        raise ProgramError(f"program {ref!r}: importing {mod_name!r} raised {type(e).__name__}: {e}") from None
    obj: Any = module
    for part in func_name.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ProgramError(f"program {ref!r}: module {mod_name!r} has no attribute {func_name!r}") from None
    if not inspect.iscoroutinefunction(obj):
        code = getattr(obj, "__code__", None)
        where = f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
        raise ProgramError(
            f"program {ref!r}{where} is not an `async def` function: rank programs are "
            "`async def f(comm, ...)` and `await` the communicator's calls"
        )
    return obj


def program_ref(program: str | Callable[..., Any]) -> str:
    """A ``module:function`` string another process can resolve, for ``program``."""
    if isinstance(program, str):
        resolve_program(program)  # fail early, in the caller's process
        return program
    module = getattr(program, "__module__", None)
    qualname = getattr(program, "__qualname__", "")
    if module is None or "<locals>" in qualname or "<lambda>" in qualname:
        raise ProgramError(
            f"program {program!r} cannot be named in another process; define it at module level "
            "or pass 'module:function'"
        )
    if module == "__main__":
        main_file = getattr(sys.modules.get("__main__"), "__file__", None)
        if not main_file:
            raise ProgramError(f"program {qualname} lives in an interactive __main__; put it in a module")
        return f"{main_file}:{qualname}"
    return f"{module}:{qualname}"


def parse_kwargs(text: str | None) -> dict[str, Any]:
    """``--kwargs`` JSON: an object mapping parameter names to values."""
    if text is None or text == "":
        return {}
    from ..platform.units import shown

    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise ProgramError(f"--kwargs is not valid JSON ({e.msg} at character {e.pos}): {shown(text)}") from None
    except RecursionError:
        raise ProgramError("--kwargs is not valid JSON: nested too deeply") from None
    except ValueError:  # an integer of more digits than Python converts
        raise ProgramError("--kwargs is not valid JSON: a number with thousands of digits") from None
    if not isinstance(value, dict):
        raise ProgramError(f"--kwargs must be a JSON object like '{{\"nbytes\": 65536}}', got {shown(text)}")
    return value


def _complex_parts(obj: Any) -> Any:
    if isinstance(obj, complex):
        return {"real": obj.real, "imag": obj.imag}
    raise TypeError(type(obj).__name__)


def jsonable(value: Any) -> Any:
    """``value`` as JSON carries it (tuples become lists, complex numbers ``{"real", "imag"}``),
    or its repr when JSON cannot."""
    try:
        return json.loads(json.dumps(value, allow_nan=True, default=_complex_parts))
    except (TypeError, ValueError, RecursionError):
        return repr(value)


# --- results ----------------------------------------------------------------------------


@dataclass
class RankResult:
    """One rank's outcome under a real backend.

    ``start_s``/``finish_s`` are ``time.time()`` when the program started
    (after the mesh was up and every rank had arrived) and returned;
    ``elapsed_s`` is their difference on the monotonic clock. ``counters``
    are this rank's own TCP sockets' kernel counters (SocketComm; see
    :func:`parcomm.comm.sockopts.tcp_info_counters`).
    """

    rank: int
    result: Any
    start_s: float
    finish_s: float
    elapsed_s: float
    counters: dict[str, int] = field(default_factory=dict)
    #: the rank's timeline when tracing was on (see :mod:`parcomm.comm.trace`)
    trace: list | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "ok": True,
            "result": jsonable(self.result),
            "start_s": self.start_s,
            "finish_s": self.finish_s,
            "elapsed_s": self.elapsed_s,
            "counters": self.counters,
        }


def import_path_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """An environment whose PYTHONPATH makes a child process import what this
    one can (the same rule as multiprocessing's spawn, which copies sys.path)."""
    env = dict(os.environ if env is None else env)
    paths = [p for p in sys.path if p and os.path.isdir(p)]
    cwd = os.getcwd()
    if cwd not in paths:
        paths.insert(0, cwd)
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = os.pathsep.join(paths + ([old] if old else []))
    return env
