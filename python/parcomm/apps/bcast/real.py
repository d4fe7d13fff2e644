"""The real driver: one :class:`~.node.BcastNode` over real S3 and TCP.

The state machine decides; this module only carries out its actions and
feeds back what happened, exactly as :mod:`.sim` does with modelled
storage and links. Everything runs on one asyncio loop except the S3
GETs, which are blocking boto3 calls on ``s3_connections`` worker threads;
their pieces come back through a thread-safe queue hand-off.

Connections: every node opens one outgoing TCP connection to every other
node at start (so a node's death is seen by all as a closed connection)
and sends only on it; it receives on the connections others opened to it.
Each direction is therefore one ordered stream, as the protocol requires.

Membership: every connection proves the job's key both ways before anything
else (:mod:`parcomm.auth`), so a piece, a Have or a rank claim can only come
from a member; a rank accepts one connection per peer rank.

Integrity: a piece is written to the output only after its sha256 matched
the hash list (``KEY.parcomm.json``); the output appears at its path only
when complete and its whole sha256 matches (:class:`.output.OutputWriter`).
"""

from __future__ import annotations

import asyncio
import collections
import os
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from ...auth import JobKey
from . import codec
from .layout import Layout
from .manifest import Manifest, verify_piece
from .messages import (
    CancelFetch,
    CancelUpload,
    Drop,
    Failed,
    FetchStorage,
    Finished,
    PeerLost,
    PeerMessage,
    PeerPiece,
    PhaseDone,
    Piece,
    S3FetchDone,
    S3FetchFailed,
    S3Piece,
    Send,
    Start,
    Tick,
)
from .node import BcastConfig, BcastNode
from .output import OutputError, OutputWriter
from .s3 import AccessDenied, ObjectChanged, ObjectNotFound, S3Client, S3Error
from .wire import Hello, NotAMember, PeerConnection, WireError, connect_peer, serve_peers

Endpoint = tuple[str, int]


class BcastError(Exception):
    """The broadcast failed on this node; the message says why."""


@dataclass
class NodeReport:
    """What one node did, for the summary table and ``--json``."""

    rank: int
    nodes: int
    algo: str
    size: int
    seconds: float = 0.0
    phase1_s: float | None = None
    phase2_s: float | None = None
    bytes_from_storage: int = 0
    bytes_from_peers: int = 0
    storage_requests: int = 0
    storage_retries: int = 0
    bad_pieces: int = 0
    peers_lost: list[int] = field(default_factory=list)
    peers_dropped: list[int] = field(default_factory=list)
    output: str = ""

    @property
    def throughput(self) -> float:
        return self.size / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict:
        return {**asdict(self), "throughput_Bps": self.throughput}


@dataclass(frozen=True)
class Progress:
    held: int
    pieces: int
    bytes_from_storage: int
    bytes_from_peers: int


class _Fetch:
    """A running ranged GET on a worker thread."""

    def __init__(self) -> None:
        self.cancelled = threading.Event()


class _Cancelled(Exception):
    pass


