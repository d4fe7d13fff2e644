"""The attack suite: what an attacker on the same network (here: loopback) tried
against the real-run protocols, scripted. Every attack must fail: no code of
theirs runs, runs complete with correct outputs, no honest peer is banned or
lost, no extra storage traffic, nothing waits for a timeout.

Each attack is the one found in issue 14, replayed byte for byte where the
protocol was old (the unauthenticated hellos and frames), plus the obvious
next try against the new one (a well-formed greeting with a forged proof).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import pickle
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from parcomm import lifetime
from parcomm.apps.bcast import manifest as mf
from parcomm.apps.bcast import rendezvous as rv
from parcomm.apps.bcast.proxy import PacingProxy
from parcomm.apps.bcast.s3 import S3Client
from parcomm.apps.bcast.wire import Hello, Record, encode_record
from parcomm.auth import JobKey, authenticate
from parcomm.cli import main
from parcomm.comm import CommError, run_local
from parcomm.comm import socket as sc
from parcomm.comm.sockopts import _token, write_addresses
from ports import free_ports

HERE = Path(__file__).resolve().parent
ME = __name__
ATTACK_WINDOW_S = 60.0  # every attacker loop below stops by then, whatever happens


# --- the attacker's tools --------------------------------------------------------------


class _Exploit:
    """Unpickling this runs a shell command: what a frame carried to get root."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _forged_greeting() -> bytes:
    """A well-formed greeting followed by a proof made with a key of the attacker's own."""
    return b"PCAUTH01" + os.urandom(32) + os.urandom(32)


def _poke(port: int, payload: bytes, linger: float = 0.05) -> bytes:
    """Connect, send ``payload``, read what comes back until closed (bounded), close."""
    got = b""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as s:
            s.sendall(payload)
            s.settimeout(linger + 0.5)
            end = time.monotonic() + linger + 0.5
            while time.monotonic() < end:
                try:
                    chunk = s.recv(65536)
                except (socket.timeout, OSError):
                    break
                if not chunk:
                    break
                got += chunk
    except OSError:
        pass
    return got


class Attacker(threading.Thread):
    """Fires ``payloads(port)`` at every port ``targets()`` names, until stopped
    (at most ATTACK_WINDOW_S), and keeps what the victims answered."""

    def __init__(self, targets, payloads) -> None:
        super().__init__(daemon=True)
        self.targets, self.payloads = targets, payloads
        self.stop = threading.Event()
        self.sent = 0
        self.answers: list[bytes] = []

    def run(self) -> None:
        end = time.monotonic() + ATTACK_WINDOW_S
        while not self.stop.is_set() and time.monotonic() < end:
            for port in self.targets():
                for payload in self.payloads(port):
                    self.answers.append(_poke(port, payload))
                    self.sent += 1
            time.sleep(0.005)

    def __enter__(self) -> "Attacker":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.join(ATTACK_WINDOW_S + 5)


def _socketcomm_exploit(addresses, rank: int, marker: Path) -> bytes:
    """Issue 14's 126-byte RCE against the old SocketComm: a hello with the token
    computed from the public address list, then an eager frame whose pickle runs
    ``touch marker``."""
    size = len(addresses)
    hello = sc._HELLO.pack(sc._MAGIC, (rank - 1) % size, size, _token(addresses))
    body = pickle.dumps(_Exploit(marker))
    return hello + sc._HDR.pack(sc._EAGER, (rank - 1) % size, 0, len(body), len(body), 0) + body


# --- rank programs -----------------------------------------------------------------------


async def ring(comm, n=1000, hold_s=0.0):
    """A ring exchange; ``hold_s`` keeps the ranks busy (and their listeners' owners alive)."""
    await comm.sleep(hold_s)
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    req = comm.irecv(source=left, tag=5)
    await comm.send(comm.rank, dest=right, tag=5, nbytes=n)
    return await comm.wait(req)


# --- 1. remote code execution through SocketComm -----------------------------------------


