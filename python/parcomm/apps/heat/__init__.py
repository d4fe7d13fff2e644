"""The parallel 2D heat equation of seed 002 (Hironaka, PVM on 130 workstations).

* :mod:`.kernel`: the explicit 5-point step (blocked, allocation-free numpy),
  the stability limit r <= 1/4;
* :mod:`.decomposition`: N x N grid over M x M tasks (Fig. 2), task placement
  on the segments of the seed-002 platform;
* :mod:`.solver`: the rank program (non-blocking receives first, interior
  while messages fly, then the boundary) and its serial twin;
* :mod:`.bench`: the §5 ping-pong and concurrent-pairs benchmarks.

The model is :class:`parcomm.models.StencilModel`; the study ``parcomm repro
hironaka``; the command ``parcomm heat``.
"""

from .decomposition import PLACEMENTS, Decomposition, place, placement_stats, segment_groups
from .kernel import FLOPS_PER_POINT, STABILITY_LIMIT, HeatKernel, StabilityError
from .solver import heat_program, solve_serial, summarize

__all__ = [
    "FLOPS_PER_POINT",
    "PLACEMENTS",
    "STABILITY_LIMIT",
    "Decomposition",
    "HeatKernel",
    "StabilityError",
    "heat_program",
    "place",
    "placement_stats",
    "segment_groups",
    "solve_serial",
    "summarize",
]
