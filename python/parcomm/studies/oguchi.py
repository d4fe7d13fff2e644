"""Study ``oguchi``: HPA on the 100-PC ATM cluster and TCP retransmission (seed 000).

Seed 000 (Oguchi, Shintani, Tamura, Kitsuregawa; /work/shared/seeds/000_*)
runs HPA (Hash Partitioned Apriori) on 100 Pentium Pro PCs joined by a
155 Mbit/s ATM switch with 2k-cell port buffers, UBR, TCP/IP over ATM.
Passes 3-5 process little data but take long: every node ends its scan at
nearly the same time and sends what it has to the owners of the few
candidates (and its large itemsets to everyone), the switch drops cells, and
TCP's retransmission timers, all equal, fire together. This study runs the
real HPA rank program (:mod:`parcomm.apps.hpa.hpa`) on real Quest data on
the simulated seed-000 platform (:func:`parcomm.platform.atm_cluster`) and
reproduces Table 2 and Figs. 2-6.

Scaling (what is scaled and why the phenomenon survives)
--------------------------------------------------------
The paper mines D = 10,000,000 transactions (100,000 per node). What decides
the losses is how many bytes arrive at one switch port at the end of a pass
compared with its 2048-cell buffer: each node sends an owner the itemsets it
found for the owner's candidates, ~support x (D/P) x k x 2 bytes per
candidate, which is below one 8 KB block in passes 3-5, so all of it leaves
at the pass end. Those bytes scale with the transactions *per node*, so the
study keeps D/P = 100,000 at P = 100 and the paper's 8 KB blocks, MTU and
buffer. To keep the Python work small, each of the 100,000 generated
transactions stands for ``weight`` = 100 identical ones (HPA's ``weight``):
counts, block bytes and CPU are multiplied by it, the itemsets are those of
the generated sample. Replication would also multiply the node-to-node
spread of per-pass CPU time (relative spread of n transactions ~ 1/sqrt(n))
by sqrt(weight) = 10, and that spread is exactly what keeps pass-end
flushes apart; so every rank's scan CPU per pass is rescaled to the mean
plus its sample deviation / sqrt(weight) (:func:`~parcomm.apps.hpa.hpa.spread_scales`),
the spread of independent 100,000-transaction partitions. Blocks travel
with HPA's ``payload="counts"``: the same bytes at the same simulated times
as blocks of itemsets (tests/test_oguchi.py checks bytes and block counts),
without pickling ~160,000 arrays per run. Fig. 6 keeps the
same data (10M represented transactions) on fewer nodes, as the paper does.
``--quick`` keeps 100 nodes and the data (at 32 nodes the pass-end fan-in
is too small to overflow a port) and runs five configurations (no Fig. 3
sweep, one X, no Fig. 6).

Data: Quest T21.I4.5.N5000 with L = 6000 patterns (Agrawal & Srikant VLDB
'94 generator, :mod:`parcomm.apps.hpa.quest`). The paper gives N = 5000,
D = 10M, min support 0.7 %, ~800 MB (80 bytes per transaction: T ~ 17-20
items as 4-byte ints plus ids); T, I and L are not given. They were chosen
by ``scripts/oguchi_data_search.py``: the grid point whose serial Apriori
on the study's sample comes closest to Table 2's C and L columns (sum of
|log ratio|; results in benchmarks/results/oguchi_data_search.json): per
pass C/L = -/910, 413595/43, 23/17, 6/5, 1/1 against the paper's -/1023,
522753/32, 19/19, 7/7, 1/0. Only those data-description columns enter the
choice, never the times or retransmissions.

CPU cost model, calibrated on Table 2 at 100 nodes: pass 1 (11.2 s) is
reading and counting the node's items -> seconds per item; later passes
re-read their (trimmed) transactions at the same per-item cost (the paper
reads its partition from disk in 64 KB I/Os every pass); pass 2 (69.8 s)
minus its scan, divided by the node's pass-2 candidate subsets, gives the
seconds per subset formed, hashed and sent plus per itemset probed by its
owner, split evenly between the two (assumption). Candidate generation:
0.2 us per candidate (estimate, 0.1 s for pass 2). Pass 1 and 2 times are
therefore inputs; passes 3-5 and everything in Figs. 2-6 are outputs.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ..apps.hpa.hpa import CostModel, hpa, merge_result, spread_scales, work_profile
from ..apps.hpa.quest import QuestParams, load, quest_info, write_quest
from ..comm import run_sim
from ..platform import apply_rto, atm_cluster, set_rto
from ..platform.atm import AN1000_BUFFER_CELLS, SOLARIS_2_5_1_TCP
from ..result import WaySummary, compare
from . import paper_data, rules
from .framework import NOT_IN_QUICK, Comparison, StudyContext, StudyReport, find, finding, skip, way_row
from .paper_data import oguchi as paper
from .rules import MEASURED_BAND, MEASURED_BASIS

NAME = "oguchi"
#: Why the four-ways table has no real-process run ("run") of this study.
NO_RUN = "no real run: HPA runs as real processes (parcomm mine run), but one machine has no ATM switch, whose cell loss is the subject"
TITLE = "HPA on the 100-PC ATM cluster: pass-end broadcasts, cell loss and TCP retransmission"
SOURCE = "seed 000 (Oguchi, Shintani, Tamura, Kitsuregawa), Table 2, Figs. 2-6, §4-5"

#: Captions of the report's figures (file name without .png -> text).
CAPTIONS = {
    "table2_passes": "Oguchi et al. Table 2 beside the simulated 100-PC ATM cluster: time of each HPA pass (left) "
    "and candidate and large itemsets per pass (right, log scale). Hollow black markers are the paper's printed "
    "values (exact; its C column moved back to its pass, pass 1's C lost in the text); filled bars and markers "
    "are parcomm's. Passes 1-2 calibrate parcomm's cost model, passes 3+ are predictions; parcomm's C and L come "
    "from its Quest data, not the paper's transactions.",
    "fig2_min_maxdefault": "Oguchi et al. Fig. 2 on the simulated 100-PC ATM cluster: time of HPA passes 3-5 (left "
    "axis) and retransmitted KB per host (right axis) against the TCP RTO minimum MIN, with "
    "MAX at its 60000 ms default. The hollow black circle at MIN = 200 ms is the paper's default run (Table 2: "
    "3.2 + 6.2 + 12.1 = 21.5 s, exact); the rest of the paper's Fig. 2 curves are not in its text (plot only), so "
    "they are not plotted.",
    "fig3_min_maxmin100": "Oguchi et al. Fig. 3: the same sweep with MAX = MIN + 100 ms. The paper's values are not "
    "in its text (plot only); no Table 2 point applies (MAX is not the default).",
    "fig4_schemes_time": "Oguchi et al. Fig. 4: time of passes 3-5 against X for a fixed RTO (MIN = MAX = X) and the "
    "two random schemes, where each node draws its MIN in X..X+100 ms. The paper's values are not in its text "
    "(plot only).",
    "fig5_schemes_retx": "Oguchi et al. Fig. 5: retransmitted KB per host for the same schemes as Fig. 4. The "
    "paper's values are not in its text (plot only).",
    "fig6_nodes": "Oguchi et al. Fig. 6: HPA execution time (left) and passes 3+ alone (right) against the node "
    "count, default RTO vs random MIN 250-350 ms with MAX = MIN + 100 ms, the same data on fewer "
    "nodes. Hollow black circles: the paper's default run at 100 nodes from Table 2 (102.5 s in all, 21.5 s for "
    "passes 3-5; exact); the paper's Fig. 6 curves are not in its text (plot only).",
}

# ---- the paper (seed 000) ------------------------------------------------
PAPER_NODES = 100
PAPER_TRANSACTIONS = 10_000_000  # §4.2
PAPER_ITEMS = 5000  # §4.2
PAPER_MIN_SUPPORT = 0.007  # §4.2: 0.7 %
PAPER_BLOCK_BYTES = 8192  # §4.2: message block 8 KB
# Table 2 (its one source is paper_data.oguchi). In the extracted text the C column is
# shifted up one row (C of pass 2 = 522753 = 1023 * 1022 / 2 = all pairs of pass 1's 1023
# large items); moved back down there. Pass 1's C is lost in the extraction.
PAPER_TABLE2 = paper.TABLE2
PAPER_DEFAULT_MIN_S = SOLARIS_2_5_1_TCP["rto_min_s"]  # 200 ms (§5)
PAPER_DEFAULT_MAX_S = SOLARIS_2_5_1_TCP["rto_max_s"]  # 60000 ms (§5)
PAPER_SPREAD_S = 0.1  # MAX = MIN + 100 ms; random in [X, X + 100 ms] (§5.1-5.2)
PAPER_FIG6_X_S = 0.25  # MIN random in 250..350 ms, MAX = MIN + 100 ms (§5.3)

# ---- the data set (see the module docstring) --------------------------------
# Chosen by scripts/oguchi_data_search.py against Table 2's C and L columns (see the docstring).
QUEST = {"avg_len": 21.0, "avg_pattern_len": 4.5, "items": PAPER_ITEMS, "patterns": 6000, "seed": 1}
QUEST_NAME = f"T{QUEST['avg_len']:g}.I{QUEST['avg_pattern_len']:g}.N{PAPER_ITEMS}.L{QUEST['patterns']}"
SAMPLE_FULL = 100_000
WEIGHT = PAPER_TRANSACTIONS // SAMPLE_FULL  # 100: each generated transaction stands for 100
CANDIDATE_COST_S = 0.2e-6  # per candidate generated and inserted (estimate)


def _plan(quick: bool) -> dict:
    if quick:
        # the phenomenon needs the paper's fan-in: 100 nodes even here, fewer runs
        return {
            "nodes": PAPER_NODES,
            "sample": SAMPLE_FULL,
            "fig2_min": [0.05, 0.2],
            "fig3_min": [],
            "fig4_x": [0.2],
            "fig4_schemes": ("fixed", "random_both"),
            "fig6_nodes": [],
        }
    return {
        "nodes": PAPER_NODES,
        "sample": SAMPLE_FULL,
        "fig2_min": [0.05, 0.1, 0.2, 0.3, 0.5],
        "fig3_min": [0.05, 0.1, 0.2, 0.3, 0.5],
        "fig4_x": [0.1, 0.2, 0.3],
        "fig4_schemes": ("fixed", "random_min", "random_both"),
        "fig6_nodes": [25, 50, 100],
    }


def dataset(ctx: StudyContext, sample: int, parts: int) -> str:
    """The Quest file (generated once, kept in the study's output directory)."""
    d = ctx.out_dir / "data"
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"quest_{QUEST_NAME}_D{sample}_s{QUEST['seed']}.qtx"
    if path.exists():
        try:
            if quest_info(path)["transactions"] == sample:
                return str(path)
        except ValueError:
            pass
    ctx.progress(f"oguchi: generating {sample} Quest transactions")
    write_quest(path, QuestParams(transactions=sample, **QUEST), parts)
    return str(path)


def calibrated_cost(path: str, nodes: int, weight: int) -> tuple[CostModel, dict]:
    """The CostModel calibrated on Table 2's pass 1 and 2 times, for a node
    holding ``D/P`` = (sample / nodes) x weight transactions (100,000 in the
    paper). Returns the model and the figures used."""
    tx = load(path, 0, 1)
    items_node = len(tx.items) * weight / nodes
    t1, t2 = PAPER_TABLE2[0]["time_s"], PAPER_TABLE2[1]["time_s"]
    per_item = t1 / items_node
    # pass-2 subsets per node: from HPA's own steps on this data, cost-free
    prof = work_profile(path, nodes, PAPER_MIN_SUPPORT, CostModel(0, 0, 0, 0, 0, 0), weight=weight, max_len=2)
    subsets_node = float(np.mean([s.get(2, 0) for s in prof["subsets"]]))
    n_cand2 = PAPER_TABLE2[1]["candidates"]
    per_pair = (t2 - per_item * items_node - CANDIDATE_COST_S * n_cand2) / subsets_node
    cost = CostModel(
        per_transaction_s=0.0,
        per_subset_s=per_pair / 2,
        per_probe_s=per_pair / 2,
        per_candidate_s=CANDIDATE_COST_S,
        per_item_s=per_item,
        pass1_per_item_s=per_item,
    )
    info = {
        "items_per_node": items_node,
        "pass2_subsets_per_node": subsets_node,
        "s_per_item": per_item,
        "s_per_subset_and_probe": per_pair,
    }
    return cost, info


# ---- the pass-end exchange alone (tests, emulation) -------------------------


async def pass_end_skeleton(
    comm: Any,
    *,
    rounds: int = 3,
    owners: tuple = (0,),
    nbytes: int = 8192,
    compute_s: float = 0.05,
    large_bytes: int = 64,
    idle: str = "compute",
) -> list[float]:
    """HPA's communication at the end of a pass, without the mining: every
    rank computes ``compute_s`` (the same on all ranks, so they end together),
    sends ``nbytes`` (its last, partial block) to each owner and an empty
    last block to every other rank, receives the same, then sends
    ``large_bytes`` of large itemsets to everyone (the all-to-all
    broadcast). Returns each round's duration on this rank. ``idle="sleep"``
    waits instead of computing (the emulation: 32+ rank processes on a
    2-core machine cannot compute side by side)."""
    p, me = comm.size, comm.rank
    out = []
    for _ in range(rounds):
        t0 = comm.wtime()
        if idle == "sleep":
            await comm.sleep(compute_s)
        else:
            await comm.compute(compute_s)
        for tag, size_of in ((4811, lambda d: nbytes if d in owners else 0), (4812, lambda d: large_bytes)):
            reqs = [comm.irecv(source=s, tag=tag) for s in range(p) if s != me]
            reqs += [comm.isend(None, dest=d, tag=tag, nbytes=size_of(d)) for d in range(p) if d != me]
            await comm.waitall(reqs)
        out.append(comm.wtime() - t0)
    return out


# ---- one simulated run ------------------------------------------------------

# The AN1000-20 switches cells, not frames: the cells of frames that arrive at
# one output port from many inputs interleave there, and an overflow drops
# cells of every frame in progress (seed 000 §4.1: UBR, "cell collisions are
# inevitable" and a full buffer discards cells). The core models this with
# the switch option cell_interleaving (a fluid cell queue per output port).
CELL_INTERLEAVING = True
# Solaris runs kernel callouts (TCP's retransmission and delayed-ACK timers)
# on the clock interrupt, hz = 100 by default ("hires_tick: ... use a system
# clock rate of 1000 instead of the default value of 100", Solaris Tunable
# Parameters Reference Manual): a timer fires on the first 10 ms tick after
# its deadline, and the hosts' clocks are not in phase with each other.
SOLARIS_TIMER_TICK_S = 0.01


def _platform(
    nodes: int,
    rto: tuple,
    seed: int,
    buffer_cells: int = AN1000_BUFFER_CELLS,
    cell_interleaving: bool = CELL_INTERLEAVING,
    timer_tick_s: float = SOLARIS_TIMER_TICK_S,
) -> dict:
    plat = atm_cluster(
        nodes, buffer_cells=buffer_cells, cell_interleaving=cell_interleaving, tcp={"timer_tick_s": timer_tick_s}
    )
    kind = rto[0]
    if kind == "minmax":
        return set_rto(plat, rto[1], rto[2])
    return apply_rto(plat, kind, rto[1], seed=seed)


def run_one(job: dict) -> dict:
    """Run HPA once; ``job`` holds path, nodes, rto, cost, scales, weight, seed."""
    nodes = job["nodes"]
    plat = _platform(
        nodes,
        job["rto"],
        job["seed"],
        job.get("buffer_cells", AN1000_BUFFER_CELLS),
        job.get("cell_interleaving", CELL_INTERLEAVING),
    )
    res = run_sim(
        hpa,
        plat,
        nodes,
        seed=job["seed"],
        kwargs={
            "path": job["path"],
            "min_support": PAPER_MIN_SUPPORT,
            "block_bytes": PAPER_BLOCK_BYTES,
            "cost": job["cost"],
            "weight": job["weight"],
            "payload": "counts",
            "cpu_scale": job["scales"],
        },
    )
    m = merge_result(res.results)
    snaps = {s["pass"]: s for s in res.results[0]["counter_snapshots"]}
    h = res.counters["hosts"]
    retx_total = float(np.sum(h["bytes_retransmitted"]))
    retx_before3 = float(np.sum(snaps[3]["bytes_retransmitted"])) if 3 in snaps else retx_total
    to_total = int(np.sum(h["timeouts"]))
    to_before3 = int(np.sum(snaps[3]["timeouts"])) if 3 in snaps else to_total
    passes = m["passes"]
    flush_sd = {}
    for i, ps in enumerate(passes):
        if ps["pass"] >= 2:
            fl = np.array([r["passes"][i]["flush_s"] for r in res.results])
            flush_sd[ps["pass"]] = float(fl.std())
    row = {
        "label": job["label"],
        "nodes": nodes,
        "rto": "/".join(str(x) for x in job["rto"]),
        "total_s": res.time,
        "pass1_2_s": sum(p["time_s"] for p in passes if p["pass"] <= 2),
        "pass3plus_s": sum(p["time_s"] for p in passes if p["pass"] >= 3),
        "retx_bytes_per_host": retx_total / nodes,
        "retx_bytes_per_host_pass1_2": retx_before3 / nodes,
        "retx_bytes_per_host_pass3plus": (retx_total - retx_before3) / nodes,
        "timeouts": to_total,
        "timeouts_pass1_2": to_before3,
        "timeouts_pass3plus": to_total - to_before3,
        "fast_retransmits": int(np.sum(h["fast_retransmits"])),
        "cell_drops": int(np.sum(res.counters["ports"]["cell_drops"])),
        "packet_drops": res.port_drops(),
        "events": res.events,
        "wall_s": res.wall_s,
    }
    for p in passes:
        row[f"pass{p['pass']}_s"] = p["time_s"]
        row[f"pass{p['pass']}_C"] = p["candidates"]
        row[f"pass{p['pass']}_L"] = p["large"]
        row[f"pass{p['pass']}_MB_sent"] = p["bytes_sent"] / 1e6
        if p["pass"] in flush_sd:
            row[f"pass{p['pass']}_flush_sd_ms"] = flush_sd[p["pass"]] * 1e3
    return row


RUN_VERSION = 2  # bump when run_one or what it records changes


def job_key(job: dict) -> str:
    """A digest of everything a run depends on: the job's parameters, the
    data file, the source of HPA, the compiled core and ``RUN_VERSION``."""
    import hashlib
    import importlib
    import json

    from .. import _core

    hpa_mod = importlib.import_module("parcomm.apps.hpa.hpa")

    h = hashlib.sha256()
    h.update(f"run {RUN_VERSION}".encode())
    for f in (hpa_mod.__file__, _core.__file__):
        h.update(Path(f).read_bytes())
    h.update(Path(job["path"]).read_bytes())
    desc = {k: v for k, v in job.items() if k not in ("path", "cost")}
    desc["cost"] = repr(job["cost"])
    h.update(json.dumps(desc, sort_keys=True, default=str).encode())
    return h.hexdigest()[:32]


def _run_all(ctx: StudyContext, jobs: list[dict]) -> dict[str, dict]:
    """Run the distinct jobs on the context's executor. Runs
    are deterministic, so results are kept in ``data/runs.json`` under
    :func:`job_key` and reused while nothing they depend on changed."""
    import json

    cache_path = ctx.out_dir / "data" / "runs.json"
    try:
        cache = json.loads(cache_path.read_text())
    except (OSError, ValueError):
        cache = {}
    keys = {j["label"]: job_key(j) for j in jobs}
    out: dict[str, dict] = {lab: cache[key] for lab, key in keys.items() if key in cache}
    uniq = {j["label"]: j for j in jobs if j["label"] not in out}
    if uniq:
        out.update(_run_jobs(ctx, uniq))
        cache.update({keys[lab]: out[lab] for lab in uniq})
        cache_path.write_text(json.dumps(cache))
    return out


def _run_jobs(ctx: StudyContext, uniq: dict[str, dict]) -> dict[str, dict]:
    results = ctx.map(run_one, list(uniq.values()), f"oguchi: {len(uniq)} simulated runs of HPA")
    return dict(zip(uniq, results))


# ---- the pass-end exchange in the emulation (issue 5, item 5) -----------------

EMU_HOSTS = 32
# The AN1000 port as an emulated bridge port: AAL5 payload rate of OC-3
# (149.76 Mbit/s x 48/53 = 135.6 Mbit/s, so IP bytes move at the ATM link's
# pace) and 2048 cells x 48 payload bytes = 96 KiB of buffer; MTU 9180.
EMU_SPEC = f"star:{EMU_HOSTS},rate=135.6M,buffer=96KiB,mtu=9180"
# 64 KiB to each of 4 owners: the 32 rank processes share 2 CPUs here and
# start their flushes tens of ms apart, so a flush must last longer than that
# to overlap at the owner's port (31 x 64 KiB = 2 MB, ~120 ms at 135.6 Mbit/s).
EMU_REPEATS = 3
# The emulating kernel's RTO timer is a jiffies timer: CONFIG_HZ=250 on this
# machine's kernel (/proc/config.gz), and a ~200 ms expiry sits in the timer
# wheel's first level, so it fires on a 4 ms tick.
LINUX_TIMER_TICK_S = 0.004
EMU_SKELETON = {"rounds": 4, "owners": [0, 1, 2, 3], "nbytes": 65536, "compute_s": 0.1, "idle": "sleep"}


#: The simulated twins of the emulated runs: how much of the kernel each models.
#: ``sack-tlp`` is what the study compared before the stack profiles (SACK, tail
#: loss probes and 4 ms timer ticks); ``linux`` takes every mechanism of the
#: ``linux`` stack profile (platform/stacks/linux.toml: Linux RTO rules,
#: timestamps, RACK, PRR, quick-ACK), the RTO bounds staying the experiment's.
TWINS = ("sack-tlp", "linux")


def _emu_platform(rto: tuple, seed: int, twin: str | None) -> dict:
    """The emulated platform (``twin=None``) or its simulated twin."""
    from ..platform import from_spec_string
    from ..platform.schema import tcp_spec
    from ..platform.stack import MECHANISMS, stack_mechanisms

    plat = from_spec_string(EMU_SPEC)
    plat = set_rto(plat, rto[1], rto[2]) if rto[0] == "minmax" else apply_rto(plat, rto[0], rto[1], seed=seed)
    for h in plat["hosts"]:
        if twin == "sack-tlp":  # the RFC transport (stack rfc) with SACK and TLP on the kernel's timer ticks
            rfc = tcp_spec(stack="rfc")
            h["tcp"].update({k: rfc[k] for k in (*MECHANISMS, "cubic", "hystart", "cwnd_restart_after_idle")})
            h["tcp"].update(sack=True, tail_loss_probe=True, timer_tick_s=LINUX_TIMER_TICK_S)
        elif twin == "linux":
            h["tcp"].update(stack_mechanisms("linux"))
    return plat


#: The RTO settings of the emulated pass-end exchange.
EMU_CONFS = [
    ("minmax", PAPER_DEFAULT_MIN_S, PAPER_DEFAULT_MAX_S),
    ("fixed", 0.2),
    ("random_min", 0.2),
    ("random_both", 0.2),
]


def _emulation(ctx: StudyContext) -> tuple[list[dict], str]:
    """Emulated vs simulated pass-end exchange on 32 hosts; ([], reason) when it cannot run."""
    if ctx.quick:
        return [], "emulation skipped in --quick (about 3 minutes on this machine)"
    from ..emu import EmuCluster, EmuError, require_root

    try:
        require_root()
    except EmuError as e:  # not root, no network namespaces; a bug elsewhere still surfaces
        return [], f"emulation unavailable here ({e}); simulated results only"
    rows = []
    for rto in EMU_CONFS:
        lab = _label(EMU_HOSTS, rto)
        ctx.progress(f"oguchi: emulated {lab}")
        ems = []
        for attempt in range(2):  # a loaded machine can fail to start 32 rank processes in time: retry once
            try:
                with EmuCluster(_emu_platform(rto, ctx.seed, None)) as cl:
                    while len(ems) < EMU_REPEATS:  # the emulation is not deterministic: a few runs each
                        ems.append(
                            cl.run(
                                "parcomm.studies.oguchi:pass_end_skeleton",
                                kwargs=EMU_SKELETON,
                                timeout_s=300,
                                connect_timeout_s=120,
                            )
                        )
                break
            except EmuError as e:
                if attempt:
                    return rows, f"emulation failed ({e}); table incomplete"
        twins = [
            (
                f"simulated{'' if twin == 'sack-tlp' else '-' + twin} ({twin} twin)",
                [
                    run_sim(
                        pass_end_skeleton,
                        _emu_platform(rto, ctx.seed, twin),
                        EMU_HOSTS,
                        seed=ctx.seed,
                        kwargs=EMU_SKELETON,
                    )
                ],
            )
            for twin in TWINS
        ]
        for backend, runs in (("emulated (Linux TCP)", ems), *twins):
            notes = runs[0].extra.get("tcp_notes", []) or [] if backend.startswith("em") else []
            rows.append(_emulation_row(lab, backend, compare(runs)[runs[0].way], notes))
    return rows, ""


def _emulation_row(lab: str, backend: str, s: WaySummary, tcp_notes: list[str]) -> dict:
    """One backend's runs of one RTO setting (:func:`parcomm.result.compare`'s summary of them):
    means and ranges over the runs, retransmitted bytes per host."""
    retx = [(t["bytes_retransmitted"] or 0) / EMU_HOSTS for t in s.host_totals_s]
    return {
        "rto": lab,
        "backend": backend,
        "runs": s.runs,
        "time_s": float(np.mean(s.times_s)),
        "time_min_s": min(s.times_s),
        "time_max_s": max(s.times_s),
        "retx_bytes_per_host": float(np.mean(retx)),
        "retx_min": min(retx),
        "retx_max": max(retx),
        "timeouts": float(np.mean([t["timeouts"] for t in s.host_totals_s])),
        "fast_retransmits": float(np.mean([t["fast_retransmits"] for t in s.host_totals_s])),
        "port_drops": float(np.mean(s.port_drops_s)),
        "tcp_notes": f"{len(tcp_notes)} settings adjusted by the kernel, e.g. {tcp_notes[0]}" if tcp_notes else "",
    }


# ---- the study ----------------------------------------------------------------


def _label(nodes: int, rto: tuple) -> str:
    kind = rto[0]
    if kind == "minmax":
        return f"P{nodes} MIN={rto[1] * 1e3:g}ms MAX={rto[2] * 1e3:g}ms"
    return f"P{nodes} {kind} X={rto[1] * 1e3:g}ms"


def _rto_settings(plan: dict) -> tuple[tuple, list, list, list, list]:
    """The RTO settings the figures sweep: the default, Figs. 2, 3 and 4-5, and Fig. 6's (nodes, RTO) pairs."""
    default = ("minmax", PAPER_DEFAULT_MIN_S, PAPER_DEFAULT_MAX_S)
    fig2 = [("minmax", m, PAPER_DEFAULT_MAX_S) for m in plan["fig2_min"]]
    fig3 = [("minmax", m, m + PAPER_SPREAD_S) for m in plan["fig3_min"]]
    fig4 = [(s, x) for s in plan["fig4_schemes"] for x in plan["fig4_x"]]
    fig6 = [(p, r) for p in plan["fig6_nodes"] for r in (default, ("random_min", PAPER_FIG6_X_S))]
    return default, fig2, fig3, fig4, fig6


def _queue_jobs(ctx: StudyContext, plan: dict, path: str, cost, weight: int) -> tuple[list[dict], tuple, list]:
    """Every simulated run of HPA the study needs, one job per (nodes, RTO) setting: the figures'
    sweeps, the default with an ample buffer, and (full runs) the synchronized-scan sensitivity.
    Returns the jobs, the settings of :func:`_rto_settings` and the sensitivity's settings."""
    nodes = plan["nodes"]
    profiles: dict[int, list] = {}

    def scales(p: int, factor: float = 1 / math.sqrt(weight)) -> list:
        if p not in profiles:
            profiles[p] = work_profile(path, p, PAPER_MIN_SUPPORT, cost, weight=weight)["cpu"]
        return spread_scales(profiles[p], factor)

    def job(p: int, rto: tuple) -> dict:
        return {
            "label": _label(p, rto),
            "path": path,
            "nodes": p,
            "rto": rto,
            "cost": cost,
            "scales": scales(p),
            "weight": weight,
            "seed": ctx.seed,
            "cell_interleaving": CELL_INTERLEAVING,
        }

    settings = default, fig2, fig3, fig4, fig6 = _rto_settings(plan)
    jobs = [job(nodes, default)] + [job(nodes, r) for r in fig2 + fig3 + fig4] + [job(p, r) for p, r in fig6]
    jobs.append({**job(nodes, default), "label": f"P{nodes} default, ample buffer", "buffer_cells": 1 << 20})
    # Sensitivity (not a calibration): every node's scan takes the mean CPU
    # time, so all pass-end flushes start together -- the other end of the
    # range from the modelled spread of independent partitions.
    sync = [] if ctx.quick else [default, ("random_min", PAPER_FIG6_X_S)]
    jobs += [
        {**job(nodes, x), "label": f"{_label(nodes, x)}, synchronized scans", "scales": scales(nodes, 0.0)}
        for x in sync
    ]
    return jobs, settings, sync


def _table2(base: dict, ample: dict) -> list[dict]:
    """Table 2 row by row: the paper's C, L and time per pass beside the default run's (and the ample buffer's time)."""
    t2 = []
    k = 1
    while f"pass{k}_s" in base or k <= len(PAPER_TABLE2):
        pp = PAPER_TABLE2[k - 1] if k <= len(PAPER_TABLE2) else {}
        t2.append(
            {
                "pass": k,
                "paper_C": pp.get("candidates"),
                "paper_L": pp.get("large"),
                "paper_T_s": pp.get("time_s"),
                "parcomm_C": base.get(f"pass{k}_C"),
                "parcomm_L": base.get(f"pass{k}_L"),
                "parcomm_T_s": base.get(f"pass{k}_s"),
                "parcomm_T_ample_buffer_s": ample.get(f"pass{k}_s"),
                "parcomm_MB_sent": base.get(f"pass{k}_MB_sent"),
                "parcomm_flush_sd_ms": base.get(f"pass{k}_flush_sd_ms"),
            }
        )
        k += 1
        if k > 12:
            break
    return t2


def _calibration_table(calib: dict, cost, nodes: int, sample: int, weight: int) -> list[dict]:
    """What the CostModel was calibrated to and how much data one simulated node stands for."""
    return [
        {"quantity": q, "value": v}
        for q, v in {
            **calib,
            **{
                f: getattr(cost, f)
                for f in ("per_subset_s", "per_probe_s", "per_item_s", "pass1_per_item_s", "per_candidate_s")
            },
            "nodes": nodes,
            "sample_transactions": sample,
            "weight": weight,
            "represented_transactions": sample * weight,
            "transactions_per_node": sample * weight / nodes,
        }.items()
    ]


def _figure_tables(runs: dict[str, dict], nodes: int, settings: tuple) -> tuple[list, list, list, list]:
    """The runs of Figs. 2, 3, 4-5 and 6, each row with the setting it was run at."""
    default, fig2, fig3, fig4, fig6 = settings

    def r(p: int, rto: tuple) -> dict:
        return runs[_label(p, rto)]

    f2 = [dict(r(nodes, x), min_ms=x[1] * 1e3, max_ms=x[2] * 1e3) for x in fig2]
    f3 = [dict(r(nodes, x), min_ms=x[1] * 1e3, max_ms=x[2] * 1e3) for x in fig3]
    f4 = [dict(r(nodes, x), scheme=x[0], x_ms=x[1] * 1e3) for x in fig4]
    f6 = [dict(r(p, x), scheme="default" if x == default else "random_min 250..350, MAX=MIN+100") for p, x in fig6]
    return f2, f3, f4, f6


def _emulation_note(why: str) -> str:
    """How the emulated pass-end exchange is run and read beside its two simulated twins."""
    return (
        f"Emulation: the pass-end exchange alone (4 rounds, 64 KiB to each of 4 "
        f"owners, empty last blocks and a 64-byte broadcast to everyone) on {EMU_HOSTS} namespaces, {EMU_SPEC}, real "
        "Linux TCP (SACK, RACK, TLP on; RTO = srtt + max(4 rttvar, rto_min); MAX below 1 s is clamped to 1 s), beside "
        "two simulated twins on the same platform: 'simulated' with SACK, TLP and 4 ms timer ticks (the comparison "
        "before the stack profiles) and 'simulated-linux' with every mechanism of the linux stack profile (Linux RTO "
        f"rules, timestamps, RACK, PRR, quick-ACK); {EMU_REPEATS} emulated runs per setting (times "
        "include Python rank processes competing for this machine's 2 CPUs, so they vary from run to run; the "
        "simulated times are those of an idle cluster). The kernel refuses MAX below 1 s (clamped, see the emulation table's notes) and "
        "recovers most losses by SACK/RACK fast retransmission; the SACK+TLP twin (no RACK) detects lost "
        "retransmissions only by timeout and backs off to seconds with MAX = 60 s, the linux twin as the kernel does. "
        + (why or "Table 'emulation'.")
    )


def run(ctx: StudyContext) -> StudyReport:
    plan = _plan(ctx.quick)
    nodes = plan["nodes"]
    sample = plan["sample"]
    weight = WEIGHT
    path = dataset(ctx, sample, nodes)
    ctx.progress("oguchi: calibrating the CostModel on Table 2")
    cost, calib = calibrated_cost(path, nodes, weight)

    jobs, settings, sync = _queue_jobs(ctx, plan, path, cost, weight)
    default = settings[0]
    ctx.progress(f"oguchi: {len({j['label'] for j in jobs})} simulated runs of HPA")
    runs = _run_all(ctx, jobs)

    base = runs[_label(nodes, default)]
    ample = runs[f"P{nodes} default, ample buffer"]
    rep = StudyReport(NAME, TITLE, SOURCE)
    t2 = _table2(base, ample)
    rep.tables["table2"] = t2
    rep.tables["runs"] = list(runs.values())
    rep.tables["calibration"] = _calibration_table(calib, cost, nodes, sample, weight)
    f2, f3, f4, f6 = _figure_tables(runs, nodes, settings)
    rep.tables.update({"fig2": f2, "fig3": f3, "fig4_5": f4, "fig6": f6})
    rep.figures = [_plot_table2(ctx, t2)] + _plots(ctx, f2, f3, f4, f6)
    rep.paper_values = paper_data.for_report(NAME)
    _compare(rep, base, ample, f2, f3, f4, f6, nodes)
    _notes(rep, calib, cost, nodes, sample, weight, ctx.quick)
    _why(rep, base, ample, f2)
    _why_rows(rep, base, f2, f4)
    if sync:
        _compare_sync(
            rep, base, runs[_label(nodes, sync[1])], [runs[f"{_label(nodes, x)}, synchronized scans"] for x in sync]
        )
    emu, why = _emulation(ctx)
    if emu:
        rep.tables["emulation"] = emu
        _compare_emu(rep, emu)
    rep.ways = _ways(ctx, base, emu, why, nodes)
    rep.notes.append(_emulation_note(why))
    rep.headline = _headline(rep, base, ample)
    return rep


def _headline(rep: StudyReport, base: dict, ample: dict) -> list[dict]:
    out = []
    for start, claim, how in (
        (
            "pass-end losses need the 2k-cell port buffer",
            "Cell loss at the switch's 2k-cell port buffer causes the retransmissions (§4.2)",
            f"At each pass end every node sends its counts to the owners at once: {base['cell_drops']} cells "
            f"({base['packet_drops']} packets) dropped, {ample['packet_drops']} with an ample buffer.",
        ),
        ("pass 3+4+5 time", "Passes 3-5 take 21.5 s (Table 2)", ""),
        (
            "Figs. 4-5",
            "Random RTOs per node retransmit far fewer bytes than a fixed one (§5.2)",
            "Random timers spread retransmissions that would collide again.",
        ),
    ):
        c = find(rep, start)
        if c is not None:
            out.append(finding(c, claim, how))
    return out


def _compare_emu(rep: StudyReport, emu: list[dict]) -> None:
    by = {(q["rto"], q["backend"].split()[0]): q for q in emu}
    labs = list(dict.fromkeys(q["rto"] for q in emu))
    fixed = next((lab for lab in labs if "fixed" in lab), None)
    for lab in labs:
        e, s_ = by.get((lab, "emulated")), by.get((lab, "simulated"))
        if not e or not s_:
            continue
        rep.comparisons.append(
            Comparison(
                f"pass-end exchange, {lab}: emulated vs simulated",
                "losses at the owners' ports (§4.2)",
                f"emu (mean of {e['runs']}) {e['time_s']:.2f} s [{e['time_min_s']:.2f}-{e['time_max_s']:.2f}], "
                f"{e['retx_bytes_per_host'] / 1e3:.0f} KB/host retx [{e['retx_min'] / 1e3:.0f}-{e['retx_max'] / 1e3:.0f}], "
                f"{e['port_drops']:.0f} drops, {e['timeouts']:.0f} RTOs | sim {s_['time_s']:.2f} s, "
                f"{s_['retx_bytes_per_host'] / 1e3:.0f} KB/host, {s_['port_drops']:.0f} drops, {s_['timeouts']:.0f} RTOs",
                _both_drop(e, s_),
            )
        )
    for lab in labs:  # the twin with the linux stack's mechanisms, beside the emulation
        e, s_, old = by.get((lab, "emulated")), by.get((lab, "simulated-linux")), by.get((lab, "simulated"))
        if e and s_ and old:
            rep.comparisons.append(
                Comparison(
                    f"pass-end exchange, {lab}: emulated vs simulated with the linux stack",
                    "losses at the owners' ports (§4.2)",
                    f"emu {e['time_s']:.2f} s, {e['port_drops']:.0f} drops, {e['timeouts']:.0f} RTOs | linux twin "
                    f"{s_['time_s']:.2f} s, {s_['port_drops']:.0f} drops, {s_['timeouts']:.0f} RTOs (SACK+TLP twin "
                    f"{old['time_s']:.2f} s, {old['timeouts']:.0f} RTOs)",
                    _both_drop(e, s_),
                )
            )
    for lab in labs:
        if "random" in lab and fixed:
            e, f = by.get((lab, "emulated")), by.get((fixed, "emulated"))
            if e and f:
                rep.comparisons.append(
                    Comparison(
                        f"emulated: {lab} vs {fixed}",
                        "random per node: fewer retransmitted bytes (§5.2)",
                        f"{e['retx_bytes_per_host'] / 1e3:.0f} vs {f['retx_bytes_per_host'] / 1e3:.0f} KB/host retx, "
                        f"{e['time_s']:.2f} vs {f['time_s']:.2f} s (means of {e['runs']} runs)",
                        rules.direction(
                            e["retx_max"] < f["retx_min"],
                            "every random run retransmits less than every fixed run",
                            "§5.2's claim; runs vary, so the ranges must not overlap",
                        ),
                    )
                )
    # The same skeleton in the simulator: identical nodes whose flushes start
    # together, i.e. the paper's synchronized pass end without the CPU spread.
    default = next((lab for lab in labs if "MAX=60000ms" in lab), None)
    d = by.get((default, "simulated")) if default else None
    for lab in labs:
        s_ = by.get((lab, "simulated"))
        if d and s_ and lab != default:
            rep.comparisons.append(
                Comparison(
                    f"simulated skeleton: {lab} vs {default}",
                    "bounded or random RTOs: much shorter, fewer retransmitted bytes (Figs. 3-5, §5.1-5.2)",
                    f"{s_['time_s']:.2f} vs {d['time_s']:.2f} s, {s_['retx_bytes_per_host'] / 1e3:.0f} vs "
                    f"{d['retx_bytes_per_host'] / 1e3:.0f} KB/host, {s_['timeouts']:.0f} vs {d['timeouts']:.0f} RTOs",
                    rules.direction(
                        s_["time_s"] < d["time_s"] and s_["retx_bytes_per_host"] < d["retx_bytes_per_host"],
                        "shorter and fewer retransmitted bytes than the default",
                        "Figs. 3-5's direction",
                    ),
                    "the synchronized retransmissions of frames torn together collide again at the owner's port and back "
                    "off (MAX 60 s) until the timers drift apart; MAX = MIN cuts the backoff, per-node random RTOs spread "
                    "the retransmissions",
                )
            )


def _both_drop(emu: dict, sim: dict) -> rules.Verdict:
    return rules.criterion(
        emu["port_drops"] > 0 and sim["port_drops"] > 0,
        "both lose packets at the owners' ports",
        "§4.2 names the port as where the losses happen",
    )


def _plot_fig2_3(ctx, f2: list[dict], f3: list[dict]) -> list[str]:
    """Figs. 2 and 3: pass 3+4+5 time (left axis) and retransmitted bytes (right) against MIN."""
    plt = ctx.pyplot()
    figs = []
    for rows, name, title in (
        (f2, "fig2_min_maxdefault", "Fig. 2: MAX = 60000 ms"),
        (f3, "fig3_min_maxmin100", "Fig. 3: MAX = MIN + 100 ms"),
    ):
        if not rows:
            continue
        fig, ax = plt.subplots(figsize=(6, 4.6))
        xs = [q["min_ms"] for q in rows]
        ax.plot(xs, [q["pass3plus_s"] for q in rows], "o-", color="C0", label="pass 3+4+5 time")
        ax.set_xlabel("MIN (ms)")
        ax.set_ylabel("pass 3+4+5 time (s)")
        ax2 = ax.twinx()
        ax2.plot(xs, [q["retx_bytes_per_host"] / 1e3 for q in rows], "s--", color="C3", label="retransmitted")
        ax2.plot(
            xs,
            [q["retx_bytes_per_host_pass1_2"] / 1e3 for q in rows],
            "^:",
            color="C1",
            label="retransmitted in passes 1-2",
        )
        if name == "fig2_min_maxdefault":
            pv = paper_data.get(NAME, "T345")
            ax.plot(
                [pv.x],
                [pv.value],
                "o",
                label=f"{pv.label()}: {pv.shown()}, default RTO (left axis)",
                **paper_data.STYLE,
            )
        ax2.set_ylabel("retransmitted KB per host")
        # One legend for both axes, under the plot (the curves fill the axes).
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax2.legend(h1 + h2, l1 + l2, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=7)
        ax.legend().set_visible(False)
        ax.set_title(f"{title} (simulated, {rows[0]['nodes']} nodes)")
        figs.append(ctx.save_figure(fig, name))
    return figs


def _plot_fig4_5(ctx, f4: list[dict]) -> list[str]:
    """Figs. 4 and 5: time and retransmitted bytes against X for the fixed and the two random schemes."""
    plt = ctx.pyplot()
    figs = []
    for key, name, ylab in (
        ("pass3plus_s", "fig4_schemes_time", "pass 3+4+5 time (s)"),
        ("retx_bytes_per_host", "fig5_schemes_retx", "retransmitted bytes per host"),
    ):
        fig, ax = plt.subplots(figsize=(6, 4))
        for s, lab in (
            ("fixed", "MAX = MIN = X"),
            ("random_min", "MIN rand X..X+100, MAX = MIN+100"),
            ("random_both", "MAX = MIN rand X..X+100"),
        ):
            pts = [q for q in f4 if q["scheme"] == s]
            if not pts:
                continue
            ax.plot([q["x_ms"] for q in pts], [q[key] for q in pts], "o-", label=lab)
        ax.set_xlabel("X (ms)")
        ax.set_ylabel(ylab)
        ax.set_title(f"Fig. {4 if key == 'pass3plus_s' else 5} (simulated, {f4[0]['nodes']} nodes)")
        figs.append(ctx.save_figure(fig, name))
    return figs


def _plot_fig6(ctx, f6: list[dict]) -> list[str]:
    """Fig. 6: total time and passes 3+ against nodes, default and random (nothing when not run)."""
    plt = ctx.pyplot()
    figs = []
    if not f6:
        return figs
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4))
    for s, style in (("default", "o-"), ("random_min 250..350, MAX=MIN+100", "s--")):
        pts = sorted((q for q in f6 if q["scheme"] == s), key=lambda q: q["nodes"])
        ax.plot([q["nodes"] for q in pts], [q["total_s"] for q in pts], style, label=s)
        bx.plot([q["nodes"] for q in pts], [q["pass3plus_s"] for q in pts], style, label=s)
    for axis, key in ((ax, "T_total"), (bx, "T345")):
        pv = paper_data.get(NAME, key)
        at = paper_data.get(NAME, "nodes").value
        axis.plot([at], [pv.value], "o", label=f"{pv.label()}: default, {at:g} nodes", **paper_data.STYLE)
    ax.set_xlabel("nodes")
    ax.set_ylabel("HPA execution time (s)")
    ax.set_title(
        "Fig. 6 (simulated, 10M represented transactions)"
        if max(q["nodes"] for q in f6) >= 100
        else "Fig. 6 (simulated)"
    )
    bx.set_xlabel("nodes")
    bx.set_ylabel("passes 3+ (s)")
    bx.set_title("the same runs: passes 3+ only")
    figs.append(ctx.save_figure(fig, "fig6_nodes"))
    return figs


