"""Phase 2: the BitTorrent-like piece exchange among nodes (seed 004 §4.2,
after Cohen's BitTorrent and the Robber multicast the paper runs).

Overlay. When the exchange opens, a node connects to ``peers`` random ranks
of its overlay ``rank ± 2^k`` (:mod:`.notices`: notices use those
connections anyway; any rank once the overlay is used up) by sending its
possession list (``Bitfield``); a rank receiving a
``Bitfield`` from a stranger accepts it as a neighbour and answers with its
own, so neighbourhoods are symmetric (about ``2 * peers`` per node). A
neighbour that is lost, dropped or banned is replaced by a fresh random rank.

Downloading. ``Have`` keeps each neighbour's possession list current. A node
is ``Interested`` in a neighbour holding a piece it lacks; once unchoked it
keeps up to ``max_requests`` requests outstanding there, choosing the rarest
piece among its neighbours (ties broken by a per-node random order), never
one it is fetching from storage. End game: when every missing piece is
requested already, pieces may be requested from ``endgame_copies``
neighbours at once; the first copy wins and the others get ``Cancel``.

Uploading (choking, §4.2). Every ``choke_interval`` the node unchokes the
``upload_slots`` interested neighbours that delivered it the most bytes in
the last round, plus one optimistic unchoke rotated every third round; a
node holding everything ranks by least recently served instead. With
``serve_neediest`` (beyond the paper) it ranks by fewest pieces held: the
nodes of one job cooperate, so tit-for-tat buys nothing, and serving the
nodes furthest behind shortens the tail the whole broadcast waits for. A free slot
is filled at once when a neighbour becomes interested, so the exchange does
not wait a round to start. Requests from choked peers are ignored.

Faults. A piece failing verification bans its sender (``Drop``, never
contacted again) and the piece is requested elsewhere; a neighbour with
requests outstanding that delivers nothing for ``stall_timeout`` seconds is
dropped the same way (checked at each choke round, so detected within
``stall_timeout + choke_interval``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

from .layout import Layout
from .messages import (
    Action,
    Bitfield,
    Cancel,
    CancelUpload,
    Choke,
    Drop,
    Have,
    Interested,
    Message,
    NotInterested,
    Piece,
    Request,
    Send,
    Unchoke,
)
from .notices import overlay

OPTIMISTIC_ROUNDS = 3  # BitTorrent rotates the optimistic unchoke every 30 s = 3 rounds


@dataclass
class Neighbour:
    has: np.ndarray
    connected: bool = False  # we sent our Bitfield
    am_choking: bool = True
    am_interested: bool = False
    peer_choking: bool = True
    peer_interested: bool = False
    outstanding: set[int] = field(default_factory=set)
    last_progress: float = 0.0
    received_round: int = 0  # bytes from it this choke round
    last_served: float = -1.0


class PieceExchange:
    """Possession lists, requests, choking and fault handling of one node.

    ``have`` is the node's possession array, shared and updated by the node;
    ``reserved`` marks pieces the node is fetching from storage.
    """

    def __init__(
        self, rank: int, nranks: int, layout: Layout, config, rng: random.Random, have: np.ndarray, reserved: np.ndarray
    ) -> None:
        self.rank, self.nranks, self.layout, self.cfg, self.rng = rank, nranks, layout, config, rng
        self.have, self.reserved = have, reserved
        pieces = layout.pieces
        self.rarity = np.zeros(pieces, np.int32)
        self.requested = np.zeros(pieces, np.int32)  # outstanding requests per piece
        order = list(range(pieces))
        rng.shuffle(order)
        self.tiebreak = np.empty(pieces, np.int64)
        self.tiebreak[order] = np.arange(pieces)
        self.overlay = overlay(rank, nranks)
        self.near = set(self.overlay)
        self.neighbours: dict[int, Neighbour] = {}
        self.excluded: set[int] = set()  # dead, dropped or banned
        self.banned: set[int] = set()
        self.started = False
        self.next_round = 0.0
        self.round = 0
        self.optimistic: int | None = None

    # ------------------------------------------------------------ overlay

    def start(self, now: float) -> list[Action]:
        self.started = True
        self.next_round = now + self.cfg.choke_interval
        actions: list[Action] = []
        for peer in list(self.neighbours):  # strangers that reached us first
            actions += self._connect(now, peer)
        want = max(0, self.cfg.peers - len(self.neighbours))
        for peer in self._strangers(want):
            actions += self._connect(now, peer)
        for peer in list(self.neighbours):  # possession lists that arrived before we opened
            actions += self._update_interest(now, peer)
        return actions + self._fill_slots(now)

    def _strangers(self, count: int) -> list[int]:
        """Random ranks not yet neighbours: from our overlay (``rank ± 2^k``, whose
        connections notices open anyway) while it has some, then from all ranks."""
        taken = self.neighbours.keys() | self.excluded
        near = [r for r in self.overlay if r not in taken]
        picked = self.rng.sample(near, min(count, len(near)))
        if len(picked) < count:
            far = [r for r in range(self.nranks) if r != self.rank and r not in taken and r not in self.near]
            picked += self.rng.sample(far, min(count - len(picked), len(far)))
        return picked

    def _connect(self, now: float, peer: int) -> list[Action]:
        nb = self.neighbours.get(peer)
        if nb is None:
            nb = self.neighbours[peer] = Neighbour(np.zeros(self.layout.pieces, bool), last_progress=now)
        if nb.connected:
            return []
        nb.connected = True
        return [Send(peer, Bitfield.of(self.have))]

    def _forget(self, peer: int) -> None:
        nb = self.neighbours.pop(peer, None)
        if nb is None:
            return
        self.rarity -= nb.has
        for piece in nb.outstanding:
            self.requested[piece] -= 1
        if self.optimistic == peer:
            self.optimistic = None

    def exclude(self, now: float, peer: int, reason: str | None) -> list[Action]:
        """Stop dealing with ``peer`` (lost when ``reason`` is None, else
        dropped with that reason), replace it, re-request its pieces."""
        if peer in self.excluded:
            return []
        self.excluded.add(peer)
        was_neighbour = peer in self.neighbours
        self._forget(peer)
        actions: list[Action] = [] if reason is None else [Drop(peer, reason)]
        if self.started and was_neighbour:
            for stranger in self._strangers(1):
                actions += self._connect(now, stranger)
            actions += self._fill_slots(now)
            actions += self._request_all(now)
        return actions

    def include(self, peer: int) -> None:
        """``peer`` was lost and is back: it may be a neighbour again (once its
        ``Bitfield`` arrives). A banned peer stays banned."""
        if peer not in self.banned:
            self.excluded.discard(peer)

    # ------------------------------------------------------------ messages

    def on_message(self, now: float, peer: int, msg: Message) -> list[Action]:
        if peer in self.excluded:
            return []
        nb = self.neighbours.get(peer)
        if isinstance(msg, Bitfield):
            try:
                has = msg.unpack(self.layout.pieces)
            except ValueError as err:
                return self.exclude(now, peer, f"bad bitfield: {err}")
            if nb is None:
                nb = self.neighbours[peer] = Neighbour(np.zeros(self.layout.pieces, bool), last_progress=now)
            self.rarity += has & ~nb.has
            nb.has |= has
            actions = self._connect(now, peer) if self.started else []
            return actions + self._update_interest(now, peer)
        if nb is None:
            return []  # not (yet) a neighbour: its Bitfield comes first
        if isinstance(msg, Have):
            if 0 <= msg.piece < self.layout.pieces and not nb.has[msg.piece]:
                nb.has[msg.piece] = True
                self.rarity[msg.piece] += 1
                if not self.have[msg.piece]:
                    return self._update_interest(now, peer)
            return []
        if isinstance(msg, Request):
            if nb.am_choking or not (0 <= msg.piece < self.layout.pieces) or not self.have[msg.piece]:
                return []
            nb.last_served = now
            return [Send(peer, Piece(msg.piece))]
        if isinstance(msg, Cancel):
            return [CancelUpload(peer, msg.piece)]
        if isinstance(msg, Choke):
            nb.peer_choking = True
            for piece in nb.outstanding:
                self.requested[piece] -= 1
            nb.outstanding.clear()
            return self._request_all(now)
        if isinstance(msg, Unchoke):
            nb.peer_choking = False
            return self._request(now, peer)
        if isinstance(msg, Interested):
            nb.peer_interested = True
            return self._fill_slots(now)
        if isinstance(msg, NotInterested):
            nb.peer_interested = False
            if not nb.am_choking:
                return self._choke(peer) + self._fill_slots(now)
        return []

    def on_piece(self, now: float, peer: int, piece: int, ok: bool) -> tuple[bool, list[Action]]:
        """A piece from ``peer`` arrived; returns (keep it, actions). The node
        calls :meth:`acquired` after storing a kept piece."""
        nb = self.neighbours.get(peer)
        if nb is not None and piece in nb.outstanding:
            nb.outstanding.discard(piece)
            self.requested[piece] -= 1
        if not ok:
            self.banned.add(peer)
            return False, self.exclude(now, peer, f"piece {piece} failed verification")
        if peer in self.excluded:
            return False, []
        if nb is not None:
            nb.last_progress = now
            nb.received_round += self.layout.piece_length(piece)
        if self.have[piece]:
            return False, self._request(now, peer)  # an end-game duplicate
        return True, []

    def acquired(self, now: float, piece: int, complete: bool, source: int | None = None) -> list[Action]:
        """We now hold ``piece`` (from storage, or from neighbour ``source``):
        announce it, cancel end-game duplicates, drop interest where nothing
        is left (``complete``: we now hold everything), ask ``source`` for more."""
        if not self.started:
            return []
        actions: list[Action] = []
        for peer, nb in self.neighbours.items():
            if not nb.connected:
                continue
            if piece in nb.outstanding:
                nb.outstanding.discard(piece)
                self.requested[piece] -= 1
                actions.append(Send(peer, Cancel(piece)))
            # Announce to everyone, holders too: a neighbour learns that we are
            # complete (and may stop serving us) only from our Haves.
            actions.append(Send(peer, Have(piece)))
            if complete and nb.am_interested:
                nb.am_interested = False
                actions.append(Send(peer, NotInterested()))
        if source is not None:
            actions += self._request(now, source)
        return actions

    # ------------------------------------------------------------ downloading

    def _update_interest(self, now: float, peer: int) -> list[Action]:
        nb = self.neighbours[peer]
        if not self.started or nb.am_interested or not nb.connected:
            return self._request(now, peer)
        if bool(np.any(nb.has & ~self.have)):
            nb.am_interested = True
            return [Send(peer, Interested())] + self._request(now, peer)
        return []

    def _request_all(self, now: float) -> list[Action]:
        actions: list[Action] = []
        for peer in list(self.neighbours):
            actions += self._request(now, peer)
        return actions

    def _request(self, now: float, peer: int) -> list[Action]:
        nb = self.neighbours.get(peer)
        if not self.started or nb is None or nb.peer_choking or not nb.am_interested:
            return []
        actions: list[Action] = []
        free = self.cfg.max_requests - len(nb.outstanding)
        if free <= 0:
            return actions
        wanted = nb.has & ~self.have & ~self.reserved
        fresh = wanted & (self.requested == 0)
        if not fresh.any():
            if (~self.have & ~self.reserved & (self.requested == 0)).any():
                fresh = None  # others hold what remains: not yet the end game
            else:
                fresh = wanted & (self.requested < self.cfg.endgame_copies)
                if nb.outstanding:
                    fresh[list(nb.outstanding)] = False
        candidates = np.flatnonzero(fresh) if fresh is not None else np.empty(0, np.int64)
        if candidates.size == 0:
            if not nb.outstanding and not wanted.any():
                nb.am_interested = False
                actions.append(Send(peer, NotInterested()))
            return actions
        if candidates.size > free:
            keys = self.rarity[candidates].astype(np.int64) * len(self.tiebreak) + self.tiebreak[candidates]
            candidates = candidates[np.argpartition(keys, free - 1)[:free]]
        if not nb.outstanding:
            nb.last_progress = now  # the stall clock starts with the first request
        for piece in candidates.tolist():
            nb.outstanding.add(piece)
            self.requested[piece] += 1
            actions.append(Send(peer, Request(piece)))
        return actions

    # ------------------------------------------------------------ choking

    def _choke(self, peer: int) -> list[Action]:
        nb = self.neighbours[peer]
        nb.am_choking = True
        return [Send(peer, Choke()), CancelUpload(peer, None)]

    def _unchoke(self, now: float, peer: int) -> list[Action]:
        nb = self.neighbours[peer]
        nb.am_choking = False
        nb.last_served = now
        return [Send(peer, Unchoke())]

    def _fill_slots(self, now: float) -> list[Action]:
        """Unchoke interested neighbours while slots are free (between rounds)."""
        if not self.started:
            return []
        open_ = sum(1 for nb in self.neighbours.values() if not nb.am_choking)
        actions: list[Action] = []
        waiting = [p for p, nb in self.neighbours.items() if nb.peer_interested and nb.am_choking and nb.connected]
        for peer in waiting[: max(0, self.cfg.upload_slots + 1 - open_)]:
            actions += self._unchoke(now, peer)
        return actions

    def _choke_round(self, now: float) -> list[Action]:
        self.round += 1
        interested = [p for p, nb in self.neighbours.items() if nb.peer_interested and nb.connected]
        shuffle = {p: self.rng.random() for p in interested}  # random among equals
        if self.cfg.serve_neediest:
            # Every node is a member of one job: reciprocity buys nothing, the slowest node sets
            # the broadcast's end. Serve those holding least first.
            ranked = sorted(interested, key=lambda p: (int(self.neighbours[p].has.sum()), shuffle[p]))
        elif self.have.all():
            ranked = sorted(interested, key=lambda p: (self.neighbours[p].last_served, shuffle[p]))
        else:
            ranked = sorted(interested, key=lambda p: (-self.neighbours[p].received_round, shuffle[p]))
        keep = set(ranked[: self.cfg.upload_slots])
        rest = [p for p in ranked if p not in keep]
        if self.optimistic not in rest or self.round % OPTIMISTIC_ROUNDS == 0:
            self.optimistic = self.rng.choice(rest) if rest else None
        if self.optimistic is not None:
            keep.add(self.optimistic)
        actions: list[Action] = []
        for peer, nb in self.neighbours.items():
            nb.received_round = 0
            if peer in keep and nb.am_choking:
                actions += self._unchoke(now, peer)
            elif peer not in keep and not nb.am_choking:
                actions += self._choke(peer)
        return actions

    # ------------------------------------------------------------ time

    def tick(self, now: float) -> list[Action]:
        if not self.started or now < self.next_round:
            return []
        self.next_round = now + self.cfg.choke_interval
        actions: list[Action] = []
        for peer, nb in list(self.neighbours.items()):
            if nb.outstanding and now - nb.last_progress >= self.cfg.stall_timeout:
                actions += self.exclude(now, peer, f"stalled: nothing for {self.cfg.stall_timeout:g} s")
        return actions + self._choke_round(now)

    def next_deadline(self) -> float | None:
        return self.next_round if self.started else None

    def holds_work(self, pieces: range) -> bool:
        """Some live neighbour announced every piece of ``pieces``."""
        return any(bool(nb.has[pieces.start : pieces.stop].all()) for nb in self.neighbours.values())
