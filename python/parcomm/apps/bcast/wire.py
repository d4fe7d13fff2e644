"""The peer-to-peer wire format of ``parcomm bcast`` over asyncio TCP streams.

The codec is generic: it carries *records* ``(type_code, fields, payload)`` —
a 16-bit type code, up to :data:`MAX_FIELDS` signed 64-bit integers and an
optional byte payload. The glue maps the protocol's message dataclasses
(``messages.py``) to records and back (e.g. ``Piece(index, data)`` ->
``Record(PIECE, (index,), data)``); this module knows nothing of them.

Frame layout (big endian)::

    u32 body_length | u16 type_code | u16 n_fields | u8 flags | n_fields x i64 | payload | tag
    flags bit 0: a payload follows (distinguishes ``None`` from ``b""``)
    flags bit 1: the payload is not covered by the tag (a piece: its sha256 is checked
                 against the hash list instead, so it can go from the file by sendfile)

The 16-byte tag (:class:`parcomm.auth.FrameAuth`, keyed from the connection's
handshake, sequence-numbered) covers everything before it but a bit-1 payload;
it is not counted in ``body_length``. :func:`encode_record` and
:func:`decode_body` are the codec alone (no tag): the links add and check tags.

A frame longer than ``max_payload`` + header is refused before it is read
(:class:`FrameTooLarge`): set ``max_payload`` to the largest payload the protocol
sends, i.e. max(piece size, possession bitmap size).

A connection starts with the job's handshake (:mod:`parcomm.auth`), which
carries a :class:`Hello` each way (magic, protocol version, rank, the object's
ETag, size and piece size, the listening address) and the rank the connecting
node expects to reach: until the peer has proved it holds the job's key,
nothing it sends is read beyond the bounded handshake, and nothing about the
broadcast is sent to it; a member of another broadcast or version, or at the
wrong rank, is refused (:class:`HandshakeError`, with the reason).
The connections themselves (blocking sockets, one thread per direction) are
:mod:`.links`.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from dataclasses import dataclass
from typing import NamedTuple

from ...auth import TAG_SIZE, FrameAuth, FrameAuthError
from ...auth.sockets import recv_exact

MAGIC = b"PCBC"
# 2: the Hello carries the listening address (a restarted node moves); 3: Notice, Watch;
# 4: Notice.epoch (lost/joined facts in order); 5: Hello inside the handshake, every frame tagged
PROTOCOL_VERSION = 5
MAX_FIELDS = 64

_LENGTH = struct.Struct("!I")
_BODY_HEAD = struct.Struct("!HHB")
_FIELD = struct.Struct("!q")
# magic, version, rank, size, piece_size, etag length, listening port, listening host length
_HELLO_HEAD = struct.Struct("!4sHIQIHHB")
_MAX_ETAG = 1024
_HAS_PAYLOAD = 1
#: The payload is checked by its content (a piece against the hash list), not by the frame's tag.
CONTENT_VERIFIED = 2
_EXPECT = struct.Struct("!I")
_ANY_RANK = 0xFFFFFFFF
#: Bound into every handshake proof and frame key: worthless for SocketComm or the rendezvous.
AUTH_CONTEXT = b"parcomm-bcast-peer-2"


class Record(NamedTuple):
    type_code: int
    fields: tuple[int, ...] = ()
    payload: bytes | None = None


class WireError(Exception):
    """A malformed or unacceptable frame; the connection should be dropped."""


class FrameTooLarge(WireError):
    pass


class HandshakeError(WireError):
    pass


class NotAMember(HandshakeError):
    """The other end did not complete the job's authentication (wrong key, an
    impostor, or a listener too busy to answer): worth retrying until a deadline."""


def max_frame_size(max_payload: int, max_fields: int = MAX_FIELDS) -> int:
    """Largest body accepted for payloads up to ``max_payload`` bytes."""
    return _BODY_HEAD.size + max_fields * _FIELD.size + max_payload


def frame_head(
    type_code: int, fields: tuple[int, ...], payload_len: int | None, *, content_verified: bool = False
) -> bytes:
    """A frame up to its payload: length prefix, type, fields and flags. The payload
    (``payload_len`` bytes, None for no payload) follows it on the wire, so a sender
    can hand the payload to the kernel straight from a file (``sendfile``)."""
    if not 0 <= type_code <= 0xFFFF:
        raise WireError(f"type code {type_code} does not fit in 16 bits")
    if len(fields) > MAX_FIELDS:
        raise WireError(f"{len(fields)} fields, at most {MAX_FIELDS}")
    try:
        packed = b"".join(_FIELD.pack(f) for f in fields)
    except struct.error as exc:
        raise WireError(f"field out of the signed 64-bit range: {fields}") from exc
    flags = _HAS_PAYLOAD if payload_len is not None else 0
    if content_verified and payload_len is not None:
        flags |= CONTENT_VERIFIED
    body_len = _BODY_HEAD.size + len(packed) + (payload_len or 0)
    return b"".join((_LENGTH.pack(body_len), _BODY_HEAD.pack(type_code, len(fields), flags), packed))


def encode_record(record: Record) -> bytes:
    """One complete frame, length prefix included."""
    type_code, fields, payload = record
    head = frame_head(type_code, fields, None if payload is None else len(payload))
    return head + payload if payload else head


def _check_length(length: int, max_payload: int) -> None:
    """Refuse a frame longer than payloads up to ``max_payload`` allow, before reading it."""
    limit = max_frame_size(max_payload)
    if length > limit:
        raise FrameTooLarge(
            f"frame of {length} bytes exceeds the limit of {limit} (payload {max_payload} + header); refusing it"
        )


def _check_body(length: int, n_fields: int, flags: int) -> int:
    """Check a body head against the body's length; returns where the fields end."""
    if n_fields > MAX_FIELDS:
        raise WireError(f"frame declares {n_fields} fields, at most {MAX_FIELDS}")
    if flags & ~(_HAS_PAYLOAD | CONTENT_VERIFIED) or (flags & CONTENT_VERIFIED and not flags & _HAS_PAYLOAD):
        raise WireError(f"unknown frame flags {flags:#x}")
    fields_end = _BODY_HEAD.size + n_fields * _FIELD.size
    if length < fields_end:
        raise WireError("frame shorter than its fields")
    if not flags & _HAS_PAYLOAD and length != fields_end:
        raise WireError("trailing bytes in a frame without payload")
    return fields_end


