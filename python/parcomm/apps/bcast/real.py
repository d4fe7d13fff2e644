"""The real driver: one :class:`~.node.BcastNode` over real S3 and TCP.

The state machine decides; this module only carries out its actions and
feeds back what happened, exactly as :mod:`.sim` does with modelled storage
and links. The protocol runs on the calling thread; the bytes move on
others, and never through the interpreter one by one:

* S3 ranged GETs run on ``s3_connections`` worker threads; each piece is
  verified and written in place (``pwrite``) by the thread that read it.
* Every peer connection has its own thread (:mod:`.links`): a receiver reads
  a piece with ``recv_into`` into a buffer it reuses, verifies it (hashlib
  releases the GIL) and writes it in place; a sender uploads pieces with
  ``sendfile`` from the output (or from the caller's buffer).
* ``verify="pieces"`` (the default) hashes every byte once, as its piece
  arrives; ``"whole"`` adds :class:`~.store.WholeDigest`, which hashes the
  whole object in order as it arrives (a second pass, reading it back).

Threads only post events (:mod:`.messages`) to the protocol's queue, and the
protocol's actions only enqueue work for them.

Connections are opened on first need: a node opens an outgoing TCP
connection to a peer the first time the protocol sends it something (its
overlay ``rank ± 2^k`` at start, to be watched; exchange neighbours, steal
victims, the ranks notices go to: O(log N) of them) and sends only on it; it
receives on the connections others opened to it. Each direction is one
ordered stream, as the protocol requires. A death is seen by the ranks with
a connection from the dead one (or that fail to reach it); the others learn
it from their notices (:mod:`.notices`). ``NodeReport.connections`` counts
the connections a node opened.

Membership: every connection proves the job's key both ways before anything
else (:mod:`parcomm.auth`), so a piece, a Have or a rank claim can only come
from a member; a rank accepts one open connection per peer rank at a time.

Integrity: a piece is stored only after its sha256 matched the hash list
(``KEY.parcomm.json``); a file output appears at its path only when complete
and, with ``verify="whole"``, its whole sha256 matches
(:class:`.output.OutputWriter`); a buffer or a stream (``--out -``) is
declared good only then. ``verify="pieces"`` (the default) trusts the piece digests alone:
they and the whole digest come from one ``prepare`` pass over the object, so
every piece matching proves the object (as in BitTorrent); the whole-object
hash then only guards against a bug of ours writing a piece at a wrong offset.
"""

from __future__ import annotations

