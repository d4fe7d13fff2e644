"""Peer connections of ``parcomm bcast`` on blocking sockets: the data plane's I/O.

Each connection carries one direction of the protocol (the sender opened it)
and is served by one thread, so a slow peer never holds up another and the
bytes of a piece never pass through the interpreter: a receiver reads a
piece with ``recv_into`` into a buffer it owns, a sender hands a piece to the
kernel with ``sendfile`` from the output file (or ``sendall`` of a slice of
the caller's buffer). Only the few-byte frame heads are parsed in Python.

Order on every connection, both ways: the job's handshake (:mod:`parcomm.auth`),
which carries the :class:`~.wire.Hello` each way and the rank the connecting
node expects, nothing else read before it; then frames (:mod:`.wire`), each
checked against ``max_payload`` before its body is read and acted on only
after its tag verified (a piece's bytes are checked against the hash list
instead of the tag, so they can still go by ``sendfile``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import socket
import threading
import time
from collections.abc import Callable

from ...auth import (
    ATTEMPT_TIMEOUT_S,
    DEFAULT_TIMEOUT_S,
    TAG_SIZE,
    AuthError,
    FrameAuth,
    FrameAuthError,
    Gate,
    JobKey,
    PeerRefused,
)
from ...auth.handshake import Handshake, Refusal
from ...auth.quiet import QuietPool, drop
from ...auth.sockets import authenticate_socket, recv_exact
from ...auth.streams import bytes_waiting, reset_socket
from .wire import (
    AUTH_CONTEXT,
    CONTENT_VERIFIED,
    HEAD_SIZE,
    FrameTooLarge,
    HandshakeError,
    Hello,
    NotAMember,
    Record,
    WireError,
    encode_record,
    frame_head,
    max_frame_size,
    parse_head,
    unpack_fields,
)

log = logging.getLogger("parcomm.bcast")

#: Seconds one :func:`connect_link` call keeps trying (attempts of at most ATTEMPT_TIMEOUT_S,
#: retried with back-off while the listener sheds, drops or does not answer us: a flood, or a
#: machine too busy to answer within the listener's 1 s). An accepting node gives a connection
#: the gate's deadline.
HANDSHAKE_TIMEOUT_S = 10.0
_FIELD_SIZE = 8
# sendfile moves at most this per call (Linux caps one call at 2 GiB anyway).
_SENDFILE_CHUNK = 1 << 30


class Link:
    """One authenticated, handshaken connection to ``peer`` (a :class:`Hello`)."""

    def __init__(self, sock: socket.socket, peer: Hello, max_payload: int, frames: FrameAuth) -> None:
        sock.settimeout(None)
        self.sock = sock
        self.peer = peer
        self.max_payload = max_payload
        self.frames = frames
        self.bytes_sent = 0
        self.bytes_received = 0
        self._closed = False
        # the head of the frame whose payload is still on the socket, and whether the tag covers it
        self._open_head: bytes | None = None
        self._payload_covered = True

    @property
    def rank(self) -> int:
        return self.peer.rank

    # -- sending (one thread per link) -------------------------------------
    def send_record(self, record: Record) -> None:
        """A frame with its tag over all of it (a control message)."""
        frame = encode_record(record)
        self._check_size(len(frame))
        frame += self.frames.seal(frame)
        self.sock.sendall(frame)
        self.bytes_sent += len(frame)

    def send_file(self, type_code: int, fields: tuple[int, ...], fd: int, offset: int, count: int) -> None:
        """A frame whose payload is ``count`` bytes of file ``fd`` at ``offset``, copied by the kernel.
        The payload must be checked by its content at the receiver (a piece): the tag covers the head."""
        head = frame_head(type_code, fields, count, content_verified=True)
        self._check_size(len(head) + count)
        tag = self.frames.seal(head)
        self._send_head(head, more=count > 0)
        sent = 0
        while sent < count:
            n = os.sendfile(self.sock.fileno(), fd, offset + sent, min(count - sent, _SENDFILE_CHUNK))
            if n == 0:
                raise ConnectionError(f"file ended {count - sent} bytes early while sending to rank {self.rank}")
            sent += n
        self.sock.sendall(tag)
        self.bytes_sent += len(head) + count + TAG_SIZE

    def send_view(self, type_code: int, fields: tuple[int, ...], payload: memoryview) -> None:
        """A frame whose payload is sent from ``payload`` in place (no copy in Python); as
        :meth:`send_file`, the payload is checked by its content, the tag covers the head."""
        head = frame_head(type_code, fields, len(payload), content_verified=True)
        self._check_size(len(head) + len(payload))
        tag = self.frames.seal(head)
        self._send_head(head, more=len(payload) > 0)
        self.sock.sendall(payload)
        self.sock.sendall(tag)
        self.bytes_sent += len(head) + len(payload) + TAG_SIZE

    def _send_head(self, head: bytes, *, more: bool) -> None:
        # MSG_MORE: the head waits for its payload, so both leave in full segments.
        flags = getattr(socket, "MSG_MORE", 0) if more else 0
        view = memoryview(head)
        while view:
            view = view[self.sock.send(view, flags) :]

    def _check_size(self, frame_len: int) -> None:
        if frame_len - 4 > max_frame_size(self.max_payload):
            raise FrameTooLarge(
                f"refusing to send a frame of {frame_len} bytes (limit {max_frame_size(self.max_payload)})"
            )

    # -- receiving (one thread per link) -----------------------------------
    def recv_head(self) -> tuple[int, tuple[int, ...], int | None] | None:
        """(type code, fields, payload length or None) of the next frame; None at a clean end.

        The payload is still on the socket: read it with :meth:`recv_into` or
        :meth:`recv_payload` before the next head. Sizes are checked first."""
        if self._open_head is not None:
            raise WireError("the previous frame's payload was not read")
        prefix = bytearray(HEAD_SIZE)
        got = self.sock.recv_into(prefix, HEAD_SIZE, socket.MSG_WAITALL)
        if got == 0:
            return None
        if got < HEAD_SIZE:
            prefix[got:] = recv_exact(self.sock, HEAD_SIZE - got)
        length, type_code, n_fields, flags = parse_head(bytes(prefix), self.max_payload)
        body_rest = length - (HEAD_SIZE - 4)
        raw_fields = recv_exact(self.sock, n_fields * _FIELD_SIZE)
        fields = unpack_fields(raw_fields, n_fields)
        payload_len = body_rest - n_fields * _FIELD_SIZE
        has_payload = bool(flags & 1)
        self.bytes_received += 4 + length - (payload_len if has_payload else 0)
        head = bytes(prefix) + raw_fields
        if not has_payload:
            self._check_tag(head)
            return type_code, fields, None
        self._open_head, self._payload_covered = head, not flags & CONTENT_VERIFIED
        return type_code, fields, payload_len

    def recv_into(self, view: memoryview) -> None:
        """Fill ``view`` exactly from the socket (the payload of the last head), then read
        and check the frame's tag. A payload the tag does not cover (a piece) must still
        be checked by its content before it is used."""
        head = self._open_head
        if head is None:
            raise WireError("no frame payload to read")
        got, n = 0, len(view)
        while got < n:
            k = self.sock.recv_into(view[got:], n - got, socket.MSG_WAITALL)
            if k == 0:
                raise WireError(f"stream ended inside a payload of {n} bytes")
            got += k
        self.bytes_received += n
        self._open_head = None
        self._check_tag(head, view) if self._payload_covered else self._check_tag(head)

    def recv_payload(self, n: int) -> bytes:
        """The payload of the last head, which its tag must cover (anything but a piece)."""
        if not self._payload_covered:
            raise WireError("a payload not covered by its frame's tag where only pieces may be")
        buf = bytearray(n)
        self.recv_into(memoryview(buf))
        return bytes(buf)

    def _check_tag(self, *parts: bytes | memoryview) -> None:
        tag = recv_exact(self.sock, TAG_SIZE)
        self.bytes_received += TAG_SIZE
        try:
            self.frames.check(tag, *parts)
        except FrameAuthError as exc:
            raise WireError(f"rank {self.rank}'s connection: {exc}") from None

    # -- lifetime ----------------------------------------------------------
    def close(self) -> None:
        """Close now; a thread blocked on this link wakes with an error or EOF."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()


