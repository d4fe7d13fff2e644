"""SocketComm: rank programs over a full mesh of TCP connections (asyncio).

One stream socket per pair of ranks, as seed 000's cluster used. This is the
backend that runs across machines without MPI, and the one the emulated
cluster (``parcomm.emu``) runs inside each network namespace.

**Rendezvous.** Every rank reads the same list of addresses, one ``host
port`` per rank (a file, see :func:`read_addresses`, or a list). Rank r
listens on its own address; for every pair the *lower* rank connects to the
higher one, so each pair gets exactly one connection and nobody waits for a
connection it must make itself (all connects and accepts run concurrently).
Connects are retried with exponential back-off, bounded both in attempts and
in time (``connect_timeout``), because peers start at different moments.

**Membership.** Every connection first runs the job's handshake
(:mod:`parcomm.auth`): the connecting rank proves it holds the job's key and
claims its hello (magic, rank, size, and a token hashed from the address list
and protocol) and the rank it expects to reach; the accepting rank checks all
of that before it proves anything itself, and its proof covers its own hello.
A peer that does not hold the key is dropped before a single byte of it is
interpreted; a member at the wrong address (another rank, another run) is
refused with the reason. After the handshake every frame carries a 16-byte
tag under a per-direction key derived from it (:class:`parcomm.auth.FrameAuth`),
checked before the frame is acted on: so only this connection's genuine peer
can get a payload to ``pickle.loads`` (mpi4py's trust model: the job's own
ranks are trusted, nobody else is), and a relay in the middle can only pass
frames along or drop them. When the mesh is up the ranks pass a start barrier,
so every program starts within about one round trip of the others and
``wtime()`` counts from that start.

**Framing.** Each message is a 36-byte header (kind, source, tag, declared
``nbytes``, pickled length, message id), the pickled payload, then zero
padding up to ``nbytes`` when the declared size exceeds the pickle: the wire
really carries ``max(nbytes, len(pickle))`` payload bytes, so a size that
means bytes in the simulator means bytes here too. A 16-byte tag over the
header and the pickle ends the frame (the padding is discarded unread, so it
is not covered; its length is, in the header).

**Eager and rendezvous protocols** are :class:`parcomm.comm.p2p.P2PEngine`,
the same sans-IO state machine the simulator drives (MPICH CH3's rules):
messages whose wire size is at most ``eager_limit`` (128 KiB by default) go
at once; larger ones send a ready-to-send header, the receiver answers with a
clear-to-send when a matching receive is posted, and only then the data flows
(so ``send`` of a large message completes only once the receiver has posted
its receive, and two ranks that both send large messages before receiving
deadlock here exactly as under MPI and in the simulator). This module only
frames the engine's frames on TCP. Messages to self are delivered locally,
eagerly.

**Bounds.** A frame declaring more than ``max_message`` bytes, an eager
frame above the eager limit, and unexpected messages (arrived, not yet
received) from one peer beyond ``max_unexpected`` bytes all fail the run
with an error naming the peer, before anything is buffered.

**Completion.** A send completes when its last byte has been handed to the
kernel socket buffer (asyncio's ``drain``), like ``sent`` in the simulator.

**Shutdown.** When a rank's program returns, it waits for its own sends to
complete, sends a goodbye frame on every connection, half-closes them and
keeps reading until every peer has said goodbye too; only then are the sockets
closed. Nothing is left unread, so no connection is reset and no data is
lost. A rank that fails (its program raised, or timed out) aborts its
connections instead; its peers see the connection drop before the goodbye,
and fail every pending operation with a message naming the lost rank — as MPI
aborts the whole job. A receive posted for a rank that has already said
goodbye without a matching message fails at once: it can never complete.

**Socket options** (``sock_options``): ``nodelay`` (TCP_NODELAY), ``sndbuf``
and ``rcvbuf`` (SO_SNDBUF/SO_RCVBUF, set before connect/listen so the window
scale is negotiated for them; Linux doubles the value and caps it at
``net.core.{w,r}mem_max``), and where the kernel offers them ``rto_min_us``
(TCP_RTO_MIN_US, Linux >= 6.16) and ``rto_max_ms`` (TCP_RTO_MAX_MS, Linux >=
6.15); an unsupported option is an error, never silently ignored.

**Counters.** At shutdown each rank reads TCP_INFO from each of its sockets:
bytes sent, bytes and segments retransmitted, RTO timeouts (Linux >= 6.7),
segments sent and received. These are exact per-connection figures, unlike
``/proc/net/snmp``, which counts the whole network namespace.
"""

