"""Reserved tags, one per collective, so collectives never match user messages."""

from ..comm.base import RESERVED_TAG_BASE

ALLTOALL = RESERVED_TAG_BASE + 1
BCAST = RESERVED_TAG_BASE + 2
SCATTER = RESERVED_TAG_BASE + 3
ALLGATHER = RESERVED_TAG_BASE + 4
BARRIER = RESERVED_TAG_BASE + 5
GATHER = RESERVED_TAG_BASE + 6
