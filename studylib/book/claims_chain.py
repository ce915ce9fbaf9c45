"""F.1–F.3 measured on the n-link chain (book/chain.md), by the rules CartPole's are judged by
(``claims_base.row``, ``analysis.RULES``), one set of rows per n. The chapter measures the chain
without a policy (the paper's "no policy" configuration: hashed controls), so every comparison here
is of the simulation and its episode rules, where the paper's F.1 and F.2 include the MLP's
inference: the quantity says so.

Per n, each the paper's comparison on the chain's rows of that n:
  F.1  the best vectorized implementation (torch, jax) over gym's loop, largest over N; cpp over gym
  F.2  jax at the largest K over torch at its best K, median over N
  F.3  cpp K = 1 → the largest K (fusion alone), jax K = 1 → the largest K, cpp over jax at that K

F.4 is not judged on the chain: the paper's F.4 varies the bytes a step moves (S) at fixed
arithmetic, the chain varies the arithmetic (flops grow as n³, bytes as n); the page shows the
fusion speedup against n beside its flops per byte instead of a verdict.
"""

from __future__ import annotations

import pandas as pd

from .analysis import LARGEST, at_knobs, best_rates_by_n, rates_by_n, ratio_by_n
from .claims_base import Finding, on_gpu, ratio_reason, row
from .presets import ChainParams

VECTORIZED = ("torch", "jax")  # the paper's F.1 "DL framework (PyTorch) and ML compiler (XLA)" rows


def _where(d: pd.DataFrame, a: str, b: str) -> str:
    """Where the two ran: the same GPU, or the same CPU cores (the paper's figures are a GPU's)."""
    if on_gpu(d, a) and on_gpu(d, b):
        return "both on the same GPU"
    return "both on the same CPU cores (the paper's figure is a GPU's)"


def links_rows(n: int, d: pd.DataFrame, kmax: int) -> list[Finding]:
    """The F.1–F.3 rows of the chain with ``n`` links (``d``: its measured rows); each reason gives
    the per-step times at the N that make its headline (``claims_base.ratio_reason``)."""
    rows, impls, tag = [], set(d["impl"]), f"chain n = {n}, no policy"
    gym = best_rates_by_n(d[d["impl"] == "gym"])
    vec = [i for i in VECTORIZED if i in impls]
    if "gym" in impls and vec:
        best = best_rates_by_n(d[d["impl"].isin(vec)])
        r = ratio_by_n(best, gym)
        rows.append(row("F.1", "speedup", f"{tag}: best of torch/jax over gym, largest over N", "f1_gpu_over_gym",
                        r, ratio_reason(best, gym, r, "the faster of torch and jax", "gym", LARGEST)
                        + f"; {_where(d, vec[0], vec[-1])}", summary=LARGEST))
    if {"gym", "cpp"} <= impls:
        cpp = best_rates_by_n(d[d["impl"] == "cpp"])
        r = ratio_by_n(cpp, gym)
        rows.append(row("F.1", "at most", f"{tag}: cpp over gym, largest over N", "f1_cpp_over_gym", r,
                        ratio_reason(cpp, gym, r, "cpp", "gym", LARGEST) + ": cpp steps the environments in SIMD "
                        "lanes on every core, gym one at a time in Python", summary=LARGEST))
    if {"jax", "torch"} <= impls and kmax > 1:
        jax = rates_by_n(d[(d["impl"] == "jax") & (d["steps"] == kmax)])
        torch = best_rates_by_n(d[d["impl"] == "torch"])
        r = ratio_by_n(jax, torch)
        rows.append(row("F.2", "speedup", f"{tag}: jax (K = {kmax}) over torch (its best K), median over N",
                        "f2_xla_over_torch", r, ratio_reason(jax, torch, r, f"jax (K = {kmax})", "torch (its best K)")
                        + f"; {_where(d, 'jax', 'torch')}"))
    for impl, key in (("cpp", "f3_fusion"), ("jax", "f3_xla_k1_to_k1000")):
        if impl in impls and kmax > 1:
            what = "fusion alone" if impl == "cpp" else "XLA's scan"
            at = at_knobs(d[d["impl"] == impl], 1, 1)
            hi, lo = rates_by_n(at[at["steps"] == kmax]), rates_by_n(at[at["steps"] == 1])
            r = ratio_by_n(hi, lo)
            rows.append(row("F.3", "speedup", f"{tag}: {what}, {impl} K = 1 → {kmax}, median over N", key, r,
                            ratio_reason(hi, lo, r, f"{impl} at K = {kmax}", f"{impl} at K = 1")))
    if {"cpp", "jax"} <= impls and kmax > 1:
        at = d[d["steps"] == kmax]
        cpp, jax = rates_by_n(at[at["impl"] == "cpp"]), rates_by_n(at[at["impl"] == "jax"])
        r = ratio_by_n(cpp, jax)
        rows.append(row("F.3", "speedup", f"{tag}: cpp over jax at K = {kmax}, median over N", "f3_fused_over_xla",
                        r, ratio_reason(cpp, jax, r, f"cpp (K = {kmax})", f"jax (K = {kmax})") + "; "
                        + _where(d, "cpp", "jax").replace("the paper's figure is a GPU's", "the paper's figure sets "
                                                          "a CUDA kernel against XLA's GPU kernels")))
    return rows


def chain_findings(P: ChainParams, measured: pd.DataFrame) -> list[Finding]:
    """Every n's rows, in the order of n."""
    if measured.empty:
        return []
    kmax = max(P.steps)
    return [r for n in sorted(measured["links"].unique()) for r in links_rows(int(n), measured[measured["links"] == n], kmax)]
