"""Tests of SimComm (parcomm.comm.sim): rank programs on the simulated platform.

Rank programs are ``async def prog(comm, ...)`` run by ``run_sim``; the
completion semantics are those of crates/parcomm-core/src/sim/mod.rs
("sent": the sender may reuse its buffer, "arrived": the message is at the
receiver with its receive overhead paid).
"""

from __future__ import annotations

import asyncio
import gc
import resource
import sys
import warnings

import pytest
from parcomm.comm import ANY_SOURCE, ANY_TAG, CommError, DeadlockError, Result, Status, run_sim
from parcomm.comm.sim import DEFAULT_EAGER_LIMIT
from parcomm.platform import star

GiB = 1 << 30


# --- point to point: payloads, sizes ---------------------------------------------------


async def _ping(comm, obj, nbytes=None, tag=0):
    if comm.rank == 0:
        await comm.send(obj, dest=1, tag=tag, nbytes=nbytes)
        return comm.wtime()
    st = Status()
    value = await comm.recv(source=0, tag=tag, status=st)
    return value, st, comm.wtime()


@pytest.mark.parametrize(
    "obj",
    [
        {"a": [1, 2, 3], "b": ("x", None)},
        b"\x00\x01binary\xff",
        "text",
        12345678901234567890,
        [bytearray(b"abc"), 2.5],
        None,
    ],
)
def test_send_recv_returns_payload(obj):
    res = run_sim(_ping, star(2), kwargs={"obj": obj, "tag": 7})
    assert isinstance(res, Result) and res.way == "sim"
    value, st, t_recv = res.results[1]
    assert value == obj
    assert (st.source, st.tag) == (0, 7)
    assert t_recv > 0.0
    assert res.time == max(res.finish_times) == pytest.approx(t_recv)


def test_status_nbytes_is_simulated_size_not_payload_size():
    res = run_sim(_ping, star(2), kwargs={"obj": "tiny", "nbytes": 50_000, "tag": 3})
    value, st, _ = res.results[1]
    assert value == "tiny"
    assert st.nbytes == 50_000
    # without nbytes the size is the buffer length of bytes-like payloads
    res = run_sim(_ping, star(2), kwargs={"obj": b"x" * 1234})
    assert res.results[1][1].nbytes == 1234


def test_message_time_depends_on_nbytes_not_payload():
    small = run_sim(_ping, star(2), kwargs={"obj": b"x", "nbytes": 100_000})
    big_payload = run_sim(_ping, star(2), kwargs={"obj": b"x" * 100_000, "nbytes": 100_000})
    tiny = run_sim(_ping, star(2), kwargs={"obj": b"x" * 100_000, "nbytes": 10})
    assert small.finish_times == big_payload.finish_times
    assert tiny.time < small.time / 10


def test_one_gib_simulated_message_takes_its_wire_time_without_allocating_it():
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    res = run_sim(_ping, star(2), kwargs={"obj": "tiny payload", "nbytes": GiB})
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    value, st, t = res.results[1]
    assert value == "tiny payload"
    assert st.nbytes == GiB
    ideal = GiB * 8 / 1e9  # star's links run at 1 Gbit/s
    # Ethernet framing adds ~5 % (38 B per 1460 B of payload plus TCP/IP headers)
    assert ideal <= t <= 1.15 * ideal
    if sys.platform.startswith("linux"):
        assert rss_after - rss_before < 256 * 1024, "a 1 GiB simulated message must not allocate 1 GiB"


# --- nonblocking operations ------------------------------------------------------------


