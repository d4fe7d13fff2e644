"""PlogP (Kielmann, Bal & Verstoep 2000): LogP with o_s(m), o_r(m) and g(m)
measured per message size. A message takes g(m) + L from send to arrival
(its round trip is 2(L + g), seed 001 §2.3); consecutive sends are g(m) apart."""

from __future__ import annotations

from dataclasses import dataclass

from .base import Model
from .params import PlogPParams


@dataclass
class PlogP(Model):
    params: PlogPParams
    name = "plogp"

    @classmethod
    def from_params(cls, p: PlogPParams) -> PlogP:
        return cls(p)

    def msg(self, m: float) -> float:
        return self.params.g_at(m) + self.params.L

    def gap(self, m: float) -> float:
        return self.params.g_at(m)
