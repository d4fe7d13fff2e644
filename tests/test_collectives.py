"""Tests of parcomm.collectives run under SimComm: correctness of every
algorithm and the simulated time of a binomial broadcast."""

from __future__ import annotations

import math
import os
import random

import pytest
from parcomm.collectives import (
    ALLTOALL_ALGORITHMS,
    BCAST_ALGORITHMS,
    alltoall_a,
    alltoall_b,
    barrier,
    bcast_binomial,
    bcast_scatter_allgather,
    gather_linear,
)
from parcomm.comm import CommError, DeadlockError, run_sim
from parcomm.platform import star

# --- alltoall --------------------------------------------------------------------------


@pytest.mark.parametrize("algo", [alltoall_a, alltoall_b])
@pytest.mark.parametrize("p", [1, 2, 4, 8])
def test_alltoall_delivers_every_block_to_the_right_rank(algo, p):
    async def prog(comm):
        blocks = [(comm.rank, dst) for dst in range(comm.size)]
        return await algo(comm, blocks)

    res = run_sim(prog, star(p))
    for dst in range(p):
        assert res.results[dst] == [(src, dst) for src in range(p)]


@pytest.mark.parametrize("algo", ["A", "B"])
def test_alltoall_with_rendezvous_sized_blocks(algo):
    async def prog(comm):
        blocks = [f"{comm.rank}->{d}" for d in range(comm.size)]
        return await ALLTOALL_ALGORITHMS[algo](comm, blocks, nbytes=200 * 1024)

    res = run_sim(prog, star(4))
    assert res.results == [[f"{s}->{d}" for s in range(4)] for d in range(4)]
    assert res.host_totals()["bytes_sent"] >= 12 * 200 * 1024


class _FakeComm:
    def __init__(self, size, rank=0):
        self.size, self.rank = size, rank


@pytest.mark.parametrize("algo", [alltoall_a, alltoall_b])
@pytest.mark.parametrize("p", [3, 5, 6, 12])
def test_alltoall_non_power_of_two_raises_value_error(algo, p):
    coro = algo(_FakeComm(p), [None] * p)
    with pytest.raises(ValueError, match=f"power-of-two size, got {p}"):
        coro.send(None)

    async def prog(comm):
        return await algo(comm, [None] * comm.size)

    with pytest.raises(CommError) as ei:  # run_sim reports it with the rank
        run_sim(prog, star(p))
    assert isinstance(ei.value.__cause__, ValueError)
    assert "power-of-two" in str(ei.value)


def test_alltoall_wrong_block_count_raises_value_error():
    coro = alltoall_b(_FakeComm(4), [1, 2, 3])
    with pytest.raises(ValueError, match="one block per rank"):
        coro.send(None)


# --- broadcast -------------------------------------------------------------------------


def _bcast_case(p, root, n):
    data = random.Random(f"{p}-{root}-{n}").randbytes(n)

    async def prog(comm, algo):
        return await BCAST_ALGORITHMS[algo](comm, data if comm.rank == root else None, root=root)

    return data, prog