from __future__ import annotations

import asyncio
import pickle
import socket as _socket
import struct
import sys
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Sequence

from ..auth import (
    ATTEMPT_TIMEOUT_S,
    DEFAULT_TIMEOUT_S,
    TAG_SIZE,
    AuthError,
    FrameAuth,
    FrameAuthError,
    Gate,
    JobKey,
    JobKeyError,
    PeerRefused,
    Refusal,
    authenticate,
    resolve_key,
)
from ..auth.quiet import AsyncAcceptor
from .aio import AioCommBase, CommTimeout, Request, wire_nbytes
from .base import ANY_SOURCE, ANY_TAG, CommError, Status
from .matching import Envelope
from .p2p import CREDIT, CTS, DATA, EAGER, RTS, Frame, P2PEngine, ProtocolError
from .sim import DEFAULT_EAGER_LIMIT
from .sockopts import _check_sock_options, _token, apply_sock_options, tcp_info_counters

__all__ = ["SocketComm"]

# hello (inside the handshake): magic, rank, size, run token
_HELLO = struct.Struct("!8sIIQ")
_MAGIC = b"parcomm2"
# what a connecting rank expects of the one it reaches: its rank
_EXPECT = struct.Struct("!I")
# frame header: kind, source, tag, declared nbytes, pickled length, message id
_HDR = struct.Struct("!BxxxIIQQQ")
# the same 36 bytes with the communicator context in two of the spare bytes:
# kind, reserved (0), context, source, tag, declared nbytes, pickled length, message id
_HDRC = struct.Struct("!BBHIIQQQ")
_WIRE_ANY_TAG = 0xFFFFFFFF
#: Communicator contexts a frame can name (sub-communicators made by Split/Dup).
MAX_CONTEXT = 0xFFFF
_EAGER, _RTS, _CTS, _DATA, _BYE = EAGER, RTS, CTS, DATA, 5  # the first four are P2PEngine's frames
_KIND_NAMES = {
    _EAGER: "eager",
    _RTS: "ready-to-send",
    _CTS: "clear-to-send",
    _DATA: "data",
    _BYE: "goodbye",
    CREDIT: "credit",
}

# Tag of the start barrier, far above the collectives' reserved tags.
# Frames up to this size go to the kernel in one write (header and payload
# together, so Nagle never holds a header back); larger ones are streamed.
_ONE_WRITE = 256 * 1024
_CHUNK = 1 << 20
_ZEROS = memoryview(bytes(_CHUNK))
_READ_LIMIT = 1 << 20

#: Protocol name bound into every handshake proof and frame key (a proof for bcast is worthless here).
_AUTH_CONTEXT = b"parcomm-socketcomm-2"
#: The largest message a rank accepts: 2 GiB, MPI's classic limit (an int count of MPI_BYTE).
DEFAULT_MAX_MESSAGE = (1 << 31) - 1
#: Bytes of messages from one peer that may wait unreceived; each counts at least
#: _ENVELOPE_COST so that floods of empty messages are bounded too.
DEFAULT_MAX_UNEXPECTED = 512 << 20
_ENVELOPE_COST = 256

#: Seconds a finished rank waits for its peers' goodbyes beyond its own time limit,
#: so a slower peer's own timeout (with its diagnosis) fires first.
_LINGER_GRACE_S = 2.0


# --- the communicator -------------------------------------------------------------------


@dataclass
class _Peer:
    rank: int
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    frames: FrameAuth  # tags for this connection's frames, both ways
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)
    reader_task: asyncio.Task | None = None
    writer_task: asyncio.Task | None = None
    bye_received: bool = False
    lost: bool = False
    busy: bool = False  # the writer task is in the middle of a frame
    unexpected: int = 0  # bytes of its messages arrived and not yet received


class _Bye(NamedTuple):
    """The goodbye frame, sealed when queued (after every frame queued before it)."""

    hdr: bytes
    tag: bytes