def test_socketcomm_rce_over_the_network_fails(tmp_path):
    """Before: one connection to a `run socket` rank ran `touch` as root. Now the
    exploit (and a forged greeting) is dropped before a byte is interpreted."""
    n = 3
    ports = free_ports(n)
    addresses = [("127.0.0.1", p) for p in ports]
    addrs = tmp_path / "addresses"
    write_addresses(addrs, addresses)
    marker = tmp_path / "pwned"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        "PARCOMM_JOB_KEY": JobKey.generate().hex(),
    }

    def payloads(port):
        r = ports.index(port)
        return [_socketcomm_exploit(addresses, r, marker), _forged_greeting()]

    procs = []
    with Attacker(lambda: ports[1:], payloads) as attacker:  # rank 0 only connects out
        time.sleep(0.2)
        for r in reversed(range(n)):  # rank 0 last: the listeners are open longest
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "parcomm",
                        "run",
                        "socket",
                        "--rank",
                        str(r),
                        "--addresses",
                        str(addrs),
                        "--program",
                        f"{ME}:ring",
                        "--kwargs",
                        '{"hold_s": 0.3}',
                        "--out",
                        str(tmp_path / f"r{r}.json"),
                        "--timeout",
                        "30s",
                    ],
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
            time.sleep(0.7)
        try:
            errs = [p.communicate(timeout=90)[1] for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.communicate()
    assert attacker.sent > 10  # the attack really ran while the mesh was built
    assert not marker.exists(), "the attacker's pickle was executed"
    assert [p.returncode for p in procs] == [0] * n, errs
    for r in range(n):
        doc = json.loads((tmp_path / f"r{r}.json").read_text())
        assert doc["ok"] and doc["result"] == (r - 1) % n
    refusals = "".join(errs)
    assert "refused a connection" in refusals
    assert env["PARCOMM_JOB_KEY"] not in refusals  # the secret is never printed


def _listening_ports() -> set[int]:
    """Ports listening on 127.0.0.1, as any local user sees them in /proc/net/tcp."""
    found = set()
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            local, _, state = line.split()[1:4]
            addr, port = local.split(":")
            if state == "0A" and addr == "0100007F":
                found.add(int(port, 16))
    return found


def test_run_local_race_from_proc_net_tcp_fails(tmp_path):
    """Before: a local observer reading /proc/net/tcp connected to `run local`'s
    ranks first and ran code in 1 of 8 tries. Now it never can (8 tries)."""
    marker = tmp_path / "pwned"
    before = _listening_ports()
    exploit = pickle.dumps(_Exploit(marker))

    def payloads(port):
        # The attacker does not know the address list here: it tries a hello for each
        # plausible rank (the token is then wrong, but an old rank checked it after
        # reading), and the frame on its own.
        frame = sc._HDR.pack(sc._EAGER, 0, 0, len(exploit), len(exploit), 0) + exploit
        return [frame, _forged_greeting() + frame]

    with Attacker(lambda: sorted(_listening_ports() - before), payloads) as attacker:
        for _ in range(8):
            res = run_local(ring, 4, kwargs={"hold_s": 0.1}, timeout=30)
            assert res.results == [3, 0, 1, 2]
    assert attacker.sent > 0
    assert not marker.exists()


# --- 2. unbounded buffering by a member ---------------------------------------------------


async def _fake_member(key: JobKey, addresses, listen_sock: socket.socket, attack) -> None:
    """Play rank 1 of 2 with the right key: accept rank 0, authenticate, hello, then ``attack(writer)``."""
    done = asyncio.Event()

    async def on_conn(reader, writer):
        await authenticate(reader, writer, key, initiator=False, context=sc._AUTH_CONTEXT)
        await reader.readexactly(sc._HELLO.size)
        writer.write(sc._HELLO.pack(sc._MAGIC, 1, 2, _token(addresses)))
        await attack(writer)
        await writer.drain()
        await asyncio.sleep(2.0)  # keep the connection open: the victim must not wait for it
        writer.close()
        done.set()

    server = await asyncio.start_server(on_conn, sock=listen_sock)
    try:
        await asyncio.wait_for(done.wait(), 20)
    finally:
        server.close()


def _victim_vs_member(attack, **comm_kw) -> tuple[BaseException | None, float]:
    key = JobKey.generate()
    listen = sc._listen("127.0.0.1", 0, None)
    addresses = [("127.0.0.1", free_ports(1)[0]), ("127.0.0.1", listen.getsockname()[1])]

    async def victim():
        comm = sc.SocketComm(0, 2, addresses, key=key, **comm_kw)
        await comm._open()
        try:
            await asyncio.wait_for(comm.recv(source=1, tag=99), 10)  # a tag the attacker never sends
        finally:
            await comm._abort()

    async def scenario():
        t0 = time.monotonic()
        member = asyncio.ensure_future(_fake_member(key, addresses, listen, attack))
        try:
            await victim()
            err = None
        except BaseException as e:  # noqa: BLE001 - the outcome under test
            err = e
        member.cancel()
        await asyncio.gather(member, return_exceptions=True)
        return err, time.monotonic() - t0

    return asyncio.run(scenario())


def test_member_declaring_a_huge_payload_is_refused_before_buffering():
    """Before: a 2^62-byte declared payload made the victim buffer whatever came
    (1.56 GB in 14 s). Now the header is refused, naming the peer, at once."""

    async def attack(writer):
        writer.write(sc._HDR.pack(sc._EAGER, 1, 99, 1 << 62, 1 << 62, 0))
        writer.write(b"\0" * (1 << 20))  # the start of an endless stream

    err, took = _victim_vs_member(attack)
    assert isinstance(err, CommError), err
    assert "rank 1 announced a message of 4611686018427387904 bytes" in str(err)
    assert took < 8.0


def test_member_flooding_unexpected_messages_is_bounded():
    async def attack(writer):
        body = pickle.dumps(b"x" * 1000)
        for _ in range(5000):  # 5 MB of messages nobody receives
            writer.write(sc._HDR.pack(sc._EAGER, 1, 7, 0, len(body), 0) + body)

    err, took = _victim_vs_member(attack, max_unexpected=1 << 20)
    assert isinstance(err, CommError), err
    assert "rank 1 has sent more than 1048576 bytes of messages that rank 0 has not received" in str(err)


# --- 3. and 4. the broadcast's peers and rendezvous -------------------------------------


@pytest.fixture(scope="module")
def s3_object(versitygw, s3_bucket):
    client = S3Client(versitygw.s3_config())
    data = np.random.default_rng(14).bytes(48 * 64 * 1024)
    url = f"s3://{s3_bucket}/attacks/obj.bin"
    client.put_bytes(url, data)
    mf.prepare(url, 64 * 1024, client=client)
    return url, hashlib.sha256(data).hexdigest(), len(data)


def _rendezvous_ports(meet: Path) -> list[int]:
    """What an attacker who can read the shared directory learns: the nodes' ports."""
    ports = []
    for entry in meet.glob("rank-*.json"):
        try:
            ports.append(int(json.loads(entry.read_text())["port"]))
        except (OSError, ValueError, KeyError):
            pass
    return ports


def test_spoofed_and_forged_bcast_peers_change_nothing(versitygw, s3_object, tmp_path):
    """Before: 3 spoofed connections claiming a rank hung every node until
    --timeout; 1 made a run 6-12x slower with 2x S3 traffic; a forged corrupt
    piece impersonating an honest peer got it banned. Now all are dropped at the
    handshake: every output is correct, nobody lost or banned, storage egress 1x."""
    url, digest, size = s3_object
    meet = tmp_path / "meet"
    hello = lambda r: Hello(r, "etag-guess", size, 64 * 1024).encode()  # noqa: E731
    corrupt = encode_record(Record(3, (0,), b"\xff" * 64 * 1024))  # a "piece 0" full of garbage

    def payloads(port):
        spoof = [hello(r) for r in range(4)]  # claim every rank, then close
        return spoof + [hello(1) + corrupt, _forged_greeting() + hello(2) + corrupt]

    # 30 kB/s per GET: each node's 768 KiB share over 2 GETs takes about 13 s, long enough for the
    # attacker's many rounds of pokes even on a loaded machine (at 100 kB/s, ~5 s runs gave it 18).
    with PacingProxy(versitygw.endpoint_url, profile=[(1.0, 3e4)], seed=3) as proxy:
        env = {
            **os.environ,
            **versitygw.environ(),
            "AWS_ENDPOINT_URL_S3": proxy.endpoint_url,
            "PARCOMM_JOB_KEY": JobKey.generate().hex(),
        }
        with Attacker(lambda: _rendezvous_ports(meet), payloads) as attacker:
            t0 = time.monotonic()
            procs = [
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "parcomm",
                        "bcast",
                        url,
                        "--out",
                        str(tmp_path / f"out.{r}"),
                        "--rendezvous-dir",
                        str(meet),
                        "--rank",
                        str(r),
                        "--nodes",
                        "4",
                        "--algo",
                        "steal",
                        "--work-pieces",
                        "3",
                        "--timeout",
                        "120s",
                        "--json",
                    ],
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                )
                for r in range(4)
            ]
            try:
                outs = [p.communicate(timeout=150) for p in procs]
            finally:
                for p in procs:
                    if p.poll() is None:
                        p.kill()
                        p.wait()
            took = time.monotonic() - t0
    assert attacker.sent > 20
    reports = []
    for r, (stdout, stderr) in enumerate(outs):
        assert procs[r].returncode == 0, stderr.decode()[-2000:]
        reports.append(json.loads(stdout)["nodes"][0])
        assert hashlib.sha256((tmp_path / f"out.{r}").read_bytes()).hexdigest() == digest
    # No honest peer banned or counted out (peers that finished and closed first are not lost).
    assert all(rep["peers_dropped"] == [] and rep["peers_lost"] == [] for rep in reports), reports
    assert sum(rep["bad_pieces"] for rep in reports) == 0  # no garbage ever reached a piece check
    assert sum(rep["bytes_from_storage"] for rep in reports) == size  # egress 1x: no refetching
    assert took < 100  # far from any timeout
    # What the attacker heard back: a random greeting (and a proof it cannot use), never a Hello.
    assert all(len(a) in (0, 40, 72) and b"PCBC" not in a for a in attacker.answers)


