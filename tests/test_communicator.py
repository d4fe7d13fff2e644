"""The one Communicator: mpi4py's surface (objects, numpy buffers, ops),
written once over point-to-point, gives identical results under the
simulator, `run_local` (SocketComm) and `mpiexec -n 4` (MPIComm); the MPI
results also match mpi4py's own collectives. Mistakes (a call not awaited,
a plain `def` program) are clear errors that name the user's line.

Rank programs live at module level so other processes can import them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from parcomm.collectives import ALGORITHMS
from parcomm.comm import (
    ANY_SOURCE,
    ANY_TAG,
    MPI,
    CommError,
    Communicator,
    MPIComm,
    SimComm,
    SocketComm,
    Status,
    run_local,
    run_mpi,
    run_sim,
)

ME = __name__
HERE = Path(__file__).resolve()


# --- rank programs ----------------------------------------------------------------------


async def api_suite(comm):
    """Every object collective (every algorithm), sendrecv and point-to-point
    with mpi4py's argument order; returns plain data."""
    r, p = comm.Get_rank(), comm.Get_size()
    out: dict = {}
    # point to point, mpi4py order: irecv(buf=None, source, tag)
    req = comm.irecv(None, (r - 1) % p, 7)
    await comm.send({"from": r}, dest=(r + 1) % p, tag=7)
    out["ring"] = await req.wait()
    st = Status()
    out["sendrecv"] = await comm.sendrecv(r * 10, dest=(r + 1) % p, sendtag=3, source=(r - 1) % p, recvtag=3, status=st)
    out["sendrecv_status"] = [st.Get_source(), st.Get_tag()]
    reqs = [comm.isend(r, dest=d, tag=11) for d in range(p) if d != r]
    got = await comm.waitall([comm.irecv(source=s, tag=11) for s in range(p) if s != r])
    await comm.waitall(reqs)
    out["isend_irecv"] = got
    for algo in ALGORITHMS["bcast"]:
        out[f"bcast_{algo}"] = await comm.bcast(
            {"root": 1, "v": list(range(5))} if r == 1 % p else None, root=1 % p, algorithm=algo
        )
    out["bcast_big"] = await comm.bcast(
        bytes(range(256)) * 100 if r == 0 else None, root=0, algorithm="scatter_allgather"
    )
    for name, op in (("sum", MPI.SUM), ("max", MPI.MAX), ("min", MPI.MIN), ("prod", MPI.PROD)):
        out[f"reduce_{name}"] = await comm.reduce(r + 2, op=op, root=p - 1)
    out["reduce_list"] = await comm.reduce([r], op=MPI.SUM, root=0)  # concatenation, in rank order
    for algo in ("recursive_doubling", "reduce_bcast"):
        out[f"allreduce_{algo}"] = await comm.allreduce(r + 1, op=MPI.SUM, algorithm=algo)
        out[f"allreduce_list_{algo}"] = await comm.allreduce([r], algorithm=algo)
    out["allreduce_maxloc"] = await comm.allreduce((r % 3, r), op=MPI.MAXLOC)
    for algo in ALGORITHMS["scatter"]:
        out[f"scatter_{algo}"] = await comm.scatter(
            [f"item{i}" for i in range(p)] if r == 0 else None, root=0, algorithm=algo
        )
    for algo in ALGORITHMS["gather"]:
        out[f"gather_{algo}"] = await comm.gather(r * r, root=p - 1, algorithm=algo)
    for algo in ALGORITHMS["allgather"]:
        if algo == "recursive_doubling" and p & (p - 1):
            continue
        out[f"allgather_{algo}"] = await comm.allgather((r, "x" * r), algorithm=algo)
    for algo in ALGORITHMS["alltoall"]:
        if algo in ("A", "B") and p & (p - 1):
            continue
        out[f"alltoall_{algo}"] = await comm.alltoall([f"{r}->{d}" for d in range(p)], algorithm=algo)
    out["alltoall_default"] = await comm.alltoall([r * 100 + d for d in range(p)])
    await comm.barrier()
    return out


