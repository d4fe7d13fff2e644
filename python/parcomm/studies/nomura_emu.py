"""The emulated half of study ``nomura`` (issue 21, item 1): Alltoall A and B
under real MPICH (the wheel) over real Linux TCP between network namespaces,
the models' parameters measured on the same emulated platform.

The platform is seed 001's cluster (:func:`parcomm.platform.opteron_cluster`)
at a rate this 2-core machine sustains with P MPICH ranks: 100 Mbit/s
instead of 1 Gbit/s. The port buffer is scaled with the rate, so that a full
port holds the same time of traffic (128 KiB at 1 Gbit/s = 1.05 ms; 13 107
bytes at 100 Mbit/s): queueing delays keep their ratio to the transfer times,
and eq. 1's onset (n-1)m > q moves to sizes ten times smaller. No switch
latency or cable delay (they need netem, which this kernel lacks); the hosts
run the machine's own Linux TCP (rto_min 200 ms). Needs root and ``ip netns``;
skipped with the reason otherwise, and under ``--quick``.

What runs where:
* g(m), L, g(m, C), q: ``parcomm measure``'s procedure over the socket
  backend on the cluster (the same kernel TCP; parcomm's Python per-message
  costs instead of MPICH's, which matters at small m only);
* PlogP-BR+'s RTO probe: a short MPICH run of A and B at the probe sizes
  (its own launch, so its own timing draws), W by :func:`mean_waits`;
* "actual": another MPICH run of A and B at the sweep's sizes, REPS timed
  calls each after an untimed one;
* the emitted selection file: MPICH's MPI_Alltoall with the file PlogP-BR+
  wrote, beside MPI_Alltoall forced to scattered and to pairwise;
* the simulator: A and B on the same platform (today's Linux stack, MPICH's
  sender-driven rendezvous), so model, simulator and kernel meet on one
  platform and the simulator is held to the kernel on an MPI workload.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import rules
from .framework import Comparison, StudyContext, StudyReport

PROFILE = "emu-mpich"

#: The simulator on the emulated platform: (ctx, platform, P, sizes) ->
#: {(algo, m): {"sim_s": ..., "sim_timeouts": ...}} (``nomura.simulate_on``).
Simulate = Callable[[StudyContext, dict, int, Sequence[int]], dict]


@dataclass(frozen=True)
class EmuPlan:
    procs: tuple[int, ...] = (8, 16)
    rate_bps: float = 100e6
    gbe_buffer: int = 128 * 1024  # the simulated seed-001 port (opteron GBE_SWITCH_BUFFER)
    measure_sizes: tuple[int, ...] = (0, 1024, 16384, 262144)
    probe_sizes: tuple[int, ...] = (1024, 4096, 16384, 65536, 262144)
    probe_calls: int = 4
    # 2048, 32768 and 131072 B are never probed: there W is interpolated.
    sizes: tuple[int, ...] = (1024, 2048, 4096, 16384, 32768, 65536, 131072, 262144)
    reps: int = 4
    timeout_s: float = 1200.0

    @property
    def buffer(self) -> int:
        return round(self.gbe_buffer * self.rate_bps / 1e9)


def why_not() -> str | None:
    import os
    import shutil

    if os.geteuid() != 0:
        return "needs root for network namespaces"
    for tool in ("ip", "tc", "unshare"):
        if not shutil.which(tool):
            return f"needs {tool}"
    if not (shutil.which("mpiexec.hydra") or shutil.which("mpiexec")):
        return "needs mpiexec (pip install mpich)"
    return None


def platform(plan: EmuPlan, procs: int) -> dict:
    from ..platform import opteron_cluster
    from ..platform.defaults import DEFAULT_TIMING_NOISE_S

    # One stack on both sides: the kernel gets stack linux (CUBIC) through platform/tcp_backends.toml,
    # and the simulated twin the timing noise measured on this very emulation (platform/defaults.py).
    return opteron_cluster(
        procs,
        rate_bps=plan.rate_bps,
        buffer=plan.buffer,
        tcp={"stack": "linux"},
        switch_latency_s=0,
        propagation_s=0,
        timing_noise_s=DEFAULT_TIMING_NOISE_S,
    )


def _waits(params, times: dict[str, dict[int, list[float]]]) -> tuple[list[int], dict[str, list[float]]]:
    from ..measure.rto_probe import mean_waits
    from ..models import PlogPBR

    br, p = PlogPBR(params), params.procs
    base = {"A": br.alltoall_a_no_rto, "B": br.alltoall_b_no_rto}
    sizes = sorted(times["A"])
    return sizes, {
        f"alltoall_{a.lower()}": [mean_waits(times[a][m], base[a](p, m), params.rto_s) for m in sizes]
        for a in ("A", "B")
    }


def run_procs(
    ctx: StudyContext, plan: EmuPlan, procs: int, models: tuple[str, ...], simulate: Simulate | None = None
) -> tuple[list[dict], dict]:
    from ..emu import EmuCluster

    with EmuCluster(platform(plan, procs)) as cl:
        params = _parameters(ctx, cl, plan, procs)
        actual, mpi, choices = _mpich_runs(ctx, cl, plan, procs, params)
    emitted = _emitted_penalties(choices[procs], mpi, procs)
    simulated = simulate(ctx, platform(plan, procs), procs, plan.sizes) if simulate else {}
    rows = _rows(params, actual, plan, procs, models, simulated)
    return rows, {
        "profile": PROFILE,
        "procs": procs,
        "q_bytes": params.queue_bytes,
        "L_s": params.L,
        "probe_sizes": params.rto_sizes,
        "rto_waits_probe": params.rto_waits,
        "port_buffer_bytes": plan.buffer,
        "rate_bps": plan.rate_bps,
        "emitted_rules": emitted,
        "emitted_penalty": statistics.fmean(e["penalty"] for e in emitted),
        "mare_simulator": statistics.fmean(r["sim_err"] for r in rows) if simulated else None,
    }


def _parameters(ctx: StudyContext, cl, plan: EmuPlan, procs: int):
    """PlogP-BR's parameters by `parcomm measure`'s procedure on the cluster, and
    PlogP-BR+'s RTO waits from a short MPICH run at the probe sizes."""
    from ..measure import measure
    from ..measure.emu_mpi import emu_runner, mpich_alltoall

    ctx.progress(f"emulation P={procs}: measuring the parameters (socket backend)")
    params = measure(
        emu_runner(cl, procs),
        procs,
        plan.measure_sizes,
        rel_ci=0.1,
        max_reps=6,
        rto_s=0.2,
        pattern_ks=[1, procs // 2, procs - 1],
        meta={
            "platform": f"opteron:{procs} at {plan.rate_bps / 1e6:g} Mbit/s, port {plan.buffer} B, emulated",
            "backend": "emu (socket)",
        },
    )
    ctx.progress(f"emulation P={procs}: RTO probe (MPICH)")
    work = Path(ctx.out_dir) / f"emu_p{procs}"
    probe = mpich_alltoall(cl, procs, plan.probe_sizes, plan.probe_calls, work / "probe", timeout_s=plan.timeout_s)
    params.rto_sizes, params.rto_waits = _waits(params, probe)
    params.meta.update(rto_probe_calls=plan.probe_calls, rto_probe_backend="emu (MPICH)")
    params.save(Path(ctx.out_dir) / f"params_emu_p{procs}.json")
    return params


def _mpich_runs(ctx: StudyContext, cl, plan: EmuPlan, procs: int, params):
    """A and B at the sweep's sizes ("actual"), and MPI_Alltoall with the selection
    file PlogP-BR+ emitted beside MPI_Alltoall forced to each algorithm."""
    from ..measure.emu_mpi import installed_mpich_selection, mpich_alltoall
    from ..models.emit import grid_choices, mpich_json

    work = Path(ctx.out_dir) / f"emu_p{procs}"
    ctx.progress(f"emulation P={procs}: Alltoall A and B (MPICH)")
    actual = mpich_alltoall(cl, procs, plan.sizes, plan.reps, work / "actual", timeout_s=plan.timeout_s)
    ctx.progress(f"emulation P={procs}: MPI_Alltoall with the emitted selection file")
    sel = work / "selection.json"
    choices = grid_choices({procs: params}, plan.sizes, "plogp-br+")
    sel.write_text(mpich_json(choices, installed_mpich_selection()))
    mpi = {
        name: mpich_alltoall(
            cl, procs, plan.sizes, plan.reps, work / name, algos=("mpi",), env=env, timeout_s=plan.timeout_s
        )["mpi"]
        for name, env in (
            ("emitted", {"MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE": sel}),
            ("scattered", {"MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM": "scattered"}),
            ("pairwise", {"MPIR_CVAR_ALLTOALL_INTRA_ALGORITHM": "pairwise"}),
        )
    }
    return actual, mpi, choices


def _rows(
    params, actual: dict, plan: EmuPlan, procs: int, models: tuple[str, ...], simulated: dict | None = None
) -> list[dict]:
    from ..models import make_model

    mdl = {name: make_model(name, params) for name in models}
    rows = []
    for m in plan.sizes:
        for algo in ("A", "B"):
            ts = actual[algo][m]
            row = {
                "profile": PROFILE,
                "procs": procs,
                "algo": algo,
                "size_bytes": m,
                "runs": len(ts),
                "actual_s": statistics.fmean(ts),
                "actual_calls_s": ts,
                "rto_waits": params.rto_waits_at(f"alltoall_{algo.lower()}", m),
            }
            for name, md in mdl.items():
                row[f"{name}_s"] = md.predict(f"alltoall_{algo.lower()}", procs, m)
                row[f"{name}_err"] = abs(row[f"{name}_s"] - row["actual_s"]) / row["actual_s"]
            if simulated:
                row.update(simulated[(algo, m)])
                row["sim_err"] = abs(row["sim_s"] - row["actual_s"]) / row["actual_s"]
            rows.append(row)
    return rows


def _emitted_penalties(choices, mpi: dict, procs: int) -> list[dict]:
    """Per size: the emitted file's MPI_Alltoall against the faster forced algorithm."""
    out = []
    for m, algo in choices:
        t = {k: statistics.fmean(v[m]) for k, v in mpi.items()}
        out.append(
            {
                "procs": procs,
                "size_bytes": m,
                "chose": algo,
                **{f"{k}_s": v for k, v in t.items()},
                "penalty": t["emitted"] / min(t["scattered"], t["pairwise"]) - 1,
            }
        )
    return out


def _simulator_comparison(procs: int, rows: list[dict], summary: dict) -> Comparison:
    """How far the simulator, on the emulated platform, is from MPICH over the kernel."""
    worst = max(rows, key=lambda r: r["sim_err"])
    return Comparison(
        f"P={procs}, emulated platform: the simulator (today's Linux stack, MPICH's rendezvous) vs MPICH as "
        "measured, MARE over A and B",
        "— (the simulator held to the kernel; conformance target: median error <= 15 %)",
        f"{summary['mare_simulator']:.1%} (median {statistics.median(r['sim_err'] for r in rows):.1%})",
        rules.no_paper_value("the simulator against the emulation, not against the paper"),
        f"largest: {worst['algo']} at {worst['size_bytes']} B, simulated {worst['sim_s'] * 1e3:.3g} ms "
        f"({worst['sim_timeouts']:.3g} RTOs per call, all sockets) vs MPICH {worst['actual_s'] * 1e3:.3g} ms",
    )


def emulated_section(
    ctx: StudyContext,
    rep: StudyReport,
    models: tuple[str, ...],
    plan: EmuPlan = EmuPlan(),
    simulate: Simulate | None = None,
) -> tuple[list[dict], list[dict]]:
    """(rows, summaries) of the emulated MPI runs, or none and a note why not."""
    if ctx.quick:
        rep.notes.append("Emulated MPI (MPICH across namespaces): skipped under --quick; run `parcomm repro nomura`.")
        return [], []
    reason = why_not()
    if reason:
        rep.notes.append(f"Emulated MPI (MPICH across namespaces): skipped ({reason}).")
        return [], []
    rows, summary = [], []
    for procs in plan.procs:
        try:
            r, s = run_procs(ctx, plan, procs, models, simulate)
        except Exception as e:  # an emulation failure must not cost the simulated half: say what failed
            rep.notes.append(f"Emulated MPI at P = {procs}: failed ({type(e).__name__}: {str(e)[:300]}).")
            continue
        rows += r
        summary.append(s)
        rep.comparisons.append(
            Comparison(
                f"P={procs}, emulated MPICH: MPI_Alltoall with the selection file PlogP-BR+ emitted, penalty vs the "
                f"faster of forced scattered and forced pairwise",
                "— (beyond the paper: the emitted rules' penalty vs the oracle on the emulated cluster)",
                f"{s['emitted_penalty']:.1%} (mean over {len(s['emitted_rules'])} sizes)",
                rules.no_paper_value("beyond the paper: the paper emits no selection file"),
                "; ".join(
                    f"{e['size_bytes']} B: chose {e['chose'][-1].upper()}, {e['penalty']:+.0%}"
                    for e in s["emitted_rules"]
                ),
            )
        )
        if s["mare_simulator"] is not None:
            rep.comparisons.append(_simulator_comparison(procs, r, s))
    if summary:
        rep.notes.append(
            f"Emulated MPI: seed 001's cluster at {plan.rate_bps / 1e6:g} Mbit/s (what this 2-core machine "
            f"sustains with 16 MPICH ranks), the port buffer scaled with the rate to {plan.buffer} B (the same "
            f"1.05 ms of traffic as 128 KiB at 1 Gbit/s), no switch or cable latency (no netem here), today's "
            f"Linux TCP (rto_min 200 ms). A and B are Figs. 6 and 7 written with mpi4py point-to-point calls "
            f"(parcomm.measure.mpi_alltoall) under the MPICH wheel, one rank per namespace, MPIR_CVAR_NOLOCAL=1, "
            f"OFI tcp on eth0, waiting ranks yielding the CPU (MPIR_CVAR_ENABLE_HEAVY_YIELD=1: the P ranks share "
            f"this machine's cores, the paper's had one each); each 'actual' is the mean of {plan.reps} timed "
            f"calls after an untimed one. The "
            f"parameters g, L, g(m, C), q come from `parcomm measure`'s procedure over the socket backend on the "
            f"same cluster; PlogP-BR+'s RTO waits from a separate, shorter MPICH run at "
            f"{', '.join(map(str, plan.probe_sizes))} B ({plan.probe_calls} calls each)."
        )
    return rows, summary