def test_rendezvous_cannot_be_hijacked():
    """Before: the refusal leaked the job string; an attacker registering ranks
    1..N-1 first received the peer table (and then the whole object), and the real
    rank 1 failed. Now registrations without the key are dropped unanswered."""
    key = JobKey.generate()
    port = free_ports(1)[0]
    address = ("127.0.0.1", port)
    endpoints = [("127.0.0.1", 42000 + r) for r in range(4)]
    registration = lambda r: encode_record(
        Record(
            rv.RV_REGISTER,
            (r, 4),
            json.dumps(  # noqa: E731
                {"host": "6.6.6.6", "port": 666, "job": "guess"}
            ).encode(),
        )
    )

    with Attacker(lambda: [port], lambda _p: [registration(r) for r in (1, 2, 3)] + [_forged_greeting()]) as attacker:

        async def scenario():
            root = asyncio.ensure_future(rv.via_address(0, 4, address, endpoints[0], key=key, job="j", timeout=30))
            await asyncio.sleep(1.0)  # the attacker registers first, many times over
            others = await asyncio.gather(
                *(rv.via_address(r, 4, address, endpoints[r], key=key, job="j", timeout=30) for r in (1, 2, 3))
            )
            return [await root, *others]

        tables = asyncio.run(scenario())
    assert attacker.sent > 10
    assert all(t == endpoints for t in tables)  # the real ranks, nobody else
    for answer in attacker.answers:  # a greeting at most: no table, no refusal text, no job name
        assert len(answer) in (0, 40, 72) and b"6.6.6.6" not in answer and b"42001" not in answer


