"""The peer-to-peer wire format of ``parcomm bcast`` over asyncio TCP streams.

The codec is generic: it carries *records* ``(type_code, fields, payload)`` —
a 16-bit type code, up to :data:`MAX_FIELDS` signed 64-bit integers and an
optional byte payload. The glue maps the protocol's message dataclasses
(``messages.py``) to records and back (e.g. ``Piece(index, data)`` ->
``Record(PIECE, (index,), data)``); this module knows nothing of them.

Frame layout (big endian)::

    u32 body_length | u16 type_code | u16 n_fields | u8 flags | n_fields x i64 | payload
    flags bit 0: a payload follows (distinguishes ``None`` from ``b""``)

A frame longer than ``max_payload`` + header is refused before it is read
(:class:`FrameTooLarge`): set ``max_payload`` to the largest payload the protocol
sends, i.e. max(piece size, possession bitmap size).

A connection starts with the job's mutual HMAC challenge-response
(:mod:`parcomm.auth`): until the peer has proved it holds the job's key,
nothing it sends is read beyond the fixed-size handshake, and nothing about
the broadcast is sent to it. Then a :class:`Hello` in each direction (magic,
protocol version, rank, and the object's ETag, size and piece size); a peer
of another broadcast or version is refused with :class:`HandshakeError`.
"""

from __future__ import annotations

import asyncio
import struct
from dataclasses import dataclass
from typing import Awaitable, Callable, NamedTuple

from ...auth import AuthError, Gate, JobKey, authenticate

MAGIC = b"PCBC"
PROTOCOL_VERSION = 1
MAX_FIELDS = 64

_LENGTH = struct.Struct("!I")
_BODY_HEAD = struct.Struct("!HHB")
_FIELD = struct.Struct("!q")
_HELLO_HEAD = struct.Struct("!4sHIQIH")  # magic, version, rank, size, piece_size, etag length
_MAX_ETAG = 1024
_HAS_PAYLOAD = 1
#: Bound into every handshake proof: a proof made for SocketComm or the rendezvous is worthless here.
AUTH_CONTEXT = b"parcomm-bcast-peer-1"


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


def encode_record(record: Record) -> bytes:
    """One complete frame, length prefix included."""
    type_code, fields, payload = record
    if not 0 <= type_code <= 0xFFFF:
        raise WireError(f"type code {type_code} does not fit in 16 bits")
    if len(fields) > MAX_FIELDS:
        raise WireError(f"{len(fields)} fields, at most {MAX_FIELDS}")
    try:
        packed = b"".join(_FIELD.pack(f) for f in fields)
    except struct.error as exc:
        raise WireError(f"field out of the signed 64-bit range: {fields}") from exc
    flags = _HAS_PAYLOAD if payload is not None else 0
    body_len = _BODY_HEAD.size + len(packed) + (len(payload) if payload is not None else 0)
    return b"".join((_LENGTH.pack(body_len), _BODY_HEAD.pack(type_code, len(fields), flags), packed, payload or b""))


def decode_body(body: bytes) -> Record:
    """The record in a frame body (the bytes after the length prefix)."""
    if len(body) < _BODY_HEAD.size:
        raise WireError(f"frame of {len(body)} bytes is shorter than its header")
    type_code, n_fields, flags = _BODY_HEAD.unpack_from(body)
    if n_fields > MAX_FIELDS:
        raise WireError(f"frame declares {n_fields} fields, at most {MAX_FIELDS}")
    fields_end = _BODY_HEAD.size + n_fields * _FIELD.size
    if len(body) < fields_end:
        raise WireError("frame shorter than its fields")
    fields = tuple(_FIELD.unpack_from(body, _BODY_HEAD.size + i * _FIELD.size)[0] for i in range(n_fields))
    if flags & ~_HAS_PAYLOAD:
        raise WireError(f"unknown frame flags {flags:#x}")
    if flags & _HAS_PAYLOAD:
        return Record(type_code, fields, bytes(body[fields_end:]))
    if len(body) != fields_end:
        raise WireError("trailing bytes in a frame without payload")
    return Record(type_code, fields, None)


async def read_record(reader: asyncio.StreamReader, max_payload: int) -> Record | None:
    """The next record, or None at a clean end of stream (between frames)."""
    try:
        head = await reader.readexactly(_LENGTH.size)
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            return None
        raise WireError("stream ended inside a frame length") from None
    (length,) = _LENGTH.unpack(head)
    limit = max_frame_size(max_payload)
    if length > limit:
        raise FrameTooLarge(
            f"frame of {length} bytes exceeds the limit of {limit} (payload {max_payload} + header); refusing it"
        )
    try:
        body = await reader.readexactly(length)
    except asyncio.IncompleteReadError:
        raise WireError(f"stream ended inside a frame of {length} bytes") from None
    return decode_body(body)


def write_record(writer: asyncio.StreamWriter, record: Record) -> None:
    """Queue one frame; the caller awaits ``writer.drain()`` for flow control."""
    writer.write(encode_record(record))