def _plots(ctx, f2, f3, f4, f6) -> list[str]:
    """Figs. 2-6, in the report's order."""
    return _plot_fig2_3(ctx, f2, f3) + _plot_fig4_5(ctx, f4) + _plot_fig6(ctx, f6)


def _plot_table2(ctx, t2: list[dict]) -> str:
    """Table 2: the paper's time, C and L per pass (hollow) beside parcomm's."""
    plt = ctx.pyplot()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4))
    ks = [r["pass"] for r in t2]
    ax.bar(ks, [r["parcomm_T_s"] or 0 for r in t2], 0.6, color="C0", alpha=0.8, label="parcomm (simulated)")
    pts = [(r["pass"], r["paper_T_s"]) for r in t2 if r["paper_T_s"] is not None]
    ax.plot([k for k, _ in pts], [t for _, t in pts], "o", label="paper (Table 2, §4.2)", **paper_data.STYLE)
    ax.set_yscale("log")
    ax.set_xlabel("pass")
    ax.set_ylabel("time of the pass (s)")
    ax.set_xticks(ks)
    ax.set_title("Table 2: time per pass, default RTO")
    for key, marker, color in (("C", "s", "C1"), ("L", "^", "C2")):
        mine = [(r["pass"], r[f"parcomm_{key}"]) for r in t2 if r[f"parcomm_{key}"]]
        bx.plot([k for k, _ in mine], [v for _, v in mine], marker + "-", color=color, label=f"{key} parcomm")
        theirs = [(r["pass"], r[f"paper_{key}"]) for r in t2 if r[f"paper_{key}"]]
        bx.plot(
            [k for k, _ in theirs],
            [v for _, v in theirs],
            marker + "--",
            color="black",
            mfc="none",
            ms=9,
            mew=1.5,
            label=f"{key} paper (Table 2)",
        )
    bx.set_yscale("log")
    bx.set_xlabel("pass")
    bx.set_ylabel("itemsets")
    bx.set_xticks(ks)
    bx.set_title("Table 2: candidates C, large itemsets L (log; 0 left out)")
    return ctx.save_figure(fig, "table2_passes")


