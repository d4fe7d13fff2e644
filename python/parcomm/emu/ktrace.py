"""Per-flow TCP traces from the kernel's own tracepoints, in a private tracefs instance.

While a :class:`KernelTrace` is active, a tracefs instance of our own
(``/sys/kernel/tracing/instances/parcomm-<tag>``, on the monotonic clock so
its times line up with ``time.monotonic()``) records tracepoints of
``net/ipv4/tcp_input.c`` and ``tcp_output.c``:

* ``tcp:tcp_retransmit_skb``: every retransmitted segment;
* ``tcp:tcp_cong_state_set``: congestion-state changes (Open, Disorder,
  CWR, Recovery, Loss: Loss is an RTO);
* ``tcp:tcp_probe`` if asked for: a socket's state as each *data* segment
  arrives (on this kernel it does not fire on pure ACKs, so it shows
  receivers, not senders; :mod:`parcomm.emu.sockdiag` samples senders).

Tracepoints see every namespace of the machine, so events are kept only
for the addresses the caller names (the emulated hosts'). The instance is
removed on stop, whatever happens. Needs root and tracefs; without them
``available()`` says why and nothing is recorded.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["KernelTrace", "TraceUnavailable", "available", "parse_trace", "CONG_STATES"]

TRACEFS = "/sys/kernel/tracing"
EVENTS = ("tcp_retransmit_skb", "tcp_cong_state_set")
OPTIONAL_EVENTS = ("tcp_probe",)
#: enum tcp_ca_state (include/net/tcp.h / uapi linux/tcp.h)
CONG_STATES = {0: "open", 1: "disorder", 2: "cwr", 3: "recovery", 4: "loss"}
#: Per-CPU ring buffer: ~50 bytes an event, so 16 MiB holds ~300,000 events per CPU.
BUFFER_KB = 16384

_LINE = re.compile(r"\s(\d+\.\d+): (tcp_\w+): (.*)$")
_PAIR = re.compile(r"(\w+)=(\S+)")


class TraceUnavailable(RuntimeError):
    """The kernel cannot trace here (no tracefs, no TCP tracepoints, or not root)."""


def available() -> str | None:
    """``None`` if tracing works here, else the reason it does not."""
    if os.geteuid() != 0:
        return "kernel tracing needs root"
    if not os.path.isdir(os.path.join(TRACEFS, "instances")):
        return f"no tracefs at {TRACEFS} (mount -t tracefs nodev {TRACEFS})"
    missing = [e for e in EVENTS if not os.path.isdir(os.path.join(TRACEFS, "events", "tcp", e))]
    if missing:
        return f"this kernel has no tracepoint tcp:{missing[0]}"
    return None


@dataclass
class KernelTraceResult:
    """Events as columns per kind; times are CLOCK_MONOTONIC seconds."""

    probes: list[dict] = field(default_factory=list)
    retransmits: list[dict] = field(default_factory=list)
    states: list[dict] = field(default_factory=list)
    lost_events: int = 0


def _addr(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def parse_trace(text: str, keep: Iterable[str] | None = None) -> KernelTraceResult:
    """The instance's ``trace`` text as records; only flows whose local address is in ``keep``."""
    keep = None if keep is None else set(keep)
    out = KernelTraceResult()
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = _LINE.search(line)
        if not m:
            continue
        t, ev, rest = float(m.group(1)), m.group(2), m.group(3)
        kv = dict(_PAIR.findall(rest))
        try:
            if ev == "tcp_probe":
                (src, sport), (dst, dport) = _addr(kv["src"]), _addr(kv["dest"])
                if keep is not None and src not in keep:
                    continue
                out.probes.append(
                    {
                        "t": t,
                        "src": src,
                        "sport": sport,
                        "dst": dst,
                        "dport": dport,
                        "cwnd": int(kv["snd_cwnd"]),
                        "ssthresh": int(kv["ssthresh"]),
                        "srtt_us": int(kv["srtt"]),
                        "snd_una": int(kv["snd_una"], 16),
                        "data_len": int(kv["data_len"]),
                    }
                )
            elif ev == "tcp_retransmit_skb":
                if keep is not None and kv["saddr"] not in keep:
                    continue
                out.retransmits.append(
                    {
                        "t": t,
                        "src": kv["saddr"],
                        "sport": int(kv["sport"]),
                        "dst": kv["daddr"],
                        "dport": int(kv["dport"]),
                    }
                )
            elif ev == "tcp_cong_state_set":
                if keep is not None and kv["saddr"] not in keep:
                    continue
                st = int(kv["cong_state"])
                out.states.append(
                    {
                        "t": t,
                        "src": kv["saddr"],
                        "sport": int(kv["sport"]),
                        "dst": kv["daddr"],
                        "dport": int(kv["dport"]),
                        "state": CONG_STATES.get(st, str(st)),
                    }
                )
        except (KeyError, ValueError):
            continue  # a line of another format: not ours to read
    return out


class KernelTrace:
    """``with KernelTrace(addresses) as kt: ...``; then ``kt.result``."""

    def __init__(self, addresses: Iterable[str], probes: bool = False):
        self.addresses = set(addresses)
        self.events = EVENTS + (OPTIONAL_EVENTS if probes else ())
        self.path = os.path.join(TRACEFS, "instances", f"parcomm-{os.getpid()}-{secrets.token_hex(3)}")
        self.result: KernelTraceResult | None = None

    def _write(self, rel: str, value: str) -> None:
        with open(os.path.join(self.path, rel), "w") as f:
            f.write(value)

    def __enter__(self) -> KernelTrace:
        why = available()
        if why:
            raise TraceUnavailable(why)
        os.mkdir(self.path)
        try:
            self._write("trace_clock", "mono")
            self._write("buffer_size_kb", str(BUFFER_KB))
            for e in self.events:
                self._write(f"events/tcp/{e}/enable", "1")
            self._write("tracing_on", "1")
        except OSError:
            self._remove()
            raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            self._write("tracing_on", "0")
            with open(os.path.join(self.path, "trace")) as f:
                text = f.read()
            self.result = parse_trace(text, self.addresses)
            self.result.lost_events = self._overruns()
        finally:
            self._remove()

    def _overruns(self) -> int:
        total = 0
        base = os.path.join(self.path, "per_cpu")
        for cpu in os.listdir(base) if os.path.isdir(base) else []:
            try:
                with open(os.path.join(base, cpu, "stats")) as f:
                    for line in f:
                        if line.startswith("overrun:"):
                            total += int(line.split()[1])
            except (OSError, ValueError, IndexError):
                pass
        return total

    def _remove(self) -> None:
        try:
            for e in self.events:
                with contextlib.suppress(OSError):
                    self._write(f"events/tcp/{e}/enable", "0")
            os.rmdir(self.path)
        except OSError:
            pass
