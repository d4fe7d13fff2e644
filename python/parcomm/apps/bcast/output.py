"""The output file of a broadcast, written piece by piece and published atomically.

Pieces go, in any order and from any thread, into a hidden partial file
``.NAME.parcomm-partial-<random>-<host>-<pid>-<start>`` next to ``PATH`` (same
filesystem, so the final rename is atomic), pre-sized to the object. It is
created afresh (``O_EXCL|O_NOFOLLOW``, mode 0600) at a name with 128 random
bits: a file or symlink another local user planted where they guessed the
partial would be is never opened, and nobody else can read or change the bytes
before they are verified. Publishing gives it a new file's mode (0666 less the
umask).
:meth:`OutputWriter.commit` checks the whole file's sha256 and only then
renames it to ``PATH``; :meth:`OutputWriter.abort` (or leaving the ``with``
block without a commit) removes it. ``PATH`` therefore either keeps what it
had before or holds the complete, verified object — never a partial one.

A writer killed with ``kill -9`` cannot remove its partial file, so the next
writer of the same ``PATH`` does (:func:`remove_stale_partials`). A partial
is stale only when it is this user's regular file and its owner is gone on both counts: the process named in it
(pid *and* start time, so a recycled pid is not mistaken for the owner) no
longer exists on this host, and nobody holds the ``flock`` every writer keeps
on its partial while alive. Partials of other hosts (a shared filesystem) are
left alone: whether their owner lives cannot be told from here.

Local storage failures (disk full, quota, read-only filesystem, I/O error)
raise :class:`OutputError`, which is deliberately *not* an ``OSError``: the
caller retries network errors, but fetching the object again cannot help a
full disk.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import hmac
import os
import re
import secrets
import socket
import stat
import threading
from pathlib import Path

PARTIAL_MARK = ".parcomm-partial-"
_RANDOM_PREFIX = re.compile(r"^[0-9a-f]{32}-")
_READ_BLOCK = 4 * 1024 * 1024
# Errors of the local filesystem that no retry of the download can cure.
_SPACE_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
# posix_fallocate on a filesystem that does not implement it.
_NO_FALLOCATE_ERRNOS = (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS)
#: O_DIRECT wants the file offset, the length and the buffer's address aligned to the
#: device's logical block: 4 KiB covers every disk in use (512 B and 4 KiB sectors).
DIRECT_ALIGN = 4096
#: Local block filesystems, where an O_DIRECT write is a DMA from our buffer to the disk.
#: Not network or FUSE filesystems (each write a synchronous round trip) nor tmpfs (none).
_DIRECT_FS = ("ext4", "xfs", "btrfs", "f2fs")


class OutputError(Exception):
    """The output cannot be written (bad path, disk full, I/O error); not an OSError on purpose."""


def _errname(exc: OSError) -> str:
    name = errno.errorcode.get(exc.errno or 0, "")
    what = "disk full" if exc.errno == errno.ENOSPC else (exc.strerror or str(exc)).lower()
    return f"{what} ({name})" if name else what


def _host() -> str:
    # The separator is "-", which host names may contain: the pid and start time are parsed from the right.
    return "".join(c if c.isalnum() or c in "-._" else "_" for c in socket.gethostname())[:64] or "localhost"


def _start_time(pid: int) -> int | None:
    """Field 22 of /proc/<pid>/stat (clock ticks since boot), or None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode(errors="replace")
    except OSError:
        return None
    fields = data[data.rfind(")") + 2 :].split()  # comm may contain spaces and parentheses
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def _random_token() -> str:
    return secrets.token_hex(16)


