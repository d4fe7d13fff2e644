"""Accepted connections that have not said anything yet, held cheaply.

A member greets as soon as it connects; an outsider holding connections open says
nothing. So a listener accepts every connection at once (the kernel's accept
queue never fills, and a member's connection never waits behind a flood in it),
and a connection that has sent nothing yet waits here: one socket, no task, no
thread, no greeting sent. The first byte promotes it to a handshake (bounded by
:class:`~.streams.Gate`). The pool is bounded per source address and in total;
when a bound is reached the oldest quiet connection is dropped, never the new
one; a quiet connection is dropped after ``max_silence`` seconds too.

:class:`QuietPool` is the bookkeeping alone (sans-IO: time passed in);
:class:`AsyncAcceptor` drives it on an asyncio loop. The threaded listener of
``parcomm bcast`` drives it with a selector (:mod:`parcomm.apps.bcast.links`).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Hashable

from .streams import DEFAULT_TIMEOUT_S, bytes_waiting, reset_socket


class QuietPool:
    """Quiet connections by key, oldest first, bounded in total and per source."""

    #: Held quiet connections per listener: each is one socket (a few kB of kernel memory),
    #: so a listener holds a flood of several thousand without shedding anyone.
    DEFAULT_LIMIT = 8192
    #: Per source address: a quarter, so one flooding host cannot crowd out the others.
    DEFAULT_PER_SOURCE = 2048

    def __init__(
        self, limit: int = DEFAULT_LIMIT, per_source: int = DEFAULT_PER_SOURCE, max_silence: float = DEFAULT_TIMEOUT_S
    ) -> None:
        self.limit = max(1, limit)
        self.per_source = max(1, min(per_source, self.limit))
        self.max_silence = max_silence
        self._entries: OrderedDict[Hashable, tuple[str, float]] = OrderedDict()
        self._per_source: Counter[str] = Counter()
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, key: Hashable, source: str, now: float) -> list[Hashable]:
        """Hold ``key``; returns the keys dropped to make room (the caller closes them)."""
        dropped: list[Hashable] = []
        while self._per_source[source] >= self.per_source or len(self._entries) >= self.limit:
            scope = source if self._per_source[source] >= self.per_source else None
            victim = next(k for k, (src, _) in self._entries.items() if scope is None or src == scope)
            self.remove(victim)
            dropped.append(victim)
        self._entries[key] = (source, now)
        self._per_source[source] += 1
        self.dropped += len(dropped)
        return dropped

    def remove(self, key: Hashable) -> bool:
        entry = self._entries.pop(key, None)
        if entry is None:
            return False
        self._per_source[entry[0]] -= 1
        if self._per_source[entry[0]] <= 0:
            del self._per_source[entry[0]]
        return True

    def expired(self, now: float) -> list[Hashable]:
        """Remove and return the connections quiet for longer than ``max_silence``."""
        out = []
        for key, (_, since) in list(self._entries.items()):
            if now - since < self.max_silence:
                break  # oldest first: the rest are younger
            self.remove(key)
            out.append(key)
        self.dropped += len(out)
        return out

    def keys(self) -> list[Hashable]:
        return list(self._entries)


def drop(sock: socket.socket) -> None:
    """Close with a reset: no TIME_WAIT kept for a connection that never spoke."""
    reset_socket(sock)
    sock.close()


class AsyncAcceptor:
    """Accepts on a listening socket from an asyncio loop, quiet connections held in
    a :class:`QuietPool`; each connection that speaks is handed to ``serve`` (as
    streams) on a task of its own. ``close()`` stops accepting and drops the quiet ones."""

    _BATCH = 512  # accepts per wake-up; the loop gets a turn between batches
    _SWEEP_S = 0.1

    def __init__(
        self,
        sock: socket.socket,
        serve: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
        *,
        pool: QuietPool | None = None,
        read_limit: int = 1 << 16,
    ) -> None:
        self.sock = sock
        self.serve = serve
        self.pool = pool if pool is not None else QuietPool()
        self.read_limit = read_limit
        self._loop = asyncio.get_running_loop()
        self._quiet: dict[int, socket.socket] = {}
        self._tasks: set[asyncio.Task] = set()
        self._closed = False
        sock.setblocking(False)
        self._loop.add_reader(sock.fileno(), self._accept_ready)
        self._sweeper = self._loop.call_later(self._SWEEP_S, self._sweep)

    def _accept_ready(self) -> None:
        now = self._loop.time()
        for _ in range(self._BATCH):
            try:
                conn, addr = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # e.g. EMFILE: the next wake-up tries again
                return
            conn.setblocking(False)
            if bytes_waiting(conn):
                self._start(conn)
                continue
            fd = conn.fileno()
            self._quiet[fd] = conn
            self._loop.add_reader(fd, self._spoke, fd)
            for victim in self.pool.add(fd, addr[0] if addr else "?", now):
                self._drop_quiet(victim)

    def _spoke(self, fd: int) -> None:
        conn = self._quiet.pop(fd, None)
        self._loop.remove_reader(fd)
        self.pool.remove(fd)
        if conn is not None:
            self._start(conn)

    def _start(self, conn: socket.socket) -> None:
        if self._closed:
            drop(conn)
            return
        task = self._loop.create_task(self._run(conn))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, conn: socket.socket) -> None:
        try:
            reader, writer = await asyncio.open_connection(sock=conn, limit=self.read_limit)
        except OSError:
            drop(conn)
            return
        try:
            await self.serve(reader, writer)
        except asyncio.CancelledError:  # closing: nothing to report
            writer.transport.abort()

    def _drop_quiet(self, fd) -> None:
        conn = self._quiet.pop(fd, None)
        if conn is not None:
            self._loop.remove_reader(fd)
            drop(conn)

    def _sweep(self) -> None:
        for fd in self.pool.expired(self._loop.time()):
            self._drop_quiet(fd)
        if not self._closed:
            self._sweeper = self._loop.call_later(self._SWEEP_S, self._sweep)

    def close(self) -> None:
        """Stop accepting; drop the quiet connections (handshakes in progress go on)."""
        if self._closed:
            return
        self._closed = True
        self._sweeper.cancel()
        with contextlib.suppress(ValueError, OSError):
            self._loop.remove_reader(self.sock.fileno())
        for fd in list(self._quiet):
            self.pool.remove(fd)
            self._drop_quiet(fd)
        self.sock.close()