def _ways(ctx: StudyContext, base: dict, emu: list[dict], why: str, nodes: int) -> list[dict]:
    """The ways this study has: HPA simulated; the pass-end exchange emulated beside its simulated twins."""
    p3 = paper_data.get(NAME, "T345")
    rows = [
        way_row(
            f"HPA passes 3+4+5 time, {nodes} nodes, default RTO",
            simulate=f"{base['pass3plus_s']:.2f} s",
            emulate=skip("not emulated: the emulation runs the pass-end exchange alone (below), not HPA"),
            note=f"paper {p3.shown()} ({p3.cite})",
        )
    ]
    by = {(q["rto"], q["backend"].split()[0]): q for q in emu}

    def cell(q: dict | None) -> str | None:
        if q is None:
            return None
        runs = f" (mean of {q['runs']})" if q["runs"] > 1 else ""
        return f"{q['time_s']:.2f} s, {q['retx_bytes_per_host'] / 1e3:.0f} KB/host retx, {q['timeouts']:.0f} RTOs{runs}"

    marker = skip(NOT_IN_QUICK) if ctx.quick else skip(why or "not run (see the notes)")
    for rto in EMU_CONFS:
        lab = _label(EMU_HOSTS, rto)
        sim_, lin, em = by.get((lab, "simulated")), by.get((lab, "simulated-linux")), by.get((lab, "emulated"))
        sims = "; ".join(f"{t}: {c}" for t, c in (("SACK+TLP", cell(sim_)), ("linux stack", cell(lin))) if c)
        rows.append(
            way_row(
                f"pass-end exchange on {EMU_HOSTS} hosts, {lab.split(' ', 1)[1]}",
                simulate=sims or marker,
                emulate=cell(em) or marker,
                note="the simulated twins run only beside the emulation" if not sims else "",
            )
        )
    return rows