# =========================================================================================
# Issue 30, the local half: other users of the machine, and a launcher killed by -9.
# Every case is replayed before/after by scripts/replay_attacks.py --local.
# =========================================================================================

NOBODY = 65534  # "another user": files they planted are owned by them


def _as_other_user(path: Path) -> Path:
    os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
    return path


def _shared_dir(tmp_path: Path, name: str = "meet") -> Path:
    """A directory every user may write to, with the sticky bit (as /tmp is)."""
    d = tmp_path / name
    d.mkdir()
    d.chmod(0o1777)
    return d


def _bounded(fn, seconds: float):
    """Run ``fn`` in a thread; (finished, result or exception) after at most ``seconds``
    (a hang of the code under test must fail the test, not block it)."""
    box: list = []

    def run():
        try:
            box.append(fn())
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    return (not t.is_alive()), (box[0] if box else None)


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="plays another user with chown (root only)")


@needs_root
def test_fifo_in_rendezvous_dir_neither_hangs_nor_stops_the_job(tmp_path):
    """Before: another user's FIFO at rank-1.json blocked every reader in open() forever
    (still blocked at 60 s with --timeout 10s). Now it is never opened: the job forms once
    rank 1 publishes over it, and a rank that never comes is a time-out at --timeout."""
    key = JobKey.generate()
    meet = _shared_dir(tmp_path)
    os.mkfifo(meet / "rank-1.json")
    _as_other_user(meet / "rank-1.json")
    os.mkfifo(meet / "rank-2.json")
    _as_other_user(meet / "rank-2.json")
    endpoints = [("127.0.0.1", 43000 + r) for r in range(3)]

    def rank(r, world, timeout):
        return lambda: rv.via_directory(meet, r, world, endpoints[r], key=key, job="j", timeout=timeout)

    results = {}
    threads = []
    for r in (0, 1):  # a world of 2: rank 1 renames its entry over the FIFO
        t = threading.Thread(target=lambda r=r: results.__setitem__(r, _bounded(rank(r, 2, 20), 30)), daemon=True)
        t.start()
        threads.append(t)
        time.sleep(0.5)  # rank 0 polls the FIFO for a while first
    for t in threads:
        t.join(40)
    assert results[0] == (True, endpoints[:2]) and results[1] == (True, endpoints[:2]), results
    # A world of 3: rank 2's name holds a FIFO and rank 2 never comes: --timeout holds.
    t0 = time.monotonic()
    finished, outcome = _bounded(rank(0, 3, 2.0), 30)
    assert finished and isinstance(outcome, rv.RendezvousError), outcome
    assert "timed out after 2 s: 2 of 3 ranks missing (1, 2)" in str(outcome)  # 1 published for a world of 2
    assert time.monotonic() - t0 < 10


