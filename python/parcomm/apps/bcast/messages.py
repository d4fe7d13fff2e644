"""Plain data crossing the state-machine boundary: peer messages, driver
events (into :class:`~.node.BcastNode`) and actions (out of it).

Peer messages
=============

Each message class has a stable small integer ``TYPE`` and its fields in
``FIELDS`` order, so a wire codec can encode it without knowing the protocol:

====  ==============  =========================  ==========================================
code  class           fields                     meaning
====  ==============  =========================  ==========================================
1     Bitfield        bits: bytes                possession list (§4.2), packed MSB-first:
                                                 piece *p* is bit ``7 - p % 8`` of byte ``p // 8``
2     Have            piece: int                 "I now hold piece" (§4.2)
3     Request         piece: int                 "send me piece"
4     Piece           piece: int                 the piece; the driver appends its bytes
5     Cancel          piece: int                 "never mind my request" (end game)
6     Choke           -                          "I will not serve your requests"
7     Unchoke         -                          "ask me"
8     Interested      -                          "you have pieces I lack"
9     NotInterested   -                          "you have nothing I lack"
10    GiveWork        -                          §4.3 giveWork: "I ran out, give me works"
11    GrantWorks      works: tuple[int, ...]     the works handed over (tail of the list)
12    NoWork          -                          "I have none to give"
15    Readmitted      -                          from a rejoining rank's heir: "I adopted your
                                                 share", fetch none of it
16    Notice          kind, rank, span,          a fact about ``rank`` every rank must learn
                      epoch: int                 (kind 0 done = its storage phase is over,
                                                 1 complete, 2 lost, 3 joined), passed down a
                                                 binomial tree: the receiver covers ``span``
                                                 ring positions from itself (:mod:`.notices`);
                                                 ``epoch`` orders lost/joined facts (odd: lost)
17    Watch           -                          "I am your ring predecessor": opens the
                                                 connection on which the receiver sees our death
====  ==============  =========================  ==========================================

Codes 13 (``Done``) and 14 (``Complete``, both sent to every rank) were
retired with protocol 3: they travel as :class:`Notice` now.

Integers fit in an unsigned 32-bit word; ``bytes`` and ``tuple`` fields are
length-prefixed. A ``Piece`` message is just its index here: the sender's
driver attaches the bytes, the receiver's driver verifies them against the
hash list and reports :class:`PeerPiece` with ``ok``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar, Union

import numpy as np


class Message:
    TYPE: ClassVar[int]
    FIELDS: ClassVar[tuple[str, ...]]

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        if "TYPE" in cls.__dict__ and cls.TYPE in MESSAGE_TYPES:
            raise TypeError(f"message type code {cls.TYPE} used twice")

    @classmethod
    def _register(cls, klass):  # decorator: record fields and code
        klass = dataclass(frozen=True, slots=True)(klass)
        klass.FIELDS = tuple(f.name for f in fields(klass))
        MESSAGE_TYPES[klass.TYPE] = klass
        return klass


MESSAGE_TYPES: dict[int, type[Message]] = {}
_msg = Message._register


@_msg
class Bitfield(Message):
    TYPE = 1
    bits: bytes

    @classmethod
    def of(cls, have: np.ndarray) -> "Bitfield":
        return cls(np.packbits(have).tobytes())

    def unpack(self, pieces: int) -> np.ndarray:
        """Boolean array of ``pieces`` entries; short or long bitfields are an error."""
        if len(self.bits) != (pieces + 7) // 8:
            raise ValueError(f"bitfield of {len(self.bits)} bytes for {pieces} pieces")
        return np.unpackbits(np.frombuffer(self.bits, np.uint8), count=pieces).astype(bool)


@_msg
class Have(Message):
    TYPE = 2
    piece: int


@_msg
class Request(Message):
    TYPE = 3
    piece: int


@_msg
class Piece(Message):
    TYPE = 4
    piece: int


@_msg
class Cancel(Message):
    TYPE = 5
    piece: int


@_msg
class Choke(Message):
    TYPE = 6


@_msg
class Unchoke(Message):
    TYPE = 7


@_msg
class Interested(Message):
    TYPE = 8


@_msg
class NotInterested(Message):
    TYPE = 9


@_msg
class GiveWork(Message):
    TYPE = 10


@_msg
class GrantWorks(Message):
    TYPE = 11
    works: tuple[int, ...]


@_msg
class NoWork(Message):
    TYPE = 12


@_msg
class Readmitted(Message):
    TYPE = 15


@_msg
class Notice(Message):
    TYPE = 16
    kind: int
    rank: int
    span: int
    epoch: int = 0  # of ``rank``'s membership: lost/joined facts apply in epoch order


@_msg
class Watch(Message):
    TYPE = 17


# ---------------------------------------------------------------- events (driver -> node)


@dataclass(frozen=True, slots=True)
class Start:
    """Begin: the node plans its first storage fetches (and, with
    ``overlap_phases``, opens the peer exchange)."""


@dataclass(frozen=True, slots=True)
class S3Piece:
    """Piece ``piece`` of running fetch ``fetch_id`` arrived; ``ok`` says
    whether it matched the hash list (a bad piece is fetched again)."""

    fetch_id: int
    piece: int
    ok: bool = True


@dataclass(frozen=True, slots=True)
class S3FetchDone:
    """The fetch's GET ended (every piece was reported by :class:`S3Piece`)."""

    fetch_id: int


