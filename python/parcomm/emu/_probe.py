"""A raw TCP incast, one process per host: the kernel alone, no communicator.

Run by :meth:`parcomm.emu.EmuCluster.incast_raw` inside each namespace::

    python -m parcomm.emu._probe recv --port P --senders K --bytes N --out F
    python -m parcomm.emu._probe send --to ADDR --port P --bytes N --out F

The receiver accepts K connections, then writes one byte "go" to every
sender at once and reads until each has delivered N bytes and closed. Times
are ``time.monotonic()``, one clock for every process on the machine, so the
senders' times can be put on the receiver's axis (go = 0). Every wait is
bounded by ``--timeout``.
"""

from __future__ import annotations

import argparse
import json
import selectors
import socket
import sys
import time
from typing import Any

CHUNK = 1 << 16


def _recv(args: argparse.Namespace) -> dict:
    deadline = time.monotonic() + args.timeout
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("0.0.0.0", args.port))
    lsock.listen(args.senders + 8)
    lsock.settimeout(max(0.1, deadline - time.monotonic()))
    conns: list[tuple[socket.socket, Any]] = []
    while len(conns) < args.senders:
        c, peer = lsock.accept()
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conns.append((c, peer[0]))
    lsock.close()
    t0 = time.monotonic()
    for c, _ in conns:
        c.sendall(b"g")
    sel = selectors.DefaultSelector()
    got: dict[str, int] = {}
    done: dict[str, float] = {}
    for c, peer in conns:
        c.setblocking(False)
        sel.register(c, selectors.EVENT_READ, peer)
        got[peer] = 0
    buf = bytearray(CHUNK)
    while len(done) < len(conns):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"receiver: {len(conns) - len(done)} senders unfinished at the deadline")
        for key, _ in sel.select(timeout=min(left, 1.0)):
            conn: socket.socket = key.fileobj  # type: ignore[assignment]  # registered above: sockets only
            n = conn.recv_into(buf)
            if n:
                got[key.data] += n
                continue
            done[key.data] = time.monotonic() - t0
            sel.unregister(conn)
            conn.close()
    short = {p: n for p, n in got.items() if n != args.bytes}
    if short:
        raise RuntimeError(f"receiver: wrong byte counts {short} (expected {args.bytes} each)")
    return {"role": "recv", "t0": t0, "finish": max(done.values()) if done else 0.0, "per_sender": done, "bytes": got}


def _send(args: argparse.Namespace) -> dict:
    deadline = time.monotonic() + args.timeout
    while True:  # the receiver may not listen yet
        try:
            s = socket.create_connection((args.to, args.port), timeout=1.0)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    s.settimeout(max(0.1, deadline - time.monotonic()))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if s.recv(1) != b"g":
        raise RuntimeError("sender: no go from the receiver")
    start = time.monotonic()
    s.sendall(bytes(args.bytes))
    sent = time.monotonic()
    s.shutdown(socket.SHUT_WR)
    s.recv(1)  # EOF once the receiver has everything
    s.close()
    return {"role": "send", "start": start, "sent": sent, "closed": time.monotonic()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="parcomm.emu._probe")
    ap.add_argument("role", choices=["recv", "send"])
    ap.add_argument("--port", type=int, default=5001)
    ap.add_argument("--to", default="")
    ap.add_argument("--senders", type=int, default=1)
    ap.add_argument("--bytes", type=int, required=True)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    res = _recv(args) if args.role == "recv" else _send(args)
    with open(args.out, "w") as f:
        json.dump(res, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
