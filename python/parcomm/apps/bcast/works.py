"""Phase 1: which works a node fetches from storage, and work stealing.

* ``flat``: the node fetches every work itself (§3.3, the flat tree).
* ``nonsteal``: the node fetches its §4.2 share, nothing else.
* ``steal`` (§4.3): the node fetches its share head first; once its list is
  empty and a storage connection is idle it sends ``GiveWork`` to a victim,
  which hands over the last ``ceil(len/2)`` works of its list (works already
  being fetched are not in the list) or answers ``NoWork``. Each node asks
  the ranks of its overlay (``rank ± 2^k``) that started with works in its
  own seeded random order, one request at a time,
  skipping those that announced ``Done``, answered ``NoWork`` or died, and
  keeps asking a victim as long as it grants works; when none is left the
  node's storage phase is over and it announces it to every rank (a ``DONE``
  notice, :mod:`.notices`).

Recovery. When a rank dies (``peer_lost``) its works return to the pool:
the works *we* granted it come back to our list, and its initially assigned
works go to its *heir*, the next live rank after it in ring order (every
node computes the same heir from the same losses, so exactly one adopts
them). A work is fetched only if some of its pieces are still needed
(``needs`` callback: not held, and not announced by a live neighbour), so
an adopted work that was already spread costs no storage egress. Anything else
that is lost (works a dead rank granted to a rank that died too, the share
of a peer banned for corrupt pieces) is caught by the node's orphan check
(see :mod:`.node`).

Adaptive works (``adaptive=True``; beyond the paper, its §6 future work
"change the size of stolen work with each node's download speed"). The node
measures each of its GETs from its own events: request latency (fetch
started -> first piece) and per-connection throughput (first piece -> end),
as exponentially weighted means. Two things follow, neither needs a new
message:

* *GET size*: an idle connection takes up to ``k`` consecutive, wholly
  missing works of its list in one ranged GET, ``k`` = measured rate x
  latency x ``1/LATENCY_SHARE - 1`` / work bytes, so the request latency
  costs at most ~``LATENCY_SHARE`` of a GET's time; ``k`` is 1 until a
  GET was measured, and never more than a ``1 / (2 x connections)`` share
  of the list, so most of it stays stealable.
* *grant size*: a victim hands a thief a share of its list in proportion to
  their rates, ``ceil(len x r_t / (r_t + r_v))`` instead of ``ceil(len/2)``.
  ``r_v`` is the victim's measured rate (all connections); ``r_t``, which
  the victim cannot observe, is estimated from what the thief is known to
  have fetched -- its initial share plus the works we granted it -- divided
  by the time elapsed, and taken at least ``r_v`` (the thief ran dry
  first). So a grant is never smaller than the paper's half.
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from .layout import Layout
from .messages import Action, CancelFetch, Failed, FetchStorage, GiveWork, GrantWorks, NoWork, Send
from .notices import overlay

ALGOS = ("flat", "nonsteal", "steal")


@lru_cache(maxsize=8)
def _ranks_with_works(works: int, nranks: int) -> tuple[int, ...]:
    """Ranks whose §4.2 share is not empty (computed once for all nodes of a run)."""
    return tuple(r for r in range(nranks) if (r + 1) * works // nranks > r * works // nranks)


LATENCY_SHARE = 0.05  # adaptive GETs: request latency at most ~5 % of a GET
EWMA = 0.5  # weight of the newest GET in the measured rate and latency


@dataclass
class Fetch:
    work: int
    first_piece: int
    last_piece: int
    works: tuple[int, ...] = ()  # every work of the GET (adaptive GETs span several)
    started: float = 0.0
    first_at: float | None = None  # first piece arrived
    nbytes: int = 0  # bytes arrived

    def __post_init__(self) -> None:
        if not self.works:
            self.works = (self.work,)


class WorkPlanner:
    """Work list, running fetches and stealing of one node (no I/O).

    ``missing(work)`` returns the inclusive piece span still needed for a
    work, or ``None`` when nothing of it needs fetching.
    """

    def __init__(
        self,
        rank: int,
        nranks: int,
        layout: Layout,
        algo: str,
        connections: int,
        max_attempts: int,
        rng: random.Random,
        missing: Callable[[int], tuple[int, int] | None],
        adaptive: bool = False,
        clock: Callable[[], float] = lambda: 0.0,
    ) -> None:
        if algo not in ALGOS:
            raise ValueError(f"algo must be one of {ALGOS}, got {algo!r}")
        self.rank, self.nranks, self.layout, self.algo = rank, nranks, layout, algo
        self.connections, self.max_attempts, self.rng, self.missing = connections, max_attempts, rng, missing
        mine = range(layout.works) if algo == "flat" else layout.initial_works(rank, nranks)
        self.pending: deque[int] = deque(mine)
        self.fetches: dict[int, Fetch] = {}
        self.attempts: dict[int, int] = {}  # work -> failed fetches
        self.next_fetch_id = 0
        self.asking: int | None = None  # victim of our outstanding GiveWork
        self.refused: set[int] = set()  # answered NoWork
        self.done_ranks: set[int] = set()  # announced Done
        self.dead: set[int] = set()
        self.settled: set[int] = set()  # other ranks done or dead: the phase-1 barrier
        # Only ranks that started with works can be asked: one that started
        # empty holds stolen works at most, and probing every rank would cost
        # N^2 round trips when N exceeds the number of works. And only ranks of
        # our overlay (rank ± 2^k, :func:`.notices.overlay`): a victim has
        # 2 log2 N thieves, and stealing opens no connection notices do not.
        near = set(overlay(rank, nranks))
        others = [r for r in _ranks_with_works(layout.works, nranks) if r in near]
        rng.shuffle(others)
        self.victim_order = others  # each victim is asked in this (seeded random) order
        self.next_victim = 0
        self.granted: dict[int, set[int]] = {}  # rank -> works we handed it
        self.adopted: set[int] = set()  # dead ranks whose works we took as heir
        self.storage_done = False
        self.failed = False
        self.closed = False  # the node holds everything: fetch and steal no more
        self.adaptive, self.clock = adaptive, clock
        self.conn_rate: float | None = None  # measured bytes/s of one connection (EWMA)
        self.latency: float | None = None  # measured request latency (EWMA)

    # ------------------------------------------------------------ fetching

    def plan(self) -> list[Action]:
        """Start fetches on idle connections, steal, or declare the storage phase over."""
        actions: list[Action] = []
        while len(self.fetches) < self.connections and self.pending and not self.failed:
            work = self.pending.popleft()
            span = self.missing(work)
            if span is not None:
                actions.append(self._fetch(work, *span, more=self._extra_works(work, span)))
        if self.pending or self.failed or len(self.fetches) >= self.connections:
            return actions
        if self.algo == "steal" and self.asking is None and not self.closed:
            self.asking = self._victim()
            if self.asking is not None:
                actions.append(Send(self.asking, GiveWork()))
        if not self.fetches and self.asking is None and not self.storage_done:
            self.storage_done = True  # the node announces it (a DONE notice, :mod:`.notices`)
        return actions

    def _fetch(self, work: int, first: int, last: int, more: tuple[int, ...] = ()) -> FetchStorage:
        fid = self.next_fetch_id
        self.next_fetch_id += 1
        if more:
            last = self.layout.work_pieces_of(more[-1])[-1]
        self.fetches[fid] = Fetch(work, first, last, (work, *more), started=self.clock())
        return FetchStorage(fid, first, last)

    def _extra_works(self, work: int, span: tuple[int, int]) -> tuple[int, ...]:
        """Adaptive GETs: the works after ``work`` that join its GET (see the
        module docstring); only whole, missing, consecutive works."""
        if not self.adaptive or self.conn_rate is None or self.latency is None:
            return ()
        want = self.conn_rate * self.latency * (1 / LATENCY_SHARE - 1) / self.layout.work_size
        room = len(self.pending) // (2 * self.connections) if self.algo == "steal" else len(self.pending)
        extra = min(int(want) - 1, room)
        pieces = self.layout.work_pieces_of(work)
        if extra <= 0 or span != (pieces[0], pieces[-1]):
            return ()
        more: list[int] = []
        while len(more) < extra and self.pending and self.pending[0] == work + 1 + len(more):
            nxt = self.pending[0]
            pieces = self.layout.work_pieces_of(nxt)
            if self.missing(nxt) != (pieces[0], pieces[-1]):
                break
            more.append(self.pending.popleft())
        return tuple(more)

    def piece_arrived(self, fetch_id: int, nbytes: int) -> None:
        """A piece of a running GET arrived (measurement for adaptive works)."""
        fetch = self.fetches.get(fetch_id)
        if fetch is None:
            return
        if fetch.first_at is None:
            fetch.first_at = self.clock()
            lat = fetch.first_at - fetch.started
            self.latency = lat if self.latency is None else (1 - EWMA) * self.latency + EWMA * lat
        fetch.nbytes += nbytes

    def _measure(self, fetch: Fetch) -> None:
        if fetch.first_at is None or fetch.nbytes <= 0:
            return
        span = self.clock() - fetch.first_at
        if span <= 0:
            return
        # the first piece's own transfer time is inside latency: count the bytes after it
        first = self.layout.piece_length(fetch.first_piece)
        if fetch.nbytes <= first:
            return
        rate = (fetch.nbytes - first) / span
        self.conn_rate = rate if self.conn_rate is None else (1 - EWMA) * self.conn_rate + EWMA * rate

    @property
    def measured_rate(self) -> float | None:
        """The node's measured storage rate over all its connections (bytes/s)."""
        return None if self.conn_rate is None else self.conn_rate * self.connections

    def close(self) -> list[Action]:
        """The node holds every piece: drop the list, end the storage phase.
        Returns the fetches to cancel and the ``Done`` announcements."""
        self.closed = True
        actions: list[Action] = [CancelFetch(fid) for fid in self.fetches]
        self.fetches.clear()
        self.pending.clear()
        return actions + self.plan()

    def fetch_ended(self, fetch_id: int, failed: bool) -> list[Action]:
        """A GET finished or gave up; retry what is still missing of its work."""
        fetch = self.fetches.pop(fetch_id, None)
        if fetch is None:
            return []
        if self.adaptive and not failed:
            self._measure(fetch)
        for work in reversed(fetch.works):
            if self.missing(work) is not None:
                self.attempts[work] = tries = self.attempts.get(work, 0) + 1
                if tries >= self.max_attempts:
                    self.failed = True
                    why = "failed" if failed else "returned bad pieces"
                    return [Failed(f"storage fetch of work {work} {why} {tries} times")]
                self.pending.appendleft(work)
        return self.plan()

    def fetching(self) -> list[Fetch]:
        return list(self.fetches.values())

    # ------------------------------------------------------------ stealing (§4.3)

    def _victim(self) -> int | None:
        """Next rank not known to be out of works (done, refused or dead)."""
        order = self.victim_order
        while self.next_victim < len(order):
            rank = order[self.next_victim]
            if rank not in self.settled and rank not in self.refused:
                return rank
            self.next_victim += 1
        return None

    def on_give_work(self, peer: int) -> list[Action]:
        """A thief asks: hand over the last ceil(len/2) works of our list."""
        if not self.pending or self.algo == "flat":
            return [Send(peer, NoWork())]
        count = self._grant_count(peer)
        works = tuple(list(self.pending)[-count:])
        for _ in range(count):
            self.pending.pop()
        self.granted.setdefault(peer, set()).update(works)
        return [Send(peer, GrantWorks(works))]

    def _grant_count(self, peer: int) -> int:
        """Paper: ceil(len/2). Adaptive: in proportion to the estimated rates."""
        n = len(self.pending)
        half = math.ceil(n / 2)
        mine = self.measured_rate
        now = self.clock()
        if not self.adaptive or mine is None or now <= 0:
            return half
        known = len(self.layout.initial_works(peer, self.nranks)) + len(self.granted.get(peer, ()))
        thief = max(known * self.layout.work_size / now, mine)
        return max(half, min(n, math.ceil(n * thief / (thief + mine))))

    def on_grant(self, peer: int, works: tuple[int, ...]) -> list[Action]:
        if self.asking == peer:
            self.asking = None
        self.pending.extend(w for w in works if 0 <= w < self.layout.works)
        if self.storage_done and self.pending:
            self.storage_done = False  # unasked grant (e.g. late reply): fetch it anyway
        return self.plan()

    def on_no_work(self, peer: int) -> list[Action]:
        self.refused.add(peer)
        if self.asking == peer:
            self.asking = None
        return self.plan()

    def on_done(self, peer: int) -> None:
        if peer != self.rank:
            self.done_ranks.add(peer)
            self.settled.add(peer)

    # ------------------------------------------------------------ recovery

    def live_others(self) -> list[int]:
        return [r for r in range(self.nranks) if r != self.rank and r not in self.dead]

    def heir(self, rank: int) -> int:
        """Next live rank after ``rank`` in ring order (same answer on every node)."""
        for step in range(1, self.nranks + 1):
            candidate = (rank + step) % self.nranks
            if candidate not in self.dead:
                return candidate
        return self.rank

    def on_peer_lost(self, peer: int) -> list[Action]:
        if peer in self.dead or peer == self.rank:
            return []
        self.dead.add(peer)
        self.settled.add(peer)
        if self.asking == peer:
            self.asking = None
        returned = sorted(self.granted.pop(peer, ()))
        for dead in sorted(self.dead - self.adopted):
            if self.heir(dead) == self.rank:
                self.adopted.add(dead)
                if self.algo != "flat":
                    returned += list(self.layout.initial_works(dead, self.nranks))
        return self.adopt(returned)

    def revive(self, peer: int) -> None:
        """``peer``, counted out before, is back. Its share stays with its heir
        (``adopted`` keeps it, so a second loss is not adopted twice) and it is
        settled for the barrier: it will have nothing of its own to fetch."""
        self.dead.discard(peer)
        self.settled.add(peer)
        self.refused.add(peer)  # nothing to steal from it

    def readmitted(self) -> list[Action]:
        """We were counted out and came back: our initial share is our heir's.
        Drop it, and the GETs of it under way; keep what was granted to us."""
        if self.algo == "flat" or self.closed:
            return []
        initial = set(self.layout.initial_works(self.rank, self.nranks))
        self.pending = deque(w for w in self.pending if w not in initial)
        actions: list[Action] = []
        for fetch_id, fetch in list(self.fetches.items()):
            if set(fetch.works) <= initial:
                del self.fetches[fetch_id]
                actions.append(CancelFetch(fetch_id))
        return actions + self.plan()

    def adopt(self, works: list[int]) -> list[Action]:
        """Add works to our list (recovery); returns the fetches it starts."""
        fresh = [w for w in works if w not in self.pending and not self._is_fetching(w)]
        if fresh and not self.closed:
            self.pending.extend(fresh)
            self.storage_done = False
        return self.plan()

    def _is_fetching(self, work: int) -> bool:
        return any(work in f.works for f in self.fetches.values())

    @property
    def all_done(self) -> bool:
        """Every live rank (us included) finished its storage phase."""
        return self.storage_done and len(self.settled) == self.nranks - 1
