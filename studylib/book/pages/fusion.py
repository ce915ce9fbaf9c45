"""The fusion chapter's (Fig 8) speedup chart, computed here once from F.3's records
(``claims.fusion_rows``) and, for the implementations no finding is about, ``analysis.k_speedup``.

    sp = fusion.speedup_lines(df, found, impls, fused_impl, kmax)   # one row per (line, N)
    fusion.answer(P, found, fused_impl)                              # the page's first paragraph: F.3 in words
    fusion.complexity_answer(P, rows, fused_impl)                    # the complexity chapter's: F.4 (Fig 9)
"""

from __future__ import annotations

import pandas as pd

from .. import answers
from ..claims.analysis import k_speedup

LINE_KINDS = ("K = 1 → K", "over jax")


def speedup_lines(df: pd.DataFrame, records, impls, fused: str, kmax: int) -> pd.DataFrame:
    """The chart's rows (what, impl, kind, num_envs, speedup): each implementation's gain from K = 1
    to ``kmax`` per N (F.3's per-N values for the fused one and jax, ``k_speedup`` for the others),
    then the fused implementation over jax at ``kmax`` (F.3's)."""
    by = {f.key: f for f in records}
    rows = []
    for impl in impls:
        key = {fused: "f3_fusion", "jax": "f3_xla_k1_to_k1000"}.get(impl)
        per_n = by[key].numbers.get("per_n", {}) if key in by else k_speedup(df, impl, 1, kmax).to_dict()
        rows += [{"what": f"{impl} K = 1 → {kmax}", "impl": impl, "kind": LINE_KINDS[0], "num_envs": int(n),
                  "speedup": float(v)} for n, v in per_n.items()]
    over = by["f3_fused_over_xla"].numbers.get("per_n", {}) if "f3_fused_over_xla" in by else {}
    rows += [{"what": f"{fused} over jax at K = {kmax}", "impl": fused, "kind": LINE_KINDS[1], "num_envs": int(n),
              "speedup": float(v)} for n, v in over.items()]
    return pd.DataFrame(rows, columns=["what", "impl", "kind", "num_envs", "speedup"])


def answer(P, found, fused: str) -> str:
    """The chapter's first paragraph: F.3's records (``claims.fusion_rows``), ours beside the
    paper's with their verdicts, after naming the fused implementation (the paper's is a CUDA
    kernel on a GPU); what is missing where F.3 has no record."""
    kind = "the CUDA kernel" if fused == "cuda" else "the CUDA kernel's source compiled for this CPU"
    lead = f"Measured on {answers.where(P)}, simulation only, with `{fused}` ({kind}) as the fused implementation:"
    return answers.findings_answer(found, lead, f"F.3 needs `{fused}` and `jax` measured at K = 1 and a larger K; "
                                                "this run has not measured them, so it is not answered here.")


def complexity_answer(P, rows, fused: str) -> str:
    """The chapter's first paragraph: F.4's records (``claims.complexity_rows``), ours beside the
    paper's with their verdicts, after naming the fused implementation whose speedup they are;
    what is missing where F.4 has no record."""
    lead = f"Measured on {answers.where(P)}, simulation only, the fusion speedup of `{fused}`:"
    return answers.findings_answer(rows, lead, f"F.4 needs `{fused}` measured at K = 1 and a larger K over the state "
                                               "and compute factors; this run has too few points, so it is not "
                                               "answered here.")
