"""Study ``hironaka``: the parallel heat equation on 130 SPARCstation LX (seed 002).

On the simulated platform of seed 002 (``segments_router(16)``: 130 hosts on
16 shared 10BASE-T segments, Cisco 7000 router with 533 Mbit/s CxBus and
100,000 packets/s; every parameter cites its source in
:mod:`parcomm.platform.segments`), with each host computing at 4.6 MFlop/s
(Table 1) and the solver's boundary exchange as a rank program:

1. Figs. 3 and 4: time and MFlop/s for M = 11 (121 tasks), N = 330 .. 2640,
   beside §3.1's model with F from Table 1 and B (plus a per-message cost)
   fitted from communication-only measurements: the §5 ping-pong (one pair,
   four pairs in a segment) and the solver's exchange with free computing;
   the F and B that the paper's own two numbers imply through §3.1; and a
   what-if run with hosts at that implied F.
2. Figs. 5 and 6: 10 round trips between pairs, up to 4 pairs inside one
   segment and up to 8 pairs across segments through the router.
3. §5.3's open question: how much does placing tasks on segments matter?
   Round-robin over segments (as a spawner dealing out tasks might) against
   tasks in host order and compact blocks of neighbouring tasks per segment.
"""

from __future__ import annotations

import statistics

from ..apps.heat.bench import cross_segment_pairs, pairs_program, segment_pairs
from ..apps.heat.decomposition import PLACEMENTS, Decomposition, place, placement_stats, segment_groups
from ..apps.heat.kernel import FLOPS_PER_POINT
from ..apps.heat.solver import heat_program, summarize
from ..comm import run_sim
from ..models.stencil import StencilModel, implied_parameters
from ..platform.segments import segments_router
from .framework import Comparison, StudyContext, StudyReport

NAME = "hironaka"
TITLE = "Parallel heat equation on 130 workstations, 16 shared Ethernets and a router (PVM evaluation)"
SOURCE = "seed 002 (Hironaka) §3 Figs. 3-4, §3.1 model and Table 3, §5 Figs. 5-6, §5.3"

#: Table 1: SPARCstation LX, "MFlops 値 4.6".
SPARC_LX_MFLOPS = 4.6
#: §3.2: M = 11 (121 tasks, one per workstation), N = 330, 660, 1320, 2640.
PAPER_M = 11
PAPER_NS = (330, 660, 1320, 2640)
#: §3.2: ~26 MFlop/s at N = 330 on 121 tasks; §6: at most ~56 MFlop/s (the largest N).
PAPER_MFLOPS_330 = 26.0
PAPER_MFLOPS_MAX = 56.0
#: r = alpha dt / h^2 of the runs (any stable value; the time per step does not depend on it).
R = 0.2


def _platform() -> dict:
    return segments_router(16)


def _heat_run(ctx: StudyContext, plat, groups, N: int, steps: int, placement: str,
              mflops: float | None = SPARC_LX_MFLOPS) -> dict:
    """One simulated run; ``mflops=None`` makes computing free (the exchange alone)."""
    d = Decomposition(N, PAPER_M)
    hosts = place(d, groups, placement)
    res = run_sim(heat_program, plat, d.tasks, seed=ctx.seed, hosts=hosts,
                  kwargs={"N": N, "M": PAPER_M, "steps": steps, "r": R, "mflops": mflops, "trace": True})
    s = summarize(res.results, N, steps)
    tot = res.host_totals()
    buses = res.counters["buses"]
    ends = [max(x["step_end_s"][k] for x in res.results) for k in range(steps)]
    median = statistics.median(b - a for a, b in zip([0.0] + ends, ends)) if ends else 0.0
    return {**s, "median_step_s": median, "placement": placement, "mflops_per_host": mflops, "timeouts": tot["timeouts"],
            "retransmitted_bytes": tot["bytes_retransmitted"], "collisions": int(sum(buses["collisions"])),
            "bus_drops": int(sum(buses["drops"])), "max_bus_utilization": float(max(buses["utilization"])),
            "router_forwarded": int(sum(res.counters["routers"]["forwarded"])),
            **placement_stats(d, hosts, groups), "step_end_s": ends, "wall_s": res.wall_s}


