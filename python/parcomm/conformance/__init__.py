"""The conformance suite: the simulator held to real Linux TCP, scenario by scenario.

A matrix of scenarios (``matrix.toml``: platform, workload, TCP settings,
repeats) runs in the emulation (the referee: the kernel's own TCP in
network namespaces) and in the simulator under one or more TCP profiles;
each scenario gets its completion time and loss-recovery counters from both
sides in the same units, and the suite its error statistics.
``parcomm conformance`` is the command; ``docs/conformance.md`` the guide.
"""

from .matrix import DEFAULT_MATRIX, MatrixError, Scenario, load_matrix, parse_matrix
from .profiles import PROFILES, profile_overrides
from .runner import METRICS, ScenarioResult, run_scenarios
from .summary import NOISE_LIMIT, summarize

__all__ = [
    "DEFAULT_MATRIX",
    "MatrixError",
    "Scenario",
    "load_matrix",
    "parse_matrix",
    "PROFILES",
    "profile_overrides",
    "METRICS",
    "ScenarioResult",
    "run_scenarios",
    "NOISE_LIMIT",
    "summarize",
]
