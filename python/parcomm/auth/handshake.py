"""The job handshake, sans-IO: who is speaking, to whom, for which job.

Four messages, the two greetings crossing (one round trip and a half)::

    I -> R  greeting   "PCAUTH02" | nonce_I (32 random bytes)
    R -> I  greeting   "PCAUTH02" | nonce_R
    I -> R  claim      u16 len(hello_I) | u16 len(expect) | hello_I | expect | proof_I
    R -> I  answer     u8 status | u16 len(body) | body | proof_R
                       status 0: body = hello_R (accepted); 1: body = why it refused;
                       0xFF: shed (no body, no proof: the listener dropped us under load)

    proof_I = HMAC-SHA256(key, "I" | H(transcript up to the claim's body))
    proof_R = HMAC-SHA256(key, "R" | H(transcript up to the answer's body))
    transcript = "parcomm-auth-v2" | len | context | greeting_I | greeting_R | claim | answer

``hello`` is the protocol's own identity record (the job and the rank each side
claims: SocketComm's rank, size and run token; a bcast node's rank and object;
a rendezvous registration) and ``expect`` names the peer the initiator means to
reach (the rank it expects). So each proof covers the job, both ranks and
everything said before it, under fresh nonces.

The responder checks the initiator's proof, then the claim (``accept``), and
only then proves anything itself: someone without the key learns a random
nonce and nothing else. A relay that splices two members (e.g. by squatting a
rank's port) cannot make either accept the other as someone else: the claim
names the rank the initiator expects, the responder refuses if that is not
itself, and the proofs cover those names. What passes a relay unchanged is a
genuine connection between the two, and after the handshake every frame is
authenticated with keys only they can derive (:mod:`.channel`), so a relay can
forward or drop frames, never make or change one.

Nothing the peer sends is interpreted before its proof checks out, except the
fixed-size greeting and the two length fields, which are bounded.
"""

from __future__ import annotations

import hashlib
import secrets
import struct
from collections.abc import Callable

from .channel import FrameAuth
from .keys import JobKey

_MAGIC = b"PCAUTH02"
_LABEL = b"parcomm-auth-v2"
_KEYS_LABEL = b"parcomm-frames-v2 "
_NONCE_BYTES = 32
_GREETING = struct.Struct(f"!8s{_NONCE_BYTES}s")
_CLAIM_HEAD = struct.Struct("!HH")
_ANSWER_HEAD = struct.Struct("!BH")
GREETING_SIZE = _GREETING.size
PROOF_SIZE = 32  # SHA-256
_MAX_CONTEXT = 255
#: Bounds on what a peer may declare before it has proved anything.
MAX_HELLO = 4096
MAX_EXPECT = 256
MAX_REASON = 1024

ACCEPTED, REFUSED, SHED = 0, 1, 0xFF


class AuthError(Exception):
    """The peer did not prove it holds the job's key (or spoke another protocol)."""


class PeerRefused(AuthError):
    """A member of the job answered, authenticated, that it will not take this
    connection (it is not the rank we expected, belongs to another run, ...).
    Retrying the same address will not help."""


class Shed(AuthError):
    """The listener dropped our handshake to make room (it is flooded or busy): retry."""


class Refusal(Exception):
    """Raised by a responder's ``accept`` to refuse a member's claim; the text is sent to it."""


#: A responder's check of a claim: (the initiator's hello, the peer it expects) -> our hello.
Acceptor = Callable[[bytes, bytes], bytes]


