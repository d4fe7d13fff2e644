"""``EmuCluster``: a platform brought up as namespaces, run on, and torn down.

::

    from parcomm.emu import EmuCluster

    with EmuCluster("star:8,rate=100M,buffer=32KiB") as cl:
        res = cl.incast_raw(256 * 1024)                  # the kernel alone
        res = cl.run("parcomm.collectives:alltoall_a", kwargs={"nbytes": 4096})
        print(res.time, res.host_totals())

``up()`` (or entering the ``with`` block) first sweeps away objects of dead
runs, then builds the namespaces, shapes the ports and sets the TCP knobs.
``down()`` removes everything; it runs on leaving the block, on an
exception, on SIGINT/SIGTERM/SIGHUP (turned into exceptions while the cluster
is up) and at interpreter exit. Against ``kill -9`` a reaper process (see
``reaper.py``) removes the run's namespaces and work directory as soon as
the owner is gone; if the reaper was killed too, the next ``up()`` (or
``parcomm emu cleanup``) does.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..auth import JobKey
from ..platform import as_platform
from ..result import Result
from . import counters as _counters
from . import naming, shaping, tcpknobs, topology
from .launcher import RankSpec, launch
from .layout import Layout, choose_subnet, plan
from .sampler import QueueSampler
from .shell import EmuError, require_root, run, tool

__all__ = ["EmuCluster", "run_emu", "program_ref", "ENTRY_POINT"]

#: The rank entry point (SocketComm): python -m parcomm run socket ...
ENTRY_POINT = ("-m", "parcomm", "run", "socket")
#: First TCP port the ranks listen on (inside our namespaces only).
BASE_PORT = 17000


class _Interrupted(SystemExit):
    """SIGTERM/SIGHUP while a cluster is up: unwinds like Ctrl-C so ``down()`` runs."""


def program_ref(program: str | Callable[..., Any]) -> str:
    """How a rank process names a rank program (checked by ``parcomm run socket``).

    A string passes through (``module:function``, ``path/file.py:function``
    or a collective's name). A function of the ``parcomm`` package becomes
    ``module:function``; any other top-level function becomes
    ``path/file.py:function``, so a test or script module that is not on
    the rank's ``sys.path`` still loads.
    """
    if isinstance(program, str):
        if not program.strip():
            raise EmuError("empty program reference")
        return program
    mod = getattr(program, "__module__", None)
    qual = getattr(program, "__qualname__", "")
    if not mod or "<" in qual or "." in qual:
        raise EmuError(
            f"rank program {qual or program!r} must be a top-level function (each rank imports it in its own process)"
        )
    if mod == "parcomm" or mod.startswith("parcomm."):
        return f"{mod}:{qual}"
    path = getattr(sys.modules.get(mod), "__file__", None)
    if not path or not path.endswith(".py"):
        raise EmuError(f"rank program {qual}: cannot tell which file defines module {mod!r}")
    return f"{os.path.abspath(path)}:{qual}"


def _root_routes() -> list[str]:
    """Destinations of the machine's IPv4 routes (read only; used to pick a free subnet)."""
    proc = run([tool("ip"), "-4", "route", "show", "table", "all"], check=False, what="ip route show")
    dests = []
    for line in proc.stdout.splitlines():
        toks = line.split()
        if toks and toks[0] in (
            "local",
            "broadcast",
            "unicast",
            "multicast",
            "anycast",
            "unreachable",
            "blackhole",
            "prohibit",
            "throw",
        ):
            toks = toks[1:]
        if toks and toks[0] != "default":
            dests.append(toks[0])
    return dests


class EmuCluster:
    """An emulated platform: one namespace per host on a shaped Linux bridge (root only)."""

    def __init__(
        self,
        platform: dict | str,
        *,
        sample_interval_s: float | None = 0.002,
        reaper: bool = True,
        keep_workdir: bool = False,
        sysctls: Mapping[str, int | str] | None = None,
    ):
        self.platform = as_platform(platform)
        self.extra_sysctls = tcpknobs.check_extra_sysctls(sysctls or {})
        self.sample_interval_s = sample_interval_s
        self.use_reaper = reaper
        self.keep_workdir = keep_workdir
        self.layout: Layout | None = None
        self.knobs: dict[str, tcpknobs.HostKnobs] = {}
        self.stale_removed: list[str] = []
        self.workdir: str | None = None
        self.setup_s = 0.0
        self._reaper: subprocess.Popen | None = None
        self._old_handlers: dict[int, Any] = {}
        self._runs = 0

    # ------------------------------------------------------------------ life cycle
    def __enter__(self) -> EmuCluster:
        self.up()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.down()

    @property
    def is_up(self) -> bool:
        return self.layout is not None

    def up(self) -> EmuCluster:
        if self.is_up:
            return self
        require_root()
        tool("ip"), tool("tc")
        t0 = time.monotonic()
        self.stale_removed = naming.cleanup_stale()
        name = naming.new_run()
        layout = plan(self.platform, name, choose_subnet(_root_routes()))
        self.layout = layout
        self._install_handlers()
        atexit.register(self.down)
        try:
            try:
                self.workdir = naming.make_workdir(name, keep=self.keep_workdir)
            except OSError as e:
                raise EmuError(f"cannot create a work directory in {tempfile.gettempdir()}: {e.strerror}") from None
            # The state file names the work directory, so whoever finds the run dead removes both.
            name.record(platform=layout.platform_name, hosts=len(layout.hosts), workdir=self.workdir)
            self._start_reaper()
            topology.create(layout)
            shaping.shape(layout)
            self.knobs = tcpknobs.apply(layout, self.extra_sysctls)
        except BaseException:
            self.down()
            raise
        self.setup_s = time.monotonic() - t0
        return self

    def down(self) -> None:
        """Remove every object of this run (idempotent)."""
        layout, self.layout = self.layout, None
        try:
            if layout is not None:
                naming.remove_run(layout.run, layout.namespaces(), workdirs=not self.keep_workdir)
        finally:
            self._stop_reaper()
            self._restore_handlers()
            atexit.unregister(self.down)
            if self.workdir and not self.keep_workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def _install_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return

        def on_signal(signum, _frame):
            raise _Interrupted(128 + signum)

        for sig in (signal.SIGTERM, signal.SIGHUP):
            self._old_handlers[sig] = signal.signal(sig, on_signal)
        if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL):
            self._old_handlers[signal.SIGINT] = signal.signal(signal.SIGINT, signal.default_int_handler)

    def _restore_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig, h in self._old_handlers.items():
            signal.signal(sig, h)
        self._old_handlers.clear()

    def _start_reaper(self) -> None:
        if not self.use_reaper or self.layout is None:
            return
        r = self.layout.run
        self._reaper = subprocess.Popen(
            [sys.executable, "-m", "parcomm.emu.reaper", str(r.pid), r.tag],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # survives a kill of our process group
        )

    def _stop_reaper(self) -> None:
        p, self._reaper = self._reaper, None
        if p is not None and p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()

    # ------------------------------------------------------------------ facts
    def _need_up(self) -> Layout:
        if self.layout is None:
            raise EmuError("the cluster is not up (use `with EmuCluster(...) as cl:` or call up())")
        return self.layout

    @property
    def size(self) -> int:
        return len(self._need_up().hosts)

    @property
    def addresses(self) -> list[str]:
        return [h.addr for h in self._need_up().hosts]

    @property
    def namespaces(self) -> list[str]:
        return self._need_up().namespaces()

    def describe(self) -> dict:
        """The cluster as data: names, addresses, shaping and TCP settings per host."""
        lay = self._need_up()
        return {
            "run_id": lay.run.run_id,
            "switch_netns": lay.switch_ns,
            "subnet": lay.subnet,
            "port_buffer": lay.buffer,
            "not_emulated": lay.not_emulated,
            "hosts": [
                {
                    "name": h.name,
                    "netns": h.netns,
                    "addr": h.addr,
                    "rate_bps": h.rate_bps,
                    "route_metrics": self.knobs[h.name].route_metrics if h.name in self.knobs else [],
                    "rto_min_ms": self.knobs[h.name].rto_min_ms if h.name in self.knobs else None,
                    "rto_max_ms": self.knobs[h.name].rto_max_ms if h.name in self.knobs else None,
                    "notes": self.knobs[h.name].notes if h.name in self.knobs else [],
                }
                for h in lay.hosts
            ],
            "setup_s": round(self.setup_s, 3),
            "stale_removed": self.stale_removed,
        }

    # ------------------------------------------------------------------ measuring
    def _measure(self, work: Callable[[], tuple[list[float], list[Any], dict]]) -> Result:
        lay = self._need_up()
        before = _counters.snapshot(lay)
        sampler = None
        if self.sample_interval_s:
            devs = {h.port: h.port for h in lay.hosts}
            sampler = QueueSampler(
                lay.switch_ns,
                devs,
                {h.port: lay.buffer["unit"] for h in lay.hosts},
                leaf_handle=shaping.LEAF_HANDLE_ID,
                interval_s=self.sample_interval_s,
            )
        t0 = time.monotonic()
        try:
            if sampler:
                sampler.__enter__()
            finish, results, extra = work()
        finally:
            max_backlog = sampler.stop() if sampler else None
        wall = time.monotonic() - t0
        after = _counters.snapshot(lay)
        ctrs = _counters.delta(lay, before, after, max_backlog)
        self._runs += 1
        notes = sorted({n for k in self.knobs.values() for n in k.notes})
        return Result(
            way="emu",
            finish_times=finish,
            results=results,
            counters=ctrs,
            wall_s=wall,
            backend="emu",
            platform=lay.platform_name,
            extra={
                **extra,
                "run_id": lay.run.run_id,
                "not_emulated": lay.not_emulated,
                "tcp_notes": notes,
                "queue_samples": sampler.samples if sampler else 0,
                "rto_min_ms": [self.knobs[h.name].rto_min_ms for h in lay.hosts],
                "rto_max_ms": [self.knobs[h.name].rto_max_ms for h in lay.hosts],
            },
        )

    def _read_json(self, name: str):
        with open(self._path(name)) as f:
            return json.load(f)

    def _path(self, name: str) -> str:
        assert self.workdir is not None
        return os.path.join(self.workdir, f"r{self._runs}-{name}")

    def incast_raw(
        self, nbytes: int, senders: int | None = None, *, receiver: int = 0, timeout_s: float = 60.0
    ) -> Result:
        """``senders`` hosts each send ``nbytes`` to host ``receiver`` at once, over plain sockets.

        No communicator: one TCP connection per sender, opened before the
        clock starts; the clock starts when the receiver says go. Rank i of
        the result is host i; hosts that take no part finish at 0.
        """
        lay = self._need_up()
        n = len(lay.hosts)
        senders = n - 1 if senders is None else int(senders)
        if not 1 <= senders <= n - 1:
            raise EmuError(f"incast needs 1..{n - 1} senders on {n} hosts, got {senders}")
        if not 0 <= receiver < n:
            raise EmuError(f"receiver {receiver} is not a host index (0..{n - 1})")
        port = BASE_PORT + (self._runs % 1000)
        tx = [i for i in range(n) if i != receiver][:senders]
        specs = self._incast_specs(lay, port, receiver, tx, nbytes, timeout_s)

        def work():
            launch(specs, timeout_s + 15)
            outs = {s.rank: self._read_json(f"{s.rank}.json") for s in specs}
            t0 = outs[receiver]["t0"]
            finish = [0.0] * n
            finish[receiver] = outs[receiver]["finish"]
            for i in tx:
                finish[i] = outs[i]["sent"] - t0
            by_addr = outs[receiver]["bytes"]
            results: list[Any] = [None] * n
            results[receiver] = {lay.hosts[i].name: by_addr.get(lay.hosts[i].addr) for i in tx}
            return (
                finish,
                results,
                {
                    "program": "incast_raw",
                    "nbytes": nbytes,
                    "senders": senders,
                    "receiver": receiver,
                    "t0_monotonic": t0,
                },
            )

        return self._measure(work)

    def _incast_specs(
        self, lay: Layout, port: int, receiver: int, tx: list[int], nbytes: int, timeout_s: float
    ) -> list[RankSpec]:
        """The incast's processes: the probe receiving on host ``receiver``, then one sending from each of ``tx``."""
        # The probe imports nothing of parcomm: run it as a file, so each of
        # the N processes starts in tens of milliseconds, not with the package.
        probe = [sys.executable, os.path.join(os.path.dirname(__file__), "_probe.py")]
        size_time = ["--bytes", str(nbytes), "--timeout", str(timeout_s)]
        recv = [*probe, "recv", "--port", str(port), "--senders", str(len(tx)), *size_time]
        specs = [
            RankSpec(
                receiver,
                lay.hosts[receiver].netns,
                [*recv, "--out", self._path(f"{receiver}.json")],
                self._path(f"{receiver}.log"),
            )
        ]
        send = [*probe, "send", "--to", lay.hosts[receiver].addr, "--port", str(port), *size_time]
        for i in tx:
            specs.append(
                RankSpec(i, lay.hosts[i].netns, [*send, "--out", self._path(f"{i}.json")], self._path(f"{i}.log"))
            )
        return specs

    def write_addresses(self, size: int, port: int) -> str:
        """The socket backend's addresses file: line r is ``<host r's address> <port>``."""
        lay = self._need_up()
        path = self._path("addresses.txt")
        with open(path, "w") as f:
            f.write("".join(f"{lay.hosts[r].addr} {port}\n" for r in range(size)))
        return path

    def run(
        self,
        program: str | Callable[..., Any],
        size: int | None = None,
        *,
        kwargs: Mapping[str, Any] | None = None,
        timeout_s: float = 120.0,
        connect_timeout_s: float = 60.0,
    ) -> Result:
        """Run ``program(comm, **kwargs)`` on ``size`` ranks with SocketComm, rank r on host r.

        Each rank is ``python -m parcomm run socket ... --nodelay`` in its
        host's namespace (TCP_NODELAY: the simulator has no Nagle delay);
        socket buffers and RTO bounds come from the namespace (tcpknobs), not
        from per-socket options. Times are seconds from the earliest rank's
        start, which SocketComm takes after its start barrier.
        """
        lay = self._need_up()
        ref = program_ref(program)
        n = len(lay.hosts)
        size = n if size is None else int(size)
        if not 1 <= size <= n:
            raise EmuError(f"{size} ranks need {size} hosts; the platform has {n}")
        try:
            kw = json.dumps(dict(kwargs or {}))
        except TypeError as e:
            raise EmuError(f"kwargs must be JSON: {e}") from None
        port = BASE_PORT + (self._runs % 1000)
        addr_file = self.write_addresses(size, port)
        key_file = self._new_job_key()
        limits = ["--timeout", f"{timeout_s:g}s", "--connect-timeout", f"{connect_timeout_s:g}s"]
        specs = [self._socket_rank(r, size, addr_file, ref, kw, key_file, limits) for r in range(size)]

        def work():
            launch(specs, timeout_s + connect_timeout_s + 30)
            outs = self._rank_outputs(size)
            t0 = min(o["start_s"] for o in outs)
            finish = [o["finish_s"] - t0 for o in outs]
            return (
                finish,
                [o.get("result") for o in outs],
                {
                    "program": ref,
                    "kwargs": dict(kwargs or {}),
                    "size": size,
                    "t0_wall": t0,
                    "socket_counters": [o.get("counters", {}) for o in outs],
                },
            )

        res = self._measure(work)
        _fill_payload_bytes(res, n)
        return res

    def _new_job_key(self) -> str:
        """The job key: a fresh secret per run in the 0700 work directory (mode 600), named by
        path in the ranks' command lines, so the secret itself never appears in argv."""
        key_file = self._path("job.key")
        if os.path.exists(key_file):
            os.unlink(key_file)
        JobKey.generate().write(key_file)
        return key_file

    def _socket_rank(
        self, r: int, size: int, addr_file: str, ref: str, kw: str, key_file: str, limits: list[str]
    ) -> RankSpec:
        """Rank r of :meth:`run`: ``python -m parcomm run socket ...`` in host r's namespace."""
        argv = [
            sys.executable,
            *ENTRY_POINT,
            "--rank",
            str(r),
            "--size",
            str(size),
            "--addresses",
            addr_file,
            "--program",
            ref,
            "--kwargs",
            kw,
            "--out",
            self._path(f"{r}.json"),
            "--nodelay",
            "--key-file",
            key_file,
            *limits,
        ]
        return RankSpec(r, self._need_up().hosts[r].netns, argv, self._path(f"{r}.log"))

    def _rank_outputs(self, size: int) -> list[dict]:
        """Every rank's JSON output; an error naming the first rank that wrote none or failed."""
        outs = []
        for r in range(size):
            try:
                with open(self._path(f"{r}.json")) as f:
                    outs.append(json.load(f))
            except (OSError, ValueError) as e:
                raise EmuError(f"rank {r} wrote no readable result: {e}") from None
            if not outs[-1].get("ok", False):
                raise EmuError(f"rank {r} failed: {outs[-1].get('error', 'unknown error')}")
        return outs


