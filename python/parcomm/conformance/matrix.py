"""The conformance matrix: scenarios as data (TOML), checked and expanded.

A matrix file has ``[defaults]`` (any scenario field), a ``quick`` list of
scenario names (the CI subset), and ``[[scenario]]`` tables. A scenario
field given as a list is swept: the table expands into the cross product,
and its ``name`` must then be a template naming every swept field, e.g.
``"incast-{senders}-{rto_min}-{buffer}"``. See ``matrix.toml`` beside this
file for the default matrix and what each field means.

Every value from the file is checked here, once; the runner gets
:class:`Scenario` values it can trust. Errors name the scenario and field.
"""

from __future__ import annotations

import itertools
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..platform.units import parse_bool, parse_buffer, parse_duration, parse_rate, parse_size, shown

__all__ = ["Scenario", "MatrixError", "load_matrix", "parse_matrix", "DEFAULT_MATRIX", "WORKLOADS", "TCP_KEYS"]

#: The matrix ``parcomm conformance`` runs when given none.
DEFAULT_MATRIX = os.path.join(os.path.dirname(__file__), "matrix.toml")

#: ``incast``: hosts 1..senders each send ``size`` bytes to host 0 over plain
#: sockets (the kernel alone in the emulation, bare core streams in the
#: simulator). ``program``: a rank program (``module:function``) with
#: ``kwargs`` on ``ranks`` hosts, SocketComm in the emulation, SimComm in the simulator.
WORKLOADS = ("incast", "program")

#: The TCP settings a scenario fixes for both sides (kernel and simulator).
TCP_KEYS = ("rto_min", "rto_max", "delayed_ack", "sack", "initial_window", "stock")

#: What a scenario without ``tcp.stock`` runs on both sides besides its own settings: the
#: ``linux`` stack with Reno and fixed 256 KiB socket buffers, as every kernel run recorded
#: before stock rows existed (``emu/tcpknobs.py`` set Reno and tcp_wmem/rmem = 256 KiB then).
RENO_FIXED_BUFFERS = {
    "cubic": False,
    "hystart": False,
    "sndbuf_initial_bytes": 0,
    "sndbuf_bytes": 262144,
    "rcvbuf_bytes": 262144,
}

#: Bounds: what 2 cores emulate without bending the timings (docs/conformance.md).
MAX_HOSTS = 64
MAX_REPEAT = 20
MAX_SIZE = 64 << 20
MAX_TIMEOUT_S = 600.0
MAX_SCENARIOS = 1000
MAX_FILE_BYTES = 1 << 20

_SCENARIO_KEYS = {
    "name",
    "workload",
    "hosts",
    "rate",
    "buffer",
    "rates",
    "tcp",
    "senders",
    "size",
    "program",
    "kwargs",
    "ranks",
    "repeat",
    "timeout",
    "jitter",
    "about",
}
#: Timing noise a matrix may give the simulator's links: 10 ms is far above any wire's.
MAX_JITTER_S = 0.01
_SWEEPABLE = {"hosts", "rate", "buffer", "senders", "size", "ranks"} | {f"tcp.{k}" for k in TCP_KEYS}


class MatrixError(ValueError):
    """A matrix file the suite cannot run; the message names the scenario and field."""


@dataclass(frozen=True)
class Scenario:
    """One row of the matrix, checked: units parsed, bounds enforced."""

    name: str
    workload: str
    hosts: int
    rate_bps: float
    buffer: dict  # {"size": n, "unit": "bytes"|"packets"}
    tcp: dict  # rto_min_s, rto_max_s, delayed_ack, sack, initial_window
    repeat: int
    timeout_s: float
    rates_bps: dict = field(default_factory=dict)  # host name -> its link's rate, where it differs
    senders: int = 0
    size: int = 0
    program: str = ""
    kwargs: dict = field(default_factory=dict)
    ranks: int = 0
    about: str = ""
    jitter_s: float = 0.0  # the referee's measured host timing noise, given to the simulator's hosts

    def platform(self, **tcp_overrides: Any) -> dict:
        """The platform both sides get (the kernel through ``platform/tcp_backends.toml``);
        ``tcp_overrides`` are simulator-only extras (a profile). A ``stock`` scenario runs
        the ``linux`` stack as shipped (CUBIC, HyStart, autotuned send buffers); the others
        Reno with fixed buffers (``RENO_FIXED_BUFFERS``)."""
        from ..platform.star import star

        t = self.tcp
        tcp = {
            "stack": "linux",
            **({} if t.get("stock") else RENO_FIXED_BUFFERS),
            "rto_min_s": t["rto_min_s"],
            "rto_max_s": t["rto_max_s"],
            "delayed_ack": t["delayed_ack"],
            "sack": t["sack"],
            "initial_cwnd_segments": t["initial_window"],
            **tcp_overrides,
        }
        buf = f"{self.buffer['size']} packets" if self.buffer["unit"] == "packets" else self.buffer["size"]
        plat = star(
            self.hosts,
            rate_bps=self.rate_bps,
            buffer=buf,
            tcp=tcp,
            timing_noise_s=self.jitter_s,
            name=f"conformance-{self.name}",
        )
        for ln in plat["links"]:
            for end in (ln["a"], ln["b"]):
                if end in self.rates_bps:
                    ln["rate_bps"] = self.rates_bps[end]
        return plat

    def describe(self) -> str:
        """One line for tables: the workload and what distinguishes it."""
        if self.workload == "incast":
            return f"incast {self.senders}x{_size(self.size)}"
        kw = ",".join(f"{k}={v}" for k, v in self.kwargs.items())
        return f"{self.program.rsplit(':', 1)[-1]}({kw}) P={self.ranks}"


