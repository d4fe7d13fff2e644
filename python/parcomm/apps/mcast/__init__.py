"""Reliable multicast with repair routers (seed 003, Shimokuni, Koga & Jinzaki).

* :mod:`.tree` — multicast trees as data (JSON/TOML), validation and builders;
  the one format shared by the model, the optimizer and the simulator.
* :mod:`.placement` — where to put k repair routers (or a buffer budget) to
  minimize the mean delay, and the delay/buffer trade-off curve.
* :mod:`parcomm.models.multicast` — the analytic model (expected delay and
  retransmission buffers) the optimizer uses.
* ``.sim`` — the packet-level simulator (Comet RM and repair routers), when
  built; imported lazily by ``parcomm mcast sim`` and the study.
"""

from ...platform.mcast_tree import (
    Tree,
    TreeError,
    binary_tree,
    branching,
    load,
    path_tree,
    to_dict,
    validate,
    wan_tree,
    with_repair,
)

__all__ = [
    "Tree",
    "TreeError",
    "binary_tree",
    "branching",
    "load",
    "path_tree",
    "to_dict",
    "validate",
    "wan_tree",
    "with_repair",
]
