"""F.1 and F.3 measured on the robotics engines (book/engines.md), by the rules CartPole's are
judged by, one set per model. Which engine plays which of the paper's rows is its record's
``paper_row`` (harness.robotics.engines): "gym" (mj_step in a Python loop, N = 1), "C++" (threads) and
"XLA" (MJX). Once simulation only (policy "none") and once with the study's MLP choosing the
controls (policy "mlp": inside MJX's call; from Python between one-step calls for the others).

Per model and policy:
  F.1  the XLA engine over the gym row, largest over N (the paper's "up to 1024×", a GPU's);
       the best C++ engine over the gym row, largest over N (the paper's "at most 4×")
  F.3  each engine that runs K steps in one call (its record's ``steps_per_call``): K = the largest
       over K = 1, median over N
"""

from __future__ import annotations

import pandas as pd

from ...harness.robotics.engines import engine_record
from .analysis import LARGEST, best_rates_by_n, k_speedup_spread, ratio_by_n
from .base import Finding, row
from ..presets import EnginesParams


def _against_one(rates: pd.DataFrame, base: pd.DataFrame) -> pd.DataFrame:
    """``rates`` (per N) over the single rate of ``base`` (the gym row's N = 1), with repeats' ends."""
    if rates.empty or base.empty:
        return pd.DataFrame(columns=["value", "low", "high"], dtype=float)
    b = base.iloc[0]
    return ratio_by_n(rates, pd.DataFrame({c: [b[c]] * len(rates) for c in ("value", "low", "high")}, index=rates.index))


def model_rows(model: str, d: pd.DataFrame, kmax: int, policy: str = "none") -> list[Finding]:
    """The F.1 and F.3 rows of one model under one policy (``d``: its engines' rows under that
    policy, samples/s = mj_steps/s)."""
    rows, tag = [], f"{model}, " + ("simulation only" if policy == "none" else "with the MLP policy")
    by_row = {r: d[d["paper_row"] == r] for r in ("gym", "C++", "XLA")}
    gym = best_rates_by_n(by_row["gym"])
    for paper_row, key, rule, what in (("XLA", "f1_gpu_over_gym", "speedup", "MJX (XLA)"),
                                       ("C++", "f1_cpp_over_gym", "at most", "best C++ engine")):
        vec = by_row[paper_row]
        if len(vec) and len(gym):
            g = by_row["gym"]["samples_per_s"].max()
            top = vec.loc[vec["samples_per_s"].idxmax()]
            reason = (f"{top['engine']} at N = {top['num_envs']}, K = {top['steps']}: {top['samples_per_s']:.3g} "
                      f"mj_steps/s against {g:.3g} for one environment stepped from Python; on the same CPU cores")
            rows.append(row("F.1", rule, f"{tag}: {what} over mj_step in a Python loop, largest over N", key,
                            _against_one(best_rates_by_n(vec), gym), reason, summary=LARGEST))
    if kmax > 1:
        for engine in sorted(set(d["engine"])):
            rec = engine_record(engine)
            ks = set(d[d["engine"] == engine]["steps"])
            if not rec.steps_per_call or not {1, kmax} <= ks:  # both ends measured (an MLP row of MJX: K = kmax only)
                continue
            key = "f3_xla_k1_to_k1000" if rec.compiles else "f3_fusion"
            gain = k_speedup_spread(d.assign(impl=d["engine"]), engine, 1, kmax)
            rows.append(row("F.3", "speedup", f"{tag}: {engine}, K = 1 → {kmax} mj_steps per call, median over N", key,
                            gain, f"{rec.title}: what a call costs besides its steps, paid once per K"))
    return rows


def labelled_findings(P: EnginesParams, rows: pd.DataFrame) -> list[tuple[tuple[str, str], Finding]]:
    """Every model's rows under each policy, each with its (model, policy)."""
    if rows.empty:
        return []
    kmax = max(P.steps)
    return [((m, pol), r) for pol in P.policies for m in P.models
            if ((rows["model"] == m) & (rows["policy"] == pol)).any()
            for r in model_rows(m, rows[(rows["model"] == m) & (rows["policy"] == pol)], kmax, pol)]


def engine_findings(P: EnginesParams, rows: pd.DataFrame) -> list[Finding]:
    return [r for _, r in labelled_findings(P, rows)]
