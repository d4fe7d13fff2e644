"""The papers' own numbers, one module per paper, each value with where it stands.

Every value is a :class:`PaperValue`: the number (or a ``(low, high)`` range), its unit, the
figure or table and section it comes from (``cite``), and how it was obtained (``how``):

* ``"exact"``: printed as a number in a table or the text (Oguchi et al.'s Table 2,
  Shimokuni et al.'s study-4 table);
* ``"text"``: stated in the text about a figure, approximately ("約", "程度": about, roughly);
  ``approx`` says how the text qualifies it;
* ``"derived"``: computed from exact or text values (a sum of Table 2's rows, 1 GB over a
  stated rate); ``note`` gives the arithmetic;
* ``"digitized"``: read off a plotted curve, with its uncertainty in ``approx`` ("±x").

The papers reach this project as extracted text (``shared/seeds``): their figures are
captions without the plots, so nothing here is digitized. Figures whose values are not in the
text are listed in each module's ``NO_VALUES`` (figure -> why), and the studies say so in their
captions instead of plotting anything for them. Never adjust a value here to fit parcomm.
"""

from __future__ import annotations

import importlib
from dataclasses import asdict, dataclass
from typing import Any

#: How a value was obtained (see the module docstring).
HOW = ("exact", "text", "derived", "digitized")

#: How the studies draw the paper's values: hollow black markers (pass with ``ax.plot(..., "o", **STYLE)``).
STYLE: dict[str, Any] = {"color": "black", "mfc": "none", "mec": "black", "mew": 1.6, "ms": 9, "zorder": 5}

#: Study name -> module of its paper.
MODULES = {
    "oguchi": "parcomm.studies.paper_data.oguchi",
    "nomura": "parcomm.studies.paper_data.nomura",
    "hironaka": "parcomm.studies.paper_data.hironaka",
    "shimokuni": "parcomm.studies.paper_data.shimokuni",
    "chiba": "parcomm.studies.paper_data.chiba",
}


@dataclass(frozen=True)
class PaperValue:
    """One number of a paper."""

    key: str
    quantity: str
    value: float | tuple[float, float]
    unit: str
    #: Figure/table and section, e.g. "Table 2, §4.2" or "Fig. 4, §3.2".
    cite: str
    how: str
    #: Where the value sits on its figure's x axis (None: not a point of a curve).
    x: float | None = None
    x_unit: str = ""
    #: How the paper qualifies an approximate value ("about (約)", "±5 %"); "" when exact.
    approx: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        if self.how not in HOW:
            raise ValueError(f"{self.key}: how={self.how!r} is not one of {HOW}")
        if not self.cite.strip():
            raise ValueError(f"{self.key}: no citation")
        if self.how in ("text", "digitized") and not self.approx:
            raise ValueError(f"{self.key}: an approximate value needs approx")

    @property
    def low(self) -> float:
        return self.value[0] if isinstance(self.value, tuple) else self.value

    @property
    def high(self) -> float:
        return self.value[1] if isinstance(self.value, tuple) else self.value

    @property
    def mid(self) -> float:
        return (self.low + self.high) / 2

    def label(self) -> str:
        """Legend text: ``paper (Table 2)``, ``paper (Fig. 4, §3.2, ~)``."""
        return f"paper ({self.cite}{', ~' if self.how in ('text', 'digitized') else ''})"

    def shown(self) -> str:
        """The value as the report shows it: ``~26 MFlop/s``, ``3-4 MB/s``, ``21.5 s``."""

        def fmt(x: float) -> str:
            return f"{int(x):,}" if float(x).is_integer() and abs(x) >= 10_000 else f"{x:g}"

        num = f"{fmt(self.low)}-{fmt(self.high)}" if isinstance(self.value, tuple) else fmt(self.value)
        sep = "" if self.unit in ("x", "%") else " "
        return f"{'~' if self.how in ('text', 'digitized') else ''}{num}{sep}{self.unit}".strip()


def module(study: str):
    """The paper-data module of ``study`` (KeyError for a study without one)."""
    return importlib.import_module(MODULES[study])


def values(study: str) -> list[PaperValue]:
    return list(module(study).VALUES)


def get(study: str, key: str) -> PaperValue:
    for v in module(study).VALUES:
        if v.key == key:
            return v
    raise KeyError(f"{study}: no paper value {key!r}")


def no_values(study: str) -> dict[str, str]:
    """Figures of the paper whose values are not readable (figure -> why)."""
    return dict(module(study).NO_VALUES)


def for_report(study: str) -> list[dict[str, Any]]:
    """Rows for the report's "the paper's values" table: every value, then every figure
    without readable values."""
    rows: list[dict[str, Any]] = []
    for v in values(study):
        d = asdict(v)
        d["value"] = list(v.value) if isinstance(v.value, tuple) else v.value
        d["shown"] = v.shown()
        rows.append(d)
    for fig, why in no_values(study).items():
        rows.append({"key": "", "quantity": "(no values)", "cite": fig, "how": "none", "shown": "—", "note": why})
    return rows


__all__ = ["HOW", "STYLE", "MODULES", "PaperValue", "module", "values", "get", "no_values", "for_report"]
