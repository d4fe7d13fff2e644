"""The interface every point-to-point model implements, and the collective
formulas built on it.

A model gives two primitives: ``msg(m)``, the time for one isolated m-byte
message from the start of its send to its arrival, and ``gap(m)``, the
minimum time between two consecutive sends of one node. The collectives
that exist as rank programs (:mod:`parcomm.collectives`) compose them:

* Alltoall A (seed 001 Fig. 6): P-1 sends pipelined, then the last arrives:
  ``(P-2)·gap(m) + msg(m)`` — eq. 5 for PlogP, ``(P-1)g(m) + L``.
* Alltoall B (Fig. 7): one partner per phase: ``(P-1)·msg(m)`` — eq. 7.
* Binomial broadcast: ``ceil(log2 P)·msg(m)`` on the critical path.
* Scatter + ring allgather: ``sum_j msg(m/2^j)`` for the binomial scatter,
  then ``(P-1)·msg(m/P)`` for the ring.
* Dissemination barrier: ``ceil(log2 P)·msg(0)``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

COLLECTIVES = ("alltoall_a", "alltoall_b", "bcast_binomial", "bcast_scatter_allgather", "barrier")
ALIASES = {
    "A": "alltoall_a",
    "B": "alltoall_b",
    "binomial": "bcast_binomial",
    "scatter_allgather": "bcast_scatter_allgather",
}


def canonical(collective: str) -> str:
    name = ALIASES.get(collective, collective)
    if name not in COLLECTIVES:
        raise ValueError(f"unknown collective or algorithm {collective!r}; known: {', '.join(COLLECTIVES)}")
    return name


def check_procs(collective: str, procs: int) -> None:
    if not isinstance(procs, int) or procs < 1:
        raise ValueError(f"procs must be a positive integer, got {procs!r}")
    if collective.startswith("alltoall") and procs & (procs - 1):
        raise ValueError(f"{collective} pairs ranks by XOR and needs a power-of-two number of processes, got {procs}")


class Model(ABC):
    name = "model"

    @abstractmethod
    def msg(self, m: float) -> float:
        """Send start to arrival of one isolated m-byte message."""

    @abstractmethod
    def gap(self, m: float) -> float:
        """Minimum interval between consecutive m-byte sends of one node."""

    def alltoall_a(self, p: int, m: float) -> float:
        return 0.0 if p < 2 else (p - 2) * self.gap(m) + self.msg(m)

    def alltoall_b(self, p: int, m: float) -> float:
        return (p - 1) * self.msg(m)

    def bcast_binomial(self, p: int, m: float) -> float:
        return math.ceil(math.log2(p)) * self.msg(m) if p > 1 else 0.0

    def bcast_scatter_allgather(self, p: int, m: float) -> float:
        if p < 2:
            return 0.0
        rounds = math.ceil(math.log2(p))
        scatter = sum(self.msg(m / 2**j) for j in range(1, rounds + 1))
        return scatter + (p - 1) * self.msg(m / p)

    def barrier(self, p: int, m: float = 0) -> float:
        return math.ceil(math.log2(p)) * self.msg(0) if p > 1 else 0.0

    def predict(self, collective: str, procs: int, nbytes: float) -> float:
        """Predicted completion time (s) of ``collective`` on ``procs`` ranks."""
        name = canonical(collective)
        check_procs(name, procs)
        if nbytes < 0:
            raise ValueError(f"nbytes must be >= 0, got {nbytes}")
        return getattr(self, name)(procs, nbytes)