class _ProtocolViolation(ConnectionError):
    """A member broke the framing or a bound: its connection is dropped, the run fails."""


def _cost(env: Envelope) -> int:
    return _ENVELOPE_COST + (len(env.payload) if isinstance(env.payload, (bytes, bytearray)) else 0)


class SocketComm(AioCommBase):
    """The communicator a rank program receives over the TCP mesh.

    Built and torn down by :func:`run_rank`; a program only uses the
    Communicator API (``send``/``recv``/``isend``/``irecv``/``wait``/
    ``waitall``/``barrier``/``compute``/``sleep``/``wtime``).
    """

    def __init__(
        self,
        rank: int,
        size: int,
        addresses: Sequence[tuple[str, int]],
        *,
        sock_options: dict[str, Any] | None = None,
        eager_limit: int = DEFAULT_EAGER_LIMIT,
        connect_timeout: float = 30.0,
        connect_attempts: int = 400,
        key: JobKey | None = None,
        max_message: int = DEFAULT_MAX_MESSAGE,
        max_unexpected: int = DEFAULT_MAX_UNEXPECTED,
        rendezvous: str = "sender",
    ):
        super().__init__()
        if rendezvous not in ("sender", "receiver"):
            raise CommError(f"rendezvous must be 'sender' or 'receiver', got {rendezvous!r}")
        if size < 1:
            raise CommError(f"size must be at least 1, got {size}")
        if not isinstance(rank, int) or not 0 <= rank < size:
            raise CommError(f"rank {rank!r} is not in 0..{size - 1}")
        if len(addresses) < size:
            raise CommError(f"{size} ranks need {size} addresses, got {len(addresses)}")
        self.rank, self.size = rank, size
        self.addresses = [(host, port) for host, port in addresses[:size]]
        self.sock_options = _check_sock_options(sock_options)
        self.eager_limit = int(eager_limit)
        self.connect_timeout = float(connect_timeout)
        self.connect_attempts = int(connect_attempts)
        # ranks of one run must speak one protocol: a rank with the other one is "not of this run"
        self._token = _token(self.addresses) ^ (1 if rendezvous == "receiver" else 0)
        self.rendezvous = rendezvous
        # receiver-driven: credits this rank sent, per (peer, tag); a large eager frame must use one
        self._credits_out: dict[tuple[int, int], int] = {}
        try:
            self._key = key if key is not None else resolve_key()
        except JobKeyError as e:
            raise CommError(str(e)) from None
        self._gate = Gate(f"rank {rank}")
        self._claimed: set[int] = set()  # ranks whose claim was accepted (registered or about to be)
        #: Seconds an accepting rank gives one connection for the handshake (see parcomm.auth).
        self._handshake_timeout = DEFAULT_TIMEOUT_S
        self.max_message = int(max_message)
        self.max_unexpected = int(max_unexpected)
        self._engine = P2PEngine(rank, self.eager_limit, rendezvous)
        self._peers: dict[int, _Peer] = {}
        self._server: AsyncAcceptor | None = None
        self._closing = False
        self.counters: dict[str, int] = {}

    # --- mesh set-up ------------------------------------------------------------------
    async def _open(self, listener: _socket.socket | None = None) -> None:
        """Connect the mesh (bounded by ``connect_timeout``)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.connect_timeout
        if listener is None and self.rank > 0:
            listener = _listen(*self.addresses[self.rank], self.sock_options)
        inbound_done = asyncio.Event()
        expected_in = set(range(self.rank))
        if not expected_in:
            inbound_done.set()
        if listener is not None:
            if not expected_in:
                listener.close()
            else:

                async def on_accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                    await self._accept(reader, writer, expected_in, inbound_done, deadline)

                # accepts at once; a connection waits quietly (no task) until it speaks: see auth.quiet
                self._server = AsyncAcceptor(listener, on_accept, read_limit=_READ_LIMIT)
        outbound = [asyncio.ensure_future(self._connect(p, deadline)) for p in range(self.rank + 1, self.size)]
        inbound = asyncio.ensure_future(inbound_done.wait())
        try:
            remaining = max(0.0, deadline - loop.time())
            await asyncio.wait([*outbound, inbound], timeout=remaining)
            for t in outbound:
                if t.done() and t.exception() is not None:
                    raise t.exception()  # type: ignore[misc]
            missing = sorted(set(range(self.size)) - set(self._peers) - {self.rank})
            if missing:
                raise CommError(
                    f"rank {self.rank}: ranks {missing[:8]} did not connect within {self.connect_timeout:g} s "
                    "(are they running, with the same addresses file?)"
                )
        finally:
            for task in (*outbound, inbound):
                if not task.done():
                    task.cancel()
            await asyncio.gather(*outbound, inbound, return_exceptions=True)
            if self._server is not None:
                self._server.close()
                self._server = None
            self._gate.close()  # outsiders still mid-handshake: shed now, not at their deadline
        for peer in self._peers.values():
            peer.reader_task = asyncio.ensure_future(self._read_loop(peer))
            peer.writer_task = asyncio.ensure_future(self._write_loop(peer))

    def _hello(self) -> bytes:
        return _HELLO.pack(_MAGIC, self.rank, self.size, self._token)

    def _check_hello(self, data: bytes, expect: set[int] | int) -> int | None:
        if len(data) != _HELLO.size:
            return None
        magic, peer, size, token = _HELLO.unpack(data)
        if magic != _MAGIC or size != self.size or token != self._token:
            return None
        if isinstance(expect, int):
            return peer if peer == expect else None
        return peer if peer in expect and peer not in self._peers else None

    def _judge_claim(self, expected: set[int], claimed: set[int], hello: bytes, expect: bytes) -> bytes:
        """A member's claim, authenticated: accept it (returning our hello) or say why not."""
        if len(expect) != _EXPECT.size or _EXPECT.unpack(expect)[0] != self.rank:
            wanted = _EXPECT.unpack(expect)[0] if len(expect) == _EXPECT.size else "?"
            raise Refusal(f"this is rank {self.rank}, not rank {wanted} (a different addresses file?)")
        peer = self._check_hello(hello, expected)
        if peer is None:
            raise Refusal(f"rank {self.rank} expects ranks 0..{self.rank - 1} of this run, once each")
        if peer in claimed:
            raise Refusal(f"rank {peer} is already connected to rank {self.rank}")
        claimed.add(peer)  # until this connection is registered: a second claim is refused
        return self._hello()

    async def _accept(self, reader, writer, expected: set[int], done: asyncio.Event, deadline: float) -> None:
        loop = asyncio.get_running_loop()
        claimed: set[int] = self._claimed
        mine: list[bytes] = []  # this connection's accepted claim, if any

        def judge(hello: bytes, expect: bytes) -> bytes:
            ours = self._judge_claim(expected, claimed, hello, expect)
            mine.append(hello)
            return ours

        result = await self._gate.admit(
            reader,
            writer,
            self._key,
            context=_AUTH_CONTEXT,
            accept=judge,
            timeout=max(0.01, min(self._handshake_timeout, deadline - loop.time())),
        )
        if result is None:
            # an outsider (dropped before anything was read), or a member refused; a claim accepted
            # on a connection that then failed is released, so the member's retry is not a duplicate
            if mine:
                claimed.discard(_HELLO.unpack(mine[0])[1])
            return
        hello, frames = result
        peer = _HELLO.unpack(hello)[1]
        try:
            apply_sock_options(writer.get_extra_info("socket"), self.sock_options, stage="tcp")
        except (OSError, CommError):
            claimed.discard(peer)
            writer.transport.abort()
            return
        self._peers[peer] = _Peer(peer, reader, writer, frames)
        if expected <= set(self._peers):
            done.set()

    async def _connect(self, peer: int, deadline: float) -> None:
        """Connect to ``peer`` and run the handshake, retrying with back-off until
        ``deadline``; the error says what the last attempt met."""
        loop = asyncio.get_running_loop()
        host, port = self.addresses[peer]
        t0 = loop.time()
        delay, last, attempts = 0.01, "no attempt", 0
        while attempts < self.connect_attempts and loop.time() < deadline:
            attempts += 1
            writer = None
            sock = None
            try:
                infos = await loop.getaddrinfo(host, port, type=_socket.SOCK_STREAM)
                family, _, proto, _, sockaddr = infos[0]
                sock = _socket.socket(family, _socket.SOCK_STREAM, proto)
                sock.setblocking(False)
                apply_sock_options(sock, self.sock_options, stage="buffers")
                remaining = max(0.01, deadline - loop.time())
                await asyncio.wait_for(loop.sock_connect(sock, sockaddr), min(remaining, 5.0))
                apply_sock_options(sock, self.sock_options, stage="tcp")
                reader, writer = await asyncio.open_connection(sock=sock, limit=_READ_LIMIT)
                sock = None  # owned by the transport now
                try:
                    hello, frames = await authenticate(
                        reader,
                        writer,
                        self._key,
                        initiator=True,
                        context=_AUTH_CONTEXT,
                        hello=self._hello(),
                        expect=_EXPECT.pack(peer),
                        timeout=max(0.01, min(ATTEMPT_TIMEOUT_S, deadline - loop.time())),
                    )
                except PeerRefused as e:  # a member answered, authenticated: retrying will not help
                    raise CommError(
                        f"rank {self.rank}: the member at {host}:{port} refused rank {self.rank}: {e}"
                    ) from None
                except AuthError as e:
                    raise ConnectionError(f"no handshake with {host}:{port}: {e}") from None
                if self._check_hello(hello, peer) is None:
                    raise CommError(f"rank {self.rank}: the member at {host}:{port} is not rank {peer} of this run")
                self._peers[peer] = _Peer(peer, reader, writer, frames)
                return
            except CommError:
                if writer is not None:
                    writer.transport.abort()
                raise
            except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError) as e:
                last = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
                if writer is not None:
                    writer.transport.abort()
                if sock is not None:
                    sock.close()
            await asyncio.sleep(max(0.0, min(delay, deadline - loop.time())))
            delay = min(delay * 2, 0.5)
        raise CommError(
            f"rank {self.rank}: could not connect to rank {peer} at {host}:{port} "
            f"({attempts} attempts in {loop.time() - t0:.1f} s; last: {last})"
        )

    # --- sending ----------------------------------------------------------------------
    def _send_pickled(self, dest: int, tag: int, data: bytes, size: int, req: Request, ctx: int = 0) -> None:
        if ctx > MAX_CONTEXT:
            raise CommError(f"rank {self.rank}: more than {MAX_CONTEXT} communicators were created")
        if dest == self.rank:  # to self: delivered here, eagerly whatever its size
            self._on_frame(self.rank, EAGER, tag, size, 0, data, ctx)
            self._complete(req)
            return
        peer = self._peers[dest]
        if peer.bye_received:  # it reads nothing more: report, do not lose it silently
            req._fail(CommError(f"rank {self.rank}: {req.describe} can never be received: rank {dest} has finished"))
            self._pending_reqs.discard(req)
            return
        self._engine.send(dest, tag, data, size, wire_nbytes(size, len(data)), req, ctx)
        self._flush()

    def _flush(self) -> None:
        """Carry out what the protocol engine asked for: frames to peers, deliveries."""
        for a in self._engine.take_actions():
            if isinstance(a, Frame):
                if a.kind == CREDIT:
                    key = (a.dest, a.tag)
                    self._credits_out[key] = self._credits_out.get(key, 0) + 1
                data = a.payload if a.payload is not None else b""
                plen = len(data) if a.kind != RTS else a.announce
                tag = a.tag if a.tag >= 0 else _WIRE_ANY_TAG  # a credit for an ANY_TAG receive
                hdr = _HDRC.pack(a.kind, 0, a.ctx, self.rank, tag, a.size, plen, a.msgid)
                pad = a.wire - len(data) if a.kind in (EAGER, DATA) else 0
                self._enqueue(self._peers[a.dest], hdr, data, pad, a.sent)
            else:
                self._deliver(a.req, a.payload, a.source, a.tag, a.size)

    def _enqueue(self, peer: _Peer, hdr: bytes, data: bytes, pad: int, req: Request | None) -> None:
        """Queue a frame for the peer's writer task or, when that task is idle
        and the frame small, hand it to the transport at once (one event-loop
        round trip less per message); frames on a connection keep their order."""
        tag = peer.frames.seal(hdr, data)  # now: frames are sealed in the order they go on the wire
        if (
            peer.busy
            or not peer.queue.empty()
            or peer.lost
            or peer.writer.transport.is_closing()
            or len(hdr) + len(data) + pad > _ONE_WRITE
        ):
            peer.queue.put_nowait((hdr, data, pad, req, tag))
            return
        peer.writer.write(b"".join((hdr, data, _ZEROS[:pad], tag)))
        if req is None:
            return
        if peer.writer.transport.get_write_buffer_size() == 0:
            self._complete(req)  # all of it is in the kernel's socket buffer
        else:
            peer.queue.put_nowait((b"", b"", 0, req, b""))  # the writer drains, then completes it

    async def _write_loop(self, peer: _Peer) -> None:
        w = peer.writer
        try:
            while True:
                item = await peer.queue.get()
                if isinstance(item, _Bye):
                    w.write(item.hdr + item.tag)
                    await w.drain()
                    if w.can_write_eof():
                        w.write_eof()
                    return
                hdr, data, pad, req, tag = item
                peer.busy = True
                if len(hdr) + len(data) + pad <= _ONE_WRITE:
                    if hdr:
                        w.write(b"".join((hdr, data, _ZEROS[:pad], tag)))
                else:
                    w.write(hdr)
                    if data:
                        w.write(data)
                    while pad > 0:
                        n = min(pad, _CHUNK)
                        await w.drain()
                        w.write(_ZEROS[:n])
                        pad -= n
                    w.write(tag)
                await w.drain()
                peer.busy = False
                if req is not None:
                    self._complete(req)
        except (ConnectionError, OSError) as e:
            self._lost(peer, e)
        except Exception as e:  # a bug here must fail the run, not leave it hanging
            self._lost(peer, RuntimeError(f"internal error writing to rank {peer.rank}: {e!r}"))

    # --- receiving --------------------------------------------------------------------
    def _post_recv(self, source: int, tag: int, req: Request, ctx: int = 0) -> None:
        env = self._engine.post_recv(source, tag, req, ctx)
        if env is not None:
            if env.source != self.rank:
                self._peers[env.source].unexpected -= _cost(env)
        elif source != ANY_SOURCE and source != self.rank and self._peers[source].bye_received:
            self._orphaned(source)
        self._flush()

    def _on_frame(
        self, source: int, kind: int, tag: int, size: int, msgid: int, payload: Any = None, ctx: int = 0
    ) -> None:
        try:
            env = self._engine.on_frame(source, kind, tag, size, msgid, payload, ctx)
        except ProtocolError as e:
            raise _ProtocolViolation(str(e)) from None
        self._flush()
        if env is not None and source != self.rank:  # queued unexpected: bounded per peer
            peer = self._peers[source]
            peer.unexpected += _cost(env)
            if peer.unexpected > self.max_unexpected:
                raise _ProtocolViolation(
                    f"rank {peer.rank} has sent more than {self.max_unexpected} bytes of messages that rank "
                    f"{self.rank} has not received yet (max_unexpected)"
                )

    def _check_frame(self, peer: _Peer, kind: int, nbytes: int, plen: int, tag: int = 0) -> None:
        """Refuse a frame's declared sizes before reading (let alone buffering) its payload."""
        wire = wire_nbytes(nbytes, plen)
        if wire > self.max_message:
            raise _ProtocolViolation(
                f"rank {peer.rank} announced a message of {wire} bytes ({_KIND_NAMES[kind]} "
                f"frame); rank {self.rank} accepts at most {self.max_message} (max_message)"
            )
        if kind == _EAGER and wire > self.eager_limit and not self._use_credit(peer.rank, tag):
            raise _ProtocolViolation(
                f"rank {peer.rank} sent an eager message of {wire} bytes, above the eager "
                f"limit of {self.eager_limit} bytes"
            )

    def _use_credit(self, peer: int, tag: int) -> bool:
        """Receiver-driven: a large eager frame is allowed once per credit this rank sent for it
        (the same rule the sender's engine applied: the tag's credit, else an ANY_TAG one)."""
        for key in ((peer, tag), (peer, ANY_TAG)):
            if self._credits_out.get(key, 0) > 0:
                self._credits_out[key] -= 1
                return True
        return False

    def _deliver(self, req: Request, data: bytes, source: int, tag: int, nbytes: int) -> None:
        try:
            value = pickle.loads(data)
        except Exception as e:
            req._fail(
                CommError(
                    f"rank {self.rank}: cannot unpickle the message from rank {source} tag {tag}: "
                    f"{type(e).__name__}: {e}"
                )
            )
            self._pending_reqs.discard(req)
            return
        self._complete(req, value, Status(source, tag, nbytes))

    def _complete(self, req: Request, value: Any = None, status: Status | None = None) -> None:
        req._finish(value, status)
        self._pending_reqs.discard(req)

    def _orphaned(self, source: int) -> None:
        """``source`` said goodbye: receives posted for it alone can never match."""
        keep = []
        for recv in self._engine.matcher.posted:
            if recv.source == source:
                recv.handle._fail(
                    CommError(
                        f"rank {self.rank}: {recv.handle.describe} can never complete: rank {source} has finished "
                        "without sending a matching message"
                    )
                )
                self._pending_reqs.discard(recv.handle)
            else:
                keep.append(recv)
        self._engine.matcher.posted[:] = keep

    async def _read_payload(self, reader: asyncio.StreamReader, plen: int, pad: int) -> bytes:
        data = await reader.readexactly(plen) if plen else b""
        while pad > 0:
            n = min(pad, _CHUNK)
            await reader.readexactly(n)
            pad -= n
        return data

    @staticmethod
    async def _verify_frame(peer: _Peer, hdr: bytes, data: bytes = b"") -> None:
        """Read the frame's tag and verify it; nothing of a frame is acted on before this."""
        tag = await peer.reader.readexactly(TAG_SIZE)
        try:
            peer.frames.check(tag, hdr, data)
        except FrameAuthError as e:
            raise _ProtocolViolation(f"{e}; not from rank {peer.rank} (an attacker on the path?)") from None

    async def _read_loop(self, peer: _Peer) -> None:
        r = peer.reader
        try:
            while True:
                try:
                    hdr = await r.readexactly(_HDR.size)
                except asyncio.IncompleteReadError as e:
                    if not e.partial and peer.bye_received:
                        return  # the peer said goodbye and closed: a clean end
                    raise ConnectionError("connection closed before the peer said goodbye") from None
                kind, reserved, ctx, src, tag, nbytes, plen, msgid = _HDRC.unpack(hdr)
                if reserved:
                    raise _ProtocolViolation("a frame header's reserved byte is not zero")
                if src != peer.rank:
                    raise _ProtocolViolation(f"frame from rank {src} on rank {peer.rank}'s connection")
                if kind in (_EAGER, _RTS, _DATA):
                    self._check_frame(peer, kind, nbytes, plen, tag)
                if kind == _EAGER:
                    data = await self._read_payload(r, plen, wire_nbytes(nbytes, plen) - plen)
                    await self._verify_frame(peer, hdr, data)
                    self._on_frame(peer.rank, EAGER, tag, nbytes, 0, data, ctx)
                elif kind in (_RTS, _CTS):
                    await self._verify_frame(peer, hdr)
                    self._on_frame(peer.rank, kind, tag, nbytes, msgid, None, ctx)
                elif kind == _DATA:
                    if not self._engine.expects_data(peer.rank, msgid):  # check before reading its payload
                        raise _ProtocolViolation(f"data for unknown message {msgid}")
                    data = await self._read_payload(r, plen, wire_nbytes(nbytes, plen) - plen)
                    await self._verify_frame(peer, hdr, data)
                    self._on_frame(peer.rank, DATA, tag, nbytes, msgid, data)
                elif kind == CREDIT and self.rendezvous == "receiver":
                    await self._verify_frame(peer, hdr)
                    self._on_frame(peer.rank, CREDIT, ANY_TAG if tag == _WIRE_ANY_TAG else tag, 0, 0, None, ctx)
                elif kind == _BYE:
                    await self._verify_frame(peer, hdr)
                    peer.bye_received = True
                    self._orphaned(peer.rank)
                else:
                    raise _ProtocolViolation(f"unknown frame kind {kind}")
        except (ConnectionError, OSError, asyncio.IncompleteReadError) as e:
            self._lost(peer, e)
        except Exception as e:  # a bug here must fail the run, not leave it hanging
            self._lost(peer, RuntimeError(f"internal error reading from rank {peer.rank}: {e!r}"))

    def _lost(self, peer: _Peer, exc: BaseException) -> None:
        if peer.lost:
            return
        peer.lost = True
        if peer.bye_received and self._closing:
            return  # it finished; a reset after its goodbye loses nothing we need
        reason = str(exc) or type(exc).__name__
        if isinstance(exc, _ProtocolViolation):
            peer.writer.transport.abort()
            self._fail_all(CommError(f"rank {self.rank}: dropped the connection to rank {peer.rank}: {reason}"))
            return
        if peer.bye_received:
            self._fail_all(
                CommError(f"rank {self.rank}: the connection to rank {peer.rank} failed after it finished ({reason})")
            )
            return
        self._fail_all(
            CommError(
                f"rank {self.rank}: lost the connection to rank {peer.rank} before it finished ({reason}); "
                "it crashed, timed out or was killed"
            )
        )

    async def _wait_until(self, requests: Sequence[Request]) -> None:
        for r in requests:
            if not r.done:
                await r._fut

    # --- shutdown ---------------------------------------------------------------------
    async def _shutdown(self, deadline: float | None) -> dict[str, int]:
        """Flush, say goodbye, wait for every peer's goodbye, close. Returns the
        sum of this rank's sockets' TCP_INFO counters."""
        loop = asyncio.get_running_loop()
        self._closing = True

        def remaining() -> float | None:
            return None if deadline is None else max(0.0, deadline - loop.time())

        sends = [r for r in self._pending_reqs if r.kind == "send" and not r.done]
        if sends:
            try:
                await asyncio.wait_for(self._wait_until(sends), remaining())
            except asyncio.TimeoutError:
                waiting = ", ".join(r.describe for r in sends if not r.done)
                raise CommTimeout(
                    f"rank {self.rank}: finished, but its sends never completed (no matching receive?): {waiting}"
                ) from None
        for peer in self._peers.values():
            bye = _HDR.pack(_BYE, self.rank, 0, 0, 0, 0)
            peer.queue.put_nowait(_Bye(bye, peer.frames.seal(bye)))
        tasks = [t for p in self._peers.values() for t in (p.reader_task, p.writer_task) if t is not None]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=remaining())
            if pending:  # a peer never finished: its own time limit reports why
                for t in pending:
                    t.cancel()
                await asyncio.gather(*pending, return_exceptions=True)
        totals: dict[str, int] = {}
        for peer in self._peers.values():
            sock = peer.writer.get_extra_info("socket")
            if sock is not None:
                for k, v in tcp_info_counters(sock).items():
                    totals[k] = totals.get(k, 0) + v
        for peer in self._peers.values():
            peer.writer.close()
        await asyncio.gather(*(self._wait_closed(p.writer) for p in self._peers.values()))
        self.counters = totals
        return totals

    @staticmethod
    async def _wait_closed(writer: asyncio.StreamWriter) -> None:
        try:
            await asyncio.wait_for(writer.wait_closed(), 5.0)
        except (OSError, asyncio.TimeoutError, ConnectionError):
            pass

    async def _abort(self) -> None:
        """Drop every connection at once (peers see it and fail fast)."""
        self._closing = True
        if self._server is not None:
            self._server.close()
            self._server = None
        for peer in self._peers.values():
            peer.writer.transport.abort()
        tasks = [t for p in self._peers.values() for t in (p.reader_task, p.writer_task) if t is not None]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _listen(host: str, port: int, opts: dict[str, Any] | None, backlog: int = 1024) -> _socket.socket:
    try:
        infos = _socket.getaddrinfo(host, port, type=_socket.SOCK_STREAM, flags=_socket.AI_PASSIVE)
        family, _, proto, _, sockaddr = infos[0]
        sock = _socket.socket(family, _socket.SOCK_STREAM, proto)
    except OSError as e:
        raise CommError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    try:
        sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
        apply_sock_options(sock, opts, stage="buffers")  # accepted sockets inherit them
        sock.bind(sockaddr)
        sock.listen(backlog)
        sock.setblocking(False)
    except OSError as e:
        sock.close()
        raise CommError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    except BaseException:
        sock.close()
        raise
    return sock


if __name__ == "__main__":  # pragma: no cover
    sys.exit("use `python -m parcomm run socket ...`")
