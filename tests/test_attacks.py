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
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from flood import Flood, FloodProcess
from parcomm import lifetime
from parcomm.apps.bcast import manifest as mf
from parcomm.apps.bcast import rendezvous as rv
from parcomm.apps.bcast.proxy import PacingProxy
from parcomm.apps.bcast.s3 import S3Client
from parcomm.apps.bcast.wire import Hello, Record, encode_record
from parcomm.auth import Handshake, JobKey, authenticate
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


def _greeting_at_most(answer: bytes) -> bool:
    """All a listener tells someone without the key: its greeting (magic and nonce) and/or
    the 3-byte "shed" notice when it drops the connection; never a proof or a hello."""
    shed = Handshake.shed_message()
    if answer == shed:  # shed before its handshake thread had sent the greeting
        return True
    return (
        answer[:8] in (b"", b"PCAUTH02"[: len(answer)])
        and len(answer) <= 40 + len(shed)
        and (answer[40:] == shed[: len(answer) - 40])
    )


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
        _, frames = await authenticate(
            reader,
            writer,
            key,
            initiator=False,
            context=sc._AUTH_CONTEXT,
            accept=lambda hello, expect: sc._HELLO.pack(sc._MAGIC, 1, 2, _token(addresses)),
        )
        await attack(writer, frames)
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

    async def attack(writer, frames):
        writer.write(sc._HDR.pack(sc._EAGER, 1, 99, 1 << 62, 1 << 62, 0))
        writer.write(b"\0" * (1 << 20))  # the start of an endless stream

    err, took = _victim_vs_member(attack)
    assert isinstance(err, CommError), err
    assert "rank 1 announced a message of 4611686018427387904 bytes" in str(err)
    assert took < 8.0


def test_member_flooding_unexpected_messages_is_bounded():
    async def attack(writer, frames):
        body = pickle.dumps(b"x" * 1000)
        for _ in range(5000):  # 5 MB of messages nobody receives
            hdr = sc._HDR.pack(sc._EAGER, 1, 7, 0, len(body), 0)
            writer.write(hdr + body + frames.seal(hdr, body))

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
    # What the attacker heard back: a random greeting (and at most the 3-byte "shed" notice when
    # the listener closed), never a proof (the responder proves only to a member) nor a Hello.
    assert all(_greeting_at_most(a) for a in attacker.answers), sorted({(len(a), a[40:]) for a in attacker.answers})
    assert not any(b"PCBC" in a for a in attacker.answers)


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
    for answer in attacker.answers:  # a greeting at most: no proof, no table, no refusal text, no job name
        assert _greeting_at_most(answer)
        assert b"6.6.6.6" not in answer and b"42001" not in answer


# =========================================================================================
# Issue 30, the network half: a relay with port squatting, frames injected into a genuine
# connection, and a flood of silent connections. (Local-user attacks are elsewhere in this file.)
# =========================================================================================


class _Relay(threading.Thread):
    """Squats ``port`` and relays every connection made to it, byte for byte, to
    ``upstream`` (a genuine member's listener); whatever the handshake does, it then
    writes ``inject`` into both directions. Bounded by ATTACK_WINDOW_S."""

    def __init__(self, port: int, upstream: int, inject: bytes) -> None:
        super().__init__(daemon=True)
        self.listener = socket.create_server(("127.0.0.1", port))
        self.listener.settimeout(0.1)
        self.upstream, self.inject = upstream, inject
        self.stop = threading.Event()
        self.relayed = 0
        self.injected = 0

    def run(self) -> None:
        end = time.monotonic() + ATTACK_WINDOW_S
        while not self.stop.is_set() and time.monotonic() < end:
            try:
                down, _ = self.listener.accept()
            except OSError:
                continue
            try:
                up = socket.create_connection(("127.0.0.1", self.upstream), timeout=1.0)
            except OSError:
                down.close()
                continue
            self.relayed += 1
            for a, b in ((down, up), (up, down)):
                threading.Thread(target=self._pipe, args=(a, b, end), daemon=True).start()
        self.listener.close()

    def _pipe(self, src: socket.socket, dst: socket.socket, end: float) -> None:
        src.settimeout(0.5)
        try:
            while time.monotonic() < end and not self.stop.is_set():
                try:
                    data = src.recv(65536)
                except socket.timeout:
                    continue
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        try:  # the handshake is over, one way or the other: now the payload
            dst.sendall(self.inject)
            self.injected += 1
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self) -> "_Relay":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.join(ATTACK_WINDOW_S + 5)


