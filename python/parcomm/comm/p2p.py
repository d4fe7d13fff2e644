"""MPI's point-to-point protocol as one sans-IO state machine per rank.

No clock, no sockets, no simulator: :class:`P2PEngine` is fed what the
application does (``send``, ``post_recv``) and what arrives (``on_frame``),
and appends what must happen to ``actions``: :class:`Frame`\\ s to transmit
and :class:`Deliver`\\ s (a receive is matched and its data is here). The
simulator (:mod:`parcomm.comm.sim`) carries frames through the Rust core;
SocketComm (:mod:`parcomm.comm.socket`) writes them to TCP connections. Both
therefore follow exactly the same rules:

* **Matching** (:class:`~parcomm.comm.matching.Matcher`): posted vs
  unexpected queues searched in order (MPI's non-overtaking rule).
* **Eager rule**: a message whose bytes on the wire (``wire``; the declared
  ``nbytes`` in the simulator, ``max(nbytes, len(pickle))`` for real) are at
  most ``eager_limit`` is sent at once.
* **Sender-driven rendezvous** (MPICH CH3, ``rendezvous="sender"``): a
  larger message sends a ready-to-send (RTS); the receiver answers with a
  clear-to-send (CTS) once a receive matches it; then the DATA frame goes.
* **Receiver-driven rendezvous** (YAMPII, seed 001 §4.1-4.2,
  ``rendezvous="receiver"``): posting a receive for a specific source sends
  that source a CREDIT; a large send goes (as one eager frame) as soon as a
  credit for its tag is there, and waits for one otherwise.

Frames: EAGER(tag, size, payload), RTS(tag, size, msgid), CTS(msgid),
DATA(msgid, payload), CREDIT(tag). Unknown message ids are a
:class:`ProtocolError` (a peer broke the protocol).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .base import ANY_SOURCE, ANY_TAG
from .matching import Envelope, Matcher, PostedRecv, matches

__all__ = ["EAGER", "RTS", "CTS", "DATA", "CREDIT", "Frame", "Deliver", "P2PEngine", "ProtocolError"]

EAGER, RTS, CTS, DATA, CREDIT = 1, 2, 3, 4, 6
KIND_NAMES = {EAGER: "eager", RTS: "ready-to-send", CTS: "clear-to-send", DATA: "data", CREDIT: "credit"}


class ProtocolError(Exception):
    """A frame that the protocol does not allow (e.g. data for an unknown message)."""


@dataclass(eq=False)
class Frame:
    """Transmit to ``dest``: ``wire`` payload bytes (0 for control frames);
    ``size`` is the message's declared size; ``sent`` is a send request that
    completes once the frame has left (eager and data frames); ``announce``
    is, on a ready-to-send, the wire bytes its data will have (so a receiver
    can refuse an oversized message before anything is buffered)."""

    kind: int
    dest: int
    tag: int
    size: int
    wire: int = 0
    msgid: int = 0
    payload: Any = None
    sent: Any = None
    announce: int = 0
    ctx: int = 0


@dataclass(eq=False)
class Deliver:
    """A receive (``req``) is matched and its message is here."""

    req: Any
    source: int
    tag: int
    size: int
    payload: Any


class P2PEngine:
    """One rank's side of the protocol (see the module docstring)."""

    def __init__(self, rank: int, eager_limit: int, rendezvous: str = "sender"):
        if rendezvous not in ("sender", "receiver"):
            raise ValueError(f"rendezvous must be 'sender' or 'receiver', got {rendezvous!r}")
        self.rank = rank
        self.eager_limit = int(eager_limit)
        self.receiver_driven = rendezvous == "receiver"
        self.matcher = Matcher()
        self.actions: list[Frame | Deliver] = []
        self._msgid = 0
        # sender-driven: messages waiting for a CTS, and receives waiting for DATA
        self._rndv_out: dict[tuple[int, int], Frame] = {}
        self._rndv_in: dict[tuple[int, int], tuple[Any, int, int]] = {}
        # receiver-driven: tags of receives each peer posted for us; large sends waiting for one
        self._credits: dict[int, list[int]] = {}
        self._blocked: dict[int, list[Frame]] = {}

    # --- the application --------------------------------------------------------------
    def send(self, dest: int, tag: int, payload: Any, size: int, wire: int, req: Any, ctx: int = 0) -> None:
        """Start a send of ``wire`` bytes on the wire (declared size ``size``) in
        communicator context ``ctx``; ``req`` completes when it has left."""
        if self.receiver_driven:
            frame = Frame(EAGER, dest, tag, size, wire, 0, payload, req, ctx=ctx)
            if self._take_credit(dest, tag) or (wire <= self.eager_limit and not getattr(req, "synchronous", False)):
                self.actions.append(frame)
            else:
                self._blocked.setdefault(dest, []).append(frame)
            return
        # A synchronous send (MPI_Ssend) always takes the rendezvous: its data leaves, and the
        # send completes, only once a receive has matched it.
        if wire <= self.eager_limit and not getattr(req, "synchronous", False):
            self.actions.append(Frame(EAGER, dest, tag, size, wire, 0, payload, req, ctx=ctx))
            return
        self._msgid += 1
        self._rndv_out[(dest, self._msgid)] = Frame(DATA, dest, tag, size, wire, self._msgid, payload, req)
        self.actions.append(Frame(RTS, dest, tag, size, 0, self._msgid, announce=wire, ctx=ctx))

    def post_recv(self, source: int, tag: int, req: Any, ctx: int = 0) -> Envelope | None:
        """Post a receive (in context ``ctx``); returns the unexpected message it took, if any."""
        if self.receiver_driven and source not in (ANY_SOURCE, self.rank):
            self.actions.append(Frame(CREDIT, source, tag, 0))
        env = self.matcher.post(PostedRecv(source, tag, req, ctx))
        if env is not None:
            self._matched(req, env)
        return env

    def probe(self, source: int, tag: int, ctx: int = 0) -> Envelope | None:
        """The first unexpected message a receive for (``source``, ``tag``) would
        take, left in place (MPI_Iprobe); None if there is none yet."""
        recv = PostedRecv(source, tag, None, ctx)
        for env in self.matcher.unexpected:
            if matches(recv, env):
                return env
        return None

    def cancel_recv(self, req: Any) -> bool:
        """Withdraw a posted receive that nothing has matched yet (MPI_Cancel);
        False if it was already matched."""
        for i, recv in enumerate(self.matcher.posted):
            if recv.handle is req:
                del self.matcher.posted[i]
                return True
        return False

    # --- the network ------------------------------------------------------------------
    def on_frame(
        self, source: int, kind: int, tag: int, size: int, msgid: int = 0, payload: Any = None, ctx: int = 0
    ) -> Envelope | None:
        """A frame from ``source`` arrived; returns the message if it was queued unexpected."""
        if kind == EAGER or kind == RTS:
            env = Envelope(source, tag, size, payload=payload, handle=msgid if kind == RTS else None, ctx=ctx)
            posted = self.matcher.arrive(env)
            if posted is None:
                return env
            self._matched(posted.handle, env)
        elif kind == CTS:
            frame = self._rndv_out.pop((source, msgid), None)
            if frame is None:
                raise ProtocolError(f"clear-to-send for unknown message {msgid}")
            self.actions.append(frame)
        elif kind == DATA:
            entry = self._rndv_in.pop((source, msgid), None)
            if entry is None:
                raise ProtocolError(f"data for unknown message {msgid}")
            req, rtag, rsize = entry
            self.actions.append(Deliver(req, source, rtag, rsize, payload))
        elif kind == CREDIT:
            self._credit_arrived(source, tag)
        else:
            raise ProtocolError(f"unknown frame kind {kind}")
        return None

    def expects_data(self, source: int, msgid: int) -> bool:
        """Whether a DATA frame for ``msgid`` from ``source`` is expected (check before reading it)."""
        return (source, msgid) in self._rndv_in

    # --- inside -----------------------------------------------------------------------
    def _matched(self, req: Any, env: Envelope) -> None:
        if env.handle is None:
            self.actions.append(Deliver(req, env.source, env.tag, env.nbytes, env.payload))
        else:  # a ready-to-send: ask for the data
            self._rndv_in[(env.source, env.handle)] = (req, env.tag, env.nbytes)
            self.actions.append(Frame(CTS, env.source, env.tag, env.nbytes, 0, env.handle))

    def _take_credit(self, dest: int, tag: int) -> bool:
        tags = self._credits.get(dest)
        for i, t in enumerate(tags or ()):
            if t in (tag, ANY_TAG):
                del tags[i]  # type: ignore[union-attr]
                return True
        return False

    def _credit_arrived(self, peer: int, tag: int) -> None:
        waiting = self._blocked.get(peer)
        for i, frame in enumerate(waiting or ()):
            if tag in (frame.tag, ANY_TAG):
                del waiting[i]  # type: ignore[union-attr]
                self.actions.append(frame)
                return
        self._credits.setdefault(peer, []).append(tag)

    def take_actions(self) -> list[Frame | Deliver]:
        out, self.actions = self.actions, []
        return out
