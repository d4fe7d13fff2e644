"""The handshake over asyncio streams, and the gate that keeps a listener's
pending handshakes bounded without letting silent outsiders lock members out."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import itertools
import logging
import socket
import struct
import sys
import termios
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from .channel import FrameAuth
from .handshake import Acceptor, AuthError, Handshake, PeerRefused
from .keys import JobKey

log = logging.getLogger("parcomm.auth")

#: Seconds a listener gives one connection to complete the handshake. The work is
#: about a millisecond (two HMACs, one HKDF) plus 1.5 round trips; one second covers
#: RTTs up to several hundred ms (intercontinental paths are ~300 ms) with margin, yet
#: frees a silent connection's slot a hundred times sooner than the 10 s it held before.
DEFAULT_TIMEOUT_S = 1.0
#: Seconds an initiator waits on one attempt before it retries (it retries until its own deadline).
ATTEMPT_TIMEOUT_S = 2.0


async def authenticate(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    key: JobKey,
    *,
    initiator: bool,
    context: bytes,
    hello: bytes = b"",
    expect: bytes = b"",
    accept: Acceptor | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    on_start: Callable[[Handshake], None] | None = None,
) -> tuple[bytes, FrameAuth]:
    """Run the handshake (:mod:`.handshake`); returns the peer's authenticated hello
    and the connection's frame authentication, else raises AuthError.

    Reads only what the handshake declares (bounded), within ``timeout`` seconds.
    A responder that refused a member's claim sends the refusal, then raises
    :class:`PeerRefused`."""
    hs = Handshake(key, initiator=initiator, context=context, hello=hello, expect=expect, accept=accept)
    if on_start is not None:
        on_start(hs)

    async def run() -> None:
        writer.write(hs.start())
        while not hs.done:
            out = hs.receive(await reader.readexactly(hs.need))
            if out:
                writer.write(out)
        await writer.drain()

    try:
        await asyncio.wait_for(run(), timeout)
    except asyncio.IncompleteReadError:
        raise AuthError(closed_during(hs)) from None
    except asyncio.TimeoutError:
        raise AuthError(f"the peer did not complete the handshake within {timeout:g} s") from None
    except (ConnectionError, OSError) as e:
        raise AuthError(closed_during(hs, e)) from None
    if hs.refused is not None:
        raise PeerRefused(f"refused a member's claim: {hs.refused}")
    return hs.peer_hello, hs.frames()


def closed_during(hs: Handshake, error: BaseException | None = None) -> str:
    """What it means that the peer closed (or reset) the connection at this point of ``hs``."""
    how = f" ({error.strerror or error})" if isinstance(error, OSError) else ""
    if hs.progress == 0:
        return f"the peer closed the connection before its greeting{how}"
    if hs.initiator:
        return (
            f"the listener dropped the connection after our proof{how}: it holds a different key, "
            "or it shed us under load"
        )
    return f"the peer closed the connection during the handshake{how}"


_LINGER_RESET = struct.pack("ii", 1, 0)


def reset_socket(sock) -> None:
    """Make the next close send a reset: a listener keeps no TIME_WAIT entry for an
    outsider it drops. (Under a flood over one address pair, those entries would
    otherwise take every ephemeral port for 60 s: Linux's TCP_TIMEWAIT_LEN.)"""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)


def bytes_waiting(sock) -> int:
    """Bytes received on ``sock`` and not yet read (FIONREAD), 0 if unknown."""
    if sock is None:
        return 0
    try:
        buf = bytearray(4)
        fcntl.ioctl(sock.fileno(), termios.FIONREAD, buf)
        return int.from_bytes(buf, sys.byteorder)
    except (OSError, ValueError):
        return 0


def reset(writer: asyncio.StreamWriter) -> None:
    """Drop an asyncio connection at once, with a reset (see :func:`reset_socket`)."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        reset_socket(sock)
    writer.transport.abort()


@dataclass
class _Pending:
    source: str
    abort: Callable[[], None]
    progress: Callable[[], int]


class Gate:
    """Bounds the handshakes one listener has in progress, per source address and
    in total, and never turns a new connection away: when a bound is reached,
    the pending handshake that has shown least (no greeting before a greeting),
    oldest first, is shed (sent a one-line "shed" answer and closed), from the
    same source if that source is at its own bound, else from the source with
    most pending. So silent connections, however many, hold a slot only until
    newer ones arrive, and a member (who greets at once) is never shed for
    them; together with the short handshake deadline this is what lets a job
    form while outsiders hold a thousand connections open.

    Sheds and failed handshakes are logged (the first few, then a count),
    naming the remote address, never anything secret. Thread-safe: the
    threaded listeners share the class."""

    _LOG_FIRST = 5

    #: Pending handshakes per listener: each costs a few kB and a task (or a thread) for
    #: at most DEFAULT_TIMEOUT_S; the largest job here has a few hundred members.
    DEFAULT_LIMIT = 256
    #: Pending handshakes from one address: a quarter of the total, so one flooding host
    #: cannot take the slots of members on others.
    DEFAULT_PER_SOURCE = 64

    def __init__(self, name: str, limit: int = DEFAULT_LIMIT, per_source: int = DEFAULT_PER_SOURCE) -> None:
        self.name = name
        self.limit = max(1, limit)
        self.per_source = max(1, min(per_source, self.limit))
        self.refused = 0
        self.shed = 0
        self._pending: dict[int, _Pending] = {}  # insertion order: oldest first
        self._per_source: Counter[str] = Counter()
        self._ids = itertools.count()
        self._lock = threading.Lock()

    @property
    def pending(self) -> int:
        return len(self._pending)

    def enter(self, source: str, abort: Callable[[], None], progress: Callable[[], int] = lambda: 0) -> int:
        """Admit a new connection (always); sheds another if a bound is reached. Returns its ticket."""
        victims: list[_Pending] = []
        with self._lock:
            while True:
                if self._per_source[source] >= self.per_source:
                    pool = [t for t, p in self._pending.items() if p.source == source]
                elif len(self._pending) >= self.limit:
                    busiest, _ = self._per_source.most_common(1)[0]
                    pool = [t for t, p in self._pending.items() if p.source == busiest]
                else:
                    break
                # least progress first, then oldest (dict order): min() keeps the first of equals
                victim = min(pool, key=lambda t: self._pending[t].progress())
                victims.append(self._forget(victim))
                self.shed += 1
            ticket = next(self._ids)
            self._pending[ticket] = _Pending(source, abort, progress)
            self._per_source[source] += 1
        for v in victims:
            v.abort()
        if victims:
            self._note(f"shed {len(victims)} pending handshake(s) from {victims[0].source} to admit a new one")
        return ticket

    def leave(self, ticket: int) -> None:
        """The handshake ended (either way); a no-op if it was shed."""
        with self._lock:
            if ticket in self._pending:
                self._forget(ticket)

    def holds(self, ticket: int) -> bool:
        """Whether ``ticket`` is still pending (False once it left or was shed)."""
        with self._lock:
            return ticket in self._pending

    def close(self) -> None:
        """Shed every pending handshake (the listener no longer needs anyone)."""
        with self._lock:
            victims = [self._forget(t) for t in list(self._pending)]
        for v in victims:
            v.abort()

    def _forget(self, ticket: int) -> _Pending:
        p = self._pending.pop(ticket)
        self._per_source[p.source] -= 1
        if self._per_source[p.source] <= 0:
            del self._per_source[p.source]
        return p

    def refuse(self, peer: tuple | str | None, reason: str) -> None:
        """Count and log a failed handshake; ``peer`` is the remote address."""
        with self._lock:
            self.refused += 1
        where = ""
        if isinstance(peer, tuple) and len(peer) >= 2:
            where = f" from {peer[0]}:{peer[1]}"
        elif isinstance(peer, str):
            where = f" from {peer}"
        self._note(f"refused a connection{where}: {reason}")

    def _note(self, text: str) -> None:
        events = self.refused + self.shed
        if events <= self._LOG_FIRST:
            log.warning("%s: %s", self.name, text)
        elif events % 1000 == 0:
            log.warning("%s: %d connections refused and %d shed so far", self.name, self.refused, self.shed)

    async def admit(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        key: JobKey,
        *,
        context: bytes,
        accept: Acceptor,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> tuple[bytes, FrameAuth] | None:
        """Run the responder's handshake on an accepted connection. On success, the
        peer's hello and the frame authentication; otherwise None and the connection
        is closed (a member refused gets the reason; anyone else nothing)."""
        peer = writer.get_extra_info("peername")
        source = peer[0] if isinstance(peer, tuple) and peer else "?"
        current: list[Handshake] = []

        def shed() -> None:
            if current and current[0].progress > 0:  # it greeted: maybe a member, tell it to retry
                writer.write(Handshake.shed_message())
            reset(writer)

        # A member greets as soon as it connects, so its greeting is usually in the socket buffer
        # before its handshake task first runs: count that as progress, or a burst of silent
        # connections accepted in the same batch could shed it before its greeting is read.
        greeted = 1 if bytes_waiting(writer.get_extra_info("socket")) else 0
        ticket = self.enter(source, shed, lambda: max(greeted, current[0].progress if current else 0))
        try:
            return await authenticate(
                reader,
                writer,
                key,
                initiator=False,
                context=context,
                accept=accept,
                timeout=timeout,
                on_start=current.append,
            )
        except PeerRefused as e:
            self.refuse(peer, str(e))
            writer.transport.close()
            return None
        except AuthError as e:
            if self.holds(ticket):  # a shed one was counted when it was shed
                self.refuse(peer, str(e))
            reset(writer)
            return None
        except asyncio.CancelledError:  # the listener is being shut down: nothing to report
            reset(writer)
            return None
        finally:
            self.leave(ticket)