def _bench(ctx: StudyContext, plat, groups, where: str, ks, sizes) -> list[dict]:
    rows = []
    for k in ks:
        ctx.progress(f"§5 benchmark: {k} pairs, {where}")
        hosts = segment_pairs(groups, k) if where == "segment" else cross_segment_pairs(groups, k)
        res = run_sim(pairs_program, plat, 2 * k, hosts=hosts, seed=ctx.seed,
                      kwargs={"sizes": list(sizes), "npairs": k, "repeats": 3})
        per_pair = [x for x in res.results if x]
        for i, m in enumerate(sizes):
            rows.append({"where": where, "pairs": k, "size_bytes": m,
                         "time_10rt_s": max(x["times_s"][i] for x in per_pair),
                         "mean_10rt_s": max(x["mean_s"][i] for x in per_pair)})
    return rows


def _fit(rows: list[dict], k: int, sizes) -> tuple[float, float]:
    pts = [(r["size_bytes"], r["time_10rt_s"] / 20) for r in rows if r["pairs"] == k and r["size_bytes"] in sizes]
    return StencilModel.fit_comm([p[0] for p in pts], [p[1] for p in pts])


def run(ctx: StudyContext) -> StudyReport:
    plat = _platform()
    groups = segment_groups(plat)
    steps = 10 if ctx.quick else 40
    sizes = (16, 300, 1000, 3000, 10000) if ctx.quick else (16, 100, 300, 600, 1000, 2000, 3000, 6000, 10000)
    fit_sizes = tuple(m for m in sizes if 300 <= m <= 3000)  # the range of the boundary messages (240-1920 B)

    # --- Figs. 5 and 6 (also the measurements the model is fitted on) -----------------
    seg = _bench(ctx, plat, groups, "segment", (1, 2, 3, 4), sizes)
    cross = _bench(ctx, plat, groups, "router", (1, 2, 4, 8) if not ctx.quick else (1, 8), sizes)

    # --- Figs. 3 and 4 ----------------------------------------------------------------
    sweep = []
    for N in PAPER_NS:
        ctx.progress(f"heat: N = {N}, M = {PAPER_M}, {steps} steps")
        sweep.append(_heat_run(ctx, plat, groups, N, steps, "linear"))

    # §3.1's model, F from Table 1, B and a per-message cost from §5's ping-pong:
    # one pair alone (isolated) and 4 pairs sharing a segment (contended, Fig. 5's busiest case).
    models = {}
    for label, k in (("isolated", 1), ("contended", 4)):
        B, L = _fit(seg, k, fit_sizes)
        models[label] = StencilModel(F=SPARC_LX_MFLOPS * 1e6, B=B, C=FLOPS_PER_POINT, latency_s=L)
    # ... and from the exchange alone: the solver's communication pattern with free
    # computing, at the smallest and largest N (boundary messages of 240 and 1920 bytes);
    # step = 4N/(BM) + 4L through the two points.
    ex = {}
    for N in (PAPER_NS[0], PAPER_NS[-1]):
        ctx.progress(f"exchange only: N = {N}")
        ex[N] = _heat_run(ctx, plat, groups, N, steps, "linear", mflops=None)["time_per_step_s"]
    n0, n1 = PAPER_NS[0], PAPER_NS[-1]
    per_value = (ex[n1] - ex[n0]) / (4 * (n1 - n0) / PAPER_M)
    if per_value > 0:
        lat = max(0.0, (ex[n0] - 4 * n0 / PAPER_M * per_value) / 4)
        models["exchange"] = StencilModel(F=SPARC_LX_MFLOPS * 1e6, B=1.0 / per_value, C=FLOPS_PER_POINT, latency_s=lat)
    model_rows = []
    for row in sweep:
        N = row["N"]
        entry = {"N": N, "sim_step_s": row["time_per_step_s"], "sim_mflops": row["mflops"]}
        for label, m in models.items():
            for form, mm in ((label, m), (f"{label}_paper_form", m.paper_form())):
                p = mm.performance(N, PAPER_M) / 1e6
                entry[f"{form}_mflops"] = p
                entry[f"{form}_error"] = p / row["mflops"] - 1
        model_rows.append(entry)

    # What-if (not a fit used anywhere else): hosts at the F that §3.1 infers from the
    # paper's own two numbers, everything else unchanged.
    imp = implied_parameters(PAPER_M, [(330, PAPER_MFLOPS_330 * 1e6), (2640, PAPER_MFLOPS_MAX * 1e6)])
    whatif = []
    for N in (PAPER_NS[0], PAPER_NS[-1]):
        ctx.progress(f"what-if F = {imp['F'] / 1e6:.2f} MFlop/s: N = {N}")
        whatif.append(_heat_run(ctx, plat, groups, N, steps, "linear", mflops=imp["F"] / 1e6))

    # --- §5.3: placement ----------------------------------------------------------------
    place_rows = []
    for N in ((330, 2640) if ctx.quick else PAPER_NS):
        for how in PLACEMENTS:
            if how == "linear":
                r = next(x for x in sweep if x["N"] == N)
            else:
                ctx.progress(f"placement {how}: N = {N}")
                r = _heat_run(ctx, plat, groups, N, steps, how)
            place_rows.append(r)

    rep = StudyReport(NAME, TITLE, SOURCE)
    strip = lambda rows: [{k: v for k, v in r.items() if k != "step_end_s"} for r in rows]  # noqa: E731
    rep.tables = {"fig3_fig4": strip(sweep), "model": model_rows, "fig5_segment": seg, "fig6_router": cross,
                  "placement": strip(place_rows), "whatif_paper_F": strip(whatif),
                  "model_parameters": [{"model": k, "F_flops": m.F, "B_values_per_s": m.B, "C": m.C,
                                        "latency_s": m.latency_s} for k, m in models.items()]}
    rep.figures = _plot(ctx, sweep, models, seg, cross, place_rows, whatif)
    _compare(rep, sweep, model_rows, models, seg, cross, place_rows, steps)
    w = {r["N"]: r for r in whatif}
    rep.comparisons.insert(4, Comparison(
        f"what-if: hosts at F = {imp['F'] / 1e6:.2f} MFlop/s (inferred from the paper's points by §3.1)",
        f"{PAPER_MFLOPS_330:g} MFlop/s at N = 330, {PAPER_MFLOPS_MAX:g} at N = 2640",
        f"{w[330]['mflops']:.1f} at N = 330, {w[2640]['mflops']:.1f} at N = 2640",
        abs(w[330]["mflops"] / PAPER_MFLOPS_330 - 1) < 0.5 and abs(w[2640]["mflops"] / PAPER_MFLOPS_MAX - 1) < 0.5,
        "a sensitivity check, not parcomm's reproduction: with the slower hosts the simulated network gives the paper's "
        "magnitudes at both ends"))
    return rep