@needs_root
def test_symlinks_in_rendezvous_dir_redirect_no_write_of_root(tmp_path):
    """Before: a link at the predictable temp name `.rank-R.json.<pid>.tmp` made a root node
    overwrite the file it pointed to. Now the temp name is random and created O_EXCL|O_NOFOLLOW,
    the rename replaces a link instead of following it, and a linked entry is never read."""
    key = JobKey.generate()
    meet = _shared_dir(tmp_path)
    victim = tmp_path / "shadow"
    victim.write_text("root's precious file\n")
    victim.chmod(0o600)
    for name in (f".rank-0.json.{os.getpid()}.tmp", "rank-0.json"):  # the old temp name, and the entry
        (meet / name).symlink_to(victim)
        _as_other_user(meet / name)
    os.mkfifo(tmp_path / "fifo")
    (meet / "rank-1.json").symlink_to(tmp_path / "fifo")  # a link to a FIFO elsewhere
    _as_other_user(meet / "rank-1.json")
    finished, outcome = _bounded(
        lambda: rv.via_directory(meet, 0, 2, ("127.0.0.1", 43010), key=key, job="j", timeout=2.0), 30
    )
    assert finished and isinstance(outcome, rv.RendezvousError), outcome  # rank 1 never came: time-out
    assert victim.read_text() == "root's precious file\n"
    entry = meet / "rank-0.json"
    assert not entry.is_symlink() and entry.stat().st_uid == os.geteuid()
    assert oct(entry.stat().st_mode & 0o777) == "0o600"
    # our random temp name is gone (renamed); the planted link at the old name was never touched
    assert list(meet.glob(".rank-0.json.*.tmp")) == [meet / f".rank-0.json.{os.getpid()}.tmp"]


