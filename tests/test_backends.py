"""The real backends: SocketComm (a TCP mesh on 127.0.0.1) and MPIComm (mpi4py +
MPICH under mpiexec) run the same rank programs as the simulator and return the
same results; failures end with a clear error in bounded time; the `parcomm
run` command line, including the per-rank entry point the emulation uses.

Rank programs live at module level so other processes can import them (the
ranks get this process's sys.path). Every run has a time limit.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from parcomm.auth import JobKey
from parcomm.cli import main
from parcomm.collectives import (
    alltoall_a,
    alltoall_b,
    barrier,
    bcast_binomial,
    bcast_scatter_allgather,
    gather_linear,
)
from parcomm.comm import ANY_SOURCE, CommError, CommTimeout, Status, run_local, run_mpi, run_sim
from parcomm.comm.sockopts import kernel_tcp_counters, read_addresses, write_addresses
from ports import free_ports

HERE = Path(__file__).resolve().parent
ME = __name__  # how other processes import this module


# --- rank programs ----------------------------------------------------------------------


def _digest(value) -> str:
    return hashlib.sha256(repr(value).encode()).hexdigest()[:16]


def _data(root: int, n: int) -> bytes:
    return random.Random(f"bcast-{root}-{n}").randbytes(n)


async def suite(comm):
    """Every collective and the point-to-point semantics, returning only data."""
    r, p = comm.rank, comm.size
    out = {}
    blocks = [f"{r}->{d}".encode() * 7 for d in range(p)]
    out["alltoall_a"] = await alltoall_a(comm, blocks)
    out["alltoall_b"] = await alltoall_b(comm, blocks)
    big = [bytes([r, d]) * 100_000 for d in range(p)]  # 200 kB blocks: rendezvous (> 128 KiB)
    out["alltoall_a_big"] = _digest(await alltoall_a(comm, big))
    out["alltoall_b_big"] = _digest(await alltoall_b(comm, big))
    for root in (0, 2):
        data = _data(root, 300_001) if r == root else None
        out[f"bcast_binomial_{root}"] = _digest(await bcast_binomial(comm, data, root=root))
        out[f"bcast_scatter_allgather_{root}"] = _digest(await bcast_scatter_allgather(comm, data, root=root))
    await barrier(comm)
    await comm.barrier()
    out["gather_linear"] = await gather_linear(comm, (r, r * r), root=1)

    # ANY_SOURCE, tags out of order, Status
    if r == 0:
        got = []
        for _ in range(p - 1):
            st = Status()
            v = await comm.recv(source=ANY_SOURCE, tag=7, status=st)
            got.append((st.Get_source(), st.Get_tag(), st.nbytes, v))
        st9 = Status()
        nine = await comm.recv(source=1, tag=9, status=st9)
        eight = await comm.recv(source=1, tag=8)
        out["p2p"] = (sorted(got), nine, st9.tag, eight)
    else:
        await comm.send(("x", r), dest=0, tag=7, nbytes=1000)
        if r == 1:
            await comm.send("eight", dest=0, tag=8)
            await comm.send("nine", dest=0, tag=9)
    # isend/irecv around a ring, with test()
    rreq = comm.irecv(source=(r - 1) % p, tag=11)
    sreq = comm.isend({"from": r}, dest=(r + 1) % p, tag=11)
    await comm.waitall([sreq, rreq])
    out["ring"] = rreq.test()
    # a symbolic payload of declared size, above the eager limit
    if r == 1:
        await comm.send(None, dest=3, tag=12, nbytes=1 << 20)
    elif r == 3:
        st = Status()
        out["symbolic"] = (await comm.recv(source=1, tag=12, status=st), st.source, st.nbytes)
    return out


async def crash(comm):
    await comm.barrier()
    if comm.rank == 2:
        raise ZeroDivisionError("rank two divides by zero")
    return await comm.recv(source=2)  # never arrives


async def deadlock(comm):
    return await comm.recv(source=1 - comm.rank, tag=5)  # both wait: nobody sends


async def orphan(comm):
    if comm.rank == 0:
        return await comm.recv(source=1, tag=3)  # rank 1 finishes without sending it
    return "done"


async def timing(comm, seconds=0.05):
    t0 = comm.wtime()
    await comm.compute(seconds)
    t1 = comm.wtime()
    await comm.sleep(seconds)
    t2 = comm.wtime()
    await comm.barrier()
    return t1 - t0, t2 - t1


async def plain(comm, n=3):
    """A tiny ring: each rank returns what its left neighbour sent (rank * n)."""
    left = comm.irecv(source=(comm.rank - 1) % comm.size)
    await comm.send(comm.rank * n, dest=(comm.rank + 1) % comm.size, nbytes=n)
    return await comm.wait(left)


def not_async(comm):
    return 1


# --- results identical across backends ---------------------------------------------------


@pytest.fixture(scope="module")
def sim_suite():
    return run_sim(suite, "star:4", seed=1).results


def _check_suite(results):
    p = 4
    assert results[2]["alltoall_a"] == [f"{s}->2".encode() * 7 for s in range(p)]
    assert results[1]["gather_linear"] == [(s, s * s) for s in range(p)]
    assert results[0]["p2p"] == ([(s, 7, 1000, ("x", s)) for s in (1, 2, 3)], "nine", 9, "eight")
    assert results[3]["symbolic"] == (None, 1, 1 << 20)
    assert results[0]["bcast_scatter_allgather_2"] == _digest(_data(2, 300_001))


def test_sim_suite_is_what_the_programs_mean(sim_suite):
    _check_suite(sim_suite)


def test_socket_backend_matches_the_simulator(sim_suite):
    before = kernel_tcp_counters()
    res = run_local(suite, 4, timeout=60)
    assert res.results == sim_suite
    _check_suite(res.results)
    assert res.backend == "socket" and len(res.finish_times) == 4 and res.time > 0
    hosts = res.counters["hosts"]
    assert hosts["name"] == ["rank0", "rank1", "rank2", "rank3"]
    # nbytes means real bytes: rank 1 sent the 1 MiB symbolic message, padded
    assert hosts["bytes_sent"][1] >= (1 << 20) + 3 * 200_000
    assert "machine-wide" in res.counters["kernel_scope"]
    if before:
        assert set(res.counters["kernel"]) >= {"RetransSegs", "TCPTimeouts"}


def test_mpi_backend_matches_the_simulator(mpi, sim_suite):
    res = run_mpi(suite, 4, timeout=60)
    assert res.results == sim_suite
    assert res.backend == "mpi" and len(res.finish_times) == 4


def test_compute_burns_and_sleep_waits_real_time():
    res = run_local(timing, 2, kwargs={"seconds": 0.05}, timeout=30)
    for busy, slept in res.results:
        assert 0.05 <= busy < 1.0
        assert 0.05 <= slept < 1.0


def test_measurement_programs_run_unchanged_on_sockets_and_mpi(mpi):
    """parcomm.measure's rank programs over the real backends' runners."""
    measure = pytest.importorskip("parcomm.measure.procedure")
    from parcomm.comm.launch import local_runner
    from parcomm.comm.mpi import mpi_runner

    for runner in (local_runner(2, timeout=30), mpi_runner(2, timeout=30)):
        rtts = runner(measure.rtt_program, {"m": 200_000, "back": 0, "reps": 3})[0]
        assert len(rtts) == 3 and all(0 < t < 5 for t in rtts)


# --- failures end, with a clear message --------------------------------------------------


def test_socket_crashing_rank_is_reported_quickly():
    t0 = time.monotonic()
    with pytest.raises(CommError) as ei:
        run_local(crash, 4, timeout=30)
    took = time.monotonic() - t0
    assert "rank 2 raised ZeroDivisionError: rank two divides by zero" in str(ei.value)
    assert not isinstance(ei.value, CommTimeout)
    assert took < 15, took  # the others see the dropped connection; no waiting for the time limit


def test_socket_deadlock_times_out_with_what_each_rank_waits_for():
    t0 = time.monotonic()
    with pytest.raises(CommTimeout) as ei:
        run_local(deadlock, 2, timeout=1.5)
    assert time.monotonic() - t0 < 20
    msg = str(ei.value)  # both ranks time out together; at least one says what it waited for
    assert "timed out after 1.5 s" in msg and ("recv from 1 tag 5" in msg or "recv from 0 tag 5" in msg)


def test_socket_receive_from_a_finished_rank_fails_at_once():
    t0 = time.monotonic()
    with pytest.raises(CommError, match="can never complete: rank 1 has finished"):
        run_local(orphan, 2, timeout=30)
    assert time.monotonic() - t0 < 15


def test_mpi_crashing_rank_aborts_the_job(mpi):
    t0 = time.monotonic()
    with pytest.raises(CommError) as ei:
        run_mpi(crash, 4, timeout=30)
    assert "rank 2 raised ZeroDivisionError" in str(ei.value)
    assert time.monotonic() - t0 < 20


def test_mpi_deadlock_times_out(mpi):
    with pytest.raises(CommTimeout, match=r"timed out after 1\.5 s.*recv from"):
        run_mpi(deadlock, 2, timeout=1.5)


def test_programs_that_cannot_cross_processes_are_refused():
    async def local_prog(comm):
        return 1

    with pytest.raises(ValueError, match="module level"):
        run_local(local_prog, 2)
    with pytest.raises(ValueError, match="module level"):
        run_mpi(local_prog, 2)
    with pytest.raises(ValueError, match="no attribute"):
        run_local(f"{ME}:missing", 2)


# --- the command line --------------------------------------------------------------------


def _run(capsys, argv):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def _assert_error(rc, out, err, code, bad):
    assert rc == code, (rc, out, err)
    assert "Traceback" not in out + err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert bad in lines[0], err


@pytest.mark.parametrize(
    "argv, bad",
    [
        (["run", "local", "--procs", "2", "--program", "nosuchmodule_xyz:main"], "nosuchmodule_xyz"),
        (["run", "local", "--procs", "2", "--program", f"{ME}:missing"], "missing"),
        (["run", "local", "--procs", "2", "--program", f"{ME}:not_async"], "not an `async def`"),
        (["run", "local", "--procs", "2", "--program", "alltoall_c"], "alltoall_c"),
        (["run", "local", "--procs", "2", "--program", "barrier", "--kwargs", "{nbytes: 1}"], "not valid JSON"),
        (["run", "local", "--procs", "2", "--program", "barrier", "--kwargs", "[1, 2]"], "JSON object"),
        (["run", "local", "--procs", "0", "--program", "barrier"], "--procs must be at least 1"),
        (["run", "local", "--program", "barrier"], "--procs is required"),
        (["run", "mpi", "--procs", "0", "--program", "barrier"], "--procs must be at least 1"),
        (["run", "local", "--procs", "2", "--program", "barrier", "--timeout", "soon"], "soon"),
        (
            ["run", "socket", "--rank", "0", "--addresses", "/nonexistent/addrs", "--program", "barrier"],
            "/nonexistent/addrs",
        ),
    ],
)
def test_cli_user_mistakes_exit_2_in_one_line(capsys, argv, bad):
    rc, out, err = _run(capsys, argv)
    _assert_error(rc, out, err, 2, bad)
    assert out == ""


def test_cli_socket_rank_out_of_range(capsys, tmp_path):
    addrs = tmp_path / "addrs"
    addrs.write_text("127.0.0.1 40001\n127.0.0.1 40002\n")
    rc, out, err = _run(capsys, ["run", "socket", "--rank", "2", "--addresses", str(addrs), "--program", "barrier"])
    _assert_error(rc, out, err, 2, "--rank 2 is not in 0..1")
    addrs.write_text("127.0.0.1 40001\nlocalhost\n")
    rc, out, err = _run(capsys, ["run", "socket", "--rank", "0", "--addresses", str(addrs), "--program", "barrier"])
    _assert_error(rc, out, err, 2, ":2: expected 'host port'")


def test_cli_run_local_collective_by_name_json(capsys):
    rc, out, err = _run(
        capsys,
        [
            "run",
            "local",
            "--procs",
            "4",
            "--program",
            "alltoall_b",
            "--kwargs",
            '{"nbytes": 200000}',
            "--json",
            "--timeout",
            "60s",
        ],
    )
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["summary"]["procs"] == 4 and doc["summary"]["backend"] == "socket"
    assert doc["results"] == [[None] * 4] * 4
    assert sum(doc["counters"]["hosts"]["bytes_sent"]) >= 12 * 200_000


def test_cli_run_local_failure_exits_1(capsys):
    rc, out, err = _run(capsys, ["run", "local", "--procs", "4", "--program", f"{ME}:crash", "--timeout", "30s"])
    _assert_error(rc, out, err, 1, "rank 2 raised ZeroDivisionError")


def test_cli_run_mpi_spawns_mpiexec(mpi, capsys, tmp_path):
    out_file = tmp_path / "mpi.json"
    rc, out, err = _run(
        capsys,
        [
            "run",
            "mpi",
            "--procs",
            "2",
            "--program",
            f"{ME}:plain",
            "--kwargs",
            '{"n": 5}',
            "--json",
            "--out",
            str(out_file),
        ],
    )
    assert rc == 0, err
    assert json.loads(out)["results"] == [5, 0]
    doc = json.loads(out_file.read_text())
    assert doc["results"] == [5, 0] and [r["rank"] for r in doc["ranks"]] == [0, 1]


def test_cli_socket_entry_point_one_process_per_rank(tmp_path):
    """What the emulated cluster runs in each namespace: one process per rank,
    an addresses file, a JSON result per rank."""
    n = 3
    addrs = tmp_path / "addresses"
    write_addresses(addrs, [("127.0.0.1", p) for p in free_ports(n)])
    assert len(read_addresses(addrs)) == n
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        "PARCOMM_JOB_KEY": JobKey.generate().hex(),
    }  # the job's shared key, from the environment
    procs = []
    for r in reversed(range(n)):  # start order does not matter: connects are retried
        cmd = [
            sys.executable,
            "-m",
            "parcomm",
            "run",
            "socket",
            "--rank",
            str(r),
            "--addresses",
            str(addrs),
            "--program",
            f"{ME}:plain",
            "--kwargs",
            '{"n": 100000}',
            "--out",
            str(tmp_path / f"r{r}.json"),
            "--nodelay",
            "--sndbuf",
            "262144",
            "--rcvbuf",
            "256KiB",
            "--timeout",
            "30s",
        ]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    try:
        for p in procs:
            _, err = p.communicate(timeout=60)
            assert p.returncode == 0, err
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    docs = [json.loads((tmp_path / f"r{r}.json").read_text()) for r in range(n)]
    for r, d in enumerate(docs):
        assert d["rank"] == r and d["ok"] is True
        assert d["result"] == ((r - 1) % n) * 100000
        assert d["finish_s"] >= d["start_s"] and d["elapsed_s"] >= 0
        assert d["counters"]["bytes_sent"] >= 100000  # padded to nbytes on the wire


def test_cli_socket_entry_point_reports_a_failure(tmp_path):
    addrs = tmp_path / "addresses"
    write_addresses(addrs, [("127.0.0.1", p) for p in free_ports(2)])
    key_file = JobKey.generate().write(tmp_path / "job.key")  # the job's shared key, from a file
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    env.pop("PARCOMM_JOB_KEY", None)
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "parcomm",
                "run",
                "socket",
                "--rank",
                str(r),
                "--addresses",
                str(addrs),
                "--program",
                f"{ME}:deadlock",
                "--out",
                str(tmp_path / f"r{r}.json"),
                "--timeout",
                "1s",
                "--key-file",
                str(key_file),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for r in range(2)
    ]
    try:
        errs = [p.communicate(timeout=60)[1] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    assert [p.returncode for p in procs] == [1, 1], errs
    for r in range(2):
        d = json.loads((tmp_path / f"r{r}.json").read_text())
        assert d["ok"] is False and d["rank"] == r
        assert d["error_kind"] in ("timeout", "lost")
    assert any("timed out after 1 s" in e for e in errs), errs
