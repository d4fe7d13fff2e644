"""The hash list of an object: sha256 of every piece and of the whole, stored next to
it as the sidecar object ``KEY.parcomm.json``, or wherever ``--manifest-url`` says
(another bucket, or a local file, for objects in buckets one may only read).

``parcomm bcast prepare s3://BUCKET/KEY`` (:func:`prepare`) streams the object
once to compute it; every node :func:`load`-s it before a broadcast and checks each
piece with :func:`verify_piece`. The sidecar records the object's size and ETag,
so a sidecar left over from an older version of the object is refused.

Sidecar JSON (version 1)::

    {"format": "parcomm-bcast-manifest", "version": 1,
     "size": 1048576, "etag": "...", "piece_size": 1048576,
     "piece_sha256": "<base64 of the concatenated 32-byte digests>",
     "sha256": "<hex digest of the whole object>"}

The pieces' digests are one base64 string (1.33 bytes per digest byte) because a
large object has many pieces; the whole digest is hex, comparable with sha256sum.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .s3 import ObjectInfo, ObjectNotFound, S3Client, S3Error, parse_s3_url

SIDECAR_SUFFIX = ".parcomm.json"
MANIFEST_FORMAT = "parcomm-bcast-manifest"
MANIFEST_VERSION = 1
DIGEST_SIZE = 32
DEFAULT_FETCH_SIZE = 16 * 1024 * 1024  # bytes per GET while preparing
# Bounds on what a hash list may claim (it comes from storage, not from the user):
MAX_OBJECT_BYTES = 5 * 1024**4  # 5 TiB, S3's largest object
MAX_PIECE_BYTES = 256 * 1024**2  # a piece is one frame in memory on every node: 256 MiB at most
MAX_PIECES = 1 << 22  # 4M digests = 128 MiB of hashes, 5 TiB at 1.25 MiB pieces
MAX_MANIFEST_BYTES = (MAX_PIECES * DIGEST_SIZE * 4) // 3 + 4096  # the digests in base64, and the small fields
MAX_ETAG_CHARS = 1024  # the peer Hello carries at most this (wire._MAX_ETAG)


class ManifestError(S3Error):
    """The sidecar is missing, stale or unreadable; the message says how to fix it."""


@dataclass(frozen=True)
class Manifest:
    size: int
    etag: str
    piece_size: int
    piece_digests: tuple[bytes, ...]
    sha256: bytes  # of the whole object

    @property
    def num_pieces(self) -> int:
        return len(self.piece_digests)

    def piece_range(self, index: int) -> tuple[int, int]:
        """Byte range ``[start, end)`` of piece ``index`` (the last may be short)."""
        if not 0 <= index < self.num_pieces:
            raise IndexError(f"piece {index} out of range 0..{self.num_pieces - 1}")
        start = index * self.piece_size
        return start, min(start + self.piece_size, self.size)

    def to_json(self) -> str:
        return json.dumps(
            {
                "format": MANIFEST_FORMAT,
                "version": MANIFEST_VERSION,
                "size": self.size,
                "etag": self.etag,
                "piece_size": self.piece_size,
                "piece_sha256": base64.b64encode(b"".join(self.piece_digests)).decode("ascii"),
                "sha256": self.sha256.hex(),
            },
            indent=1,
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> "Manifest":
        """Parse and check a sidecar; raises ValueError naming the bad field."""
        if len(text) > MAX_MANIFEST_BYTES:
            raise ValueError(f"{len(text)} bytes, more than a hash list of at most {MAX_PIECES} pieces needs")
        try:
            doc = json.loads(text)
        except RecursionError:
            raise ValueError("nested too deeply to be a hash list") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"not JSON: {exc}") from None
        if not isinstance(doc, dict):
            raise ValueError(f"not a JSON object but {type(doc).__name__}")
        if doc.get("format") != MANIFEST_FORMAT or doc.get("version") != MANIFEST_VERSION:
            raise ValueError(f"not a version-{MANIFEST_VERSION} parcomm manifest (field 'format'/'version')")
        size = _int_field(doc, "size", 0, MAX_OBJECT_BYTES)
        piece_size = _int_field(doc, "piece_size", 1, MAX_PIECE_BYTES)
        if num_pieces(size, piece_size) > MAX_PIECES:
            raise ValueError(f"field 'piece_size': {num_pieces(size, piece_size)} pieces, at most {MAX_PIECES}")
        etag = _str_field(doc, "etag", MAX_ETAG_CHARS)
        try:
            blob = base64.b64decode(_str_field(doc, "piece_sha256", MAX_MANIFEST_BYTES), validate=True)
        except ValueError:
            raise ValueError("field 'piece_sha256' is not base64") from None
        if len(blob) != num_pieces(size, piece_size) * DIGEST_SIZE:
            raise ValueError(
                f"field 'piece_sha256' holds {len(blob) // DIGEST_SIZE} digests; size and "
                f"piece_size make {num_pieces(size, piece_size)} pieces"
            )
        digests = tuple(blob[i : i + DIGEST_SIZE] for i in range(0, len(blob), DIGEST_SIZE))
        try:
            whole = bytes.fromhex(_str_field(doc, "sha256", 2 * DIGEST_SIZE))
        except ValueError:
            raise ValueError("field 'sha256' is not a hex digest") from None
        if len(whole) != DIGEST_SIZE:
            raise ValueError("field 'sha256' is not a 32-byte hex digest")
        return cls(size, etag, piece_size, digests, whole)


def _int_field(doc: dict, name: str, lo: int, hi: int) -> int:
    value = doc.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"field {name!r} must be an integer, got {type(value).__name__}")
    if not lo <= value <= hi:
        raise ValueError(f"field {name!r} = {value} is outside {lo}..{hi}")
    return value


def _str_field(doc: dict, name: str, max_len: int) -> str:
    value = doc.get(name)
    if not isinstance(value, str):
        raise ValueError(f"field {name!r} must be a string, got {type(value).__name__}")
    if len(value) > max_len:
        raise ValueError(f"field {name!r} is {len(value)} characters long, at most {max_len}")
    return value


def num_pieces(size: int, piece_size: int) -> int:
    """Pieces of an object; a 0-byte object has none."""
    return -(-size // piece_size)


def sidecar_url(url: str) -> str:
    loc = parse_s3_url(url)
    return f"s3://{loc.bucket}/{loc.key}{SIDECAR_SUFFIX}"


def verify_piece(manifest: Manifest, index: int, data: bytes | bytearray | memoryview) -> bool:
    """True if ``data`` is exactly piece ``index`` of the object."""
    if not 0 <= index < manifest.num_pieces:
        return False
    start, end = manifest.piece_range(index)
    if len(data) != end - start:
        return False
    return hmac.compare_digest(hashlib.sha256(data).digest(), manifest.piece_digests[index])


def compute(
    url: str, piece_size: int, *, client: S3Client | None = None, fetch_size: int = DEFAULT_FETCH_SIZE
) -> Manifest:
    """Stream the object once and hash it (GETs pinned to one ETag via If-Match)."""
    if piece_size <= 0:
        raise ValueError("piece_size must be positive")
    client = client or S3Client()
    info = client.head(url)
    # Fetch whole pieces per request so every callback is exactly one piece.
    fetch = max(piece_size, fetch_size - fetch_size % piece_size)
    pieces: list[bytes] = []
    whole = hashlib.sha256()

    def on_piece(offset: int, data: bytes) -> None:
        pieces.append(hashlib.sha256(data).digest())
        whole.update(data)

    for start in range(0, info.size, fetch):
        client.get_range(url, start, min(start + fetch, info.size), on_piece, chunk_size=piece_size, etag=info.etag)
    return Manifest(info.size, info.etag, piece_size, tuple(pieces), whole.digest())


def hash_list_location(url: str, manifest_url: str | None = None) -> str:
    """Where the hash list of ``url`` lives: ``manifest_url`` if given (``s3://...``, a
    path, or ``file://`` + path), else the sidecar next to the object."""
    return sidecar_url(url) if manifest_url is None else manifest_location(manifest_url)


def manifest_location(manifest_url: str) -> str:
    """``--manifest-url`` checked: an ``s3://BUCKET/KEY``, or a file path (``file://`` dropped)."""
    if manifest_url.startswith("s3://"):
        parse_s3_url(manifest_url)  # a malformed URL is refused here, naming it
        return manifest_url
    path = manifest_url.removeprefix("file://")
    if not path or "\0" in path:
        raise ManifestError(manifest_url, "--manifest-url must be s3://BUCKET/KEY or a file path")
    return path


def _is_s3(location: str) -> bool:
    return location.startswith("s3://")


def prepare(
    url: str,
    piece_size: int,
    *,
    client: S3Client | None = None,
    fetch_size: int = DEFAULT_FETCH_SIZE,
    manifest_url: str | None = None,
) -> Manifest:
    """Compute the manifest and store it as the sidecar ``KEY.parcomm.json`` (or at
    ``manifest_url``)."""
    client = client or S3Client()
    where = hash_list_location(url, manifest_url)
    manifest = compute(url, piece_size, client=client, fetch_size=fetch_size)
    data = manifest.to_json().encode()
    if _is_s3(where):
        client.put_bytes(where, data, content_type="application/json")
    else:
        _write_file(where, data)
    return manifest


def _write_file(path: str, data: bytes) -> None:
    """Write whole or not at all: a reader never sees half a hash list."""
    target = Path(path)
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise ManifestError(path, f"cannot write the hash list there ({exc.strerror})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(temp, 0o644)  # a hash list is no secret; the nodes must read it
        os.replace(temp, target)
    except OSError as exc:
        Path(temp).unlink(missing_ok=True)
        raise ManifestError(path, f"cannot write the hash list there ({exc.strerror})") from None


def _too_big(where: str, size: int, fix: str) -> ManifestError:
    return ManifestError(
        where,
        f"hash list is {size} bytes, more than any hash list ({MAX_MANIFEST_BYTES}); {fix}",
    )


def _read_file(path: str, fix: str) -> bytes:
    """A local hash list, read with the same bound as a sidecar."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > MAX_MANIFEST_BYTES:
                raise _too_big(path, size, fix.replace("create", "recreate"))
            raw = f.read(MAX_MANIFEST_BYTES + 1)
    except FileNotFoundError:
        raise ManifestError(path, f"no hash list there; {fix}") from None
    except IsADirectoryError:
        raise ManifestError(path, "is a directory, not a hash list file") from None
    except OSError as exc:
        raise ManifestError(path, f"cannot read the hash list ({exc.strerror})") from None
    if len(raw) > MAX_MANIFEST_BYTES:  # it grew while we read
        raise _too_big(path, len(raw), fix.replace("create", "recreate"))
    return raw


def load(
    url: str, *, client: S3Client | None = None, info: ObjectInfo | None = None, manifest_url: str | None = None
) -> Manifest:
    """Fetch the hash list of ``url`` (its sidecar, or ``manifest_url``) and check it
    still describes the object.

    ``info`` (from an earlier HEAD of the object) saves a request.
    """
    client = client or S3Client()
    info = info or client.head(url)
    where = hash_list_location(url, manifest_url)
    elsewhere = "" if manifest_url is None else f" --manifest-url {manifest_url}"
    fix = f"run `parcomm bcast prepare {url}{elsewhere}` to create it"
    if _is_s3(where):
        try:
            sidecar = client.head(where)
            if sidecar.size > MAX_MANIFEST_BYTES:
                raise _too_big(where, sidecar.size, fix.replace("create", "recreate"))
            raw = client.get_bytes(where, 0, sidecar.size, etag=sidecar.etag)
        except ObjectNotFound:
            raise ManifestError(url, f"no hash list ({where} not found); {fix}") from None
    else:
        raw = _read_file(where, fix)
    try:
        manifest = Manifest.from_json(raw)
    except (ValueError, KeyError, TypeError) as exc:
        raise ManifestError(url, f"unreadable hash list {where} ({exc}); {fix.replace('create', 'recreate')}") from None
    if manifest.size != info.size or manifest.etag != info.etag:
        raise ManifestError(
            url,
            f"stale hash list {where}: made for size {manifest.size} etag {manifest.etag}, the object now has "
            f"size {info.size} etag {info.etag}; {fix.replace('create', 'recreate')}",
        )
    return manifest
