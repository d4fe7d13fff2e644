"""The CPU seconds a simulated HPA rank is charged (the real backends spend real CPU)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CostModel:
    """CPU seconds charged by simulated ranks. The defaults are rough
    figures for a 200 MHz Pentium Pro (seed 000 Table 1) scanning and
    hashing in C: a few hundred cycles per transaction read, per k-subset
    formed and hashed, and per hash-table probe of a received itemset. The
    ``oguchi`` study replaces them with a model calibrated on Table 2
    (:func:`parcomm.studies.oguchi.calibrated_cost`).

    Pass 1 charges ``per_transaction_s`` per transaction plus
    ``pass1_per_item_s`` (``per_probe_s`` when None) per item read and
    counted; pass k >= 2 charges ``per_candidate_s`` per candidate,
    ``per_subset_s`` per candidate k-subset found, ``per_probe_s`` per
    itemset the owner looks up, and ``per_transaction_s`` per transaction
    plus ``per_item_s`` per item of the (trimmed) transactions scanned."""

    per_transaction_s: float = 2e-6
    per_subset_s: float = 0.5e-6
    per_probe_s: float = 1e-6
    per_candidate_s: float = 0.2e-6  # candidate generation and insertion
    per_item_s: float = 0.0
    pass1_per_item_s: float | None = None


# the charges of a rank's own scan, scaled by ``cpu_scale`` (an owner's probes of what
# it receives depend on which candidates it owns, not on its own partition)
SCAN_COST_FIELDS = ("per_transaction_s", "per_subset_s", "per_candidate_s", "per_item_s")
