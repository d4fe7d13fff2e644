"""The handshake over asyncio streams, and a gate that bounds how many
unauthenticated connections a listener entertains at once."""

from __future__ import annotations

import asyncio
import logging
import threading

from .handshake import GREETING_SIZE, PROOF_SIZE, AuthError, Handshake
from .keys import JobKey

log = logging.getLogger("parcomm.auth")

#: Seconds a connection has to prove itself; a silent one holds a gate slot no longer.
DEFAULT_TIMEOUT_S = 10.0


async def authenticate(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    key: JobKey,
    *,
    initiator: bool,
    context: bytes,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> None:
    """Run the mutual handshake; returns when the peer is a member, else raises AuthError.

    Reads exactly GREETING_SIZE + PROOF_SIZE bytes from the peer, whatever it
    sends, and never more than ``timeout`` seconds.
    """
    hs = Handshake(key, initiator=initiator, context=context)

    async def run() -> None:
        writer.write(hs.greeting())
        await writer.drain()
        theirs = await reader.readexactly(GREETING_SIZE)
        writer.write(hs.proof(theirs))
        await writer.drain()
        hs.verify(await reader.readexactly(PROOF_SIZE))

    try:
        await asyncio.wait_for(run(), timeout)
    except asyncio.IncompleteReadError:
        raise AuthError("the peer closed the connection during authentication") from None
    except asyncio.TimeoutError:
        raise AuthError(f"the peer did not authenticate within {timeout:g} s") from None
    except (ConnectionError, OSError) as e:
        raise AuthError(f"the connection failed during authentication ({e.strerror or e})") from None


class Gate:
    """At most ``limit`` connections authenticating at once on one listener;
    the rest are closed at once. Refusals are logged (first few, then a count),
    naming the remote address, never anything secret."""

    _LOG_FIRST = 5

    #: Enough that a flood of silent connections must be large to crowd members out (each
    #: pending one costs a few kB and holds its slot at most the handshake timeout).
    DEFAULT_LIMIT = 256

    def __init__(self, name: str, limit: int = DEFAULT_LIMIT) -> None:
        self.name = name
        self.limit = limit
        self.pending = 0
        self.refused = 0
        self._lock = threading.Lock()  # threaded listeners share a gate too

    def enter(self) -> bool:
        with self._lock:
            full = self.pending >= self.limit
            if not full:
                self.pending += 1
        if full:
            self.refuse(None, f"more than {self.limit} connections authenticating at once")
        return not full

    def leave(self) -> None:
        with self._lock:
            self.pending -= 1

    def refuse(self, writer: asyncio.StreamWriter | tuple | None, reason: str) -> None:
        """Count and log a refusal; ``writer`` is the connection's stream or its peer address."""
        with self._lock:
            self.refused += 1
        peer = writer.get_extra_info("peername") if isinstance(writer, asyncio.StreamWriter) else writer
        where = f" from {peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else ""
        if self.refused <= self._LOG_FIRST:
            log.warning("%s: refused a connection%s: %s", self.name, where, reason)
        elif self.refused % 1000 == 0:
            log.warning("%s: %d connections refused so far", self.name, self.refused)

    async def admit(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        key: JobKey,
        *,
        context: bytes,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> bool:
        """Authenticate an accepted connection; on failure it is aborted, logged
        and False returned (the caller does nothing more with it)."""
        if not self.enter():
            writer.transport.abort()
            return False
        try:
            await authenticate(reader, writer, key, initiator=False, context=context, timeout=timeout)
            return True
        except AuthError as e:
            self.refuse(writer, str(e))
            writer.transport.abort()
            return False
        finally:
            self.leave()
