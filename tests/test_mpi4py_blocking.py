"""Plain `from mpi4py import MPI` scripts under the simulator (issue 33): the
blocking surface over the one Communicator, the two fixed bugs, and the CLI's
streams."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from parcomm.comm import CommError, run_sim
from parcomm.comm.aio import resolve_program

ROOT = Path(__file__).resolve().parents[1]


def run_script(tmp_path: Path, capsys, source: str, n: int = 4, **kw):
    path = tmp_path / "prog.py"
    path.write_text(textwrap.dedent(source))
    res = run_sim(resolve_program(str(path)), f"star:{max(n, 2)}", n, **kw)
    out = capsys.readouterr().out
    return res, out


def lines_of(out: str) -> dict[str, str]:
    """``key value`` lines printed by a script, as a dict."""
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


def test_point_to_point_status_and_constants(tmp_path, capsys):
    _, out = run_script(
        tmp_path,
        capsys,
        """
        from mpi4py import MPI
        import numpy as np
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        assert MPI.ANY_SOURCE != MPI.PROC_NULL and MPI.ANY_TAG == -1
        comm.send("void", dest=MPI.PROC_NULL)
        st = MPI.Status()
        assert comm.recv(source=MPI.PROC_NULL, status=st) is None and st.Get_source() == MPI.PROC_NULL
        if rank == 0:
            comm.Send([np.arange(10, dtype="i"), 3, MPI.INT], dest=1, tag=7)
        elif rank == 1:
            buf = np.zeros(10, dtype="i")
            comm.Recv([buf, MPI.INT], source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=st)
            print("count", st.Get_count(MPI.INT), st.Get_source(), st.Get_tag(), st.Get_error(), list(buf[:4]))
        """,
    )
    assert lines_of(out)["count"] == "3 0 7 0 [np.int32(0), np.int32(1), np.int32(2), np.int32(0)]"


def test_collectives_objects_and_buffers(tmp_path, capsys):
    _, out = run_script(
        tmp_path,
        capsys,
        """
        from mpi4py import MPI
        import numpy as np
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        inclusive, exclusive = comm.scan(rank + 1), comm.exscan(rank + 1)
        if rank == 2:
            print("scan", inclusive, exclusive)
        a = np.array([rank % 2, 1], dtype="i")
        land = np.empty(2, dtype="i")
        comm.Allreduce(a, land, op=MPI.LAND)
        counts = [1, 2, 3, 4]
        recv = np.zeros(sum(counts), dtype="d")
        comm.Allgatherv(np.full(counts[rank], rank, dtype="d"), [recv, counts, MPI.DOUBLE])
        rs = np.zeros(2, dtype="i")
        comm.Reduce_scatter_block(np.arange(2 * size, dtype="i"), rs, op=MPI.SUM)
        x = np.array([rank], dtype="l")
        comm.Allreduce(MPI.IN_PLACE, x, op=MPI.MAX)
        if rank == 3:
            print("land", list(land), "allgatherv", list(recv), "rs", list(rs), "inplace", x[0])
        """,
    )
    got = lines_of(out)
    assert got["scan"] == "6 3"
    assert got["land"] == (
        "[np.int32(0), np.int32(1)] allgatherv [np.float64(0.0), np.float64(1.0), np.float64(1.0), "
        "np.float64(2.0), np.float64(2.0), np.float64(2.0), np.float64(3.0), np.float64(3.0), "
        "np.float64(3.0), np.float64(3.0)] rs [np.int32(24), np.int32(28)] inplace 3"
    )


def test_requests_probes_cancel_and_synchronous_send(tmp_path, capsys):
    _, out = run_script(
        tmp_path,
        capsys,
        """
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        if rank == 0:
            req = comm.issend("sync", dest=1, tag=1)
            print("ssend-before-match", req.Test())
            comm.barrier()
            req.Wait()
            comm.send({"k": 1}, dest=1, tag=2)
        elif rank == 1:
            comm.barrier()
            st = MPI.Status()
            comm.Probe(source=0, tag=MPI.ANY_TAG, status=st)
            print("probe", st.Get_source(), st.Get_tag())
            print("first", comm.recv(source=0, tag=1))
            msg = comm.mprobe(source=0, tag=2)
            print("mrecv", msg.recv())
            reqs = [comm.irecv(source=0, tag=9), comm.irecv(source=0, tag=10)]
            reqs[0].Cancel()
            st = MPI.Status()
            reqs[0].Wait(st)
            reqs[1].Cancel()
            print("cancelled", st.Is_cancelled(), MPI.Request.Testall(reqs))
        else:
            comm.barrier()
        """,
    )
    got = lines_of(out)
    assert got["ssend-before-match"] == "False"
    assert got["probe"] == "0 1"
    assert got["first"] == "sync"
    assert got["mrecv"] == "{'k': 1}"
    assert got["cancelled"] == "True True"


def test_waitany_waitsome_topologies_and_split(tmp_path, capsys):
    _, out = run_script(
        tmp_path,
        capsys,
        """
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        if rank == 0:
            reqs = [comm.irecv(source=s, tag=0) for s in (1, 2, 3)]
            index, value = MPI.Request.waitany(reqs)
            done = [index]
            while len(done) < 3:
                idx, values = MPI.Request.waitsome(reqs)
                done += idx or []
            print("any", sorted(done))
        else:
            comm.send(rank, dest=0)
        cart = comm.Create_cart([2, 2], periods=[True, False])
        src, dst = cart.Shift(0, 1)
        row = cart.Sub([False, True])
        half = comm.Split(color=rank % 2, key=-rank)
        if rank == 1:
            print("cart", cart.Get_coords(rank), src, dst, row.Get_size(), half.Get_rank(), half.Get_size())
        half.Free()
        print("free", rank, half == MPI.COMM_NULL)
        """,
    )
    got = lines_of(out)
    assert got["any"] == "[0, 1, 2]"
    assert got["cart"] == "[0, 1] 3 3 2 1 2"


def test_unsupported_call_names_itself(tmp_path, capsys):
    with pytest.raises(CommError, match=r"MPI\.Win is not supported .* one-sided"):
        run_script(tmp_path, capsys, "from mpi4py import MPI\nMPI.Win.Create(None)\n", n=2)


def test_abort_ends_the_run(tmp_path, capsys):
    with pytest.raises(CommError, match="rank 1 called MPI_Abort with error code 3"):
        run_script(
            tmp_path,
            capsys,
            "from mpi4py import MPI\nif MPI.COMM_WORLD.rank == 1:\n    MPI.COMM_WORLD.Abort(3)\nMPI.COMM_WORLD.barrier()\n",
            n=2,
        )


def test_same_script_same_simulation(tmp_path, capsys):
    source = """
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    for i in range(20):
        x = comm.allreduce(comm.rank * i)
    print("t", comm.rank, MPI.Wtime())
    """
    a, out_a = run_script(tmp_path, capsys, source)
    b, out_b = run_script(tmp_path, capsys, source)
    assert a.finish_times == b.finish_times and a.events == b.events
    assert out_a == out_b


def test_compute_is_charged_only_when_asked(tmp_path, capsys):
    source = """
    from mpi4py import MPI
    x = 0
    for i in range(300000):
        x += i
    MPI.COMM_WORLD.barrier()
    """
    path = tmp_path / "busy.py"
    path.write_text(textwrap.dedent(source))
    free = run_sim(resolve_program(str(path)), "star:2", 2)
    charged = run_sim(resolve_program(str(path)), "star:2", 2, kwargs={"cpu_scale": 1.0})
    assert max(charged.finish_times) > max(free.finish_times) + 1e-3  # the loop takes milliseconds of CPU


# --- the two bugs of the async API ------------------------------------------------------------


async def _land(comm):
    send = np.array([comm.rank % 2, 1, 0], dtype=np.int64)
    recv = np.empty(3, dtype=np.int64)
    await comm.Allreduce(send, recv, op="LAND")
    lor = np.empty(3, dtype=np.int64)
    await comm.Allreduce(send, lor, op="LOR")
    return recv.tolist(), lor.tolist()


def test_allreduce_logical_ops_on_int_arrays():
    res = run_sim(_land, "star:4", 4)
    assert res.results == [([0, 1, 0], [1, 1, 0])] * 4


async def _count(comm):
    from parcomm.blocking import MPI

    if comm.rank == 0:
        await comm.Send([np.arange(10, dtype=np.int32), 3, MPI.INT], 1)
        return None
    buf = np.zeros(10, dtype=np.int32)
    from parcomm.comm import Status

    st = Status()
    await comm.Recv(buf, 0, status=st)
    return st.nbytes, buf.tolist()


def test_count_in_a_buffer_spec_is_honoured():
    res = run_sim(_count, "star:2", 2)
    assert res.results[1] == (12, [0, 1, 2, 0, 0, 0, 0, 0, 0, 0])


async def _too_many(comm):
    from parcomm.blocking import MPI

    await comm.Send([np.arange(2, dtype=np.int32), 3, MPI.INT], 1 - comm.rank)


def test_count_beyond_the_buffer_is_an_error():
    with pytest.raises(CommError, match=r"\[buffer, 3, type\] names 12 bytes; the buffer holds 8"):
        run_sim(_too_many, "star:2", 2)


# --- the command line ------------------------------------------------------------------------


def _cli(*args: str, stdin: str = "", cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "parcomm", *args], capture_output=True, text=True, input=stdin, cwd=cwd, timeout=120
    )


def test_cli_json_stays_alone_on_stdout_and_stdin_reaches_rank_0(tmp_path):
    prog = tmp_path / "echo.py"
    prog.write_text(
        "import sys\nfrom mpi4py import MPI\nline = sys.stdin.readline().strip()\n"
        "print(f'rank {MPI.COMM_WORLD.rank} read {line!r}')\n"
    )
    done = _cli("sim", "run", str(prog), "-n", "3", "--platform", "star:3", "--json", stdin="hello\n")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["summary"]["procs"] == 3
    assert "rank 0 read 'hello'" in done.stderr and "rank 1 read ''" in done.stderr
    plain = _cli("sim", "run", str(prog), "-n", "2", "--platform", "star:2", "--tag-output", stdin="x\n")
    assert plain.stdout.splitlines() == ["[0] rank 0 read 'x'", "[1] rank 1 read ''"]


def test_cli_script_mistakes_are_one_line(tmp_path):
    prog = tmp_path / "p.py"
    prog.write_text("from mpi4py import MPI\n")
    done = _cli("sim", "run", str(prog), "-n", "2", "--platform", "star:2", "--kwargs", '{"a": 1}')
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--kwargs is for MODULE:FUNCTION programs" in done.stderr
    missing = _cli("sim", "run", str(tmp_path / "nope.py"), "-n", "2", "--platform", "star:2")
    assert missing.returncode == 2 and "no such file" in missing.stderr
