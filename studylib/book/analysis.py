"""The numbers the chapters and the introduction's findings table compute from the measurements:
plateaus, speedups over K, fusion speedups, and the verdict against the paper's value."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .format import fmt_x, pow2_label
from .paper import PAPER
from .plans import complexity_data, fusion_data, fusion_impl, overheads_data, profile_data, vectorization_data
from .presets import params


def plateau_n(df_impl: pd.DataFrame, frac=0.9):
    """Smallest N whose throughput reaches ``frac`` of the implementation's best (its plateau)."""
    s = df_impl.groupby("num_envs")["samples_per_s"].max().sort_index()
    if s.empty:
        return None
    return int(s[s >= frac * s.max()].index.min())


def k_speedup(df: pd.DataFrame, impl: str, k_lo: int, k_hi: int, *, max_n=None):
    """Per N: throughput at K = k_hi over K = k_lo for one implementation."""
    d = df[df["impl"] == impl]
    if max_n is not None:
        d = d[d["num_envs"] <= max_n]
    lo = d[d["steps"] == k_lo].set_index("num_envs")["samples_per_s"]
    hi = d[d["steps"] == k_hi].set_index("num_envs")["samples_per_s"]
    return (hi / lo).dropna()


def verdict(ours, paper, *, kind="speedup") -> str:
    if ours is None or not np.isfinite(ours):
        return "not measured"
    if kind == "speedup":
        if ours <= 1.05:
            return "not reproduced (no speedup here)"
        r = ours / paper
        if 0.5 <= r <= 2:
            return "reproduced (within 2×)"
        return "same direction, smaller" if r < 0.5 else "same direction, larger"
    if kind == "share":
        return "reproduced (within 10 points)" if abs(ours - paper) <= 10 else (
            "CPU share smaller here" if ours < paper else "CPU share larger here")
    if kind == "ceiling":  # paper: "at most"
        return "consistent (≤ paper's bound)" if ours <= paper * 1.05 else "exceeds the paper's bound"
    if kind == "plateau":
        return "same order (within 4×)" if 0.25 <= ours / paper <= 4 else (
            "plateaus earlier here" if ours < paper else "plateaus later here")
    if kind == "flat":  # ours = max/min across N
        return "flat in N (within 2×)" if ours <= 2 else "varies with N here"
    if kind == "vanish":
        return "reproduced (≤ 2×)" if ours <= 2 else "fusion still helps here"
    return ""