def test_world_writable_rendezvous_dir_without_sticky_bit_is_refused(tmp_path):
    """Anyone could rename or delete anyone's entries there: refused in one line (chmod +t fixes it)."""
    meet = tmp_path / "open"
    meet.mkdir()
    meet.chmod(0o777)
    with pytest.raises(rv.RendezvousError) as err:
        rv.via_directory(meet, 0, 1, ("127.0.0.1", 43020), key=JobKey.generate(), timeout=1)
    assert "writable by every user and has no sticky bit" in str(err.value) and "\n" not in str(err.value)
    meet.chmod(0o1777)
    assert rv.via_directory(meet, 0, 1, ("127.0.0.1", 43020), key=JobKey.generate(), timeout=1) == [
        ("127.0.0.1", 43020)
    ]


def _run_socket_with_key(tmp_path: Path, key_file: Path) -> subprocess.CompletedProcess:
    addrs = tmp_path / "addresses"
    write_addresses(addrs, [("127.0.0.1", p) for p in free_ports(2)])
    argv = [sys.executable, "-m", "parcomm", "run", "socket", "--rank", "0", "--addresses", str(addrs)]
    argv += ["--program", "barrier", "--key-file", str(key_file), "--connect-timeout", "2s", "--timeout", "2s"]
    env = {k: v for k, v in os.environ.items() if k != "PARCOMM_JOB_KEY"}
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)


def test_fifo_as_key_file_is_refused_at_once(tmp_path):
    """Before: the key file was opened before the regular-file check, without O_NONBLOCK: a FIFO
    there blocked the rank forever. Now: one line, exit 2, at once."""
    fifo = tmp_path / "job.key"
    os.mkfifo(fifo, 0o600)
    t0 = time.monotonic()
    run = _run_socket_with_key(tmp_path, fifo)
    assert run.returncode == 2, run.stderr
    assert f"key file {fifo} is a FIFO, not a regular file" in run.stderr and "Traceback" not in run.stderr
    assert time.monotonic() - t0 < 30


@needs_root
def test_key_file_of_another_user_is_refused_as_ssh_does(tmp_path):
    """Before: a 0600 key file owned by another user was accepted (root can read it), so that
    user chose the job's key. Now it is refused, naming the owner."""
    keyfile = JobKey.generate().write(tmp_path / "job.key")
    _as_other_user(keyfile)
    run = _run_socket_with_key(tmp_path, keyfile)
    assert run.returncode == 2, run.stderr
    assert f"key file {keyfile} is owned by uid {NOBODY}, not by this user" in run.stderr
    assert keyfile.read_text().strip() not in run.stderr  # the secret is never printed
    link = tmp_path / "link.key"
    link.symlink_to(JobKey.generate().write(tmp_path / "mine.key"))
    assert "is a symbolic link" in _run_socket_with_key(tmp_path, link).stderr


# --- the launcher killed by -9 ---------------------------------------------------------------


async def hold(comm, seconds=60.0):
    """A rank that keeps running (what a killed launcher's ranks used to go on doing)."""
    await asyncio.sleep(seconds)
    return comm.rank


def _tagged(tag: str) -> list[int]:
    """Pids of processes whose environment carries PARCOMM_TEST_TAG=tag (started by this test)."""
    found = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/environ", "rb") as f:
                    if f"PARCOMM_TEST_TAG={tag}".encode() in f.read().split(b"\0"):
                        found.append(int(d))
            except OSError:
                pass
    return found


def _kill_launcher_and_watch(argv, env, ready, tag: str) -> tuple[int, list[int]]:
    """Start ``argv``, wait until ``ready()``, kill -9 the launcher; (processes it had started,
    processes of its left 5 s later). Whatever is left is then ended, by pid."""
    launcher = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        while not ready() and time.monotonic() < deadline and launcher.poll() is None:
            time.sleep(0.1)
        assert launcher.poll() is None, "the launcher ended before it could be killed"
        started = len(_tagged(tag)) - 1
        launcher.kill()
        launcher.wait()
        end = time.monotonic() + 5
        while _tagged(tag) and time.monotonic() < end:
            time.sleep(0.1)
        return started, _tagged(tag)
    finally:
        for pid in _tagged(tag):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)


