"""The complexity chapter's (F.4, Fig 9) first paragraph; its tables and rows are ``claims.f4``'s
(``complexity_rows``, ``fusion_grid``, ``memory_regime_table``), which the page renders below.

    complexity.answer(P, rows, fused_impl)   # F.4's records in words, ours beside the paper's
"""

from __future__ import annotations

from .. import answers


def answer(P, rows, fused: str) -> str:
    """The chapter's first paragraph: F.4's records (``claims.complexity_rows``), ours beside the
    paper's with their verdicts, after naming the fused implementation whose speedup they are;
    what is missing where F.4 has no record."""
    lead = f"Measured on {answers.where(P)}, simulation only, the fusion speedup of `{fused}`:"
    return answers.findings_answer(rows, lead, f"F.4 needs `{fused}` measured at K = 1 and a larger K over the state "
                                               "and compute factors; this run has too few points, so it is not "
                                               "answered here.")
