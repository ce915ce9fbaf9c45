"""The overheads chapter's profile (Fig 5, Fig 6), computed here once; the page renders it beside
F.2's records (``claims.overheads_rows``).

    prof = overheads.with_shares(book.profile_data(P))   # + slowdown, CPU-bound share and its bounds
    parts = overheads.fig5_parts(prof)                    # Fig 5's bars: each part's share, the paper's bar
    slow = overheads.slowdown_range(prof)                 # the profiler's slowdown, min–max per impl
    overheads.answer(P, found, prof)                      # the page's first paragraph: F.2 and Fig 6 in words
"""

from __future__ import annotations

import pandas as pd

from ...implspec import spec
from .. import answers
from ..claims.f2 import fig6_pattern
from ..claims.paper import PAPER

PARTS = {"python_s": "Python", "backend_s": "backend (C++ dispatch)", "device_s": "device (kernels)"}


def with_shares(prof: pd.DataFrame) -> pd.DataFrame:
    """The profiled collections with the profiler's ``slowdown`` (``harness.profiler.slowdown``), the
    ``cpu_share`` (Python + backend over the profiled total) and the bounds an unprofiled call's
    share lies in (``cpu_share_low``, ``cpu_share_high``: ``profiler.cpu_share_bounds``), as
    fractions."""
    from ...harness import profiler

    if not len(prof):
        return prof
    bounds = [profiler.cpu_share_bounds(r) for r in prof.to_dict("records")]
    return prof.assign(slowdown=[profiler.slowdown(r) for r in prof.to_dict("records")],
                       cpu_share=[b[0] for b in bounds], cpu_share_low=[b[1] for b in bounds],
                       cpu_share_high=[b[2] for b in bounds])


def paper_fig5_shares() -> dict:
    """The paper's Fig 5 bar at K = 1 (XLA on a GPU, N = 2^16) as fractions per part: Python and
    backend as the paper states them, the rest on the GPU."""
    py, be = PAPER["f2_python_share_k1"].value / 100, PAPER["f2_backend_share_k1"].value / 100
    return {PARTS["python_s"]: py, PARTS["backend_s"]: be, PARTS["device_s"]: 1 - py - be}


def fig5_parts(prof: pd.DataFrame) -> pd.DataFrame:
    """Fig 5's stacked bars: per profiled collection (impl, K) and part (``PARTS``), its seconds and
    its share of the profiled total; where jax was profiled, the paper's K = 1 bar first
    (``paper_fig5_shares``, labelled "paper K=1"). Carries ``call`` (a label of the call's time)
    where ``prof`` has one."""
    ids = ["impl", "steps", "total_s"] + (["call"] if "call" in prof else [])
    parts = prof.melt(id_vars=ids, value_vars=list(PARTS), var_name="part", value_name="seconds")
    parts["part"] = parts["part"].map(PARTS)
    parts["share"] = parts["seconds"] / parts["total_s"]
    parts["K"] = parts["steps"].astype(str)
    if not parts["impl"].map(lambda i: spec(i).family == "xla").any():  # Fig 5's bar is the XLA implementation's
        return parts
    paper = paper_fig5_shares()
    paper_bar = pd.DataFrame({"impl": "jax", "steps": 0, "total_s": 1.0, "K": "paper K=1", "call": "the paper's (RL-Scope)",
                              "part": list(paper), "seconds": list(paper.values()), "share": list(paper.values())})
    return pd.concat([paper_bar, parts], ignore_index=True)


def slowdown_range(prof: pd.DataFrame) -> pd.DataFrame:
    """The profiler's slowdown per implementation: ``min`` and ``max`` over its profiled K."""
    if not len(prof):
        return pd.DataFrame(columns=["min", "max"])
    return prof.groupby("impl")["slowdown"].agg(["min", "max"])


def fig6_sentence(prof: pd.DataFrame) -> str:
    """Fig 6's pattern for `jax` as ``claims.fig6_pattern`` judges it, with the counts it reads
    ("" without a profile of jax)."""
    f = fig6_pattern(prof)
    if not f:
        return ""
    holds = "holds here" if f["matches"] else "does **not** hold here"
    return (f"Fig 6's pattern, backend calls constant in K and kernels linear in it (overhead amortized, nothing fused "
            f"across steps), {holds}: from K = {f['k_low']} to {f['k_high']}, `jax`'s backend calls go from "
            f"{f['calls_low']} to {f['calls_high']} and its kernels from {f['launches_low']} to {f['launches_high']}.")


def answer(P, found, prof: pd.DataFrame) -> str:
    """The chapter's first paragraph: F.2's records (``claims.overheads_rows``), ours beside the
    paper's with their verdicts, then Fig 6's pattern (``fig6_sentence``); what is missing where F.2
    has no record."""
    lead = f"Measured on {answers.where(P)}, XLA (`jax`) against eager PyTorch (`torch`), the MLP choosing the actions:"
    text = answers.findings_answer(found, lead, "F.2 needs `jax` and `torch` measured at K = 1 and a larger K; this run "
                                                "has neither pair, so it is not answered here.")
    return " ".join(t for t in (text, fig6_sentence(prof)) if t)