def _compare_table2(base: dict, ample: dict) -> list[Comparison]:
    """Table 2 and §4.2: pass by pass, then why passes 3+ are slow (cell loss at the 2k-cell port buffer)."""
    C: list[Comparison] = []
    for k in range(1, 6):
        pp = PAPER_TABLE2[k - 1]
        got = (
            f"C={base.get(f'pass{k}_C', '—')} L={base.get(f'pass{k}_L', '—')} T={base[f'pass{k}_s']:.1f} s"
            if f"pass{k}_s" in base
            else "no such pass (no candidates)"
        )
        role = "calibration input" if k <= 2 else "prediction"
        C.append(
            Comparison(
                f"Table 2 pass {k} (C, L, T)",
                f"C={pp['candidates'] if pp['candidates'] is not None else '—'} L={pp['large']} T={pp['time_s']} s",
                got,
                rules.no_paper_value(
                    "C and L come from other data than the paper's; T of passes 1-2 is the calibration input"
                    if k <= 2
                    else "C and L come from other data than the paper's"
                ),
                f"T is a {role}; C, L come from the Quest data ({QUEST_NAME}), not the paper's",
            )
        )
    p3 = sum(q["time_s"] for q in PAPER_TABLE2[2:])
    C.append(
        Comparison(
            "pass 3+4+5 time, default MIN 200 / MAX 60000 ms",
            f"{p3:.1f} s (Table 2)",
            f"{base['pass3plus_s']:.2f} s (ample buffer: {ample['pass3plus_s']:.2f} s)",
            rules.within(base["pass3plus_s"], p3, MEASURED_BAND, MEASURED_BASIS, "s"),
            f"the 2k-cell buffer makes passes 3+ {base['pass3plus_s'] / ample['pass3plus_s']:.1f}x as slow as "
            "without losses",
        )
    )
    C.append(
        Comparison(
            "pass-end losses need the 2k-cell port buffer",
            "cell loss at the switch causes the retransmissions (§4.2)",
            f"2048 cells: {base['cell_drops']} cells / {base['packet_drops']} packets dropped, "
            f"{base['timeouts_pass3plus']} RTOs in passes 3+; ample buffer: {ample['packet_drops']} drops, "
            f"{ample['timeouts']} RTOs",
            rules.criterion(
                base["timeouts_pass3plus"] > 0 and ample["timeouts"] == 0,
                "RTOs in passes 3+ with the 2k-cell buffer, none with an ample one",
                "§4.2's cause, isolated by a second configuration",
            ),
        )
    )
    C.append(
        Comparison(
            "where retransmissions happen (default)",
            "passes 3-5 only, none in pass 2 (§4.2)",
            f"{base['retx_bytes_per_host_pass1_2']:.0f} B/host in passes 1-2, "
            f"{base['retx_bytes_per_host_pass3plus']:.0f} B/host in passes 3+",
            rules.criterion(
                base["retx_bytes_per_host_pass1_2"] == 0 and base["retx_bytes_per_host_pass3plus"] > 0,
                "no retransmitted byte in passes 1-2, some in passes 3+",
                "§4.2",
            ),
        )
    )
    return C