async def buffer_suite(comm):
    """The uppercase buffer methods on numpy arrays."""
    r, p = comm.Get_rank(), comm.Get_size()
    out: dict = {}
    a = np.arange(5, dtype=np.int64) + 100 * r
    b = np.empty(5, dtype=np.int64)
    rreq = comm.Irecv(b, source=(r - 1) % p, tag=5)
    await comm.Send(a, dest=(r + 1) % p, tag=5)
    await rreq.wait()
    out["send_recv"] = b.tolist()
    c = np.empty(5, dtype=np.int64)
    await comm.Sendrecv(a, dest=(r + 1) % p, sendtag=6, recvbuf=c, source=(r - 1) % p, recvtag=6)
    out["sendrecv"] = c.tolist()
    for n in (4, 20000):  # binomial, then scatter + allgather on 8+ ranks
        buf = np.arange(n, dtype=np.int32) if r == 0 else np.zeros(n, dtype=np.int32)
        await comm.Bcast(buf, root=0)
        out[f"bcast_{n}"] = int(buf.sum())
    x = np.arange(6, dtype=np.int64) * (r + 1)
    red = np.zeros(6, dtype=np.int64)
    await comm.Reduce(x, red if r == 0 else None, op=MPI.SUM, root=0)
    out["reduce"] = red.tolist() if r == 0 else None
    for algo in ("recursive_doubling", "ring", "reduce_bcast"):
        y = np.zeros(6, dtype=np.int64)
        await comm.Allreduce(x, y, op=MPI.MAX, algorithm=algo)
        out[f"allreduce_{algo}"] = y.tolist()
    big = np.arange(4000, dtype=np.int64) + r  # 32 KB: the ring by default
    ybig = np.empty_like(big)
    await comm.Allreduce(big, ybig, op=MPI.SUM)
    out["allreduce_big"] = int(ybig.sum())
    g = np.empty(3 * p, dtype=np.float64)
    await comm.Allgather(np.full(3, r, dtype=np.float64), g)
    out["allgather"] = g.tolist()
    s = np.array([r * 10 + d for d in range(p)], dtype=np.int16)
    t = np.empty(p, dtype=np.int16)
    await comm.Alltoall(s, t)
    out["alltoall"] = t.tolist()
    sc = np.empty(2, dtype=np.int64)
    await comm.Scatter(np.arange(2 * p, dtype=np.int64) if r == 0 else None, sc, root=0)
    out["scatter"] = sc.tolist()
    ga = np.empty(2 * p, dtype=np.int64) if r == 1 % p else None
    await comm.Gather(sc, ga, root=1 % p)
    out["gather"] = ga.tolist() if r == 1 % p else None
    return out


async def mpi4py_reference(comm):
    """The same collectives by mpi4py itself, on the real MPI world."""
    from mpi4py import MPI as M

    w = M.COMM_WORLD
    r, p = w.Get_rank(), w.Get_size()
    out = {
        "bcast": w.bcast({"root": 1, "v": list(range(5))} if r == 1 else None, root=1),
        "reduce_sum": w.reduce(r + 2, op=M.SUM, root=p - 1),
        "reduce_max": w.reduce(r + 2, op=M.MAX, root=p - 1),
        "reduce_list": w.reduce([r], op=M.SUM, root=0),
        "allreduce": w.allreduce(r + 1, op=M.SUM),
        "allreduce_list": w.allreduce([r]),
        "scatter": w.scatter([f"item{i}" for i in range(p)] if r == 0 else None, root=0),
        "gather": w.gather(r * r, root=p - 1),
        "allgather": w.allgather((r, "x" * r)),
        "alltoall": w.alltoall([f"{r}->{d}" for d in range(p)]),
    }
    x = np.arange(6, dtype=np.int64) * (r + 1)
    y = np.zeros(6, dtype=np.int64)
    w.Allreduce(x, y, op=M.MAX)
    out["Allreduce_max"] = y.tolist()
    w.Barrier()
    return out


def _ours_as_reference(res: dict) -> dict:
    return {
        "bcast": res["bcast_binomial"],
        "reduce_sum": res["reduce_sum"],
        "reduce_max": res["reduce_max"],
        "reduce_list": res["reduce_list"],
        "allreduce": res["allreduce_recursive_doubling"],
        "allreduce_list": res["allreduce_list_recursive_doubling"],
        "scatter": res["scatter_binomial"],
        "gather": res["gather_binomial"],
        "allgather": res["allgather_ring"],
        "alltoall": res["alltoall_scattered"],
    }