def _pickle_frames(marker: Path, size: int) -> bytes:
    """A start-barrier pickle as an old hello and frame, and as a new frame with a made-up tag."""
    body = pickle.dumps(_Exploit(marker))
    sync_tag = (1 << 24) + 0xFFFFF
    old = struct.pack("!8sIIQ", b"parcomm1", 2, size, 0) + sc._HDR.pack(sc._EAGER, 2, sync_tag, len(body), len(body), 0)
    new = sc._HDR.pack(sc._EAGER, 2, sync_tag, len(body), len(body), 0) + body + os.urandom(16)
    return old + body + new


def test_relay_with_port_squatting_gets_no_code_run(tmp_path):
    """Issue 30 #1. Before: an attacker without the key bound rank 2's port, relayed each
    member's handshake to rank 1's genuine listener, answered the hello as rank 2 and sent
    a pickle: both ranks ran it. Now each member's claim names the rank it expects, rank 1
    refuses (authenticated) to be taken for rank 2, and both members stop with that reason:
    nothing unpickled, no traceback."""
    ports = free_ports(3)
    addresses = [("127.0.0.1", p) for p in ports]
    addrs = tmp_path / "addresses"
    write_addresses(addrs, addresses)
    marker = tmp_path / "pwned"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        "PARCOMM_JOB_KEY": JobKey.generate().hex(),
    }
    with _Relay(ports[2], ports[1], _pickle_frames(marker, 3)) as relay:
        procs = []
        for r in (1, 0):  # rank 1's listener first: the relay's upstream
            cmd = [sys.executable, "-m", "parcomm", "run", "socket", "--rank", str(r), "--addresses", str(addrs)]
            cmd += ["--program", f"{ME}:ring", "--timeout", "20s", "--connect-timeout", "10s"]
            procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
            time.sleep(0.5)
        try:
            errs = [p.communicate(timeout=60)[1] for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.communicate()
    assert relay.relayed >= 2 and relay.injected >= 1  # both members were relayed, the pickle sent
    assert not marker.exists(), "the attacker's pickle was executed"
    assert all(p.returncode not in (0, None) for p in procs)  # rank 2 never joined: the job cannot run
    for err in errs:
        assert "Traceback" not in err, err
    # Rank 1, relayed to its own listener, is told what happened by it (authenticated); rank 0
    # is told the same if rank 1 still ran when it was relayed, else that rank 2 never answered.
    assert "this is rank 1, not rank 2" in errs[0], errs[0]
    assert "this is rank 1, not rank 2" in errs[1] or "could not connect to rank 2" in errs[1], errs[1]


class _SplicingRelay:
    """In the path of a genuine rank 0 -> rank 1 connection: forwards the handshake
    untouched, then does ``mode`` to rank 0's frames (inject, replay, reorder, tamper)."""

    def __init__(self, upstream: int, mode: str, marker: Path) -> None:
        self.upstream, self.mode, self.marker = upstream, mode, marker
        self.frames_seen = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_r, up_w = await asyncio.open_connection("127.0.0.1", self.upstream)
        back = asyncio.ensure_future(self._pipe(up_r, writer))
        try:
            up_w.write(await reader.readexactly(40))  # greeting
            head = await reader.readexactly(4)  # claim: lengths, hello, expect, proof
            n_hello, n_expect = struct.unpack("!HH", head)
            up_w.write(head + await reader.readexactly(n_hello + n_expect + 32))
            frames = [await self._frame(reader) for _ in range(2)]
            self.frames_seen = len(frames)
            body = pickle.dumps(_Exploit(self.marker))
            forged = sc._HDRC.pack(sc._EAGER, 0, 0, 0, 5, len(body), len(body), 0) + body + os.urandom(16)
            tampered = bytearray(frames[0])
            tampered[-17] ^= 0x01  # the last payload byte
            out = {
                "none": frames,
                "inject": [forged, *frames],
                "replay": [frames[0], frames[0], frames[1]],
                "reorder": [frames[1], frames[0]],
                "tamper": [bytes(tampered), frames[1]],
            }[self.mode]
            for f in out:
                up_w.write(f)
            await up_w.drain()
            while data := await reader.read(65536):
                up_w.write(data)
                await up_w.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            await asyncio.sleep(0.5)
            back.cancel()
            up_w.close()
            writer.close()

    @staticmethod
    async def _frame(reader: asyncio.StreamReader) -> bytes:
        hdr = await reader.readexactly(sc._HDRC.size)
        kind, _, _, _, _, nbytes, plen, _ = sc._HDRC.unpack(hdr)
        n = max(nbytes, plen) if kind in (sc._EAGER, sc._DATA) else 0
        return hdr + await reader.readexactly(n + 16)

    @staticmethod
    async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        try:
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass


async def _two_messages_through(mode: str, marker: Path):
    """Rank 0 sends two messages to rank 1 over a connection a relay splices; what rank 1 got."""
    key = JobKey.generate()
    listen = sc._listen("127.0.0.1", 0, None)
    relay = _SplicingRelay(listen.getsockname()[1], mode, marker)
    server = await asyncio.start_server(relay.serve, "127.0.0.1", 0)
    addresses = [("127.0.0.1", free_ports(1)[0]), ("127.0.0.1", server.sockets[0].getsockname()[1])]
    a = sc.SocketComm(0, 2, addresses, key=key, connect_timeout=10)
    b = sc.SocketComm(1, 2, addresses, key=key, connect_timeout=10)
    try:
        await asyncio.gather(a._open(), b._open(listener=listen))
        await a.send("first", dest=1, tag=5)
        await a.send("second", dest=1, tag=6)
        try:
            got = [await asyncio.wait_for(b.recv(source=0, tag=t), 10) for t in (5, 6)]
        except CommError as e:
            got = e
        return got, relay.frames_seen
    finally:
        await asyncio.gather(a._abort(), b._abort())
        server.close()


@pytest.mark.parametrize("mode", ["inject", "replay", "reorder", "tamper"])
def test_frames_injected_or_replayed_after_a_genuine_handshake_are_refused(tmp_path, mode):
    """Issue 30 #1. A relay that passes a genuine handshake along cannot add, repeat,
    reorder or change a frame afterwards: every frame's tag (per direction, sequence
    numbered) fails, the receiver drops the connection, and nothing is unpickled."""
    marker = tmp_path / "pwned"
    got, seen = asyncio.run(_two_messages_through(mode, marker))
    assert seen == 2  # the relay really held rank 0's frames
    assert isinstance(got, CommError), got
    assert "failed authentication" in str(got) and "not from rank 0" in str(got)
    assert not marker.exists()


def test_a_transparent_relay_changes_nothing(tmp_path):
    """The control for the test above: the same relay forwarding frames unchanged."""
    got, seen = asyncio.run(_two_messages_through("none", tmp_path / "pwned"))
    assert seen == 2 and got == ["first", "second"]


# --- issue 30, findings 4 and 5: the partial output file and a storage that drips -------------
# (bcastfast) A planted partial must never become the output; --timeout bounds a node whatever
# the storage does, and the partial goes with it.

NOBODY = 65534


def _old_partial_name(target: Path) -> Path:
    """The name the partial had before: host-pid-starttime, all knowable from outside."""
    from parcomm.apps.bcast.output import _host, _start_time

    pid = os.getpid()
    return target.with_name(f".{target.name}.parcomm-partial-{_host()}-{pid}-{_start_time(pid) or 0}")


def test_a_planted_partial_never_becomes_the_output(tmp_path):
    """Before: a file another user planted at the partial's predictable name was opened
    (no O_EXCL) and renamed into place: the 'verified' output stayed the planter's, mode
    0666, editable afterwards. Now the partial is created afresh (O_EXCL|O_NOFOLLOW) at a
    name with 128 random bits, mode 0600 until it is published."""
    from parcomm.apps.bcast.output import OutputWriter

    data = os.urandom(200_000)
    target = tmp_path / "model.bin"
    planted = _old_partial_name(target)
    planted.write_bytes(b"attacker")
    os.chown(planted, NOBODY, NOBODY)
    os.chmod(planted, 0o666)
    with OutputWriter(target, len(data), hashlib.sha256(data).digest()) as out:
        assert out.temp_path != planted
        st = out.temp_path.lstat()
        assert st.st_uid == os.geteuid() and st.st_mode & 0o777 == 0o600  # nobody else may read or write it yet
        out.write_piece(0, data)
        out.commit()
    st = target.stat()
    assert target.read_bytes() == data
    assert st.st_uid == os.geteuid() and st.st_ino != planted.stat().st_ino
    assert st.st_mode & 0o022 == 0  # published as a new file is, under the umask: not world-writable
    assert planted.read_bytes() == b"attacker"  # not ours: left alone


def test_a_partial_name_guessed_in_advance_is_not_followed_or_reused(tmp_path, monkeypatch):
    """Even an attacker who guessed the random part (here: told it) gains nothing: a symlink
    or a file at that name makes the creation fail (O_EXCL|O_NOFOLLOW) and the writer picks
    another name; the symlink's target is untouched."""
    from parcomm.apps.bcast import output

    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    guesses = iter(["00" * 16, "11" * 16])
    monkeypatch.setattr(output, "_random_token", lambda: next(guesses, None) or os.urandom(16).hex())
    target = tmp_path / "model.bin"
    host_pid = output.partial_path(target, token="00" * 16)
    os.symlink(victim, host_pid)
    planted = output.partial_path(target, token="11" * 16)
    planted.write_bytes(b"attacker")
    data = b"x" * 10_000
    with output.OutputWriter(target, len(data), hashlib.sha256(data).digest()) as out:
        assert out.temp_path not in (host_pid, planted)
        out.write_piece(0, data)
        out.commit()
    assert target.read_bytes() == data and victim.read_bytes() == b"precious"
    assert planted.read_bytes() == b"attacker" and host_pid.is_symlink()


def test_stale_partials_swept_are_only_ours_and_dead(tmp_path):
    """The next run sweeps partials whose owner process is dead and that belong to us;
    another user's (even with a dead pid in its name) and a live process's stay."""
    from parcomm.apps.bcast.output import partial_path, remove_stale_partials

    target = tmp_path / "model.bin"
    dead_ours = partial_path(target, pid=2**22 + 21)
    dead_ours.write_bytes(b"d")
    dead_theirs = partial_path(target, pid=2**22 + 22)
    dead_theirs.write_bytes(b"t")
    os.chown(dead_theirs, NOBODY, NOBODY)
    live = partial_path(target)
    live.write_bytes(b"l")
    assert remove_stale_partials(target) == [dead_ours]
    assert dead_theirs.exists() and live.exists()


class _SilentStorage(threading.Thread):
    """An 'S3 endpoint' that accepts connections and never answers (bounded: stops by itself)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        self.stop_at = time.monotonic() + ATTACK_WINDOW_S

    def run(self) -> None:
        while time.monotonic() < self.stop_at and len(self.held) < 100:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.held.append(conn)

    def close(self) -> None:
        self.stop_at = 0.0
        self.join(timeout=2.0)
        for conn in self.held:
            conn.close()
        self.sock.close()


def _bcast_cli(url: str, out: Path, endpoint: str, env: dict, *extra: str) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-m", "parcomm", "bcast", url, "--out", str(out), "--endpoint-url", endpoint, *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=ATTACK_WINDOW_S,
    )
    return run, time.monotonic() - started


@pytest.mark.parametrize("local", ["1", "2"])
def test_slow_drip_storage_is_bounded_by_timeout_and_leaves_no_partial(versitygw, s3_object, tmp_path, local):
    """Before: with --local 1 a GET body dripping a few KB/s kept the node running past
    --timeout (still at 60 s with --timeout 20s) and its partial stayed. Now every request
    is held to the job's deadline: exit 1 soon after it, naming the timeout, nothing left."""
    url, _digest, size = s3_object
    env = {**os.environ, **versitygw.environ()}
    # 2 KB/s: the hash list (~3.5 KB) arrives, then each 64 KiB piece takes ~30 s, the object ~25 min.
    with PacingProxy(versitygw.endpoint_url, profile=[(1.0, 2_000.0)]) as proxy:
        run, took = _bcast_cli(url, tmp_path / "out.bin", proxy.endpoint_url, env, "--local", local, "--timeout", "6s")
        served = proxy.snapshot().bytes_served
    assert run.returncode == 1, run.stderr[-2000:]
    assert "Traceback" not in run.stderr and "6 s" in run.stderr, run.stderr[-2000:]
    assert took < 6 + 8, took  # the deadline, start-up and the shutdown; not a piece's 30 s
    assert served < size // 4
    assert list(tmp_path.iterdir()) == []


def test_silent_storage_is_bounded_by_timeout(tmp_path):
    """A server that accepts and never answers: the HEAD is held to --timeout too (before:
    30 s per read, retried for up to 300 s)."""
    silent = _SilentStorage()
    silent.start()
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "us-east-1"}
    try:
        run, took = _bcast_cli(
            "s3://b/o.bin",
            tmp_path / "out.bin",
            f"http://127.0.0.1:{silent.port}",
            env,
            "--local",
            "1",
            "--timeout",
            "3s",
        )
    finally:
        silent.close()
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr[-2000:]
    assert "3 s" in run.stderr, run.stderr
    assert took < 3 + 6, took
    assert list(tmp_path.iterdir()) == []


