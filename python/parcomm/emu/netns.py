"""Doing small things inside a named network namespace without a subprocess.

A thread may join another network namespace with ``setns(2)`` without
affecting the rest of the process; sockets it opens stay bound to that
namespace. :func:`in_netns` runs a function on such a throw-away thread.
The only user is :func:`set_offloads`, which is ``ethtool -K DEV tso off gso
off gro off`` done with the kernel's ethtool ioctl, so the emulation does not
depend on the ethtool program being installed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import os
import socket
import struct
import threading
from collections.abc import Callable
from typing import Any

from .shell import EmuError

__all__ = ["in_netns", "set_offloads", "get_offloads", "OFFLOADS"]

_CLONE_NEWNET = 0x40000000
_SIOCETHTOOL = 0x8946
# Legacy per-feature ethtool commands (include/uapi/linux/ethtool.h): get, set.
OFFLOADS = {
    "sg": (0x18, 0x19),
    "tso": (0x1E, 0x1F),
    "gso": (0x23, 0x24),
    "gro": (0x2B, 0x2C),
}

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def in_netns(netns: str, fn: Callable[[], Any]) -> Any:
    """Run ``fn()`` on a fresh thread that has joined ``/run/netns/<netns>``; return its value."""
    box: dict[str, Any] = {}

    def body() -> None:
        try:
            fd = os.open(f"/run/netns/{netns}", os.O_RDONLY)
        except OSError as e:
            box["error"] = EmuError(f"namespace {netns}: {e.strerror}")
            return
        try:
            if _libc.setns(fd, _CLONE_NEWNET) != 0:
                err = ctypes.get_errno()
                box["error"] = EmuError(f"setns({netns}): {os.strerror(err)}")
                return
            box["value"] = fn()
        except BaseException as e:  # handed to the caller's thread
            box["error"] = e
        finally:
            os.close(fd)

    t = threading.Thread(target=body, name=f"netns-{netns}", daemon=True)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _ethtool_value(sock: socket.socket, dev: str, cmd: int, data: int = 0) -> int:
    buf = ctypes.create_string_buffer(struct.pack("II", cmd, data))
    ifreq = struct.pack("16sP", dev.encode()[:15], ctypes.addressof(buf)).ljust(40, b"\0")
    fcntl.ioctl(sock.fileno(), _SIOCETHTOOL, ifreq)
    return struct.unpack("II", buf.raw[:8])[1]


def get_offloads(netns: str, dev: str) -> dict[str, bool]:
    """Current sg/tso/gso/gro state of ``dev`` in ``netns``."""

    def work() -> dict[str, bool]:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            return {k: bool(_ethtool_value(s, dev, get)) for k, (get, _set) in OFFLOADS.items()}

    return in_netns(netns, work)


def set_offloads(netns: str, devs: list[str], *, tso: bool = False, gso: bool = False, gro: bool = False) -> None:
    """``ethtool -K DEV tso/gso/gro on|off`` for each device, checked by reading back."""
    wanted = {"tso": tso, "gso": gso, "gro": gro}

    def work() -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            for dev in devs:
                for feat, on in wanted.items():
                    get, set_ = OFFLOADS[feat]
                    try:
                        _ethtool_value(s, dev, set_, int(on))
                    except OSError as e:
                        raise EmuError(
                            f"{netns}: cannot turn {feat} {'on' if on else 'off'} on {dev}: {e.strerror}"
                        ) from None
                    if bool(_ethtool_value(s, dev, get)) != on:
                        raise EmuError(f"{netns}: {feat} on {dev} stayed {'off' if on else 'on'}")

    in_netns(netns, work)