def _expected_api(p: int) -> list[dict]:
    """What api_suite must return, computed serially."""
    outs = []
    for r in range(p):
        o = {
            "ring": {"from": (r - 1) % p},
            "sendrecv": ((r - 1) % p) * 10,
            "sendrecv_status": [(r - 1) % p, 3],
            "isend_irecv": [s for s in range(p) if s != r],
            "bcast_big": bytes(range(256)) * 100,
        }
        for algo in ALGORITHMS["bcast"]:
            o[f"bcast_{algo}"] = {"root": 1, "v": list(range(5))}
        vals = [i + 2 for i in range(p)]
        o["reduce_sum"] = sum(vals) if r == p - 1 else None
        o["reduce_max"] = max(vals) if r == p - 1 else None
        o["reduce_min"] = min(vals) if r == p - 1 else None
        o["reduce_prod"] = int(np.prod(vals)) if r == p - 1 else None
        o["reduce_list"] = list(range(p)) if r == 0 else None
        for algo in ("recursive_doubling", "reduce_bcast"):
            o[f"allreduce_{algo}"] = p * (p + 1) // 2
            o[f"allreduce_list_{algo}"] = list(range(p))
        o["allreduce_maxloc"] = max(((i % 3, i) for i in range(p)), key=lambda t: (t[0], -t[1]))
        for algo in ALGORITHMS["scatter"]:
            o[f"scatter_{algo}"] = f"item{r}"
        for algo in ALGORITHMS["gather"]:
            o[f"gather_{algo}"] = [i * i for i in range(p)] if r == p - 1 else None
        for algo in ALGORITHMS["allgather"]:
            if algo == "recursive_doubling" and p & (p - 1):
                continue
            o[f"allgather_{algo}"] = [(i, "x" * i) for i in range(p)]
        for algo in ALGORITHMS["alltoall"]:
            if algo in ("A", "B") and p & (p - 1):
                continue
            o[f"alltoall_{algo}"] = [f"{s}->{r}" for s in range(p)]
        o["alltoall_default"] = [s * 100 + r for s in range(p)]
        outs.append(o)
    return outs


def _expected_buffers(p: int) -> list[dict]:
    outs = []
    xs = [np.arange(6, dtype=np.int64) * (i + 1) for i in range(p)]
    for r in range(p):
        o = {
            "send_recv": (np.arange(5) + 100 * ((r - 1) % p)).tolist(),
            "sendrecv": (np.arange(5) + 100 * ((r - 1) % p)).tolist(),
            "bcast_4": 6,
            "bcast_20000": int(np.arange(20000, dtype=np.int32).sum()),
            "reduce": sum(xs).tolist() if r == 0 else None,
            "allreduce_big": int(sum((np.arange(4000) + i).sum() for i in range(p))),
            "allgather": [float(i) for i in range(p) for _ in range(3)],
            "alltoall": [s * 10 + r for s in range(p)],
            "scatter": [2 * r, 2 * r + 1],
            "gather": list(range(2 * p)) if r == 1 % p else None,
        }
        for algo in ("recursive_doubling", "ring", "reduce_bcast"):
            o[f"allreduce_{algo}"] = np.max(xs, axis=0).tolist()
        outs.append(o)
    return outs


# --- the same programs, every backend ----------------------------------------------------


@pytest.mark.parametrize("p", [1, 2, 3, 4, 5, 8])
def test_api_suite_under_the_simulator(p):
    res = run_sim(api_suite, f"star:{p}", seed=1)
    assert res.results == _expected_api(p)


@pytest.mark.parametrize("p", [1, 3, 4, 8, 9])
def test_buffer_suite_under_the_simulator(p):
    res = run_sim(buffer_suite, f"star:{p}", seed=1)
    assert res.results == _expected_buffers(p)


