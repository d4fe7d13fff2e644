"""Peer connections of ``parcomm bcast`` on blocking sockets: the data plane's I/O.

Each connection carries one direction of the protocol (the sender opened it)
and is served by one thread, so a slow peer never holds up another and the
bytes of a piece never pass through the interpreter: a receiver reads a
piece with ``recv_into`` into a buffer it owns, a sender hands a piece to the
kernel with ``sendfile`` from the output file (or ``sendall`` of a slice of
the caller's buffer). Only the few-byte frame heads are parsed in Python.

Order on every connection, both ways: the job's mutual HMAC handshake
(:mod:`parcomm.auth`), nothing else read before it; then the :class:`~.wire.Hello`
exchange; then frames (:mod:`.wire`), each checked against ``max_payload``
before its body is read.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from typing import Callable

from ...auth import AuthError, Gate, JobKey
from ...auth.sockets import authenticate_socket, recv_exact
from .wire import (
    AUTH_CONTEXT,
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

#: Seconds a new connection has for the handshake and the Hello exchange.
HANDSHAKE_TIMEOUT_S = 10.0
_FIELD_SIZE = 8
# sendfile moves at most this per call (Linux caps one call at 2 GiB anyway).
_SENDFILE_CHUNK = 1 << 30


class Link:
    """One authenticated, handshaken connection to ``peer`` (a :class:`Hello`)."""

    def __init__(self, sock: socket.socket, peer: Hello, max_payload: int) -> None:
        sock.settimeout(None)
        self.sock = sock
        self.peer = peer
        self.max_payload = max_payload
        self.bytes_sent = 0
        self.bytes_received = 0
        self._closed = False

    @property
    def rank(self) -> int:
        return self.peer.rank

    # -- sending (one thread per link) -------------------------------------
    def send_record(self, record: Record) -> None:
        frame = encode_record(record)
        self._check_size(len(frame))
        self.sock.sendall(frame)
        self.bytes_sent += len(frame)

    def send_file(self, type_code: int, fields: tuple[int, ...], fd: int, offset: int, count: int) -> None:
        """A frame whose payload is ``count`` bytes of file ``fd`` at ``offset``, copied by the kernel."""
        head = frame_head(type_code, fields, count)
        self._check_size(len(head) + count)
        self._send_head(head, more=count > 0)
        sent = 0
        while sent < count:
            n = os.sendfile(self.sock.fileno(), fd, offset + sent, min(count - sent, _SENDFILE_CHUNK))
            if n == 0:
                raise ConnectionError(f"file ended {count - sent} bytes early while sending to rank {self.rank}")
            sent += n
        self.bytes_sent += len(head) + count

    def send_view(self, type_code: int, fields: tuple[int, ...], payload: memoryview) -> None:
        """A frame whose payload is sent from ``payload`` in place (no copy in Python)."""
        head = frame_head(type_code, fields, len(payload))
        self._check_size(len(head) + len(payload))
        self._send_head(head, more=len(payload) > 0)
        self.sock.sendall(payload)
        self.bytes_sent += len(head) + len(payload)

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
        prefix = bytearray(HEAD_SIZE)
        got = self.sock.recv_into(prefix, HEAD_SIZE, socket.MSG_WAITALL)
        if got == 0:
            return None
        if got < HEAD_SIZE:
            prefix[got:] = recv_exact(self.sock, HEAD_SIZE - got)
        length, type_code, n_fields = parse_head(bytes(prefix), self.max_payload)
        body_rest = length - (HEAD_SIZE - 4)
        fields = unpack_fields(recv_exact(self.sock, n_fields * _FIELD_SIZE), n_fields)
        payload_len = body_rest - n_fields * _FIELD_SIZE
        has_payload = bool(prefix[8] & 1)
        self.bytes_received += 4 + length - (payload_len if has_payload else 0)
        return type_code, fields, (payload_len if has_payload else None)

    def recv_into(self, view: memoryview) -> None:
        """Fill ``view`` exactly from the socket (the payload of the last head)."""
        got, n = 0, len(view)
        while got < n:
            k = self.sock.recv_into(view[got:], n - got, socket.MSG_WAITALL)
            if k == 0:
                raise WireError(f"stream ended inside a payload of {n} bytes")
            got += k
        self.bytes_received += n

    def recv_payload(self, n: int) -> bytes:
        buf = bytearray(n)
        self.recv_into(memoryview(buf))
        return bytes(buf)

    # -- lifetime ----------------------------------------------------------
    def close(self) -> None:
        """Close now; a thread blocked on this link wakes with an error or EOF."""
        if self._closed:
            return
        self._closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def _hello_exchange(sock: socket.socket, ours: Hello, expect_rank: int | None, timeout: float) -> Hello:
    deadline = time.monotonic() + timeout
    sock.settimeout(timeout)
    sock.sendall(ours.encode())
    theirs = Hello.read_from(sock, deadline)
    ours.check_peer(theirs, expect_rank)
    return theirs


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
    """Connect, prove membership both ways, then exchange Hellos. A peer that fails
    authentication raises :class:`~.wire.NotAMember` (retry until a deadline);
    one of another broadcast :class:`~.wire.HandshakeError` (do not)."""
    sock = socket.create_connection((host, port), timeout=timeout)
    try:
        try:
            authenticate_socket(sock, key, initiator=True, context=AUTH_CONTEXT, timeout=timeout)
        except AuthError as exc:
            raise NotAMember(f"{host}:{port} is not a member of this job: {exc}") from None
        theirs = _hello_exchange(sock, ours, expect_rank, timeout)
    except BaseException:
        sock.close()
        raise
    return Link(sock, theirs, max_payload)


class Listener:
    """Accept peers on a bound, listening socket, each on its own thread.

    A connection is handed to ``on_link`` (on that thread) only after it
    proved membership and passed the Hello check; outsiders are dropped and
    logged by ``gate`` (at most its limit authenticate at once); members of
    another broadcast are closed and reported to ``on_refused``."""

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
        timeout: float = HANDSHAKE_TIMEOUT_S,
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
        self.sock.settimeout(0.2)  # to notice stop()
        while not self._stopped.is_set():
            try:
                conn, addr = self.sock.accept()
            except (socket.timeout, TimeoutError):
                continue
            except OSError:
                if self._stopped.is_set():
                    return
                time.sleep(0.05)  # e.g. EMFILE: back off rather than spin
                continue
            if not self.gate.enter():
                conn.close()
                continue
            threading.Thread(
                target=self._admit, args=(conn, addr), name=f"peer-in-{self.ours.rank}", daemon=True
            ).start()

    def _admit(self, conn: socket.socket, addr: tuple) -> None:
        try:
            try:
                authenticate_socket(conn, self.key, initiator=False, context=AUTH_CONTEXT, timeout=self.timeout)
            except AuthError as exc:
                self.gate.refuse(addr, str(exc))
                conn.close()
                return
        finally:
            self.gate.leave()
        try:
            theirs = _hello_exchange(conn, self.ours, None, self.timeout)
        except (WireError, OSError) as exc:
            conn.close()
            if self.on_refused is not None:
                self.on_refused(str(exc) or type(exc).__name__)
            return
        if self._stopped.is_set():
            conn.close()
            return
        self.on_link(Link(conn, theirs, self.max_payload))

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=2.0)


__all__ = ["HandshakeError", "Link", "Listener", "NotAMember", "connect_link"]