def parse_head(prefix: bytes, max_payload: int) -> tuple[int, int, int, int]:
    """(body length, type code, number of fields, flags) from a frame's first 9 bytes, checked
    against the limit for payloads up to ``max_payload`` before anything more is read."""
    (length,) = _LENGTH.unpack_from(prefix)
    _check_length(length, max_payload)
    if length < _BODY_HEAD.size:
        raise WireError(f"frame of {length} bytes is shorter than its header")
    type_code, n_fields, flags = _BODY_HEAD.unpack_from(prefix, _LENGTH.size)
    _check_body(length, n_fields, flags)
    return length, type_code, n_fields, flags


#: Bytes :func:`parse_head` needs: the length prefix and the fixed body head.
HEAD_SIZE = _LENGTH.size + _BODY_HEAD.size


def unpack_fields(data: bytes, n_fields: int) -> tuple[int, ...]:
    return struct.unpack(f"!{n_fields}q", data) if n_fields else ()


def decode_body(body: bytes) -> Record:
    """The record in a frame body (the bytes after the length prefix)."""
    if len(body) < _BODY_HEAD.size:
        raise WireError(f"frame of {len(body)} bytes is shorter than its header")
    type_code, n_fields, flags = _BODY_HEAD.unpack_from(body)
    fields_end = _check_body(len(body), n_fields, flags)
    fields = unpack_fields(body[_BODY_HEAD.size : fields_end], n_fields)
    payload = bytes(body[fields_end:]) if flags & _HAS_PAYLOAD else None
    return Record(type_code, fields, payload)


async def read_record(reader: asyncio.StreamReader, max_payload: int, frames: FrameAuth | None = None) -> Record | None:
    """The next record, or None at a clean end of stream (between frames). With
    ``frames``, its tag is read and checked before the record is decoded."""
    try:
        head = await reader.readexactly(_LENGTH.size)
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            return None
        raise WireError("stream ended inside a frame length") from None
    (length,) = _LENGTH.unpack(head)
    _check_length(length, max_payload)
    try:
        body = await reader.readexactly(length)
        if frames is not None:
            tag = await reader.readexactly(TAG_SIZE)
    except asyncio.IncompleteReadError:
        raise WireError(f"stream ended inside a frame of {length} bytes") from None
    if frames is not None:
        try:
            frames.check(tag, head, body)
        except FrameAuthError as exc:
            raise WireError(str(exc)) from None
    return decode_body(body)


def write_record(writer: asyncio.StreamWriter, record: Record, frames: FrameAuth | None = None) -> None:
    """Queue one frame (tagged with ``frames``); the caller awaits ``writer.drain()``."""
    frame = encode_record(record)
    writer.write(frame + frames.seal(frame) if frames is not None else frame)


