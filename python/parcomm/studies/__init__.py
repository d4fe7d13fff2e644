"""Reproductions of the seed papers, one module per study.

A study module defines ``NAME``, ``TITLE``, ``SOURCE`` (the paper it follows)
and ``run(ctx: StudyContext) -> StudyReport``; :mod:`.framework` writes its
tables (CSV and JSON), figures (PNG) and a section of the HTML report.
"""

from .framework import STUDIES, Comparison, StudyContext, StudyReport, run_studies

__all__ = ["STUDIES", "Comparison", "StudyContext", "StudyReport", "run_studies"]
