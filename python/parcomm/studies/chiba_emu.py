"""The emulated half of study ``chiba``: Figs. 2/9/10 and 11 with real
``parcomm bcast`` processes, real TCP between network namespaces with shaped
NICs, and versitygw behind the pacing proxy (:mod:`parcomm.apps.bcast.emu`).

Rates are the simulator's ``chiba2010`` profile scaled by one factor
(node NIC / 30 MB/s) so 16 nodes fit this 2-core machine; the object is
scaled with them (32 MiB instead of 1 GB) and said so in the notes. Needs
root and ``ip netns``; skipped with the reason otherwise, and under
``--quick``.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import rules
from .framework import Comparison, StudyContext, StudyReport

ALGOS = ("flat", "nonsteal", "steal")


@dataclass(frozen=True)
class EmuPlan:
    size: int = 32 << 20  # 1 GB scaled with the rates (k = 20 Mbit/s / 30 MB/s = 1/12): ~ a 400 MB run at EC2 speeds
    node_rate_bps: float = 20e6  # 40 Mbit/s saturated the 2 cores (benchmarks/results/bcast_baselines.md)
    piece_size: int = 256 << 10
    work_pieces: int = 2  # 512 KiB works: enough works per node to steal at 16 nodes
    fig2_nodes: int = 8
    fig2_trials: int = 3
    fig11_nodes: tuple[int, ...] = (4, 8, 16)
    timeout_s: float = 600.0


def emulated_section(ctx: StudyContext, rep: StudyReport, plan: EmuPlan = EmuPlan()) -> None:
    """Add the emulated tables, comparisons and notes to ``rep`` (or a note why not)."""
    from ..apps.bcast.emu import EmuBcast, EmuBcastPlatform, netns_available

    if ctx.quick:
        rep.notes.append("Emulation: skipped under --quick (it takes ~10 minutes); run `parcomm repro chiba`.")
        return
    why_not = netns_available()
    if why_not is not None:
        rep.notes.append(f"Emulation: skipped ({why_not}).")
        return

    fig2, fig11 = [], []
    for nodes in sorted({plan.fig2_nodes, *plan.fig11_nodes}):
        platform = EmuBcastPlatform(nodes=nodes, node_rate_bps=plan.node_rate_bps)
        with EmuBcast(platform, plan.size, piece_size=plan.piece_size, seed=ctx.seed) as eb:
            trials = plan.fig2_trials if nodes == plan.fig2_nodes else 1
            for algo in ALGOS:
                for trial in range(trials):
                    ctx.progress(f"emulation: {algo}, {nodes} nodes, trial {trial + 1}/{trials}")
                    res = eb.run_parcomm(
                        algo, connections=2, work_pieces=plan.work_pieces, seed=ctx.seed + trial, timeout=plan.timeout_s
                    )
                    row = _row(res, algo, nodes, trial + 1)
                    if nodes == plan.fig2_nodes:
                        fig2.append(row)
                    if trial == 0 and nodes in plan.fig11_nodes:
                        fig11.append(row)
            d = eb.platform.describe()
    describe = (
        f"storage aggregate {d['storage_rate_mbit_s']:.0f} Mbit/s, mean per-GET rate "
        f"{d['mean_get_rate_mb_s']:.2f} MB/s, scale {d['scale_from_chiba2010']:.3f} of chiba2010, "
        f"first byte {d['first_byte_latency_s']} s"
    )
    rep.tables["emu_fig2_9_10"] = fig2
    rep.tables["emu_fig11"] = fig11
    _compare(rep, fig2, fig11, plan)
    rep.notes.append(
        f"Emulation: {plan.size >> 20} MiB object, nodes with {plan.node_rate_bps / 1e6:g} Mbit/s NICs each way, "
        "per-GET rates and the storage aggregate scaled from chiba2010 by the same factor (platform: "
        f"{describe}). Times are from the last rendezvous registration to each output's last write; "
        "every output's sha256 was checked. Few trials (machine time): differences under ~15 % are noise."
    )


def _row(res, algo: str, nodes: int, trial: int) -> dict:
    times = res.node_times_s
    return {
        "algo": algo,
        "nodes": nodes,
        "trial": trial,
        "slowest_s": res.completion_s,
        "average_s": sum(times) / len(times),
        "fastest_s": min(times),
        "total_mb_s": sum(res.size / t for t in times if t > 0) / 1e6,
        "fraction_of_bound": res.fraction_of_bound,
        "egress_ratio": res.egress_ratio,
        "all_match": res.all_match,
        "errors": res.errors,
    }


def _compare(rep: StudyReport, fig2: list[dict], fig11: list[dict], plan: EmuPlan) -> None:
    def mean(rows, key):
        return sum(r[key] for r in rows) / len(rows) if rows else float("nan")

    for algo, fig in (("flat", "2"), ("nonsteal", "10"), ("steal", "9")):
        rows = [r for r in fig2 if r["algo"] == algo]
        spread = mean(rows, "slowest_s") / mean(rows, "fastest_s") if rows else float("nan")
        rep.comparisons.append(
            Comparison(
                f"Emulation, Fig. {fig}: {algo}, {plan.fig2_nodes} nodes, slowest / fastest node",
                "flat spread wide; steal/non-steal narrow",
                f"{spread:.2f}",
                rules.no_paper_value("the paper's spread is a figure with no value; the emulation's scale differs"),
                f"mean slowest {mean(rows, 'slowest_s'):.1f} s, {mean(rows, 'fraction_of_bound'):.2f} of the bound",
            )
        )
    top = max(plan.fig11_nodes)
    flat = next((r for r in fig11 if r["algo"] == "flat" and r["nodes"] == top), None)
    for algo, paper in (("steal", "~1.7x (32 nodes)"), ("nonsteal", "~1.6x (32 nodes)")):
        row = next((r for r in fig11 if r["algo"] == algo and r["nodes"] == top), None)
        if flat and row:
            rep.comparisons.append(
                Comparison(
                    f"Emulation, Fig. 11: {algo} / flat total throughput, {top} nodes",
                    paper,
                    f"{row['total_mb_s'] / flat['total_mb_s']:.2f}x",
                    rules.no_paper_value("the emulated cluster's rates and size differ from the paper's"),
                    f"egress {row['egress_ratio']:.2f}x vs flat {flat['egress_ratio']:.2f}x",
                )
            )