# -- handshake -----------------------------------------------------------------
@dataclass(frozen=True)
class Hello:
    rank: int
    etag: str
    size: int
    piece_size: int
    version: int = PROTOCOL_VERSION
    listen: tuple[str, int] = ("", 0)  # where this node accepts peers ("", 0: not said)

    def encode(self) -> bytes:
        etag, host = self.etag.encode(), self.listen[0].encode()
        if len(etag) > _MAX_ETAG:
            raise WireError("etag too long")
        if len(host) > 255 or not 0 <= self.listen[1] <= 0xFFFF:
            raise WireError(f"bad listening address {self.listen!r}")
        head = _HELLO_HEAD.pack(
            MAGIC, self.version, self.rank, self.size, self.piece_size, len(etag), self.listen[1], len(host)
        )
        return head + etag + host

    @classmethod
    def decode(cls, data: bytes) -> "Hello":
        """A Hello from the bytes the handshake carried (all of them, nothing after)."""
        if len(data) < _HELLO_HEAD.size:
            raise HandshakeError("the peer's Hello is truncated")
        magic, version, rank, size, piece_size, etag_len, port, host_len = _HELLO_HEAD.unpack_from(data)
        if magic != MAGIC:
            raise HandshakeError("the peer is not a parcomm bcast node (bad magic)")
        if etag_len > _MAX_ETAG or len(data) != _HELLO_HEAD.size + etag_len + host_len:
            raise HandshakeError("the peer's Hello has the wrong length")
        try:
            etag = data[_HELLO_HEAD.size : _HELLO_HEAD.size + etag_len].decode()
            host = data[_HELLO_HEAD.size + etag_len :].decode()
        except UnicodeDecodeError:
            raise HandshakeError("bad etag or host in handshake") from None
        return cls(rank, etag, size, piece_size, version, (host, port))

    @classmethod
    def read_from(cls, sock: socket.socket, deadline: float) -> "Hello":
        """The peer's Hello from a blocking socket, by ``deadline`` (time.monotonic)."""
        try:
            head = recv_exact(sock, _HELLO_HEAD.size, deadline)
            etag_len, host_len = _HELLO_HEAD.unpack(head)[5], _HELLO_HEAD.unpack(head)[7]
            if etag_len > _MAX_ETAG:
                raise HandshakeError("etag too long in handshake")
            rest = recv_exact(sock, etag_len + host_len, deadline)
        except ConnectionError:
            raise HandshakeError("connection closed during the handshake") from None
        except (TimeoutError, socket.timeout):
            raise HandshakeError("no handshake from the peer in time") from None
        return cls.decode(head + rest)

    def mismatch(self, other: "Hello") -> str | None:
        """Why ``other`` belongs to a different broadcast, or None if compatible."""
        if other.version != self.version:
            return f"protocol version {other.version}, ours is {self.version}"
        for name in ("etag", "size", "piece_size"):
            if getattr(other, name) != getattr(self, name):
                return f"{name} {getattr(other, name)!r}, ours is {getattr(self, name)!r} (another broadcast)"
        return None

    @staticmethod
    def expectation(rank: int | None) -> bytes:
        """What a connecting node tells the handshake about the peer it means to reach."""
        return _EXPECT.pack(_ANY_RANK if rank is None else rank)

    def check_claim(self, hello: bytes, expect: bytes) -> "Hello":
        """A connecting member's authenticated claim: its Hello, if it is another rank of
        this broadcast and expects to reach us; else :class:`HandshakeError` saying why."""
        theirs = Hello.decode(hello)
        self.check_peer(theirs)
        wanted = _EXPECT.unpack(expect)[0] if len(expect) == _EXPECT.size else None
        if wanted is None or (wanted != _ANY_RANK and wanted != self.rank):
            raise HandshakeError(f"refusing peer: this is rank {self.rank}, expected {wanted}")
        return theirs

    def check_peer(self, theirs: "Hello", expect_rank: int | None = None) -> None:
        """Raise :class:`HandshakeError` unless ``theirs`` is another rank of this broadcast."""
        problem = self.mismatch(theirs)
        if problem is None and expect_rank is not None and theirs.rank != expect_rank:
            problem = f"rank {theirs.rank}, expected {expect_rank}"
        if problem is None and theirs.rank == self.rank:
            problem = f"same rank {self.rank} as ours"
        if problem is not None:
            raise HandshakeError(f"refusing peer: {problem}")
