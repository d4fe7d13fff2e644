"""The blocking half of benchmarks/blocking_overhead.py: an unmodified mpi4py
ping-pong (``parcomm sim run benchmarks/pingpong_mpi4py.py -n 2 -- 500``)."""

import sys

from mpi4py import MPI

comm = MPI.COMM_WORLD
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 500
rank = comm.Get_rank()
for i in range(rounds):
    if rank == 0:
        comm.send(i, dest=1, tag=0)
        comm.recv(source=1, tag=0)
    else:
        comm.recv(source=0, tag=0)
        comm.send(i, dest=0, tag=0)
