"""Test helper: whether this machine can build emulated clusters (root and `ip netns`), as a skip marker."""

from __future__ import annotations

import os
import subprocess

import pytest


def why_not() -> str | None:
    """None if we can create namespaces here, else why not."""
    if os.geteuid() != 0:
        return "needs root (CAP_NET_ADMIN) to create network namespaces"
    try:
        proc = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"`ip netns` unavailable: {e}"
    if proc.returncode != 0:
        return f"`ip netns list` failed: {proc.stderr.strip()}"
    return None


WHY_NOT = why_not()
needs_netns = pytest.mark.skipif(WHY_NOT is not None, reason=f"emulation: {WHY_NOT}")
