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

Only members take part: a registration is the connecting rank's claim in the
job's handshake (:mod:`parcomm.auth`), read only once it proved the key, and
the table comes back as a tagged frame keyed from that handshake; a directory
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
from ...auth import (
    ATTEMPT_TIMEOUT_S,
    DEFAULT_TIMEOUT_S,
    AuthError,
    FrameAuth,
    Gate,
    JobKey,
    PeerRefused,
    Refusal,
    authenticate,
)
from ...auth.quiet import AsyncAcceptor
from .wire import Record, WireError, read_record, write_record

Endpoint = tuple[str, int]

RV_REGISTER = 0xFF01  # before version 2: a registration frame (now the handshake carries it)
RV_TABLE = 0xFF02  # payload JSON [[host, port], ...] by rank
_MAX_MESSAGE = 1 << 20
#: Bound into the handshake proofs and entry MACs: worthless for any other protocol.
_AUTH_CONTEXT = b"parcomm-bcast-rendezvous-2"


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


# A registration is the initiator's hello in the handshake (JSON {"rank", "world", "host",
# "port", "job"}) and it expects to reach rank 0; rank 0 accepts or refuses it inside the
# handshake, then sends the table as one tagged frame. So a registration is read only from a
# member, and a refusal (with its reason) goes only to a member.
_EXPECT_ROOT = b"rendezvous rank 0"


async def _serve_table(
    world: int, address: Endpoint, me: Endpoint, job: str, timeout: float, key: JobKey
) -> list[Endpoint]:
    table: dict[int, Endpoint] = {0: me}
    waiting: dict[int, tuple[asyncio.StreamWriter, FrameAuth]] = {}
    complete = asyncio.Event()
    gate = Gate(f"rendezvous {address[0]}:{address[1]}")
    if world == 1:
        return [me]

    def judge(hello: bytes, expect: bytes) -> bytes:
        if expect != _EXPECT_ROOT:
            raise Refusal("this is the rendezvous of a broadcast, not what the peer expected")
        try:
            info = json.loads(hello)
            rank, their_world = int(info["rank"]), int(info["world"])
            endpoint = (str(info["host"]), int(info["port"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise Refusal(f"bad registration: {exc}") from None
        reason = _registration_problem(rank, their_world, str(info.get("job", "")), world, job)
        if reason is not None:
            raise Refusal(reason)
        return json.dumps({"rank": rank, "endpoint": endpoint}).encode()

    async def on_register(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        admitted = await gate.admit(
            reader, writer, key, context=_AUTH_CONTEXT, accept=judge, timeout=min(timeout, DEFAULT_TIMEOUT_S)
        )
        if admitted is None:
            return  # an outsider learns nothing, not even why; a refused member was told why
        hello, frames = admitted
        info = json.loads(hello)
        rank = int(info["rank"])
        old = waiting.pop(rank, None)
        if old is not None:  # the same member registering again (its first attempt timed out): the newest wins
            old[0].transport.abort()
        table[rank] = (str(info["host"]), int(info["port"]))
        waiting[rank] = (writer, frames)
        if len(table) == world:
            complete.set()

    try:
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        listener = socket.create_server(address, family=family, backlog=1024)
    except OSError as exc:
        raise RendezvousError(f"cannot listen on {address[0]}:{address[1]}: {exc.strerror or exc}") from None
    server = AsyncAcceptor(listener, on_register)  # quiet connections held cheaply: see auth.quiet
    try:
        try:
            await asyncio.wait_for(complete.wait(), timeout)
        except asyncio.TimeoutError:
            raise RendezvousError(
                f"rendezvous on {address[0]}:{address[1]} timed out after {timeout:.0f} s: {_missing(table, world)}"
            ) from None
        ordered = [table[r] for r in range(world)]
        for writer, frames in waiting.values():
            write_record(writer, Record(RV_TABLE, payload=json.dumps(ordered).encode()), frames)
        await asyncio.gather(*(w.drain() for w, _ in waiting.values()), return_exceptions=True)
        return ordered
    finally:
        server.close()
        gate.close()
        for writer, _ in waiting.values():
            writer.close()


def _registration_problem(rank: int, their_world: int, their_job: str, world: int, job: str) -> str | None:
    if their_world != world:
        return f"world size {their_world}, rank 0 has {world}"
    if their_job != job:
        return "it belongs to another broadcast (object or ETag differ from rank 0's)"
    if not 0 < rank < world:
        return f"rank {rank} is not in 1..{world - 1}"
    return None


async def _register(
    rank: int, world: int, address: Endpoint, me: Endpoint, job: str, timeout: float, key: JobKey
) -> list[Endpoint]:
    """Register with rank 0 and wait for the table. Connecting and the handshake are
    retried with back-off until the deadline (rank 0 may not be listening yet, or may
    be shedding a flood); the error says what the last attempt met."""
    deadline = time.monotonic() + timeout
    registration = json.dumps({"rank": rank, "world": world, "host": me[0], "port": me[1], "job": job}).encode()
    delay, attempts, last = 0.01, 0, "no attempt"
    where = f"{address[0]}:{address[1]}"
    while True:
        attempts += 1
        writer = None
        try:
            left = max(0.01, deadline - time.monotonic())
            reader, writer = await asyncio.wait_for(asyncio.open_connection(*address), min(left, ATTEMPT_TIMEOUT_S))
            _, frames = await authenticate(
                reader,
                writer,
                key,
                initiator=True,
                context=_AUTH_CONTEXT,
                hello=registration,
                expect=_EXPECT_ROOT,
                timeout=max(0.01, min(ATTEMPT_TIMEOUT_S, deadline - time.monotonic())),
            )
            break
        except PeerRefused as exc:
            if writer is not None:
                writer.close()
            raise RendezvousError(f"the rendezvous {where} refused rank {rank}: {exc}") from None
        except AuthError as exc:
            last = f"no handshake: {exc}"
        except (ConnectionError, OSError, asyncio.TimeoutError) as exc:
            last = (
                f"cannot connect: {exc.strerror if isinstance(exc, OSError) and exc.strerror else exc or 'timed out'}"
            )
        if writer is not None:
            writer.transport.abort()
        if time.monotonic() + delay > deadline:
            raise RendezvousError(
                f"rank {rank} could not register with the rendezvous {where} within {timeout:g} s "
                f"({attempts} attempts; last: {last})"
            )
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.5)
    try:
        try:
            record = await asyncio.wait_for(
                read_record(reader, _MAX_MESSAGE, frames), max(0.1, deadline - time.monotonic())
            )
        except asyncio.TimeoutError:
            raise RendezvousError(f"no peer table from the rendezvous within {timeout:.0f} s") from None
        except (WireError, ConnectionError, OSError) as exc:
            raise RendezvousError(f"the connection to the rendezvous failed before the table: {exc}") from None
        if record is None:
            raise RendezvousError("the rendezvous closed the connection without a table")
        if record.type_code != RV_TABLE:
            raise RendezvousError(f"unexpected message {record.type_code:#x} from the rendezvous")
        table = [(str(h), int(p)) for h, p in json.loads(record.payload or b"[]")]
        if len(table) != world:
            raise RendezvousError(f"table of {len(table)} entries for a world of {world}")
        return table
    finally:
        writer.close()


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