def test_api_and_buffers_identical_under_sim_and_local():
    sim_api = run_sim(api_suite, "star:4", seed=1).results
    sim_buf = run_sim(buffer_suite, "star:4", seed=1).results
    assert run_local(api_suite, 4, timeout=60).results == sim_api
    assert run_local(buffer_suite, 4, timeout=60).results == sim_buf


def test_api_and_buffers_identical_under_mpiexec(mpi):
    assert run_mpi(f"{ME}:api_suite", 4, timeout=60).results == _expected_api(4)
    assert run_mpi(f"{ME}:buffer_suite", 4, timeout=60).results == _expected_buffers(4)


def test_collectives_match_mpi4py_own(mpi):
    ref = run_mpi(f"{ME}:mpi4py_reference", 4, timeout=60).results
    ours = run_mpi(f"{ME}:api_suite", 4, timeout=60).results
    buf = run_mpi(f"{ME}:buffer_suite", 4, timeout=60).results
    for r in range(4):
        mine = _ours_as_reference(ours[r])
        mine["Allreduce_max"] = buf[r]["allreduce_recursive_doubling"]
        assert mine == ref[r], r


def test_every_backend_is_one_communicator():
    for cls in (SimComm, SocketComm, MPIComm):
        assert issubclass(cls, Communicator)
    for name in (
        "send",
        "recv",
        "isend",
        "irecv",
        "sendrecv",
        "bcast",
        "reduce",
        "allreduce",
        "scatter",
        "gather",
        "allgather",
        "alltoall",
        "barrier",
        "Send",
        "Recv",
        "Isend",
        "Irecv",
        "Bcast",
        "Reduce",
        "Allreduce",
        "Allgather",
        "Alltoall",
        "Get_rank",
        "Get_size",
    ):
        for cls in (SimComm, SocketComm, MPIComm):
            assert getattr(cls, name) is getattr(Communicator, name), (cls, name)


def test_collectives_by_name_are_functions():
    from parcomm.collectives import allreduce, bcast

    assert callable(bcast) and callable(allreduce)


# --- semantics ---------------------------------------------------------------------------


async def any_tag_never_takes_a_collective(comm):
    if comm.rank == 0:
        req = comm.irecv(source=1, tag=ANY_TAG)  # posted before rank 1's bcast arrives
        got = await comm.bcast(None, root=1)
        return [got, await req.wait()]
    got = await comm.bcast("from the collective", root=1)
    await comm.send("user message", dest=0, tag=4)
    return got


def test_any_tag_receive_does_not_match_a_collective_message():
    res = run_sim(any_tag_never_takes_a_collective, "star:2", seed=1)
    assert res.results[0] == ["from the collective", "user message"]


async def legacy_positional_recv(comm):
    if comm.rank == 0:
        await comm.send("a", 1, 4)
        await comm.send("b", 1, 5)
        return None
    st = Status()
    b = await comm.recv(0, 5, status=st)  # old form: recv(source, tag)
    a = await comm.irecv(0, ANY_TAG).wait()
    return [a, b, st.Get_tag()]


def test_an_int_where_mpi4py_has_buf_means_the_source():
    assert run_sim(legacy_positional_recv, "star:2").results[1] == ["a", "b", 5]


def test_unknown_algorithm_and_bad_op_are_clear_errors():
    async def prog(comm):
        await comm.allreduce(1, algorithm="bogus")

    with pytest.raises(CommError, match="unknown algorithm 'bogus'; choose one of recursive_doubling"):
        run_sim(prog, "star:2")

    async def prog2(comm):
        await comm.reduce(1, op="median")

    with pytest.raises(CommError, match="op must be one of MPI"):
        run_sim(prog2, "star:2")


def test_user_op_and_request_waitall():
    from parcomm.comm import Request

    async def prog(comm):
        op = MPI.Op.Create(lambda a, b: f"({a}{b})", commute=False)
        reqs = [comm.isend(comm.rank, dest=d) for d in range(comm.size)]
        got = await Request.waitall([comm.irecv(source=s) for s in range(comm.size)])
        await Request.waitall(reqs)
        return [await comm.allreduce(str(comm.rank), op=op), got]

    res = run_sim(prog, "star:5")
    for v in res.results:  # combined in rank order (grouped as the algorithm's tree goes)
        assert v[0].replace("(", "").replace(")", "") == "01234" and v[1] == [0, 1, 2, 3, 4]
    assert len({v[0] for v in res.results}) == 1


