"""``mpi4py.MPI`` as parcomm implements it: the names a program imports.

Inside a parcomm run (``parcomm sim run|emu run|run local PROG.py``),
``from mpi4py import MPI`` gives this module (see :mod:`.script`).
``MPI.COMM_WORLD`` is one object for the program that means the running
rank's communicator. What is not implemented (one-sided, MPI-IO, spawn,
intercommunicators) raises :class:`~.errors.Unsupported` naming the call.
"""

from __future__ import annotations

from typing import Any

from ..comm.ops import BAND, BOR, BXOR, LAND, LOR, LXOR, MAX, MAXLOC, MIN, MINLOC, PROD, SUM, Op
from .buffers import BOTTOM, IN_PLACE
from .comm import (
    COMM_NULL,
    CONGRUENT,
    IDENT,
    KEYVAL_HOST,
    KEYVAL_IO,
    KEYVAL_TAG_UB,
    KEYVAL_WTIME_IS_GLOBAL,
    SIMILAR,
    UNEQUAL,
    Comm,
    Intracomm,
    SelfComm,
    WorldComm,
)
from .datatypes import DATATYPE_NULL, PREDEFINED, Datatype
from .errors import ERROR_CLASSES, MPIException, Unsupported
from .errors import error_string as Get_error_string  # noqa: N812
from .group import GROUP_EMPTY, Group
from .misc import (
    ERRHANDLER_NULL,
    ERRORS_ABORT,
    ERRORS_ARE_FATAL,
    ERRORS_RETURN,
    Errhandler,
    Get_processor_name,
    Pcontrol,
    Wtick,
    Wtime,
    unsupported_attribute,
)
from .requests import MESSAGE_NO_PROC, MESSAGE_NULL, REQUEST_NULL, Message, Prequest, Request
from .status import ANY_SOURCE, ANY_TAG, PROC_NULL, ROOT, UNDEFINED, Status
from .topology import CART, DIST_GRAPH, GRAPH, Cartcomm, Graphcomm, compute_dims

Exception = MPIException  # noqa: A001 - mpi4py's name
Compute_dims = compute_dims

COMM_WORLD = WorldComm("MPI_COMM_WORLD")
COMM_SELF = SelfComm("MPI_COMM_SELF")
TAG_UB = KEYVAL_TAG_UB
HOST = KEYVAL_HOST
IO = KEYVAL_IO
WTIME_IS_GLOBAL = KEYVAL_WTIME_IS_GLOBAL
OP_NULL = Op("OP_NULL", lambda a, b: b)
REPLACE = Op("REPLACE", lambda a, b: b)
NO_OP = Op("NO_OP", lambda a, b: a)

THREAD_SINGLE, THREAD_FUNNELED, THREAD_SERIALIZED, THREAD_MULTIPLE = 0, 1, 2, 3
VERSION, SUBVERSION = 4, 1
MAX_PROCESSOR_NAME = 128
MAX_ERROR_STRING = 512
MAX_OBJECT_NAME = 128
KEYVAL_INVALID = 0x24000000
DISTRIBUTE_NONE, DISTRIBUTE_BLOCK, DISTRIBUTE_CYCLIC = 121, 122, 123
ORDER_C, ORDER_FORTRAN = 56, 57
COMM_TYPE_SHARED = 1
INFO_NULL = None

globals().update(PREDEFINED)
globals().update(ERROR_CLASSES)

_initialized = True
_finalized = False


def Init() -> None:  # noqa: N802
    """The run initialized MPI before the program started (as mpi4py does on import)."""


def Init_thread(required: int = THREAD_MULTIPLE) -> int:  # noqa: N802
    return THREAD_MULTIPLE if required > THREAD_MULTIPLE else required


def Finalize() -> None:  # noqa: N802
    """The run finalizes MPI when every rank's program has returned."""


def Is_initialized() -> bool:  # noqa: N802
    return True


def Is_finalized() -> bool:  # noqa: N802
    return False


def Query_thread() -> int:  # noqa: N802
    return THREAD_MULTIPLE


def Is_thread_main() -> bool:  # noqa: N802
    return True


def Get_version() -> tuple[int, int]:  # noqa: N802
    return (VERSION, SUBVERSION)


def Get_library_version() -> str:  # noqa: N802
    return "parcomm MPI (mpi4py surface over parcomm's Communicator)"


def Get_error_class(errorcode: int) -> int:  # noqa: N802
    return int(errorcode)


def Attach_buffer(buf: Any) -> None:  # noqa: N802
    """Buffered sends complete as standard ones here, so the buffer is only kept."""
    from .bridge import current

    current().objects["bsend_buffer"] = buf


def Detach_buffer() -> Any:  # noqa: N802
    from .bridge import current

    return current().objects.pop("bsend_buffer", None)


def Get_address(location: Any) -> int:  # noqa: N802
    import numpy as np

    return int(np.asarray(location).__array_interface__["data"][0])


BSEND_OVERHEAD = 96


def __getattr__(name: str) -> Any:
    return unsupported_attribute(name, name)


__all__ = [
    "ANY_SOURCE",
    "ANY_TAG",
    "BAND",
    "BOR",
    "BOTTOM",
    "BXOR",
    "CART",
    "COMM_NULL",
    "COMM_SELF",
    "COMM_WORLD",
    "CONGRUENT",
    "Cartcomm",
    "Comm",
    "DATATYPE_NULL",
    "DIST_GRAPH",
    "Datatype",
    "ERRHANDLER_NULL",
    "ERRORS_ABORT",
    "ERRORS_ARE_FATAL",
    "ERRORS_RETURN",
    "Errhandler",
    "Exception",
    "GRAPH",
    "GROUP_EMPTY",
    "Get_error_string",
    "Get_processor_name",
    "Graphcomm",
    "Group",
    "IDENT",
    "IN_PLACE",
    "Intracomm",
    "LAND",
    "LOR",
    "LXOR",
    "MAX",
    "MAXLOC",
    "MESSAGE_NO_PROC",
    "MESSAGE_NULL",
    "MIN",
    "MINLOC",
    "Message",
    "Op",
    "PROC_NULL",
    "PROD",
    "Pcontrol",
    "Prequest",
    "REQUEST_NULL",
    "ROOT",
    "Request",
    "SIMILAR",
    "SUM",
    "Status",
    "UNDEFINED",
    "UNEQUAL",
    "Unsupported",
    "Wtick",
    "Wtime",
]