def _fill_payload_bytes(res: Result, n_hosts: int) -> None:
    """``bytes_sent``/``bytes_retransmitted`` per host from the ranks' own TCP_INFO.

    The namespace counters have no payload-byte count, but each SocketComm
    rank reads ``tcpi_bytes_sent``/``tcpi_bytes_retrans`` of its sockets
    (payload bytes, retransmissions included, SocketComm's frame headers
    counted as payload as the simulator counts its envelope). Rank r is
    host r; hosts without a rank sent nothing.
    """
    per_rank = res.extra.get("socket_counters") or []
    h = res.counters["hosts"]
    for col in ("bytes_sent", "bytes_retransmitted"):
        vals = [c.get(col) for c in per_rank]
        if per_rank and all(v is not None for v in vals):
            h[col] = [int(vals[i]) if i < len(vals) else 0 for i in range(n_hosts)]


def run_emu(
    program: str | Callable[..., Any],
    platform: dict | str,
    size: int | None = None,
    *,
    kwargs: Mapping[str, Any] | None = None,
    timeout_s: float = 120.0,
) -> Result:
    """``run_sim``'s twin: build the cluster, run ``program`` once, tear it down."""
    with EmuCluster(platform) as cl:
        return cl.run(program, size, kwargs=kwargs, timeout_s=timeout_s)
