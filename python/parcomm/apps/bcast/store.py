"""Where a node keeps the verified pieces it holds, and serves them from.

Three stores, one interface (:class:`PieceStore`):

* :class:`FileStore` -- the output file (through :class:`~.output.OutputWriter`:
  a partial file renamed into place only when complete and verified); peers
  are served from it by ``sendfile``.
* :class:`MemoryStore` -- a caller's writable buffer (a ``bytearray``, a numpy
  array, a pinned host buffer): no disk write at all.
* :class:`SpoolStore` -- an anonymous temporary file behind ``--out -``: it
  holds the pieces that arrive out of order and serves peers, while the
  object streams to stdout in order.

:class:`WholeDigest` hashes the object in order *as it arrives* on its own
thread (hashlib releases the GIL), so the final check costs nothing at the
end: no re-read of the file at commit. It is also what streams ``--out -``
(without hashing under ``--verify pieces``).
"""

from __future__ import annotations

import hashlib
import mmap
import os
import tempfile
import threading
from typing import Callable, Iterator, Protocol

from .links import Link
from .output import DIRECT_ALIGN, OutputError, OutputWriter

#: Bytes the in-order pass reads back at once with O_DIRECT (one reused, aligned buffer).
_READ_CHUNK = 8 << 20


class PieceStore(Protocol):
    size: int

    def write(self, offset: int, data: bytes | bytearray | memoryview) -> bool:
        """Store verified bytes at ``offset``; False if the store is closed (late duplicate)."""

    def view(self, start: int, end: int) -> memoryview:
        """Bytes ``[start, end)`` already written, without a copy."""

    def chunks(self, start: int, end: int) -> Iterator[memoryview]:
        """Bytes ``[start, end)`` already written, in order, in pieces (each valid until the next)."""

    def send(self, link: Link, type_code: int, fields: tuple[int, ...], start: int, end: int) -> None:
        """Send bytes ``[start, end)`` as the payload of one frame on ``link``."""

    def commit(self, digest: bytes | None) -> None:
        """The whole object is held (and hashed to ``digest``, already checked, unless
        only pieces were verified: None): publish it."""

    def close(self) -> None:
        """Release everything; uncommitted output is dropped. Idempotent."""