def test_buffer_truncation_is_an_error():
    async def prog(comm):
        if comm.rank == 0:
            await comm.Send(np.zeros(10), dest=1)
        else:
            await comm.Recv(np.zeros(5), source=0)

    with pytest.raises(CommError, match="message truncated: 80 bytes arrived for a buffer of 40 bytes"):
        run_sim(prog, "star:2")


# --- mistakes point at the user's line ---------------------------------------------------


def _line_of(text: str) -> int:
    for i, line in enumerate(HERE.read_text().splitlines(), 1):
        if text in line:
            return i
    raise AssertionError(text)


async def forgets_await(comm):
    if comm.rank == 0:
        comm.send("x", dest=1)  # MARK-forgot-send
        return "done"
    return await comm.recv(source=0)


async def forgets_await_on_wait(comm):
    if comm.rank == 0:
        req = comm.irecv(source=1)
        req.wait()  # MARK-forgot-wait
        await comm.send("y", dest=1)
        return None
    await comm.send("x", dest=0)
    return await comm.recv(source=0)


def test_a_call_without_await_is_an_error_naming_its_line():
    with pytest.raises(CommError) as ei:
        run_sim(forgets_await, "star:2")
    msg = str(ei.value)
    assert f"test_communicator.py:{_line_of('MARK-forgot-send')}: comm.send() was not awaited" in msg
    assert msg.startswith("rank 0: ")
    with pytest.raises(CommError) as ei:
        run_sim(forgets_await_on_wait, "star:2")
    assert f"test_communicator.py:{_line_of('MARK-forgot-wait')}: req.wait() was not awaited" in str(ei.value)


def test_a_call_without_await_is_an_error_under_run_local():
    with pytest.raises(CommError, match=r"test_communicator.py:\d+: comm.send\(\) was not awaited"):
        run_local(forgets_await, 2, timeout=20)


def plain_def_program(comm):
    return comm.rank


def test_a_plain_def_program_gets_a_message_saying_so():
    with pytest.raises(CommError) as ei:
        run_sim(plain_def_program, "star:2")
    msg = str(ei.value)
    assert "plain function" in msg and "async def plain_def_program(comm, ...)" in msg
    assert "'int' object" not in msg


async def raises_in_user_code(comm):
    if comm.rank == 1:
        return _helper_that_fails(comm.rank)
    return 0


def _helper_that_fails(r):
    return {}["missing"]  # MARK-keyerror


def test_an_exception_names_the_users_file_and_line():
    with pytest.raises(CommError) as ei:
        run_sim(raises_in_user_code, "star:2")
    msg = str(ei.value)
    assert msg.startswith("rank 1 raised KeyError: 'missing'")
    assert f"test_communicator.py:{_line_of('MARK-keyerror')} in _helper_that_fails" in msg
    assert "parcomm/comm" not in msg  # only the user's frames
    with pytest.raises(CommError) as ei:
        run_local(raises_in_user_code, 2, timeout=20)
    assert f"test_communicator.py:{_line_of('MARK-keyerror')} in _helper_that_fails" in str(ei.value)


# --- sub-communicators -------------------------------------------------------------------


