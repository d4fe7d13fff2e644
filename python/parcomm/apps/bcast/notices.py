"""Job-wide notices without N - 1 connections per node: binomial trees over
the overlay ``r + 2^k`` (sans-IO, shared by both drivers).

A *notice* is a fact about one rank that every rank must learn: its storage
phase is over (``DONE``: the phase-1 barrier), it holds every piece
(``COMPLETE``: a node leaves only when every live rank said it), it is gone
(``LOST``) or back (``JOINED``). Its origin sends it down a binomial tree
laid over the ring of ranks:

* a rank that receives a notice with ``span`` s covers the ring positions
  ``[rank, rank + s)``; it hands ``[rank + 2^j, rank + min(2^(j+1), s))`` to
  ``rank + 2^j`` for every ``2^j < s`` (the origin covers all N). Every
  message goes from ``r`` to ``r + 2^j``: over a whole run a rank sends
  notices to at most ceil(log2 N) ranks, so every rank learns every fact
  over at most N ceil(log2 N) connections in total, not N(N - 1);
* a rank known dead is skipped: its sub-range goes to the first live rank
  in it (that one edge is off the overlay, only next to dead ranks);
* when a rank dies or comes back, every rank re-sends the facts whose
  sub-range holds it to that sub-range's first live rank now
  (:meth:`Notices.reroute`), so a subtree cut off by a death, or a joiner
  the trees skipped while it was out, still gets every fact. A rank forwards
  a notice again only when it covers more of the ring than before, so
  these repairs stop where the fact already went.

Lost and joined facts about one rank can cross on their way (a rank counted
out by one node and readmitted by another): each carries the subject's
membership *epoch*, the number of such transitions, so odd epochs say lost
and even ones joined. A node acts on a lost or joined fact only if its epoch
is newer than the one it knows (:meth:`Notices.newer`), and originates the
next transition at its epoch + 1, so two facts of one epoch always agree.

The state is two small arrays per node (the span covered per kind and
subject, and each subject's epoch): memory O(N), whatever the number of
notices.
"""

from __future__ import annotations

import numpy as np

from .messages import Notice, Send

DONE, COMPLETE, LOST, JOINED = range(4)
KINDS = ("done", "complete", "lost", "joined")


def children(rank: int, span: int, nranks: int, dead) -> list[tuple[int, int]]:
    """(target, its span) for a rank covering ``[rank, rank + span)`` of the ring;
    ranks in ``dead`` are skipped (their sub-range goes to the next live rank in it)."""
    out: list[tuple[int, int]] = []
    step = 1
    while step < span:
        target = _first_live(rank, step, min(2 * step, span), nranks, dead)
        if target is not None:
            out.append(target)
        step *= 2
    return out


def _first_live(rank: int, lo: int, hi: int, nranks: int, dead) -> tuple[int, int] | None:
    """First live rank at ring offset ``lo <= off < hi`` from ``rank``, with the span it covers."""
    for off in range(lo, hi):
        target = (rank + off) % nranks
        if target not in dead:
            return target, hi - off
    return None


def overlay(rank: int, nranks: int) -> list[int]:
    """The ranks ``rank ± 2^k``: whom this rank exchanges notices with (either way)."""
    out, step = set(), 1
    while step < nranks:
        out.update(((rank + step) % nranks, (rank - step) % nranks))
        step *= 2
    out.discard(rank)
    return sorted(out)


class Notices:
    """What one rank forwarded: the span of the ring it covered, per fact."""

    def __init__(self, rank: int, nranks: int) -> None:
        self.rank, self.nranks = rank, nranks
        self.covered = np.zeros((len(KINDS), nranks), np.int64)
        self.epoch = np.zeros(nranks, np.int64)  # each rank's membership epoch: odd = lost

    def valid(self, msg: Notice) -> bool:
        """Fields from the network within bounds (anything else is ignored)."""
        in_bounds = 0 <= msg.kind < len(KINDS) and 0 <= msg.rank < self.nranks and 1 <= msg.span <= self.nranks
        # a lost fact has an odd epoch, a joined fact an even one (> 0); the epoch fits a u32
        parity = msg.epoch % 2 == 1 if msg.kind == LOST else msg.epoch % 2 == 0 if msg.kind == JOINED else True
        return in_bounds and 0 <= msg.epoch < 1 << 32 and (msg.kind not in (LOST, JOINED) or msg.epoch > 0) and parity

    def newer(self, msg: Notice) -> bool:
        """A lost or joined fact we have not acted on yet (an older one crossing it is not)."""
        return bool(msg.epoch > self.epoch[msg.rank])

    def next_epoch(self, subject: int) -> int:
        """The epoch of the next transition of ``subject`` we originate (lost if it is alive
        in our view, joined if not)."""
        return int(self.epoch[subject]) + 1

    def enter(self, subject: int, epoch: int) -> None:
        """``subject`` is now lost (odd ``epoch``) or back (even); the facts of the old epoch
        were forgotten by the caller."""
        self.epoch[subject] = epoch

    def known(self, kind: int, subject: int) -> bool:
        return bool(self.covered[kind, subject])

    def forget(self, kind: int, subject: int) -> None:
        """The fact no longer holds (a lost rank came back, or the reverse)."""
        self.covered[kind, subject] = 0

    def spread(self, kind: int, subject: int, span: int, dead) -> list[Send]:
        """Cover ``span`` ring positions from here (the origin: all of them);
        nothing to do if this rank covered as much already."""
        if span <= self.covered[kind, subject]:
            return []
        self.covered[kind, subject] = span
        epoch = int(self.epoch[subject])
        return [Send(t, Notice(kind, subject, s, epoch)) for t, s in children(self.rank, span, self.nranks, dead)]

    def reroute(self, changed: int, dead) -> list[Send]:
        """``changed`` died or came back: send each fact whose sub-range holds it
        to that sub-range's first live rank now (``dead`` is the new view)."""
        off = (changed - self.rank) % self.nranks
        if off == 0:
            return []
        step = 1 << (off.bit_length() - 1)
        sends: list[Send] = []
        kinds, subjects = np.nonzero(self.covered > off)
        for kind, subject in zip(kinds.tolist(), subjects.tolist()):
            hi = min(2 * step, int(self.covered[kind, subject]))
            target = _first_live(self.rank, step, hi, self.nranks, dead)
            if target is not None:
                sends.append(Send(target[0], Notice(kind, subject, target[1], int(self.epoch[subject]))))
        return sends