def _plot(ctx, sweep, models, seg, cross, place_rows, whatif) -> list[str]:
    plt = ctx.pyplot()
    figs = []
    fig, ax = plt.subplots(figsize=(6, 4))
    for r in sweep:
        ax.plot(range(1, len(r["step_end_s"]) + 1), r["step_end_s"], "o-", label=f"N = {r['N']}")
    ax.set_xlabel("steps")
    ax.set_ylabel("time (s)")
    ax.set_title("Fig. 3: execution time, M = 11 (121 tasks), simulated")
    figs.append(ctx.save_figure(fig, "fig3_time"))

    fig, ax = plt.subplots(figsize=(6, 4))
    Ns = [r["N"] for r in sweep]
    ax.plot(Ns, [r["mflops"] for r in sweep], "o-", label="parcomm simulator")
    fine = [330 * 2 ** (k / 8) for k in range(0, 25)]
    for label, m in models.items():
        ax.plot(fine, [m.performance(n, PAPER_M) / 1e6 for n in fine], "--", label=f"§3.1 model + latency ({label} B)")
    ax.plot([r["N"] for r in whatif], [r["mflops"] for r in whatif], "s", color="tab:purple",
            label=f"simulator, what-if F = {whatif[0]['mflops_per_host']:.2f} MFlop/s")
    ax.plot([330], [PAPER_MFLOPS_330], "k*", markersize=12, label="paper: N = 330")
    ax.axhline(PAPER_MFLOPS_MAX, color="k", ls=":", label="paper: maximum (56)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("N")
    ax.set_ylabel("MFlop/s")
    ax.set_title("Fig. 4: performance, M = 11")
    figs.append(ctx.save_figure(fig, "fig4_mflops"))

    for rows, name, title in ((seg, "fig5_segment", "Fig. 5: pairs inside one segment"),
                              (cross, "fig6_router", "Fig. 6: pairs across segments (router)")):
        fig, ax = plt.subplots(figsize=(6, 4))
        for k in sorted({r["pairs"] for r in rows}):
            pts = [r for r in rows if r["pairs"] == k]
            ax.plot([r["size_bytes"] for r in pts], [r["time_10rt_s"] * 1e3 for r in pts], "o-", label=f"{k} pair(s)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("10 round trips (ms)")
        ax.set_title(title)
        figs.append(ctx.save_figure(fig, name))

    fig, ax = plt.subplots(figsize=(6, 4))
    Ns = sorted({r["N"] for r in place_rows})
    w = 0.25
    for i, how in enumerate(PLACEMENTS):
        ax.bar([j + (i - 1) * w for j in range(len(Ns))],
               [next(r["time_per_step_s"] for r in place_rows if r["N"] == n and r["placement"] == how) * 1e3 for n in Ns],
               w, label=how)
    ax.set_xticks(range(len(Ns)), [f"N = {n}" for n in Ns])
    ax.set_ylabel("time per step (ms)")
    ax.set_title("§5.3: placement of 121 tasks on 16 segments")
    figs.append(ctx.save_figure(fig, "placement"))
    return figs


def _t(rows, k, m):
    return next(r["time_10rt_s"] for r in rows if r["pairs"] == k and r["size_bytes"] == m)


def _compare(rep, sweep, model_rows, models, seg, cross, place_rows, steps) -> None:
    C = rep.comparisons
    by = {r["N"]: r for r in sweep}
    r330 = by[330]
    C.append(Comparison("performance at N = 330, 121 tasks", f"~{PAPER_MFLOPS_330:g} MFlop/s (§3.2)",
                        f"{r330['mflops']:.1f} MFlop/s ({r330['time_per_step_s'] * 1e3:.1f} ms/step, "
                        f"comm share {r330['comm_share']:.0%})",
                        abs(r330["mflops"] / PAPER_MFLOPS_330 - 1) < 0.5))
    best = max(sweep, key=lambda r: r["mflops"])
    C.append(Comparison("maximum performance over the sweep", f"~{PAPER_MFLOPS_MAX:g} MFlop/s (§6)",
                        f"{best['mflops']:.1f} MFlop/s at N = {best['N']}",
                        abs(best["mflops"] / PAPER_MFLOPS_MAX - 1) < 0.5,
                        "parcomm's hosts compute at Table 1's 4.6 MFlop/s; see the note on implied F"))
    small_flat = all(by[n]["comm_share"] > 0.5 for n in (330, 660))
    C.append(Comparison("N = 330..1320: time grows little with steps, communication dominates",
                        "yes (§3.2, Fig. 3)",
                        ", ".join(f"N={r['N']}: comm {r['comm_share']:.0%}" for r in sweep),
                        small_flat and by[2640]["comm_share"] < by[330]["comm_share"]))
    imp = implied_parameters(PAPER_M, [(330, PAPER_MFLOPS_330 * 1e6), (2640, PAPER_MFLOPS_MAX * 1e6)])
    sim_imp = implied_parameters(PAPER_M, [(r["N"], r["mflops"] * 1e6) for r in sweep])
    C.append(Comparison("F, B implied by §3.1 through the (N, MFlop/s) points",
                        f"F = {imp['F'] / 1e6:.2f} MFlop/s, B = {imp['B']:.0f} values/s (from 26 @330, 56 @2640)",
                        (f"F = {sim_imp['F'] / 1e6:.2f} MFlop/s, B = {sim_imp['B']:.0f} values/s (from the simulated sweep)"
                         if sim_imp["F"] == sim_imp["F"] else "the simulated sweep lies on no §3.1 curve (1/P not linear in 1/N)"),
                        None, "the paper's points imply hosts at ~12 % of Table 1's 4.6 MFlop/s"))
    for label in models:
        if label == "exchange":
            what = "B, latency from the solver's exchange alone (computing free), N = 330 and 2640"
        else:
            what = f"B, latency from §5 ping-pong, {'1 pair' if label == 'isolated' else '4 pairs in a segment'}"
        errs = [r[f"{label}_error"] for r in model_rows]
        perrs = [r[f"{label}_paper_form_error"] for r in model_rows]
        m = models[label]
        C.append(Comparison(f"§3.1 model ({label} B = {m.B:.0f} values/s, latency {m.latency_s * 1e3:.2f} ms) vs simulator",
                            "model of §3.1 (no measured comparison in the paper)",
                            "errors " + ", ".join(f"N={r['N']}: {e:+.0%}" for r, e in zip(model_rows, errs))
                            + "; without latency " + ", ".join(f"{e:+.0%}" for e in perrs),
                            None, what))
    flat = _t(seg, 1, 1000) / _t(seg, 1, 16)
    prop = _t(seg, 1, 10000) / _t(seg, 1, 1000)
    C.append(Comparison("Fig. 5: knee near 1000 bytes (1 pair)",
                        "flat below ~1000 B, proportional above",
                        f"t(1000)/t(16) = {flat:.2f}, t(10000)/t(1000) = {prop:.2f}",
                        flat < 2.5 and prop > 4))
    kmax = max(r["pairs"] for r in seg)
    small = _t(seg, kmax, 300) / _t(seg, 1, 300)
    large = _t(seg, kmax, 10000) / _t(seg, 1, 10000)
    C.append(Comparison(f"Fig. 5: contention of {kmax} pairs in one segment",
                        "little below 1000 B, clear above",
                        f"{kmax} pairs / 1 pair: {small:.2f} at 300 B, {large:.2f} at 10000 B",
                        small < 1.2 and large > 1.5))
    cmax = max(r["pairs"] for r in cross)
    c_add = _t(cross, cmax, 10000) / _t(cross, 1, 10000)
    via = _t(cross, 1, 10000) / _t(seg, 1, 10000)
    C.append(Comparison(f"Fig. 6: {cmax} concurrent pairs across segments",
                        "time barely changes with more pairs; like inside a segment",
                        f"{cmax} pairs / 1 pair at 10000 B: {c_add:.2f}; across / inside (1 pair): {via:.2f}",
                        c_add < 1.2 and via < 2.0,
                        "each pair has its own two segments; a store-and-forward router adds one more transmission"))
    for N in sorted({r["N"] for r in place_rows}):
        t = {r["placement"]: r for r in place_rows if r["N"] == N}
        rr, lin, bl = t["round_robin"], t["linear"], t["blocks"]
        C.append(Comparison(f"§5.3 placement, N = {N}: time per step (RTOs)",
                            "open question (paper left placement to PVM)",
                            "; ".join(f"{lab} {x['time_per_step_s'] * 1e3:.1f} ms ({x['timeouts']}), "
                                      f"{x['crossing_router']} msgs/step via the router"
                                      for lab, x in (("round-robin", rr), ("linear", lin), ("blocks", bl)))
                            + f"; round-robin / blocks = {rr['time_per_step_s'] / bl['time_per_step_s']:.2f}",
                            None, f"over {steps} steps; one 1 s RTO (a frame lost after 16 collisions) adds {1000 / steps:.0f} ms to the mean"))
    rep.notes += [
        f"Simulated {steps} steps per run (time per step is the mean over them). Hosts compute at 4.6 MFlop/s "
        "(Table 1, a LINPACK-class figure); the solver counts C = 6 operations per point. PVM 3.3's own costs are "
        "represented only by the platform's per-message overheads (0.5 ms + 0.15 us/B per side, derived from Fig. 5's "
        "knee in parcomm.platform.segments); PVM's daemon-routed UDP path and XDR packing are not modelled.",
        "Through §3.1's formula (1/P linear in 1/N) the paper's two numbers imply an effective F of about "
        f"{imp['F'] / 1e6:.2f} MFlop/s per host: the real SPARCstation LX ran this stencil far below its 4.6 MFlop/s rating "
        "(6 KB cache, memory-bound loop) or PVM's per-message costs were larger; parcomm does not tune F to hit the figure, "
        "so its large-N performance is higher than the paper's.",
        "The model is fitted on the §5 benchmark only (one-way time = 10-round-trip time / 20, least-squares line over "
        f"{', '.join(str(s) for s in sorted({r['size_bytes'] for r in seg}) if 300 <= s <= 3000)} bytes): 'isolated' from one pair, "
        "'contended' from 4 pairs sharing a segment; 'exchange' from the solver's own boundary exchange with computing "
        "made free (a communication-only measurement of the platform, at N = 330 and 2640). A task's 4 sends and 4 receives share its segment with 7-8 other "
        "tasks' messages and the router's forwarded traffic, which the paper's per-task B cannot see.",
        "Step times vary widely from step to step (Fig. 3's curves are not straight): every task sends its 4 "
        "boundaries at the same instant, so each segment sees a synchronized burst; CSMA/CD collisions and binary "
        "exponential backoff (up to 1023 slots of 51.2 us), 4.3BSD delayed ACKs (200 ms timer) behind a 1-segment "
        "initial window, and, rarely, a frame dropped after 16 collisions (a 1 s minimum RTO) stretch some steps far "
        "beyond the quietest ones. The paper's per-task B has no term for this contention (§4 item 1 names it).",
        "Placement results are means over the simulated steps and carry the luck of rare 1 s RTOs (frames dropped "
        "after 16 collisions): the --quick run (10 steps) is dominated by them; the full run (40 steps) is the answer.",
        "Placement: 'round_robin' deals task i to segment i mod 16 (all 440 boundary messages per step cross the router), "
        "'linear' puts tasks on hosts in order, 'blocks' gives each segment a compact block of neighbouring tasks "
        "(recursive bisection).",
    ]