@dataclass(frozen=True, slots=True)
class S3FetchFailed:
    """The fetch gave up after the driver's own retries; pieces already
    reported stay. The node retries the rest up to ``max_fetch_attempts``."""

    fetch_id: int
    reason: str = ""


@dataclass(frozen=True, slots=True)
class PeerMessage:
    peer: int
    msg: Message


@dataclass(frozen=True, slots=True)
class PeerPiece:
    """A ``Piece`` from ``peer`` arrived; ``ok`` is the hash check. The
    driver keeps the bytes only if ``ok`` (and only once per piece)."""

    peer: int
    piece: int
    ok: bool = True


@dataclass(frozen=True, slots=True)
class PeerLost:
    """``peer``'s process is gone (connection reset, connect refused, MPI
    failure), as this node's own sockets saw it: only ranks that had a
    connection from it, or tried to send to it, see it. The node tells the
    others (a ``LOST`` notice). Its works return to the pool."""

    peer: int


@dataclass(frozen=True, slots=True)
class PeerJoined:
    """``peer`` opened a connection to this node and proved membership. If it
    was counted out (it started late, or crashed and was restarted) it is
    back (the node tells the others: a ``JOINED`` notice); otherwise nothing.
    It is readmitted with no share of its own (its heir adopted it) and
    served like any other rank."""

    peer: int


@dataclass(frozen=True, slots=True)
class Tick:
    """Time passed: call at (or after) :meth:`BcastNode.next_deadline`."""


Event = Union[Start, S3Piece, S3FetchDone, S3FetchFailed, PeerMessage, PeerPiece, PeerLost, PeerJoined, Tick]


# ---------------------------------------------------------------- actions (node -> driver)


@dataclass(frozen=True, slots=True)
class FetchStorage:
    """Start one ranged GET of pieces ``first..last`` (inclusive; bytes from
    :meth:`Layout.span_bytes`) and report each piece with :class:`S3Piece`
    in order, then :class:`S3FetchDone` or :class:`S3FetchFailed`."""

    fetch_id: int
    first_piece: int
    last_piece: int


@dataclass(frozen=True, slots=True)
class CancelFetch:
    fetch_id: int


@dataclass(frozen=True, slots=True)
class Send:
    """Send ``msg`` to ``peer``; for :class:`Piece` attach the piece's bytes.
    Messages to one peer must arrive in order."""

    peer: int
    msg: Message


@dataclass(frozen=True, slots=True)
class CancelUpload:
    """Do not start sending queued ``Piece`` ``piece`` to ``peer`` (``None``:
    every queued piece to that peer); one already on the wire may finish."""

    peer: int
    piece: int | None = None


@dataclass(frozen=True, slots=True)
class Drop:
    """Stop exchanging pieces with ``peer`` (stalled, or banned for a bad
    piece): close its data connection, ignore its pieces. Not a death:
    the peer keeps its works and may still send control messages."""

    peer: int
    reason: str


@dataclass(frozen=True, slots=True)
class PhaseDone:
    """Observability: ``phase`` 1 = this node's storage work is over;
    ``phase`` 2 = it holds every piece (same instant as :class:`Finished`)."""

    phase: int


@dataclass(frozen=True, slots=True)
class Finished:
    """Every piece is held and verified; keep serving peers until
    :meth:`BcastNode.quiescent` (or the job ends)."""


@dataclass(frozen=True, slots=True)
class Failed:
    reason: str


Action = Union[FetchStorage, CancelFetch, Send, CancelUpload, Drop, PhaseDone, Finished, Failed]
