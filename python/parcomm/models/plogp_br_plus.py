"""PlogP-BR+ (parcomm, beyond seed 001): PlogP-BR with a measured RTO term.

Eq. 1 of seed 001 charges one T_RTO whenever the n-1 overlapping phases
*could* pile more than q bytes on a port, else none. Whether they do depends
on how far the phases overlap, which eq. 1 does not see (the paper's first
mismatch, §4.3), and a call that does overflow a port may wait for several
RTOs in a row (back-off doubles each). PlogP-BR+ keeps everything else of
PlogP-BR (g(m, C), L, eq. 4 and 8) and replaces E_q(m, n)·T_RTO by

    W(pattern, P, m) · T_RTO,

where W is the expected number of RTO waits on a call's critical path (a
real number: 0.5 = half of the calls wait one T_RTO; 3 = one wait of
T_RTO and one of 2·T_RTO), measured on the target by the RTO probe
(:mod:`parcomm.measure.rto_probe`) at a few message sizes, for the target's
P, port buffer and RTO minimum, as g(m, C) is. Between probe sizes W is
linear in m; outside them it is the nearest probe's value.

The probe ran at one P (the parameter file's ``procs``), so PlogP-BR+
predicts the Alltoalls only at that P. Other collectives are PlogP-BR's.
"""

from __future__ import annotations

from dataclasses import dataclass

from .params import PlogPParams
from .plogp_br import PlogPBR


@dataclass
class PlogPBRPlus(PlogPBR):
    name = "plogp-br+"

    @classmethod
    def from_params(cls, p: PlogPParams) -> PlogPBRPlus:
        return cls(p)

    def rto_waits(self, pattern: str, p: int, m: float) -> float:
        if p != self.params.procs:
            raise ValueError(
                f"PlogP-BR+ predicts Alltoall only at the P its RTO probe ran at "
                f"({self.params.procs}), not at {p}; measure the parameters at P = {p}"
            )
        return self.params.rto_waits_at(pattern, m)

    def alltoall_a(self, p: int, m: float) -> float:
        if p < 2:
            return 0.0
        return self.alltoall_a_no_rto(p, m) + self.rto_waits("alltoall_a", p, m) * self.params.rto_s

    def alltoall_b(self, p: int, m: float) -> float:
        if p < 2:
            return 0.0
        return self.alltoall_b_no_rto(p, m) + self.rto_waits("alltoall_b", p, m) * self.params.rto_s
