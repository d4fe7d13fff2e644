"""Running ``ip``, ``tc`` and friends: one place for timeouts and error text.

Every command is bounded by a timeout, and a failure becomes an
:class:`EmuError` whose message is the tool's own first line of complaint
(``tc`` and ``ip`` explain themselves well), prefixed with what we tried.
Batches (``ip -batch -``, ``tc -batch -``) keep the number of processes per
namespace small when a cluster comes up.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence

__all__ = ["EmuError", "run", "batch", "require_root", "tool"]

#: Seconds any single ``ip``/``tc`` invocation may take.
COMMAND_TIMEOUT_S = 30.0


class EmuError(RuntimeError):
    """The emulated cluster could not be built, run or torn down."""


def tool(name: str) -> str:
    """Absolute path of a required program, or ``EmuError`` naming the package."""
    path = shutil.which(name) or next(
        (p for p in (f"/usr/sbin/{name}", f"/sbin/{name}", f"/usr/bin/{name}") if os.access(p, os.X_OK)), None
    )
    if path is None:
        raise EmuError(f"'{name}' not found: the emulation needs iproute2 (ip, tc) on PATH")
    return path


def require_root() -> None:
    """Raise ``EmuError`` unless we may create network namespaces."""
    if os.geteuid() != 0:
        raise EmuError(
            "the emulated cluster needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to create network "
            "namespaces, veths and qdiscs; run as root, e.g. `sudo parcomm emu ...`"
        )
    if not os.path.exists("/proc/self/ns/net"):
        raise EmuError("this kernel has no network namespaces (/proc/self/ns/net is missing)")


def _first_error_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if ln.lower().startswith(("error", "rtnetlink", "cannot", "command failed")):
            return ln
    return lines[0] if lines else "(no message)"


def run(
    argv: Sequence[str],
    *,
    check: bool = True,
    timeout: float = COMMAND_TIMEOUT_S,
    input: str | None = None,
    what: str | None = None,
) -> subprocess.CompletedProcess:
    """Run ``argv``; with ``check`` a non-zero status raises ``EmuError``."""
    argv = [str(a) for a in argv]
    try:
        proc = subprocess.run(argv, input=input, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise EmuError(f"{what or ' '.join(argv[:6])}: timed out after {timeout:g} s") from None
    except FileNotFoundError:
        raise EmuError(f"'{argv[0]}' not found (the emulation needs iproute2)") from None
    if check and proc.returncode != 0:
        raise EmuError(f"{what or ' '.join(argv)}: {_first_error_line(proc.stderr or proc.stdout)}")
    return proc


def batch(program: str, lines: Sequence[str], *, netns: str | None = None, what: str = "") -> None:
    """Feed ``lines`` to ``ip -batch -`` or ``tc -batch -`` (in ``netns`` if given)."""
    if not lines:
        return
    argv = [tool(program)]
    if netns:
        argv += ["-n", netns]
    argv += ["-batch", "-"]
    run(argv, input="\n".join(lines) + "\n", what=what or f"{program} batch in {netns or 'root namespace'}")
