"""F.2 (§3.3–3.4), overheads: "Increasing the number of consecutive data collection steps executed
in a single Python→XLA API call from 10^0 → 10^3 results in a 53.76× speedup on average for most
environment sizes (≤ 2^13), which is a 13.39× speedup over PyTorch." and "at small step sizes
like 10^0, CPU-bound operations make up 87% of data collection time split across backend C++
calls (30%) and Python time (57%)."  Ours: the median over our N ≤ 2^13 (the paper's mean lets
one N carry it); the share from one profiled run at K = 1 (``overheads_rows``). And Fig 6's
pattern of calls and launches against K (``fig6_pattern``).
"""

from __future__ import annotations

import pandas as pd

from .analysis import SINGLE_RUN_SHARE_MARGIN, best_rates_by_n, k_speedup, k_speedup_spread, rates_by_n, ratio_by_n
from .base import Finding, k_gain_reason, on_gpu, ratio_reason, reason_then, row
from ..format import fmt_time, pow2_label
from .paper import PAPER
from ..presets import ChapterParams

SMALL_N = 2**13  # the paper's F.2 comparisons are over N <= 2^13


def overheads_rows(P: ChapterParams, o: pd.DataFrame, prof: pd.DataFrame) -> list[Finding]:
    """F.2: jax at the largest K over torch at its best K, and jax's gain from K = 1 to the largest
    K, each the median over N ≤ 2^13; the CPU-bound share of jax's time at K = 1 (one profiled run)."""
    rows, kmax = [], max(P.steps)
    if {"jax", "torch"} <= set(o["impl"]) and kmax > 1:
        small = o[o["num_envs"] <= SMALL_N]
        jax = rates_by_n(small[(small["impl"] == "jax") & (small["steps"] == kmax)])
        torch = best_rates_by_n(small[small["impl"] == "torch"])
        ratio = ratio_by_n(jax, torch)
        tp = prof[prof["impl"] == "torch"] if len(prof) else prof
        calls = f", {tp['backend_calls_per_step'].median():.0f} Python→backend calls per torch step" if len(tp) else ""
        where = "the same GPU" if on_gpu(small, "jax") and on_gpu(small, "torch") else "the same CPU cores"
        reason = reason_then(ratio_reason(jax, torch, ratio, f"jax (K = {kmax})", "torch (its best K)"),
                             f"both compute on {where}, so what jax saves is torch's per-operation dispatch{calls}")
        torch_k = small[small["impl"] == "torch"]["steps"].max()
        torch_gain = k_speedup(o, "torch", 1, torch_k, max_n=SMALL_N) if torch_k > 1 else pd.Series(dtype=float)
        rows.append(row("F.2", "speedup", f"jax (K = {kmax}) over torch (its best K), median over N ≤ 2^13",
                        "f2_xla_over_torch", ratio, reason,
                        numbers={"torch_k_gain": float(torch_gain.median()) if len(torch_gain) else None,
                                 "torch_kmax": int(torch_k)}))
        gain = k_speedup_spread(o, "jax", 1, kmax, max_n=SMALL_N)
        rows.append(row("F.2", "speedup", f"jax K = 1 → {kmax} (with inference), median over N ≤ 2^13",
                        "f2_xla_k1_to_k1000", gain, k_gain_reason(o, "jax", kmax, gain, SMALL_N)))
    jp = prof[prof["impl"] == "jax"].sort_values("steps") if len(prof) else prof
    if len(jp):
        r = jp.iloc[0]
        share = 100 * (r["python_s"] + r["backend_s"]) / r["total_s"]
        reason = (f"the profile is of N = {pow2_label(r['num_envs'])} (paper: "
                  f"{pow2_label(PAPER['f2_profile_num_envs'].value)}) and the 'device' is "
                  + ("this CPU" if r.get("device", "cpu") == "cpu" else "the GPU") + ": "
                  f"its kernels take {r['device_s'] / r['total_s']:.0%} of a K = {int(r['steps'])} collection "
                  f"({fmt_time(r['device_s'])} of {fmt_time(r['total_s'])}), Python {r['python_s'] / r['total_s']:.0%} "
                  f"and the backend {r['backend_s'] / r['total_s']:.0%} (paper: "
                  f"{PAPER['f2_python_share_k1'].value:g} % and {PAPER['f2_backend_share_k1'].value:g} %)")
        last = jp.iloc[-1]
        numbers = {"steps": int(r["steps"]), "python_share": r["python_s"] / r["total_s"],
                   "backend_share": r["backend_s"] / r["total_s"], "last_steps": int(last["steps"]),
                   "share_at_last_steps": (last["python_s"] + last["backend_s"]) / last["total_s"]}
        rows.append(row("F.2", "majority share", f"CPU-bound share of jax time at K = {int(r['steps'])} "
                        f"(N = {pow2_label(r['num_envs'])}, one profiled run)", "f2_cpu_share_k1", share, reason,
                        margin=SINGLE_RUN_SHARE_MARGIN, numbers=numbers))
    return rows


CALLS_CONSTANT = 2  # "constant" backend calls: at the largest K at most this many times those at the smallest
LAUNCHES_LINEAR = 2  # "linear in K" kernels: launches per step at the largest K within this factor of the smallest's


def fig6_pattern(prof: pd.DataFrame, impl: str = "jax") -> dict:
    """Paper Fig 6's pattern for XLA (§3.4, Figure 6): "Python→XLA API calls (Backend) remain constant
    even as we increase data collection steps, explaining amortized CPU overheads. However, GPU kernel
    launches (CUDA) increase linearly, indicating kernel fusion does not occur across data collection
    steps." From ``impl``'s profiled collections at the smallest and largest K: the
    calls and launches at each, and ``matches`` — calls at most ``CALLS_CONSTANT``× and launches per
    step within ``LAUNCHES_LINEAR``× of each other ({} with no profile of ``impl``)."""
    p = prof[prof["impl"] == impl].sort_values("steps") if len(prof) else prof
    if not len(p):
        return {}
    a, b = p.iloc[0], p.iloc[-1]
    constant = b["backend_calls"] <= CALLS_CONSTANT * a["backend_calls"]
    ratio = b["kernel_launches_per_step"] / max(a["kernel_launches_per_step"], 1e-9)
    linear = b["steps"] > a["steps"] and 1 / LAUNCHES_LINEAR <= ratio <= LAUNCHES_LINEAR
    return {"k_low": int(a["steps"]), "k_high": int(b["steps"]), "calls_low": int(a["backend_calls"]),
            "calls_high": int(b["backend_calls"]), "launches_low": int(a["kernel_launches"]),
            "launches_high": int(b["kernel_launches"]), "launches_per_step_high": float(b["kernel_launches_per_step"]),
            "calls_per_step_low": float(a["backend_calls_per_step"]), "calls_per_step_high": float(b["backend_calls_per_step"]),
            # eager execution's pattern instead: calls per step within LAUNCHES_LINEAR× of each other (linear in K)
            "calls_linear": bool(b["steps"] > a["steps"] and 1 / LAUNCHES_LINEAR <= b["backend_calls_per_step"]
                                 / max(a["backend_calls_per_step"], 1e-9) <= LAUNCHES_LINEAR),
            "matches": bool(constant and linear)}


