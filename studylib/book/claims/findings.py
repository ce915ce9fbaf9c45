"""F.1–F.4, row by row: each comparison the paper makes, computed once here as a typed record
(``Finding``: our value with its spread over N, the paper's value, the rule, the verdict and the
reason in this machine's numbers). The chapters render these records (``findings_md``) and never
recompute a finding's number; the introduction's table (``findings``) gathers them all.

The findings' modules, one a finding (each quotes the paper's words it judges):

``claims_base``  the record (``Finding``, ``COLUMNS``), ``row`` that judges one, the table and its
                 text (``findings_frame``, ``verdict_counts``, ``verdict_text``, ``findings_md``),
                 the reasons several findings share (``k_overhead``)
``claims_f1``    F.1 (§3.3), vectorization over gym: ``vectorization_rows``
``claims_f2``    F.2 (§3.3–3.4), overheads: ``overheads_rows``, Fig 6's pattern ``fig6_pattern``
``claims_f3``    F.3 (§4.1), fusion alone: ``fusion_rows``
``claims_f4``    F.4 (§4.2), complexity: ``complexity_rows``, ``memory_regime_table``,
                 ``memory_traffic``, ``cache_multiple``, ``fusion_grid``

This module: each chapter's findings from its plans (``vectorization_findings`` ...;
``book.chapters`` lists them), which read the plans through this module's names (a test replaces
them here), and the public names of the modules above, so ``claims.X`` is every finding's X.

    rows = vectorization_rows(P, df)          # a chapter, from the frame it already has
    F = book.findings(preset="default")       # every chapter's rows (``book.chapters``), through the plans
"""

from __future__ import annotations

from .analysis import VERDICTS
from .base import (COLUMNS, Finding, findings_frame, findings_md, k_overhead, on_gpu, row, verdict_counts,
                   verdict_text)
from .f1 import vectorization_rows
from .f2 import CALLS_CONSTANT, LAUNCHES_LINEAR, SMALL_N, fig6_pattern, overheads_rows
from .f3 import fusion_rows
from .f4 import BYTES_FACTOR, cache_multiple, complexity_rows, fusion_grid, memory_regime_table, memory_traffic
from ..plans import complexity_data, fusion_data, overheads_data, profile_data, roofline_data, vectorization_data
from ..presets import ChapterParams

__all__ = [
    "BYTES_FACTOR", "CALLS_CONSTANT", "COLUMNS", "Finding", "LAUNCHES_LINEAR", "SMALL_N", "VERDICTS",
    "cache_multiple", "complexity_findings", "complexity_rows", "fig6_pattern", "findings_frame", "findings_md",
    "fusion_findings", "fusion_grid", "fusion_rows", "k_overhead", "memory_regime_table", "memory_traffic", "on_gpu",
    "overheads_findings", "overheads_rows", "row", "vectorization_findings", "vectorization_rows", "verdict_counts",
    "verdict_text",
]


def vectorization_findings(P: ChapterParams) -> list[Finding]:
    return vectorization_rows(P, vectorization_data(P))


def overheads_findings(P: ChapterParams) -> list[Finding]:
    return overheads_rows(P, overheads_data(P), profile_data(P))


def fusion_findings(P: ChapterParams) -> list[Finding]:
    return fusion_rows(P, fusion_data(P))


def complexity_findings(P: ChapterParams) -> list[Finding]:
    return complexity_rows(P, complexity_data(P), roofline_data(P))
