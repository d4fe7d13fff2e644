"""MPI error classes and ``MPI.Exception`` (mpi4py's names; MPICH's numbers)."""

from __future__ import annotations

__all__ = ["MPIException", "Unsupported", "ERROR_CLASSES", "ERR_TYPE", "ERR_ARG"]

# MPICH's error classes (mpi.h); the values programs compare against.
ERROR_CLASSES = {
    "SUCCESS": 0,
    "ERR_BUFFER": 1,
    "ERR_COUNT": 2,
    "ERR_TYPE": 3,
    "ERR_TAG": 4,
    "ERR_COMM": 5,
    "ERR_RANK": 6,
    "ERR_ROOT": 7,
    "ERR_TRUNCATE": 14,
    "ERR_GROUP": 8,
    "ERR_OP": 9,
    "ERR_REQUEST": 19,
    "ERR_TOPOLOGY": 10,
    "ERR_DIMS": 11,
    "ERR_ARG": 12,
    "ERR_OTHER": 15,
    "ERR_UNKNOWN": 13,
    "ERR_INTERN": 16,
    "ERR_IN_STATUS": 17,
    "ERR_PENDING": 18,
    "ERR_UNSUPPORTED_OPERATION": 52,
    "ERR_LASTCODE": 0x3FFFFFFF,
}
ERR_TYPE = ERROR_CLASSES["ERR_TYPE"]
ERR_ARG = ERROR_CLASSES["ERR_ARG"]
_NAMES = {v: k for k, v in ERROR_CLASSES.items()}


class MPIException(RuntimeError):
    """``MPI.Exception``: an MPI call failed; ``Get_error_class()`` says how."""

    def __init__(self, ierr: int = 0, message: str = ""):
        self.ierr = int(ierr)
        text = message or error_string(self.ierr)
        super().__init__(text)

    @property
    def error_code(self) -> int:
        return self.ierr

    @property
    def error_class(self) -> int:
        return self.ierr

    def Get_error_code(self) -> int:  # noqa: N802 - mpi4py's names
        return self.ierr

    def Get_error_class(self) -> int:  # noqa: N802
        return self.ierr

    def Get_error_string(self) -> str:  # noqa: N802
        return error_string(self.ierr)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, int):
            return self.ierr == other
        return super().__eq__(other)

    def __int__(self) -> int:
        return self.ierr

    __hash__ = RuntimeError.__hash__


class Unsupported(MPIException, NotImplementedError):
    """A part of MPI that parcomm's implementation does not provide (one-sided, MPI-IO, spawn, ...)."""

    def __init__(self, call: str, why: str = ""):
        super().__init__(
            ERROR_CLASSES["ERR_UNSUPPORTED_OPERATION"],
            f"{call} is not supported by parcomm's MPI (simulated/emulated/local runs)"
            + (f": {why}" if why else "")
            + "; run the program with `parcomm run mpi` to use the real mpi4py",
        )


def error_string(code: int) -> str:
    name = _NAMES.get(int(code))
    return f"MPI_{name}" if name else f"MPI error {code}"
