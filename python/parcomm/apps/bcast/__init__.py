"""``parcomm bcast``: broadcast a large object from S3-compatible storage to
N nodes (seed 004, Chiba, Kielmann, den Burger & Matsuoka, "Dynamic
optimization for large data broadcast on clouds").

Architecture: state machines + drivers
======================================

The protocol is written once, sans-IO, and run by two drivers:

* :mod:`.layout` -- pieces (verification/exchange unit) and works (fetch/steal
  unit) of an object; the §4.2 initial 1/N share of works per rank.
* :mod:`.messages` -- the peer messages (stable type codes, plain fields for a
  wire codec), the driver *events* and the node *actions*.
* :mod:`.works` -- phase 1: storage fetches of a node's works and §4.3 work
  stealing (``giveWork``: the last ceil(len/2) works), recovery of a dead
  rank's works.
* :mod:`.exchange` -- phase 2: BitTorrent-like exchange (possession lists,
  have, request/piece, rarest first, choking towards the best uploaders plus
  an optimistic unchoke, end game, banning of corrupt and stalled peers).
* :mod:`.node` -- :class:`BcastNode`, one participant: both machines over
  one possession array, phase barrier, orphan recovery, phase timestamps.
* :mod:`.storage_model` and :mod:`.sim` -- the simulated driver: a
  flow-level discrete-event simulation of N nodes over a modelled S3 (the
  bimodal per-request throughput of Fig. 1/3 by default) and network;
  :func:`.sim.simulate` returns a :class:`.sim.SimResult`.
* The real driver (threads, S3 client, TCP peers) runs the same
  :class:`BcastNode` over sockets (other modules of this package).

Driver contract
===============

A driver owns the clock and all I/O. For each node it calls
``actions = node.handle(now, event)`` with ``now`` in seconds (any origin,
never decreasing) and carries out the returned actions in order; it calls
``node.handle(now, Tick())`` no later than ``node.next_deadline()`` (None:
no timer). The node never blocks, reads a clock or does I/O; given the same
events and ``config.seed`` it returns the same actions.

Events in:

* ``Start()`` -- once, first.
* ``S3Piece(fetch_id, piece, ok)`` -- a piece of a running ``FetchStorage``
  arrived, ``ok`` = it matched the hash list (keep the bytes only if ok);
  then ``S3FetchDone(fetch_id)``, or ``S3FetchFailed(fetch_id, reason)``
  when the driver's own retries (backoff, jitter) are exhausted.
* ``PeerMessage(peer, msg)`` -- any message of :mod:`.messages` except
  ``Piece``; ``PeerPiece(peer, piece, ok)`` -- a ``Piece`` whose bytes the
  driver verified (``ok``) and, if ok, stored.
* ``PeerLost(peer)`` -- the peer's process is gone; deliver it on every node.
* ``Tick()`` -- timers (choke rounds, stall and orphan checks).

Actions out:

* ``FetchStorage(fetch_id, first_piece, last_piece)`` -- one ranged GET of
  whole pieces (``layout.span_bytes``); ``CancelFetch(fetch_id)`` -- stop it
  if still running (it may name a GET that already delivered its last
  piece: nothing to do; no ``S3FetchDone`` is expected after a cancel).
* ``Send(peer, msg)`` -- in order per peer; for ``Piece`` attach the bytes.
  Any rank may be addressed (work stealing and ``Done`` go to ranks outside
  the exchange neighbourhood).
* ``CancelUpload(peer, piece | None)`` -- unqueue pieces not yet sent.
* ``Drop(peer, reason)`` -- close the data connection to a stalled or
  banned peer (it is not dead: no ``PeerLost``).
* ``PhaseDone(1 | 2)``, ``Finished()`` -- progress; after ``Finished`` keep
  serving until ``node.quiescent()`` or the job's end. ``Failed(reason)`` --
  give up (e.g. the same work failed ``max_fetch_attempts`` times).

Example (a node with no peers, everything from storage)::

    >>> from parcomm.apps.bcast import BcastNode, Layout, Start, S3Piece, S3FetchDone
    >>> node = BcastNode(0, 1, Layout(3000, piece_size=1000, work_pieces=2), "flat")
    >>> node.handle(0.0, Start())
    [FetchStorage(fetch_id=0, first_piece=0, last_piece=1), FetchStorage(fetch_id=1, first_piece=2, last_piece=2)]
    >>> [node.handle(1.0, S3Piece(f, p)) for f, p in ((0, 0), (0, 1), (1, 2))][-1]
    [PhaseDone(phase=1), CancelFetch(fetch_id=0), CancelFetch(fetch_id=1), PhaseDone(phase=2), Finished()]
"""

from .layout import Layout
from .messages import (
    MESSAGE_TYPES,
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
    S3FetchDone,
    S3FetchFailed,
    S3Piece,
    Send,
    Start,
    Tick,
)
from .node import BcastConfig, BcastNode

__all__ = [
    "MESSAGE_TYPES",
    "BcastConfig",
    "BcastNode",
    "CancelFetch",
    "CancelUpload",
    "Drop",
    "Failed",
    "FetchStorage",
    "Finished",
    "Layout",
    "PeerLost",
    "PeerMessage",
    "PeerPiece",
    "PhaseDone",
    "S3FetchDone",
    "S3FetchFailed",
    "S3Piece",
    "Send",
    "Start",
    "Tick",
]
