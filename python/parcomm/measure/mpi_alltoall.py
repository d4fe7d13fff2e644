"""Alltoall A and B of seed 001 (Figs. 6 and 7) and MPI_Alltoall, timed under MPI.

Run by mpiexec, one rank per host (``python -m parcomm.measure.mpi_alltoall
--sizes 1024,65536 --reps 2``). A and B are written with mpi4py's
point-to-point calls exactly as the figures (and :mod:`parcomm.collectives.
alltoall`) do; ``mpi`` is the library's own MPI_Alltoall, whichever algorithm
its selection picks. Per size and algorithm: one untimed call, then
``reps`` calls each after MPI_Barrier; a call's time is the latest rank's
(MPI_Allreduce MAX). Rank 0 prints one JSON line: {algo: {m: [s, ...]}}.
"""

from __future__ import annotations

import argparse
import json

ALGOS = ("A", "B", "mpi")
#: Bounds on what the command line may ask: sizes up to 64 MiB per pair, 1000 timed calls.
MAX_SIZE = 64 << 20
MAX_REPS = 1000
TAG = 7


def _a(comm, send: bytearray, recv: list[bytearray]) -> None:
    """Fig. 6: post every receive, send to each XOR partner in turn (blocking), wait for all."""
    from mpi4py import MPI

    r, p = comm.Get_rank(), comm.Get_size()
    reqs = [comm.Irecv([recv[i], MPI.BYTE], source=r ^ i, tag=TAG) for i in range(1, p)]
    for i in range(1, p):
        comm.Send([send, MPI.BYTE], dest=r ^ i, tag=TAG)
    MPI.Request.Waitall(reqs)


def _b(comm, send: bytearray, recv: list[bytearray]) -> None:
    """Fig. 7: per phase, receive from, send to and wait for one partner."""
    from mpi4py import MPI

    r, p = comm.Get_rank(), comm.Get_size()
    for i in range(1, p):
        req = comm.Irecv([recv[i], MPI.BYTE], source=r ^ i, tag=TAG)
        comm.Send([send, MPI.BYTE], dest=r ^ i, tag=TAG)
        req.Wait()


def _mpi(comm, sendall: bytearray, recvall: bytearray) -> None:
    from mpi4py import MPI

    comm.Alltoall([sendall, MPI.BYTE], [recvall, MPI.BYTE])


def time_calls(comm, algo: str, m: int, reps: int) -> list[float]:
    from mpi4py import MPI

    p = comm.Get_size()
    if algo == "mpi":
        bufs = (bytearray(m * p), bytearray(m * p))
        call = _mpi
    else:
        bufs = (bytearray(m), [bytearray(m) for _ in range(p)])
        call = _a if algo == "A" else _b
    call(comm, *bufs)
    out = []
    for _ in range(reps):
        comm.Barrier()
        t0 = MPI.Wtime()
        call(comm, *bufs)
        out.append(comm.allreduce(MPI.Wtime() - t0, op=MPI.MAX))
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", required=True, help="comma-separated bytes per rank pair")
    ap.add_argument("--reps", type=int, default=2, help="timed calls per size and algorithm")
    ap.add_argument("--algos", default="A,B", help=f"comma-separated, of {', '.join(ALGOS)}")
    a = ap.parse_args(argv)
    sizes = [int(s) for s in a.sizes.split(",") if s]
    algos = [x for x in a.algos.split(",") if x]
    if not sizes or any(not 0 <= m <= MAX_SIZE for m in sizes) or not 1 <= a.reps <= MAX_REPS:
        ap.error(f"--sizes 0..{MAX_SIZE} and --reps 1..{MAX_REPS}")
    if any(x not in ALGOS for x in algos):
        ap.error(f"--algos: of {', '.join(ALGOS)}")
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    p = comm.Get_size()
    if p & (p - 1) and any(x != "mpi" for x in algos):
        ap.error(f"A and B pair ranks by XOR: a power-of-two number of ranks, not {p}")
    out = {x: {str(m): time_calls(comm, x, m, a.reps) for m in sizes} for x in algos}
    if comm.Get_rank() == 0:
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
