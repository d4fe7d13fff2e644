"""RFC 2861 window restart after idle (``tcp.cwnd_restart_after_idle``, Linux
tcp_cwnd_restart): off in the RFC transport (stack rfc, named here; the default
linux stack has it on, as net.ipv4.tcp_slow_start_after_idle = 1) and then bit-identical; on, a transfer
that follows more than one RTO of silence starts again from a small window,
while one that follows sooner keeps the window the first transfer opened."""

import pytest
from parcomm import platform as pp
from parcomm.comm import run_sim

SIZE = 1 << 20


def plat(restart=None):
    # 5 ms each way, so a transfer of SIZE takes several round trips and the
    # window, not the wire, sets its pace.
    tcp = {"initial_cwnd_segments": 3, "sndbuf_bytes": 4 << 20, "rcvbuf_bytes": 4 << 20}
    if restart is not None:
        tcp["cwnd_restart_after_idle"] = restart
    return pp.star(2, rate_bps=1e9, buffer="4MiB", propagation_s=0.005, tcp=pp.tcp_spec(stack="rfc", **tcp))


async def two_transfers(comm, pause_s):
    """Rank 0 sends SIZE bytes twice to rank 1, pausing in between; returns
    each transfer's time from its start to rank 1's one-byte reply."""
    out = []
    for _ in range(2):
        if comm.rank == 0:
            t0 = comm.wtime()
            await comm.send(None, dest=1, nbytes=SIZE)
            await comm.recv(source=1)
            out.append(comm.wtime() - t0)
            await comm.sleep(pause_s)
        else:
            await comm.recv(source=0)
            await comm.send(None, dest=0, nbytes=1)
    return out


def durations(restart, pause_s, seed=0):
    r = run_sim(two_transfers, plat(restart), 2, seed=seed, kwargs={"pause_s": pause_s})
    return r, r.results[0]


def test_off_by_default_and_false_is_the_same_run():
    assert pp.star(2, tcp={"stack": "rfc"})["hosts"][0]["tcp"]["cwnd_restart_after_idle"] is False
    assert pp.star(2)["hosts"][0]["tcp"]["cwnd_restart_after_idle"] is True  # the linux stack, the default
    a, _ = durations(None, 0.5)
    b, _ = durations(False, 0.5)
    assert (a.time, a.counters, a.events) == (b.time, b.counters, b.events)


def test_idle_longer_than_an_rto_restarts_the_window():
    _, (first_off, second_off) = durations(False, 0.5)
    _, (first_on, second_on) = durations(True, 0.5)
    assert first_on == first_off  # nothing was idle before the first transfer
    assert second_off < first_off  # the open window makes the second one faster ...
    assert second_on > second_off * 1.2  # ... unless it was reset after 0.5 s > RTO (200 ms)


def test_a_short_pause_keeps_the_window():
    # 50 ms of silence is below the RTO (200 ms minimum): no restart.
    a, (f1, s1) = durations(False, 0.05)
    b, (f2, s2) = durations(True, 0.05)
    assert (f1, s1) == (f2, s2)


def test_must_be_a_boolean():
    with pytest.raises(ValueError, match="cwnd_restart_after_idle"):
        pp.opteron_cluster(2, tcp={"cwnd_restart_after_idle": "sometimes"})
