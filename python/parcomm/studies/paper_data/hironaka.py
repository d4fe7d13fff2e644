"""Hironaka: PVM performance on a large workstation cluster (the ``hironaka`` study).

Figs. 3-6 are plots; the text states two performance values of Fig. 4 approximately ("約") and
the knee of Figs. 5-6 ("1000 Byte"). Tables 1-2 print the hardware.
"""

from __future__ import annotations

from . import PaperValue

VALUES: list[PaperValue] = [
    PaperValue(
        "mflops_330",
        "heat equation performance, M = 11 (121 tasks), N = 330",
        26.0,
        "MFlop/s",
        "Fig. 4, §3.2",
        "text",
        x=330,
        x_unit="N",
        approx="'約26MFlops' (about)",
    ),
    PaperValue(
        "mflops_max",
        "largest performance reached, M = 11 (121 tasks)",
        56.0,
        "MFlop/s",
        "§6, Fig. 4",
        "text",
        approx="'最大約 56MFlops' (at most about)",
        note="the text does not say at which N; N = 2640 is the largest of Fig. 4's sizes",
    ),
    PaperValue(
        "ap1000_mflops",
        "the same program on a 64-cell AP1000, N = 320, 64 tasks (another machine, ref. [2])",
        44.0,
        "MFlop/s",
        "§3.2",
        "text",
        x=320,
        x_unit="N",
        approx="'約44MFlops' (about)",
        note="not this cluster: not plotted",
    ),
    PaperValue(
        "knee_bytes",
        "message size below which the ping-pong time hardly changes and above which it grows with size",
        1000.0,
        "bytes",
        "Figs. 5-6, §5.1-5.2",
        "text",
        approx="'1000Byte以下 / 以上' (a round figure)",
    ),
    PaperValue("ws_mflops", "SPARCstation LX rating", 4.6, "MFlop/s", "Table 1, §2", "exact"),
    PaperValue("peak_mflops", "peak of the 130-workstation cluster", 598, "MFlop/s", "§2", "exact"),
    PaperValue("segments", "10BASE-T segments", 16, "", "§2, Fig. 1", "exact"),
    PaperValue("router_pps", "Cisco 7000 forwarding rate, at least", 100_000, "packets/s", "Table 2, §2", "exact"),
]

NO_VALUES = {
    "Fig. 3, §3.2": "plot only: execution time against steps for N = 330..2640; the text says only that N = 330..1320 "
    "grow little with steps (communication dominates)",
    "Figs. 5-6 (times), §5.1-5.2": "plot only: ping-pong times against message size; the text gives the ~1000-byte "
    "knee and that contention shows above it (Fig. 5) and hardly across segments (Fig. 6), no times",
}
