"""``parcomm run``: run rank programs for real, over TCP sockets or MPI.

Exit status: 0 on success, 2 for a mistake in the invocation (bad
``--program``, bad ``--kwargs`` JSON, too few ``--procs``, unreadable
addresses file), 1 when the run itself failed (a rank raised, timed out or
could not connect); both print one ``error: ...`` line on stderr.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import click

from ..platform.units import parse_duration, parse_size
from .common import RunFailed, UserError, emit_json

PROGRAM_HELP = (
    "the rank program: MODULE:FUNCTION (an `async def f(comm, ...)`), path/to/file.py:FUNCTION, "
    "or a collective's name (alltoall_a, alltoall_b, barrier, bcast_binomial, bcast_scatter_allgather, "
    "gather_linear)"
)
KWARGS_HELP = "keyword arguments for the program as a JSON object, e.g. '{\"nbytes\": 65536}'"


def pick_program(positional: str | None, option: str | None) -> str:
    """The program, given as the first argument or with --program (not both, unless equal)."""
    if positional and option and positional != option:
        raise UserError(f"two programs given: {positional!r} and --program {option!r}; give one")
    ref = positional or option
    if not ref:
        raise UserError(
            "no program: give MODULE:FUNCTION (or path/file.py:FUNCTION) as the first argument or with --program"
        )
    return ref


def _program(ref: str) -> str:
    from ..comm.aio import ProgramError, resolve_program

    try:
        resolve_program(ref)
    except ProgramError as e:
        raise UserError(str(e)) from None
    return ref


def _kwargs(text: str | None) -> dict[str, Any]:
    from ..comm.aio import ProgramError, parse_kwargs

    try:
        return parse_kwargs(text)
    except ProgramError as e:
        raise UserError(str(e)) from None


def checked_kwargs(ref: str, text: str | None) -> dict[str, Any]:
    """``--kwargs`` parsed and held against the program's parameters, so that an unknown or
    missing name is a usage error (exit 2) in one line before any rank starts, on every backend."""
    import inspect

    from ..comm.aio import ProgramError, resolve_program

    kwargs = _kwargs(text)
    try:
        prog = resolve_program(ref)
        sig = inspect.signature(prog)
    except (ProgramError, TypeError, ValueError):
        return kwargs  # resolving is reported elsewhere; a signature Python cannot read is not checked
    try:
        sig.bind(None, **kwargs)  # the communicator first, as every backend calls it
    except TypeError as e:
        raise UserError(f"--kwargs {text}: {getattr(prog, '__name__', ref)}() {e}") from None
    return kwargs


def _seconds(text: str | None, option: str) -> float | None:
    if text is None or str(text).lower() in ("none", "inf", "0"):
        return None
    try:
        value = parse_duration(text, option, require_unit=True)
    except ValueError as e:
        raise UserError(str(e)) from None
    return value if value > 0 and math.isfinite(value) else None


def _bytes(text: str | None, option: str) -> int | None:
    if text is None:
        return None
    try:
        value = parse_size(text, option)
    except ValueError as e:
        raise UserError(str(e)) from None
    if value <= 0:
        raise UserError(f"{option} must be positive, got {text}")
    return value


def _procs(procs: int | None) -> int:
    if procs is None:
        raise UserError("--procs is required (the number of ranks)")
    if procs < 1:
        raise UserError(f"--procs must be at least 1, got {procs}")
    return procs


def _doc(res: Any) -> dict[str, Any]:
    return result_doc(res, backend=res.backend, platform=res.platform)


def result_doc(res: Any, backend: str, platform: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The result table every way of running a program prints with --json:
    ``summary`` (backend, platform, procs, completion time, wall time),
    per-rank ``finish_times_s`` and ``results``, and ``counters``."""
    from ..comm.aio import jsonable

    return {
        "summary": {
            "backend": backend,
            "platform": platform,
            "procs": len(res.finish_times),
            "time_s": res.time,
            "wall_s": round(res.wall_s, 3),
            **(extra or {}),
        },
        "finish_times_s": res.finish_times,
        "results": [jsonable(r) for r in res.results],
        "counters": res.counters,
    }


