"""Oguchi, Shintani, Tamura, Kitsuregawa: TCP retransmission on an ATM-connected PC
cluster and parallel data mining (the ``oguchi`` study).

Exact: Table 2 (§4.2), candidates C, large itemsets L and time T per pass of HPA on 100 PCs
with the default TCP parameters (MIN = 200 ms, MAX = 60000 ms, §5). In the extracted text the
C column is shifted up one row (C of pass 2 = 522753 = 1023 x 1022 / 2, all pairs of pass 1's
1023 large items); here it is moved back down, and pass 1's C is lost in the extraction.
Figs. 2-6 are plots whose values the text does not give (see ``NO_VALUES``).
"""

from __future__ import annotations

from . import PaperValue

_T2 = "Table 2, §4.2"
_SHIFT = "the extracted C column is shifted up one row; moved back down"

#: (pass, C, L, T s) as printed in Table 2, C moved back to its pass.
_TABLE2 = [
    (1, None, 1023, 11.2),
    (2, 522753, 32, 69.8),
    (3, 19, 19, 3.2),
    (4, 7, 7, 6.2),
    (5, 1, 0, 12.1),
]

VALUES: list[PaperValue] = []
for _k, _c, _l, _t in _TABLE2:
    VALUES.append(PaperValue(f"T{_k}", f"time of pass {_k}", _t, "s", _T2, "exact", x=_k, x_unit="pass"))
    VALUES.append(PaperValue(f"L{_k}", f"large itemsets of pass {_k}", _l, "", _T2, "exact", x=_k, x_unit="pass"))
    if _c is not None:
        VALUES.append(
            PaperValue(f"C{_k}", f"candidates of pass {_k}", _c, "", _T2, "exact", x=_k, x_unit="pass", note=_SHIFT)
        )
VALUES += [
    PaperValue(
        "T345",
        "time of passes 3+4+5, default RTO (MIN 200 ms, MAX 60000 ms), 100 nodes",
        round(3.2 + 6.2 + 12.1, 1),
        "s",
        _T2,
        "derived",
        x=200,
        x_unit="MIN (ms)",
        note="3.2 + 6.2 + 12.1 s; the point of Fig. 2 at MIN = 200 ms and of Fig. 6's solid line at 100 nodes",
    ),
    PaperValue(
        "T_total",
        "HPA execution time, default RTO, 100 nodes",
        round(11.2 + 69.8 + 3.2 + 6.2 + 12.1, 1),
        "s",
        _T2,
        "derived",
        x=100,
        x_unit="nodes",
        note="sum of Table 2's T column; Fig. 6's solid line at 100 nodes",
    ),
    PaperValue("nodes", "PCs in the cluster", 100, "", "§2, Table 1", "exact"),
    PaperValue("transactions", "transactions mined", 10_000_000, "", "§4.2", "exact"),
    PaperValue("items", "kinds of items", 5000, "", "§4.2", "exact"),
    PaperValue("min_support", "minimum support", 0.7, "%", "§4.2", "exact"),
    PaperValue("rto_min_default", "TCP retransmission interval minimum MIN, default", 200, "ms", "§5", "exact"),
    PaperValue("rto_max_default", "TCP retransmission interval maximum MAX, default", 60000, "ms", "§5", "exact"),
    PaperValue(
        "min_floor",
        "smallest MIN that avoids spurious retransmissions",
        (150.0, 200.0),
        "ms",
        "§5.2 (Figs. 4-5)",
        "text",
        approx="'150-200 ms 程度以上' (about)",
    ),
]

#: Table 2 as rows (pass, candidates, large, time_s): what the study compares with.
TABLE2 = [{"pass": k, "candidates": c, "large": l, "time_s": t} for k, c, l, t in _TABLE2]

NO_VALUES = {
    "Fig. 2, §5.1": "plot only: pass 3+4+5 time and retransmitted bytes against MIN with MAX = 60000 ms; the text "
    "says only that the time grows with MIN and the bytes rise sharply below 200 ms",
    "Fig. 3, §5.1": "plot only (MAX = MIN + 100 ms); the text gives the same trends as Fig. 2, shorter times",
    "Fig. 4, §5.2": "plot only: pass 3+4+5 time for the fixed and two random schemes",
    "Fig. 5, §5.2": "plot only: retransmitted bytes for the same schemes; the text says random beats fixed, e.g. "
    "MAX = MIN = 200..300 ms random beats 200 ms fixed",
    "Fig. 6, §5.3": "plot only: time against node count, default vs random MIN 250-350 ms; the text says the random "
    "setting is faster near 100 nodes (Table 2 gives the default point at 100 nodes)",
}
