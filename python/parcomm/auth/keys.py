"""The per-job secret.

A launcher that starts every member itself (``parcomm run local``, ``bcast
--local``, ``bcast --mpi``, the emulated cluster) generates one and hands it
to its children through a private channel (a pipe, the environment, MPI, a
0600 file in a 0700 directory). Members started by the user on several
machines (``run socket``, ``bcast --rendezvous``) read the same key from
``PARCOMM_JOB_KEY`` or a key file (``parcomm keygen`` writes one).

The secret is never printed: ``repr`` hides it, and errors name the file or
variable, never the value.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path
from typing import Mapping

from ..safefiles import UnsafeFile, read_own_file_stat

#: The environment variable a key may come from (hex).
KEY_ENV = "PARCOMM_JOB_KEY"
#: 256-bit keys: HMAC-SHA256's full strength (RFC 2104 §3: at least the output length).
KEY_BYTES = 32
_MIN_KEY_BYTES = 16  # a shorter secret is guessable; refuse it
_MAX_KEY_FILE = 4096  # a key file is one hex line; anything larger is the wrong file


class JobKeyError(ValueError):
    """No usable key: the message says where one was looked for and why it failed."""


class JobKey:
    """A job's shared secret. Compare and log it only through its methods."""

    __slots__ = ("_secret",)

    def __init__(self, secret: bytes) -> None:
        if not isinstance(secret, (bytes, bytearray)) or len(secret) < _MIN_KEY_BYTES:
            raise JobKeyError(f"a job key needs at least {_MIN_KEY_BYTES} bytes of secret")
        self._secret = bytes(secret)

    @classmethod
    def generate(cls) -> "JobKey":
        return cls(secrets.token_bytes(KEY_BYTES))

    @classmethod
    def from_hex(cls, text: str, *, origin: str) -> "JobKey":
        """Parse a hex key; ``origin`` names where it came from, for the error."""
        cleaned = "".join(text.split())
        try:
            secret = bytes.fromhex(cleaned)
        except ValueError:
            raise JobKeyError(f"{origin} is not a hex key (generate one with `parcomm keygen`)") from None
        if len(secret) < _MIN_KEY_BYTES:
            raise JobKeyError(f"{origin} holds {len(secret)} bytes of key; at least {_MIN_KEY_BYTES} are needed")
        return cls(secret)

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "JobKey":
        """Read a key file as ssh reads a private key: a regular file of this user's that
        nobody else may read. Opened without following a link and without blocking, so a
        FIFO or a link planted in its place is refused at once."""
        p = Path(path)
        try:
            raw, info = read_own_file_stat(p, _MAX_KEY_FILE, what="key file")
        except UnsafeFile as exc:
            raise JobKeyError(str(exc)) from None
        mode = info.st_mode
        if mode & 0o077:
            raise JobKeyError(f"key file {p} is readable by others (mode {mode & 0o777:03o}); run `chmod 600 {p}`")
        if len(raw) > _MAX_KEY_FILE:
            raise JobKeyError(f"key file {p} is larger than {_MAX_KEY_FILE} bytes; it is not a key file")
        try:
            text = raw.decode("ascii")
        except UnicodeDecodeError:
            raise JobKeyError(f"key file {p} is not a hex key (generate one with `parcomm keygen`)") from None
        return cls.from_hex(text, origin=f"key file {p}")

    def hex(self) -> str:
        """The secret as hex, to hand to a child process through a private channel."""
        return self._secret.hex()

    def write(self, path: str | os.PathLike) -> Path:
        """Write the key to a new file readable by its owner only (never overwrites)."""
        p = Path(path)
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(self.hex() + "\n")
        return p

    def mac(self, message: bytes) -> bytes:
        return hmac.new(self._secret, message, hashlib.sha256).digest()

    def verify(self, message: bytes, tag: bytes) -> bool:
        return hmac.compare_digest(self.mac(message), tag)

    def derive(self, salt: bytes, info: bytes, length: int) -> bytes:
        """``length`` bytes of key material for one purpose (HKDF-SHA256, RFC 5869):
        ``salt`` binds it to one handshake, ``info`` to one use."""
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF

        return HKDF(algorithm=hashes.SHA256(), length=length, salt=salt, info=info).derive(self._secret)

    def __repr__(self) -> str:
        return "JobKey(<secret>)"

    __str__ = __repr__

    def __reduce__(self):  # pickled only to start a child of the same launcher (a private pipe)
        return (JobKey, (self._secret,))


def resolve_key(key_file: str | os.PathLike | None = None, env: Mapping[str, str] | None = None) -> JobKey:
    """The key of a job started by the user: ``key_file``, else ``$PARCOMM_JOB_KEY``."""
    if key_file is not None:
        return JobKey.from_file(key_file)
    value = (os.environ if env is None else env).get(KEY_ENV)
    if value:
        return JobKey.from_hex(value, origin=f"${KEY_ENV}")
    raise JobKeyError(
        f"this job needs a shared key: give --key-file FILE or set ${KEY_ENV} on every member "
        "(`parcomm keygen FILE` makes one)"
    )
