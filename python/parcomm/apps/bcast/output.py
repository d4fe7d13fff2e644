"""The output file of a broadcast, written piece by piece and published atomically.

Pieces go, in any order and from any thread, into ``.NAME.parcomm-partial-<pid>``
next to ``PATH`` (same filesystem, so the final rename is atomic), pre-sized to
the object. :meth:`OutputWriter.commit` checks the whole file's sha256 and only
then renames it to ``PATH``; :meth:`OutputWriter.abort` (or leaving the ``with``
block without a commit) removes it. ``PATH`` therefore either keeps what it had
before or holds the complete, verified object — never a partial one.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import threading
from pathlib import Path

PARTIAL_MARK = ".parcomm-partial-"
_READ_BLOCK = 4 * 1024 * 1024


class OutputError(Exception):
    pass


def partial_path(path: str | os.PathLike[str], pid: int | None = None) -> Path:
    target = Path(path)
    return target.with_name(f".{target.name}{PARTIAL_MARK}{os.getpid() if pid is None else pid}")


def remove_stale_partials(path: str | os.PathLike[str]) -> list[Path]:
    """Remove partial files of ``path`` left by processes that no longer exist."""
    target = Path(path)
    removed = []
    for candidate in target.parent.glob(f".{target.name}{PARTIAL_MARK}*"):
        pid_text = candidate.name.rsplit("-", 1)[-1]
        if pid_text.isdigit() and not _alive(int(pid_text)):
            candidate.unlink(missing_ok=True)
            removed.append(candidate)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: existence check only
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class OutputWriter:
    """Write an object of ``size`` bytes to ``path``; publish it only if its sha256 matches."""

    def __init__(self, path: str | os.PathLike[str], size: int, expected_sha256: bytes | None) -> None:
        if size < 0:
            raise ValueError("size must be >= 0")
        self.path = Path(path)
        self.size = size
        self.expected_sha256 = expected_sha256
        self.temp_path = partial_path(self.path)
        self.bytes_written = 0
        self._lock = threading.Lock()
        self._closed = False
        self._committed = False
        if self.path.is_dir():
            raise OutputError(f"{self.path}: is a directory")
        flags = os.O_RDWR | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)
        try:
            self._fd = os.open(self.temp_path, flags, 0o644)
        except OSError as exc:
            raise OutputError(f"{self.path}: cannot create {self.temp_path.name}: {exc.strerror}") from None
        try:
            self._presize()
        except OSError as exc:
            self.abort()
            raise OutputError(f"{self.path}: cannot reserve {size} bytes: {exc.strerror}") from None

    def _presize(self) -> None:
        # Reserve the blocks up front so a full disk fails now, not midway.
        if self.size and hasattr(os, "posix_fallocate"):
            try:
                os.posix_fallocate(self._fd, 0, self.size)
                return
            except OSError as exc:
                if exc.errno not in (95, 22):  # EOPNOTSUPP / EINVAL: filesystem without fallocate
                    raise
        os.ftruncate(self._fd, self.size)

    def write_piece(self, offset: int, data: bytes | bytearray | memoryview) -> None:
        """Write ``data`` at ``offset`` (thread safe: positional writes)."""
        if self._closed:
            raise OutputError(f"{self.path}: writer already closed")
        if offset < 0 or offset + len(data) > self.size:
            raise OutputError(f"{self.path}: write [{offset}, {offset + len(data)}) outside the object (size {self.size})")
        view = memoryview(data)
        while view:
            n = os.pwrite(self._fd, view, offset)
            view, offset = view[n:], offset + n
        with self._lock:
            self.bytes_written += len(data)

    def read(self, offset: int, length: int) -> bytes:
        """Bytes ``[offset, offset + length)`` of the file as written so far
        (a node serves pieces it holds before the output is complete)."""
        if self._closed:
            raise OutputError(f"{self.path}: writer already closed")
        return os.pread(self._fd, length, offset)

    def sha256(self) -> bytes:
        """Digest of the temporary file as written so far (read back from disk)."""
        digest = hashlib.sha256()
        offset = 0
        while offset < self.size:
            block = os.pread(self._fd, min(_READ_BLOCK, self.size - offset), offset)
            if not block:
                break
            digest.update(block)
            offset += len(block)
        return digest.digest()

    def commit(self) -> Path:
        """Check the digest, then rename the file to ``path`` atomically."""
        if self._closed:
            raise OutputError(f"{self.path}: writer already closed")
        try:
            if self.expected_sha256 is not None:
                actual = self.sha256()
                if not hmac.compare_digest(actual, self.expected_sha256):
                    raise OutputError(f"{self.path}: sha256 {actual.hex()} does not match the object's "
                                      f"{self.expected_sha256.hex()}; output not written")
            os.fsync(self._fd)
            os.close(self._fd)
            self._closed = True
            os.replace(self.temp_path, self.path)
            self._committed = True
        except BaseException:
            self.abort()
            raise
        self._fsync_dir()
        return self.path

    def _fsync_dir(self) -> None:
        # Make the rename itself durable; best effort on filesystems that refuse it.
        try:
            fd = os.open(self.path.parent, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)

    def abort(self) -> None:
        """Drop the temporary file; ``path`` is left untouched. Idempotent."""
        if not self._closed:
            self._closed = True
            os.close(self._fd)
        self.temp_path.unlink(missing_ok=True)

    @property
    def committed(self) -> bool:
        return self._committed

    def __enter__(self) -> "OutputWriter":
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        # Leaving without commit() (error, cancel, forgotten) must not leave output behind.
        if not self._closed:
            self.abort()