def connect_link(
    host: str,
    port: int,
    ours: Hello,
    max_payload: int,
    key: JobKey,
    *,
    expect_rank: int | None = None,
    timeout: float = HANDSHAKE_TIMEOUT_S,
) -> Link:
    """Connect and run the handshake (our Hello and the rank we expect in, theirs out),
    retrying for up to ``timeout`` seconds while the listener sheds, drops or does not
    answer us. A peer that still has not completed it raises :class:`~.wire.NotAMember`
    (a busy listener, a node not started yet, or a different key); a member that
    refuses us (another broadcast, another rank) :class:`~.wire.HandshakeError` (do not
    retry); a refused or failed TCP connect its ``OSError`` at once (the caller backs off)."""
    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        attempt = min(ATTEMPT_TIMEOUT_S, max(0.05, deadline - time.monotonic()))
        try:
            return _connect_once(host, port, ours, max_payload, key, expect_rank, attempt)
        except NotAMember:
            if time.monotonic() + delay >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def _connect_once(
    host: str, port: int, ours: Hello, max_payload: int, key: JobKey, expect_rank: int | None, timeout: float
) -> Link:
    sock = socket.create_connection((host, port), timeout=timeout)
    try:
        try:
            hello, frames = authenticate_socket(
                sock,
                key,
                initiator=True,
                context=AUTH_CONTEXT,
                hello=ours.encode(),
                expect=Hello.expectation(expect_rank),
                timeout=timeout,
            )
        except PeerRefused as exc:
            raise HandshakeError(f"{host}:{port} refused us: {exc}") from None
        except AuthError as exc:
            raise NotAMember(f"{host}:{port} is not a member of this job: {exc}") from None
        theirs = Hello.decode(hello)
        ours.check_peer(theirs, expect_rank)
    except BaseException:
        sock.close()
        raise
    return Link(sock, theirs, max_payload, frames)