async def split_suite(comm):
    r, p = comm.Get_rank(), comm.Get_size()
    out: dict = {}
    half = await comm.Split(color=r % 2, key=-r)  # reversed order inside each half
    out["half"] = [half.Get_rank(), half.Get_size()]
    out["half_allgather"] = await half.allgather(r)
    out["half_sum"] = await half.allreduce(r)
    # point to point inside the sub-communicator, ANY_SOURCE included
    st = Status()
    if half.size > 1:
        req = half.irecv(source=ANY_SOURCE, tag=3)
        await half.send(r, dest=(half.rank + 1) % half.size, tag=3)
        out["half_ring"] = [await req.wait(), st.Get_source()]
        st2 = Status()
        got = await half.sendrecv(
            r, dest=(half.rank + 1) % half.size, sendtag=4, source=(half.rank - 1) % half.size, recvtag=4, status=st2
        )
        out["half_status"] = [got, st2.Get_source()]
    dup = await comm.Dup()
    # the same tag on the world and the duplicate never mix
    req_w = comm.irecv(source=(r - 1) % p, tag=9)
    req_d = dup.irecv(source=(r - 1) % p, tag=9)
    await dup.send(("dup", r), dest=(r + 1) % p, tag=9)
    await comm.send(("world", r), dest=(r + 1) % p, tag=9)
    out["contexts"] = [await req_w.wait(), await req_d.wait()]
    none = await comm.Split(color=MPI.UNDEFINED if r == 0 else 1)
    out["undefined"] = none is None
    if none is not None:
        out["rest_bcast"] = await none.bcast("hi" if none.rank == 0 else None, root=0)
    buf = np.zeros(3, dtype=np.int64)
    await half.Allreduce(np.full(3, r, dtype=np.int64), buf)
    out["half_Allreduce"] = buf.tolist()
    await dup.barrier()
    return out


def _expected_split(p: int) -> list[dict]:
    outs = []
    for r in range(p):
        mates = sorted((x for x in range(p) if x % 2 == r % 2), key=lambda x: -x)
        me = mates.index(r)
        o = {
            "half": [me, len(mates)],
            "half_allgather": mates,
            "half_sum": sum(mates),
            "contexts": [("world", (r - 1) % p), ("dup", (r - 1) % p)],
            "undefined": r == 0,
            "half_Allreduce": [sum(mates)] * 3,
        }
        if len(mates) > 1:
            o["half_ring"] = [mates[(me - 1) % len(mates)], ANY_SOURCE]
            o["half_status"] = [mates[(me - 1) % len(mates)], (me - 1) % len(mates)]
        if r != 0:
            o["rest_bcast"] = "hi"
        outs.append(o)
    return outs


@pytest.mark.parametrize("p", [2, 3, 5])
def test_split_and_dup_under_the_simulator(p):
    assert run_sim(split_suite, f"star:{p}", seed=1).results == _expected_split(p)


def test_split_and_dup_identical_under_local_and_mpi(mpi):
    assert run_local(split_suite, 4, timeout=60).results == _expected_split(4)
    assert run_mpi(f"{ME}:split_suite", 4, timeout=60).results == _expected_split(4)


# --- one engine: the receiver-driven rendezvous over sockets too ---------------------------


async def large_exchanges(comm):
    """Messages above the eager limit, by algorithm A, B and pairwise (which post
    receives at different moments), plus a large ANY_TAG receive."""
    r, p = comm.rank, comm.size
    blocks = [bytes([r, d]) * 100_000 for d in range(p)]  # 200 kB each
    out = []
    for algo in ("A", "B", "pairwise"):
        got = await comm.alltoall(blocks, algorithm=algo)
        out.append([g[:2] for g in got])
    if r == 0:
        out.append((await comm.recv(source=1, tag=ANY_TAG))[:4])
    elif r == 1:
        await comm.send(b"big!" * 50_000, dest=0, tag=12)
    return out


@pytest.mark.parametrize("rendezvous", ["sender", "receiver"])
def test_large_messages_same_results_in_the_simulator_and_over_sockets(rendezvous):
    sim = run_sim(large_exchanges, "star:4", seed=1, rendezvous=rendezvous).results
    assert sim[0][-1] == b"big!" and sim[2][0] == [bytes([s, 2]) for s in range(4)]
    assert run_local(large_exchanges, 4, timeout=60, rendezvous=rendezvous).results == sim


def test_ranks_with_different_protocols_do_not_form_a_run():
    from parcomm.auth import JobKey
    from parcomm.comm.socket import SocketComm

    key = JobKey.generate()
    a = SocketComm(0, 2, [("127.0.0.1", 1), ("127.0.0.1", 2)], key=key, rendezvous="sender")
    b = SocketComm(1, 2, [("127.0.0.1", 1), ("127.0.0.1", 2)], key=key, rendezvous="receiver")
    assert a._token != b._token
    with pytest.raises(CommError, match="rendezvous must be"):
        SocketComm(0, 2, [("127.0.0.1", 1), ("127.0.0.1", 2)], key=key, rendezvous="eager")