def _size(n: int) -> str:
    for unit, s in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= s and n % s == 0:
            return f"{n // s}{unit}"
    return f"{n}B"


def _err(where: str, msg: str) -> MatrixError:
    return MatrixError(f"{where}: {msg}")


def _int(v: Any, where: str, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _err(where, f"expected a whole number, got {shown(v)}")
    if not lo <= v <= hi:
        raise _err(where, f"{shown(v)} is out of range {lo}..{hi}")
    return v


def _parse(parse, v: Any, where: str):
    try:
        return parse(v, where)
    except (ValueError, TypeError) as e:
        raise MatrixError(str(e)) from None


def _check_tcp(raw: Any, where: str) -> dict:
    if not isinstance(raw, Mapping):
        raise _err(where, f"expected a table, got {shown(raw)}")
    unknown = set(raw) - set(TCP_KEYS)
    if unknown:
        raise _err(where, f"unknown key {shown(sorted(unknown)[0])} (known: {', '.join(TCP_KEYS)})")
    out = {
        "rto_min_s": _parse(parse_duration, raw.get("rto_min", "200ms"), f"{where}.rto_min"),
        "rto_max_s": _parse(parse_duration, raw.get("rto_max", "120s"), f"{where}.rto_max"),
        "delayed_ack": _parse(parse_bool, raw.get("delayed_ack", False), f"{where}.delayed_ack"),
        "sack": _parse(parse_bool, raw.get("sack", True), f"{where}.sack"),
        "initial_window": _int(raw.get("initial_window", 10), f"{where}.initial_window", 1, 1000),
    }
    if raw.get("stock"):  # recorded only when on: rows recorded before it existed keep their identity
        out["stock"] = _parse(parse_bool, raw["stock"], f"{where}.stock")
    # What the emulation can set: route rto_min in whole ms (>= 1), tcp_rto_max_ms in [1 s, 120 s].
    if not 0.001 <= out["rto_min_s"] <= 120:
        raise _err(
            f"{where}.rto_min", f"{out['rto_min_s']:g} s is outside 1 ms..120 s (what Linux's route metric takes)"
        )
    if not 1 <= out["rto_max_s"] <= 120:
        raise _err(f"{where}.rto_max", f"{out['rto_max_s']:g} s is outside 1 s..120 s (net.ipv4.tcp_rto_max_ms)")
    if out["rto_max_s"] < out["rto_min_s"]:
        raise _err(where, "rto_max is below rto_min")
    return out


def _check(raw: Mapping[str, Any], source: str, where: str) -> Scenario:
    unknown = set(raw) - _SCENARIO_KEYS
    if unknown:
        raise _err(where, f"unknown key {shown(sorted(unknown)[0])} (known: {', '.join(sorted(_SCENARIO_KEYS))})")
    name = raw.get("name")
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,79}", name):
        raise _err(where, f"name must be 1-80 letters, digits or ._+- (got {shown(name)})")
    where = f"{source}: scenario {name!r}"
    workload = raw.get("workload")
    if workload not in WORKLOADS:
        raise _err(f"{where}.workload", f"expected one of {', '.join(WORKLOADS)}, got {shown(workload)}")
    hosts = _int(raw.get("hosts", 0), f"{where}.hosts", 2, MAX_HOSTS)
    rate = _parse(parse_rate, raw.get("rate", "100M"), f"{where}.rate")
    if rate > 1e9:
        raise _err(f"{where}.rate", f"{rate:g} bit/s is more than the emulation sustains on 2 cores (keep to 1 Gbit/s)")
    buffer = _parse(lambda v, w: parse_buffer(v, "bytes", w), raw.get("buffer", "32KiB"), f"{where}.buffer")
    if buffer["unit"] not in ("bytes", "packets"):
        raise _err(f"{where}.buffer", f"the emulation has byte or packet buffers, not {buffer['unit']}")
    rates = raw.get("rates", {})
    if not isinstance(rates, Mapping):
        raise _err(f"{where}.rates", f"expected a table of host = rate, got {shown(rates)}")
    rates_bps = {}
    for h, r in rates.items():
        if not re.fullmatch(r"h\d+", str(h)) or int(str(h)[1:]) >= hosts:
            raise _err(f"{where}.rates", f"{shown(h)} is not a host (h0..h{hosts - 1})")
        rates_bps[str(h)] = _parse(parse_rate, r, f"{where}.rates.{h}")
    tcp = _check_tcp(raw.get("tcp", {}), f"{where}.tcp")
    repeat = _int(raw.get("repeat", 3), f"{where}.repeat", 1, MAX_REPEAT)
    timeout = _parse(parse_duration, raw.get("timeout", "60s"), f"{where}.timeout")
    if not 0 < timeout <= MAX_TIMEOUT_S:
        raise _err(f"{where}.timeout", f"{timeout:g} s is outside (0, {MAX_TIMEOUT_S:g}] s")
    jitter = _parse(parse_duration, raw.get("jitter", "0s"), f"{where}.jitter")
    if not 0 <= jitter <= MAX_JITTER_S:
        raise _err(f"{where}.jitter", f"{jitter:g} s is outside [0, {MAX_JITTER_S:g}] s")
    about = raw.get("about", "")
    if not isinstance(about, str) or len(about) > 500:
        raise _err(f"{where}.about", "expected a string of at most 500 characters")
    common = dict(
        name=name,
        workload=workload,
        hosts=hosts,
        rate_bps=rate,
        buffer=buffer,
        tcp=tcp,
        repeat=repeat,
        timeout_s=timeout,
        rates_bps=rates_bps,
        about=about,
        jitter_s=jitter,
    )
    if workload == "incast":
        for k in ("program", "kwargs", "ranks"):
            if k in raw:
                raise _err(f"{where}.{k}", "an incast scenario takes senders and size, not a program")
        senders = _int(raw.get("senders", 0), f"{where}.senders", 1, hosts - 1)
        size = _parse(parse_size, raw.get("size", "64KiB"), f"{where}.size")
        if not 1 <= size <= MAX_SIZE:
            raise _err(f"{where}.size", f"{size} bytes is outside 1..{MAX_SIZE}")
        return Scenario(**common, senders=senders, size=size)
    for k in ("senders", "size"):
        if k in raw:
            raise _err(f"{where}.{k}", "a program scenario takes program, kwargs and ranks")
    program = raw.get("program")
    if not isinstance(program, str) or not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", program):
        raise _err(f"{where}.program", f"expected module:function, got {shown(program)}")
    kwargs = raw.get("kwargs", {})
    if not isinstance(kwargs, Mapping) or not all(isinstance(k, str) for k in kwargs):
        raise _err(f"{where}.kwargs", f"expected a table, got {shown(kwargs)}")
    kwargs = {k: (_parse(parse_size, v, f"{where}.kwargs.{k}") if k == "nbytes" else v) for k, v in kwargs.items()}
    ranks = _int(raw.get("ranks", hosts), f"{where}.ranks", 1, hosts)
    return Scenario(**common, program=program, kwargs=dict(kwargs), ranks=ranks)


