"""Algorithm-selection files MPI libraries read, from a model's choices.

Sans-IO: :func:`grid_choices` asks a model for the faster of Alltoall A and
B at every (P, m) of a grid; :func:`mpich_json` and :func:`openmpi_rules`
turn those choices into text. Writing files is the caller's job.

Mapping of seed 001's algorithms to the libraries' own (same communication
structure: every phase in flight at once, or one partner per phase):

* A (Fig. 6, post every receive, then send to each partner) ->
  MPICH ``MPIR_Alltoall_intra_scattered`` (every irecv and isend posted, in
  blocks of MPIR_CVAR_ALLTOALL_THROTTLE) and Open MPI coll_tuned algorithm 1
  ``linear`` ("launches all non-blocking send/recv pairs").
* B (Fig. 7, one exchange per phase) -> MPICH ``MPIR_Alltoall_intra_pairwise``
  (MPIC_Sendrecv with rank XOR i for power-of-two sizes, as Fig. 7) and Open
  MPI algorithm 2 ``pairwise`` (P rounds of MPI_Sendrecv, partner rank+i).

Size semantics. MPICH's ``avg_msg_size`` for Alltoall is sendcount times the
type size: m, the bytes per rank pair (src/mpi/coll/src/csel.c). Open MPI's
rules-file message size for Alltoall is type size x comm size x count: P·m
(docs/tuning-apps/coll-tuned.rst). Between grid sizes both files give the
choice of the next larger grid size (m in (m_i-1, m_i] -> choice at m_i);
above the grid, the largest size's choice.

Communicator sizes. MPICH: ``comm_size<=P`` for each grid P in turn, so a
size between grid points takes the next larger P's rules (the largest P's
above the grid). Open MPI's classic format takes the rules of the largest
listed comm size <= the communicator's (the smallest P's below the grid).
At the grid's own P both give the model's choice.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .params import PlogPParams
from .selection import select

MPICH_ALGORITHM = {"alltoall_a": "MPIR_Alltoall_intra_scattered", "alltoall_b": "MPIR_Alltoall_intra_pairwise"}
OPENMPI_ALGORITHM = {"alltoall_a": 1, "alltoall_b": 2}
OPENMPI_ALLTOALL_ID = 3  # coll_tuned's collective id of MPI_Alltoall
#: Grid bounds: a selection file for more than this many sizes or communicator sizes is not a tuning file.
MAX_GRID = 4096

Choices = dict[int, list[tuple[int, str]]]


def grid_choices(params_by_procs: dict[int, PlogPParams], sizes: Sequence[int], model: str) -> Choices:
    """{P: [(m, algorithm), ...]} over the grid; each P's choices from its own parameter file."""
    sizes = sorted(set(int(m) for m in sizes))
    if not sizes or len(sizes) > MAX_GRID or len(params_by_procs) > MAX_GRID:
        raise ValueError(
            f"the selection grid needs 1..{MAX_GRID} sizes and parameter files, "
            f"got {len(sizes)} sizes and {len(params_by_procs)} files"
        )
    if sizes[0] < 0:
        raise ValueError(f"sizes must be >= 0, got {sizes[0]}")
    return {
        p: [(m, select("alltoall", params_by_procs[p], p, m, model)[0]) for m in sizes] for p in sorted(params_by_procs)
    }


def _runs(choices: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """(largest size of a run of equal choices, choice), in size order."""
    out: list[tuple[int, str]] = []
    for m, algo in choices:
        if out and out[-1][1] == algo:
            out[-1] = (m, algo)
        else:
            out.append((m, algo))
    return out


def _mpich_sizes(choices: list[tuple[int, str]]) -> dict[str, Any]:
    runs = _runs(choices)
    tree: dict[str, Any] = {f"avg_msg_size<={m}": {f"algorithm={MPICH_ALGORITHM[a]}": {}} for m, a in runs[:-1]}
    tree["avg_msg_size=any"] = {f"algorithm={MPICH_ALGORITHM[runs[-1][1]]}": {}}
    return tree


def mpich_alltoall_tree(choices: Choices) -> dict[str, Any]:
    """The ``collective=alltoall`` subtree of an MPICH selection file."""
    procs = sorted(choices)
    by_size = {f"comm_size<={p}": _mpich_sizes(choices[p]) for p in procs[:-1]}
    by_size["comm_size=any"] = _mpich_sizes(choices[procs[-1]])
    return {
        "comm_type=intra": {
            # MPI_IN_PLACE: neither scattered nor pairwise takes it; MPICH's own rule.
            "is_sendbuf_inplace=yes": {"algorithm=MPIR_Alltoall_intra_pairwise_sendrecv_replace": {}},
            "is_sendbuf_inplace=no": by_size,
        },
        "comm_type=inter": {"algorithm=MPIR_Alltoall_inter_pairwise_exchange": {}},
    }


def mpich_json(choices: Choices, base: dict[str, Any] | None = None) -> str:
    """An MPICH collective-selection file (MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE).

    MPICH reads the file as its whole selection tree, so every collective a
    program calls must be in it; ``base`` (a selection file's JSON object,
    e.g. MPICH's own maint/tuning/coll/mpir/generic.json) gives the others,
    and its Alltoall rules are replaced."""
    doc = {k: v for k, v in (base or {}).items() if k != "collective=alltoall"}
    doc["collective=alltoall"] = mpich_alltoall_tree(choices)
    return json.dumps(doc, indent=2) + "\n"


def openmpi_rules(choices: Choices) -> str:
    """An Open MPI coll_tuned dynamic rules file (classic format, no version line: every
    release reads it) for MPI_Alltoall only; other collectives keep their fixed rules."""
    lines = ["1  # collectives", f"{OPENMPI_ALLTOALL_ID}  # MPI_Alltoall", f"{len(choices)}  # communicator sizes"]
    for p in sorted(choices):
        runs = _runs(choices[p])
        lines += [
            f"{p}  # communicator size",
            f"{len(runs)}  # message size rules",
            "# from bytes (P x m)  algorithm  topo  segsize",
        ]
        start = 0
        for m, algo in runs:
            lines.append(f"{start} {OPENMPI_ALGORITHM[algo]} 0 0")
            start = p * (m + 1)  # the next run starts above this run's largest m
    return "\n".join(lines) + "\n"


#: MPICH's compiled-in selection trees are a few tens of KiB; a longer string is not one of them.
MAX_TREE_BYTES = 1 << 20


def mpich_builtin_selection(library: bytes) -> dict[str, Any] | None:
    """MPICH's own default MPIR selection tree, as compiled into ``library`` (the bytes of
    libmpi.so): the NUL-terminated JSON string whose Alltoall rules name MPIR_Alltoall_
    algorithms (the ch4 and POSIX trees beside it name compositions and POSIX algorithms).
    None if there is none (another MPI, or an MPICH without JSON selection)."""
    start = library.find(b'{"collective=')
    while start >= 0:
        end = library.find(b"\0", start, start + MAX_TREE_BYTES)
        if end > 0:
            try:
                tree = json.loads(library[start:end])
            except (ValueError, RecursionError):
                tree = None
            if isinstance(tree, dict) and "MPIR_Alltoall_" in json.dumps(tree.get("collective=alltoall")):
                return tree
        start = library.find(b'{"collective=', start + 1)
    return None