import collections
import hmac
import mmap
import os
import queue
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
from .links import HANDSHAKE_TIMEOUT_S, Link, Listener, connect_link
from .manifest import Manifest, verify_piece
from .messages import (
    CancelFetch,
    CancelUpload,
    Drop,
    Failed,
    FetchStorage,
    Finished,
    Notice,
    PeerJoined,
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
from .notices import LOST
from .output import OutputError
from .s3 import AccessDenied, DeadlineExceeded, ObjectChanged, ObjectNotFound, S3Client, S3Error
from .store import FileStore, MemoryStore, PieceStore, SpoolStore, WholeDigest
from .wire import Hello, NotAMember, Record, WireError

Endpoint = tuple[str, int]

#: Seconds a peer that is slow but alive gets to answer a handshake, even past the join deadline.
HANDSHAKE_FLOOR_S = 2.0

#: ``out`` value that streams the object to stdout, in order.
STDOUT = "-"

#: What a node checks before it declares its copy good: ``whole`` -- every piece's sha256
#: and the whole object's (one more sha256 pass as pieces arrive); ``pieces`` -- every
#: piece's sha256 only (the hash list is the root of trust either way).
VERIFY_MODES = ("whole", "pieces")

#: How a file output is written: ``cached`` -- through the page cache, as ``cp`` does (a reader
#: right after finds it in memory); ``direct`` -- O_DIRECT on local disk filesystems (the disk
#: takes each piece from our buffer: 0.4-1.4 CPU s per GB less here, but nothing stays cached).
WRITE_MODES = ("cached", "direct")


class BcastError(Exception):
    """The broadcast failed on this node; the message says why."""


@dataclass
class NodeReport:
    """What one node did, for the summary table and ``--json``."""

    rank: int
    procs: int
    algo: str
    size_bytes: int
    run_s: float = 0.0  # from start until this node left (it may serve others after its copy is complete)
    phase1_s: float | None = None
    phase2_s: float | None = None
    bytes_from_storage: int = 0  # measured: body bytes read from S3 during the run, retries included
    bytes_from_peers: int = 0
    storage_bytes_kept: int = 0  # of those, the pieces the protocol accepted (each piece once per node)
    storage_requests: int = 0
    storage_retries: int = 0
    bad_pieces: int = 0
    peers_lost: list[int] = field(default_factory=list)
    peers_dropped: list[int] = field(default_factory=list)
    output: str = ""
    complete_s: float | None = None  # when the output was verified and published (None: never)
    connections: int = 0  # peer connections this node opened (handshake done)
    cpu_s: float = 0.0  # this process's user + system CPU time over the run
    verify: str = "pieces"  # what was checked: "pieces" (every piece) or "whole" (and the whole object)
    write: str = "cached"  # how a file output was written: "cached" or "direct" (O_DIRECT where it could)

    @property
    def throughput(self) -> float:
        """Object bytes per second until this node's copy was complete (it may serve others longer)."""
        took = self.complete_s if self.complete_s is not None else self.run_s
        return self.size_bytes / took if took > 0 else 0.0

    def to_dict(self) -> dict:
        return {**asdict(self), "throughput_Bps": self.throughput}


@dataclass(frozen=True)
class Progress:
    held: int
    pieces: int
    bytes_from_storage: int  # body bytes read from storage, retries and duplicates included
    bytes_from_peers: int
    bytes_held: int = 0  # of the object, verified
    size: int = 0  # the object's bytes


def is_usage_error(exc: BaseException) -> bool:
    """Whether ``exc`` is about what the user named (the URL, the object, its hash list, the
    credentials): exit status 2, whatever the number of nodes. Anything else is the run
    failing (storage unavailable, a timeout, a full disk): 1."""
    from .manifest import ManifestError
    from .s3 import InvalidS3Url

    return isinstance(exc, (InvalidS3Url, ObjectNotFound, AccessDenied, ManifestError))


class _Fetch:
    """A running ranged GET on a worker thread."""

    def __init__(self) -> None:
        self.cancelled = threading.Event()


class _Cancelled(Exception):
    pass


class _Outbox:
    """What the protocol queued for one peer, in order; its sender thread drains it."""

    def __init__(self) -> None:
        self.items: collections.deque = collections.deque()
        self.cond = threading.Condition()
        self.closed = False
        self.busy = False

    def put(self, msg) -> None:
        with self.cond:
            if not self.closed:
                self.items.append(msg)
                self.cond.notify()

    def take(self):
        """The next message (marks the box busy until :meth:`sent`); None once closed."""
        with self.cond:
            self.cond.wait_for(lambda: self.items or self.closed)
            if self.closed:
                return None
            self.busy = True
            return self.items.popleft()

    def sent(self) -> None:
        with self.cond:
            self.busy = False
            self.cond.notify_all()

    def cancel_pieces(self, piece: int | None) -> None:
        with self.cond:
            kept = [m for m in self.items if not (isinstance(m, Piece) and piece in (None, m.piece))]
            self.items.clear()
            self.items.extend(kept)

    def idle(self) -> bool:
        with self.cond:
            return not self.items and not self.busy

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify_all()


def _cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


class RealNode:
    """Run rank ``rank`` of a broadcast of ``url`` into ``out``: a path, ``"-"``
    (stdout, in order) or a writable buffer of the object's size."""

    def __init__(
        self,
        rank: int,
        table: list[Endpoint],
        listen: socket.socket,
        url: str,
        out,
        manifest: Manifest,
        *,
        algo: str,
        config: BcastConfig,
        client: S3Client,
        key: JobKey,
        on_progress: Callable[[Progress], None] | None = None,
        timeout: float = 3600.0,
        linger: float = 60.0,
        join_timeout: float = 30.0,
        faults: tuple[str, ...] = (),
        verify: str = "pieces",
        write: str = "cached",
    ) -> None:
        if verify not in VERIFY_MODES:
            raise BcastError(f"verify {verify!r}: choose one of {', '.join(VERIFY_MODES)}")
        if write not in WRITE_MODES:
            raise BcastError(f"write {write!r}: choose one of {', '.join(WRITE_MODES)}")
        self.verify, self.write = verify, write
        self.rank, self.table, self.listen, self.url = rank, table, listen, url
        # A rank we cannot reach this long after our start is counted out (its share goes to
        # its heir); if it shows up later it is readmitted and fetches from the others.
        self.join_timeout = join_timeout
        self.world = len(table)
        self.manifest = manifest
        self.layout = Layout(manifest.size, manifest.piece_size, config.work_pieces)
        self.node = BcastNode(rank, self.world, self.layout, algo, config)
        self.cfg, self.client = config, client
        self.key = key
        self.out = out
        self.on_progress = on_progress
        self.timeout, self.linger = timeout, linger
        # Fault injection for tests and benchmarks, like the simulator's drop_nth:
        # "corrupt-uploads" flips one byte of every piece this node uploads;
        # "late:SECONDS" starts the node that much later (its listener silent meanwhile).
        self.corrupt_uploads = "corrupt-uploads" in faults
        self.late_s = 0.0
        for fault in faults:
            name, _, arg = fault.partition(":")
            if name == "late":
                try:
                    self.late_s = float(arg)
                except ValueError:
                    raise BcastError(f"fault {fault!r}: late:SECONDS needs a number of seconds") from None
            elif fault != "corrupt-uploads":
                raise BcastError(f"unknown fault {fault!r} (known: corrupt-uploads, late:SECONDS)")
        where = out if isinstance(out, (str, os.PathLike)) else f"<{type(out).__name__} buffer>"
        self.report = NodeReport(rank, self.world, algo, manifest.size, output=str(where), verify=verify, write=write)
        self.hello = Hello(rank, manifest.etag, manifest.size, manifest.piece_size, listen=tuple(table[rank]))
        self.max_payload = max(manifest.piece_size, (self.layout.pieces + 7) // 8, 4 * self.layout.works, 64)

    def _open_store(self) -> PieceStore:
        size = self.manifest.size
        if isinstance(self.out, str) and self.out == STDOUT:
            return SpoolStore(size)
        if isinstance(self.out, (str, os.PathLike)):
            whole = self.verify == "whole"
            # write "direct": past the page cache (O_DIRECT, local disk filesystems), the disk
            # takes each piece from our buffer by DMA and the in-order hash reads it back the same
            # way. Here a page-cache write cost 0.4-1.4 CPU s per GB (the copy into fresh pages),
            # a direct one next to nothing; peers are still served by sendfile (from the disk).
            # Not the default: whoever reads the output next would read it from the disk.
            direct = self.write == "direct"
            return FileStore(Path(self.out), size, self.manifest.sha256 if whole else None, direct=direct)
        return MemoryStore(self.out, size)

    # ------------------------------------------------------------------ run

    def run(self) -> NodeReport:
        if self.late_s > 0:
            time.sleep(self.late_s)
        start, cpu0 = time.monotonic(), _cpu_seconds()
        self.t0 = start
        # One deadline for the whole job: the client's (set when the job began, and kept by
        # cutting off its requests), else from our start.
        self.deadline = getattr(self.client, "deadline", None) or start + self.timeout
        self._received0 = getattr(self.client.stats, "bytes_received", 0)
        self.events: queue.SimpleQueue = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.fatal: BaseException | None = None
        self.stopping = False
        self.fetches: dict[int, _Fetch] = {}
        self.outboxes: dict[int, _Outbox] = {}
        self.senders: list[threading.Thread] = []
        self.links: set[Link] = set()
        self.incoming_live: set[int] = set()  # ranks whose connection to us is open now
        self.unheard: set[int] = set()  # ranks whose loss we posted and the node has not handled yet
        self.dropped: set[int] = set()
        self.store = self._open_store()
        self.commit_pending = False  # every piece held; the output waits for the in-order pass
        self.store_lock = threading.Lock()
        self.stored = bytearray(self.layout.pieces)  # pieces written: never written again
        sink = 1 if isinstance(self.out, str) and self.out == STDOUT else None
        hashing = self.verify == "whole"
        # The in-order pass: hashes the whole object (verify "whole") and/or streams it (--out -).
        self.digest = (
            WholeDigest(
                self.store,
                self.layout.piece_bytes,
                self.layout.pieces,
                sink=sink,
                hashing=hashing,
                on_done=lambda: self._post(Tick()),  # wakes the protocol thread to commit
            )
            if hashing or sink is not None
            else None
        )
        self.pool = ThreadPoolExecutor(max_workers=self.cfg.s3_connections, thread_name_prefix=f"s3-{self.rank}")
        listener = Listener(self.listen, self.hello, self.max_payload, self.key, self._receive)
        failed = True
        try:
            self._main()
            failed = False
        finally:
            self._shut_down(listener, failed)
        self.report.run_s = time.monotonic() - start
        self.report.cpu_s = _cpu_seconds() - cpu0
        stats = self.client.stats
        self.report.storage_requests = getattr(stats, "requests", 0)
        self.report.storage_retries = getattr(stats, "retries", 0)
        self.report.bytes_from_storage = self._fetched()  # measured: retries and discarded bytes included
        self.report.storage_bytes_kept = self.node.bytes_from_storage
        self.report.bytes_from_peers = self.node.bytes_from_peers
        node = self.node  # lost: not those that finished and left first
        self.report.peers_lost = sorted(r for r in node.planner.dead if r not in node.complete_ranks)
        self.report.peers_dropped = sorted(self.dropped)
        return self.report

    def _shut_down(self, listener: Listener, failed: bool = False) -> None:
        self.stopping = True
        listener.stop()
        if failed and hasattr(self.client, "abort"):
            self.client.abort()  # a GET blocked on a slow or silent server must not hold us here
        for fetch in list(self.fetches.values()):
            fetch.cancelled.set()
        for box in self.outboxes.values():
            box.close()
        with self.lock:
            links = list(self.links)
        for link in links:
            link.close()  # blocked readers and writers wake with EOF or an error
        self.pool.shutdown(wait=True, cancel_futures=True)
        deadline = time.monotonic() + 5.0  # one bound for all: a sender may be mid-handshake
        for thread in self.senders:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        if self.digest is not None:
            self.digest.stop()
        self.store.close()  # drops an uncommitted output

    def _main(self) -> None:
        self._apply(Start())
        finished_at: float | None = None
        last_progress = 0.0
        while True:
            if self.fatal is not None:
                raise self.fatal
            if self.node.failed:
                raise BcastError(f"rank {self.rank}: {self.node.failed}")
            now = self._now()
            if time.monotonic() > self.deadline:
                raise self._timed_out()
            self._try_commit()
            if self.node.finished and not self.commit_pending:
                finished_at = finished_at if finished_at is not None else now
                alive = [p for p in range(self.world) if p != self.rank and p not in self.node.planner.dead]
                if self.node.quiescent() or not alive or now - finished_at > self.linger:
                    self._flush_outboxes()
                    return
            deadline = self.node.next_deadline()
            wait = 0.25 if deadline is None else max(0.0, min(deadline - now, 0.25))
            try:
                event = self.events.get(timeout=wait)
            except queue.Empty:
                event = None
            while event is not None:  # drain what is queued before looking at timers
                self._apply(event)
                try:
                    event = self.events.get_nowait()
                except queue.Empty:
                    event = None
            deadline = self.node.next_deadline()
            if deadline is not None and self._now() >= deadline:
                self._apply(Tick())
            if self.on_progress and self._now() - last_progress > 0.2:
                last_progress = self._now()
                self.on_progress(self._progress())

    def _progress(self) -> Progress:
        held = self.node.held
        # Every piece but the last is full: bytes held from the count alone.
        full = self.layout.pieces and self.node.have[self.layout.pieces - 1]
        tail = self.layout.piece_length(self.layout.pieces - 1) if full else 0
        bytes_held = (held - (1 if full else 0)) * self.layout.piece_size + tail
        return Progress(
            held, self.layout.pieces, self._fetched(), self.node.bytes_from_peers, bytes_held, self.manifest.size
        )

    def _fetched(self) -> int:
        """Object bytes read from storage since this node started, as the client counted them
        off the sockets: retried and discarded bytes included (the hash list, read before, not)."""
        received = getattr(self.client.stats, "bytes_received", None)
        return self.node.bytes_from_storage if received is None else received - self._received0

    def _timed_out(self) -> BcastError:
        return BcastError(f"rank {self.rank}: no completion within {self.timeout:g} s (--timeout)")

    def _now(self) -> float:
        return time.monotonic() - self.t0

    def _post(self, event) -> None:
        self.events.put(event)

    def _fail(self, exc: BaseException) -> None:
        """A worker thread hit something fatal for the whole node: raise it on the protocol's thread."""
        if self.fatal is None:
            self.fatal = exc
        self._post(Tick())

    # ------------------------------------------------------------------ actions

    def _apply(self, event) -> None:
        if isinstance(event, PeerLost):
            with self.lock:
                self.unheard.discard(event.peer)
        for action in self.node.handle(self._now(), event):
            if isinstance(action, Send):
                self._send(action.peer, action.msg)
            elif isinstance(action, FetchStorage):
                self._start_fetch(action)
            elif isinstance(action, CancelFetch):
                fetch = self.fetches.pop(action.fetch_id, None)
                if fetch is not None:
                    fetch.cancelled.set()
            elif isinstance(action, CancelUpload):
                box = self.outboxes.get(action.peer)
                if box is not None:
                    box.cancel_pieces(action.piece)
            elif isinstance(action, Drop):
                self.dropped.add(action.peer)
            elif isinstance(action, PhaseDone):
                setattr(self.report, f"phase{action.phase}_s", self._now())
            elif isinstance(action, Finished):
                self._commit()
            elif isinstance(action, Failed):
                raise BcastError(f"rank {self.rank}: {action.reason}")
        self._refute(event)

    def _refute(self, event) -> None:
        """A notice counted out a rank whose own connection to us is open: it is
        alive (a busy machine, not a dead one). Readmit it, which tells everyone."""
        msg = getattr(event, "msg", None)
        if type(msg) is Notice and msg.kind == LOST and msg.rank in self.node.planner.dead:
            with self.lock:
                alive = msg.rank in self.incoming_live
            if alive:
                self._post(PeerJoined(msg.rank))

    def _commit(self) -> None:
        """Every piece is held: commit once the in-order pass (hash, stream) caught up.
        The protocol thread does not wait for it: it goes on answering peers meanwhile
        (blocking here held up every node still fetching from this one)."""
        self.commit_pending = True
        self._try_commit()

    def _try_commit(self) -> None:
        """If a commit is pending and the in-order pass is done: check the whole digest
        (verify "whole"), publish. The job's timeout bounds the wait (``_main``)."""
        if not self.commit_pending:
            return
        digest = None
        if self.digest is not None:
            if not self.digest.wait(timeout=0):
                return  # its thread posts a Tick when it is done
            digest = self.digest.result(timeout=0)
        self.commit_pending = False
        if self.verify == "whole" and (digest is None or not hmac.compare_digest(digest, self.manifest.sha256)):
            raise BcastError(
                f"rank {self.rank}: sha256 {digest.hex() if digest else '?'} of the assembled object does not match "
                f"{self.manifest.sha256.hex()}; output not written"
            )
        try:
            self.store.commit(digest)
        except OutputError as exc:
            raise BcastError(f"rank {self.rank}: {exc}") from None
        self.report.complete_s = self._now()

    def _stored(self, piece: int, offset: int, data) -> None:
        """Write a verified piece once. A duplicate (the end game's second copy, a GET
        racing a peer) waits for the first write to finish and writes nothing: a piece
        is never rewritten under a peer reading it, and its event follows its bytes."""
        with self.store_lock:
            if self.stored[piece] or not self.store.write(offset, data):
                return
            self.stored[piece] = 1
        if self.digest is not None:
            self.digest.mark(piece)

    # ------------------------------------------------------------------ storage

    def _start_fetch(self, action: FetchStorage) -> None:
        fetch = _Fetch()
        self.fetches[action.fetch_id] = fetch
        self.pool.submit(self._fetch_thread, action, fetch)

    def _fetch_thread(self, action: FetchStorage, fetch: _Fetch) -> None:
        start, end = self.layout.span_bytes(action.first_piece, action.last_piece)
        size = self.manifest.piece_size

        def on_chunk(offset: int, data: bytes) -> None:
            if fetch.cancelled.is_set():
                raise _Cancelled()
            piece = offset // size
            ok = verify_piece(self.manifest, piece, data)
            if ok:
                self._stored(piece, offset, data)
            else:
                with self.lock:
                    self.report.bad_pieces += 1
            self._post(S3Piece(action.fetch_id, piece, ok))

        try:
            self.client.get_range(self.url, start, end, on_chunk, chunk_size=size, etag=self.manifest.etag)
        except _Cancelled:
            return
        except DeadlineExceeded:
            self._fail(self._timed_out())
            return
        except (ObjectNotFound, AccessDenied, ObjectChanged) as exc:
            self._fail(BcastError(f"rank {self.rank}: {exc}"))
            return
        except OutputError as exc:  # our disk, not the storage: the whole node fails
            self._fail(exc)
            return
        except (S3Error, OSError) as exc:
            self._post(S3FetchFailed(action.fetch_id, str(exc)))
            return
        except BaseException as exc:  # a bug: surface it on the protocol's thread rather than lose it
            self._fail(exc)
            return
        self._post(S3FetchDone(action.fetch_id))

    # ------------------------------------------------------------------ peers: sending

    def _send(self, peer: int, msg) -> None:
        """Queue ``msg`` for ``peer``, opening the connection on first need. After a
        failed one, a new one only once the node heard of the loss: if it still
        sends, it learned since that the peer is back."""
        box = self.outboxes.get(peer)
        if box is None or (box.closed and peer not in self.unheard):
            if not 0 <= peer < self.world or peer == self.rank:
                return
            box = self._open_outbox(peer)
        box.put(msg)

    def _open_outbox(self, peer: int) -> _Outbox:
        old = self.outboxes.get(peer)
        if old is not None:
            old.close()  # a sender of a connection now dead may still wait on it
        box = self.outboxes[peer] = _Outbox()
        thread = threading.Thread(
            target=self._sender, args=(peer, box), name=f"peer-out-{self.rank}-{peer}", daemon=True
        )
        self.senders.append(thread)
        thread.start()
        return box

    def _connect(self, peer: int) -> Link | None:
        host, port = self.table[peer]
        deadline = self.t0 + self.join_timeout
        delay = 0.05
        while not self.stopping:
            # A listener that accepts but does not answer (a node whose socket is reserved but whose
            # process has not started) must not hold us long past the join deadline either; a live
            # but busy one gets at least HANDSHAKE_FLOOR_S to answer.
            wait = min(HANDSHAKE_TIMEOUT_S, max(HANDSHAKE_FLOOR_S, deadline - time.monotonic()))
            try:
                return connect_link(host, port, self.hello, self.max_payload, self.key, expect_rank=peer, timeout=wait)
            except (OSError, WireError) as exc:
                permanent = isinstance(exc, WireError) and not isinstance(exc, NotAMember)
                # A peer whose own connection to us is open is alive: never count it out for
                # our failure to reach it in time (it would then ignore us, and we it).
                if permanent or (time.monotonic() > deadline and peer not in self.incoming_live):
                    return None
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
        return None

    def _sender(self, peer: int, box: _Outbox) -> None:
        link = self._connect(peer)
        if link is None:
            self._lose(peer, box)  # first: the protocol must not reopen before it hears of it
            box.close()
            return
        with self.lock:
            self.links.add(link)
            self.report.connections += 1
        if self.stopping:
            link.close()
        try:
            while (msg := box.take()) is not None:
                try:
                    if isinstance(msg, Piece):
                        self._upload(link, msg.piece)
                    else:
                        link.send_record(codec.encode(msg))
                finally:
                    box.sent()
        except (OSError, WireError):
            self._lose(peer, box)
            box.close()

    def _upload(self, link: Link, piece: int) -> None:
        start, end = self.layout.piece_bytes(piece)
        if self.corrupt_uploads and end > start:
            data = bytearray(self.store.view(start, end))
            data[0] ^= 0xFF
            link.send_view(Piece.TYPE, (piece,), memoryview(data))
        else:
            self.store.send(link, Piece.TYPE, (piece,), start, end)

    def _flush_outboxes(self) -> None:
        """Give queued control messages (Have, Done...) a moment to leave."""
        end = time.monotonic() + 2.0
        dead = self.node.planner.dead
        while time.monotonic() < end and not all(box.idle() for p, box in self.outboxes.items() if p not in dead):
            time.sleep(0.01)

    # ------------------------------------------------------------------ peers: receiving

    def _receive(self, link: Link) -> None:
        """Serve one incoming connection until it ends (on the listener's thread for it)."""
        peer = link.rank
        if not self._admit(link):
            link.close()  # a member's bug, not a loss of that peer: its own connection stays
            return
        self._post(PeerJoined(peer))  # the node readmits it if it had counted it out
        # Page-aligned (an anonymous mapping): an O_DIRECT write takes it as is.
        scratch = memoryview(mmap.mmap(-1, self.manifest.piece_size))
        try:
            while (head := link.recv_head()) is not None:
                type_code, fields, payload_len = head
                if type_code == Piece.TYPE:
                    self._receive_piece(link, peer, fields, payload_len, scratch)
                else:
                    payload = link.recv_payload(payload_len) if payload_len is not None else None
                    msg, _ = codec.decode(Record(type_code, fields, payload))
                    self._post(PeerMessage(peer, msg))
        except OutputError as exc:  # our disk, not the peer: the whole node fails, at once
            self._fail(exc)
            return
        except (ConnectionError, OSError, WireError):
            pass
        finally:
            link.close()
            with self.lock:
                self.incoming_live.discard(peer)
        if not self.stopping:
            self._lose(peer)

    def _admit(self, link: Link) -> bool:
        """Accept ``link`` unless its rank is ours, out of range, or already connected
        to us. A restarted node listens elsewhere now: its next connection from us
        goes to the address in its Hello."""
        peer = link.rank
        with self.lock:
            if not 0 <= peer < self.world or peer == self.rank or peer in self.incoming_live or self.stopping:
                return False
            self.incoming_live.add(peer)
            self.links.add(link)
            moved = link.peer.listen[1] and tuple(link.peer.listen) != tuple(self.table[peer])
            if moved:
                self.table[peer] = link.peer.listen
        if moved and peer in self.outboxes:
            self.outboxes[peer].close()  # to the old address: the next Send opens a new one
        return True

    def _receive_piece(self, link: Link, peer: int, fields, payload_len: int | None, scratch: memoryview) -> None:
        piece = fields[0] if len(fields) == 1 else -1
        if not 0 <= piece < self.layout.pieces:
            raise WireError(f"rank {peer} sent piece {piece} of an object of {self.layout.pieces} pieces")
        start, end = self.layout.piece_bytes(piece)
        if payload_len != end - start:
            raise WireError(f"rank {peer} sent piece {piece} with {payload_len} bytes, expected {end - start}")
        data = scratch[:payload_len]
        link.recv_into(data)
        ok = verify_piece(self.manifest, piece, data)
        if ok and peer not in self.dropped and not self.node.have[piece]:
            self._stored(piece, start, data)
        if not ok:
            with self.lock:
                self.report.bad_pieces += 1
        self._post(PeerPiece(peer, piece, ok))

    def _lose(self, peer: int, box: _Outbox | None = None) -> None:
        """Our socket to or from ``peer`` failed; the node decides what it means.
        A failed sender no longer current (the peer was readmitted since) is not news."""
        with self.lock:
            if box is not None and self.outboxes.get(peer) is not box:
                return
            self.unheard.add(peer)
        self._post(PeerLost(peer))