def _sharp_rise(rows: list[dict]) -> tuple[bool | None, str]:
    """Figs. 2-3's claim that retransmitted bytes rise sharply once MIN drops below 200 ms: the verdict
    and its text, or (None, "") when the sweep has no point on both sides."""
    lo = [q for q in rows if q["min_ms"] < 200]
    ref = [q for q in rows if q["min_ms"] == 200]
    if not lo or not ref:
        return None, ""
    a, b = lo[0]["retx_bytes_per_host"], ref[0]["retx_bytes_per_host"]
    return (
        a > 2 * b,
        f"{lo[0]['min_ms']:g} ms: {a / 1e3:.1f} KB, 200 ms: {b / 1e3:.1f} KB per host "
        f"(passes 1-2: {lo[0]['retx_bytes_per_host_pass1_2'] / 1e3:.1f} vs "
        f"{ref[0]['retx_bytes_per_host_pass1_2'] / 1e3:.1f} KB)",
    )


def _compare_fig2_3(f2: list[dict], f3: list[dict]) -> list[Comparison]:
    """Figs. 2 and 3 (§5.1): pass 3+4+5 time and retransmitted bytes against MIN, with MAX 60 s and MIN + 100 ms."""
    C: list[Comparison] = []
    t = [q["pass3plus_s"] for q in f2]
    C.append(
        Comparison(
            "Fig. 2: pass 3+4+5 time vs MIN (MAX 60000 ms)",
            "grows with MIN (text §5.1)",
            ", ".join(f"{q['min_ms']:g}: {q['pass3plus_s']:.2f} s" for q in f2),
            rules.direction(
                all(b >= a for a, b in zip(t, t[1:])) and t[-1] > t[0],
                "never falls as MIN grows, and rises overall",
                "§5.1",
            ),
        )
    )
    ok, txt = _sharp_rise(f2)
    if txt:
        C.append(
            Comparison("Fig. 2: retransmitted bytes when MIN < 200 ms", "rise sharply (text §5.1)", txt, _sharp(ok))
        )
    both = [(a, b) for a in f2 for b in f3 if a["min_ms"] == b["min_ms"]]
    if both:
        C.append(
            Comparison(
                "Fig. 3 vs Fig. 2: pass 3+4+5 with MAX = MIN + 100 ms",
                "much shorter than with MAX 60000 (text §5.1)",
                ", ".join(f"MIN {a['min_ms']:g}: {b['pass3plus_s']:.2f} vs {a['pass3plus_s']:.2f} s" for a, b in both),
                rules.direction(
                    all(b["pass3plus_s"] <= a["pass3plus_s"] for a, b in both)
                    and any(b["pass3plus_s"] < 0.8 * a["pass3plus_s"] for a, b in both),
                    "never longer, and at least 20 % shorter at some MIN",
                    "'much shorter' (§5.1), read as at least 20 %",
                ),
            )
        )
    ok, txt = _sharp_rise(f3)
    if txt:
        C.append(
            Comparison("Fig. 3: retransmitted bytes when MIN < 200 ms", "rise sharply, as in Fig. 2", txt, _sharp(ok))
        )
    return C


def _sharp(ok: bool) -> rules.Verdict:
    return rules.direction(
        ok,
        "the smallest MIN below 200 ms retransmits over twice the bytes of MIN 200 ms",
        "'sharply' (§5.1), read as 2x",
    )


def _compare_fig4_5(f4: list[dict]) -> list[Comparison]:
    """Figs. 4 and 5 (§5.2): random RTO values per node against a fixed one."""
    C: list[Comparison] = []
    by = {(q["scheme"], q["x_ms"]): q for q in f4}
    xs = sorted({q["x_ms"] for q in f4})
    for x in xs:
        got = {s: by[(s, x)] for s in ("fixed", "random_min", "random_both") if (s, x) in by}
        fx = got["fixed"]
        rnd = [q for s, q in got.items() if s != "fixed"]
        C.append(
            Comparison(
                f"Figs. 4-5 at X = {x:g} ms: random vs fixed",
                "random values per node: shorter, far fewer retransmitted bytes (§5.2)",
                "; ".join(
                    f"{s} {q['pass3plus_s']:.2f} s, {q['retx_bytes_per_host'] / 1e3:.1f} KB/host"
                    for s, q in got.items()
                ),
                rules.direction(
                    all(q["retx_bytes_per_host"] < 0.75 * fx["retx_bytes_per_host"] for q in rnd),
                    "every random scheme retransmits at least 25 % fewer bytes than fixed",
                    "'far fewer' (§5.2), read as at least 25 %",
                ),
            )
        )
    if (("fixed", 200.0) in by) and (("random_both", 200.0) in by):
        a, b = by[("fixed", 200.0)], by[("random_both", 200.0)]
        C.append(
            Comparison(
                "MAX = MIN = 200..300 random vs MAX = MIN = 200 fixed",
                "random (longer) is better (§5.2)",
                f"{b['pass3plus_s']:.2f} s, {b['retx_bytes_per_host'] / 1e3:.1f} KB vs {a['pass3plus_s']:.2f} s, {a['retx_bytes_per_host'] / 1e3:.1f} KB",
                rules.direction(b["pass3plus_s"] < a["pass3plus_s"], "random shorter than fixed", "§5.2"),
            )
        )
    return C


def _compare_fig6(f6: list[dict]) -> list[Comparison]:
    """Fig. 6 (§5.3): the random setting against the default near 100 nodes (nothing when not run)."""
    C: list[Comparison] = []
    if not f6:
        return C
    big = max(q["nodes"] for q in f6)
    d = next(q for q in f6 if q["nodes"] == big and q["scheme"] == "default")
    rr = next(q for q in f6 if q["nodes"] == big and q["scheme"] != "default")
    C.append(
        Comparison(
            f"Fig. 6 at {big} nodes: total time, default vs random 250..350 (MAX = MIN + 100)",
            "shorter with the random setting near 100 nodes; passes 1-2 about equal (§5.3)",
            f"{d['total_s']:.1f} s vs {rr['total_s']:.1f} s (passes 1-2: {d['pass1_2_s']:.1f} vs {rr['pass1_2_s']:.1f} s)",
            rules.direction(
                rr["pass3plus_s"] < 0.9 * d["pass3plus_s"]
                and rr["total_s"] < d["total_s"]
                and abs(rr["pass1_2_s"] - d["pass1_2_s"]) < 0.05 * d["pass1_2_s"],
                "passes 3+ at least 10 % shorter with the random setting, total shorter, passes 1-2 within 5 %",
                "§5.3's 'shorter' and 'about equal'",
            ),
            f"passes 3+: {d['pass3plus_s']:.2f} vs {rr['pass3plus_s']:.2f} s",
        )
    )
    return C


def _compare(rep: StudyReport, base, ample, f2, f3, f4, f6, nodes) -> None:
    """The paper's Table 2 and Figs. 2-6 beside the simulated runs, in the report's order."""
    rep.comparisons += _compare_table2(base, ample)
    rep.comparisons += _compare_fig2_3(f2, f3)
    rep.comparisons += _compare_fig4_5(f4)
    rep.comparisons += _compare_fig6(f6)


def _compare_sync(rep: StudyReport, base: dict, rand: dict, sync: list[dict]) -> None:
    """The sensitivity runs with perfectly synchronized scan ends, beside the modelled spread."""
    sd, sr = sync
    rep.tables["sync_sensitivity"] = [
        dict(x, scans=lab)
        for x, lab in ((base, "modelled spread"), (rand, "modelled spread"), (sd, "synchronized"), (sr, "synchronized"))
    ]
    rep.comparisons.append(
        Comparison(
            "sensitivity: scan ends synchronized (every node the mean CPU time), passes 3+ default vs MIN random "
            "250..350 ms, MAX = MIN + 100",
            "random per node much faster near 100 nodes (Fig. 6, §5.3)",
            f"synchronized {sd['pass3plus_s']:.2f} vs {sr['pass3plus_s']:.2f} s "
            f"({sd['timeouts_pass3plus']} vs {sr['timeouts_pass3plus']} RTOs); modelled spread "
            f"{base['pass3plus_s']:.2f} vs {rand['pass3plus_s']:.2f} s",
            rules.no_paper_value("a sensitivity run, not the paper's setting"),
            "a bound on how much the flush timing matters, not a reproduction: the study's own runs use the "
            "modelled spread",
        )
    )


