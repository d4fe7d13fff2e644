"""Running the matrix: each scenario in the emulation and in the simulator.

The emulation repeats a scenario ``repeat`` times on one cluster (clusters
are shared by scenarios with the same platform and kernel settings); the
simulator runs it over ``repeat`` seeds per profile. Every side is reduced
to the same numbers in the same units (:data:`METRICS`): completion time
and the loss-recovery counters, summed over hosts.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .matrix import Scenario
from .profiles import profile_overrides
from .workloads import sim_incast

__all__ = ["METRICS", "KERNEL_COUNTERS", "run_scenarios", "emu_key", "sim_side", "ScenarioResult", "spread"]

#: Counters compared, kernel and simulator in the same units (events summed over hosts).
METRICS = ("timeouts", "recoveries", "loss_probes", "retransmitted", "port_drops")

#: Where each metric comes from: (kernel counter, simulator counter).
KERNEL_COUNTERS = {
    "timeouts": ("TcpExt.TCPTimeouts", "timeouts"),
    "recoveries": ("TcpExt.TCPSackRecovery + TCPRenoRecovery", "fast_retransmits (recovery episodes)"),
    "loss_probes": ("TcpExt.TCPLossProbes", "tail_loss_probes"),
    "retransmitted": ("Tcp.RetransSegs", "segments_retransmitted"),
    "port_drops": ("switch and NIC qdisc drops", "port drops"),
}

#: Simulated seconds after which a simulated run is abandoned (an RTO cascade gone wrong).
SIM_TIME_LIMIT_S = 3600.0


def spread(times: list[float]) -> float | None:
    """Run-to-run spread: interquartile range over median; ``None`` for fewer than two runs.

    The middle half of the runs, so one run in five that met an RTO the
    others escaped does not by itself make a scenario undecidable (the range
    would grow with every repeat); with 2 or 3 runs it is half the range.
    """
    if len(times) < 2:
        return None
    med = statistics.median(times)
    q1, _, q3 = statistics.quantiles(times, n=4, method="inclusive")
    return (q3 - q1) / med if med > 0 else None


def _host_sum(hosts: dict, col: str) -> float | None:
    vals = hosts.get(col)
    if vals is None or any(v is None for v in vals):
        return None
    return float(sum(vals))


def emu_metrics(res: Any) -> dict[str, float | None]:
    h = res.counters["hosts"]
    drops = res.counters["ports"]["drops"]
    return {
        "timeouts": _host_sum(h, "timeouts"),
        "recoveries": _host_sum(h, "recoveries"),
        "loss_probes": _host_sum(h, "loss_probes"),
        "retransmitted": _host_sum(h, "segments_retransmitted"),
        "port_drops": None if any(v is None for v in drops) else float(sum(drops)),
    }


def sim_metrics(counters: dict) -> dict[str, float | None]:
    h = counters["hosts"]
    return {
        "timeouts": _host_sum(h, "timeouts"),
        "recoveries": _host_sum(h, "fast_retransmits"),
        "loss_probes": _host_sum(h, "tail_loss_probes"),
        "retransmitted": _host_sum(h, "segments_retransmitted"),
        "port_drops": float(sum(counters["ports"]["drops"])),
    }


def _median_metrics(runs: list[dict]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for m in METRICS:
        vals = [r[m] for r in runs]
        out[m] = None if not vals or any(v is None for v in vals) else float(statistics.median(vals))
    return out


def _side(times: list[float], runs: list[dict]) -> dict:
    return {
        "times_s": times,
        "median_s": statistics.median(times),
        "spread": spread(times),
        "counters": _median_metrics(runs),
        "runs": runs,
    }


def emu_sysctls(sc: Scenario) -> dict[str, int]:
    """Kernel settings the platform does not carry: none since every ``tcp`` field maps to the
    kernel through ``platform/tcp_backends.toml`` (SACK included)."""
    return {}


def emu_key(sc: Scenario) -> tuple:
    """Scenarios with the same key run on one emulated cluster."""
    return (
        sc.hosts,
        sc.rate_bps,
        sc.buffer["size"],
        sc.buffer["unit"],
        tuple(sorted(sc.rates_bps.items())),
        tuple(sorted(sc.tcp.items())),
    )


#: Version of the emulated side's measurement: rows recorded by another
#: version are never reused (``--reuse-emu``). 2: links shaped with the
#: Ethernet wire overhead (``emu/shaping.py``). 3: hosts send one segment per
#: packet (``gso_max_segs 1``), so frames reach the switch paced as on a wire
#: instead of in GSO bunches (``emu/topology.py``, ``benchmarks/emu_jitter.py``).
EMU_HARNESS = 3


def _identity(d: dict) -> dict:
    """The parameters that make two runs of a scenario the same experiment (``tcp.stock`` is
    recorded only when on, so rows from before it existed are the Reno rows they were)."""
    keys = (
        "workload",
        "hosts",
        "rate_bps",
        "buffer",
        "rates_bps",
        "tcp",
        "senders",
        "size_bytes",
        "program",
        "kwargs",
        "ranks",
        "emu_harness",
    )
    return {k: d.get(k) for k in keys}


def reusable(sc: Scenario, row: dict | None, repeat: int | None) -> dict | None:
    """``row`` if it holds emulated runs of exactly ``sc`` (and as many as asked for)."""
    if not row or not row.get("emu"):
        return None
    mine = ScenarioResult(sc).as_dict(0.0)
    if _identity(json.loads(json.dumps(mine))) != _identity(row):
        return None
    if len(row["emu"]["times_s"]) != (repeat or sc.repeat):
        return None
    return row


def _program(ref: str) -> Callable[..., Any]:
    from ..comm import resolve_program

    return resolve_program(ref)


def sim_side(sc: Scenario, profile: str, seeds: Iterable[int]) -> dict:
    """The simulator's runs of one scenario under one profile."""
    from ..comm import run_sim

    plat = sc.platform(**profile_overrides(profile, sc.tcp["sack"]))
    times, runs = [], []
    for seed in seeds:
        if sc.workload == "incast":
            r = sim_incast(plat, sc.senders, sc.size, seed=seed, time_limit_s=SIM_TIME_LIMIT_S)
            times.append(r.time)
            runs.append(sim_metrics(r.counters))
        else:
            res = run_sim(
                _program(sc.program), plat, sc.ranks, seed=seed, kwargs=dict(sc.kwargs), time_limit=SIM_TIME_LIMIT_S
            )
            times.append(res.time)
            runs.append(sim_metrics(res.counters))
    return _side(times, runs)