class Handshake:
    """One end of one connection's handshake.

    Drive it with :meth:`start` (send what it returns), then read exactly
    :attr:`need` bytes, pass them to :meth:`receive` and send what it returns,
    until :attr:`done`. Then :attr:`peer_hello` is the authenticated peer's
    identity and :meth:`frames` the per-frame authentication for the
    connection. A failure raises :class:`AuthError` (or a subclass).

    The initiator gives ``hello`` and ``expect``; the responder gives
    ``accept``, which sees the initiator's authenticated hello and expectation
    and returns its own hello or raises :class:`Refusal`. A refusal is sent
    (authenticated) and then raised here as :class:`PeerRefused`.
    """

    def __init__(
        self,
        key: JobKey,
        *,
        initiator: bool,
        context: bytes,
        hello: bytes = b"",
        expect: bytes = b"",
        accept: Acceptor | None = None,
    ) -> None:
        if len(context) > _MAX_CONTEXT:
            raise ValueError(f"context of {len(context)} bytes; at most {_MAX_CONTEXT}")
        if len(hello) > MAX_HELLO or len(expect) > MAX_EXPECT:
            raise ValueError(f"hello ({len(hello)} B) or expect ({len(expect)} B) above {MAX_HELLO}/{MAX_EXPECT}")
        if not initiator and accept is None:
            raise ValueError("a responder needs an accept function")
        self._key = key
        self._initiator = initiator
        self.initiator = initiator
        self._hello = hello
        self._expect = expect
        self._accept = accept
        self._nonce = secrets.token_bytes(_NONCE_BYTES)
        self._transcript = hashlib.sha256(_LABEL + bytes([len(context)]) + context)
        self._context = context
        self._proofs = b""
        self._step = "greeting"
        self.need = GREETING_SIZE
        #: 0 nothing received yet, 1 a well-formed greeting, 2 a claim (what a gate sheds last).
        self.progress = 0
        self.done = False
        self.peer_hello = b""
        self.peer_expect = b""
        self._pending: tuple[int, int] = (0, 0)

    # -- the driver's interface -----------------------------------------------------------
    def start(self) -> bytes:
        return _GREETING.pack(_MAGIC, self._nonce)

    def receive(self, data: bytes) -> bytes:
        """Feed exactly :attr:`need` bytes; returns bytes to send (possibly empty)."""
        if len(data) != self.need or self.done:
            raise AuthError(f"handshake fed {len(data)} bytes, expected {self.need}")
        step = self._step
        if step == "greeting":
            return self._on_greeting(data)
        if step == "claim-head":
            n_hello, n_expect = _CLAIM_HEAD.unpack(data)
            if n_hello > MAX_HELLO or n_expect > MAX_EXPECT:
                raise AuthError("the peer declared an oversized claim")
            self._pending = (n_hello, n_expect)
            self._head = data
            self._step, self.need = "claim-body", n_hello + n_expect + PROOF_SIZE
            return b""
        if step == "claim-body":
            return self._on_claim(data)
        if step == "answer-head":
            status, n_body = _ANSWER_HEAD.unpack(data)
            if status == SHED:
                raise Shed("the listener shed our handshake (it is flooded or busy)")
            if status not in (ACCEPTED, REFUSED) or n_body > max(MAX_HELLO, MAX_REASON):
                raise AuthError("the peer answered with a malformed message")
            self._head = data
            self._pending = (status, n_body)
            self._step, self.need = "answer-body", n_body + PROOF_SIZE
            return b""
        if step == "answer-body":
            self._on_answer(data)
            return b""
        raise AuthError(f"handshake in an unknown step {step!r}")  # pragma: no cover

    def frames(self) -> FrameAuth:
        """Per-frame authentication keyed from this handshake (each direction its own key)."""
        if not self.done:
            raise AuthError("the handshake is not complete")
        salt = self._transcript.copy()
        salt.update(self._proofs)
        material = self._key.derive(salt.digest(), _KEYS_LABEL + self._context, 64)
        i_to_r, r_to_i = material[:32], material[32:]
        return FrameAuth(send_key=i_to_r, recv_key=r_to_i) if self._initiator else FrameAuth(r_to_i, i_to_r)

    @staticmethod
    def shed_message() -> bytes:
        """What a listener sends a handshake it drops under load (unauthenticated: a hint only)."""
        return _ANSWER_HEAD.pack(SHED, 0)

    # -- steps ----------------------------------------------------------------------------
    def _on_greeting(self, data: bytes) -> bytes:
        magic, nonce = _GREETING.unpack(data)
        if magic != _MAGIC:
            raise AuthError("the peer does not speak parcomm's authenticated protocol (version 2)")
        if nonce == self._nonce:
            raise AuthError("the peer echoed our own nonce")
        self.progress = 1
        ours = self.start()
        first, second = (ours, data) if self._initiator else (data, ours)
        self._transcript.update(first + second)
        if not self._initiator:
            self._step, self.need = "claim-head", _CLAIM_HEAD.size
            return b""
        claim = _CLAIM_HEAD.pack(len(self._hello), len(self._expect)) + self._hello + self._expect
        self._transcript.update(claim)
        proof = self._tag(b"I")
        self._proofs += proof
        self._step, self.need = "answer-head", _ANSWER_HEAD.size
        return claim + proof

    def _on_claim(self, data: bytes) -> bytes:
        n_hello, n_expect = self._pending
        body, proof = data[:-PROOF_SIZE], data[-PROOF_SIZE:]
        self._transcript.update(self._head + body)
        if not self._key.verify(b"I" + self._transcript.digest(), proof):
            raise AuthError("the peer failed to prove it holds this job's key")
        self.progress = 2
        self._proofs += proof
        hello, expect = body[:n_hello], body[n_hello:]
        assert self._accept is not None
        try:
            ours = self._accept(hello, expect)
            status, answer_body = ACCEPTED, ours
        except Refusal as why:
            status, answer_body = REFUSED, str(why).encode("utf-8", "replace")[:MAX_REASON]
        head = _ANSWER_HEAD.pack(status, len(answer_body))
        self._transcript.update(head + answer_body)
        proof_r = self._tag(b"R")
        self._proofs += proof_r
        self.peer_hello, self.peer_expect = hello, expect
        self.done = True
        self.refused = answer_body.decode("utf-8", "replace") if status == REFUSED else None
        return head + answer_body + proof_r

    def _on_answer(self, data: bytes) -> None:
        status, _ = self._pending
        body, proof = data[:-PROOF_SIZE], data[-PROOF_SIZE:]
        self._transcript.update(self._head + body)
        if not self._key.verify(b"R" + self._transcript.digest(), proof):
            raise AuthError("the peer failed to prove it holds this job's key")
        self._proofs += proof
        if status == REFUSED:
            raise PeerRefused(body.decode("utf-8", "replace"))
        self.peer_hello = body
        self.done = True

    def _tag(self, role: bytes) -> bytes:
        return self._key.mac(role + self._transcript.digest())

    refused: str | None = None
