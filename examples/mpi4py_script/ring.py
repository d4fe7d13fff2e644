# An ordinary mpi4py program: nothing in it knows about parcomm.
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
left, right = (rank - 1) % size, (rank + 1) % size

token = comm.sendrecv(f"token of {rank}", dest=right, source=left)

if rank == size - 1:
    comm.Send([np.arange(3, dtype="i") * rank, MPI.INT], dest=0, tag=7)
if rank == 0:
    status = MPI.Status()
    comm.Probe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=status)
    block = np.empty(status.Get_count(MPI.INT), dtype="i")
    comm.Recv([block, MPI.INT], source=status.Get_source(), tag=status.Get_tag())

total = np.zeros(1, dtype="d")
comm.Allreduce(np.array([rank], dtype="d"), total, op=MPI.SUM)
if rank == 0:
    print(f"{size} ranks; rank 0 got {token!r} and {block.tolist()} from rank {status.Get_source()}")
    print(f"sum of ranks {total[0]:g}; MPI.Wtime() = {MPI.Wtime() * 1e6:.1f} us")
