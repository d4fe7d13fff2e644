"""Verdict rules: every "agrees / differs / not comparable" in the report is computed by one of
these functions, and the rule travels with the verdict as data (``Comparison.rule``).

A rule is written down before the result is looked at and is chosen from the paper's own
precision: a value the text gives as "~26" is read to within a wide band, a printed table to
its last digit. The ``basis`` says which precision set the band, so a reader can judge it.

Three kinds of rule decide (``tolerance`` for a number, ``direction`` for a trend or an order,
``criterion`` for a named yes/no test), and a fourth says why there is no verdict
(``no paper value``). The report counts the verdicts by kind.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

TOLERANCE, DIRECTION, CRITERION, NO_VALUE = "tolerance", "direction", "criterion", "no paper value"
#: The kinds, in the order the report lists them.
KINDS = (TOLERANCE, DIRECTION, CRITERION, NO_VALUE)

#: The band for a value the paper's text gives as approximate ("約 26", "~1.7x"): the authors
#: round a value off their own figure to one or two digits, so ±20 % and not the last digit.
TEXT_BAND = 0.2
TEXT_BASIS = "the text gives it as approximate: ±20 %, the band for a value read off the paper's own figure"

#: The band for a time the paper measured once and printed (Table 2's 21.5 s): the digits are
#: exact, but a timeout-driven run varies from run to run and the paper reports no spread.
MEASURED_BAND = 0.25
MEASURED_BASIS = "one measured run, printed; the paper gives no run-to-run spread, so ±25 %"


@dataclass(frozen=True)
class Rule:
    kind: str
    #: What must hold, in a reader's words ("within ±50 % of ~26 MFlop/s").
    text: str
    #: Why this rule: the precision or claim of the paper it comes from.
    basis: str = ""

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass(frozen=True)
class Verdict:
    """A verdict and the rule that gave it; pass it as ``Comparison(..., agrees=<Verdict>)``."""

    agrees: bool | None
    rule: Rule


def _num(x: float, unit: str) -> str:
    return f"{x:g} {unit}" if unit and unit != "x" else f"{x:g}{unit}"


def within(value: float, target: float, rel: float, basis: str, unit: str = "", approx: bool = False) -> Verdict:
    """``value`` within ±``rel`` (a fraction) of the paper's ``target``."""
    ok = abs(value / target - 1) <= rel if target else abs(value) <= rel
    shown = ("~" if approx else "") + _num(target, unit)
    return Verdict(ok, Rule(TOLERANCE, f"within ±{rel * 100:g} % of {shown}", basis))


def within_abs(value: float, target: float, tol: float, basis: str, unit: str = "") -> Verdict:
    """``value`` within ±``tol`` (same unit) of ``target``."""
    return Verdict(
        abs(value - target) <= tol, Rule(TOLERANCE, f"within ±{_num(tol, unit)} of {_num(target, unit)}", basis)
    )


def at_most(value: float, limit: float, basis: str, unit: str = "") -> Verdict:
    return Verdict(value <= limit, Rule(TOLERANCE, f"at most {_num(limit, unit)}", basis))


def at_least(value: float, limit: float, basis: str, unit: str = "") -> Verdict:
    return Verdict(value >= limit, Rule(TOLERANCE, f"at least {_num(limit, unit)}", basis))


def direction(holds: bool, trend: str, basis: str = "") -> Verdict:
    """A trend or an order the paper states (``trend``: "B faster than A at the largest m")."""
    return Verdict(bool(holds), Rule(DIRECTION, trend, basis))


def criterion(holds: bool, name: str, basis: str = "") -> Verdict:
    """A named yes/no test that is neither a number's band nor a trend."""
    return Verdict(bool(holds), Rule(CRITERION, name, basis))


def no_paper_value(reason: str) -> Verdict:
    """No verdict: ``reason`` says why the row cannot be compared one to one."""
    return Verdict(None, Rule(NO_VALUE, reason))


def rule_problems(rule: Any) -> list[str]:
    """What is wrong with a comparison's ``rule`` as written in report.json (empty: nothing)."""
    if not isinstance(rule, dict) or not rule:
        return ["no rule"]
    out = []
    if rule.get("kind") not in KINDS:
        out.append(f"kind {rule.get('kind')!r} is not one of {', '.join(KINDS)}")
    if not str(rule.get("text", "")).strip():
        out.append("the rule says nothing")
    return out
