"""F.3 (§4.1), fusion: "To isolate the benefit from kernel fusion alone, we can consider the
speedup for CUDA going from K = 10^0 → 10^3 steps; we see that kernel fusion accounts for a 11.31×
speedup."  The paper's definition includes what a K = 1 call costs besides the step (its launch,
its API call), so ours does too: the fused implementation's K = 10^3 over K = 1, median over N;
the reason splits a K = 1 call into its fixed cost and its step (``fusion_rows``).
"""

from __future__ import annotations

import pandas as pd

from ...implspec import spec
from .analysis import at_knobs, k_speedup, k_speedup_spread, rates_by_n, ratio_by_n
from .base import Finding, k_gain_reason, on_gpu, ratio_reason, row
from ..format import fmt_x
from .paper import PAPER
from ..plans import fusion_impl
from ..presets import ChapterParams


def fusion_rows(P: ChapterParams, f: pd.DataFrame) -> list[Finding]:
    """F.3: the fused implementation's K = max over K = 1 (the paper's "fusion alone"), jax's, and
    the fused over jax at the largest K, each the median over N."""
    fi, kmax, rows = fusion_impl(P), max(P.steps), []
    if kmax <= 1:
        return rows
    fused = k_speedup_spread(f, fi, 1, kmax)
    r = fused["value"]
    reason = ""
    if len(r):
        # The paper's "fusion alone" (CUDA K = 1 -> 10^3) includes what a K = 1 call costs besides its
        # step (launch, API call); so does ours. What a fused step saves is that cost and the state's
        # trip to memory, together: no point here times an empty call to part them.
        d = at_knobs(f[f["impl"] == fi])
        head = ratio_reason(rates_by_n(d[d["steps"] == kmax]), rates_by_n(d[d["steps"] == 1]), fused,
                            f"{fi} at K = {kmax}", f"{fi} at K = 1")
        reason = (head + "; as in the paper, the gain is what a K = 1 call costs besides its step, which a fused "
                  "call pays once per K steps: "
                  + ("the launch" if spec(fi).gpu_only else "the native call and its OpenMP parallel region")
                  + ", and the state's trip to memory between steps"
                  + (f" (from {fmt_x(r.min())} to {fmt_x(r.max())} over N: the gain is largest at the smallest N, "
                     "where a call's own work is smallest)" if r.idxmax() == r.index.min() and len(r) > 1 else ""))
    torch_k = f[f["impl"] == "torch"]["steps"].max() if (f["impl"] == "torch").any() else 1
    torch_gain = k_speedup(f, "torch", 1, torch_k) if torch_k > 1 else pd.Series(dtype=float)
    rows.append(row("F.3", "speedup", f"fusion alone: {fi} K = 1 → {kmax}, median over N", "f3_fusion",
                    fused, reason, numbers={"torch_k_gain": float(torch_gain.median()) if len(torch_gain) else None}))
    gain = k_speedup_spread(f, "jax", 1, kmax)
    rows.append(row("F.3", "speedup", f"jax K = 1 → {kmax} (simulation only), median over N", "f3_xla_k1_to_k1000",
                    gain, k_gain_reason(f, "jax", kmax, gain)))
    at_kmax = f[f["steps"] == kmax]
    fused_k, jax_k = rates_by_n(at_knobs(at_kmax[at_kmax["impl"] == fi])), rates_by_n(at_knobs(at_kmax[at_kmax["impl"] == "jax"]))
    ratios = ratio_by_n(fused_k, jax_k)
    over = ratios["value"]
    same = ("as in the paper, a fused CUDA kernel against XLA's per-step GPU kernels on one GPU"
            if on_gpu(f, fi) and on_gpu(f, "jax") else
            f"the paper's {fmt_x(PAPER['f3_fused_over_xla'].value)} sets a fused CUDA kernel against XLA's per-step "
            "GPU kernels")
    reason = (ratio_reason(fused_k, jax_k, ratios, f"{fi} (K = {kmax})", f"jax (K = {kmax})")
              + f"; {fi} and jax run on the same hardware here; {same}") if len(over) else ""
    rows.append(row("F.3", "speedup", f"{fi} over jax at K = {kmax}, median over N", "f3_fused_over_xla",
                    ratios, reason))
    return rows
