"""Your own rank program, run four ways: simulated, local TCP processes, MPI,
and (from the command line) one rank per machine.

The program is plain mpi4py style (`comm.Get_rank()`, `comm.allreduce(x,
op=MPI.SUM)`, `comm.Bcast(array)`), except that communicator calls are
awaited. From the command line:

    parcomm sim run examples/user_program/user_program.py:main --platform star:4 --kwargs '{"n": 1000}'
    parcomm run local examples/user_program/user_program.py:main --procs 4 --kwargs '{"n": 1000}'
    parcomm run mpi examples/user_program/user_program.py:main --procs 4 --kwargs '{"n": 1000}'
    parcomm run socket examples/user_program/user_program.py:main --rank R --addresses hosts.txt --key-file job.key

Every way prints the same table (--json: the same document). A script that
calls run_local or run_mpi itself must do so under the `__main__` guard
below: the ranks import this file.
"""

import numpy as np
from parcomm.comm import MPI, run_local, run_mpi, run_sim


async def main(comm, n=1000):
    rank, size = comm.Get_rank(), comm.Get_size()
    # rank 0 makes the data and broadcasts it (a numpy buffer, in place)
    data = np.arange(n, dtype=np.float64) if rank == 0 else np.empty(n, dtype=np.float64)
    await comm.Bcast(data, root=0)
    # each rank sums its share; the shares are combined everywhere
    mine = float(data[rank::size].sum())
    total = await comm.allreduce(mine, op=MPI.SUM)
    # objects too: who has the largest share, and everyone's share at rank 0
    largest = await comm.allreduce((mine, rank), op=MPI.MAXLOC)
    shares = await comm.gather(mine, root=0)
    return {"total": total, "largest_share_rank": largest[1], "shares": shares}


if __name__ == "__main__":
    sim = run_sim(main, "star:4", seed=1, kwargs={"n": 1000})
    print(f"simulated on star:4: {sim.time * 1e6:.1f} us")
    for r, v in enumerate(sim.results):
        print(f"  rank {r}: {v}")
    local = run_local(main, 4, kwargs={"n": 1000}, timeout=60)
    print("run_local, 4 processes over TCP: same results:", local.results == sim.results)
    mpi = run_mpi(main, 4, kwargs={"n": 1000}, timeout=60)
    print("run_mpi, mpiexec -n 4: same results:", mpi.results == sim.results)