def _listening(port: int, timeout: float = 20.0) -> bool:
    """Wait until something listens on 127.0.0.1:``port`` (bounded)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if port in _listening_ports():
            return True
        time.sleep(0.02)
    return False


def test_run_socket_forms_under_a_1000_connection_flood(tmp_path):
    """Issue 30 #2. Before: 600 silent connections per listener (the gate held 256 for
    10 s) made a 2-rank `run socket` job fail after 30 s, and a rank printed ~210
    CancelledError tracebacks. Now pending handshakes are shed least-advanced first
    (silent ones before a member's), so the job forms, and nothing is printed but the
    one-line log of sheds."""
    ports = free_ports(2)
    addrs = tmp_path / "addresses"
    write_addresses(addrs, [("127.0.0.1", p) for p in ports])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        "PARCOMM_JOB_KEY": JobKey.generate().hex(),
    }

    def rank(r: int) -> subprocess.Popen:
        cmd = [sys.executable, "-m", "parcomm", "run", "socket", "--rank", str(r), "--addresses", str(addrs)]
        cmd += ["--program", f"{ME}:ring", "--out", str(tmp_path / f"r{r}.json"), "--timeout", "60s"]
        return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    procs = [rank(1)]
    try:
        assert _listening(ports[1])
        with Flood(lambda: [("127.0.0.1", ports[1])], 1000) as flood:
            flood.ready.wait(10)
            procs.append(rank(0))
            errs = [p.communicate(timeout=90)[1] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    assert flood.opened >= 1000 and flood.peak_held[("127.0.0.1", ports[1])] >= 1000
    assert [p.returncode for p in procs] == [0, 0], errs
    assert [json.loads((tmp_path / f"r{r}.json").read_text())["result"] for r in (0, 1)] == [1, 0]
    for err in errs:
        assert "Traceback" not in err and "CancelledError" not in err, err[-3000:]


def test_rendezvous_forms_under_a_1000_connection_flood():
    """Issue 30 #2. Before: a registering rank failed in 0.01 s with "different key?" and
    rank 0 timed out. Now every rank retries until its deadline and the table forms."""
    key = JobKey.generate()
    port = free_ports(1)[0]
    address = ("127.0.0.1", port)
    endpoints = [("127.0.0.1", 43000 + r) for r in range(4)]

    async def scenario(flood: FloodProcess):
        root = asyncio.ensure_future(rv.via_address(0, 4, address, endpoints[0], key=key, job="j", timeout=60))
        assert await asyncio.get_running_loop().run_in_executor(None, flood.wait_ready)
        others = await asyncio.gather(
            *(rv.via_address(r, 4, address, endpoints[r], key=key, job="j", timeout=60) for r in (1, 2, 3))
        )
        return [await root, *others]

    with FloodProcess([port], 1000) as flood:
        tables = asyncio.run(scenario(flood))
    assert flood.stats["peak_held"][f"127.0.0.1:{port}"] >= 1000
    assert all(t == endpoints for t in tables)


def test_bcast_local_completes_under_a_1000_connection_flood(versitygw, s3_object, tmp_path):
    """Issue 30 #2. Before: `bcast --local 4` took 80 s instead of 0.35 s at 2x S3 egress
    under 600 silent connections per node. Now it completes, every output correct, egress 1x."""
    url, digest, size = s3_object
    # S3 paced to 100 kB/s per GET, so the run lasts the few seconds the flood needs to take hold.
    cmd = [sys.executable, "-m", "parcomm", "bcast", url, "--local", "4", "--out", str(tmp_path / "out")]
    cmd += ["--timeout", "120s", "--json"]
    with PacingProxy(versitygw.endpoint_url, profile=[(1.0, 1e5)], seed=3) as proxy:
        env = {
            **os.environ,
            **versitygw.environ(),
            "AWS_ENDPOINT_URL_S3": proxy.endpoint_url,
            "PARCOMM_JOB_KEY": JobKey.generate().hex(),
        }
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        with FloodProcess(pid=proc.pid) as flood:  # the nodes' listeners, nobody else's
            try:
                out, err = proc.communicate(timeout=150)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.communicate()
    assert proc.returncode == 0, (out.decode()[-2000:], err.decode()[-3000:])
    assert flood.stats["opened"] >= 4000 and len(flood.stats["peak_held"]) == 4  # 1,000 at each node
    assert all(held >= 1000 for held in flood.stats["peak_held"].values()), flood.stats
    nodes = json.loads(out)["nodes"]
    assert sum(n["bytes_from_storage"] for n in nodes) == size  # egress 1.00x
    assert b"Traceback" not in err


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
    """A rank that keeps running (what a killed launcher's ranks used to go on doing); it says
    it started with a file in $HOLD_DIR."""
    Path(os.environ["HOLD_DIR"], f"started-{comm.rank}").touch()
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
    ran on, and its pymp-* directory stayed. Now they die with it, and the next run sweeps the dir.
    The launcher's temporary directory is private to the test (TMPDIR), so what stays is its."""
    tag = os.urandom(8).hex()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    env.update(PARCOMM_TEST_TAG=tag, TMPDIR=str(tmp), HOLD_DIR=str(tmp_path))
    argv = [sys.executable, "-m", "parcomm", "run", "local", "-n", "3", "--program", f"{ME}:hold", "--timeout", "90s"]
    ready = lambda: len(list(tmp_path.glob("started-*"))) == 3  # noqa: E731 - every rank runs the program
    started, left = _kill_launcher_and_watch(argv, env, ready, tag)
    assert started >= 4  # the fork server, its resource tracker and the ranks
    assert left == [], f"{len(left)} processes outlived their launcher"
    stayed = list(tmp.glob("pymp-*"))
    assert len(stayed) == 1 and lifetime._mp_owner_dead(str(stayed[0]))  # marked as the dead launcher's
    nxt = [sys.executable, "-m", "parcomm", "run", "local", "-n", "2", "--program", "barrier"]
    run = subprocess.run(nxt, env={**env, "PARCOMM_TEST_TAG": ""}, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert list(tmp.iterdir()) == []  # swept by the next run, which cleaned up after itself


def _downloading(tmp: Path) -> int:
    """Nodes of `bcast --local` that report progress (they are past start-up)."""
    return max((len(list(d.glob("progress-*.json"))) for d in tmp.glob("parcomm-bcast-*")), default=0)


def test_bcast_local_nodes_die_with_a_killed_launcher(versitygw, s3_object, tmp_path):
    """Before: `bcast --local` nodes went on downloading for minutes after kill -9 of their
    launcher, and its parcomm-bcast-* status directory stayed. Now they die with it (the kernel
    kills them: PR_SET_PDEATHSIG), and the next run sweeps the directory."""
    url, _digest, _size = s3_object
    tag = os.urandom(8).hex()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    with PacingProxy(versitygw.endpoint_url, profile=[(1.0, 3e4)], seed=3) as proxy:  # 30 kB/s: a minute to go
        env = {**os.environ, **versitygw.environ(), "AWS_ENDPOINT_URL_S3": proxy.endpoint_url}
        env.update(PARCOMM_TEST_TAG=tag, TMPDIR=str(tmp))
        argv = [sys.executable, "-m", "parcomm", "bcast", url, "--local", "3", "--out", str(tmp_path / "o.{rank}")]
        argv += ["--timeout", "120s"]
        started, left = _kill_launcher_and_watch(argv, env, lambda: _downloading(tmp) == 3, tag)
    assert started == 3
    assert left == [], f"{len(left)} nodes outlived their launcher"
    stayed = list(tmp.glob("parcomm-bcast-*"))
    assert len(stayed) == 1
    _, _, pid, start, _ = stayed[0].name.split("-", 4)  # parcomm-bcast-<pid>-<start>-XXXX
    assert not lifetime.alive(lifetime.Owner(int(pid), int(start)))
    nxt = [sys.executable, "-m", "parcomm", "bcast", url, "--local", "2", "--out", str(tmp_path / "next.{rank}")]
    run = subprocess.run(
        nxt, env={**os.environ, **versitygw.environ(), "TMPDIR": str(tmp)}, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert list(tmp.glob("parcomm-bcast-*")) == []


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