def emu_once(cluster: Any, sc: Scenario) -> Any:
    if sc.workload == "incast":
        return cluster.incast_raw(sc.size, sc.senders, timeout_s=sc.timeout_s)
    return cluster.run(sc.program, sc.ranks, kwargs=dict(sc.kwargs), timeout_s=sc.timeout_s)


@dataclass
class ScenarioResult:
    scenario: Scenario
    emu: dict | None = None
    sim: dict[str, dict] = field(default_factory=dict)
    emu_error: str | None = None
    emu_reused: bool = False

    def as_dict(self, noise_limit: float) -> dict:
        sc = self.scenario
        out: dict[str, Any] = {
            "name": sc.name,
            "workload": sc.workload,
            "describe": sc.describe(),
            "about": sc.about,
            "hosts": sc.hosts,
            "rate_bps": sc.rate_bps,
            "buffer": sc.buffer,
            "rates_bps": sc.rates_bps,
            "tcp": sc.tcp,
            "repeat": sc.repeat,
            "emu_harness": EMU_HARNESS,
            "sim_host_noise_s": sc.jitter_s,  # the simulator's side only: not part of the kernel run's identity
        }
        if sc.workload == "incast":
            out.update(senders=sc.senders, size_bytes=sc.size)
        else:
            out.update(program=sc.program, kwargs=sc.kwargs, ranks=sc.ranks)
        out["emu"] = self.emu
        out["emu_error"] = self.emu_error
        out["emu_reused"] = self.emu_reused
        sp = self.emu["spread"] if self.emu else None
        out["noisy"] = bool(sp is not None and sp > noise_limit)
        out["sim"] = {}
        for prof, side in self.sim.items():
            err = None
            if self.emu and self.emu["median_s"] > 0:
                err = side["median_s"] / self.emu["median_s"] - 1.0
            out["sim"][prof] = {**side, "error": err}
        return out


def run_scenarios(
    scenarios: list[Scenario],
    profiles: list[str],
    *,
    backends: tuple[str, ...] = ("sim", "emu"),
    repeat: int | None = None,
    on_result: Callable[[ScenarioResult], None] | None = None,
    on_step: Callable[[str], None] | None = None,
    cluster_factory: Callable[..., Any] | None = None,
    recorded: dict[str, dict] | None = None,
) -> list[ScenarioResult]:
    """Run every scenario on the chosen backends; ``on_result`` sees each as it completes.

    Scenarios are grouped by emulated cluster (same platform and kernel
    settings) so each cluster is built once; results come back in matrix order.
    ``recorded`` maps names to rows of an earlier results document: a
    scenario found there with the same parameters reuses its emulated runs
    (the kernel does not change when the simulator does).
    """
    results = {sc.name: ScenarioResult(sc) for sc in scenarios}
    groups: dict[tuple, list[Scenario]] = {}
    for sc in scenarios:
        groups.setdefault(emu_key(sc), []).append(sc)
    step = on_step or (lambda _msg: None)
    if cluster_factory is None:
        from ..emu import EmuCluster

        cluster_factory = EmuCluster
    for group in groups.values():
        cluster = None
        fresh = [sc for sc in group if reusable(sc, (recorded or {}).get(sc.name), repeat) is None]
        try:
            if "emu" in backends and fresh:
                step(f"building cluster for {group[0].name}")
                cluster = cluster_factory(group[0].platform(), sysctls=emu_sysctls(group[0]))
                cluster.up()
            for sc in group:
                k = repeat or sc.repeat
                r = results[sc.name]
                old = reusable(sc, (recorded or {}).get(sc.name), repeat) if "emu" in backends else None
                if old is not None:
                    r.emu, r.emu_error, r.emu_reused = (
                        _side(old["emu"]["times_s"], old["emu"]["runs"]),
                        old.get("emu_error"),
                        True,
                    )
                elif cluster is not None:
                    times, runs = [], []
                    try:
                        for i in range(k):
                            step(f"{sc.name}: emulated run {i + 1}/{k}")
                            res = emu_once(cluster, sc)
                            times.append(res.time)
                            runs.append(emu_metrics(res))
                        r.emu = _side(times, runs)
                    except Exception as e:  # one scenario's failure must not lose the others
                        r.emu_error = f"{type(e).__name__}: {e}"
                if "sim" in backends:
                    for prof in profiles:
                        step(f"{sc.name}: simulating ({prof})")
                        r.sim[prof] = sim_side(sc, prof, range(1, k + 1))
                if on_result:
                    on_result(r)
        finally:
            if cluster is not None:
                cluster.down()
    return [results[sc.name] for sc in scenarios]