def test_run_local_ranks_die_with_a_killed_launcher_and_its_temp_dir_is_swept(tmp_path):
    """Before: after kill -9 of `parcomm run local`, its ranks (and multiprocessing's fork server)
    ran on, and its pymp-* directory stayed. Now they die with it, and the next run sweeps the dir."""
    tag = os.urandom(8).hex()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    env["PARCOMM_TEST_TAG"] = tag
    argv = [sys.executable, "-m", "parcomm", "run", "local", "-n", "3", "--program", f"{ME}:hold", "--timeout", "90s"]
    started, left = _kill_launcher_and_watch(argv, env, lambda: len(_tagged(tag)) >= 5, tag)
    assert started >= 4  # the fork server, its resource tracker and the ranks
    assert left == [], f"{len(left)} processes outlived their launcher"
    dead = [p for p in Path(tempfile.gettempdir()).glob("pymp-*") if lifetime._mp_owner_dead(str(p))]
    assert dead, "the killed launcher's pymp-* directory was not marked"
    res = run_local(ring, 2, timeout=30)  # the next run
    assert res.results == [1, 0]
    assert not any(p.exists() for p in dead)


def _owner_dead(name: str) -> bool:
    """For a ``parcomm-<kind>-<pid>-<start>-XXXX`` directory: is the process that made it gone?"""
    _, _, pid, start, _ = name.split("-", 4)
    return not lifetime.alive(lifetime.Owner(int(pid), int(start)))


def test_bcast_local_nodes_die_with_a_killed_launcher(versitygw, s3_object, tmp_path):
    """Before: `bcast --local` nodes went on downloading for minutes after kill -9 of their
    launcher, and its parcomm-bcast-* status directory stayed. Now they die with it (the kernel
    kills them: PR_SET_PDEATHSIG), and the next run sweeps the directory."""
    url, _digest, _size = s3_object
    tag = os.urandom(8).hex()
    with PacingProxy(versitygw.endpoint_url, profile=[(1.0, 3e4)], seed=3) as proxy:  # 30 kB/s: a minute to go
        env = {**os.environ, **versitygw.environ(), "AWS_ENDPOINT_URL_S3": proxy.endpoint_url}
        env["PARCOMM_TEST_TAG"] = tag
        argv = [sys.executable, "-m", "parcomm", "bcast", url, "--local", "3", "--out", str(tmp_path / "o.{rank}")]
        argv += ["--timeout", "120s"]
        started, left = _kill_launcher_and_watch(argv, env, lambda: len(_tagged(tag)) >= 4, tag)
    assert started == 3
    assert left == [], f"{len(left)} nodes outlived their launcher"
    mine = [p for p in Path(tempfile.gettempdir()).glob("parcomm-bcast-*-*-*") if _owner_dead(p.name)]
    assert mine, "the killed launcher's status directory is not where the sweep looks"
    lifetime.sweep_temp_dirs()  # what the next run does first
    assert not any(p.exists() for p in mine)


def test_mine_gen_killed_leaves_a_partial_the_next_run_removes(tmp_path):
    """Before: kill -9 of `mine gen` left OUT.part (a predictable name, opened following links).
    Now the partial has a fresh name (O_EXCL|O_NOFOLLOW) and the next `mine gen OUT` removes it."""
    out = tmp_path / "data.qtx"
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    (tmp_path / "data.qtx.part").symlink_to(victim)  # the old name, planted
    gen = subprocess.Popen([sys.executable, "-m", "parcomm", "mine", "gen", str(out), "-D", "20M"])
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob(".data.qtx.parcomm-*.part")) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
    finally:
        gen.kill()
        gen.wait()
    partial = list(tmp_path.glob(".data.qtx.parcomm-*.part"))
    assert len(partial) == 1 and not out.exists()
    assert victim.read_text() == "untouched"
    assert main(["mine", "gen", str(out), "-D", "100"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.qtx", "data.qtx.part", "victim"]