def _flat(raw: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in raw.items() if k != "tcp"}
    for k, v in (raw.get("tcp") or {}).items() if isinstance(raw.get("tcp"), Mapping) else ():
        out[f"tcp.{k}"] = v
    if "tcp" in raw and not isinstance(raw["tcp"], Mapping):
        out["tcp"] = raw["tcp"]  # let _check name it
    return out


def _unflat(flat: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in flat.items():
        if k.startswith("tcp."):
            tcp = out.setdefault("tcp", {})
            if not isinstance(tcp, dict):  # `tcp = 3` beside `tcp.x` keys: the caller names the scenario
                raise MatrixError(f"tcp must be a table of TCP settings, got {shown(repr(tcp))}")
            tcp[k[4:]] = v
        else:
            out[k] = v
    return out


_PLAIN_TEMPLATE = re.compile(r"(?:[^{}]|\{[A-Za-z_]\w*\})*")


def _label(v: Any) -> str:
    return re.sub(r"\s+", "", str(v).lower() if isinstance(v, bool) else str(v))


def _expand(raw: Mapping[str, Any], defaults: Mapping[str, Any], index: int, source: str) -> Iterable[dict]:
    where = f"{source}: scenario #{index + 1}" + (
        f" ({shown(raw['name'])})" if isinstance(raw.get("name"), str) else ""
    )
    flat = {**_flat(defaults), **_flat(raw)}
    swept = {k: v for k, v in flat.items() if isinstance(v, list)}
    bad = [k for k in swept if k not in _SWEEPABLE]
    if bad:
        raise _err(where, f"{bad[0]} cannot be a list (lists sweep {', '.join(sorted(_SWEEPABLE))})")
    for k, v in swept.items():
        if not v:
            raise _err(where, f"{k} is an empty list")
    name = flat.get("name")
    if swept and isinstance(name, str):
        missing = [k for k in swept if "{" + k.split(".")[-1] + "}" not in name]
        if missing:
            raise _err(
                where, f"name {shown(name)} must contain {{{missing[0].split('.')[-1]}}}, as {missing[0]} is swept"
            )
    keys = list(swept)
    if isinstance(name, str) and keys and not _PLAIN_TEMPLATE.fullmatch(name):
        # a format spec ({rate:>999999999}) would build a string of any size before the name is checked
        raise _err(where, f"name template {shown(name)} may only hold plain {{key}} fields")
    for combo in itertools.product(*(swept[k] for k in keys)):
        one = dict(flat)
        one.update(zip(keys, combo))
        if isinstance(name, str) and keys:
            try:
                one["name"] = name.format(**{k.split(".")[-1]: _label(v) for k, v in zip(keys, combo)})
            except (KeyError, IndexError, ValueError) as e:
                raise _err(where, f"name template {shown(name)}: {shown(str(e))}") from None
        try:
            yield _unflat(one)
        except MatrixError as e:
            raise _err(where, str(e)) from None


def parse_matrix(doc: Mapping[str, Any], source: str = "matrix") -> tuple[list[Scenario], list[str]]:
    """Scenarios and the quick subset's names, from a parsed TOML document."""
    unknown = set(doc) - {"defaults", "quick", "scenario"}
    if unknown:
        raise _err(source, f"unknown top-level key {shown(sorted(unknown)[0])} (known: defaults, quick, scenario)")
    defaults = doc.get("defaults", {})
    if not isinstance(defaults, Mapping):
        raise _err(f"{source}: defaults", "expected a table")
    bad = set(defaults) - (_SCENARIO_KEYS - {"name"})
    if bad:
        raise _err(f"{source}: defaults", f"unknown key {shown(sorted(bad)[0])}")
    tables = doc.get("scenario", [])
    if not isinstance(tables, list) or not all(isinstance(t, Mapping) for t in tables):
        raise _err(source, "scenario must be an array of tables ([[scenario]])")
    out: list[Scenario] = []
    seen: set[str] = set()
    for i, t in enumerate(tables):
        for raw in _expand(t, defaults, i, source):
            sc = _check(raw, source, f"{source}: scenario #{i + 1}")
            if sc.name in seen:
                raise _err(source, f"two scenarios are named {sc.name!r}")
            seen.add(sc.name)
            out.append(sc)
            if len(out) > MAX_SCENARIOS:
                raise _err(source, f"more than {MAX_SCENARIOS} scenarios")
    if not out:
        raise _err(source, "no scenarios")
    quick = doc.get("quick", [])
    if not isinstance(quick, list) or not all(isinstance(q, str) for q in quick):
        raise _err(f"{source}: quick", "expected a list of scenario names")
    for q in quick:
        if q not in seen:
            raise _err(f"{source}: quick", f"no scenario is named {shown(q)}")
    return out, list(quick)


def load_matrix(path: str | None = None) -> tuple[list[Scenario], list[str]]:
    """Read and check a matrix file (default: the built-in matrix)."""
    from ..platform.loader import parse_failure, read_bounded

    path = path or DEFAULT_MATRIX
    text = read_bounded(Path(path), "matrix file", MAX_FILE_BYTES, MatrixError)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise MatrixError(f"{path}: not valid TOML: {e}") from None
    except RecursionError:
        raise MatrixError(f"{path}: not valid TOML: arrays or tables nested too deeply") from None
    except ValueError as e:  # an integer of more digits than Python converts
        raise MatrixError(f"{path}: not valid TOML: {parse_failure(e)}") from None
    return parse_matrix(doc, os.path.basename(path))