def _report(res: Any, as_json: bool, json_out: Path | None = None, script: bool = False) -> None:
    report_result(res, res.backend, res.platform, as_json, json_out=json_out, script=script)


def report_result(
    res: Any,
    backend: str,
    platform: str,
    as_json: bool,
    extra: dict[str, Any] | None = None,
    *,
    json_out: Path | None = None,
    script: bool = False,
) -> None:
    """Print the result table (rank, finish time, return value) or, with
    ``as_json``, :func:`result_doc` as strict JSON; ``json_out`` writes that
    document to a file. After a script (``script``) the table goes to stderr:
    stdout holds the program's own output, as under mpiexec."""
    if json_out is not None:
        _write_out(json_out, result_doc(res, backend, platform, extra))
    if as_json:
        emit_json(result_doc(res, backend, platform, extra))
        return
    from rich.console import Console
    from rich.table import Table

    con = Console(stderr=script)
    t = Table(title=f"{backend} run on {platform}: completion {res.time:.6f} s (wall {res.wall_s:.2f} s)")
    t.add_column("rank", justify="right")
    t.add_column("finish (s)", justify="right")
    t.add_column("result")
    for r, (f, v) in enumerate(zip(res.finish_times, res.results)):
        text = repr(v)
        t.add_row(str(r), f"{f:.6f}", text if len(text) <= 70 else text[:67] + "...")
    con.print(t)
    totals = res.host_totals()
    if totals:
        label = "TCP (simulated hosts)" if backend == "sim" else "TCP (this run's sockets)"
        con.print(f"{label}: " + ", ".join(f"{k} {v}" for k, v in totals.items()))


RENDEZVOUS_HELP = (
    "large-message protocol (the simulator's, the same engine): sender-driven (MPICH: RTS, CTS, "
    "data) or receiver-driven (as in Nomura & Ishikawa's MPI library: a posted receive sends its source a credit); "
    "every rank must use the same"
)
TRACE_HELP = (
    "write each rank's timeline (sends, receives, waits, compute, collectives) to this file as "
    "Chrome/Perfetto trace-event JSON (open it in ui.perfetto.dev)"
)


def write_trace(path: Path | None, res: Any, backend: str, platform: str) -> None:
    """``--trace FILE``: the run's per-rank timelines as trace-event JSON."""
    if path is None:
        return
    from ..comm.trace import write_chrome_trace

    try:
        write_chrome_trace(path, res.extra.get("trace") or [], backend, platform)
    except OSError as e:
        raise RunFailed(f"cannot write --trace {path}: {e.strerror or e}") from None


def _write_out(path: Path | None, doc: dict[str, Any]) -> None:
    if path is None:
        return
    try:
        path.write_text(json.dumps(doc, indent=1, default=repr) + "\n")
    except OSError as e:
        raise RunFailed(f"cannot write {path}: {e.strerror or e}") from None


# --- whole mpi4py scripts ------------------------------------------------------------------

TAG_OUTPUT_HELP = "prefix each line a rank prints with '[rank] ' (mpiexec -prepend-rank)"
COMPUTE_HELP = (
    "a script's CPU time between MPI calls, times this factor, is charged to simulated time "
    "(0: charge nothing, so the run is deterministic; 1: this machine's speed)"
)
JSON_OUT_HELP = "write the --json document to this file (the program's output stays on stdout)"


def is_script(ref: str) -> bool:
    """PROGRAM is a whole ``from mpi4py import MPI`` script (``prog.py``, no ``:function``)."""
    from ..comm.aio import is_script_ref

    return is_script_ref(ref)


def script_kwargs(
    ref: str,
    kwargs_json: str | None,
    script_args: tuple[str, ...],
    *,
    as_json: bool,
    tag_output: bool,
    cpu_scale: float | None = None,
    read_stdin: bool = False,
) -> dict[str, Any]:
    """The keyword arguments of :func:`~parcomm.blocking.script_program` for a script run.
    ``read_stdin``: the ranks run in other processes, so rank 0's input is read here first."""
    if kwargs_json:
        raise UserError(f"--kwargs is for MODULE:FUNCTION programs; {ref} is a script (give its arguments after it)")
    kw: dict[str, Any] = {"argv": list(script_args), "tag_output": tag_output, "to_stderr": as_json}
    if cpu_scale:
        kw["cpu_scale"] = cpu_scale
    if read_stdin:
        import sys

        stdin = sys.stdin
        if stdin is not None and not stdin.isatty():
            kw["stdin_text"] = stdin.read()
    return kw


