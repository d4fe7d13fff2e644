"""The handshake over a blocking socket, for drivers that move bytes on
threads (``parcomm bcast``'s data plane) rather than on an asyncio loop."""

from __future__ import annotations

import socket
import time

from .channel import FrameAuth
from .handshake import Acceptor, AuthError, Handshake, PeerRefused
from .keys import JobKey
from .streams import DEFAULT_TIMEOUT_S, closed_during


def recv_exact(sock: socket.socket, n: int, deadline: float | None = None) -> bytes:
    """Exactly ``n`` bytes; ConnectionError if the peer closes first, TimeoutError past ``deadline``."""
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{n - got} of {n} bytes still missing at the deadline")
            sock.settimeout(left)
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise ConnectionError(f"connection closed after {got} of {n} bytes")
        got += k
    return bytes(buf)


def authenticate_socket(
    sock: socket.socket,
    key: JobKey,
    *,
    initiator: bool,
    context: bytes,
    hello: bytes = b"",
    expect: bytes = b"",
    accept: Acceptor | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    handshake: Handshake | None = None,
) -> tuple[bytes, FrameAuth]:
    """Run the handshake on ``sock`` within ``timeout`` seconds; returns the peer's
    authenticated hello and the connection's frame authentication, else raises
    AuthError (:class:`PeerRefused` when a member refused, or we refused one).
    ``handshake`` may be given ready-made (a gate watches its progress).
    Leaves the socket's timeout as it found it."""
    hs = handshake or Handshake(key, initiator=initiator, context=context, hello=hello, expect=expect, accept=accept)
    deadline = time.monotonic() + timeout
    before = sock.gettimeout()
    try:
        sock.settimeout(timeout)
        sock.sendall(hs.start())
        while not hs.done:
            out = hs.receive(recv_exact(sock, hs.need, deadline))
            if out:
                sock.settimeout(max(0.001, deadline - time.monotonic()))
                sock.sendall(out)
    except (TimeoutError, socket.timeout):
        raise AuthError(f"the peer did not complete the handshake within {timeout:g} s") from None
    except (ConnectionError, OSError) as e:
        raise AuthError(closed_during(hs, e)) from None
    finally:
        try:
            sock.settimeout(before)
        except OSError:
            pass
    if hs.refused is not None:
        raise PeerRefused(f"refused a member's claim: {hs.refused}")
    return hs.peer_hello, hs.frames()
