"""F.4 (§4.2), complexity: "The speedup from kernel fusion is independent of how many parallel
simulators are used", "for the last row of plots (steps K = 10^3), the speedup varies from 2^4 to
2^10 as S increases" and "In the worst case where the simulation is entirely compute bound
(C = 2^10) and not memory bandwidth bound (S = 2^0), fusion performs just as poorly as without
fusion."  Its rows (``complexity_rows``) and the tables they read: the memory regime against the
roofline (``memory_regime_table``, ``memory_traffic``, ``cache_multiple``) and Fig 9's grid
(``fusion_grid``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ... import costs
from .analysis import fusion_speedups, k_speedup_spread, seconds_per_call, spread, trend, trend_direction
from .base import Finding, k_overhead, on_gpu, row
from ..format import fmt_bytes, fmt_time, fmt_x, pow2_label
from .paper import PAPER
from ..plans import fusion_impl
from ..presets import ChapterParams


def memory_regime_table(c: pd.DataFrame, ceil: dict) -> pd.DataFrame:
    """Per S, at the memory regime's N and C = 1: unfused (K = 1) and fused (largest K) throughput in
    environment-steps/s, the ceilings of ``harness.model.roofline`` in the same unit (an unfused step
    moves ``costs.unfused_bytes(S)`` = 32·S + 16 bytes, a K-step call moves them once), the fusion
    speedup, the roofline's bound on it (the fused ceiling over the unfused one: min(K, compute
    ceiling / memory ceiling); an unfused step slower than its memory ceiling, e.g. by a call's
    fixed cost, can be sped up beyond it), and the bytes an unfused step takes at the measured
    stream bandwidth (its time × the bandwidth) against the bytes counted."""
    regime = c.attrs.get("memory")
    if not regime:
        return pd.DataFrame()
    d = c[(c["num_envs"] == regime["num_envs"]) & (c["compute_factor"] == 1)]
    k = max(regime["steps"])
    # nan where a snapshot lacks a ceiling (files of an earlier format): its columns read as unknown
    bw, fma = (float(ceil.get(k) or np.nan) for k in ("memory_bytes_per_s", "fma_flops_per_s"))
    compute = fma / costs.physics_flops(1, 1)
    out = []
    for s, g in d.groupby("state_factor"):
        u = g[g["steps"] == 1]["samples_per_s"].median()
        f = g[g["steps"] == k]["samples_per_s"].median()
        counted = costs.unfused_bytes(s)
        memory, fused_memory = bw / counted, bw * k / counted
        fused_ceiling = np.fmin(compute, fused_memory)
        out.append({"state_factor": int(s), "working_set": regime["working_set"].get(s, np.nan),
                    "cache_multiple": regime["working_set"].get(s, np.nan) / regime["llc_bytes"],
                    "unfused": u, "fused": f, "speedup": f / u, "memory_ceiling": memory, "compute_ceiling": compute,
                    "fused_ceiling": fused_ceiling, "speedup_bound": fused_ceiling / memory,
                    "unfused_of_memory": u / memory, "fused_of_ceiling": f / fused_ceiling,
                    "fused_of_compute": f / compute, "unfused_bandwidth": u * counted,
                    "counted_bytes": counted, "measured_bytes": bw / u, "bytes_ratio": bw / u / counted})
    return pd.DataFrame(out)


BYTES_FACTOR = 2  # the stated agreement: a memory-bound step's time × bandwidth within 2× of the bytes counted


def memory_traffic(mem: pd.DataFrame) -> dict:
    """Whether the state factor's bytes set an unfused step's time where its working set leaves the
    cache: at the largest such S (``memory_regime_table``), the bytes its time takes at the measured
    stream bandwidth against the bytes counted, and whether they agree within ``BYTES_FACTOR``
    ({} where no S leaves the cache)."""
    bound = mem[mem["cache_multiple"] >= 1] if len(mem) else mem
    if not len(bound):
        return {}
    b = bound.iloc[-1]
    return {"state_factor": int(b["state_factor"]), "cache_multiple": float(b["cache_multiple"]),
            "measured_bytes": float(b["measured_bytes"]), "counted_bytes": int(b["counted_bytes"]),
            "bytes_ratio": float(b["bytes_ratio"]), "factor": BYTES_FACTOR,
            "agrees": bool(1 / BYTES_FACTOR <= b["bytes_ratio"] <= BYTES_FACTOR)}


def cache_multiple(regime: dict, working_set: float) -> float:
    """A working set (bytes) as a multiple of the last-level cache of the memory regime
    (``plans.complexity_data``'s ``attrs["memory"]``): above 1, it no longer fits."""
    return float(working_set) / float(regime["llc_bytes"])


def fusion_grid(c: pd.DataFrame, P: ChapterParams) -> pd.DataFrame:
    """Fig 9's grid read per (K > 1, C): the median fusion speedup over N at the smallest and the
    largest S measured, its growth between them (``trend``) and its direction, and the largest
    max/min across N over the S (``spread``) with the S where it is largest. F.4's "flat" row is
    this table's K = max, C = 1 spread. ``attrs["largest_working_set"]``: the grid's largest
    unfused working set (bytes, largest N and S); ``attrs["largest_cache_multiple"]``: that over the
    cache (``cache_multiple``; nan without a memory regime)."""
    sp = fusion_speedups(c[c["num_envs"].isin(P.num_envs)])
    sp = sp[sp["steps"] > 1]
    out = []
    for (k, cf), g in sp.groupby(["steps", "compute_factor"]):
        by_s = g.groupby("state_factor")["speedup"].median().sort_index()
        per_s = g.groupby("state_factor")["speedup"].agg(spread)
        growth = trend(by_s)
        out.append({"K": int(k), "C": int(cf), "smallest S": int(by_s.index[0]), "largest S": int(by_s.index[-1]),
                    "speedup at smallest S": float(by_s.iloc[0]), "speedup at largest S": float(by_s.iloc[-1]),
                    "growth": growth, "direction": trend_direction(growth) if np.isfinite(growth) else "",
                    "max/min across N": float(per_s.max()) if per_s.notna().any() else np.nan,
                    "S of max/min": int(per_s.idxmax()) if per_s.notna().any() else None})
    df = pd.DataFrame(out, columns=["K", "C", "smallest S", "largest S", "speedup at smallest S", "speedup at largest S",
                                    "growth", "direction", "max/min across N", "S of max/min"])
    df.attrs["largest_working_set"] = max(P.num_envs) * costs.unfused_bytes(max(P.state_factor)) // 2
    regime = c.attrs.get("memory")
    df.attrs["largest_cache_multiple"] = (cache_multiple(regime, df.attrs["largest_working_set"]) if regime
                                          else np.nan)
    return df


def _f4_trend_reason(t: pd.DataFrame, ceil: dict, regime: dict) -> str:
    """The fusion speedup's growth with S explained in the memory regime's numbers and the
    roofline's (``harness.model.roofline``): bytes moved per unfused step, and the speedup's bound."""
    lo, hi = t.iloc[0], t.iloc[-1]
    s_lo, s_hi = int(lo["state_factor"]), int(hi["state_factor"])
    k = max(regime["steps"])
    return (f"at S = {s_hi} the unfused working set is {fmt_bytes(hi['working_set'])}, {hi['cache_multiple']:.3g}× the "
            f"{fmt_bytes(regime['llc_bytes'])} cache; an unfused step takes {fmt_time(1 / hi['unfused'])} per "
            f"environment, the time of {hi['measured_bytes']:.4g} bytes at the {ceil['memory_bytes_per_s'] / 1e9:.3g} "
            f"GB/s measured against the {int(hi['counted_bytes'])} counted ({hi['bytes_ratio']:.3g}×), and a step of a "
            f"K = {k} call {fmt_time(1 / hi['fused'])}, {hi['fused_of_ceiling']:.0%} of its roofline ceiling (the "
            f"smaller of the compute ceiling and K× the memory one). For an unfused step at its memory "
            f"ceiling the roofline bounds the speedup at {fmt_x(hi['speedup_bound'])} there and "
            f"{fmt_x(lo['speedup_bound'])} at S = {s_lo}, where the unfused step reaches "
            f"{lo['unfused_of_memory']:.0%} of its memory ceiling")


def _f4_gpu_reason(t: pd.DataFrame, regime: dict) -> str:
    """The same growth where the fused kernel ran on a GPU: the roofline's ceilings here are the
    host CPU's (``harness.model.roofline`` measures no GPU), so they bound nothing on the GPU and are not
    used; the working set is set against the host's cache the regime was sized from."""
    lo, hi = t.iloc[0], t.iloc[-1]
    k = max(regime["steps"])
    return (f"on the GPU an unfused step takes {fmt_time(1 / lo['unfused'])} per environment at S = "
            f"{int(lo['state_factor'])} and {fmt_time(1 / hi['unfused'])} at S = {int(hi['state_factor'])} (working "
            f"set {fmt_bytes(hi['working_set'])}), a step of a K = {k} call {fmt_time(1 / lo['fused'])} and "
            f"{fmt_time(1 / hi['fused'])}; no GPU memory or compute ceiling is measured, so no roofline bound is "
            "given for it")


def _growth_range(c: pd.DataFrame, impl, n, k, s_lo, s_hi) -> dict:
    """The speedup's growth from S = s_lo to s_hi at N = n, at the ends of the repeats."""
    at = c[c["num_envs"] == n]
    a = k_speedup_spread(at, impl, 1, k, state_factor=s_lo)
    b = k_speedup_spread(at, impl, 1, k, state_factor=s_hi)
    if a.empty or b.empty:
        return {}
    return {"low": float(b["low"].iloc[0] / a["high"].iloc[0]), "high": float(b["high"].iloc[0] / a["low"].iloc[0])}


def _spread_range(c: pd.DataFrame, impl, k, s) -> dict:
    """The speedup's max/min over N at S = s, C = 1, at the ends of the repeats (at least 1)."""
    r = k_speedup_spread(c, impl, 1, k, state_factor=s)
    if len(r) < 2:
        return {}
    return {"low": max(1.0, float(r["low"].max() / r["high"].min())), "high": float(r["high"].max() / r["low"].min())}


def complexity_rows(P: ChapterParams, c: pd.DataFrame, ceil: dict) -> list[Finding]:
    rows = []
    regime = c.attrs.get("memory")
    t = memory_regime_table(c, ceil) if regime else pd.DataFrame()
    if regime and len(t) < 2:  # e.g. a snapshot measured before S was the paper's: its S > 1 rows are not read
        rows.append(row("F.4", "grows", "fusion speedup in the memory regime from the smallest to the largest S, growth",
                        "f4_speedup_s_high", None, "this data has no memory-regime points at two values of the "
                        "paper's state factor S (rows measured when S meant S CartPoles are not read as today's S)",
                        paper_value=PAPER["f4_speedup_s_high"].value / PAPER["f4_speedup_s_low"].value))
    if len(t) >= 2:
        g = trend(t.set_index("state_factor")["speedup"])
        lo, hi = t.iloc[0], t.iloc[-1]
        paper_growth = PAPER["f4_speedup_s_high"].value / PAPER["f4_speedup_s_low"].value
        direction = trend_direction(g)
        in_cache = hi["cache_multiple"] < 1
        if in_cache:  # no memory-bound point: the rule has nothing to judge
            reason = (f"at S = {int(hi['state_factor'])} the unfused working set is {fmt_bytes(hi['working_set'])}, "
                      f"{hi['cache_multiple']:.3g}× the {fmt_bytes(regime['llc_bytes'])} cache: this run never leaves "
                      "the cache, so it cannot show the memory-bound regime F.4 is about")
        else:
            explain = _f4_gpu_reason(t, regime) if on_gpu(c, fusion_impl(P)) else _f4_trend_reason(t, ceil, regime)
            reason = ((f"the speedup grows {fmt_x(g)} where the paper's grows {fmt_x(paper_growth)}; "
                       if direction == "grows" else "") + explain)
        rows.append(row(
            "F.4", "grows",
            f"fusion speedup (K = {max(regime['steps'])} over K = 1, C = 1) from S = {int(lo['state_factor'])} to "
            f"S = {int(hi['state_factor'])} at N = {pow2_label(regime['num_envs'])} (the memory regime: "
            f"{hi['cache_multiple']:.3g}× the cache at S = {int(hi['state_factor'])}), growth",
            "f4_speedup_s_high", None if in_cache else g, reason, paper_value=paper_growth,
            **_growth_range(c, fusion_impl(P), regime["num_envs"], max(regime["steps"]), int(lo["state_factor"]),
                            int(hi["state_factor"])),
            ours_text=f"{fmt_x(lo['speedup'])} → {fmt_x(hi['speedup'])} ({direction}, ×{g:.3g})",
            numbers={"num_envs": int(regime["num_envs"]), "steps": int(max(regime["steps"])),
                     "s_low": int(lo["state_factor"]), "s_high": int(hi["state_factor"]),
                     "speedup_low": float(lo["speedup"]), "speedup_high": float(hi["speedup"]), "growth": g,
                     "direction": direction, "cache_multiple": float(hi["cache_multiple"]),
                     "unfused_of_memory": float(hi["unfused_of_memory"]),
                     "fused_of_ceiling": float(hi["fused_of_ceiling"]), "speedup_bound": float(hi["speedup_bound"])},
            paper_text=f"{pow2_label(PAPER['f4_speedup_s_low'].value)} → {pow2_label(PAPER['f4_speedup_s_high'].value)} "
                       f"(grows, ×{paper_growth:g}; K = 10³)"))
    sp = fusion_speedups(c[c["num_envs"].isin(P.num_envs)])
    if len(sp):
        kmax = int(sp["steps"].max())
        at = sp[(sp["steps"] == kmax) & (sp["compute_factor"] == 1)]
        grid = fusion_grid(c, P)
        at_grid = grid[(grid["K"] == kmax) & (grid["C"] == 1)]
        worst = at_grid["max/min across N"].iloc[0] if len(at_grid) and at_grid["max/min across N"].notna().all() else None
        if worst is not None:
            s_worst = int(at_grid["S of max/min"].iloc[0])
            d = at[at["state_factor"] == s_worst].set_index("num_envs")["speedup"].sort_index()
            base = c[(c["steps"] == 1) & (c["state_factor"] == s_worst) & (c["compute_factor"] == 1)
                     & c["num_envs"].isin(P.num_envs)].sort_values("num_envs")
            t = seconds_per_call(base).to_numpy()
            n = base["num_envs"].to_numpy()
            reason = (f"a K = 1 call takes {fmt_time(t[0])} at N = {pow2_label(n[0])} and {fmt_time(t[-1])} at "
                      f"N = {pow2_label(n[-1])}: {n[-1] / n[0]:.3g}× the environments for {t[-1] / t[0]:.3g}× the "
                      "time, " + ("so most of a small call is its fixed cost, which fusing K steps pays once instead "
                                  "of K times" if t[-1] / t[0] < 0.5 * n[-1] / n[0] else
                                  "so a call's time is mostly proportional to N and its fixed cost does not explain it")
                      + f"; the speedup at S = {s_worst} goes from {fmt_x(d.iloc[0])} at N = {pow2_label(d.index[0])} "
                      f"to {fmt_x(d.iloc[-1])} at N = {pow2_label(d.index[-1])}") if len(base) >= 2 else ""
            rows.append(row("F.4", "flat", f"spread of the K = {kmax}, C = 1 speedup across N (max/min, worst S)",
                            "f4_flat_in_n", worst, reason, paper_text="≈ 1× (flat in N)",
                            **_spread_range(c[c["num_envs"].isin(P.num_envs)], fusion_impl(P), kmax, s_worst)))
        cmax = int(sp["compute_factor"].max())
        if cmax > 1:
            smin = sp["state_factor"].min()
            d = sp[(sp["steps"] == kmax) & (sp["compute_factor"] == cmax) & (sp["state_factor"] == smin)]
            v = k_speedup_spread(c[c["num_envs"].isin(P.num_envs)], fusion_impl(P), 1, kmax, state_factor=smin,
                                 compute_factor=cmax)
            reason = ""
            if len(d):
                n = int(d.loc[d["speedup"].idxmax(), "num_envs"])
                c_rows = c[(c["state_factor"] == smin) & (c["compute_factor"] == cmax)]
                fixed, step = k_overhead(c_rows, fusion_impl(P), kmax, n)
                reason = (f"at C = {cmax} (the step's arithmetic {cmax}× larger) and N = {pow2_label(n)}, a K = 1 call "
                          f"takes {fmt_time(fixed + step)} and a step of a K = {kmax} call {fmt_time(step)}: fusion "
                          f"still saves {fmt_time(fixed)} per step there"
                          + (f"; over the N measured the speedup ranges {fmt_x(d['speedup'].min())}–"
                             f"{fmt_x(d['speedup'].max())}" if len(d) > 1 else
                             " (the only N measured at this C: the work cap drops the others)"))
            rows.append(row("F.4", "vanishes", f"fusion speedup at K = {kmax}, largest C = {cmax}, S = {smin}, "
                            "median over N", "f4_speedup_c_max", v, reason))
    return rows
