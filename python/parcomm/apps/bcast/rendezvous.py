"""How the nodes of a broadcast learn each other's peer address, without MPI.

Each node first opens its peer listener (``links.Listener``), then publishes that
endpoint and learns everyone's, as a table indexed by rank:

* :func:`via_address` — rank 0 listens on a known rendezvous address, the others
  connect (retrying until it is up) and register; when all have, rank 0 sends
  everyone the table.
* :func:`via_directory` — a directory on a shared filesystem: each rank writes
  ``rank-R.json`` (atomically, safe from other users) and waits for all of them.
* :func:`reserve_local_sockets` — ``--local N``: the parent binds N listening
  sockets on 127.0.0.1, so the ports are known (and held) before the children
  start; each child serves on its inherited socket.

``job`` names the broadcast (e.g. the object URL and ETag, or a batch job id) so
registrations of another broadcast are refused.

Only members take part: a registration connection proves the job's key both
ways before its registration is read (:mod:`parcomm.auth`), and a directory
entry carries an HMAC of its content under the key, so nobody without the key
can claim a rank, learn the peer table, or read why a registration was refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import os
import socket
import time
from pathlib import Path

from ... import safefiles
from ...auth import AuthError, Gate, JobKey, authenticate
from .wire import Record, WireError, encode_record, read_record

Endpoint = tuple[str, int]

RV_REGISTER = 0xFF01  # fields (rank, world); payload JSON {"host", "port", "job"}
RV_TABLE = 0xFF02  # payload JSON [[host, port], ...] by rank
RV_REFUSE = 0xFF03  # payload: the reason, UTF-8
_MAX_MESSAGE = 1 << 20
#: Bound into the handshake proofs and entry MACs: worthless for any other protocol.
_AUTH_CONTEXT = b"parcomm-bcast-rendezvous-1"


class RendezvousError(Exception):
    pass


def _missing(table: dict[int, Endpoint], world: int) -> str:
    missing = [r for r in range(world) if r not in table]
    shown = ", ".join(map(str, missing[:10])) + (" ..." if len(missing) > 10 else "")
    return f"{len(missing)} of {world} ranks missing ({shown})"


def _check_args(rank: int, world: int) -> None:
    if world < 1 or not 0 <= rank < world:
        raise RendezvousError(f"rank {rank} is not in 0..{world - 1}")


# -- (a) through a rendezvous address -------------------------------------------
async def via_address(
    rank: int, world: int, address: Endpoint, me: Endpoint, *, key: JobKey, job: str = "", timeout: float = 60.0
) -> list[Endpoint]:
    """The peer table; rank 0 serves ``address``, the others register with it."""
    _check_args(rank, world)
    if rank == 0:
        return await _serve_table(world, address, me, job, timeout, key)
    return await _register(rank, world, address, me, job, timeout, key)


async def _serve_table(
    world: int, address: Endpoint, me: Endpoint, job: str, timeout: float, key: JobKey
) -> list[Endpoint]:
    table: dict[int, Endpoint] = {0: me}
    waiting: list[asyncio.StreamWriter] = []
    complete = asyncio.Event()
    gate = Gate(f"rendezvous {address[0]}:{address[1]}")
    if world == 1:
        return [me]

    async def on_register(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not await gate.admit(reader, writer, key, context=_AUTH_CONTEXT, timeout=min(timeout, 10.0)):
            return  # an outsider learns nothing, not even why
        try:
            record = await asyncio.wait_for(read_record(reader, _MAX_MESSAGE), timeout)
            reason = _registration_problem(record, world, job, table)
        except (WireError, asyncio.TimeoutError, ConnectionError, ValueError, KeyError) as exc:
            record, reason = None, f"bad registration: {exc}"
        if reason is not None or record is None:
            writer.write(_frame(RV_REFUSE, payload=(reason or "no registration").encode()))
            writer.close()
            return
        info = json.loads(record.payload or b"{}")
        table[record.fields[0]] = (str(info["host"]), int(info["port"]))
        waiting.append(writer)
        if len(table) == world:
            complete.set()

    server = await asyncio.start_server(on_register, address[0], address[1])
    try:
        try:
            await asyncio.wait_for(complete.wait(), timeout)
        except asyncio.TimeoutError:
            raise RendezvousError(
                f"rendezvous on {address[0]}:{address[1]} timed out after {timeout:.0f} s: {_missing(table, world)}"
            ) from None
        ordered = [table[r] for r in range(world)]
        message = _frame(RV_TABLE, payload=json.dumps(ordered).encode())
        for writer in waiting:
            writer.write(message)
        await asyncio.gather(*(w.drain() for w in waiting), return_exceptions=True)
        return ordered
    finally:
        server.close()
        for writer in waiting:
            writer.close()


def _registration_problem(record: Record | None, world: int, job: str, table: dict[int, Endpoint]) -> str | None:
    if record is None or record.type_code != RV_REGISTER or len(record.fields) != 2:
        return "expected a registration"
    rank, their_world = record.fields
    info = json.loads(record.payload or b"{}")
    if their_world != world:
        return f"world size {their_world}, rank 0 has {world}"
    if info.get("job", "") != job:
        return "it belongs to another broadcast (object or ETag differ from rank 0's)"
    if not 0 < rank < world:
        return f"rank {rank} is not in 1..{world - 1}"
    if rank in table:
        return f"rank {rank} registered twice"
    return None


async def _register(
    rank: int, world: int, address: Endpoint, me: Endpoint, job: str, timeout: float, key: JobKey
) -> list[Endpoint]:
    deadline = time.monotonic() + timeout
    delay = 0.05
    while True:  # rank 0 may not be listening yet: retry, bounded by the deadline
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(*address), max(0.1, deadline - time.monotonic())
            )
            break
        except (ConnectionError, OSError, asyncio.TimeoutError) as exc:
            if time.monotonic() + delay > deadline:
                raise RendezvousError(
                    f"cannot reach the rendezvous {address[0]}:{address[1]} within {timeout:.0f} s: {exc}"
                ) from None
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)
    try:
        try:
            await authenticate(
                reader,
                writer,
                key,
                initiator=True,
                context=_AUTH_CONTEXT,
                timeout=max(0.1, min(10.0, deadline - time.monotonic())),
            )
        except AuthError as exc:
            raise RendezvousError(
                f"the rendezvous {address[0]}:{address[1]} is not a member of this job (different key?): {exc}"
            ) from None
        payload = json.dumps({"host": me[0], "port": me[1], "job": job}).encode()
        writer.write(_frame(RV_REGISTER, (rank, world), payload))
        await writer.drain()
        try:
            record = await asyncio.wait_for(read_record(reader, _MAX_MESSAGE), max(0.1, deadline - time.monotonic()))
        except asyncio.TimeoutError:
            raise RendezvousError(f"no peer table from the rendezvous within {timeout:.0f} s") from None
        if record is None:
            raise RendezvousError("the rendezvous closed the connection without a table")
        if record.type_code == RV_REFUSE:
            raise RendezvousError(
                f"the rendezvous refused rank {rank}: {(record.payload or b'').decode(errors='replace')}"
            )
        if record.type_code != RV_TABLE:
            raise RendezvousError(f"unexpected message {record.type_code:#x} from the rendezvous")
        table = [(str(h), int(p)) for h, p in json.loads(record.payload or b"[]")]
        if len(table) != world:
            raise RendezvousError(f"table of {len(table)} entries for a world of {world}")
        return table
    finally:
        writer.close()


def _frame(type_code: int, fields: tuple[int, ...] = (), payload: bytes | None = None) -> bytes:
    return encode_record(Record(type_code, fields, payload))


# -- (b) through a shared directory ----------------------------------------------
def via_directory(
    directory: str | os.PathLike[str],
    rank: int,
    world: int,
    me: Endpoint,
    *,
    key: JobKey,
    job: str = "",
    timeout: float = 60.0,
    poll: float = 0.05,
) -> list[Endpoint]:
    """Publish ``me`` as ``DIR/rank-R.json`` and wait until all ``world`` ranks have.

    Entries of another job or world size, or without a valid MAC under ``key``,
    are ignored (a directory may hold stale files of an earlier run, or files
    anyone with write access put there); a fresh directory per run is simplest.
    Other users with write access can plant anything there: an entry is written
    under a random name (``O_EXCL|O_NOFOLLOW``) and renamed into place, and read
    only if it is a regular file of this user's (``O_NOFOLLOW|O_NONBLOCK``), so a
    FIFO, a link or a file of theirs neither blocks nor redirects anything, and
    ``timeout`` holds. A world-writable directory without the sticky bit is refused.
    """
    _check_args(rank, world)
    folder = Path(directory)
    dir_fd = _open_meeting_place(folder)
    try:
        _publish(folder, dir_fd, rank, world, me, job, key)
        deadline = time.monotonic() + timeout
        table: dict[int, Endpoint] = {}
        while True:
            for r in range(world):
                if r not in table:
                    found = _read_entry(dir_fd, f"rank-{r}.json", r, world, job, key)
                    if found is not None:
                        table[r] = found
            if len(table) == world:
                return [table[r] for r in range(world)]
            if time.monotonic() > deadline:
                raise RendezvousError(
                    f"rendezvous in {folder} timed out after {timeout:.0f} s: {_missing(table, world)}"
                )
            time.sleep(poll)
            poll = min(poll * 1.5, 0.5)
    finally:
        os.close(dir_fd)


def _open_meeting_place(folder: Path) -> int:
    """A descriptor of the rendezvous directory (made 0700 if new), whose permissions were checked."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        dir_fd = safefiles.open_directory(folder)
    except OSError as exc:
        raise RendezvousError(f"cannot use --rendezvous-dir {folder}: {exc.strerror or exc}") from None
    info = os.fstat(dir_fd)
    if safefiles.shared_without_sticky(info):
        os.close(dir_fd)
        raise RendezvousError(
            f"--rendezvous-dir {folder} is writable by every user and has no sticky bit "
            f"(mode {info.st_mode & 0o7777:04o}): anyone could replace the entries; use a directory "
            f"of your own (or `chmod +t {folder}`)"
        )
    return dir_fd


