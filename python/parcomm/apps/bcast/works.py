"""Phase 1: which works a node fetches from storage, and work stealing.

* ``flat``: the node fetches every work itself (§3.3, the flat tree).
* ``nonsteal``: the node fetches its §4.2 share, nothing else.
* ``steal`` (§4.3): the node fetches its share head first; once its list is
  empty and a storage connection is idle it sends ``GiveWork`` to a victim,
  which hands over the last ``ceil(len/2)`` works of its list (works already
  being fetched are not in the list) or answers ``NoWork``. Each node asks
  the ranks that started with works in its own seeded random order, one
  request at a time,
  skipping those that announced ``Done``, answered ``NoWork`` or died, and
  keeps asking a victim as long as it grants works; when none is left the
  node's storage phase is over and it announces ``Done`` to every rank.

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
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from .layout import Layout
from .messages import Action, CancelFetch, Done, Failed, FetchStorage, GiveWork, GrantWorks, NoWork, Send

ALGOS = ("flat", "nonsteal", "steal")


@lru_cache(maxsize=8)
def _ranks_with_works(works: int, nranks: int) -> tuple[int, ...]:
    """Ranks whose §4.2 share is not empty (computed once for all nodes of a run)."""
    return tuple(r for r in range(nranks) if (r + 1) * works // nranks > r * works // nranks)


@dataclass
class Fetch:
    work: int
    first_piece: int
    last_piece: int


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
        # N^2 round trips when N exceeds the number of works.
        others = [r for r in _ranks_with_works(layout.works, nranks) if r != rank]
        rng.shuffle(others)
        self.victim_order = others  # each victim is asked in this (seeded random) order
        self.next_victim = 0
        self.granted: dict[int, set[int]] = {}  # rank -> works we handed it
        self.adopted: set[int] = set()  # dead ranks whose works we took as heir
        self.storage_done = False
        self.failed = False
        self.closed = False  # the node holds everything: fetch and steal no more

    # ------------------------------------------------------------ fetching

    def plan(self) -> list[Action]:
        """Start fetches on idle connections, steal, or declare the storage phase over."""
        actions: list[Action] = []
        while len(self.fetches) < self.connections and self.pending and not self.failed:
            work = self.pending.popleft()
            span = self.missing(work)
            if span is not None:
                actions.append(self._fetch(work, *span))
        if self.pending or self.failed or len(self.fetches) >= self.connections:
            return actions
        if self.algo == "steal" and self.asking is None and not self.closed:
            self.asking = self._victim()
            if self.asking is not None:
                actions.append(Send(self.asking, GiveWork()))
        if not self.fetches and self.asking is None and not self.storage_done:
            self.storage_done = True
            if self.algo != "flat":
                done = Done()
                actions += [Send(r, done) for r in self.live_others()]
        return actions

    def _fetch(self, work: int, first: int, last: int) -> FetchStorage:
        fid = self.next_fetch_id
        self.next_fetch_id += 1
        self.fetches[fid] = Fetch(work, first, last)
        return FetchStorage(fid, first, last)

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
        if self.missing(fetch.work) is not None:
            self.attempts[fetch.work] = tries = self.attempts.get(fetch.work, 0) + 1
            if tries >= self.max_attempts:
                self.failed = True
                why = "failed" if failed else "returned bad pieces"
                return [Failed(f"storage fetch of work {fetch.work} {why} {tries} times")]
            self.pending.appendleft(fetch.work)
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
        count = math.ceil(len(self.pending) / 2)
        works = tuple(list(self.pending)[-count:])
        for _ in range(count):
            self.pending.pop()
        self.granted.setdefault(peer, set()).update(works)
        return [Send(peer, GrantWorks(works))]

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

    def adopt(self, works: list[int]) -> list[Action]:
        """Add works to our list (recovery); returns the fetches it starts."""
        fresh = [w for w in works if w not in self.pending and not self._is_fetching(w)]
        if fresh and not self.closed:
            self.pending.extend(fresh)
            self.storage_done = False
        return self.plan()

    def _is_fetching(self, work: int) -> bool:
        return any(f.work == work for f in self.fetches.values())

    @property
    def all_done(self) -> bool:
        """Every live rank (us included) finished its storage phase."""
        return self.storage_done and len(self.settled) == self.nranks - 1
