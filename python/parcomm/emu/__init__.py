"""The emulated cluster: real Linux TCP in network namespaces, shaped with tc.

One namespace per host, veths into a Linux bridge in a namespace of its own
(the switch), every switch port and host NIC shaped with htb to the link rate
and given a finite bfifo/pfifo buffer, per-host ``rto_min``/``rto_max``.
Counters come from each namespace's own /proc/net/snmp and netstat and from
``tc``; a run returns a :class:`parcomm.result.Result` (way ``"emu"``), the
simulator's type. Needs root on Linux.

Modules, one job each: ``naming`` (names, ownership, teardown, stale
sweeps), ``layout`` (platform -> plan, no I/O), ``topology`` (namespaces,
bridge, veths), ``shaping`` (qdiscs), ``tcpknobs`` (RTO and TCP settings),
``counters`` (kernel counters as columns), ``sampler`` (queue maxima),
``launcher`` (rank processes), ``reaper`` (cleanup after kill -9),
``cluster`` (``EmuCluster``, tying them together).
"""

from .cluster import EmuCluster, program_ref, run_emu
from .naming import cleanup_stale, list_runs, owner_alive, remove_run
from .shell import EmuError, require_root

__all__ = [
    "EmuCluster",
    "EmuError",
    "cleanup",
    "cleanup_stale",
    "list_runs",
    "owner_alive",
    "program_ref",
    "remove_run",
    "require_root",
    "run_emu",
]


def cleanup(*, all_runs: bool = False) -> list[str]:
    """Remove stale runs' namespaces and work directories (``all_runs``: every parcomm run,
    even live ones'); returns the namespaces removed."""
    from .naming import sweep

    require_root()
    return sweep(all_runs=all_runs).namespaces
