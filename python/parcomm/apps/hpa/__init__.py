"""Parallel association-rule mining (seed 000): the IBM Quest generator and
file formats (:mod:`.quest`), serial Apriori and rules (:mod:`.apriori`) and
HPA, Hash Partitioned Apriori, as a rank program (:mod:`.hpa`)."""

from .apriori import AprioriResult, Rule, apriori, rules
from .hpa import CostModel, hpa, levels_to_dict, merge_result
from .quest import QuestParams, TransactionFileError, Transactions, load, read_text, write_quest, write_text

__all__ = [
    "AprioriResult",
    "CostModel",
    "QuestParams",
    "Rule",
    "TransactionFileError",
    "Transactions",
    "apriori",
    "hpa",
    "levels_to_dict",
    "load",
    "merge_result",
    "read_text",
    "rules",
    "write_quest",
    "write_text",
]
