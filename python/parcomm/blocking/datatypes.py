"""MPI datatypes: the predefined ones (by their C types, as MPICH sizes them on
x86-64 Linux) and the derived ones real programs build (contiguous, vector,
hvector, indexed_block, dup, resized).

A datatype is a list of (byte offset, byte length) blocks inside an extent.
Packing a buffer of ``count`` elements takes those blocks from each element
in turn; unpacking puts them back. A typed message travels as its packed
bytes, so the receiver's type decides the layout, as in MPI.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Datatype", "PREDEFINED", "from_typecode", "typecode_of", "DATATYPE_NULL"]


class Datatype:
    """An MPI datatype (mpi4py's ``MPI.Datatype``)."""

    __slots__ = ("name", "blocks", "extent", "lb", "base", "committed", "_index", "_combiner", "_contents")

    def __init__(
        self,
        name: str,
        blocks: list[tuple[int, int]],
        extent: int,
        base: np.dtype | None = None,
        lb: int = 0,
        combiner: str = "named",
        contents: tuple = (),
    ):
        self.name = name
        self.blocks = blocks  # (offset, length) in bytes, within one element
        self.extent = extent
        self.lb = lb
        self.base = base  # the element numpy type when the type is made of one kind of item
        self.committed = combiner == "named"
        self._index: np.ndarray | None = None
        self._combiner = combiner
        self._contents = contents

    # --- mpi4py's queries -------------------------------------------------------------
    @property
    def size(self) -> int:
        return sum(n for _, n in self.blocks)

    def Get_size(self) -> int:  # noqa: N802
        return self.size

    def Get_extent(self) -> tuple[int, int]:  # noqa: N802
        return (self.lb, self.extent)

    def Get_true_extent(self) -> tuple[int, int]:  # noqa: N802
        if not self.blocks:
            return (0, 0)
        lo = min(o for o, _ in self.blocks)
        hi = max(o + n for o, n in self.blocks)
        return (lo, hi - lo)

    @property
    def lb_extent(self) -> tuple[int, int]:
        return self.Get_extent()

    @property
    def ub(self) -> int:
        return self.lb + self.extent

    @property
    def true_lb(self) -> int:
        return self.Get_true_extent()[0]

    @property
    def true_extent(self) -> int:
        return self.Get_true_extent()[1]

    @property
    def true_ub(self) -> int:
        lo, n = self.Get_true_extent()
        return lo + n

    @property
    def is_named(self) -> bool:
        return self._combiner == "named"

    @property
    def is_predefined(self) -> bool:
        return self._combiner == "named"

    @property
    def combiner(self) -> str:
        return self._combiner

    @property
    def typechar(self) -> str:
        return self.base.char if self.base is not None else ""

    def Get_name(self) -> str:  # noqa: N802
        return self.name

    def Set_name(self, name: str) -> None:  # noqa: N802
        self.name = str(name)

    def Commit(self) -> Datatype:  # noqa: N802
        self.committed = True
        return self

    def Free(self) -> None:  # noqa: N802
        if self.is_named:
            from .errors import ERR_TYPE, MPIException

            raise MPIException(ERR_TYPE, "MPI_Type_free: a predefined datatype cannot be freed")

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Datatype: {self.name}>"

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def __bool__(self) -> bool:
        return self is not DATATYPE_NULL

    # --- constructors -----------------------------------------------------------------
    def _derived(self, name: str, blocks: list[tuple[int, int]], extent: int, contents: tuple) -> Datatype:
        return Datatype(name, _merge(blocks), extent, self.base, 0, name, contents)

    def Dup(self) -> Datatype:  # noqa: N802
        return Datatype(self.name, list(self.blocks), self.extent, self.base, self.lb, "dup", (self,))

    def Create_contiguous(self, count: int) -> Datatype:  # noqa: N802
        _check_count(count, "Create_contiguous count")
        if self.is_contiguous():  # one block, however many items
            return self._derived("contiguous", [(0, count * self.extent)], count * self.extent, (count, self))
        _check_blocks(count * len(self.blocks), "Create_contiguous")
        blocks = [(i * self.extent + o, n) for i in range(count) for o, n in self.blocks]
        return self._derived("contiguous", blocks, count * self.extent, (count, self))

    def Create_vector(self, count: int, blocklength: int, stride: int) -> Datatype:  # noqa: N802
        return self._vector(count, blocklength, stride * self.extent, "vector", (count, blocklength, stride, self))

    def Create_hvector(self, count: int, blocklength: int, stride: int) -> Datatype:  # noqa: N802
        return self._vector(count, blocklength, stride, "hvector", (count, blocklength, stride, self))

    def _vector(self, count: int, blocklength: int, stride_bytes: int, name: str, contents: tuple) -> Datatype:
        _check_count(count, f"Create_{name} count")
        _check_count(blocklength, f"Create_{name} blocklength")
        if self.is_contiguous():  # each block of items is one run of bytes
            run = blocklength * self.extent
            extent = 0 if count == 0 or blocklength == 0 else (count - 1) * stride_bytes + run
            _check_blocks(count, f"Create_{name}")
            return self._derived(name, [(i * stride_bytes, run) for i in range(count)], extent, contents)
        _check_blocks(count * blocklength * len(self.blocks), f"Create_{name}")
        blocks = [
            (i * stride_bytes + j * self.extent + o, n)
            for i in range(count)
            for j in range(blocklength)
            for o, n in self.blocks
        ]
        if count == 0 or blocklength == 0:
            extent = 0
        else:
            extent = (count - 1) * stride_bytes + blocklength * self.extent
        return self._derived(name, blocks, extent, contents)

    def Create_indexed_block(self, blocklength: int, displacements: list[int]) -> Datatype:  # noqa: N802
        _check_count(blocklength, "Create_indexed_block blocklength")
        displs = [int(d) for d in displacements]
        _check_blocks(len(displs) * blocklength * len(self.blocks), "Create_indexed_block")
        blocks = [
            (d * self.extent + j * self.extent + o, n)
            for d in displs
            for j in range(blocklength)
            for o, n in self.blocks
        ]
        extent = (max(displs) + blocklength) * self.extent if displs else 0
        return self._derived("indexed_block", blocks, extent, (blocklength, displs, self))

    def Create_indexed(self, blocklengths: list[int], displacements: list[int]) -> Datatype:  # noqa: N802
        _check_blocks(sum(int(b) for b in blocklengths) * len(self.blocks), "Create_indexed")
        blocks = [
            (d * self.extent + j * self.extent + o, n)
            for b, d in zip(blocklengths, displacements)
            for j in range(b)
            for o, n in self.blocks
        ]
        ends = [(d + b) * self.extent for b, d in zip(blocklengths, displacements)]
        return self._derived(
            "indexed", blocks, max(ends) if ends else 0, (list(blocklengths), list(displacements), self)
        )

    @classmethod
    def Create_struct(  # noqa: N802
        cls, blocklengths: list[int], displacements: list[int], datatypes: list[Datatype]
    ) -> Datatype:
        """Blocks of different types at byte displacements (MPI_Type_create_struct)."""
        if not len(blocklengths) == len(displacements) == len(datatypes):
            raise ValueError("Create_struct: blocklengths, displacements and datatypes differ in length")
        blocks = [
            (int(d) + j * t.extent + o, n)
            for b, d, t in zip(blocklengths, displacements, datatypes)
            for j in range(int(b))
            for o, n in t.blocks
        ]
        ends = [int(d) + int(b) * t.extent for b, d, t in zip(blocklengths, displacements, datatypes)]
        bases = {t.base for t in datatypes}
        base = bases.pop() if len(bases) == 1 else None
        return Datatype(
            "struct",
            _merge(blocks),
            max(ends) if ends else 0,
            base,
            0,
            "struct",
            (blocklengths, displacements, datatypes),
        )

    def Create_resized(self, lb: int, extent: int) -> Datatype:  # noqa: N802
        t = Datatype("resized", list(self.blocks), int(extent), self.base, int(lb), "resized", (lb, extent, self))
        return t

    # --- packing ----------------------------------------------------------------------
    def _byte_index(self) -> np.ndarray:
        """Byte offsets of one element's data, in order (cached)."""
        if self._index is None:
            parts = [np.arange(o, o + n, dtype=np.int64) for o, n in self.blocks]
            self._index = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        return self._index

    def is_contiguous(self) -> bool:
        return len(self.blocks) <= 1 and (not self.blocks or (self.blocks[0] == (0, self.extent)))

    def pack(self, mem: np.ndarray, count: int) -> bytes:
        """The data of ``count`` elements of this type in the byte array ``mem``."""
        if self.is_contiguous():
            return mem[: count * self.size].tobytes()
        idx = (np.arange(count, dtype=np.int64)[:, None] * self.extent + self._byte_index()[None, :]).reshape(-1)
        return mem[idx].tobytes()

    def unpack(self, data: bytes, mem: np.ndarray, count: int) -> None:
        """Put ``data`` (packed elements, at most ``count``) into the byte array ``mem``."""
        src = np.frombuffer(data, dtype=np.uint8)
        if self.is_contiguous():
            mem[: src.size] = src
            return
        per = self.size
        n = src.size // per if per else 0
        idx = (np.arange(n, dtype=np.int64)[:, None] * self.extent + self._byte_index()[None, :]).reshape(-1)
        mem[idx] = src[: idx.size]


def _merge(blocks: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for o, n in blocks:
        if n == 0:
            continue
        if out and out[-1][0] + out[-1][1] == o:
            out[-1] = (out[-1][0], out[-1][1] + n)
        else:
            out.append((o, n))
    return out


#: Byte blocks a derived datatype may have (each is a Python tuple; beyond, memory runs out).
MAX_BLOCKS = 1 << 20


def _check_blocks(n: int, what: str) -> None:
    if n > MAX_BLOCKS:
        from .errors import ERROR_CLASSES, MPIException

        raise MPIException(
            ERROR_CLASSES["ERR_OTHER"], f"{what}: {n} separate blocks (more than {MAX_BLOCKS} are not supported)"
        )


def _check_count(n: Any, what: str) -> None:
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise ValueError(f"{what} must be a non-negative int, got {n!r}")


def _named(name: str, char: str) -> Datatype:
    dt = np.dtype(char)
    return Datatype(name, [(0, dt.itemsize)], dt.itemsize, dt)


# The predefined types and the numpy type of their C type (x86-64 Linux, LP64).
_TABLE = [
    ("CHAR", "S1"),
    ("WCHAR", "U1"),
    ("SIGNED_CHAR", "b"),
    ("UNSIGNED_CHAR", "B"),
    ("BYTE", "B"),
    ("PACKED", "B"),
    ("SHORT", "h"),
    ("UNSIGNED_SHORT", "H"),
    ("INT", "i"),
    ("UNSIGNED", "I"),
    ("LONG", "l"),
    ("UNSIGNED_LONG", "L"),
    ("LONG_LONG", "q"),
    ("UNSIGNED_LONG_LONG", "Q"),
    ("FLOAT", "f"),
    ("DOUBLE", "d"),
    ("LONG_DOUBLE", "g"),
    ("C_BOOL", "?"),
    ("INT8_T", "i1"),
    ("INT16_T", "i2"),
    ("INT32_T", "i4"),
    ("INT64_T", "i8"),
    ("UINT8_T", "u1"),
    ("UINT16_T", "u2"),
    ("UINT32_T", "u4"),
    ("UINT64_T", "u8"),
    ("C_FLOAT_COMPLEX", "F"),
    ("C_DOUBLE_COMPLEX", "D"),
    ("C_LONG_DOUBLE_COMPLEX", "G"),
    ("CXX_BOOL", "?"),
    ("CXX_FLOAT_COMPLEX", "F"),
    ("CXX_DOUBLE_COMPLEX", "D"),
    ("CXX_LONG_DOUBLE_COMPLEX", "G"),
    ("AINT", "q"),
    ("OFFSET", "q"),
    ("COUNT", "q"),
    # Fortran types, as gfortran sizes them
    ("CHARACTER", "S1"),
    ("LOGICAL", "i4"),
    ("INTEGER", "i4"),
    ("REAL", "f4"),
    ("DOUBLE_PRECISION", "f8"),
    ("COMPLEX", "F"),
    ("DOUBLE_COMPLEX", "D"),
    ("LOGICAL1", "i1"),
    ("LOGICAL2", "i2"),
    ("LOGICAL4", "i4"),
    ("LOGICAL8", "i8"),
    ("INTEGER1", "i1"),
    ("INTEGER2", "i2"),
    ("INTEGER4", "i4"),
    ("INTEGER8", "i8"),
    ("REAL2", "f2"),
    ("REAL4", "f4"),
    ("REAL8", "f8"),
    ("COMPLEX8", "c8"),
    ("COMPLEX16", "c16"),
]

PREDEFINED: dict[str, Datatype] = {name: _named(name, char) for name, char in _TABLE}
PREDEFINED["C_COMPLEX"] = PREDEFINED["C_FLOAT_COMPLEX"]
PREDEFINED["UNSIGNED_INT"] = PREDEFINED["UNSIGNED"]
PREDEFINED["BOOL"] = PREDEFINED["C_BOOL"]
PREDEFINED["F_BOOL"] = PREDEFINED["LOGICAL"]
PREDEFINED["F_INT"] = PREDEFINED["INTEGER"]
PREDEFINED["F_FLOAT"] = PREDEFINED["REAL"]
PREDEFINED["F_DOUBLE"] = PREDEFINED["DOUBLE_PRECISION"]
PREDEFINED["F_COMPLEX"] = PREDEFINED["COMPLEX"]
PREDEFINED["F_FLOAT_COMPLEX"] = PREDEFINED["COMPLEX"]
PREDEFINED["F_DOUBLE_COMPLEX"] = PREDEFINED["DOUBLE_COMPLEX"]

# The pair types of MAXLOC/MINLOC (value, int), as C lays out their structs.
for _name, _char in (("SHORT_INT", "h"), ("INT_INT", "i"), ("LONG_INT", "l"), ("FLOAT_INT", "f"), ("DOUBLE_INT", "d")):
    _pair = np.dtype([("v", _char), ("i", "i4")], align=True)
    PREDEFINED[_name] = Datatype(_name, [(0, _pair.itemsize)], _pair.itemsize, _pair)
PREDEFINED["TWOINT"] = PREDEFINED["INT_INT"]

DATATYPE_NULL = Datatype("MPI_DATATYPE_NULL", [], 0)

# The type a buffer's typecode means (numpy's dtype.char, array.array's typecode), as mpi4py infers it.
_BY_CHAR = {
    "c": "CHAR",
    "S": "CHAR",
    "b": "SIGNED_CHAR",
    "B": "UNSIGNED_CHAR",
    "h": "SHORT",
    "H": "UNSIGNED_SHORT",
    "i": "INT",
    "I": "UNSIGNED",
    "l": "LONG",
    "L": "UNSIGNED_LONG",
    "q": "LONG_LONG",
    "Q": "UNSIGNED_LONG_LONG",
    "f": "FLOAT",
    "d": "DOUBLE",
    "g": "LONG_DOUBLE",
    "F": "C_FLOAT_COMPLEX",
    "D": "C_DOUBLE_COMPLEX",
    "G": "C_LONG_DOUBLE_COMPLEX",
    "?": "C_BOOL",
    "u": "WCHAR",
    "w": "WCHAR",
    "U": "WCHAR",
    "e": "REAL2",
    "p": "LONG",
    "P": "UNSIGNED_LONG",
    "n": "LONG",
    "N": "UNSIGNED_LONG",
}


def from_typecode(code: str) -> Datatype:
    """The predefined datatype of a typecode (``'i'`` is MPI.INT, ``'d'`` MPI.DOUBLE, ...)."""
    name = _BY_CHAR.get(code)
    if name is None:
        raise KeyError(f"no MPI datatype for typecode {code!r}")
    return PREDEFINED[name]


def typecode_of(datatype: Datatype) -> str | None:
    """The typecode of a predefined datatype (None for derived ones)."""
    if datatype.base is None or datatype.base.fields is not None:
        return None
    return datatype.base.char
