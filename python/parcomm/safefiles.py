"""Reading and creating files where another local user may have been first.

Shared directories (a ``--rendezvous-dir``, the temporary directory, the
directory of an output file) and user-named secrets (a key file) are places
another user of the machine can plant a FIFO (whose ``open`` blocks forever),
a symbolic link (which redirects a write by root to any file), or a file of
their own (which they can edit afterwards). Two rules close these:

* **read**: open with ``O_NOFOLLOW | O_NONBLOCK`` (a link is refused, a FIFO
  opens at once), then ``fstat`` the descriptor: only a regular file owned by
  this process's effective user is read, and only up to a bound;
* **create**: ``O_CREAT | O_EXCL | O_NOFOLLOW`` at a name nobody can predict,
  so nothing that was there first is reused or followed.

:class:`UnsafeFile` says, in one line, which of the checks a path failed.
"""

from __future__ import annotations

import os
import secrets
import stat

__all__ = [
    "UnsafeFile",
    "read_own_file",
    "read_own_file_stat",
    "own_regular_file_at",
    "create_exclusive",
    "unpredictable_name",
    "open_directory",
    "shared_without_sticky",
]

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class UnsafeFile(ValueError):
    """A path that is not a regular file of ours (or cannot be read): the message says why."""


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def read_own_file(path: str | os.PathLike[str], limit: int, *, dir_fd: int | None = None, what: str = "file") -> bytes:
    """The bytes of ``path`` (relative to ``dir_fd`` if given), at most ``limit`` + 1 of them.

    Raises :class:`UnsafeFile` as :func:`read_own_file_stat` does."""
    return read_own_file_stat(path, limit, dir_fd=dir_fd, what=what)[0]


def read_own_file_stat(
    path: str | os.PathLike[str], limit: int, *, dir_fd: int | None = None, what: str = "file"
) -> tuple[bytes, os.stat_result]:
    """The bytes of ``path`` (at most ``limit`` + 1) and the ``fstat`` of what was read.

    Raises :class:`UnsafeFile` if it is a symbolic link, not a regular file, or
    not owned by our effective user, and for any ``OSError`` (the message names
    ``what`` and the path, never the content).
    """
    shown = os.fspath(path)
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        if os.path.islink(path) if dir_fd is None else _is_link_at(path, dir_fd):
            raise UnsafeFile(f"{what} {shown} is a symbolic link; give the file itself") from None
        raise UnsafeFile(f"cannot read {what} {shown}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeFile(f"{what} {shown} is {_kind(info.st_mode)}, not a regular file")
        if info.st_uid != os.geteuid():
            raise UnsafeFile(
                f"{what} {shown} is owned by uid {info.st_uid}, not by this user (uid {os.geteuid()}); "
                "only a file of your own is trusted"
            )
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks), info
    except OSError as exc:
        raise UnsafeFile(f"cannot read {what} {shown}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _is_link_at(name: str | os.PathLike[str], dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def own_regular_file_at(name: str, dir_fd: int) -> bool:
    """Whether ``name`` in ``dir_fd`` is, without following a link, a regular file of ours."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid()


def unpredictable_name(stem: str, suffix: str = ".tmp") -> str:
    """``.STEM.<64 random bits>SUFFIX``: a hidden name nobody can plant a file at in advance."""
    return f".{stem}.{secrets.token_hex(8)}{suffix}"


def create_exclusive(name: str | os.PathLike[str], *, dir_fd: int | None = None, mode: int = 0o600) -> int:
    """A new file's descriptor, open for writing: fails if anything (a file, a link, a FIFO) is there."""
    return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, mode, dir_fd=dir_fd)


def open_directory(path: str | os.PathLike[str]) -> int:
    """A descriptor of the directory ``path``: entries opened through it stay in this directory
    even if ``path`` is renamed or replaced meanwhile."""
    return os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)


def shared_without_sticky(info: os.stat_result) -> bool:
    """World-writable and without the sticky bit: anyone may rename or delete anyone's entries."""
    return bool(info.st_mode & stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX
