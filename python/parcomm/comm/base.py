"""Names shared by every backend."""

from __future__ import annotations

from dataclasses import dataclass

ANY_SOURCE = -1
ANY_TAG = -1

# Tags at or above this value are reserved for collectives and the rendezvous protocol.
RESERVED_TAG_BASE = 1 << 24
# Tag of the real backends' start barrier, far above the collectives' tags.
SYNC_TAG = RESERVED_TAG_BASE + 0xFFFFF

#: Reserved tag -> what uses it ("alltoall"), so traces and messages name a collective, not a
#: number; the layers above register their tags here (:func:`name_tag`).
TAG_NAMES: dict[int, str] = {SYNC_TAG: "start barrier"}


def name_tag(tag: int, name: str) -> int:
    TAG_NAMES[tag] = name
    return tag


def tag_label(tag: int) -> str | int:
    """A tag as a reader should see it: a user's number as it is, a reserved one by its name."""
    return TAG_NAMES.get(tag, tag) if tag >= RESERVED_TAG_BASE else tag


class CommError(RuntimeError):
    """A rank program misused the communicator (bad rank, bad tag, ...)."""


class DeadlockError(CommError):
    """Every remaining rank waits for something that can no longer happen."""


@dataclass
class Status:
    """Filled by ``recv(..., status=st)`` as in mpi4py."""

    source: int = ANY_SOURCE
    tag: int = ANY_TAG
    nbytes: int = 0
    cancelled: bool = False  # a receive withdrawn by MPI_Cancel

    def Get_source(self) -> int:  # noqa: N802 - mpi4py's name
        return self.source

    def Get_tag(self) -> int:  # noqa: N802
        return self.tag


def payload_nbytes(obj: object) -> int:
    """Simulated size of a payload when the caller gives none: its buffer
    length for bytes-like objects and arrays, else its pickled length."""
    if obj is None:
        return 0
    if isinstance(obj, (bytes, bytearray)):
        return len(obj)
    if isinstance(obj, memoryview):
        return obj.nbytes
    nbytes = getattr(obj, "nbytes", None)
    if isinstance(nbytes, int):
        return nbytes
    import pickle

    return len(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))
