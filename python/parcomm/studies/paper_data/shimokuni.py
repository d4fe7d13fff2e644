"""Shimokuni, Koga, Jinzaki: reliable multicast for wide-area parallel and distributed
systems (the ``shimokuni`` study).

Exact: the study-4 table (§4 1.4): expected delay (ms), its ratio to A, and the system-wide and
largest per-router retransmission buffer (MByte) for placements A-E on an 8-network route
(T = 3, 30 x 6, 3 ms; E = 5.0, 0.2 x 6, 5.0 %), binary tree of 128 receivers, B = 622 Mbit/s.
Figs. 3-6 and 10 are plots whose values the text does not give.
"""

from __future__ import annotations

from . import PaperValue

_S4 = "study-4 table, §4 1.4"

#: Placement -> (delay ms, ratio to A, buffer system MB, buffer per device max MB), as printed.
STUDY4 = {
    "A": (417, 1.0, 28.9, 28.9),
    "B": (377, 0.904, 58.3, 28.0),
    "C": (375, 0.898, 156.2, 14.0),
    "D": (374, 0.896, 226.3, 9.33),
    "E": (373, 0.895, 324.2, 4.67),
}

VALUES: list[PaperValue] = []
for _v, (_d, _r, _bs, _bm) in STUDY4.items():
    VALUES += [
        PaperValue(f"s4_{_v}_delay", f"study 4, placement {_v}: expected delay", _d, "ms", _S4, "exact"),
        PaperValue(f"s4_{_v}_ratio", f"study 4, placement {_v}: delay / A's", _r, "", _S4, "exact"),
        PaperValue(
            f"s4_{_v}_buffer_system",
            f"study 4, placement {_v}: retransmission buffer, whole system",
            _bs,
            "MB",
            _S4,
            "exact",
        ),
        PaperValue(
            f"s4_{_v}_buffer_max",
            f"study 4, placement {_v}: retransmission buffer, largest device",
            _bm,
            "MB",
            _S4,
            "exact",
        ),
    ]
VALUES += [
    PaperValue(
        "s3_a_vs_d_40ms",
        "study 3: A's delay over D's at T3 = 40 ms",
        0.2,
        "%",
        "Fig. 6, §4 1.3",
        "text",
        x=40,
        x_unit="T3 (ms)",
        approx="'0.2%の差しか出なかった' (only 0.2 %)",
    ),
    PaperValue(
        "s4_every_stage",
        "study 4: repair at every stage, delay as a fraction of no repair",
        0.9,
        "",
        "§4 1.4",
        "text",
        approx="'90%の時間' (90 % of the time; the table gives 0.895)",
    ),
    PaperValue(
        "summary_cut",
        "repair routers, (1) and (2): mean delay cut against Comet RM",
        10.0,
        "%",
        "§5 (まとめ)",
        "text",
        approx="'10%程度' (about)",
    ),
]

NO_VALUES = {
    "Fig. 3, §4 1.1 (study 1)": "plot only: delay against E (0.1-10 %) for A-D; the text says only that repair helps",
    "Fig. 4, §4 1.2 (study 2.1)": "plot only; the text says C < B and C almost equals D",
    "Fig. 5, §4 1.2 (study 2.2)": "plot only; the text says B = C, between A and D",
    "Fig. 6, §4 1.3 (study 3)": "plot only; the text gives the 0.2 % difference of A and D at 40 ms (not a delay)",
    "Fig. 10, §4 1.5 (study 5)": "plot only: delay against the links n at β; the text says repair at the branching "
    "point helps",
}
