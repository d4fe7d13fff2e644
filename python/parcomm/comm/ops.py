"""Reduction operations (``MPI.SUM``, ``MPI.MAX``, ...) and an ``MPI`` namespace.

An :class:`Op` combines two values, ``op(a, b)``, where ``a`` comes from the
lower rank. On Python objects the operators are Python's own (``SUM`` is
``a + b``, so lists concatenate, as mpi4py's object reductions do); on numpy
arrays they are element-wise ufuncs. Every op here is associative; the
collectives combine in rank order anyway, so a non-commutative user op
(``Op.Create(fn, commute=False)``) gives the same result on every backend.

``from parcomm.comm import MPI`` gives mpi4py-like names (``MPI.SUM``,
``MPI.ANY_SOURCE``, ``MPI.Status``) for programs that are written to run
under mpi4py too.
"""

from __future__ import annotations

import operator
from typing import Any, Callable

from .base import ANY_SOURCE, ANY_TAG, Status

__all__ = [
    "Op",
    "SUM",
    "PROD",
    "MAX",
    "MIN",
    "LAND",
    "LOR",
    "LXOR",
    "BAND",
    "BOR",
    "BXOR",
    "MAXLOC",
    "MINLOC",
    "MPI",
    "as_op",
]


def _is_array(x: Any) -> bool:
    return type(x).__module__ == "numpy" and hasattr(x, "shape")


class Op:
    """A reduction: ``op(a, b)`` combines two contributions (``a`` from the lower rank)."""

    __slots__ = ("name", "_obj", "_ufunc", "commute")

    def __init__(self, name: str, obj: Callable[[Any, Any], Any], ufunc: str | None = None, commute: bool = True):
        self.name = name
        self._obj = obj
        self._ufunc = ufunc
        self.commute = commute

    @classmethod
    def Create(cls, function: Callable[[Any, Any], Any], commute: bool = False) -> "Op":  # noqa: N802 - mpi4py
        """A user operation ``function(a, b) -> combined`` (``a`` from the lower rank)."""
        if not callable(function):
            raise TypeError(f"Op.Create needs a function of two arguments, got {function!r}")
        return cls(getattr(function, "__name__", "user op"), function, None, bool(commute))

    def __call__(self, a: Any, b: Any) -> Any:
        if self._ufunc is not None and (_is_array(a) or _is_array(b)):
            import numpy as np

            out = getattr(np, self._ufunc)(a, b)
            if self._ufunc.startswith("logical_"):  # MPI: 1/0 in the operands' own type, not numpy's bool
                out = out.astype(np.result_type(a, b), copy=False)
            return out
        return self._obj(a, b)

    def reduce_into(self, acc: Any, other: Any, other_first: bool) -> Any:
        """Combine for numpy buffers, in place when the op is a ufunc."""
        a, b = (other, acc) if other_first else (acc, other)
        if self._ufunc is not None and _is_array(acc):
            import numpy as np

            getattr(np, self._ufunc)(a, b, out=acc)
            return acc
        return self(a, b)

    def Is_commutative(self) -> bool:  # noqa: N802
        return self.commute

    @property
    def is_commutative(self) -> bool:
        return self.commute

    @property
    def is_predefined(self) -> bool:
        return self.name in _BUILTIN

    def Reduce_local(self, inbuf: Any, inoutbuf: Any) -> None:  # noqa: N802
        """mpi4py's local reduction of buffers: ``inoutbuf = op(inbuf, inoutbuf)``."""
        import importlib

        import parcomm

        # the buffer specs of the mpi4py surface, above this layer: reached through the root
        message = importlib.import_module(parcomm.BLOCKING_BUFFERS_MODULE).message

        src = message(inbuf, "Reduce_local inbuf")
        dst = message(inoutbuf, "Reduce_local inoutbuf")
        if src.count != dst.count:
            raise ValueError(f"Reduce_local: {src.count} items in inbuf, {dst.count} in inoutbuf")
        dst.store_typed(self(src.typed(), dst.typed()))

    def Free(self) -> None:  # noqa: N802
        """User ops need no release; predefined ones cannot be freed."""

    def __repr__(self) -> str:
        return (
            f"MPI.{self.name}" if self._ufunc is not None or self.name in ("MAXLOC", "MINLOC") else f"<Op {self.name}>"
        )

    def __reduce__(self):  # ops travel by name between processes
        if self.name in _BUILTIN:
            return (_builtin_op, (self.name,))
        return (Op, (self.name, self._obj, self._ufunc, self.commute))


def _maxloc(a: Any, b: Any) -> Any:
    # (value, index) pairs; ties go to the lower index, as MPI says
    return a if (a[0] > b[0] or (a[0] == b[0] and a[1] <= b[1])) else b


def _minloc(a: Any, b: Any) -> Any:
    return a if (a[0] < b[0] or (a[0] == b[0] and a[1] <= b[1])) else b


def _max(a: Any, b: Any) -> Any:
    return b if b > a else a


def _min(a: Any, b: Any) -> Any:
    return b if b < a else a


SUM = Op("SUM", operator.add, "add")
PROD = Op("PROD", operator.mul, "multiply")
MAX = Op("MAX", _max, "maximum")
MIN = Op("MIN", _min, "minimum")
LAND = Op("LAND", lambda a, b: bool(a) and bool(b), "logical_and")
LOR = Op("LOR", lambda a, b: bool(a) or bool(b), "logical_or")
LXOR = Op("LXOR", lambda a, b: bool(a) != bool(b), "logical_xor")
BAND = Op("BAND", operator.and_, "bitwise_and")
BOR = Op("BOR", operator.or_, "bitwise_or")
BXOR = Op("BXOR", operator.xor, "bitwise_xor")
MAXLOC = Op("MAXLOC", _maxloc)
MINLOC = Op("MINLOC", _minloc)

_BUILTIN = {op.name: op for op in (SUM, PROD, MAX, MIN, LAND, LOR, LXOR, BAND, BOR, BXOR, MAXLOC, MINLOC)}


def _builtin_op(name: str) -> Op:
    return _BUILTIN[name]


def as_op(op: Any, who: str = "op") -> Op:
    """``op`` as an :class:`Op`: an Op, a builtin's name ("sum", "MAX"), an
    mpi4py op (by its name), or a function of two arguments."""
    if isinstance(op, Op):
        return op
    if isinstance(op, str) and op.upper() in _BUILTIN:
        return _BUILTIN[op.upper()]
    if type(op).__module__.startswith("mpi4py"):  # mpi4py's MPI.SUM etc.
        for name, ours in _BUILTIN.items():
            if repr(op).endswith(name) or str(op).endswith(name):
                return ours
    if callable(op):
        return Op.Create(op, commute=False)
    names = ", ".join(_BUILTIN)
    raise ValueError(f"{who} must be one of MPI.{{{names}}} or a function of two arguments, got {op!r}")


class _MPINames:
    """mpi4py-like names: ``MPI.SUM``, ``MPI.ANY_SOURCE``, ``MPI.Status()``, ``MPI.Op.Create``."""

    ANY_SOURCE = ANY_SOURCE
    ANY_TAG = ANY_TAG
    Status = Status
    Op = Op
    SUM, PROD, MAX, MIN = SUM, PROD, MAX, MIN
    LAND, LOR, LXOR, BAND, BOR, BXOR = LAND, LOR, LXOR, BAND, BOR, BXOR
    MAXLOC, MINLOC = MAXLOC, MINLOC
    UNDEFINED = -32766  # Split(color=MPI.UNDEFINED) gives no communicator

    def __repr__(self) -> str:
        return "<parcomm MPI names>"


MPI = _MPINames()