def _why_rows(rep: StudyReport, base: dict, f2: list[dict], f4: list[dict]) -> None:
    """Each differing row's mechanism, with the counters of this run that show it."""
    tos = sorted({q["timeouts_pass3plus"] for q in f2 if q["min_ms"] >= 100})
    per_host = base["timeouts_pass3plus"] / base["nodes"]
    for c in rep.comparisons:
        if c.agrees is not False or c.why:
            continue
        if c.quantity.startswith("pass 3+4+5 time"):
            c.why = (
                "Mechanism: the retransmissions of segments lost together do not collide again here. Evidence: "
                f"{base['timeouts_pass3plus']} RTOs in passes 3+ ({per_host:.1f} per host) for "
                f"{base['packet_drops']} packets lost in the run"
                + (
                    f", a count that hardly moves with MIN ({', '.join(map(str, tos))} for MIN >= 100 ms)"
                    if len(tos) > 1
                    else ""
                )
                + (
                    ": about one timeout per lost packet, so most lost segments get through at their first "
                    "retransmission; "
                    if base["timeouts_pass3plus"] <= 1.5 * max(1, base["packet_drops"])
                    else "; "
                )
                + "the paper's pass times doubling (3.2, 6.2, 12.1 s) need "
                "repeated backoffs of the same segments. The scan ends are spread by the modelled CPU time "
                "(the 'synchronized scans' sensitivity row, in full runs, shows how much synchronizing them brings back)."
            )
        elif c.quantity.startswith(("Fig. 2: retransmitted", "Fig. 3: retransmitted")):
            c.why = _why_spurious(f2)
        elif c.quantity.startswith("Figs. 4-5"):
            x = float(c.quantity.split("X = ")[1].split()[0])
            got = {q["scheme"]: q for q in f4 if q["x_ms"] == x}
            fx = got.get("fixed")
            rnd = [q for k, q in got.items() if k != "fixed"]
            c.why = (
                (
                    "Mechanism: random RTOs help by spreading retransmissions that would collide again; here few "
                    f"collide again. Evidence: {fx['timeouts_pass3plus']} RTOs in passes 3+ with the fixed value, "
                    + ", ".join(f"{q['timeouts_pass3plus']} with {q['scheme']}" for q in rnd)
                    + ": randomizing removes few timeouts when a loss is mostly repaired by its first retransmission."
                )
                if fx and rnd
                else "The cause is not known."
            )


def _why_spurious(f2: list[dict]) -> str:
    """Retransmitted bytes below MIN 200 ms: spurious timeouts, and what dilutes their rise."""
    lo = [q for q in f2 if q["min_ms"] < 200]
    ref = [q for q in f2 if q["min_ms"] == 200]
    if not lo or not ref:
        return "The cause is not known."
    q, r = lo[0], ref[0]
    return (
        f"Mechanism: spurious timeouts once MIN falls below the ACK delay. Evidence: at MIN {q['min_ms']:g} ms "
        f"passes 1-2 retransmit {q['retx_bytes_per_host_pass1_2'] / 1e3:.1f} KB per host (at 200 ms: "
        f"{r['retx_bytes_per_host_pass1_2'] / 1e3:.1f} KB) with {q['timeouts_pass1_2']} RTOs, so the rise is there; "
        f"the total is {q['retx_bytes_per_host'] / r['retx_bytes_per_host']:.2f}x that of MIN 200 ms because passes "
        f"3+ retransmit about as much at either MIN ({q['timeouts_pass3plus']} vs {r['timeouts_pass3plus']} RTOs). "
        "The simulated ACK delay is at most the 50 ms delayed-ACK timer plus 7 ms of port queue; the paper's "
        "rise from 150-200 ms suggests its loaded hosts acknowledged later, which is not measured here."
    )


def _why(rep: StudyReport, base: dict, ample: dict, f2: list[dict]) -> None:
    """Where the simulated passes 3+ differ from the paper's, with this run's numbers."""
    sd = ", ".join(
        f"pass {k}: {base[f'pass{k}_flush_sd_ms']:.1f} ms" for k in range(3, 6) if f"pass{k}_flush_sd_ms" in base
    )
    tos = sorted({q["timeouts_pass3plus"] for q in f2 if q["min_ms"] >= 100})
    lo = [q for q in f2 if q["min_ms"] < 100]
    cs = ", ".join(str(base[f"pass{k}_C"]) for k in range(3, 12) if f"pass{k}_C" in base)
    rep.notes += [
        f"Passes 3+ here: {base['pass3plus_s']:.2f} s with the 2k-cell buffer vs {ample['pass3plus_s']:.2f} s without "
        f"losses; the paper's 21.5 s (3.2 + 6.2 + 12.1) implies repeated timeouts of the same segments, doubling up to "
        f"seconds. Here {base['timeouts_pass3plus']} RTOs in passes 3+ (per host: {base['timeouts_pass3plus'] / base['nodes']:.1f}), "
        f"and their number hardly depends on MIN ({tos} for MIN >= 100 ms): most lost segments get through at their "
        "first retransmission. The switch ports interleave cells (an overflow takes cells of "
        "every frame arriving at that moment, the partial-packet problem of UBR without early/partial packet "
        "discard), so one overflow already loses every frame in flight; what the simulated run lacks is the "
        f"repetition: (1) the pass-end volumes are small (C = {cs} in passes 3+, against 19, 7, 1; "
        f"{base['packet_drops'] / base['nodes']:.0f} frames lost per owner, not ~99), so each owner's overload is "
        "short; (2) the "
        "retransmissions of the segments lost together come back spread out: the ends of the scans are spread across "
        f"nodes by the modelled CPU time (standard deviation of the flush time, {sd}), each host sends its flush blocks "
        "over milliseconds of its own link, and each Solaris host runs its timers on its own 10 ms clock tick. When "
        "all timers fire within the port's drain time (7 ms), as on identical hosts with exact timers "
        "(the ATM cells example: 99 frames, fixed 200 ms RTO, no completion in 600 s), the retransmissions collide again "
        "and again, which is what the paper's doubling pass times (3.2, 6.2, 12.1 s) suggest (the 'synchronized "
        "scans' sensitivity row shows how much of that perfectly synchronized scan ends bring back); (3) Karn's "
        "rule keeps a backed-off RTO until a fresh RTT sample, so repeated losses across passes would compound, but "
        "here the next pass's first segments mostly get through and reset it. Where a loss is repaired by its "
        "first retransmission, MAX never comes into play and a random MIN in [X, X+100] only adds its mean extra "
        "wait; the Fig. 3 and Figs. 4-6 rows above show how far that holds in this run.",
    ]
    if lo:
        q = lo[0]
        rep.notes.append(
            f"Spurious retransmissions with a small MIN appear below 100 ms here ({q['min_ms']:g} ms: "
            f"{q['retx_bytes_per_host_pass1_2'] / 1e3:.1f} KB per host in passes 1-2, {q['timeouts_pass1_2']} RTOs, with "
            f"{q['packet_drops']} packets dropped in the whole run), while the paper sees them below 150-200 ms. The "
            "simulated ACK delay is the 50 ms delayed-ACK timer (assumed for Solaris 2.5.1 on the ATM cluster) plus "
            "queueing (at most 2048 cells = 7 ms per switch port); the real hosts, whose single CPU also counted "
            "candidates, evidently delayed ACKs longer under pass 2's load, and the simulator sends ACKs without "
            "charging the host CPU."
        )


def _notes(rep, calib, cost, nodes, sample, weight, quick) -> None:
    rep.notes += [
        f"Platform: the ATM cluster of {nodes} PCs: 149.76 Mbit/s cell rate, 2048-cell output buffers, UBR, "
        "LLC/SNAP, MTU 9180, Solaris 2.5.1 TCP (the solaris-2.5.1 stack profile, every field as the "
        "profile gives it: MIN 200 ms, MAX 60 s, 64 KiB windows, 50 ms delayed ACK, no SACK, the default (RFC 6298) RTO estimator; the Linux "
        "transport mechanisms added since are off in it, so these numbers did not move with them); the profile cites "
        f"the source of each number. Switch ports interleave the cells of frames arriving together "
        f"({'a fluid' if CELL_INTERLEAVING else 'no'} cell queue per output port; an overflow takes cells of "
        "every frame in progress).",
        f"Data: Quest {QUEST_NAME}, {sample:,} generated transactions, each standing for {weight} (HPA weight): "
        f"{sample * weight:,} transactions, {sample * weight // nodes:,} per node at {nodes} nodes (paper: 100,000 per "
        "node). The pass-end bytes per owner port, which decide the losses, therefore match the paper's order; see the "
        "study's documentation for why and for the CPU-spread correction.",
        f"CostModel calibrated on Table 2 at {nodes} nodes: {calib['s_per_item'] * 1e6:.2f} us per item read "
        f"(pass 1: 11.2 s / {calib['items_per_node']:,.0f} items per node), "
        f"{calib['s_per_subset_and_probe'] * 1e6:.2f} us per pass-2 subset formed+sent and probed "
        f"((69.8 s - scan) / {calib['pass2_subsets_per_node']:,.0f} subsets per node), half on each side (assumption).",
        "Figure values of the paper are not in the extracted text (plots only); the 'paper' column quotes Table 2 and the "
        "text of §4.2-5.3. Retransmitted bytes are, as in the paper, the mean over hosts of all TCP retransmissions of the "
        "run; the tables split them at the start of pass 3.",
    ]
    if quick:
        rep.notes.append(
            "--quick: 100 nodes as in the full study, five configurations only (no Fig. 3 sweep, one X, "
            "no Fig. 6, no emulation)."
        )