class Listener:
    """Accept peers on a bound, listening socket, each on its own thread.

    A connection is handed to ``on_link`` (on that thread) only after it
    proved membership and its Hello and expected rank passed the check;
    outsiders are dropped and logged by ``gate`` (which bounds the pending
    handshakes, shedding the least advanced); members of another broadcast
    are refused (told why) and reported to ``on_refused``."""

    def __init__(
        self,
        sock: socket.socket,
        ours: Hello,
        max_payload: int,
        key: JobKey,
        on_link: Callable[[Link], None],
        *,
        gate: Gate | None = None,
        on_refused: Callable[[str], None] | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.sock = sock
        self.ours, self.max_payload, self.key = ours, max_payload, key
        self.on_link = on_link
        self.gate = gate if gate is not None else Gate(f"bcast rank {ours.rank}")
        self.on_refused = on_refused
        self.timeout = timeout
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._accept_loop, name=f"accept-{ours.rank}", daemon=True)
        self._thread.start()

    def _accept_loop(self) -> None:
        """Accept at once; hold quiet connections in a pool (no thread) until they speak,
        then run each one's handshake on a thread of its own (see parcomm.auth.quiet)."""
        pool = QuietPool()
        quiet: dict[int, tuple[socket.socket, tuple]] = {}
        sel = selectors.DefaultSelector()
        self.sock.setblocking(False)
        sel.register(self.sock, selectors.EVENT_READ, None)

        def forget(fd: int) -> tuple[socket.socket, tuple] | None:
            entry = quiet.pop(fd, None)
            if entry is not None:
                sel.unregister(entry[0])
            return entry

        try:
            while not self._stopped.is_set():
                for key, _ in sel.select(timeout=0.1):
                    if key.data is None:  # the listening socket
                        for _ in range(512):
                            try:
                                conn, addr = self.sock.accept()
                            except (BlockingIOError, InterruptedError):
                                break
                            except OSError:
                                time.sleep(0.05)  # e.g. EMFILE: back off rather than spin
                                break
                            if bytes_waiting(conn):
                                self._start(conn, addr)
                                continue
                            conn.setblocking(False)
                            quiet[conn.fileno()] = (conn, addr)
                            sel.register(conn, selectors.EVENT_READ, addr)
                            for fd in pool.add(conn.fileno(), addr[0] if addr else "?", time.monotonic()):
                                if (entry := forget(fd)) is not None:
                                    drop(entry[0])
                    else:  # a quiet connection spoke (or closed): its handshake starts
                        fd = key.fd
                        pool.remove(fd)
                        if (entry := forget(fd)) is not None:
                            entry[0].setblocking(True)
                            self._start(*entry)
                for fd in pool.expired(time.monotonic()):
                    if (entry := forget(fd)) is not None:
                        drop(entry[0])
        finally:
            for fd in list(quiet):
                entry = forget(fd)
                if entry is not None:
                    drop(entry[0])
            sel.close()

    def _start(self, conn: socket.socket, addr: tuple) -> None:
        hs = Handshake(self.key, initiator=False, context=AUTH_CONTEXT, accept=self._judge)
        progress = lambda: max(1, hs.progress)  # noqa: E731 - it spoke: at least a greeting is on its way
        ticket = self.gate.enter(addr[0] if addr else "?", _shedder(conn, progress), progress)
        threading.Thread(
            target=self._admit, args=(conn, addr, hs, ticket), name=f"peer-in-{self.ours.rank}", daemon=True
        ).start()

    def _judge(self, hello: bytes, expect: bytes) -> bytes:
        try:
            self.ours.check_claim(hello, expect)
        except WireError as exc:
            raise Refusal(str(exc)) from None
        return self.ours.encode()

    def _admit(self, conn: socket.socket, addr: tuple, hs: Handshake, ticket: int) -> None:
        try:
            try:
                hello, frames = authenticate_socket(
                    conn, self.key, initiator=False, context=AUTH_CONTEXT, timeout=self.timeout, handshake=hs
                )
            except PeerRefused as exc:
                conn.close()
                if self.on_refused is not None:
                    self.on_refused(str(exc))
                return
            except AuthError as exc:
                if self.gate.holds(ticket):  # a shed one was counted when it was shed
                    self.gate.refuse(addr, str(exc))
                reset_socket(conn)
                conn.close()
                return
        finally:
            self.gate.leave(ticket)
        if self._stopped.is_set():
            conn.close()
            return
        self.on_link(Link(conn, Hello.decode(hello), self.max_payload, frames))

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=2.0)
        self.gate.close()  # handshakes still pending: shed now, not at their deadline


def _shedder(conn: socket.socket, progress: Callable[[], int]):
    """How the gate drops a pending handshake: a one-line "shed" answer, then a
    shutdown that wakes the thread blocked reading it."""

    def shed() -> None:
        if progress() > 0:  # it greeted: maybe a member, tell it to retry
            with contextlib.suppress(OSError):
                conn.send(Handshake.shed_message(), socket.MSG_DONTWAIT)
        reset_socket(conn)  # the thread's close sends a reset: no TIME_WAIT kept for an outsider
        with contextlib.suppress(OSError):
            conn.shutdown(socket.SHUT_RDWR)

    return shed


__all__ = ["HandshakeError", "Link", "Listener", "NotAMember", "connect_link"]
