"""LogP (Culler et al. 1993) and LogGP (Alexandrov et al. 1997).

LogP has no message size: every message costs o + L + o and a node sends at
most one every max(g, o). LogGP adds G per byte: an m-byte message costs
o + (m-1)G + L + o. Both are derived from the PlogP measurement: L, the
zero-byte overheads and gap, and G from the large-message slope of g(m).
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import Model
from .hockney import large_message_slope
from .params import PlogPParams


@dataclass
class LogP(Model):
    L: float
    o: float
    g: float
    name = "logp"

    @classmethod
    def from_params(cls, p: PlogPParams) -> LogP:
        return cls(L=p.L, o=(p.o_s_at(0) + p.o_r_at(0)) / 2, g=p.g_at(0))

    def msg(self, m: float) -> float:
        return 2 * self.o + self.L

    def gap(self, m: float) -> float:
        return max(self.g, self.o)


@dataclass
class LogGP(Model):
    L: float
    o: float
    g: float
    G: float
    name = "loggp"

    @classmethod
    def from_params(cls, p: PlogPParams) -> LogGP:
        return cls(L=p.L, o=(p.o_s_at(0) + p.o_r_at(0)) / 2, g=p.g_at(0), G=large_message_slope(p))

    def msg(self, m: float) -> float:
        return 2 * self.o + self.L + max(0.0, m - 1) * self.G

    def gap(self, m: float) -> float:
        return max(self.g, self.o) + max(0.0, m - 1) * self.G
