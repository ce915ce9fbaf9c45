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

from .analysis import LARGEST, best_rates_by_n, k_speedup_spread, rates_by_n, ratio_by_n
from .claims_base import Finding, _per_env_step, row
from .format import fmt_time
from .presets import ChainParams

VECTORIZED = ("torch", "jax")  # the paper's F.1 "DL framework (PyTorch) and ML compiler (XLA)" rows


def _reason_per_step(d: pd.DataFrame, a: str, b: str, steps=None) -> str:
    return (f"{fmt_time(_per_env_step(d, a, steps=steps))} per environment-step in {a} against "
            f"{fmt_time(_per_env_step(d, b, steps=steps))} in {b} at their best")


def links_rows(n: int, d: pd.DataFrame, kmax: int) -> list[Finding]:
    """The F.1–F.3 rows of the chain with ``n`` links (``d``: its measured rows)."""
    rows, impls, tag = [], set(d["impl"]), f"chain n = {n}, no policy"
    gym = best_rates_by_n(d[d["impl"] == "gym"])
    vec = [i for i in VECTORIZED if i in impls]
    if "gym" in impls and vec:
        best = d[d["impl"].isin(vec)]
        top = best.loc[best["samples_per_s"].idxmax(), "impl"]
        rows.append(row("F.1", "speedup", f"{tag}: best of torch/jax over gym, largest over N", "f1_gpu_over_gym",
                        ratio_by_n(best_rates_by_n(best), gym), _reason_per_step(d, top, "gym")
                        + "; on the same CPU cores (the paper's figure is a GPU's)", summary=LARGEST))
    if {"gym", "cpp"} <= impls:
        rows.append(row("F.1", "at most", f"{tag}: cpp over gym, largest over N", "f1_cpp_over_gym",
                        ratio_by_n(best_rates_by_n(d[d["impl"] == "cpp"]), gym),
                        _reason_per_step(d, "cpp", "gym") + ": cpp steps the environments in SIMD lanes on every "
                        "core, gym one at a time in Python", summary=LARGEST))
    if {"jax", "torch"} <= impls and kmax > 1:
        rows.append(row("F.2", "speedup", f"{tag}: jax (K = {kmax}) over torch (its best K), median over N",
                        "f2_xla_over_torch",
                        ratio_by_n(rates_by_n(d[(d["impl"] == "jax") & (d["steps"] == kmax)]),
                                   best_rates_by_n(d[d["impl"] == "torch"])),
                        _reason_per_step(d, "jax", "torch")))
    for impl, key in (("cpp", "f3_fusion"), ("jax", "f3_xla_k1_to_k1000")):
        if impl in impls and kmax > 1:
            what = "fusion alone" if impl == "cpp" else "XLA's scan"
            rows.append(row("F.3", "speedup", f"{tag}: {what}, {impl} K = 1 → {kmax}, median over N", key,
                            k_speedup_spread(d, impl, 1, kmax),
                            f"{impl}: {fmt_time(_per_env_step(d, impl, steps=1))} per environment-step at K = 1, "
                            f"{fmt_time(_per_env_step(d, impl, steps=kmax))} at K = {kmax}"))
    if {"cpp", "jax"} <= impls and kmax > 1:
        at = d[d["steps"] == kmax]
        rows.append(row("F.3", "speedup", f"{tag}: cpp over jax at K = {kmax}, median over N", "f3_fused_over_xla",
                        ratio_by_n(rates_by_n(at[at["impl"] == "cpp"]), rates_by_n(at[at["impl"] == "jax"])),
                        _reason_per_step(d, "cpp", "jax", steps=kmax) + " at K = " + str(kmax)
                        + "; both on the same CPU cores (the paper's figure sets a CUDA kernel against XLA's GPU kernels)"))
    return rows


def labelled_findings(P: ChainParams, measured: pd.DataFrame) -> list[tuple[int, Finding]]:
    """Every n's rows, in the order of n, each with its n."""
    if measured.empty:
        return []
    kmax = max(P.steps)
    return [(int(n), r) for n in sorted(measured["links"].unique())
            for r in links_rows(int(n), measured[measured["links"] == n], kmax)]


def chain_findings(P: ChainParams, measured: pd.DataFrame) -> list[Finding]:
    """Every n's rows, in the order of n."""
    return [r for _, r in labelled_findings(P, measured)]
