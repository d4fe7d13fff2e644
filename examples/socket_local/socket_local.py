"""The same rank program on the simulator and on real TCP sockets.

`run_sim` runs four ranks on a simulated 1 GbE switch; `run_local` runs them
as four local processes connected by a full mesh of TCP connections over
127.0.0.1 (SocketComm). The program is unchanged and the results are the same
data. Wall-clock times vary from run to run, so only the simulated time is
printed; the real run's TCP counters show that `nbytes` means real bytes on
the wire (a symbolic payload is padded to its declared size).

A script that starts local ranks must do so under `if __name__ == "__main__":`
(each rank is a fresh process that imports this file).
"""

import hashlib

from parcomm.collectives import alltoall_b, bcast_scatter_allgather
from parcomm.comm import run_local, run_sim


async def exchange(comm, nbytes):
    # Alltoall by seed 001's algorithm B: small labels, each declared nbytes long.
    blocks = [f"{comm.rank}->{dst}" for dst in range(comm.size)]
    got = await alltoall_b(comm, blocks, nbytes=nbytes)
    # Broadcast 256 kB of real bytes from rank 0 (scatter + ring allgather).
    data = bytes(range(256)) * 1000 if comm.rank == 0 else None
    data = await bcast_scatter_allgather(comm, data, root=0)
    return got, hashlib.sha256(data).hexdigest()[:12]


if __name__ == "__main__":
    for nbytes in (1024, 256 * 1024):
        sim = run_sim(exchange, "star:4", seed=1, kwargs={"nbytes": nbytes})
        real = run_local(exchange, 4, kwargs={"nbytes": nbytes}, timeout=60)
        got, digest = real.results[3]
        sent = real.counters["hosts"]["bytes_sent"]
        print(f"alltoall blocks of {nbytes} B, then a 256000 B broadcast:")
        print(f"  simulated completion  {sim.time * 1e3:8.3f} ms")
        print(f"  same results on sockets as in the simulator: {real.results == sim.results}")
        print(f"  rank 3 received {got}, broadcast digest {digest}")
        print(f"  every rank put at least 3 x {nbytes} B on the wire: {all(b >= 3 * nbytes for b in sent)}")