class RealNode:
    """Run rank ``rank`` of a broadcast of ``url`` into ``out``."""

    def __init__(
        self,
        rank: int,
        table: list[Endpoint],
        listen: socket.socket,
        url: str,
        out: str | os.PathLike,
        manifest: Manifest,
        *,
        algo: str,
        config: BcastConfig,
        client: S3Client,
        key: JobKey,
        on_progress: Callable[[Progress], None] | None = None,
        timeout: float = 3600.0,
        linger: float = 60.0,
        faults: tuple[str, ...] = (),
    ) -> None:
        self.rank, self.table, self.listen, self.url = rank, table, listen, url
        self.world = len(table)
        self.manifest = manifest
        self.layout = Layout(manifest.size, manifest.piece_size, config.work_pieces)
        self.node = BcastNode(rank, self.world, self.layout, algo, config)
        self.cfg, self.client = config, client
        self.key = key
        self.out = Path(out)
        self.on_progress = on_progress
        self.timeout, self.linger = timeout, linger
        # Fault injection for tests, like the simulator's drop_nth:
        # "corrupt-uploads" flips one byte of every piece this node uploads.
        unknown = set(faults) - {"corrupt-uploads"}
        if unknown:
            raise BcastError(f"unknown fault {sorted(unknown)[0]!r} (known: corrupt-uploads)")
        self.corrupt_uploads = "corrupt-uploads" in faults
        self.report = NodeReport(rank, self.world, algo, manifest.size, output=str(self.out))
        self.hello = Hello(rank, manifest.etag, manifest.size, manifest.piece_size)
        self.max_payload = max(manifest.piece_size, (self.layout.pieces + 7) // 8, 4 * self.layout.works, 64)

    # ------------------------------------------------------------------ run

    def run(self) -> NodeReport:
        return asyncio.run(self._run())

    async def _run(self) -> NodeReport:
        self.loop = asyncio.get_running_loop()
        self.events: asyncio.Queue = asyncio.Queue()
        self.writer = OutputWriter(self.out, self.manifest.size, self.manifest.sha256)
        self.read_fd: int | None = None  # the committed output, for serving after commit
        self.fetches: dict[int, _Fetch] = {}
        self.pool = ThreadPoolExecutor(max_workers=self.cfg.s3_connections, thread_name_prefix=f"s3-{self.rank}")
        self.outgoing: dict[int, PeerConnection] = {}
        self.outboxes: dict[int, collections.deque] = {}
        self.wakeups: dict[int, asyncio.Event] = {}
        self.lost: set[int] = set()
        self.dropped: set[int] = set()
        self.tasks: set[asyncio.Task] = set()
        self.incoming: set[PeerConnection] = set()
        self.fatal: BaseException | None = None
        start = time.monotonic()
        self.t0 = start
        self.incoming_ranks: set[int] = set()
        server = await serve_peers(self.hello, self.max_payload, self._incoming, self.key, sock=self.listen)
        try:
            await asyncio.wait_for(self._main(), self.timeout)
        except asyncio.TimeoutError:
            raise BcastError(f"rank {self.rank}: no completion within {self.timeout:.0f} s") from None
        finally:
            server.close()
            for fetch in self.fetches.values():
                fetch.cancelled.set()
            for task in list(self.tasks):
                task.cancel()
            for conn in [*self.outgoing.values(), *self.incoming]:
                conn.writer.close()  # readers see EOF and end on their own
            await asyncio.sleep(0)
            self.pool.shutdown(wait=True, cancel_futures=True)
            if not self.writer.committed:
                self.writer.abort()
            if self.read_fd is not None:
                os.close(self.read_fd)
        self.report.seconds = time.monotonic() - start
        stats = self.client.stats
        self.report.storage_requests = getattr(stats, "requests", 0)
        self.report.storage_retries = getattr(stats, "retries", 0)
        self.report.bytes_from_storage = self.node.bytes_from_storage
        self.report.bytes_from_peers = self.node.bytes_from_peers
        self.report.peers_lost = sorted(self.lost)
        self.report.peers_dropped = sorted(self.dropped)
        return self.report

    async def _main(self) -> None:
        await asyncio.gather(*(self._connect(peer) for peer in range(self.world) if peer != self.rank))
        await self._apply(Start())
        finished_at: float | None = None
        last_progress = 0.0
        while True:
            if self.fatal is not None:
                raise self.fatal
            if self.node.failed:
                raise BcastError(f"rank {self.rank}: {self.node.failed}")
            now = self._now()
            if self.node.finished:
                finished_at = finished_at if finished_at is not None else now
                alive = [p for p in range(self.world) if p != self.rank and p not in self.lost]
                if self.node.quiescent() or not alive or now - finished_at > self.linger:
                    await self._flush_outboxes()
                    return
            deadline = self.node.next_deadline()
            wait = 0.25 if deadline is None else max(0.0, min(deadline - now, 0.25))
            try:
                event = await asyncio.wait_for(self.events.get(), wait)
            except asyncio.TimeoutError:
                event = None
            if event is not None:
                await self._apply(event)
            deadline = self.node.next_deadline()
            if deadline is not None and self._now() >= deadline:
                await self._apply(Tick())
            if self.on_progress and self._now() - last_progress > 0.2:
                last_progress = self._now()
                self.on_progress(
                    Progress(
                        self.node.held, self.layout.pieces, self.node.bytes_from_storage, self.node.bytes_from_peers
                    )
                )

    def _now(self) -> float:
        return time.monotonic() - self.t0

    # ------------------------------------------------------------------ actions

    async def _apply(self, event) -> None:
        for action in self.node.handle(self._now(), event):
            if isinstance(action, Send):
                self._enqueue(action.peer, action.msg)
            elif isinstance(action, FetchStorage):
                self._start_fetch(action)
            elif isinstance(action, CancelFetch):
                fetch = self.fetches.pop(action.fetch_id, None)
                if fetch is not None:
                    fetch.cancelled.set()
            elif isinstance(action, CancelUpload):
                box = self.outboxes.get(action.peer)
                if box is not None:
                    kept = [m for m in box if not (isinstance(m, Piece) and action.piece in (None, m.piece))]
                    box.clear()
                    box.extend(kept)
            elif isinstance(action, Drop):
                self.dropped.add(action.peer)
            elif isinstance(action, PhaseDone):
                setattr(self.report, f"phase{action.phase}_s", self._now())
            elif isinstance(action, Finished):
                self._commit()
            elif isinstance(action, Failed):
                raise BcastError(f"rank {self.rank}: {action.reason}")

    def _commit(self) -> None:
        self.writer.commit()  # checks the whole sha256, then renames
        self.read_fd = os.open(self.out, os.O_RDONLY)

    def _read_piece(self, piece: int) -> bytes:
        start, end = self.layout.piece_bytes(piece)
        if self.read_fd is not None:
            data = os.pread(self.read_fd, end - start, start)
        else:
            data = self.writer.read(start, end - start)
        if self.corrupt_uploads and data:
            data = bytes([data[0] ^ 0xFF]) + data[1:]
        return data

    # ------------------------------------------------------------------ storage

    def _start_fetch(self, action: FetchStorage) -> None:
        fetch = _Fetch()
        self.fetches[action.fetch_id] = fetch
        self.pool.submit(self._fetch_thread, action, fetch)

    def _post(self, event) -> None:
        self.loop.call_soon_threadsafe(self.events.put_nowait, event)

    def _fetch_thread(self, action: FetchStorage, fetch: _Fetch) -> None:
        start, end = self.layout.span_bytes(action.first_piece, action.last_piece)
        size = self.manifest.piece_size

        def on_chunk(offset: int, data: bytes) -> None:
            if fetch.cancelled.is_set():
                raise _Cancelled()
            piece = offset // size
            ok = verify_piece(self.manifest, piece, data)
            if ok:
                self.writer.write_piece(offset, data)
            else:
                self.report.bad_pieces += 1
            self._post(S3Piece(action.fetch_id, piece, ok))

        try:
            self.client.get_range(self.url, start, end, on_chunk, chunk_size=size, etag=self.manifest.etag)
        except _Cancelled:
            return
        except (ObjectNotFound, AccessDenied, ObjectChanged) as exc:
            self.fatal = BcastError(f"rank {self.rank}: {exc}")
            self._post(Tick())
            return
        except (S3Error, OSError) as exc:
            self._post(S3FetchFailed(action.fetch_id, str(exc)))
            return
        except BaseException as exc:  # a bug: surface it on the loop rather than lose it in the pool
            self.fatal = exc
            self._post(Tick())
            return
        self._post(S3FetchDone(action.fetch_id))

    # ------------------------------------------------------------------ peers

    async def _connect(self, peer: int) -> None:
        host, port = self.table[peer]
        deadline = time.monotonic() + 30.0
        delay = 0.05
        while True:
            try:
                conn = await connect_peer(host, port, self.hello, self.max_payload, self.key, expect_rank=peer)
                break
            except (OSError, asyncio.TimeoutError, WireError) as exc:
                permanent = isinstance(exc, WireError) and not isinstance(exc, NotAMember)
                if permanent or time.monotonic() > deadline:
                    self._lose(peer)
                    return
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
        self.outgoing[peer] = conn
        self.outboxes[peer] = collections.deque()
        self.wakeups[peer] = asyncio.Event()
        self._spawn(self._sender(peer, conn))

    def _spawn(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def _enqueue(self, peer: int, msg) -> None:
        if peer in self.lost or peer not in self.outboxes:
            return
        self.outboxes[peer].append(msg)
        self.wakeups[peer].set()

    async def _sender(self, peer: int, conn: PeerConnection) -> None:
        box, wake = self.outboxes[peer], self.wakeups[peer]
        try:
            while True:
                while not box:
                    wake.clear()
                    await wake.wait()
                msg = box.popleft()
                data = self._read_piece(msg.piece) if isinstance(msg, Piece) else None
                await conn.send(codec.encode(msg, data))
        except (ConnectionError, OSError, WireError):
            self._lose(peer)

    async def _flush_outboxes(self) -> None:
        """Give queued control messages (Have, Done...) a moment to leave."""
        end = time.monotonic() + 2.0
        while any(self.outboxes[p] for p in self.outboxes if p not in self.lost) and time.monotonic() < end:
            await asyncio.sleep(0.01)

    async def _incoming(self, conn: PeerConnection) -> None:
        peer = conn.rank
        if not 0 <= peer < self.world or peer == self.rank or peer in self.incoming_ranks:
            await conn.close()  # a member's bug, not a loss of that peer: its own connection stays
            return
        self.incoming_ranks.add(peer)
        self.incoming.add(conn)
        try:
            while True:
                record = await conn.recv()
                if record is None:
                    break
                msg, data = codec.decode(record)
                if isinstance(msg, Piece):
                    ok = data is not None and verify_piece(self.manifest, msg.piece, data)
                    if ok and peer not in self.dropped and not self.writer.committed and not self.node.have[msg.piece]:
                        self.writer.write_piece(self.layout.piece_bytes(msg.piece)[0], data)
                    if not ok:
                        self.report.bad_pieces += 1
                    self.events.put_nowait(PeerPiece(peer, msg.piece, ok))
                else:
                    self.events.put_nowait(PeerMessage(peer, msg))
        except OutputError as exc:  # our disk, not the peer: the whole node fails, at once
            self.fatal = exc
            self.events.put_nowait(Tick())
            return
        except (ConnectionError, OSError, WireError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            return  # shutting down: the server cancels its handlers
        finally:
            self.incoming.discard(conn)
            conn.writer.close()
        self._lose(peer)

    def _lose(self, peer: int) -> None:
        if peer not in self.lost:
            self.lost.add(peer)
            self.events.put_nowait(PeerLost(peer))