def _publish(folder: Path, dir_fd: int, rank: int, world: int, me: Endpoint, job: str, key: JobKey) -> None:
    """Write our entry atomically: to a fresh random name, renamed over ``rank-R.json``."""
    entry = {"rank": rank, "world": world, "host": me[0], "port": me[1], "job": job}
    entry["mac"] = _entry_mac(key, entry)
    temp = safefiles.unpredictable_name(f"rank-{rank}.json")
    try:
        fd = safefiles.create_exclusive(temp, dir_fd=dir_fd)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(json.dumps(entry))
            os.replace(temp, f"rank-{rank}.json", src_dir_fd=dir_fd, dst_dir_fd=dir_fd)  # never half a file
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
            raise
    except OSError as exc:
        raise RendezvousError(
            f"cannot write rank-{rank}.json in --rendezvous-dir {folder}: {exc.strerror or exc}"
        ) from None


def _entry_mac(key: JobKey, entry: dict) -> str:
    fields = {k: entry[k] for k in ("rank", "world", "host", "port", "job")}
    return key.mac(_AUTH_CONTEXT + json.dumps(fields, sort_keys=True).encode()).hex()


def _read_entry(dir_fd: int, name: str, rank: int, world: int, job: str, key: JobKey) -> Endpoint | None:
    if not safefiles.own_regular_file_at(name, dir_fd):
        return None  # absent, or something another user planted: never opened
    try:
        raw = safefiles.read_own_file(name, _MAX_MESSAGE, dir_fd=dir_fd, what="rendezvous entry")
        entry = json.loads(raw) if len(raw) <= _MAX_MESSAGE else None
        if not isinstance(entry, dict) or not isinstance(entry.get("mac"), str):
            return None
        if not hmac.compare_digest(_entry_mac(key, entry), entry["mac"]):
            return None  # not written by a member of this job
        if entry["rank"] != rank or entry["world"] != world or entry["job"] != job:
            return None
        host, port = entry["host"], entry["port"]
        if not isinstance(host, str) or not isinstance(port, int) or not 0 < port < 65536:
            return None
        return host, port
    except (ValueError, KeyError, TypeError, RecursionError):
        return None  # safefiles.UnsafeFile is a ValueError: swapped for something else meanwhile


# -- (c) local processes: the parent picks the ports -----------------------------
def reserve_local_sockets(n: int, host: str = "127.0.0.1", backlog: int = 128) -> list[socket.socket]:
    """``n`` listening sockets on free ports; pass them to the children (``pass_fds``)."""
    socks: list[socket.socket] = []
    try:
        for _ in range(n):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(sock)
            sock.bind((host, 0))
            sock.listen(backlog)
            sock.set_inheritable(True)
    except OSError:
        for sock in socks:
            sock.close()
        raise
    return socks


def local_table(socks: list[socket.socket]) -> list[Endpoint]:
    """The endpoints of sockets from :func:`reserve_local_sockets`, by rank."""
    return [sock.getsockname()[:2] for sock in socks]