def no_script_args(ref: str, script_args: tuple[str, ...]) -> None:
    if script_args:
        raise UserError(f"arguments {' '.join(script_args)!r} after {ref}: only a script (prog.py) takes arguments")


class program_output_to_stderr:
    """With --json, what the ranks print goes to stderr (file descriptor 2), so
    stdout carries the JSON document alone; rank processes started inside
    inherit it."""

    def __init__(self, active: bool):
        self.active = active
        self._saved: int | None = None

    def __enter__(self) -> program_output_to_stderr:
        if self.active:
            import os
            import sys

            sys.stdout.flush()
            self._saved = os.dup(1)
            os.dup2(2, 1)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._saved is not None:
            import os
            import sys

            sys.stdout.flush()
            os.dup2(self._saved, 1)
            os.close(self._saved)
            self._saved = None


def run_script_under_mpiexec(
    ref: str, procs: int, script_args: tuple[str, ...], timeout: float | None, tag_output: bool = False
) -> None:
    """``run mpi prog.py``: the real mpi4py, exactly as ``mpiexec -n N python prog.py``
    (stdin goes to rank 0, output passes through); a failure is exit status 1.
    ``tag_output``: each rank runs the script through ``run mpi --tag-output``,
    which writes whole lines prefixed with ``[rank] `` (Hydra's -prepend-rank
    does not keep lines whole)."""
    import subprocess
    import sys

    from ..comm.mpi import find_mpiexec

    if tag_output:
        rank_cmd = [sys.executable, "-m", "parcomm", "run", "mpi", ref, "--tag-output", *script_args]
    else:
        rank_cmd = [sys.executable, ref, *script_args]
    try:
        done = subprocess.run([find_mpiexec(), "-n", str(procs), *rank_cmd], timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RunFailed(f"{ref} did not finish within --timeout ({timeout:g} s)") from None
    if done.returncode != 0:
        raise RunFailed(f"mpiexec -n {procs} python {ref} exited with status {done.returncode}")


@click.group()
def run() -> None:
    """Run rank programs for real: local processes over TCP, MPI, or one TCP rank.

    \b
    Examples:
      parcomm run local mymodule:main --procs 4 --json
      parcomm run local alltoall_b --procs 4 --kwargs '{"nbytes": 65536}'
      parcomm run mpi path/to/prog.py:main --procs 4
      mpiexec -n 4 python -m parcomm run mpi mymodule:main
      python -m parcomm run socket mymodule:main --rank 2 --addresses hosts.txt --out r2.json

    The program is the same `async def main(comm, ...)` that `parcomm sim run`
    simulates; every way prints the same table (--json: the same document).

    Exit status 2 means a mistake in the command, 1 that the run failed.
    """


@run.command()
@click.option("--procs", "-n", type=int, default=None, help="number of ranks (local processes)")
@click.argument("program_arg", metavar="[PROGRAM]", required=False)
@click.option("--program", "program", default=None, help=PROGRAM_HELP)
@click.option("--kwargs", "kwargs_json", default=None, help=KWARGS_HELP)
@click.option("--timeout", default="60s", show_default=True, help="time limit of each rank's program")
@click.option("--nodelay/--no-nodelay", default=True, show_default=True, help="TCP_NODELAY on every socket")
@click.option("--sndbuf", default=None, help="SO_SNDBUF in bytes (default: the kernel's)")
@click.option("--rcvbuf", default=None, help="SO_RCVBUF in bytes (default: the kernel's)")
@click.option(
    "--rendezvous", type=click.Choice(["sender", "receiver"]), default="sender", show_default=True, help=RENDEZVOUS_HELP
)
@click.option("--trace", "trace_file", type=click.Path(dir_okay=False, path_type=Path), default=None, help=TRACE_HELP)
@click.option("--json", "as_json", is_flag=True, help="print the full result as JSON")
@click.option("--json-out", type=click.Path(dir_okay=False, path_type=Path), default=None, help=JSON_OUT_HELP)
@click.option("--tag-output", is_flag=True, help=TAG_OUTPUT_HELP)
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
def local(
    program_arg,
    procs,
    program,
    kwargs_json,
    timeout,
    nodelay,
    sndbuf,
    rcvbuf,
    rendezvous,
    trace_file,
    as_json,
    json_out,
    tag_output,
    script_args,
) -> None:
    """Run PROGRAM on N local processes connected by TCP over 127.0.0.1 (SocketComm).

    PROGRAM is MODULE:FUNCTION or path/file.py:FUNCTION naming an `async def
    f(comm, ...)`, a collective's name, or a whole mpi4py script (prog.py, its
    arguments after it), which runs unchanged: stdin goes to rank 0, the
    ranks' output to stdout, the result table to stderr. A file that calls
    run_local itself must do so under `if __name__ == "__main__":`; this command needs no such guard."""
    from ..comm import CommError
    from ..comm.launch import run_local

    n = _procs(procs)
    ref = _program(pick_program(program_arg, program))
    script = is_script(ref)
    if script:
        kwargs = script_kwargs(ref, kwargs_json, script_args, as_json=as_json, tag_output=tag_output, read_stdin=True)
    else:
        no_script_args(ref, script_args)
        kwargs = checked_kwargs(ref, kwargs_json)
    opts: dict[str, Any] = {"nodelay": nodelay}
    if (b := _bytes(sndbuf, "--sndbuf")) is not None:
        opts["sndbuf"] = b
    if (b := _bytes(rcvbuf, "--rcvbuf")) is not None:
        opts["rcvbuf"] = b
    try:
        with program_output_to_stderr(as_json):
            res = run_local(
                ref,
                n,
                kwargs=kwargs,
                timeout=_seconds(timeout, "--timeout"),
                sock_options=opts,
                trace=trace_file is not None,
                rendezvous=rendezvous,
            )
    except CommError as e:
        raise RunFailed(str(e)) from None
    write_trace(trace_file, res, res.backend, res.platform)
    _report(res, as_json, json_out, script)


@run.command()
@click.option(
    "--procs", "-n", type=int, default=None, help="number of ranks; mpiexec is started for you unless already under MPI"
)
@click.argument("program_arg", metavar="[PROGRAM]", required=False)
@click.option("--program", "program", default=None, help=PROGRAM_HELP)
@click.option("--kwargs", "kwargs_json", default=None, help=KWARGS_HELP)
@click.option("--timeout", default="60s", show_default=True, help="time limit of each rank's program")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="write the results as JSON to this file",
)
@click.option("--trace", "trace_file", type=click.Path(dir_okay=False, path_type=Path), default=None, help=TRACE_HELP)
@click.option("--json", "as_json", is_flag=True, help="print the full result as JSON")
@click.option("--call-pickle", type=click.Path(dir_okay=False, path_type=Path), default=None, hidden=True)
@click.option("--pickle-out", type=click.Path(dir_okay=False, path_type=Path), default=None, hidden=True)
@click.option("--spin", type=float, default=0.05, hidden=True)
@click.option("--trace-ranks", is_flag=True, hidden=True)
@click.option("--json-out", type=click.Path(dir_okay=False, path_type=Path), default=None, help=JSON_OUT_HELP)
@click.option("--tag-output", is_flag=True, help=TAG_OUTPUT_HELP)
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
def mpi(
    program_arg,
    procs,
    program,
    kwargs_json,
    timeout,
    out,
    trace_file,
    as_json,
    call_pickle,
    pickle_out,
    spin,
    trace_ranks,
    json_out,
    tag_output,
    script_args,
) -> None:
    """Run PROGRAM under MPI (mpi4py + MPICH). Started by hand under
    `mpiexec -n N python -m parcomm run mpi ...`, it runs as one rank and rank 0
    reports; started alone with --procs N, it starts mpiexec itself. A whole
    mpi4py script (prog.py, its arguments after it) runs with the real mpi4py,
    exactly as `mpiexec -n N python prog.py`."""
    from ..comm import CommError
    from ..comm.mpi import run_mpi, run_mpi_rank, under_mpi

    ref = _program(pick_program(program_arg, program))
    limit = _seconds(timeout, "--timeout")
    if is_script(ref):
        if kwargs_json:
            raise UserError(f"--kwargs is for MODULE:FUNCTION programs; {ref} is a script")
        if under_mpi():  # one rank of a hand-started mpiexec: the script itself, with the real mpi4py
            _run_script_as_mpi_rank(ref, script_args, tag_output)
            return
        run_script_under_mpiexec(ref, _procs(procs), script_args, limit, tag_output)
        return
    no_script_args(ref, script_args)
    # a rank started by run_mpi gets its arguments in the call pickle: check --kwargs only where a user gave it
    kwargs = checked_kwargs(ref, kwargs_json) if call_pickle is None else _kwargs(kwargs_json)
    if under_mpi():
        args: tuple = ()
        if call_pickle is not None:
            import pickle

            with open(call_pickle, "rb") as f:
                call = pickle.load(f)
            args, kwargs = tuple(call.get("args", ())), {**kwargs, **call.get("kwargs", {})}
        from mpi4py import MPI

        if procs is not None and procs != MPI.COMM_WORLD.Get_size():
            raise UserError(f"--procs {procs} differs from the {MPI.COMM_WORLD.Get_size()} ranks mpiexec started")
        res = run_mpi_rank(
            ref,
            args=args,
            kwargs=kwargs,
            timeout=limit,
            out=out,
            pickle_out=pickle_out,
            spin_s=spin,
            trace=trace_ranks or trace_file is not None,
        )
        if res is not None and pickle_out is None:  # rank 0 of a hand-started mpiexec reports
            write_trace(trace_file, res, "mpi", res.platform)
            _report(res, as_json)
        return
    n = _procs(procs)
    try:
        with program_output_to_stderr(as_json):
            res = run_mpi(ref, n, kwargs=kwargs, timeout=limit, spin_s=spin, out=out, trace=trace_file is not None)
    except CommError as e:
        raise RunFailed(str(e)) from None
    write_trace(trace_file, res, "mpi", res.platform)
    _report(res, as_json, json_out)