def test_isend_irecv_waitall_and_request_state():
    async def prog(comm):
        if comm.rank == 0:
            reqs = [comm.isend(("msg", t), dest=1, tag=t, nbytes=1000 * t) for t in (1, 2, 3)]
            before = [r.test()[0] for r in reqs]
            values = await comm.waitall(reqs)
            return before, values, [r.done for r in reqs]
        # post in a different order from the sends: matching is by tag
        reqs = [comm.irecv(source=0, tag=t) for t in (3, 1, 2)]
        before = [r.test() for r in reqs]
        values = await comm.waitall(reqs)
        statuses = [(r.status.source, r.status.tag, r.status.nbytes) for r in reqs]
        return before, values, statuses, [r.test() for r in reqs]

    res = run_sim(prog, star(2))
    before, svalues, sdone = res.results[0]
    assert before == [False, False, False]
    assert svalues == [None, None, None]
    assert sdone == [True, True, True]
    rbefore, rvalues, statuses, after = res.results[1]
    assert rbefore == [(False, None)] * 3
    assert rvalues == [("msg", 3), ("msg", 1), ("msg", 2)]
    assert statuses == [(0, 3, 3000), (0, 1, 1000), (0, 2, 2000)]
    assert after == [(True, ("msg", 3)), (True, ("msg", 1)), (True, ("msg", 2))]


def test_wait_fills_status_and_waitall_of_nothing_returns_immediately():
    async def prog(comm):
        assert await comm.waitall([]) == []
        if comm.rank == 1:
            await comm.send("hello", dest=0, tag=42, nbytes=64)
            return None
        req = comm.irecv()
        st = Status()
        v = await req.wait(st)
        return v, st.Get_source(), st.Get_tag(), st.nbytes

    res = run_sim(prog, star(2))
    assert res.results[0] == ("hello", 1, 42, 64)


# --- matching --------------------------------------------------------------------------


def test_any_source_any_tag_matching_and_status_fields():
    async def prog(comm):
        if comm.rank == 0:
            got = []
            for _ in range(comm.size - 1):
                st = Status()
                v = await comm.recv(ANY_SOURCE, ANY_TAG, status=st)
                got.append((v, st.source, st.tag, st.nbytes))
            return got
        # stagger the senders so the arrival order is 3, 1, 2
        delay = {3: 1e-3, 1: 2e-3, 2: 3e-3}[comm.rank]
        await comm.compute(delay)
        await comm.send(f"from {comm.rank}", dest=0, tag=100 + comm.rank, nbytes=10 * comm.rank)
        return None

    res = run_sim(prog, star(4))
    assert res.results[0] == [
        ("from 3", 3, 103, 30),
        ("from 1", 1, 101, 10),
        ("from 2", 2, 102, 20),
    ]


def test_any_tag_with_fixed_source_and_fixed_tag_with_any_source():
    async def prog(comm):
        if comm.rank == 0:
            st1, st2 = Status(), Status()
            # only rank 2's message has tag 5; only rank 1 sends tag 6
            a = await comm.recv(ANY_SOURCE, 5, status=st1)
            b = await comm.recv(1, ANY_TAG, status=st2)
            return a, (st1.source, st1.tag), b, (st2.source, st2.tag)
        await comm.send(f"r{comm.rank}", dest=0, tag={1: 6, 2: 5}[comm.rank])
        return None

    res = run_sim(prog, star(3))
    assert res.results[0] == ("r2", (2, 5), "r1", (1, 6))


@pytest.mark.parametrize("late", [False, True])
def test_non_overtaking_same_source_and_tag(late):
    # A rendezvous message (above the eager limit) followed by an eager one
    # and a run of small ones: receives with the same (source, tag) must take
    # them in the order they were sent, whether posted early or late.
    async def prog(comm):
        if comm.rank == 0:
            await comm.send("big", dest=1, tag=4, nbytes=DEFAULT_EAGER_LIMIT * 4)
            await comm.send("small", dest=1, tag=4, nbytes=10)
            for i in range(10):
                await comm.send(i, dest=1, tag=4)
            return None
        if late:
            await comm.sleep(0.5)
        first = [await comm.recv(0, 4) for _ in range(2)]
        reqs = [comm.irecv(0, ANY_TAG) for _ in range(10)]
        return first, await comm.waitall(reqs)

    res = run_sim(prog, star(2))
    first, rest = res.results[1]
    assert first == ["big", "small"]
    assert rest == list(range(10))


# --- eager and rendezvous --------------------------------------------------------------