# -- handshake -----------------------------------------------------------------
@dataclass(frozen=True)
class Hello:
    rank: int
    etag: str
    size: int
    piece_size: int
    version: int = PROTOCOL_VERSION

    def encode(self) -> bytes:
        etag = self.etag.encode()
        if len(etag) > _MAX_ETAG:
            raise WireError("etag too long")
        return _HELLO_HEAD.pack(MAGIC, self.version, self.rank, self.size, self.piece_size, len(etag)) + etag

    @classmethod
    async def read(cls, reader: asyncio.StreamReader) -> "Hello":
        try:
            head = await reader.readexactly(_HELLO_HEAD.size)
        except asyncio.IncompleteReadError:
            raise HandshakeError("connection closed during the handshake") from None
        magic, version, rank, size, piece_size, etag_len = _HELLO_HEAD.unpack(head)
        if magic != MAGIC:
            raise HandshakeError("the peer is not a parcomm bcast node (bad magic)")
        if etag_len > _MAX_ETAG:
            raise HandshakeError("etag too long in handshake")
        try:
            etag = (await reader.readexactly(etag_len)).decode()
        except (asyncio.IncompleteReadError, UnicodeDecodeError):
            raise HandshakeError("bad etag in handshake") from None
        return cls(rank, etag, size, piece_size, version)

    def mismatch(self, other: "Hello") -> str | None:
        """Why ``other`` belongs to a different broadcast, or None if compatible."""
        if other.version != self.version:
            return f"protocol version {other.version}, ours is {self.version}"
        for name in ("etag", "size", "piece_size"):
            if getattr(other, name) != getattr(self, name):
                return f"{name} {getattr(other, name)!r}, ours is {getattr(self, name)!r} (another broadcast)"
        return None


async def handshake(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    ours: Hello,
    *,
    expect_rank: int | None = None,
    timeout: float = 10.0,
) -> Hello:
    """Exchange Hellos (both sides send first) and check the peer's; returns it.
    Call only on an authenticated connection (:func:`connect_peer`, :func:`serve_peers`)."""
    writer.write(ours.encode())
    await asyncio.wait_for(writer.drain(), timeout)
    try:
        theirs = await asyncio.wait_for(Hello.read(reader), timeout)
    except asyncio.TimeoutError:
        raise HandshakeError(f"no handshake from the peer within {timeout:.0f} s") from None
    problem = ours.mismatch(theirs)
    if problem is None and expect_rank is not None and theirs.rank != expect_rank:
        problem = f"rank {theirs.rank}, expected {expect_rank}"
    if problem is None and theirs.rank == ours.rank:
        problem = f"same rank {ours.rank} as ours"
    if problem is not None:
        raise HandshakeError(f"refusing peer: {problem}")
    return theirs


# -- connections ---------------------------------------------------------------
class PeerConnection:
    """A handshaken TCP connection to one peer, carrying records."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Hello, max_payload: int
    ) -> None:
        self.reader, self.writer = reader, writer
        self.peer = peer
        self.max_payload = max_payload
        self.bytes_sent = 0
        self.bytes_received = 0

    @property
    def rank(self) -> int:
        return self.peer.rank

    async def send(self, record: Record) -> None:
        frame = encode_record(record)
        if len(frame) - _LENGTH.size > max_frame_size(self.max_payload):
            raise FrameTooLarge(
                f"refusing to send a frame of {len(frame)} bytes (limit {max_frame_size(self.max_payload)})"
            )
        self.writer.write(frame)
        self.bytes_sent += len(frame)
        await self.writer.drain()

    async def recv(self, timeout: float | None = None) -> Record | None:
        """The next record; None when the peer closed; TimeoutError if it stalls."""
        record = await asyncio.wait_for(read_record(self.reader, self.max_payload), timeout)
        if record is not None:
            self.bytes_received += (
                _LENGTH.size + _BODY_HEAD.size + len(record.fields) * _FIELD.size + len(record.payload or b"")
            )
        return record

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass


async def connect_peer(
    host: str,
    port: int,
    ours: Hello,
    max_payload: int,
    key: JobKey,
    *,
    expect_rank: int | None = None,
    timeout: float = 10.0,
) -> PeerConnection:
    """Connect, prove membership both ways, then exchange Hellos. A peer that
    fails authentication raises :class:`HandshakeError` (never retried into)."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    try:
        try:
            await authenticate(reader, writer, key, initiator=True, context=AUTH_CONTEXT, timeout=timeout)
        except AuthError as exc:
            raise NotAMember(f"{host}:{port} is not a member of this job: {exc}") from None
        theirs = await handshake(reader, writer, ours, expect_rank=expect_rank, timeout=timeout)
    except BaseException:
        writer.close()
        raise
    return PeerConnection(reader, writer, theirs, max_payload)


async def serve_peers(
    ours: Hello,
    max_payload: int,
    on_peer: Callable[[PeerConnection], Awaitable[None]],
    key: JobKey,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    sock: object | None = None,
    timeout: float = 10.0,
    gate: Gate | None = None,
    on_refused: Callable[[str], None] | None = None,
) -> asyncio.base_events.Server:
    """Accept peers (on ``host:port`` or an already bound listening ``sock``); each
    one that proves membership and passes the handshake is handed to ``on_peer``.
    Outsiders are dropped and logged by ``gate`` (at most its limit authenticate at
    once); members of another broadcast are closed and reported to ``on_refused``."""
    gate = gate if gate is not None else Gate(f"bcast rank {ours.rank}")

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not await gate.admit(reader, writer, key, context=AUTH_CONTEXT, timeout=timeout):
            return
        try:
            theirs = await handshake(reader, writer, ours, timeout=timeout)
        except (WireError, ConnectionError, asyncio.TimeoutError) as exc:
            writer.close()
            if on_refused is not None:
                on_refused(str(exc) or type(exc).__name__)
            return
        await on_peer(PeerConnection(reader, writer, theirs, max_payload))

    if sock is not None:
        return await asyncio.start_server(accept, sock=sock)
    return await asyncio.start_server(accept, host, port)
