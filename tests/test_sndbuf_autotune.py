"""Send-buffer autotuning (``tcp.sndbuf_initial_bytes``, Linux 2.6 tcp_new_space):
off by default and then bit-identical; on, blocking sends stream to one
destination at a time, while concurrent (non-blocking) sends are unchanged
as long as congestion windows, not buffers, limit them."""

import pytest
from parcomm import platform as pp
from parcomm.collectives import alltoall_a
from parcomm.collectives.tags import ALLTOALL
from parcomm.comm import run_sim

P = 8


def plat(initial=None):
    tcp = {"sack": True}
    if initial is not None:
        tcp["sndbuf_initial_bytes"] = initial
    return pp.opteron_cluster(P, tcp=tcp)


def fullest_switch_port(r):
    ports = r.counters["ports"]
    return max(occ for name, occ in zip(ports["name"], ports["max_occupancy"]) if name.startswith("sw0"))


def run_a(platform, m, seed=0, program=alltoall_a):
    return run_sim(program, platform, P, seed=seed, kwargs={"nbytes": m}, rendezvous="receiver")


async def alltoall_isend(comm, nbytes):
    """Alltoall A with non-blocking sends: every message outstanding at once,
    so the sockets of all P-1 destinations are written concurrently."""
    r, p = comm.rank, comm.size
    reqs = [comm.irecv(source=r ^ i, tag=ALLTOALL) for i in range(1, p)]
    reqs += [comm.isend(None, dest=r ^ i, tag=ALLTOALL, nbytes=nbytes) for i in range(1, p)]
    await comm.waitall(reqs)


def test_off_by_default_and_zero_is_the_same_run():
    a, b = run_a(plat(), 32768), run_a(plat(0), 32768)
    assert pp.opteron_cluster(P)["hosts"][0]["tcp"]["sndbuf_initial_bytes"] == 0
    assert (a.time, a.counters, a.events) == (b.time, b.counters, b.events)


def test_blocking_sends_with_autotuning_pile_up_less_at_the_receivers():
    # Fig. 6's MPI_Send returns once the message is in the socket buffer. A
    # fixed 128 KiB buffer takes a 64 KiB message at once, so each rank has
    # all P-1 messages in flight together; a 16 KiB buffer (tcp_wmem[1])
    # holds the writer until the buffer has grown, so each rank streams
    # mostly to one destination at a time and the receivers' ports stay emptier.
    fixed, tuned = run_a(plat(), 65536), run_a(plat(16384), 65536)
    assert fullest_switch_port(tuned) * 3 < fullest_switch_port(fixed)
    assert tuned.host_totals()["timeouts"] == fixed.host_totals()["timeouts"] == 0


def test_concurrent_sends_are_window_limited_so_autotuning_changes_nothing():
    # With every message outstanding, each socket is fed as its ACKs free room
    # (a progress engine with no CPU cost); cwnd stays below the buffer, so
    # the 16 KiB start never limits and the run is the same.
    fixed, tuned = run_a(plat(), 131072, program=alltoall_isend), run_a(plat(16384), 131072, program=alltoall_isend)
    assert tuned.time == fixed.time
    assert fullest_switch_port(tuned) == fullest_switch_port(fixed)
    # ... and concurrent sends converge on the receivers far more than blocking ones.
    assert fullest_switch_port(fixed) > fullest_switch_port(run_a(plat(), 131072))


def test_autotuning_is_deterministic():
    a, b = run_a(plat(16384), 65536, seed=5), run_a(plat(16384), 65536, seed=5)
    assert (a.time, a.counters) == (b.time, b.counters)


@pytest.mark.parametrize("bad", [100, 200_000])
def test_initial_buffer_must_lie_between_one_segment_and_the_ceiling(bad):
    p = plat()
    p["hosts"][0]["tcp"]["sndbuf_initial_bytes"] = bad
    with pytest.raises(pp.PlatformError, match="hosts.h0.tcp.sndbuf_initial_bytes"):
        pp.validate(p)
    with pytest.raises(ValueError, match="sndbuf_initial_bytes"):
        run_sim(alltoall_a, p, P, kwargs={"nbytes": 16})