@pytest.mark.parametrize("nbytes", [0, 1, 1000, DEFAULT_EAGER_LIMIT, DEFAULT_EAGER_LIMIT + 1, 3 * DEFAULT_EAGER_LIMIT])
def test_eager_and_rendezvous_messages_deliver(nbytes):
    payload = ("payload", nbytes)
    res = run_sim(_ping, star(2), kwargs={"obj": payload, "nbytes": nbytes, "tag": 11})
    value, st, _ = res.results[1]
    assert value == payload
    assert (st.source, st.tag, st.nbytes) == (0, 11, nbytes)


async def _late_receiver(comm, nbytes, delay):
    if comm.rank == 0:
        await comm.send(("data", nbytes), dest=1, nbytes=nbytes)
        return comm.wtime()
    await comm.sleep(delay)
    posted = comm.wtime()
    value = await comm.recv(0)
    return posted, value, comm.wtime()


@pytest.mark.parametrize("eager_limit", [1000, DEFAULT_EAGER_LIMIT])
def test_rendezvous_send_completes_only_after_the_receive_is_posted(eager_limit):
    delay = 0.25
    eager = run_sim(_late_receiver, star(2), kwargs={"nbytes": eager_limit, "delay": delay}, eager_limit=eager_limit)
    rdv = run_sim(_late_receiver, star(2), kwargs={"nbytes": eager_limit + 1, "delay": delay}, eager_limit=eager_limit)

    # eager (size == limit): the send is buffered and completes long before the receive
    t_send = eager.results[0]
    posted, value, t_recv = eager.results[1]
    assert value == ("data", eager_limit)
    assert posted == pytest.approx(delay)
    assert t_send < delay / 100
    assert t_recv >= posted

    # rendezvous (size == limit + 1): the data leaves only after the clear-to-send
    t_send = rdv.results[0]
    posted, value, t_recv = rdv.results[1]
    assert value == ("data", eager_limit + 1)
    assert posted == pytest.approx(delay)
    assert t_send > posted
    assert t_recv > posted


def test_rendezvous_with_receive_posted_first():
    res = run_sim(_late_receiver, star(2), kwargs={"nbytes": 1 << 20, "delay": 0.0})
    posted, value, t_recv = res.results[1]
    assert value == ("data", 1 << 20)
    assert posted == 0.0
    assert t_recv >= (1 << 20) * 8 / 1e9


# --- compute and time ------------------------------------------------------------------


@pytest.mark.parametrize("seconds", [0.0, 1e-6, 0.0123456789, 3.5])
def test_compute_advances_simulated_time_exactly_on_an_idle_host(seconds):
    async def prog(comm):
        t0 = comm.wtime()
        await comm.compute(seconds)
        t1 = comm.wtime()
        await comm.compute(seconds)
        return t0, t1, comm.wtime()

    res = run_sim(prog, star(2))
    for t0, t1, t2 in res.results:
        assert t0 == 0.0
        assert t1 - t0 == pytest.approx(seconds, abs=1e-9)
        assert t2 - t1 == pytest.approx(seconds, abs=1e-9)
    assert res.finish_times == pytest.approx([2 * seconds] * 2, abs=1e-9)


def test_sleep_advances_time():
    async def prog(comm):
        await comm.sleep(0.5 * (comm.rank + 1))
        return comm.wtime()

    res = run_sim(prog, star(3))
    assert res.results == pytest.approx([0.5, 1.0, 1.5])
    assert res.time == pytest.approx(1.5)


# --- errors ----------------------------------------------------------------------------


def test_deadlock_raises_with_the_waiting_ranks_named():
    async def prog(comm):
        if comm.rank == 2:
            return "done"  # finishes: not part of the deadlock
        other = 1 - comm.rank
        await comm.recv(source=other, tag=5)
        await comm.send("never", dest=other, tag=5)

    with pytest.raises(DeadlockError) as ei:
        run_sim(prog, star(3))
    msg = str(ei.value)
    assert "deadlock" in msg
    assert "rank 0" in msg and "rank 1" in msg
    assert "rank 2" not in msg
    assert "recv from 1" in msg and "recv from 0" in msg
    assert isinstance(ei.value, CommError)


