"""Chiba, Kielmann, den Burger, Matsuoka: dynamic optimization for large data broadcast on
clouds (the ``chiba`` study).

The figures are plots; the text states some of their values approximately ("程度": about).
Rates are the paper's MB/sec; its "1 GB" object gives the derived times (1 GB / rate).
"""

from __future__ import annotations

from . import PaperValue

_ABOUT = "'程度' (about)"

VALUES: list[PaperValue] = [
    PaperValue(
        "fig1_le6",
        "share of 100 MB GETs at or below 6 MB/s (one node, 1,000 GETs)",
        0.60,
        "",
        "Fig. 1, §3.3.1",
        "text",
        x=6,
        x_unit="MB/s",
        approx="'60%程度' (about)",
    ),
    PaperValue(
        "fig1_ge8",
        "share of 100 MB GETs at or above 8 MB/s",
        0.30,
        "",
        "Fig. 1, §3.3.1",
        "text",
        x=8,
        x_unit="MB/s",
        approx="'30%程度' (about)",
    ),
    PaperValue(
        "slow_share",
        "share of GETs with low throughput (1,000 trials)",
        (0.6, 0.7),
        "",
        "§3.3.3 (Fig. 1)",
        "text",
        approx="'60 ~ 70%' (roughly)",
    ),
    PaperValue(
        "fast_share",
        "share of GETs with high throughput",
        (0.2, 0.3),
        "",
        "§3.3.3 (Fig. 1)",
        "text",
        approx="'20 ~ 30%' (roughly)",
    ),
    PaperValue(
        "fig2_slowest_rate",
        "flat tree, 8 nodes, 1 GB: throughput of the slowest node",
        4.0,
        "MB/s",
        "Fig. 2, §3.3.2",
        "text",
        approx=_ABOUT,
    ),
    PaperValue(
        "fig2_fastest_rate",
        "flat tree, 8 nodes, 1 GB: throughput of the fastest node, more than",
        10.0,
        "MB/s",
        "Fig. 2, §3.3.2",
        "text",
        approx="'10 MB/sec 以上' (at least)",
    ),
    PaperValue(
        "fig2_slowest_s",
        "flat tree, 8 nodes: completion of the slowest node",
        250.0,
        "s per GB",
        "Fig. 2, §3.3.2",
        "derived",
        note="1 GB / ~4 MB/s",
    ),
    PaperValue(
        "fig2_fastest_s",
        "flat tree, 8 nodes: completion of the fastest node, less than",
        100.0,
        "s per GB",
        "Fig. 2, §3.3.2",
        "derived",
        note="1 GB / more than 10 MB/s",
    ),
    PaperValue(
        "fig4_sum8",
        "flat tree, 8 nodes: sum of the nodes' throughputs, at most",
        50.0,
        "MB/s",
        "Fig. 4, §3.3.2",
        "text",
        x=8,
        x_unit="nodes",
        approx="'たかだか 50 MB/sec 程度' (at most about)",
    ),
    PaperValue(
        "steal_over_flat_32",
        "total throughput, steal over flat tree, 32 nodes",
        1.7,
        "x",
        "Fig. 11, §5.2",
        "text",
        x=32,
        x_unit="nodes",
        approx="'1.7 倍程度' (about)",
    ),
    PaperValue(
        "nonsteal_over_flat_32",
        "total throughput, non-steal over flat tree, 32 nodes",
        1.6,
        "x",
        "Fig. 11, §5.2",
        "text",
        x=32,
        x_unit="nodes",
        approx="'1.6 倍' (about, with the 1.7 above)",
    ),
    PaperValue(
        "phase1_4_8",
        "phase 1 throughput per node, 4 and 8 nodes, steal and non-steal",
        (4.0, 5.0),
        "MB/s",
        "Fig. 12, §5.3",
        "text",
        approx="'4, 5 MB/sec 程度' (about)",
    ),
    PaperValue(
        "phase1_16_32",
        "phase 1 throughput per node, 16 and 32 nodes",
        (3.0, 4.0),
        "MB/s",
        "Fig. 12, §5.3",
        "text",
        approx="'3, 4 MB/sec 程度' (about)",
    ),
    PaperValue(
        "phase2",
        "phase 2 throughput per node, steal and non-steal",
        10.0,
        "MB/s",
        "Fig. 12, §5.3",
        "text",
        approx="'10 MB/sec 程度' (about)",
    ),
    PaperValue(
        "phase2_share",
        "share of time in phase 2 (steal), 16 and 32 nodes",
        0.9,
        "",
        "Fig. 13, §5.3",
        "text",
        approx="'90%程度' (about)",
    ),
]

NO_VALUES = {
    "Fig. 3, §3.3.2": "plot only: per-node throughput frequencies at 8, 16, 32 nodes; the text says they follow Fig. 1",
    "Fig. 5, §3.3.2": "plot only: summed throughput against nodes; the text says it grows in proportion up to 32 nodes",
    "Figs. 9-10, §5.1": "plot only: slowest/average/fastest per trial for steal and non-steal; the text says steal is "
    "steady and non-steal slows at the 10th trial",
}
