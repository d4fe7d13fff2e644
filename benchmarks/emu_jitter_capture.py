"""Capture frame arrival times on bridge ports of an emulated switch (run inside its
namespace by benchmarks/emu_jitter.py; standard library only, so it starts fast).

One AF_PACKET socket per device, kernel receive timestamps (SO_TIMESTAMPNS: taken
when the frame enters the bridge port, not when this process reads it), a 32 MiB
receive buffer so the capture drops nothing at 100 Mbit/s, and the kernel's own
count of what the capture did drop (PACKET_STATISTICS). Writes one record per
frame: device index, direction, length, nanoseconds. Stops on SIGTERM or after
--seconds; every wait is bounded.

    python emu_jitter_capture.py --devs p1,p2 --out F --ready R --seconds 60
"""

from __future__ import annotations

import argparse
import array
import json
import selectors
import signal
import socket
import struct
import time

ETH_P_ALL = 0x0003
SO_TIMESTAMPNS = 35  # asm-generic/socket.h
SO_RCVBUFFORCE = 33
SOL_PACKET = 263
PACKET_STATISTICS = 6
PACKET_OUTGOING = 4  # linux/if_packet.h: sent by this port (towards its host)
CMSG_SPACE = 64


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--devs", required=True, help="comma-separated device names")
    ap.add_argument("--out", required=True)
    ap.add_argument("--ready", required=True, help="file written once every socket is bound")
    ap.add_argument("--seconds", type=float, default=60.0, help="stop after this long at the latest")
    args = ap.parse_args()
    devs = args.devs.split(",")
    stop = False

    def on_term(*_):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    sel = selectors.DefaultSelector()
    socks = []
    for i, dev in enumerate(devs):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 32 << 20)
        s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        s.bind((dev, 0))
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, i)
        socks.append(s)
    dev_of, outgoing, length, t_ns = array.array("H"), array.array("B"), array.array("I"), array.array("q")
    buf = bytearray(64)
    with open(args.ready, "w") as f:
        f.write("ready\n")
    deadline = time.monotonic() + args.seconds
    while not stop and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=0.2):
            s = key.fileobj
            while True:
                try:
                    n, anc, _, addr = s.recvmsg_into([buf], CMSG_SPACE, socket.MSG_TRUNC)
                except BlockingIOError:
                    break
                ts = next((d for lvl, typ, d in anc if lvl == socket.SOL_SOCKET and typ == SO_TIMESTAMPNS), None)
                if ts is None:
                    continue
                sec, nsec = struct.unpack("qq", ts[:16])
                dev_of.append(key.data)
                outgoing.append(1 if addr[2] == PACKET_OUTGOING else 0)
                length.append(n)
                t_ns.append(sec * 1_000_000_000 + nsec)
    drops = []
    for s in socks:
        packets, dropped = struct.unpack("II", s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
        drops.append(dropped)
        s.close()
    with open(args.out, "w") as f:
        json.dump(
            {
                "devs": devs,
                "capture_drops": drops,
                "dev": dev_of.tolist(),
                "outgoing": outgoing.tolist(),
                "length": length.tolist(),
                "t_ns": t_ns.tolist(),
            },
            f,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
