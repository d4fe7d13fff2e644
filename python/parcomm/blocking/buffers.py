"""mpi4py's buffer specifications, parsed: ``buf``, ``[buf, type]``,
``[buf, count, type]``, ``[buf, (count, displ), type]``, and for the
v-collectives ``[buf, counts, displs, type]`` / ``[buf, (counts, displs), type]``.

A parsed buffer is raw bytes (a uint8 numpy view of the caller's memory,
writable when the memory is) plus a datatype and a count; its data travels
packed (see :mod:`.datatypes`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .datatypes import PREDEFINED, Datatype, from_typecode

__all__ = ["Buf", "VBuf", "message", "vmessage", "IN_PLACE", "BOTTOM", "is_in_place"]


class _Sentinel:
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def __int__(self) -> int:
        return 0 if self.name == "BOTTOM" else -1


IN_PLACE = _Sentinel("IN_PLACE")
BOTTOM = _Sentinel("BOTTOM")


def is_in_place(spec: Any) -> bool:
    if spec is IN_PLACE:
        return True
    return isinstance(spec, (list, tuple)) and len(spec) > 0 and spec[0] is IN_PLACE


def _memory(obj: Any, what: str) -> tuple[np.ndarray, str]:
    """(uint8 view of ``obj``'s memory, its typecode)."""
    if isinstance(obj, np.ndarray):
        if not (obj.flags.c_contiguous or obj.flags.f_contiguous):
            raise ValueError(f"{what}: the array is not contiguous (pass a contiguous array)")
        code = obj.dtype.char
        return obj.ravel(order="K").view(np.uint8), code  # memory order: a view for C or Fortran order
    if hasattr(obj, "__dlpack__") and not isinstance(obj, np.ndarray):
        return _from_address(_dlpack_interface(obj, what), what)
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:  # a (host-memory) array that describes itself by address, as mpi4py accepts
        return _from_address(cai, what)
    if isinstance(obj, str):
        raise TypeError(f"{what}: a str is not a buffer (encode it, or send it with lowercase send)")
    try:
        mv = memoryview(obj)
    except TypeError:
        raise TypeError(
            f"{what}: expected a buffer (numpy array, bytearray, array.array, memoryview), got {type(obj).__name__}"
        ) from None
    code = mv.format.lstrip("@=<>!") or "B"
    if not mv.c_contiguous:
        raise ValueError(f"{what}: the buffer is not contiguous")
    mem = np.frombuffer(mv.cast("B"), dtype=np.uint8) if mv.nbytes else np.zeros(0, dtype=np.uint8)
    if isinstance(obj, (bytes, bytearray)):
        code = "B"
    return mem, code


def _dlpack_interface(obj: Any, what: str) -> dict:
    """Address, type and shape of a DLPack producer's CPU memory, read from its DLTensor
    (as mpi4py does; the memory stays the producer's, writable)."""
    import ctypes

    class DLTensor(ctypes.Structure):
        _fields_ = [
            ("data", ctypes.c_void_p),
            ("device_type", ctypes.c_int32),
            ("device_id", ctypes.c_int32),
            ("ndim", ctypes.c_int32),
            ("code", ctypes.c_uint8),
            ("bits", ctypes.c_uint8),
            ("lanes", ctypes.c_uint16),
            ("shape", ctypes.POINTER(ctypes.c_int64)),
            ("strides", ctypes.POINTER(ctypes.c_int64)),
            ("byte_offset", ctypes.c_uint64),
        ]

    device = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (1, 0)
    if int(device[0]) != 1:  # kDLCPU
        raise ValueError(f"{what}: DLPack memory on device {device} (only host memory here)")
    capsule = obj.__dlpack__()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    tensor = DLTensor.from_address(get(capsule, b"dltensor"))
    shape = [tensor.shape[i] for i in range(tensor.ndim)]
    if tensor.strides:
        expect = 1
        for i in reversed(range(tensor.ndim)):
            if shape[i] != 1 and tensor.strides[i] != expect:
                raise ValueError(f"{what}: the DLPack array is not contiguous")
            expect *= shape[i]
    kind = {0: "i", 1: "u", 2: "f", 5: "c", 6: "b"}.get(tensor.code)
    if kind is None:
        raise ValueError(f"{what}: DLPack data type code {tensor.code} is not supported")
    typestr = "|b1" if kind == "b" else f"<{kind}{tensor.bits // 8}"
    data = (tensor.data or 0) + tensor.byte_offset
    return {"data": (data, False), "typestr": typestr, "shape": shape}


def _from_address(cai: dict, what: str) -> tuple[np.ndarray, str]:
    import ctypes

    addr, readonly = cai["data"]
    dtype = np.dtype(cai["typestr"])
    n = 1
    for d in cai.get("shape", ()):
        n *= int(d)
    nbytes = n * dtype.itemsize
    if nbytes == 0:
        return np.zeros(0, dtype=np.uint8), dtype.char
    raw = (ctypes.c_char * nbytes).from_address(addr)
    mem = np.frombuffer(raw, dtype=np.uint8)
    if readonly:
        mem.flags.writeable = False
    code = "?" if cai["typestr"].endswith("b1") else dtype.char
    return mem, code


def _datatype(value: Any, default_code: str, what: str) -> Datatype:
    if value is None:
        try:
            return from_typecode(default_code)
        except KeyError:
            return PREDEFINED["BYTE"]
    if isinstance(value, Datatype):
        return value
    if isinstance(value, str):
        try:
            return from_typecode(value)
        except KeyError:
            raise KeyError(f"{what}: unknown typecode {value!r}") from None
    raise TypeError(f"{what}: expected an MPI datatype, got {value!r}")


class Buf:
    """A parsed buffer: ``count`` elements of ``datatype`` starting ``offset`` bytes into ``mem``."""

    __slots__ = ("mem", "datatype", "count", "offset", "obj")

    def __init__(self, mem: np.ndarray, datatype: Datatype, count: int, offset: int = 0, obj: Any = None):
        self.mem, self.datatype, self.count, self.offset, self.obj = mem, datatype, count, offset, obj

    @property
    def nbytes(self) -> int:
        return self.count * self.datatype.size

    def pack(self) -> bytes:
        return self.datatype.pack(self.mem[self.offset :], self.count)

    def unpack(self, data: bytes, what: str) -> int:
        """Put a received message in; its element count. MPI_ERR_TRUNCATE if too long."""
        from .errors import ERROR_CLASSES, MPIException

        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise MPIException(
                ERROR_CLASSES["ERR_TYPE"],
                f"{what}: the message is a {type(data).__name__} object sent with lowercase send; receive it with recv",
            )
        if len(data) > self.nbytes:
            raise MPIException(
                ERROR_CLASSES["ERR_TRUNCATE"],
                f"{what}: message truncated: {len(data)} bytes arrived for a buffer of {self.nbytes} bytes",
            )
        if not self.mem.flags.writeable and len(data):
            raise ValueError(f"{what}: the receive buffer is read-only")
        self.datatype.unpack(bytes(data), self.mem[self.offset :], self.count)
        return len(data)

    def typed(self) -> np.ndarray:
        """The data as a numpy array of the datatype's element type (a copy), for reductions."""
        base = self.datatype.base
        if base is None:
            raise TypeError(f"a reduction needs a predefined datatype, not {self.datatype.name}")
        return np.frombuffer(self.pack(), dtype=base).copy()

    def store_typed(self, values: np.ndarray) -> None:
        base = self.datatype.base
        data = np.ascontiguousarray(values).astype(base, copy=False).tobytes()
        self.datatype.unpack(data, self.mem[self.offset :], self.count)


def message(spec: Any, what: str, readonly_ok: bool = True) -> Buf:
    """Parse a buffer spec of point-to-point or a regular collective."""
    if spec is None or spec is BOTTOM:
        return Buf(np.zeros(0, dtype=np.uint8), PREDEFINED["BYTE"], 0)
    if isinstance(spec, (list, tuple)) and not isinstance(spec, np.ndarray):
        if not spec:
            raise ValueError(f"{what}: empty buffer specification")
        obj = spec[0]
        rest = list(spec[1:])
        if obj is None or obj is BOTTOM:
            mem, code = np.zeros(0, dtype=np.uint8), "B"
        else:
            mem, code = _memory(obj, what)
        count: Any = None
        displ = 0
        dtype_arg: Any = None
        if len(rest) == 1:
            if isinstance(rest[0], (Datatype, str)):
                dtype_arg = rest[0]
            else:
                count = rest[0]
        elif len(rest) == 2:
            count, dtype_arg = rest
        elif len(rest) >= 3:
            count, displ, dtype_arg = rest[0], rest[1], rest[2]
        dt = _datatype(dtype_arg, code, what)
        if isinstance(count, (tuple, list)):
            count, displ = count
        if displ is None:
            displ = 0
        offset = int(displ) * dt.extent
        if count is None:
            avail = mem.size - offset
            count = avail // dt.extent if dt.extent else 0
        count = int(count)
        if count < 0:
            raise ValueError(f"{what}: count must be non-negative, got {count}")
        need = offset + (count - 1) * dt.extent + max((o + n for o, n in dt.blocks), default=0) if count else offset
        if need > mem.size:
            raise ValueError(f"{what}: {count} elements of {dt.name} need {need} bytes; the buffer holds {mem.size}")
        return Buf(mem, dt, count, offset, obj)
    mem, code = _memory(spec, what)
    dt = _datatype(None, code, what)
    return Buf(mem, dt, mem.size // dt.extent if dt.extent else 0, 0, spec)


class VBuf:
    """A v-collective buffer: block i is ``counts[i]`` elements at ``displs[i]`` elements."""

    __slots__ = ("mem", "datatype", "counts", "displs", "obj")

    def __init__(self, mem: np.ndarray, datatype: Datatype, counts: list[int], displs: list[int], obj: Any):
        self.mem, self.datatype, self.counts, self.displs, self.obj = mem, datatype, counts, displs, obj

    def block(self, i: int) -> Buf:
        return Buf(self.mem, self.datatype, self.counts[i], self.displs[i] * self.datatype.extent, self.obj)


def vmessage(spec: Any, size: int, what: str, blocks_equal: bool = False) -> VBuf:
    """Parse a v-collective buffer spec for ``size`` blocks (``blocks_equal``: counts may be one int)."""
    if isinstance(spec, (list, tuple)) and not isinstance(spec, np.ndarray):
        obj, rest = spec[0], list(spec[1:])
    else:
        obj, rest = spec, []
    mem, code = _memory(obj, what) if obj is not None else (np.zeros(0, dtype=np.uint8), "B")
    counts: Any = None
    displs: Any = None
    dtype_arg: Any = None
    if rest and isinstance(rest[-1], (Datatype, str)):
        dtype_arg = rest.pop()
    if len(rest) == 1:
        if isinstance(rest[0], tuple) and len(rest[0]) == 2 and not isinstance(rest[0][0], (int, np.integer)):
            counts, displs = rest[0]
        else:
            counts = rest[0]
    elif len(rest) >= 2:
        counts, displs = rest[0], rest[1]
    dt = _datatype(dtype_arg, code, what)
    total = mem.size // dt.extent if dt.extent else 0
    if counts is None:
        counts = [total // size] * size
    elif isinstance(counts, (int, np.integer)):
        counts = [int(counts)] * size
    counts = [int(c) for c in counts]
    if len(counts) != size:
        raise ValueError(f"{what}: {len(counts)} counts for {size} ranks")
    if displs is None:
        displs = [sum(counts[:i]) for i in range(size)]
    elif isinstance(displs, (int, np.integer)):
        displs = [int(displs) + sum(counts[:i]) for i in range(size)]
    displs = [int(d) for d in displs]
    return VBuf(mem, dt, counts, displs, obj)


def typed_count(nbytes: int, datatype: Datatype) -> int:
    """Elements of ``datatype`` in ``nbytes`` bytes (MPI_UNDEFINED when not whole)."""
    size = datatype.size
    if size == 0:
        return 0
    return nbytes // size if nbytes % size == 0 else -32766
