"""The mutual challenge-response, sans-IO.

Both ends send at once, so it costs one round trip plus one message::

    each side -> greeting: magic "PCAUTH01" | 32-byte fresh random nonce
    each side -> proof:    HMAC-SHA256(key, role | transcript)
    transcript = "parcomm-auth-v1" | len | context | initiator nonce | responder nonce

``role`` is ``I`` for the end that connected and ``R`` for the one that
accepted, so a proof can never be reflected back at its sender; ``context``
names the protocol (e.g. ``b"socketcomm"``), so a proof for one protocol is
worthless for another; fresh nonces make every proof single-use. Nothing the
peer sends is interpreted before :meth:`Handshake.verify` succeeds, except
the fixed-size greeting itself, and nothing secret ever goes on the wire.

This authenticates the connection's two ends when it is opened. It does not
encrypt or protect later frames against an attacker who can rewrite TCP
streams in flight (see docs/security.md for why that is out of scope).
"""

from __future__ import annotations

import secrets
import struct

from .keys import JobKey

_MAGIC = b"PCAUTH01"
_LABEL = b"parcomm-auth-v1"
_NONCE_BYTES = 32
_GREETING = struct.Struct(f"!8s{_NONCE_BYTES}s")
GREETING_SIZE = _GREETING.size
PROOF_SIZE = 32  # SHA-256
_MAX_CONTEXT = 255


class AuthError(Exception):
    """The peer did not prove it holds the job's key (or spoke another protocol)."""


class Handshake:
    """One end of one connection's handshake.

    ``greeting()`` -> send; feed the peer's greeting to ``proof()`` -> send;
    feed the peer's proof to ``verify()``: it returns, or raises AuthError.
    """

    def __init__(self, key: JobKey, *, initiator: bool, context: bytes) -> None:
        if len(context) > _MAX_CONTEXT:
            raise ValueError(f"context of {len(context)} bytes; at most {_MAX_CONTEXT}")
        self._key = key
        self._initiator = initiator
        self._context = context
        self._nonce = secrets.token_bytes(_NONCE_BYTES)
        self._peer_nonce: bytes | None = None
        self.verified = False

    def greeting(self) -> bytes:
        return _GREETING.pack(_MAGIC, self._nonce)

    def proof(self, peer_greeting: bytes) -> bytes:
        """Our proof, given the peer's greeting (exactly GREETING_SIZE bytes)."""
        if len(peer_greeting) != GREETING_SIZE:
            raise AuthError(f"greeting of {len(peer_greeting)} bytes, expected {GREETING_SIZE}")
        magic, nonce = _GREETING.unpack(peer_greeting)
        if magic != _MAGIC:
            raise AuthError("the peer does not speak parcomm's authenticated protocol")
        if nonce == self._nonce:
            raise AuthError("the peer echoed our own nonce")
        self._peer_nonce = nonce
        return self._tag(b"I" if self._initiator else b"R")

    def verify(self, peer_proof: bytes) -> None:
        """Check the peer's proof; raises AuthError unless it holds the key."""
        if self._peer_nonce is None:
            raise AuthError("proof before greeting")
        expected = b"R" if self._initiator else b"I"
        if len(peer_proof) != PROOF_SIZE or not self._key.verify(self._message(expected), peer_proof):
            raise AuthError("the peer failed to prove it holds this job's key")
        self.verified = True

    def _transcript(self) -> bytes:
        assert self._peer_nonce is not None
        first, second = (self._nonce, self._peer_nonce) if self._initiator else (self._peer_nonce, self._nonce)
        return b"".join((_LABEL, bytes([len(self._context)]), self._context, first, second))

    def _message(self, role: bytes) -> bytes:
        return role + self._transcript()

    def _tag(self, role: bytes) -> bytes:
        return self._key.mac(self._message(role))