def _umask() -> int:
    """This process's umask, read without changing it (os.umask would, for every thread)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8) & 0o777
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def partial_path(path: str | os.PathLike[str], pid: int | None = None, token: str | None = None) -> Path:
    """A partial file name a writer in process ``pid`` (default: this one) may use for
    ``path``: a fresh random ``token`` each call unless one is given. The random part comes
    first so that the owner (host, pid, start time) still parses from the right."""
    target = Path(path)
    pid = os.getpid() if pid is None else pid
    token = _random_token() if token is None else token
    return target.with_name(f".{target.name}{PARTIAL_MARK}{token}-{_host()}-{pid}-{_start_time(pid) or 0}")


def _owner(name: str, mark: str) -> tuple[str, int, int | None] | None:
    """(host, pid, start time) from a partial's name; None if the name is not one of ours."""
    token = name[len(mark) :]
    if token.isdigit():  # the older ``-<pid>`` form: same host, start time unknown
        return _host(), int(token), None
    parts = token.rsplit("-", 2)
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    host = _RANDOM_PREFIX.sub("", parts[0], count=1)  # the older names had no random part
    return host, int(parts[1]), int(parts[2]) or None


def _alive(pid: int, start: int | None = None) -> bool:
    now = _start_time(pid)
    if now is not None:
        return start is None or now == start
    if os.path.isdir("/proc/self"):
        return False  # /proc is there and has no such process
    try:
        os.kill(pid, 0)  # no /proc: signal 0 is an existence check only
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _locked(path: Path) -> bool:
    """True if some process holds the flock of ``path`` (a live writer)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False  # no locks on this filesystem: the pid check alone decides
    finally:
        os.close(fd)  # also drops our lock
    return False


def remove_stale_partials(path: str | os.PathLike[str]) -> list[Path]:
    """Remove partial files of ``path`` whose writer is dead; never one of a live process.

    Only regular files of this user, named for this host, whose owner process
    is gone and whose flock is free are removed. Returns the files removed.
    """
    target = Path(path)
    mark = f".{target.name}{PARTIAL_MARK}"
    removed = []
    try:
        candidates = [c for c in target.parent.iterdir() if c.name.startswith(mark)]
    except OSError:
        return removed
    for candidate in sorted(candidates):
        owner = _owner(candidate.name, mark)
        if owner is None or owner[0] != _host() or _alive(owner[1], owner[2]):
            continue
        try:
            st = candidate.lstat()
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or _locked(candidate):
            continue
        try:
            candidate.unlink()
        except FileNotFoundError:
            continue  # another writer swept it first
        except OSError:
            continue  # not ours to remove after all (permissions): leave it
        removed.append(candidate)
    return removed


def filesystem_type(path: str | os.PathLike[str]) -> str | None:
    """The type (``ext4``, ``nfs4``...) of the filesystem mounted where ``path`` is, from
    /proc/self/mountinfo; None where that cannot be told."""
    try:
        real = os.path.realpath(path)
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
    except OSError:
        return None
    best, kind = "", None
    for line in lines:
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if not sep or len(fields) < 5 or not right.split():
            continue
        mount = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])  # "\040" is a space
        inside = real == mount or real.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best):  # the deepest mount; a later one hides an earlier one
            best, kind = mount, right.split()[0]
    return kind


def check_output_path(path: str | os.PathLike[str], size: int | None = None) -> Path:
    """Check that ``path`` can become the output, before anything is downloaded.

    Raises :class:`OutputError` with one line naming the path when it is a
    directory or not a regular file, when its directory is missing, is not a
    directory or is not writable (read-only filesystem included), or when
    ``size`` bytes cannot fit in the free space of its filesystem.
    Returns ``path`` as a :class:`~pathlib.Path`.
    """
    target = Path(path)
    folder = target.parent
    if str(target) in ("", ".") or target.name in ("", ".", ".."):
        raise OutputError(f"{path}: not a file name")
    if target.is_dir():
        raise OutputError(f"{target}: is a directory")
    if target.exists() and not target.is_file():
        raise OutputError(f"{target}: exists and is not a regular file (the output replaces it)")
    if not folder.exists():
        raise OutputError(f"{target}: directory {folder} does not exist")
    if not folder.is_dir():
        raise OutputError(f"{target}: {folder} is not a directory")
    if not os.access(folder, os.W_OK | os.X_OK):
        # access() also says no for a read-only filesystem, even to root.
        raise OutputError(f"{target}: directory {folder} is not writable")
    if size:
        _check_free_space(target, size, lambda: os.statvfs(folder))
    return target


def _check_free_space(target: Path, size: int, statvfs) -> None:
    try:
        st = statvfs()
    except OSError:
        return  # the filesystem does not say: find out by writing
    if st.f_blocks == 0:
        return  # pseudo filesystems report no blocks at all
    # Root may also use the blocks reserved for it; anyone else only the available ones.
    free = (st.f_bfree if os.geteuid() == 0 else st.f_bavail) * st.f_frsize
    if free < size:
        raise OutputError(
            f"{target}: disk full (ENOSPC): the object needs {size} bytes, "
            f"{free} are free on the filesystem of {target.parent}"
        )


class OutputWriter:
    """Write an object of ``size`` bytes to ``path``; publish it only if its sha256 matches.

    ``direct``: write block-aligned pieces with O_DIRECT (where the filesystem is a
    local disk one), past the page cache: the disk takes them from the caller's
    buffer, nothing is copied. Others go through the page cache as usual. The
    published file is then mostly not in the page cache: a later read of it
    goes to the disk."""

    def __init__(
        self, path: str | os.PathLike[str], size: int, expected_sha256: bytes | None, *, direct: bool = False
    ) -> None:
        if size < 0:
            raise ValueError("size must be >= 0")
        self.path = Path(path)
        self.size = size
        self.expected_sha256 = expected_sha256
        self.temp_path = self.path  # set by _create()
        self.bytes_written = 0
        self._lock = threading.Lock()
        self._closed = False
        self._committed = False
        check_output_path(self.path)
        remove_stale_partials(self.path)  # of writers killed before they could clean up
        self._fd = self._create()
        self._direct_fd: int | None = None
        try:
            self._presize()
            if direct:
                self._direct_fd = self._open_direct()
        except BaseException:
            self.abort()
            raise

    def _open_direct(self) -> int | None:
        """A second descriptor of the partial file with O_DIRECT, or None where that does not fit."""
        if not hasattr(os, "O_DIRECT") or filesystem_type(self.temp_path.parent) not in _DIRECT_FS:
            return None
        try:
            return self.reopen(os.O_WRONLY | os.O_DIRECT)
        except OSError:
            return None

    def reopen(self, flags: int) -> int:
        """Another descriptor of the partial file itself, with other ``flags``: through
        /proc/self/fd, never by name (the name could be made to point elsewhere meanwhile)."""
        flags |= getattr(os, "O_CLOEXEC", 0)
        try:
            return os.open(f"/proc/self/fd/{self._fd}", flags)
        except FileNotFoundError:
            if os.path.isdir("/proc/self/fd"):
                raise
        fd = os.open(self.temp_path, flags | os.O_NOFOLLOW)  # no /proc: by name, checked to be ours
        if not os.path.samestat(os.fstat(fd), os.fstat(self._fd)):
            os.close(fd)
            raise OutputError(f"{self.path}: {self.temp_path.name} was replaced while being written")
        return fd

    @property
    def direct(self) -> bool:
        """Whether aligned pieces go to the disk past the page cache (O_DIRECT)."""
        return self._direct_fd is not None

    def _close_direct(self) -> None:
        if self._direct_fd is not None:
            os.close(self._direct_fd)
            self._direct_fd = None

    def _create(self) -> int:
        """Create the partial file afresh at a random name (mode 0600: nobody else reads or
        changes it before it is verified) and hold its flock for as long as this writer lives."""
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        for _ in range(10):
            self.temp_path = partial_path(self.path)
            try:
                fd = os.open(self.temp_path, flags, 0o600)
            except FileExistsError:
                continue  # someone put something at this name (a guess, a plant): another name
            except OSError as exc:
                raise OutputError(f"{self.path}: cannot create {self.temp_path.name}: {_errname(exc)}") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                pass  # no locks here (or a stale lock holder): the pid in the name still marks it live
            # A sweeper that opened the file before we locked it may have unlinked it: start over then.
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.temp_path, follow_symlinks=False))
            except OSError:
                same = False
            if same:
                return fd
            os.close(fd)
        raise OutputError(f"{self.path}: no partial file could be created next to it (10 names taken or vanished)")

    def _presize(self) -> None:
        # Reserve the blocks up front so a full disk fails now, not after the download.
        if not self.size:
            return
        if hasattr(os, "posix_fallocate"):
            try:
                os.posix_fallocate(self._fd, 0, self.size)
                return
            except OSError as exc:
                if exc.errno not in _NO_FALLOCATE_ERRNOS:
                    raise self._io_error(
                        exc, f"reserving {self.size} bytes for {self.temp_path.name}", size_hint=False
                    ) from None
        # No fallocate on this filesystem: at least check the free space, then size the file (sparse).
        _check_free_space(self.path, self.size, lambda: os.fstatvfs(self._fd))
        try:
            os.ftruncate(self._fd, self.size)
        except OSError as exc:
            raise self._io_error(exc, f"sizing {self.temp_path.name} to {self.size} bytes") from None

    def _io_error(self, exc: OSError, doing: str, *, size_hint: bool = True) -> OutputError:
        hint = f" (the object needs {self.size} bytes)" if size_hint and exc.errno in _SPACE_ERRNOS else ""
        return OutputError(f"{self.path}: {_errname(exc)} {doing}{hint}")

    def write_piece(self, offset: int, data: bytes | bytearray | memoryview) -> None:
        """Write ``data`` at ``offset`` (thread safe: positional writes)."""
        if self._closed:
            raise OutputError(f"{self.path}: writer already closed")
        if offset < 0 or offset + len(data) > self.size:
            raise OutputError(
                f"{self.path}: write [{offset}, {offset + len(data)}) outside the object (size {self.size})"
            )
        view = memoryview(data)
        try:
            if self._direct_fd is not None and view and not (offset | len(view)) % DIRECT_ALIGN:
                try:
                    n = os.pwrite(self._direct_fd, view, offset)  # the disk reads it from our buffer: no copy
                    view, offset = view[n:], offset + n
                except OSError as exc:
                    if exc.errno != errno.EINVAL:
                        raise
                    # a buffer not aligned in memory (bytes from elsewhere): through the page cache
            while view:
                n = os.pwrite(self._fd, view, offset)
                view, offset = view[n:], offset + n
        except OSError as exc:
            # Not an OSError for the caller: re-fetching the piece cannot cure a full disk.
            raise self._io_error(exc, f"writing byte {offset} of {self.temp_path.name}") from None
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

    def commit(self, digest: bytes | None = None) -> Path:
        """Check the digest, then rename the file to ``path`` atomically.

        ``digest`` is the sha256 of what was written, if the caller hashed it as
        it went (:class:`~.store.WholeDigest`); otherwise the file is read back."""
        if self._closed:
            raise OutputError(f"{self.path}: writer already closed")
        try:
            if self.expected_sha256 is not None:
                actual = digest if digest is not None else self.sha256()
                if not hmac.compare_digest(actual, self.expected_sha256):
                    raise OutputError(
                        f"{self.path}: sha256 {actual.hex()} does not match the object's "
                        f"{self.expected_sha256.hex()}; output not written"
                    )
            try:
                os.fsync(self._fd)  # delayed allocation (NFS, XFS) may report a full disk only here
                os.fchmod(self._fd, 0o666 & ~_umask())  # verified: the mode a new file gets
                self._close_direct()
                os.close(self._fd)
                self._closed = True
                os.replace(self.temp_path, self.path)
            except OSError as exc:
                raise self._io_error(exc, f"publishing {self.temp_path.name}") from None
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
            self._close_direct()
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
