"""Per-frame authentication after the handshake, sans-IO.

Every frame carries a 16-byte tag: AES-256-GCM used as a MAC (GMAC, NIST SP
800-38D: the frame is the "additional authenticated data", the plaintext is
empty), keyed per direction from the handshake (:meth:`Handshake.frames`), with
the frame's sequence number on its connection as the nonce. So a frame that
was not made by the other end of *this* connection, or was changed, dropped,
replayed or reordered, fails its check: the receiver acts on no frame before
its tag verified.

Why GMAC: measured on this machine (2 cores, AES-NI and SHA-NI), per 1 MiB:
GMAC 22 GB/s, AES-GCM encrypting 9 GB/s, ChaCha20-Poly1305 3.6 GB/s,
HMAC-SHA256 1.75 GB/s; about 0.6 us for a small frame against HMAC's 1.9 us.
The frames are authenticated, not encrypted (docs/security.md says why).
Keys are unique to a connection (fresh nonces in every handshake), so a
counter nonce is never reused under one key.
"""

from __future__ import annotations

import struct

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

TAG_SIZE = 16
_NONCE = struct.Struct("!4xQ")  # 96 bits: 32 zero bits, then the 64-bit sequence number
#: Above this, the frame's parts are fed to GCM one by one instead of joined (a copy costs more).
_JOIN_LIMIT = 64 * 1024


class FrameAuthError(Exception):
    """A frame's tag did not verify: it was forged, changed, replayed or reordered."""


class FrameAuth:
    """Tags for one connection: ``seal`` what we send, ``check`` what we receive, in order."""

    __slots__ = ("_send_key", "_recv_key", "_send_aead", "_recv_aead", "sent", "received")

    def __init__(self, send_key: bytes, recv_key: bytes) -> None:
        self._send_key, self._recv_key = send_key, recv_key
        self._send_aead, self._recv_aead = AESGCM(send_key), AESGCM(recv_key)
        self.sent = 0  # frames sealed so far: the next one's sequence number
        self.received = 0

    def seal(self, *parts: bytes | bytearray | memoryview) -> bytes:
        """The tag of the next frame we send, made of ``parts`` in order."""
        nonce = _NONCE.pack(self.sent)
        self.sent += 1
        return _tag(self._send_aead, self._send_key, nonce, parts)

    def check(self, tag: bytes, *parts: bytes | bytearray | memoryview) -> None:
        """Verify the next frame we received; raises :class:`FrameAuthError`."""
        nonce = _NONCE.pack(self.received)
        self.received += 1
        if len(tag) != TAG_SIZE:
            raise FrameAuthError("a frame's tag is truncated")
        if sum(len(p) for p in parts) <= _JOIN_LIMIT:
            try:
                self._recv_aead.decrypt(nonce, tag, b"".join(parts))
                return
            except InvalidTag:
                raise FrameAuthError(
                    "a frame failed authentication (forged, changed, replayed or out of order)"
                ) from None
        verifier = Cipher(algorithms.AES(self._recv_key), modes.GCM(nonce, tag)).decryptor()
        for part in parts:
            verifier.authenticate_additional_data(part)
        try:
            verifier.finalize()
        except InvalidTag:
            raise FrameAuthError("a frame failed authentication (forged, changed, replayed or out of order)") from None


def _tag(aead: AESGCM, key: bytes, nonce: bytes, parts: tuple) -> bytes:
    if sum(len(p) for p in parts) <= _JOIN_LIMIT:
        return aead.encrypt(nonce, b"", b"".join(parts))  # empty plaintext: the output is the tag
    sealer = Cipher(algorithms.AES(key), modes.GCM(nonce)).encryptor()
    for part in parts:
        sealer.authenticate_additional_data(part)
    sealer.finalize()
    return sealer.tag