class _Guarded:
    """Writes and close() exclude each other: a late piece never touches a closed fd.

    Writes exclude each other too. Letting receivers ``pwrite`` one file at once
    bought nothing: ext4 serializes buffered writes on the inode's lock, and its
    waiters spin (``rwsem_spin_on_owner``: +0.1 CPU s per GB delivered, 4 nodes)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._closed = False


class _FileBacked(_Guarded):
    """A store backed by a file: served by ``sendfile``, read back (the in-order pass of
    ``--verify whole``, ``--out -``) with ``pread`` into one reused buffer.

    Not through an mmap of the whole file: mapping it faulted every page of the output
    into this process (~1 GB of RSS per node for 1 GiB, and a page-table entry per 4 KiB)
    only to read each byte once."""

    def _serve_from(self, fd: int, size: int, direct_fd: int | None = None) -> None:
        self.size = size
        self._serve_fd = fd
        # Pieces written past the page cache are read back past it too (O_DIRECT): the disk
        # DMAs them into the reused buffer instead of faulting in fresh cache pages.
        self._direct_read = direct_fd
        self._read_buf: mmap.mmap | None = None  # page-aligned, as O_DIRECT wants

    def view(self, start: int, end: int) -> memoryview:
        return memoryview(os.pread(self._serve_fd, end - start, start))

    def chunks(self, start: int, end: int) -> Iterator[memoryview]:
        if self._read_buf is None:
            self._read_buf = mmap.mmap(-1, _READ_CHUNK)
        buf = memoryview(self._read_buf)
        pos = start
        direct = self._direct_read is not None and not start % DIRECT_ALIGN
        while pos < end:
            want = min(_READ_CHUNK, end - pos)
            try:
                if direct:
                    span = -(-want // DIRECT_ALIGN) * DIRECT_ALIGN  # whole blocks; past the end it reads short
                    got = os.preadv(self._direct_read, [buf[:span]], pos)  # type: ignore[arg-type]
                else:
                    got = os.preadv(self._serve_fd, [buf[:want]], pos)
            except OSError as exc:
                if direct:
                    direct = False  # the filesystem refused after all: through the cache
                    continue
                raise OutputError(f"reading back byte {pos} of the output: {exc.strerror or exc}") from None
            if got < want:
                raise OutputError(f"reading back the output: {got} of {want} bytes at {pos}")
            yield buf[:want]
            pos += want

    def send(self, link: Link, type_code: int, fields: tuple[int, ...], start: int, end: int) -> None:
        link.send_file(type_code, fields, self._serve_fd, start, end - start)

    def _release_reader(self) -> None:
        if self._direct_read is not None:
            os.close(self._direct_read)
            self._direct_read = None
        if self._read_buf is not None:
            try:
                self._read_buf.close()
            except BufferError:
                pass  # the in-order pass still holds a view: the GC unmaps it


class FileStore(_FileBacked):
    def __init__(
        self, path: str | os.PathLike[str], size: int, expected_sha256: bytes | None, *, direct: bool = False
    ) -> None:
        super().__init__()
        self.writer = OutputWriter(path, size, expected_sha256, direct=direct)
        direct_read = None
        if self.writer.direct:
            try:
                direct_read = self.writer.reopen(os.O_RDONLY | os.O_DIRECT)
            except OSError:
                pass
        # Our own descriptor of the partial file: it stays valid across the rename at
        # commit, so the node goes on serving peers from the published file.
        self._serve_from(self.writer.reopen(os.O_RDONLY), size, direct_read)

    @property
    def path(self):
        return self.writer.path

    def write(self, offset: int, data) -> bool:
        with self._lock:
            if self._closed or self.writer.committed:
                return False
            self.writer.write_piece(offset, data)
        return True

    def commit(self, digest: bytes | None) -> None:
        with self._lock:
            self.writer.commit(digest=digest)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if not self.writer.committed:
                self.writer.abort()
        os.close(self._serve_fd)
        self._release_reader()


class MemoryStore(_Guarded):
    """Deliver into ``buffer`` (anything with a writable, C-contiguous buffer of exactly the object's size)."""

    def __init__(self, buffer, size: int) -> None:
        super().__init__()
        try:
            view = memoryview(buffer)
        except TypeError:
            raise OutputError(f"the output buffer ({type(buffer).__name__}) does not expose a buffer") from None
        if view.readonly:
            raise OutputError("the output buffer is read-only")
        if not view.c_contiguous:
            raise OutputError("the output buffer is not contiguous")
        view = view.cast("B")
        if len(view) != size:
            raise OutputError(f"the output buffer holds {len(view)} bytes; the object has {size}")
        self.size = size
        self._view = view

    def write(self, offset: int, data) -> bool:
        with self._lock:
            if self._closed:
                return False
            self._view[offset : offset + len(data)] = data
        return True

    def view(self, start: int, end: int) -> memoryview:
        return self._view[start:end]

    def chunks(self, start: int, end: int) -> Iterator[memoryview]:
        yield self._view[start:end]

    def send(self, link: Link, type_code: int, fields: tuple[int, ...], start: int, end: int) -> None:
        link.send_view(type_code, fields, self._view[start:end])

    def commit(self, digest: bytes | None) -> None:
        pass  # the caller's buffer is the output

    def close(self) -> None:
        with self._lock:
            self._closed = True


class SpoolStore(_FileBacked):
    """An unlinked temporary file: pieces out of order in, the object in order out (``--out -``)."""

    def __init__(self, size: int, directory: str | None = None) -> None:
        super().__init__()
        self._file = tempfile.TemporaryFile(dir=directory)  # unlinked: nothing to clean up after a crash
        self._fd = self._file.fileno()
        try:
            if size:
                os.posix_fallocate(self._fd, 0, size)
        except OSError as exc:
            self._file.close()
            raise OutputError(f"temporary spool file of {size} bytes: {exc.strerror or exc}") from None
        self._serve_from(self._fd, size)

    def write(self, offset: int, data) -> bool:
        view = memoryview(data)
        with self._lock:
            if self._closed:
                return False
            try:
                while view:
                    n = os.pwrite(self._fd, view, offset)
                    view, offset = view[n:], offset + n
            except OSError as exc:
                raise OutputError(f"temporary spool file: {exc.strerror or exc}") from None
        return True

    def commit(self, digest: bytes | None) -> None:
        pass  # the object has already gone out, in order

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._release_reader()
        self._file.close()


class WholeDigest:
    """sha256 of the whole object, computed in order as pieces become available.

    ``mark(piece)`` after a piece is stored; a thread hashes the longest
    available prefix from the store (and writes it to ``sink``, a file
    descriptor such as stdout, if given). :meth:`result` waits for the end.
    With ``hashing=False`` it only streams to ``sink`` in order (``--verify
    pieces``): :meth:`wait` says when the last piece went out.
    """

    def __init__(
        self,
        store: PieceStore,
        piece_bounds,
        pieces: int,
        sink: int | None = None,
        *,
        hashing: bool = True,
        on_done: Callable[[], None] | None = None,
    ) -> None:
        self.store, self.pieces, self.sink = store, pieces, sink
        self.on_done = on_done  # called on its thread once the last piece is done (or the pass failed)
        self._bounds = piece_bounds  # piece -> (start, end)
        self._ready = bytearray(pieces)
        self._next = 0
        self._hash = hashlib.sha256() if hashing else None
        self._cond = threading.Condition()
        self._stopped = False
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="whole-digest", daemon=True)
        self._thread.start()

    def mark(self, piece: int) -> None:
        with self._cond:
            if not self._ready[piece]:
                self._ready[piece] = 1
                if piece == self._next:
                    self._cond.notify()

    @property
    def hashed(self) -> int:
        """Pieces hashed (and streamed) so far: the in-order prefix."""
        return self._next

    def _run(self) -> None:
        try:
            while True:
                with self._cond:
                    while not self._stopped and self._next < self.pieces and not self._ready[self._next]:
                        self._cond.wait()
                    if self._stopped or self._next >= self.pieces:
                        self._cond.notify_all()
                        done = self._next >= self.pieces and not self._stopped
                        break
                    first = last = self._next
                    while last + 1 < self.pieces and self._ready[last + 1] and last - first < 63:
                        last += 1  # a run of ready pieces: one update, fewer wake-ups
                start, end = self._bounds(first)[0], self._bounds(last)[1]
                for chunk in self.store.chunks(start, end):
                    if self._hash is not None:
                        self._hash.update(chunk)  # releases the GIL for large buffers
                    if self.sink is not None:
                        _write_all(self.sink, chunk)
                    chunk.release()  # no view left on the map: close() can unmap it
                with self._cond:
                    self._next = last + 1
                    self._cond.notify_all()
        except BaseException as exc:  # e.g. EPIPE on stdout: the caller reports it
            with self._cond:
                self.error = exc
                self._stopped = True
                self._cond.notify_all()
            done = True
        if done and self.on_done is not None:
            self.on_done()

    def wait(self, timeout: float | None = None) -> bool:
        """True once every piece is hashed (and streamed); False if not within ``timeout``."""
        with self._cond:
            self._cond.wait_for(lambda: self._next >= self.pieces or self._stopped, timeout)
            if self.error is not None:
                raise self.error
            return self._next >= self.pieces

    def result(self, timeout: float | None = None) -> bytes | None:
        """The digest once every piece is hashed; None if not done within ``timeout``
        (or not hashing)."""
        done = self.wait(timeout)
        return self._hash.digest() if done and self._hash is not None else None

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        self._thread.join(timeout=5.0)


def _write_all(fd: int, view: memoryview) -> None:
    while view:
        n = os.write(fd, view)
        view = view[n:]
