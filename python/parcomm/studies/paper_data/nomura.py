"""Nomura, Ishikawa: a communication model considering retransmission control, PlogP-BR
(the ``nomura`` study).

The paper prints no measured or predicted times: Fig. 8 (predicted vs actual Alltoall time,
P = 8 and 64) is a plot whose values the text does not give, and §4.3 states only that
PlogP-BR is closer to the actual times than PlogP, with two mismatches (the RTO onset
predicted at too short a message at large P; a constant factor at small m). The only
printed numbers are the platform's (Table 1).
"""

from __future__ import annotations

from . import PaperValue

VALUES: list[PaperValue] = [
    PaperValue("nodes", "nodes of the cluster", 64, "", "Table 1, §4.1", "exact"),
    PaperValue("nic_gbps", "network adapter rate (Broadcom Tigon 3)", 1, "Gbit/s", "Table 1, §4.1", "exact"),
    PaperValue("procs_fig8", "process counts of Fig. 8", (8.0, 64.0), "", "Fig. 8, §4.3", "exact"),
]

NO_VALUES = {
    "Fig. 8, §4.3": "plot only: predicted (PlogP, PlogP-BR) and actual Alltoall A and B times against the message "
    "size for P = 8 and 64; the text gives no number, only that PlogP-BR predicts closer than PlogP",
    "Fig. 3, §2": "plot only: g(m) against m on the Table 1 cluster (non-linear at small m); no values in the text",
}