def findings(preset=None, data_dir=None) -> pd.DataFrame:
    """F.1–F.4: the paper's value, ours (computed from the chapters' data), a verdict. Runs the
    chapters' sweeps (resuming: whatever a chapter already measured is read, not re-measured)."""
    rows = []

    def add(f, quantity, key, ours, kind, ours_text=None, paper_text=None):
        pv = PAPER[key]
        rows.append({
            "finding": f, "quantity": quantity,
            "paper": paper_text or (fmt_x(pv.value) if pv.unit == "x" else f"{pv.value:g}%" if pv.unit == "%" else pow2_label(pv.value)),
            "paper source": pv.where,
            "ours": ours_text or (fmt_x(ours) if pv.unit == "x" else f"{ours:.0f}%" if pv.unit == "%" else pow2_label(ours) if ours else "n/a"),
            "verdict": verdict(ours, pv.value, kind=kind),
        })

    # F.1
    P = params("vectorization", preset=preset, data_dir=data_dir)
    v = vectorization_data(P)
    best = v.groupby(["impl", "num_envs"])["samples_per_s"].max().unstack(0)
    vec = [i for i in ("torch", "jax", "cuda") if i in best]
    if "gym" in best and vec:
        sp = (best[vec].max(axis=1) / best["gym"]).dropna()
        add("F.1", "vectorized (torch/jax) over gym, best N", "f1_gpu_over_gym", sp.max() if len(sp) else None, "speedup")
    if "gym" in best and "cpp" in best:
        sp = (best["cpp"] / best["gym"]).dropna()
        add("F.1", "cpp (multi-core) over gym, best N", "f1_cpp_over_gym", sp.max() if len(sp) else None, "ceiling")
    # F.2
    P = params("overheads", preset=preset, data_dir=data_dir)
    o = overheads_data(P)
    kmax = max(P.steps)
    if {"jax", "torch"} <= set(o["impl"]) and kmax > 1:
        small = o[o["num_envs"] <= 2**13]
        j = small[(small["impl"] == "jax") & (small["steps"] == kmax)].set_index("num_envs")["samples_per_s"]
        t = small[small["impl"] == "torch"].groupby("num_envs")["samples_per_s"].max()
        add("F.2", f"jax (K={kmax}) over torch, mean over N ≤ 2^13", "f2_xla_over_torch", (j / t).dropna().mean(), "speedup")
        r = k_speedup(o, "jax", 1, kmax, max_n=2**13)
        add("F.2", f"jax K = 1 → {kmax} (with inference), mean over N ≤ 2^13", "f2_xla_k1_to_k1000", r.mean(), "speedup")
    prof = profile_data(P)
    if len(prof) and (prof["impl"] == "jax").any():
        r = prof[(prof["impl"] == "jax")].sort_values("steps").iloc[0]
        share = 100 * (r["python_s"] + r["backend_s"]) / r["total_s"]
        add("F.2", f"CPU-bound share of jax time at K = {int(r['steps'])} (N = {pow2_label(r['num_envs'])})",
            "f2_cpu_share_k1", share, "share")
    # F.3
    P = params("fusion", preset=preset, data_dir=data_dir)
    f = fusion_data(P)
    fi = fusion_impl(P)
    kmax = max(P.steps)
    if kmax > 1:
        r = k_speedup(f, fi, 1, kmax)
        add("F.3", f"fusion alone: {fi} K = 1 → {kmax}, mean over N", "f3_fusion", r.mean() if len(r) else None, "speedup")
        r = k_speedup(f, "jax", 1, kmax)
        add("F.3", f"jax K = 1 → {kmax} (simulation only), mean over N", "f3_xla_k1_to_k1000", r.mean() if len(r) else None, "speedup")
        a = f[(f["impl"] == fi) & (f["steps"] == kmax)].set_index("num_envs")["samples_per_s"]
        b = f[(f["impl"] == "jax") & (f["steps"] == kmax)].set_index("num_envs")["samples_per_s"]
        add("F.3", f"{fi} over jax at K = {kmax}, mean over N", "f3_fused_over_xla", (a / b).dropna().mean(), "speedup")
    # F.4
    P = params("complexity", preset=preset, data_dir=data_dir)
    c = complexity_data(P)
    sp = fusion_speedups(c)
    if len(sp):
        kmax = sp["steps"].max()
        at = sp[(sp["steps"] == kmax) & (sp["compute_factor"] == 1)]
        by_s = at.groupby("state_factor")["speedup"].median()
        lo, hi = by_s.iloc[0], by_s.max()
        rows.append({"finding": "F.4", "quantity": f"fusion speedup at K = {kmax}, C = 1: at S = {by_s.index[0]} → "
                     f"at the best S measured (S = {by_s.idxmax()}), median over N",
                     "paper": "2^4 → 2^10", "paper source": PAPER["f4_speedup_s_high"].where,
                     "ours": f"{fmt_x(lo)} → {fmt_x(hi)}",
                     "verdict": ("grows with S" if hi > 1.5 * lo else "does not grow with S here")
                     + (", smaller than the paper" if hi < PAPER["f4_speedup_s_high"].value / 2 else "")})
        flat = at.groupby("state_factor")["speedup"].agg(lambda s: s.max() / s.min()).max() if at["num_envs"].nunique() > 1 else None
        if flat is not None:
            rows.append({"finding": "F.4", "quantity": f"spread of the K = {kmax} speedup across N (max/min, worst S)",
                         "paper": "≈ 1× (flat in N)", "paper source": "§4.2, Fig 9", "ours": fmt_x(flat),
                         "verdict": verdict(flat, 1, kind="flat")})
        cmax = sp["compute_factor"].max()
        if cmax > 1:
            v_c = sp[(sp["steps"] == kmax) & (sp["compute_factor"] == cmax) & (sp["state_factor"] == sp["state_factor"].min())]["speedup"].median()
            add("F.4", f"fusion speedup at K = {kmax}, largest C = {cmax}, smallest S", "f4_speedup_c_max", v_c, "vanish")
    return pd.DataFrame(rows)


def fusion_speedups(df: pd.DataFrame) -> pd.DataFrame:
    """Throughput at each K over throughput at K = 1 with the same (impl, N, S, C): paper Fig 9's y."""
    if df.empty:
        return pd.DataFrame(columns=["impl", "num_envs", "state_factor", "compute_factor", "steps", "speedup"])
    keys = ["impl", "num_envs", "state_factor", "compute_factor"]
    base = df[df["steps"] == 1].set_index(keys)["samples_per_s"].rename("base")
    out = df.join(base, on=keys)
    out["speedup"] = out["samples_per_s"] / out["base"]
    return out.dropna(subset=["speedup"])
