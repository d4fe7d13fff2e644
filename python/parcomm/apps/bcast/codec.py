"""Protocol messages (:mod:`.messages`) <-> wire records (:mod:`.wire`).

Integer fields travel as record fields; the one ``bytes`` field (a
possession bitmap) and the one ``tuple`` field (granted works, which may be
hundreds long) travel as the payload, the tuple packed as big-endian u32.
A ``Piece`` record carries the piece's bytes as its payload.
"""

from __future__ import annotations

import numpy as np

from .messages import MESSAGE_TYPES, Message, Piece
from .wire import Record, WireError

_U32 = np.dtype(">u4")


def encode(msg: Message, data: bytes | None = None) -> Record:
    """The record of ``msg``; ``data`` is the payload of a :class:`Piece`."""
    fields: list[int] = []
    payload: bytes | None = data if isinstance(msg, Piece) else None
    for name in msg.FIELDS:
        value = getattr(msg, name)
        if isinstance(value, bytes):
            payload = value
        elif isinstance(value, tuple):
            payload = np.asarray(value, dtype=_U32).tobytes()
        else:
            fields.append(int(value))
    return Record(msg.TYPE, tuple(fields), payload)


def decode(record: Record) -> tuple[Message, bytes | None]:
    """The message of ``record`` and, for a :class:`Piece`, its bytes."""
    klass = MESSAGE_TYPES.get(record.type_code)
    if klass is None:
        raise WireError(f"unknown message type {record.type_code}")
    ints = iter(record.fields)
    values = []
    annotations = klass.__annotations__
    for name in klass.FIELDS:
        kind = annotations[name]
        if kind in (bytes, "bytes"):
            values.append(record.payload or b"")
        elif str(kind).startswith("tuple"):
            payload = record.payload or b""
            if len(payload) % 4:
                raise WireError(f"{klass.__name__}: payload of {len(payload)} bytes is not a list of u32")
            values.append(tuple(int(v) for v in np.frombuffer(payload, dtype=_U32)))
        else:
            try:
                values.append(next(ints))
            except StopIteration:
                raise WireError(f"{klass.__name__}: missing field {name}") from None
    if next(ints, None) is not None:
        raise WireError(f"{klass.__name__}: too many fields")
    msg = klass(*values)
    return msg, (record.payload if isinstance(msg, Piece) else None)
