"""One broadcast participant as a sans-IO state machine: :class:`BcastNode`.

The node combines the phase-1 :class:`~.works.WorkPlanner` (storage fetches
and stealing) and the phase-2 :class:`~.exchange.PieceExchange` over one
possession array. Drivers feed it events and carry out the actions it
returns (see :mod:`.messages` and the package docstring); it never reads a
clock, does I/O or spawns anything, so a run is a pure function of the
event sequence and ``config.seed``.

Phases. In the paper's faithful mode (``overlap_phases=False``) a node opens
the exchange only when every live rank announced ``Done`` (non-steal §4.2:
"nodes that finished wait for the others"; steal likewise ends phase 1 when
no works are left anywhere). With ``overlap_phases=True`` the exchange runs
from the start and storage and peers feed the node at once (the paper's
future work, §6). ``flat`` never talks to peers.

Adaptive works (``adaptive_works=True``, also §6 future work): the node
times its own GETs (latency to the first piece, then throughput) and the
planner sizes GETs and steal grants from those measurements (see
:mod:`.works`); no message changes, so real and simulated drivers are
unaffected.

Orphans. A piece no live neighbour holds may be lost for good (its only
holder died after a double failure, or was banned for corrupt pieces). A
node in the exchange that has been idle -- nothing in flight, nothing new
-- for ``orphan_timeout`` seconds (times a per-node factor in [1, 2), so
that one node usually goes first and the others then get the pieces from
it) while some missing piece has no holder among its neighbours fetches the
works of those pieces from storage itself. Healthy runs never get there:
a node keeps receiving pieces until it is complete.

Elastic membership. A rank the driver cannot reach (it starts late, or died)
is lost (``PeerLost``, on the nodes whose sockets saw it): its heir adopts
its share, and the node tells every rank (a ``LOST`` notice down a binomial
tree of the overlay ``rank + 2^k``, :mod:`.notices`; ``DONE`` and
``COMPLETE`` travel the same way). If it shows up again (``PeerJoined``: it
started late, or was restarted), the node that sees it readmits it and
tells everyone (``JOINED``); each rank that had counted it out readmits it
-- it may be a neighbour again and must announce ``COMPLETE`` before we
leave -- and re-sends it the facts the trees skipped it for
(:meth:`.Notices.reroute`). The rank that adopted its share (its heir) also
sends ``Readmitted``, which makes it drop that share and the GETs of it
under way, so it gets the object from the others and origin egress stays
one object. Only the heir says so: if the heir never counted the rank out,
nobody holds its share but itself.

Connections. The node addresses its overlay ``rank ± 2^k`` at start
(``Watch``: they see it die) and otherwise only the ranks the protocol
needs -- exchange neighbours and steal victims drawn from the overlay, the
ranks notices go to -- so a driver that opens connections on first send
opens O(log N) per node.

Observability: ``storage_done_at`` (this node's storage work ended),
``exchange_started_at`` (phase 2 opened here), ``finished_at`` (every piece
held), and the byte counters ``bytes_from_storage`` / ``bytes_from_peers``
(verified, first copies only).
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, fields

import numpy as np

from .exchange import PieceExchange
from .layout import DEFAULT_PIECE_SIZE, DEFAULT_WORK_PIECES, PAPER_PIECE_SIZE, PAPER_WORK_PIECES, Layout
from .messages import (
    Action,
    Event,
    Failed,
    Finished,
    GiveWork,
    GrantWorks,
    Notice,
    NoWork,
    PeerJoined,
    PeerLost,
    PeerMessage,
    PeerPiece,
    PhaseDone,
    Readmitted,
    S3FetchDone,
    S3FetchFailed,
    S3Piece,
    Send,
    Start,
    Tick,
    Watch,
)
from .notices import COMPLETE, DONE, JOINED, LOST, Notices, overlay
from .works import ALGOS, WorkPlanner


@dataclass(frozen=True)
class BcastConfig:
    """Protocol knobs (defaults: our product choices; :meth:`paper` for seed 004's)."""

    piece_size: int = DEFAULT_PIECE_SIZE  # bytes; unit of verification and exchange
    work_pieces: int = DEFAULT_WORK_PIECES  # pieces per work = per ranged GET / steal unit
    s3_connections: int = 2  # concurrent GETs per node (paper: 1)
    peers: int = 4  # neighbours a node connects to (it also accepts incoming ones)
    upload_slots: int = 4  # regular unchokes (BitTorrent: 4) plus one optimistic
    max_requests: int = 4  # outstanding piece requests per neighbour
    endgame_copies: int = 2  # neighbours asked for one piece at once in the end game
    choke_interval: float = 5.0  # s between choke rounds (BitTorrent: 10 s)
    stall_timeout: float = 30.0  # s without progress on outstanding requests -> drop
    orphan_timeout: float = 30.0  # s idle with holderless pieces -> fetch them from storage
    max_fetch_attempts: int = 5  # GETs of one work before the node fails
    overlap_phases: bool = False  # exchange while fetching (off: the paper's barrier)
    adaptive_works: bool = False  # GET and grant sizes from measured rates (off: the paper's fixed works, halves)
    serve_neediest: bool = False  # unchoke who holds least (off: BitTorrent's best uploaders, as the paper)
    seed: int = 0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            kind = {"int": int, "float": (int, float), "bool": bool}[f.type]
            if not isinstance(value, kind) or (f.type != "bool" and isinstance(value, bool)):
                raise TypeError(f"BcastConfig.{f.name} must be {f.type}, got {value!r}")
            if f.type != "bool" and f.name != "seed" and value <= 0:
                raise ValueError(f"BcastConfig.{f.name} must be > 0, got {value!r}")

    @classmethod
    def paper(cls, **overrides) -> "BcastConfig":
        """Seed 004's setting: 32 KB pieces, works of 100 pieces, one S3 connection."""
        base = dict(piece_size=PAPER_PIECE_SIZE, work_pieces=PAPER_WORK_PIECES, s3_connections=1)
        return cls(**{**base, **overrides})

    def layout(self, size: int) -> Layout:
        return Layout(size, self.piece_size, self.work_pieces)

    def to_dict(self) -> dict:
        return asdict(self)


class BcastNode:
    """Rank ``rank`` of ``nranks`` receiving the object described by ``layout``."""

    def __init__(
        self, rank: int, nranks: int, layout: Layout, algo: str = "steal", config: BcastConfig | None = None
    ) -> None:
        if algo not in ALGOS:
            raise ValueError(f"algo must be one of {ALGOS}, got {algo!r}")
        if not 0 <= rank < nranks:
            raise ValueError(f"rank {rank} out of range for {nranks} ranks")
        self.rank, self.nranks, self.layout, self.algo = rank, nranks, layout, algo
        self.cfg = cfg = config or BcastConfig()
        rng = random.Random(f"{cfg.seed}/{rank}")
        self.have = np.zeros(layout.pieces, bool)
        self.reserved = np.zeros(layout.pieces, bool)  # being fetched from storage
        self.held = 0
        self._now = 0.0
        self._t0: float | None = None  # time of Start: the adaptive planner's clock counts from it
        self._reserved_for = (0, 0)
        self.planner = WorkPlanner(
            rank,
            nranks,
            layout,
            algo,
            cfg.s3_connections,
            cfg.max_fetch_attempts,
            rng,
            self._missing,
            adaptive=cfg.adaptive_works,
            clock=self._clock,
        )
        self.exchange = PieceExchange(rank, nranks, layout, cfg, rng, self.have, self.reserved)
        self.storage_done_at: float | None = None
        self.exchange_started_at: float | None = None
        self.finished_at: float | None = None
        self.failed: str | None = None
        self.complete_ranks: set[int] = set()  # ranks that announced COMPLETE
        self.notices = Notices(rank, nranks)
        self._done_told = False  # our DONE notice went out
        self._ring = (rank, rank)  # (predecessor, successor) among live ranks, as we last watched them
        self.bytes_from_storage = 0
        self.bytes_from_peers = 0
        self.last_gain = 0.0  # time of the last new piece
        self.orphan_wait = cfg.orphan_timeout * (1.0 + rng.random())
        self.orphan_fetches = 0  # works fetched because their pieces had no holder

    # ------------------------------------------------------------ driver interface

    def handle(self, now: float, event: Event) -> list[Action]:
        """Apply one event at time ``now`` (seconds, non-decreasing); return actions."""
        if self.failed:
            return []
        self._now = now
        if isinstance(event, PeerMessage):
            actions = self._on_message(now, event)
        elif isinstance(event, S3Piece):
            actions = self._on_storage_piece(now, event)
        elif isinstance(event, (S3FetchDone, S3FetchFailed)):
            actions = self.planner.fetch_ended(event.fetch_id, isinstance(event, S3FetchFailed))
        elif isinstance(event, PeerPiece):
            actions = self._on_peer_piece(now, event)
        elif isinstance(event, Tick):
            actions = self.exchange.tick(now) + self._fetch_orphans(now)
        elif isinstance(event, PeerLost):
            actions = self._on_peer_lost(event.peer)
        elif isinstance(event, PeerJoined):
            actions = self._on_joined(event.peer)
        elif isinstance(event, Start):
            self._t0 = now
            actions = self.planner.plan() + self._watch_ring() + self._watch_overlay()
        else:
            raise TypeError(f"unknown event {event!r}")
        return self._advance(now, actions)

    def next_deadline(self) -> float | None:
        """When to deliver the next :class:`Tick` (None: no timer pending)."""
        return None if self.failed else self.exchange.next_deadline()

    @property
    def complete(self) -> bool:
        return self.held == self.layout.pieces

    @property
    def finished(self) -> bool:
        return self.finished_at is not None

    def quiescent(self) -> bool:
        """Finished, and every live rank announced Complete: nobody can still
        need our pieces, so the driver may exit. (Neighbours' possession
        lists are not enough: a rank that has not reached us yet, or whose
        neighbour we are not, may still depend on what only we hold.)"""
        if not self.finished:
            return False
        if self.algo == "flat":
            return True
        return all(r in self.complete_ranks or r in self.planner.dead for r in range(self.nranks) if r != self.rank)

    # ------------------------------------------------------------ events

    def _on_message(self, now: float, event: PeerMessage) -> list[Action]:
        peer, msg = event.peer, event.msg
        if type(msg) is Notice:  # a fact, whoever relays it
            return self._on_notice(msg)
        if peer in self.planner.dead or peer == self.rank or type(msg) is Watch:
            return []
        if isinstance(msg, GiveWork):
            return self.planner.on_give_work(peer)
        if isinstance(msg, GrantWorks):
            return self.planner.on_grant(peer, msg.works)
        if isinstance(msg, NoWork):
            return self.planner.on_no_work(peer)
        if isinstance(msg, Readmitted):
            return self.planner.readmitted()
        if self.algo == "flat":
            return []
        return self.exchange.on_message(now, peer, msg)

    # ------------------------------------------------------------ membership (:mod:`.notices`)

    def _tell(self, kind: int, subject: int, span: int) -> list[Action]:
        """Cover ``span`` ring positions with a fact (the whole ring: we are its origin)."""
        if self.algo == "flat":
            return []
        return list(self.notices.spread(kind, subject, span, self.planner.dead))

    def _on_notice(self, msg: Notice) -> list[Action]:
        if not self.notices.valid(msg):
            return []  # out of bounds: ignored, like a Have of a piece that does not exist
        kind, subject = msg.kind, msg.rank
        if kind in (LOST, JOINED):
            return self._on_membership(msg)
        if subject != self.rank and subject not in self.planner.dead:
            if kind == DONE:
                self.planner.on_done(subject)
            elif kind == COMPLETE:
                self.complete_ranks.add(subject)
        return self._tell(kind, subject, msg.span)

    def _on_membership(self, msg: Notice) -> list[Action]:
        """A lost or joined fact: acted on once, in epoch order (an older fact that
        crossed a newer one on its way is dropped), passed on like any other."""
        kind, subject = msg.kind, msg.rank
        if msg.epoch < self.notices.epoch[subject]:
            return []
        fresh = self.notices.newer(msg)
        if fresh and subject == self.rank and kind == LOST:
            # counted out while alive (an unreachable rank is lost to others): say we are back
            self.notices.enter(subject, msg.epoch + 1)
            self.notices.forget(JOINED, subject)
            return self._tell(JOINED, subject, self.nranks)
        actions: list[Action] = []
        if fresh:
            self.notices.enter(subject, msg.epoch)
            actions = self._lose(subject) if kind == LOST else self._rejoin(subject)
        if subject == self.rank and kind == LOST:
            return actions  # an old count-out, already answered
        return actions + self._tell(kind, subject, msg.span)

    def _on_peer_lost(self, peer: int) -> list[Action]:
        """Our own sockets saw ``peer`` go: tell every rank, unless it had finished
        (a node leaves once everyone is complete: nobody waits for it)."""
        if peer == self.rank or peer in self.planner.dead:
            return []
        self.notices.enter(peer, self.notices.next_epoch(peer))
        actions = self._lose(peer)
        if peer not in self.complete_ranks:
            actions += self._tell(LOST, peer, self.nranks)
        return actions

    def _lose(self, peer: int) -> list[Action]:
        if peer == self.rank or peer in self.planner.dead:
            return []
        # forget its possessions first: the heir must not count on them
        actions = self.exchange.exclude(self._now, peer, None)
        actions += self.planner.on_peer_lost(peer)
        self.notices.forget(JOINED, peer)
        if self.algo == "flat":
            return actions
        return actions + self.notices.reroute(peer, self.planner.dead) + self._watch_ring()

    def _on_joined(self, peer: int) -> list[Action]:
        """``peer`` connected to us: if we counted it out, it is back; tell every rank."""
        if peer not in self.planner.dead or peer == self.rank:
            return []
        self.notices.enter(peer, self.notices.next_epoch(peer))
        return self._rejoin(peer) + self._tell(JOINED, peer, self.nranks)

    def _rejoin(self, peer: int) -> list[Action]:
        """A rank we counted out is back: readmit it with no share (its heir has it).
        What it missed while out reaches it by :meth:`.Notices.reroute`."""
        if peer not in self.planner.dead or peer == self.rank:
            return []
        adopted = peer in self.planner.adopted
        self.planner.revive(peer)
        self.exchange.include(peer)
        self.complete_ranks.discard(peer)
        for kind in (DONE, COMPLETE, LOST):
            self.notices.forget(kind, peer)
        # Only the rank that took its share says so: if the heir never counted it out (nodes
        # judge liveness by their own sockets), nobody adopted, and it must fetch its share itself.
        actions: list[Action] = [Send(peer, Readmitted())] if adopted else []
        if self.algo == "flat":
            return actions
        return actions + self.notices.reroute(peer, self.planner.dead) + self._watch_ring()

    def _watch_overlay(self) -> list[Action]:
        """At start, connect to our overlay (``rank ± 2^k``; the successor has its
        Watch already): they see us die, and, if we were restarted, learn our new
        address from the connection. Everything else opens on first need."""
        if self.algo == "flat":
            return []
        succ = self._ring[1]
        return [Send(r, Watch()) for r in overlay(self.rank, self.nranks) if r != succ]

    def _watch_ring(self) -> list[Action]:
        """Keep a connection to our live successor (it sees us die, and is our heir);
        probe a new predecessor after ours died (if it is gone too, we see it)."""
        if self.algo == "flat" or self.nranks == 1:
            return []
        dead, n = self.planner.dead, self.nranks
        succ = next((r for r in ((self.rank + k) % n for k in range(1, n)) if r not in dead), self.rank)
        pred = next((r for r in ((self.rank - k) % n for k in range(1, n)) if r not in dead), self.rank)
        old_pred, old_succ = self._ring
        self._ring = (pred, succ)
        actions: list[Action] = [Send(succ, Watch())] if succ not in (old_succ, self.rank) else []
        if pred not in (old_pred, self.rank, succ) and old_pred in dead:
            actions.append(Send(pred, Watch()))
        return actions

    def _clock(self) -> float:
        return 0.0 if self._t0 is None else self._now - self._t0

    def _on_storage_piece(self, now: float, event: S3Piece) -> list[Action]:
        if event.ok and self.cfg.adaptive_works and 0 <= event.piece < self.layout.pieces:
            self.planner.piece_arrived(event.fetch_id, self.layout.piece_length(event.piece))
        if not event.ok or not 0 <= event.piece < self.layout.pieces or self.have[event.piece]:
            return []  # a bad piece stays missing; fetch_ended retries it
        self.bytes_from_storage += self._store(event.piece)
        return self.exchange.acquired(now, event.piece, self.complete)

    def _on_peer_piece(self, now: float, event: PeerPiece) -> list[Action]:
        if not 0 <= event.piece < self.layout.pieces:
            return []
        keep, actions = self.exchange.on_piece(now, event.peer, event.piece, event.ok)
        if keep:
            self.bytes_from_peers += self._store(event.piece)
            actions += self.exchange.acquired(now, event.piece, self.complete, source=event.peer)
        return actions

    def _store(self, piece: int) -> int:
        self.have[piece] = True
        self.held += 1
        self.last_gain = self._now
        return self.layout.piece_length(piece)

    def _missing(self, work: int) -> tuple[int, int] | None:
        """Span of a work still to fetch: None if held, or if a neighbour
        holds all of it (it comes through the exchange)."""
        pieces = self.layout.work_pieces_of(work)
        lacking = np.flatnonzero(~self.have[pieces.start : pieces.stop])
        if lacking.size == 0 or self.exchange.holds_work(pieces):
            return None
        return pieces.start + int(lacking[0]), pieces.start + int(lacking[-1])

    def _fetch_orphans(self, now: float) -> list[Action]:
        ex = self.exchange
        if (
            not ex.started
            or self.finished
            or self.planner.pending
            or self.planner.fetches
            or now - self.last_gain < self.orphan_wait
            or any(nb.outstanding for nb in ex.neighbours.values())
        ):
            return []
        held_around = np.zeros(self.layout.pieces, bool)
        for nb in ex.neighbours.values():
            held_around |= nb.has
        orphans = np.flatnonzero(~self.have & ~held_around)
        if orphans.size == 0:
            return []
        works = sorted({self.layout.work_of(int(p)) for p in orphans})
        self.orphan_fetches += len(works)
        self.last_gain = now  # give the fetches time before looking again
        return self.planner.adopt(works)

    # ------------------------------------------------------------ phases

    def _advance(self, now: float, actions: list[Action]) -> list[Action]:
        """Follow phase changes after an event."""
        fetches = (self.planner.next_fetch_id, len(self.planner.fetches))
        if fetches != self._reserved_for:  # ids only grow: same pair, same fetches
            self._reserved_for = fetches
            self.reserved[:] = False
            for fetch in self.planner.fetches.values():
                self.reserved[fetch.first_piece : fetch.last_piece + 1] = True
        if self.planner.failed and not self.failed:
            self.failed = next((a.reason for a in actions if isinstance(a, Failed)), "failed")
            return actions
        if self.planner.storage_done and self.storage_done_at is None:
            self.storage_done_at = now
            actions.append(PhaseDone(1))
        if self.algo != "flat" and not self.exchange.started and (self.cfg.overlap_phases or self.planner.all_done):
            self.exchange_started_at = now
            actions += self.exchange.start(now)
        if self.held == self.layout.pieces and self.finished_at is None:
            self.finished_at = now
            if self.storage_done_at is None:
                self.storage_done_at = now
                actions.append(PhaseDone(1))
            actions += self.planner.close()
            self.reserved[:] = False
            actions += self._announce_done()
            actions += self._tell(COMPLETE, self.rank, self.nranks)
            actions += [PhaseDone(2), Finished()]
        return actions + self._announce_done()

    def _announce_done(self) -> list[Action]:
        """Our storage phase is over (once; a later adoption does not take it back)."""
        if self._done_told or not (self.planner.storage_done or self.finished):
            return []
        self._done_told = True
        return self._tell(DONE, self.rank, self.nranks)
