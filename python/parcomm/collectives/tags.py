"""Reserved tags, one per collective, so collectives never match user messages."""

from ..comm.base import RESERVED_TAG_BASE, name_tag

ALLTOALL = name_tag(RESERVED_TAG_BASE + 1, "alltoall")
BCAST = name_tag(RESERVED_TAG_BASE + 2, "bcast")
SCATTER = name_tag(RESERVED_TAG_BASE + 3, "scatter")
ALLGATHER = name_tag(RESERVED_TAG_BASE + 4, "allgather")
BARRIER = name_tag(RESERVED_TAG_BASE + 5, "barrier")
GATHER = name_tag(RESERVED_TAG_BASE + 6, "gather")
REDUCE = name_tag(RESERVED_TAG_BASE + 7, "reduce")
ALLREDUCE = name_tag(RESERVED_TAG_BASE + 8, "allreduce")
SCATTER_OBJ = name_tag(RESERVED_TAG_BASE + 9, "scatter (objects)")
GATHER_TREE = name_tag(RESERVED_TAG_BASE + 10, "gather (tree)")
ALLGATHER_OBJ = name_tag(RESERVED_TAG_BASE + 11, "allgather (objects)")
ALLTOALL_OBJ = name_tag(RESERVED_TAG_BASE + 12, "alltoall (objects)")
BCAST_OBJ = name_tag(RESERVED_TAG_BASE + 13, "bcast (objects)")
SCAN = name_tag(RESERVED_TAG_BASE + 14, "scan")
CREATE_GROUP = name_tag(RESERVED_TAG_BASE + 15, "create group")
