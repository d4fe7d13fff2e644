"""Test helper: a flood of silent connections, as an attacker without the key makes one.

``Flood`` keeps ``per_target`` TCP connections open to every address ``targets()``
names, sending nothing; each one the listener closes is reopened at once. Bounded
in time (``window_s``) and in connections opened (``max_opens``); loopback only.
"""

from __future__ import annotations

import contextlib
import errno
import os
import selectors
import socket
import threading
import time
from collections.abc import Callable

Address = tuple[str, int]


class Flood(threading.Thread):
    def __init__(
        self,
        targets: Callable[[], list[Address]],
        per_target: int = 1000,
        *,
        window_s: float = 120.0,
        max_opens: int = 2_000_000,
        batch: int = 100,
    ) -> None:
        super().__init__(daemon=True, name="flood")
        self.targets, self.per_target = targets, per_target
        self.window_s, self.max_opens, self.batch = window_s, max_opens, batch
        self.halt = threading.Event()
        self.opened = 0  # connections attempted
        self.closed_by_peer = 0  # closed (or reset, or refused) by the other end
        self.peak_held: dict[Address, int] = {}
        self._held: dict[Address, set[socket.socket]] = {}
        self.ready = threading.Event()  # set once every current target holds per_target connections

    def run(self) -> None:
        sel = selectors.DefaultSelector()
        end = time.monotonic() + self.window_s
        try:
            while not self.halt.is_set() and time.monotonic() < end and self.opened < self.max_opens:
                full = True
                for addr in self.targets():
                    held = self._held.setdefault(addr, set())
                    for _ in range(min(self.batch, self.per_target - len(held))):
                        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                        s.setblocking(False)
                        err = s.connect_ex(addr)
                        self.opened += 1
                        if err not in (0, errno.EINPROGRESS):
                            s.close()
                            self.closed_by_peer += 1
                            continue
                        held.add(s)
                        sel.register(s, selectors.EVENT_READ, addr)
                    self.peak_held[addr] = max(self.peak_held.get(addr, 0), len(held))
                    full = full and len(held) >= self.per_target
                if full and self._held:
                    self.ready.set()
                for key, _ in sel.select(timeout=0.005):
                    s = key.fileobj
                    assert isinstance(s, socket.socket)
                    try:
                        data = s.recv(4096)  # a greeting: read and ignore; b"": closed
                        if data:
                            continue
                    except BlockingIOError:
                        continue
                    except OSError:
                        pass
                    sel.unregister(s)
                    self._held[key.data].discard(s)
                    s.close()
                    self.closed_by_peer += 1
        finally:
            for held in self._held.values():
                for s in held:
                    with contextlib.suppress(KeyError, ValueError):
                        sel.unregister(s)
                    s.close()
            sel.close()

    def __enter__(self) -> Flood:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.halt.set()
        self.join(30)


def _tree_of(pid: int) -> set[int]:
    """``pid`` and its descendants (from /proc/*/stat)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    tree, todo = set(), [pid]
    while todo:
        p = todo.pop()
        if p not in tree:
            tree.add(p)
            todo += children.get(p, [])
    return tree


def listening_ports_of(pid: int) -> set[int]:
    """Ports on 127.0.0.1 that ``pid`` or its descendants listen on: only those are flooded,
    never a listener of anyone else on the machine."""
    inodes = set()
    for p in _tree_of(pid):
        try:
            for fd in os.listdir(f"/proc/{p}/fd"):
                try:
                    link = os.readlink(f"/proc/{p}/fd/{fd}")
                except OSError:
                    continue
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
        except OSError:
            continue
    found = set()
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            cols = line.split()
            addr, port = cols[1].split(":")
            if cols[3] == "0A" and addr == "0100007F" and cols[9] in inodes:
                found.add(int(port, 16))
    return found


class FloodProcess:
    """A :class:`Flood` in a process of its own (so it does not share the victim's GIL
    when the victim is in the test's process), flooding ``ports``, or every port on
    127.0.0.1 that process ``pid`` or its children listen on. ``stats`` after exit."""

    def __init__(self, ports: list[int] | None = None, per_target: int = 1000, *, pid: int | None = None) -> None:
        import subprocess
        import sys

        args = [sys.executable, __file__, "--per-target", str(per_target)]
        args += ["--pid", str(pid)] if pid is not None else [str(p) for p in ports or []]
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.stats: dict = {}

    def wait_ready(self, timeout: float = 15.0) -> bool:
        """Until every target is held at ``per_target`` once (bounded)."""
        import select

        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        return bool(ready) and self.proc.stdout.readline().strip() == "ready"

    def __enter__(self) -> FloodProcess:
        return self

    def __exit__(self, *exc) -> None:
        import json

        try:
            out, _ = self.proc.communicate("stop\n", timeout=60)
            lines = [line for line in out.splitlines() if line.startswith("{")]
            self.stats = json.loads(lines[-1]) if lines else {}
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


def main() -> None:
    import argparse
    import json
    import sys

    ap = argparse.ArgumentParser(description="hold silent connections open to loopback listeners")
    ap.add_argument("ports", type=int, nargs="*")
    ap.add_argument("--per-target", type=int, default=1000)
    ap.add_argument("--pid", type=int, help="flood the ports this process and its children listen on")
    ap.add_argument("--window-s", type=float, default=300.0)
    args = ap.parse_args()
    if args.pid is not None:
        targets = lambda: [("127.0.0.1", p) for p in sorted(listening_ports_of(args.pid))]  # noqa: E731
    else:
        targets = lambda: [("127.0.0.1", p) for p in args.ports]  # noqa: E731
    flood = Flood(targets, args.per_target, window_s=args.window_s)
    flood.start()
    if args.pid is None:
        flood.ready.wait(30)
    print("ready", flush=True)
    sys.stdin.readline()  # until the caller says stop (or goes away)
    flood.halt.set()
    flood.join(30)
    peak = {f"{h}:{p}": n for (h, p), n in flood.peak_held.items()}
    print(json.dumps({"opened": flood.opened, "closed_by_peer": flood.closed_by_peer, "peak_held": peak}), flush=True)


if __name__ == "__main__":
    main()
