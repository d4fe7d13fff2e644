"""The analytic model of seed 002 §3.1 for the parallel stencil (heat equation).

Roles, from the text (checked before encoding): the 2D domain is divided
into **N x N** small squares (grid points, "N x N の正方サブ領域に分割した2次元領域")
and these are spread evenly over **M x M tasks** ("M x M 個のタスクに均等に割り当てる").
So N is the grid size and M the task grid: a task holds (N/M)^2 points and
sends 4N/M boundary values per step; with N = 330, M = 11 (§3.2) each of the
121 tasks holds 30 x 30 points. Table 3's limits (N -> inf gives M^2 F) and
the advice "enlarge N" confirm N is the problem size.

    per-task operations per step   C N^2 / M^2
    boundary values sent per step  4 N / M
    step time                      C N^2 / (F M^2) + 4 N / (B M)          (F: op/s, B: values/s)
    cluster performance            C N^2 / step = M^2 F / (1 + 4 F M / (C B N))

Table 3 (limits of the performance):  N -> inf: M^2 F;  F -> inf: C B N M / 4;
B -> inf: M^2 F;  C -> inf: M^2 F.

The paper's model has no per-message cost. :class:`StencilModel` adds an
optional fixed cost ``latency_s`` per boundary message (4 per step; 0 gives
the paper's formula exactly), fitted with B from ping-pong measurements by
:meth:`StencilModel.fit_comm`.

**Refined variant: shared segments** (:meth:`StencilModel.shared_segment`).
§3.1's B is "the network's bandwidth" seen by one task; §4 item 1 notes that
tasks on one Ethernet share it. On the seed-002 cluster all boundary messages
of a step leave at once, and every message that starts or ends on a segment
(one forwarded by the router uses both its segments) occupies that segment's
medium: the busiest segment must carry ``m_seg`` messages per step (50 for
121 tasks placed in host order on 16 segments of 8-9 hosts), one after the
other. A task's exchange ends when the busiest segment has carried them, so
the per-task bandwidth is the idle-segment bandwidth B (ping-pong) shared
``m_seg / 4`` ways:

    B_eff = 4 B / m_seg,   comm = 4 L + 4 (N/M) / B_eff = 4 L + m_seg (N/M) / B

with L the fixed cost per message (ping-pong intercept). With ``overlap``
(the solver updates its interior while messages fly, then the ring):

    step = max(C (N/M - 2)^2 / F, comm) + C (4 N/M - 4) / F

It predicts a *typical* step; the simulator's mean adds a stochastic tail
(CSMA/CD backoff, rare frames dropped after 16 collisions and the 1 s TCP
retransmission timeout) that no per-step formula carries.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

__all__ = ["StencilModel", "VALUE_BYTES", "implied_parameters"]

#: One boundary value: a float64 temperature.
VALUE_BYTES = 8


@dataclass(frozen=True)
class StencilModel:
    F: float  # operations per second of one host
    B: float  # boundary values per second a task's messages move
    C: float = 6.0  # operations per grid point and step
    latency_s: float = 0.0  # fixed cost per boundary message (0: the paper's model)
    overlap: bool = False  # interior computed while the messages fly (False: §3.1's sum)

    def __post_init__(self):
        for k in ("F", "B", "C"):
            if not getattr(self, k) > 0:
                raise ValueError(f"{k} must be positive, got {getattr(self, k)}")
        if self.latency_s < 0:
            raise ValueError(f"latency_s must be >= 0, got {self.latency_s}")

    def compute_time(self, N: float, M: float) -> float:
        return self.C * N * N / (self.F * M * M)

    def comm_time(self, N: float, M: float) -> float:
        msgs = 4 if M > 1 else 0
        return (4 * N / (self.B * M) if M > 1 else 0.0) + msgs * self.latency_s

    def step_time(self, N: float, M: float) -> float:
        """Seconds per step: C N^2/(F M^2) + 4N/(B M) (+ 4 latency); with
        ``overlap``, max(interior compute, communication) + the outer ring."""
        if self.overlap and M > 1:
            n = N / M
            interior = self.C * max(n - 2, 0.0) ** 2 / self.F
            ring = self.compute_time(N, M) - interior
            return max(interior, self.comm_time(N, M)) + ring
        return self.compute_time(N, M) + self.comm_time(N, M)

    @classmethod
    def shared_segment(
        cls, F: float, B_idle: float, latency_s: float, m_seg: float, C: float = 6.0, overlap: bool = True
    ) -> StencilModel:
        """The refined variant (module docstring): B_idle (values/s) and
        latency_s from a ping-pong on an idle segment, shared by the
        ``m_seg`` messages per step of the busiest segment: B = 4 B_idle / m_seg."""
        if not m_seg >= 4:
            raise ValueError(f"m_seg (messages per step on the busiest segment) must be >= 4, got {m_seg}")
        return cls(F=F, B=4.0 * B_idle / m_seg, C=C, latency_s=latency_s, overlap=overlap)

    def performance(self, N: float, M: float) -> float:
        """Operations per second of the whole cluster: C N^2 / step time
        (= M^2 F / (1 + 4FM/(CBN)) when latency_s = 0)."""
        return self.C * N * N / self.step_time(N, M)

    def time(self, N: float, M: float, steps: int) -> float:
        return steps * self.step_time(N, M)

    def comm_share(self, N: float, M: float) -> float:
        return self.comm_time(N, M) / self.step_time(N, M)

    def limits(self, N: float, M: float) -> dict[str, float]:
        """Table 3: the performance as one parameter grows without bound."""
        return {
            "N->inf": M * M * self.F,
            "F->inf": self.C * self.B * N * M / 4,
            "B->inf": M * M * self.F,
            "C->inf": M * M * self.F,
        }

    @staticmethod
    def fit_comm(sizes_bytes: Sequence[float], one_way_s: Sequence[float]) -> tuple[float, float]:
        """Least-squares line t(m) = L + m / (VALUE_BYTES·B) through one-way
        message times: returns (B in values/s, L in s)."""
        n = len(sizes_bytes)
        if n < 2:
            raise ValueError("need at least two message sizes to fit B and the latency")
        mx = sum(sizes_bytes) / n
        my = sum(one_way_s) / n
        sxx = sum((x - mx) ** 2 for x in sizes_bytes)
        if sxx == 0:
            raise ValueError("message sizes must differ")
        slope = sum((x - mx) * (y - my) for x, y in zip(sizes_bytes, one_way_s)) / sxx
        if slope <= 0:
            raise ValueError(f"measured times do not grow with size (slope {slope:g} s/B)")
        return 1.0 / (slope * VALUE_BYTES), max(0.0, my - slope * mx)

    def paper_form(self) -> StencilModel:
        """The same F, B, C without the per-message cost and overlap (§3.1 exactly)."""
        return replace(self, latency_s=0.0, overlap=False)

    @staticmethod
    def fit_F(points: float, steps: int, seconds: float, C: float = 6.0) -> float:
        """F (op/s) from a compute-only measurement: ``steps`` steps over
        ``points`` grid points took ``seconds``."""
        if not (points > 0 and steps > 0 and seconds > 0):
            raise ValueError("points, steps and seconds must be positive")
        return C * points * steps / seconds


def implied_parameters(M: int, points: Sequence[tuple[float, float]], C: float = 6.0) -> dict[str, float]:
    """F and B that make §3.1's formula pass through measured (N, performance)
    points: 1/P = 1/(M^2 F) + 4/(C B N M) is linear in 1/N, so two or more
    points fix F and B (least squares). Performance in op/s."""
    xs = [1.0 / n for n, _ in points]
    ys = [1.0 / p for _, p in points]
    k = len(xs)
    mx, my = sum(xs) / k, sum(ys) / k
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    icpt = my - slope * mx
    if icpt <= 0 or slope <= 0:
        return {"F": math.nan, "B": math.nan}
    return {"F": 1.0 / (M * M * icpt), "B": 4.0 / (C * M * slope)}