def _run_script_as_mpi_rank(ref: str, script_args: tuple[str, ...], tag_output: bool) -> None:
    """Run a whole mpi4py script as this rank of a hand-started mpiexec, with
    the real mpi4py (its output tagged with the rank if asked)."""
    import os
    import runpy
    import sys

    from ..blocking.output import RankOutput

    rank = int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
    if tag_output:
        sys.stdout = RankOutput(sys.stdout, True, rank)  # type: ignore[assignment]
        sys.stderr = RankOutput(sys.stderr, True, rank)  # type: ignore[assignment]
    sys.argv = [ref, *script_args]
    try:
        runpy.run_path(ref, run_name="__main__")
    finally:
        for stream in (sys.stdout, sys.stderr):
            if isinstance(stream, RankOutput):
                stream.finish_rank(rank)


def _mesh_size(n_addresses: int, size: int | None, rank: int) -> int:
    """The number of ranks (--size, else one per line of the addresses file), checked with --rank."""
    n = n_addresses if size is None else size
    if n < 1 or n > n_addresses:
        raise UserError(f"--size {n} needs between 1 and {n_addresses} ranks (the addresses file has {n_addresses})")
    if not 0 <= rank < n:
        raise UserError(f"--rank {rank} is not in 0..{n - 1}")
    return n