@pytest.mark.parametrize("dest", [2, 7, -1, "1", 1.0])
def test_bad_dest_raises_comm_error(dest):
    async def prog(comm):
        if comm.rank == 0:
            await comm.send("x", dest=dest)

    with pytest.raises(CommError) as ei:
        run_sim(prog, star(2))
    assert not isinstance(ei.value, DeadlockError)
    assert "dest" in str(ei.value) and repr(dest) in str(ei.value)


def test_bad_source_and_bad_send_tag_raise_comm_error():
    async def bad_source(comm):
        await comm.recv(source=5)

    async def bad_tag(comm):
        await comm.send("x", dest=1 - comm.rank, tag=-3)

    with pytest.raises(CommError, match="source=5"):
        run_sim(bad_source, star(2))
    with pytest.raises(CommError, match="tag"):
        run_sim(bad_tag, star(2))


def test_bad_recv_tag_raises_comm_error():
    async def prog(comm):
        if comm.rank == 0:
            await comm.recv(source=1, tag=-5)
        else:
            await comm.send("x", dest=0, tag=0)

    with pytest.raises(CommError) as ei:
        run_sim(prog, star(2))
    assert not isinstance(ei.value, DeadlockError)
    assert "tag" in str(ei.value)


def test_awaiting_something_foreign_raises_comm_error():
    async def prog(comm):
        await asyncio.sleep(0)

    with pytest.raises(CommError) as ei:
        run_sim(prog, star(2))
    msg = str(ei.value)
    assert "rank 0" in msg
    assert "may only await communicator methods" in msg


def test_exception_in_rank_program_is_reported_with_its_rank():
    async def prog(comm):
        if comm.rank == 2:
            await comm.compute(1e-3)
            raise KeyError("boom")
        return comm.rank

    with pytest.raises(CommError) as ei:
        run_sim(prog, star(4))
    msg = str(ei.value)
    assert "rank 2" in msg
    assert "KeyError" in msg and "boom" in msg
    assert isinstance(ei.value.__cause__, KeyError)


def test_failed_run_leaves_no_unawaited_coroutines():
    # the other ranks' coroutines must be closed, not left to warn "never awaited" at collection
    async def prog(comm):
        if comm.rank == 0:
            raise ValueError("first rank fails")
        await comm.recv(0)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        failed = False
        try:
            run_sim(prog, star(3))
        except CommError:
            failed = True  # the exception (and its traceback) must be freed before collecting
        gc.collect()
    assert failed
    assert [str(w.message) for w in caught if "never awaited" in str(w.message)] == []


def test_more_ranks_than_hosts_raises_comm_error():
    async def prog(comm):
        return None

    with pytest.raises(CommError) as ei:
        run_sim(prog, star(2), 3)
    assert "3" in str(ei.value) and "2" in str(ei.value)
    with pytest.raises(CommError):
        run_sim(prog, "star:2", 0)
    # fewer ranks than hosts is fine
    assert run_sim(prog, "star:4", 2).finish_times == [0.0, 0.0]


def test_time_limit_is_respected():
    async def prog(comm):
        await comm.sleep(10.0)
        return comm.wtime()

    with pytest.raises(CommError) as ei:
        run_sim(prog, star(2), time_limit=1.0)
    assert not isinstance(ei.value, DeadlockError)
    assert "time limit" in str(ei.value)
    assert run_sim(prog, star(2), time_limit=11.0).results == [10.0, 10.0]


def test_buffer_reuse_after_send_does_not_change_the_message():
    async def prog(comm):
        if comm.rank == 0:
            buf = [1]
            await comm.send(buf, dest=1, tag=0)
            buf.append(2)  # allowed in MPI once send() has returned
            await comm.send(None, dest=1, tag=9)
            return None
        await comm.recv(0, 9)
        return await comm.recv(0, 0)

    assert run_sim(prog, star(2)).results[1] == [1]
