"""``mpi4py.MPI`` as parcomm implements it: the names a program imports.

Inside a parcomm run (``parcomm sim run|emu run|run local PROG.py``),
``from mpi4py import MPI`` gives this module (see :mod:`.script`).
``MPI.COMM_WORLD`` is one object for the program that means the running
rank's communicator. What is not implemented (one-sided, MPI-IO, spawn,
intercommunicators) raises :class:`~.errors.Unsupported` naming the call.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..comm.ops import BAND, BOR, BXOR, LAND, LOR, LXOR, MAX, MAXLOC, MIN, MINLOC, PROD, SUM, Op
from .buffers import BOTTOM, IN_PLACE
from .comm import (
    COMM_NULL,
    COMM_SELF,
    COMM_WORLD,
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
    Info,
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


class buffer(np.ndarray):  # noqa: N801 - mpi4py's name
    """``MPI.buffer``: bytes of memory with their ``address`` and ``nbytes``."""

    @property
    def address(self) -> int:
        return int(self.__array_interface__["data"][0])


def Alloc_mem(size: int, info: Any = None) -> buffer:  # noqa: N802
    """Memory for buffers (mpi4py's ``MPI.buffer``): ordinary memory here."""
    if not isinstance(size, int) or size < 0:
        raise MPIException(ERROR_CLASSES["ERR_ARG"], f"Alloc_mem: size must be a non-negative int, got {size!r}")
    return np.zeros(size, dtype=np.uint8).view(buffer)


def Free_mem(mem: Any) -> None:  # noqa: N802
    """Nothing to release: the memory is Python's."""


INFO_NULL = None
INFO_ENV = Info()
GROUP_NULL = Group([])
COMM_TYPE_HW_GUIDED = 2
COMM_TYPE_HW_UNGUIDED = 3
COMM_TYPE_RESOURCE_GUIDED = 4
BUFFER_AUTOMATIC = None
ORDER_F = ORDER_FORTRAN
DISTRIBUTE_DFLT_DARG = -49767
COMBINER_NAMED, COMBINER_DUP, COMBINER_CONTIGUOUS, COMBINER_VECTOR, COMBINER_HVECTOR = 1, 2, 3, 4, 5
COMBINER_INDEXED, COMBINER_HINDEXED, COMBINER_INDEXED_BLOCK, COMBINER_HINDEXED_BLOCK = 6, 7, 8, 9
COMBINER_STRUCT, COMBINER_SUBARRAY, COMBINER_DARRAY = 10, 11, 12
COMBINER_F90_REAL, COMBINER_F90_COMPLEX, COMBINER_F90_INTEGER, COMBINER_RESIZED = 13, 14, 15, 16
for _name in ("BFLOAT16_T", "COMPLEX4", "COMPLEX32", "INTEGER16", "LOGICAL16", "REAL16"):
    globals()[_name] = DATATYPE_NULL  # not provided, as an MPI library without them says
FLOAT16_T = PREDEFINED["REAL2"]
FLOAT32_T = PREDEFINED["REAL4"]
FLOAT64_T = PREDEFINED["REAL8"]


class Pickle:
    """``MPI.pickle``: how lowercase calls serialize objects (the standard pickle here)."""

    def __init__(self) -> None:
        import pickle

        self.PROTOCOL = pickle.HIGHEST_PROTOCOL
        self.THRESHOLD = 262144

    def dumps(self, obj: Any) -> bytes:
        import pickle

        return pickle.dumps(obj, self.PROTOCOL)

    def loads(self, data: Any) -> Any:
        import pickle

        return pickle.loads(data)


pickle = Pickle()


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


def get_vendor() -> tuple[str, tuple[int, int, int]]:
    """Not an MPI library's vendor: parcomm's implementation (tests that skip a vendor's bugs run)."""
    return ("parcomm", (0, 1, 0))


APPNUM = KEYVAL_INVALID
UNIVERSE_SIZE = KEYVAL_INVALID
LASTUSEDCODE = KEYVAL_INVALID
