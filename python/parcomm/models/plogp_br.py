"""PlogP-BR (seed 001 §3): PlogP with per-pattern gaps and the RTO penalty.

* g(m, C) per communication pattern C (eq. 3), measured by
  :mod:`parcomm.measure`; the patterns of Alltoall phase k are
  ``xor{k}`` (every rank r with r XOR k).
* E_q(m, n) (eq. 1): 0 with flow control; otherwise 1 when the switch queue
  q is shorter than the bytes (n-1)·m that n overlapping phases can pile up
  at one port, else 0. At q = (n-1)·m exactly there is no penalty.
* T_BR = sum_k g(m, C_k) + L + E_q(m, n)·T_RTO (eq. 2, 4).

Alltoall A is eq. 4 with n = P-1 overlapping phases. Eq. 6 as printed puts
L inside the sum, which would make A and B equal when E_q = 0 and contradict
ineq. 11; we follow eq. 4 (one L, as in eq. 5 for PlogP). Alltoall B is
eq. 8-9: every phase pays g(m, C_k) + L and E_q(m, 1) = 0. The broadcasts
and the barrier never have two phases converge on one receiver, so PlogP-BR
predicts them as PlogP does.
"""

from __future__ import annotations

from dataclasses import dataclass

from .params import PlogPParams
from .plogp import PlogP


def rto_penalty_count(m: float, n: int, queue_bytes: float | None, flow_control: bool) -> int:
    """E_q(m, n) of eq. 1."""
    if flow_control:
        return 0
    if queue_bytes is None:
        raise ValueError("PlogP-BR needs the switch queue length q (queue_bytes) unless the switch has flow control")
    return 1 if queue_bytes < (n - 1) * m else 0


def xor_pattern(k: int) -> str:
    return f"xor{k}"


@dataclass
class PlogPBR(PlogP):
    name = "plogp-br"

    @classmethod
    def from_params(cls, p: PlogPParams) -> PlogPBR:
        return cls(p)

    def e_q(self, m: float, n: int) -> int:
        return rto_penalty_count(m, n, self.params.queue_bytes, self.params.flow_control)

    def alltoall_a_no_rto(self, p: int, m: float) -> float:
        """Eq. 4 without its RTO term: sum_k g(m, C_k) + L."""
        if p < 2:
            return 0.0
        return sum(self.params.g_pattern_at(xor_pattern(k), m) for k in range(1, p)) + self.params.L

    def alltoall_b_no_rto(self, p: int, m: float) -> float:
        """Eq. 8 without its RTO term (E_q(m, 1) = 0 anyway): sum_k (g(m, C_k) + L)."""
        return sum(self.params.g_pattern_at(xor_pattern(k), m) + self.params.L for k in range(1, p))

    def alltoall_a(self, p: int, m: float) -> float:
        return 0.0 if p < 2 else self.alltoall_a_no_rto(p, m) + self.e_q(m, p - 1) * self.params.rto_s

    def alltoall_b(self, p: int, m: float) -> float:
        return self.alltoall_b_no_rto(p, m)
