"""The handshake over a blocking socket, for drivers that move bytes on
threads (``parcomm bcast``'s data plane) rather than on an asyncio loop."""

from __future__ import annotations

import socket
import time

from .handshake import GREETING_SIZE, PROOF_SIZE, AuthError, Handshake
from .keys import JobKey
from .streams import DEFAULT_TIMEOUT_S


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
    sock: socket.socket, key: JobKey, *, initiator: bool, context: bytes, timeout: float = DEFAULT_TIMEOUT_S
) -> None:
    """Run the mutual handshake on ``sock``; returns when the peer is a member, else raises AuthError.

    Reads exactly GREETING_SIZE + PROOF_SIZE bytes, whatever the peer sends,
    within ``timeout`` seconds. Leaves the socket's timeout as it found it.
    """
    hs = Handshake(key, initiator=initiator, context=context)
    deadline = time.monotonic() + timeout
    before = sock.gettimeout()
    try:
        sock.settimeout(timeout)
        sock.sendall(hs.greeting())
        theirs = recv_exact(sock, GREETING_SIZE, deadline)
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        sock.sendall(hs.proof(theirs))
        hs.verify(recv_exact(sock, PROOF_SIZE, deadline))
    except (TimeoutError, socket.timeout):
        raise AuthError(f"the peer did not authenticate within {timeout:g} s") from None
    except ConnectionError as e:
        raise AuthError(f"the connection failed during authentication ({e})") from None
    except OSError as e:
        raise AuthError(f"the connection failed during authentication ({e.strerror or e})") from None
    finally:
        try:
            sock.settimeout(before)
        except OSError:
            pass
