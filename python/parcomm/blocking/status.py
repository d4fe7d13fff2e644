"""``MPI.Status`` and the constants a status holds (MPICH's values)."""

from __future__ import annotations

from typing import Any

from ..comm.base import ANY_SOURCE as BASE_ANY_SOURCE
from .datatypes import PREDEFINED, Datatype

__all__ = ["Status", "ANY_SOURCE", "ANY_TAG", "PROC_NULL", "ROOT", "UNDEFINED", "from_base"]

# MPICH's mpi.h: ANY_SOURCE and PROC_NULL differ, ANY_TAG is -1.
ANY_SOURCE = -2
ANY_TAG = -1
PROC_NULL = -1
ROOT = -3
UNDEFINED = -32766


class Status:
    """mpi4py's ``MPI.Status``: source, tag, error, and the message's size in bytes."""

    __slots__ = ("source", "tag", "error", "count", "cancelled")

    def __init__(self, status: Status | None = None):
        if status is not None and not isinstance(status, Status):
            raise TypeError(f"Status() takes a Status to copy, got {type(status).__name__}")
        if status is not None:
            self.source, self.tag, self.error = status.source, status.tag, status.error
            self.count, self.cancelled = status.count, status.cancelled
        else:
            self.source, self.tag, self.error, self.count, self.cancelled = ANY_SOURCE, ANY_TAG, 0, 0, False

    def Get_source(self) -> int:  # noqa: N802 - mpi4py's names
        return self.source

    def Set_source(self, source: int) -> None:  # noqa: N802
        self.source = int(source)

    def Get_tag(self) -> int:  # noqa: N802
        return self.tag

    def Set_tag(self, tag: int) -> None:  # noqa: N802
        self.tag = int(tag)

    def Get_error(self) -> int:  # noqa: N802
        return self.error

    def Set_error(self, error: int) -> None:  # noqa: N802
        self.error = int(error)

    def Get_count(self, datatype: Datatype = PREDEFINED["BYTE"]) -> int:  # noqa: N802
        size = datatype.size
        if size == 0:
            return 0
        return self.count // size if self.count % size == 0 else UNDEFINED

    def Get_elements(self, datatype: Datatype) -> int:  # noqa: N802
        # elements of the basic type inside (a partial derived element counts its whole basic items)
        base = datatype.base
        item = base.itemsize if base is not None else 1
        return self.count // item if item else 0

    def Set_elements(self, datatype: Datatype, count: int) -> None:  # noqa: N802
        self.count = int(count) * (datatype.base.itemsize if datatype.base is not None else datatype.size)

    def Is_cancelled(self) -> bool:  # noqa: N802
        return self.cancelled

    def Set_cancelled(self, flag: bool) -> None:  # noqa: N802
        self.cancelled = bool(flag)

    def py2f(self) -> list[int]:
        return [self.count, 0, self.source, self.tag, self.error]

    @classmethod
    def f2py(cls, arg: list[int]) -> Status:
        st = cls()
        st.count, _, st.source, st.tag, st.error = (int(x) for x in arg)
        return st

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Status):
            return NotImplemented
        return (self.source, self.tag, self.error, self.count, self.cancelled) == (
            other.source,
            other.tag,
            other.error,
            other.count,
            other.cancelled,
        )

    __hash__ = None  # type: ignore[assignment]

    def __copy__(self) -> Status:
        return Status(self)

    def __reduce__(self) -> Any:
        return (Status.f2py, (self.py2f(),))

    def __repr__(self) -> str:
        return f"<Status source={self.source} tag={self.tag} count={self.count} error={self.error}>"


def from_base(base: Any, into: Status | None, nbytes: int | None = None) -> None:
    """Copy the async layer's status (``base``) into the program's ``into``."""
    if into is None or base is None:
        return
    into.source = ANY_SOURCE if base.source == BASE_ANY_SOURCE else base.source
    into.tag = base.tag
    into.count = base.nbytes if nbytes is None else nbytes
    into.error = 0
    into.cancelled = bool(getattr(base, "cancelled", False))
    if into.cancelled:
        into.source, into.tag, into.count = ANY_SOURCE, ANY_TAG, 0


def proc_null_status(into: Status | None) -> None:
    """A receive from PROC_NULL: source PROC_NULL, tag ANY_TAG, no data."""
    if into is not None:
        into.source, into.tag, into.count, into.error, into.cancelled = PROC_NULL, ANY_TAG, 0, 0, False