def _sock_options(
    nodelay: bool, sndbuf: str | None, rcvbuf: str | None, rto_min: str | None, rto_max: str | None
) -> dict[str, Any]:
    """SocketComm's per-socket options from the command line's."""
    opts: dict[str, Any] = {"nodelay": True} if nodelay else {}
    if (b := _bytes(sndbuf, "--sndbuf")) is not None:
        opts["sndbuf"] = b
    if (b := _bytes(rcvbuf, "--rcvbuf")) is not None:
        opts["rcvbuf"] = b
    if (d := _seconds(rto_min, "--rto-min")) is not None:
        opts["rto_min_us"] = max(1, round(d * 1e6))
    if (d := _seconds(rto_max, "--rto-max")) is not None:
        opts["rto_max_ms"] = max(1, round(d * 1e3))
    return opts


@run.command(name="socket")
@click.option("--rank", type=int, required=True, help="this process's rank")
@click.option(
    "--addresses",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="file with one 'host port' line per rank (line r is rank r's listening address)",
)
@click.argument("program_arg", metavar="[PROGRAM]", required=False)
@click.option("--program", "program", default=None, help=PROGRAM_HELP)
@click.option("--kwargs", "kwargs_json", default=None, help=KWARGS_HELP)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="write {rank, ok, result, start_s, finish_s, elapsed_s, counters} (or the error) as JSON "
    "to this file; without it, print that to stdout",
)
@click.option("--size", type=int, default=None, help="number of ranks (default: the addresses file's lines)")
@click.option("--nodelay", is_flag=True, help="set TCP_NODELAY (default: Nagle on, the kernel's default)")
@click.option("--sndbuf", default=None, help="SO_SNDBUF in bytes")
@click.option("--rcvbuf", default=None, help="SO_RCVBUF in bytes")
@click.option("--rto-min", default=None, help="per-socket TCP_RTO_MIN_US, e.g. 5ms (Linux >= 6.16)")
@click.option("--rto-max", default=None, help="per-socket TCP_RTO_MAX_MS, e.g. 1s (Linux >= 6.15)")
@click.option("--timeout", default="600s", show_default=True, help="time limit of the program")
@click.option("--connect-timeout", default="30s", show_default=True, help="time limit for building the mesh")
@click.option(
    "--rendezvous", type=click.Choice(["sender", "receiver"]), default="sender", show_default=True, help=RENDEZVOUS_HELP
)
@click.option(
    "--key-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="the job's shared key (mode 600; `parcomm keygen FILE` writes one); default: $PARCOMM_JOB_KEY",
)
def socket_cmd(
    program_arg,
    rank,
    addresses,
    program,
    kwargs_json,
    out,
    size,
    nodelay,
    sndbuf,
    rcvbuf,
    rto_min,
    rto_max,
    timeout,
    connect_timeout,
    rendezvous,
    key_file,
) -> None:
    """Run one rank of PROGRAM over a TCP mesh (SocketComm): start one such
    process per rank, each with the same addresses file (this is what the
    emulated cluster runs in each network namespace).

    Every rank must hold the same job key (--key-file or $PARCOMM_JOB_KEY):
    each connection proves it before anything is read, so a process that
    does not hold it cannot join, send a message or run code in the job."""
    from ..auth import JobKeyError, resolve_key
    from ..comm import CommError
    from ..comm.launch import run_rank
    from ..comm.sockopts import read_addresses

    ref = _program(pick_program(program_arg, program))
    kwargs = checked_kwargs(ref, kwargs_json)
    try:
        addrs = read_addresses(addresses)
    except CommError as e:
        raise UserError(str(e)) from None
    n = _mesh_size(len(addrs), size, rank)
    try:
        key = resolve_key(key_file)
    except JobKeyError as e:
        raise UserError(str(e)) from None
    opts = _sock_options(nodelay, sndbuf, rcvbuf, rto_min, rto_max)
    limit = _seconds(timeout, "--timeout")
    connect_limit = _seconds(connect_timeout, "--connect-timeout") or 30.0
    try:
        res = run_rank(
            ref,
            rank,
            n,
            addrs,
            kwargs=kwargs,
            sock_options=opts,
            timeout=limit,
            connect_timeout=connect_limit,
            key=key,
            rendezvous=rendezvous,
        )
    except CommError as e:
        from ..comm.launch import _classify

        doc = {"rank": rank, "ok": False, "error": str(e), "error_kind": _classify(e)}
        if out is not None:
            _write_out(out, doc)
        raise RunFailed(str(e)) from None
    doc = res.to_json()
    if out is not None:
        _write_out(out, doc)
    else:
        emit_json(doc)
