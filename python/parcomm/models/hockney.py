"""Hockney (1994): a message costs alpha + beta·m, and a node does one thing at a time."""

from __future__ import annotations

from dataclasses import dataclass

from .base import Model
from .params import PlogPParams


@dataclass
class Hockney(Model):
    alpha: float
    beta: float
    name = "hockney"

    @classmethod
    def from_params(cls, p: PlogPParams) -> Hockney:
        # alpha: the one-way zero-byte latency RTT(0)/2 = L + g(0);
        # beta: the per-byte slope of g(m) over the two largest measured sizes.
        return cls(alpha=p.L + p.g_at(0), beta=large_message_slope(p))

    def msg(self, m: float) -> float:
        return self.alpha + self.beta * m

    def gap(self, m: float) -> float:
        return self.msg(m)


def large_message_slope(p: PlogPParams) -> float:
    if len(p.sizes) < 2:
        return 0.0
    (s0, s1), (g0, g1) = p.sizes[-2:], p.g[-2:]
    return max(0.0, (g1 - g0) / (s1 - s0))
