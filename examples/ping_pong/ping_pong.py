"""Ping-pong between two ranks on a simulated 1 GbE switch.

The same rank program would run under MPI or sockets: it only awaits the
communicator. Payloads are real Python objects; the simulated size is given
separately, so the 1 MiB message below allocates nothing.
"""

from parcomm.comm import run_sim


async def ping_pong(comm, nbytes, rounds=10):
    peer = 1 - comm.rank
    start = comm.wtime()
    for i in range(rounds):
        if comm.rank == 0:
            await comm.send(("ping", i), dest=peer, nbytes=nbytes)
            reply = await comm.recv(source=peer)
        else:
            msg = await comm.recv(source=peer)
            await comm.send(("pong", msg[1]), dest=peer, nbytes=nbytes)
    if comm.rank == 0:
        return reply, (comm.wtime() - start) / rounds


for nbytes in (1, 1024, 65536, 1 << 20):
    res = run_sim(ping_pong, "star:2", seed=1, kwargs={"nbytes": nbytes})
    reply, rtt = res.results[0]
    print(f"{nbytes:>8} B  round trip {rtt * 1e6:10.1f} us  last reply {reply}")