@pytest.mark.parametrize("algo", ["binomial", "scatter_allgather"])
@pytest.mark.parametrize("p", [1, 2, 3, 4, 5, 6, 8])
def test_bcast_delivers_real_bytes(algo, p):
    roots = sorted({0, 1 % p, p // 2, p - 1})
    sizes = [0, 1, p - 1, p + 1, 1000, 4097, 200_003]  # several not divisible by p, some smaller than p
    for root in roots:
        for n in sizes:
            data, prog = _bcast_case(p, root, n)
            res = run_sim(prog, star(p), kwargs={"algo": algo})
            assert res.results == [data] * p, (algo, p, root, n)


@pytest.mark.parametrize("p", [3, 5, 6])
def test_bcast_scatter_allgather_with_nbytes_known(p):
    data = os.urandom(10 * p + 3)

    async def prog(comm):
        return await bcast_scatter_allgather(comm, data if comm.rank == 1 else None, root=1, nbytes=len(data))

    assert run_sim(prog, star(p)).results == [data] * p


def test_bcast_scatter_allgather_spreads_the_load_of_large_messages():
    m = 1 << 20

    async def prog(comm, algo):
        await BCAST_ALGORITHMS[algo](comm, None, root=0, nbytes=m)

    per_host = {a: run_sim(prog, star(8), kwargs={"algo": a}).counters["hosts"]["bytes_sent"] for a in BCAST_ALGORITHMS}
    # binomial: the root sends the whole message log2(8) = 3 times
    assert max(per_host["binomial"]) == per_host["binomial"][0]
    assert 3 * m <= per_host["binomial"][0] < 3.2 * m
    # scatter + ring allgather: no rank sends more than ~ m/2 + m/4 + m/8 + 7m/8 = 1.75 m
    assert max(per_host["scatter_allgather"]) < 1.9 * m
    assert min(per_host["scatter_allgather"]) >= 7 * m / 8


@pytest.mark.parametrize("algo", ["binomial", "scatter_allgather"])
def test_bcast_root_out_of_range_is_an_error(algo):
    async def prog(comm):
        return await BCAST_ALGORITHMS[algo](comm, b"data" if comm.rank == 0 else None, root=comm.size)

    with pytest.raises((CommError, ValueError)) as ei:
        run_sim(prog, star(4))
    assert not isinstance(ei.value, DeadlockError)
    assert "root" in str(ei.value)


def _hop_chain(hops):
    async def prog(comm):
        if comm.rank > 0:
            await comm.recv(comm.rank - 1)
        if comm.rank < hops:
            await comm.send(b"x", comm.rank + 1)

    return prog


async def _bcast1(comm):
    return await bcast_binomial(comm, b"x" if comm.rank == 0 else None)


async def _single_send(comm):
    if comm.rank == 0:
        await comm.send(b"x", 1)
    elif comm.rank == 1:
        await comm.recv(0)


def test_binomial_bcast_of_one_byte_takes_about_log2_p_message_latencies():
    p = 8
    # The RFC transport (quick ACKs) on an ideal wire: the tree's latency structure alone.
    bc = run_sim(_bcast1, "star:8,stack=rfc,noise=ideal")
    assert bc.results == [b"x"] * p
    # The latency of a message that a rank forwards as soon as it arrives (as
    # every inner node of the tree does) includes the TCP ACK the forwarding
    # rank puts on its NIC just before: measure that hop in a relay chain.
    chain = run_sim(_hop_chain(3), "star:8,stack=rfc,noise=ideal", 4)
    hop = chain.time / 3
    ratio = bc.time / hop
    assert 2.5 <= ratio <= 3.5, ratio
    assert math.log2(p) == 3
    # Against a single bare send the ratio is ~3.74 on this platform (the two
    # forwarding hops also wait for an ACK serialization); still below 4 levels.
    single = run_sim(_single_send, "star:8,stack=rfc,noise=ideal", 2)
    assert 3.0 <= bc.time / single.time < 4.0


def test_binomial_bcast_of_one_byte_with_delayed_acks_is_three_single_send_latencies():
    # With delayed ACKs nothing sits in front of a forwarded message: each
    # tree level costs exactly one single-send latency.
    plat = star(8, tcp={"stack": "rfc", "delayed_ack": True}, timing_noise_s=0)
    bc = run_sim(_bcast1, plat)
    single = run_sim(_single_send, plat, 2)
    assert bc.results == [b"x"] * 8
    assert 2.5 <= bc.time / single.time <= 3.5


# --- barrier and gather ----------------------------------------------------------------


@pytest.mark.parametrize("p", [1, 2, 3, 5, 8])
def test_barrier_no_rank_leaves_before_the_last_arrives(p):
    async def prog(comm):
        # distinct arrival times, not in rank order: rank 1 arrives last (r*(p-1) = -r mod p)
        await comm.compute(1e-3 * ((comm.rank * (p - 1)) % p + 1))
        arrival = comm.wtime()
        await barrier(comm)
        return arrival, comm.wtime()

    res = run_sim(prog, star(p))
    arrivals = [a for a, _ in res.results]
    assert len(set(arrivals)) == p
    last = max(arrivals)
    for arrival, left in res.results:
        assert left >= last
    assert min(res.finish_times) >= last


def test_comm_barrier_method_synchronizes():
    async def prog(comm):
        await comm.sleep(0.1 * comm.rank)
        await comm.barrier()
        return comm.wtime()

    res = run_sim(prog, star(4))
    assert min(res.results) >= 0.3


@pytest.mark.parametrize("p,root", [(1, 0), (2, 1), (5, 0), (5, 3), (8, 7)])
def test_gather_linear_collects_all_blocks(p, root):
    async def prog(comm):
        return await gather_linear(comm, ("block", comm.rank), root=root)

    res = run_sim(prog, star(p))
    assert res.results[root] == [("block", r) for r in range(p)]
    assert all(res.results[r] is None for r in range(p) if r != root)


def test_gather_linear_symbolic_large_blocks():
    async def prog(comm):
        return await gather_linear(comm, comm.rank, root=0, nbytes=256 * 1024)

    res = run_sim(prog, star(4))
    assert res.results[0] == [0, 1, 2, 3]
    assert res.time >= 3 * 256 * 1024 * 8 / 1e9  # all of it crosses the root's link
