"""F.1–F.4, row by row: each comparison the paper makes, computed once here as a typed record
(``Finding``: our value with its spread over N, the paper's value, the rule, the verdict and the
reason in this machine's numbers). The chapters render these records (``findings_md``) and never
recompute a finding's number; the introduction's table (``findings``) gathers them all.

The paper's findings, as it states them (Gleeson et al., 2022):

F.1 (§3.3): "Both DL framework (PyTorch) and ML compiler (XLA) GPU vectorization approaches can
    provide up to a 1024× speedup in data collection over OpenAI gym." and "Using multiple CPU
    cores with C++ only accounts for at most a 4× speedup over the single-core OpenAI
    implementation."  Both are claims about the largest speedup: our summary is the largest over N.
F.2 (§3.3–3.4): "Increasing the number of consecutive data collection steps executed in a single
    Python→XLA API call from 10^0 → 10^3 results in a 53.76× speedup on average for most
    environment sizes (≤ 2^13), which is a 13.39× speedup over PyTorch." and "at small step sizes
    like 10^0, CPU-bound operations make up 87% of data collection time split across backend C++
    calls (30%) and Python time (57%)."  Ours: the median over our N ≤ 2^13 (the paper's mean
    lets one N carry it); the share from one profiled run at K = 1.
F.3 (§4.1): "To isolate the benefit from kernel fusion alone, we can consider the speedup for CUDA
    going from K = 10^0 → 10^3 steps; we see that kernel fusion accounts for a 11.31× speedup."
    The paper's definition includes what a K = 1 call costs besides the step (its launch, its API
    call), so ours does too: the fused implementation's K = 10^3 over K = 1, median over N; the
    reason splits a K = 1 call into its fixed cost and its step.
F.4 (§4.2): "The speedup from kernel fusion is independent of how many parallel simulators are
    used", "for the last row of plots (steps K = 10^3), the speedup varies from 2^4 to 2^10 as S
    increases" and "In the worst case where the simulation is entirely compute bound (C = 2^10)
    and not memory bandwidth bound (S = 2^0), fusion performs just as poorly as without fusion."

    rows = vectorization_rows(P, df)          # a chapter, from the frame it already has
    F = book.findings(preset="default")       # every chapter's rows (``book.chapters``), through the plans
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .. import costs
from ..implspec import spec
from .analysis import (LARGEST, MEDIAN, NOT_MEASURED, NOT_REPRODUCED, ONE_N, ONE_VALUE, PARTLY, REPRODUCED, RULES,
                       VERDICTS, SINGLE_RUN_SHARE_MARGIN, SIZE_FACTOR, Judgement, at_knobs, best_rates_by_n, fusion_speedups,
                       judge, k_speedup, k_speedup_spread, rates_by_n, ratio_by_n, seconds_per_call, spread, trend,
                       trend_direction)
from .format import fmt_bytes, fmt_time, fmt_x, pow2_label
from .paper import PAPER
from .plans import (complexity_data, fusion_data, fusion_impl, overheads_data, profile_data, roofline_data,
                    vectorization_data)
from .presets import ChapterParams, machine_facts

COLUMNS = ["finding", "key", "rule", "quantity", "paper", "paper source", "ours", "summary", "over N", "verdict",
           "borderline", "reason", "paper_value", "ours_value", "ours_low", "ours_high"]
SMALL_N = 2**13  # the paper's F.2 comparisons are over N <= 2^13


def _paper_text(pv) -> str:
    return {"x": fmt_x(pv.value), "%": f"{pv.value:g} %"}.get(pv.unit, pow2_label(pv.value))


def _value_text(v, unit) -> str:
    if v is None or not np.isfinite(v):
        return "n/a"
    return f"{v:.0f} %" if unit == "%" else fmt_x(v)


@dataclass(frozen=True)
class Finding:
    """One comparison of the paper's, judged on one machine's measurements."""

    finding: str  # "F.1" ... "F.4"
    key: str  # the paper value's key in ``PAPER``: the same comparison on every machine
    quantity: str  # what is compared, in this build's parameters
    rule: str  # a key of ``analysis.RULES``
    paper_value: float  # what the rule compares with (the paper's number, or its growth for "grows")
    paper_text: str  # the paper's number as the table shows it
    paper_source: str  # section / figure of the paper
    judgement: Judgement  # verdict, summary value, min–max over N, borderline
    reason: str  # why, in this machine's numbers ("" when reproduced)
    ours_text: str  # our number as the table shows it
    unit: str = "x"
    numbers: dict = field(default_factory=dict, compare=False)  # the numbers its page states beside it, computed here

    verdict = property(lambda self: self.judgement.verdict)
    value = property(lambda self: self.judgement.value)
    borderline = property(lambda self: self.judgement.borderline)

    @property
    def over_n(self) -> str:
        """The min–max over N the summary is over ("" for one value)."""
        j = self.judgement
        if j.summary == ONE_VALUE or j.num_n < 2:
            return ""
        return f"{_value_text(j.low, self.unit)}–{_value_text(j.high, self.unit)} over {j.num_n} N"

    def as_row(self) -> dict:
        """The record as a row of the findings table (``COLUMNS``)."""
        j = self.judgement
        return {"finding": self.finding, "key": self.key, "rule": f"{self.rule}: {RULES[self.rule].description}",
                "quantity": self.quantity, "paper": self.paper_text, "paper source": self.paper_source,
                "ours": self.ours_text, "summary": j.summary, "over N": self.over_n, "verdict": j.verdict,
                "borderline": j.borderline, "reason": self.reason, "paper_value": float(self.paper_value),
                "ours_value": j.value, "ours_low": j.low, "ours_high": j.high}

    def __getitem__(self, column):  # a record reads like its table row
        return self.as_row()[column]


def _failing_text(j: Judgement, per_n: pd.Series, unit: str) -> str:
    at = ", ".join(f"N = {pow2_label(n)} ({_value_text(per_n[n], unit)})" for n in j.failing_n)
    return f"the median, {_value_text(j.value, unit)}, is within {SIZE_FACTOR:g}× of the paper's, but not {at}"


def row(finding, rule, quantity, paper_key, ours, reason, *, ours_text=None, paper_value=None, paper_text=None,
        summary=MEDIAN, margin=0.0, low=None, high=None, numbers=None) -> Finding:
    """One finding. ``ours``: a number (one value), a Series indexed by N, or a frame indexed by N
    with ``value``, ``low`` and ``high`` (the repeats' ends: ``analysis.ratio_by_n``). ``reason`` is
    kept for every verdict but "reproduced" (a row "not measured" without one says that this build
    has no data for it). ``low``/``high``: a single value's range over its repeats."""
    pv = PAPER[paper_key]
    value = pv.value if paper_value is None else paper_value
    if isinstance(ours, pd.DataFrame):
        ours, low, high = ours["value"], ours["low"], ours["high"]
    if not isinstance(ours, pd.Series):
        summary = ONE_VALUE
    j = judge(rule, value, ours, summary=summary, low=low, high=high, margin=margin)
    unit = "%" if pv.unit == "%" else "x"
    if ours_text is None:
        ours_text = _value_text(j.value, unit)
    if j.summary == ONE_N:  # a summary over N of one N is one point: the quantity must not say "median over N"
        n = pow2_label(_as_n(ours).index[0])
        quantity = re.sub(r",? (median|largest) over N( ≤ [^,;)]+)?", f" at N = {n} only (one point: no spread over N)",
                          quantity)
    if j.failing_n:
        reason = _failing_text(j, ours, unit) + (f"; {reason}" if reason else "")
    elif j.verdict in (PARTLY, NOT_REPRODUCED):  # the rule's band that decided, then why in this machine's numbers
        reason = RULES[rule].band(j.value, value).why + (f": {reason}" if reason else "")
    if j.verdict == NOT_MEASURED and not reason:
        reason = "this build has no measurement for it"
    numbers = dict(numbers or {})
    if isinstance(ours, pd.Series):  # the value at each N, as the pages chart it; the N of the largest
        per_n = ours.dropna()
        numbers.setdefault("per_n", {int(n): float(v) for n, v in per_n.items()})
        if len(per_n) and summary == LARGEST:
            numbers.setdefault("at_n", int(per_n.idxmax()))
    return Finding(finding, paper_key, quantity, rule, float(value), paper_text or _paper_text(pv), pv.where, j,
                   "" if j.verdict == REPRODUCED else reason, ours_text, unit, numbers)


def _as_n(ours) -> pd.Series:
    return ours.dropna() if isinstance(ours, pd.Series) else pd.Series(dtype=float)


def _per_env_step(df, impl, n=None, steps=None) -> float:
    """Seconds per environment-step (1 / samples per s) of ``impl``'s best row, at N = ``n`` if given."""
    d = df[df["impl"] == impl]
    d = d if n is None else d[d["num_envs"] == n]
    d = d if steps is None else d[d["steps"] == steps]
    return 1 / d["samples_per_s"].max() if len(d) else np.nan


# ---- F.1 ------------------------------------------------------------------------------------------

def vectorization_rows(P: ChapterParams, v: pd.DataFrame) -> list[Finding]:
    """F.1: the best vectorized implementation, and cpp, over gym at each N (each at its best K);
    the paper's "up to" and "at most" are the largest over N, so ours is too."""
    best = v.groupby(["impl", "num_envs"])["samples_per_s"].max().unstack(0)
    if "gym" not in best:
        return []
    facts, rows = machine_facts(P), []
    gym = best_rates_by_n(v[v["impl"] == "gym"])
    vec = [i for i in ("torch", "jax", "cuda") if i in best]
    if vec:
        ratios = ratio_by_n(best_rates_by_n(v[v["impl"].isin(vec)]), gym)
        sp = ratios["value"]
        n = sp.idxmax() if len(sp) else None
        top = best.loc[n, vec].idxmax() if n is not None else None
        steps = (f"{fmt_time(_per_env_step(v, 'gym', n))} per environment-step in gym against "
                 f"{fmt_time(_per_env_step(v, top, n))} in {top} at N = {pow2_label(n)}, inference included")
        paper = fmt_x(PAPER["f1_gpu_over_gym"].value)
        if n is None:
            reason = ""
        elif facts.get("gpu"):
            reason = (f"{steps}; gym is measured up to N = {pow2_label(best['gym'].dropna().index.max())} (its work "
                      f"cap), the paper's {paper} is at N up to {pow2_label(PAPER['plateau_torch'].value)}")
        else:
            reason = (f"{top} runs on the same {facts.get('cores', '?')} CPU cores as gym's one: vectorizing removes "
                      f"gym's per-environment Python calls ({steps}) but adds no parallel hardware; the paper's "
                      f"{paper} is a GPU's")
        rows.append(row("F.1", "speedup", "best vectorized (torch/jax) over gym, largest over N",
                        "f1_gpu_over_gym", ratios, reason, summary=LARGEST))
    if "cpp" in best:
        ratios = ratio_by_n(best_rates_by_n(v[v["impl"] == "cpp"]), gym)
        sp = ratios["value"]
        n = sp.idxmax() if len(sp) else None
        ours = sp.max() if len(sp) else None
        if ours is not None and ours <= 1.05:
            reason = f"cpp is not faster than gym at any N measured (at best {fmt_x(ours)})"
        else:
            reason = (f"our cpp steps all N environments in one native call per step, in SIMD lanes on every core "
                      f"(gym: one Python call per environment): {fmt_time(_per_env_step(v, 'cpp', n))} per "
                      f"environment-step against gym's {fmt_time(_per_env_step(v, 'gym', n))} at N = {pow2_label(n)}, "
                      "the MLP in PyTorch for both; the paper's C++ used threads over shared memory and is not "
                      "described as vectorized") if n is not None else ""
        rows.append(row("F.1", "at most", "cpp (multi-core C++) over gym, largest over N",
                        "f1_cpp_over_gym", ratios, reason, summary=LARGEST))
    return rows


# ---- F.2 ------------------------------------------------------------------------------------------

def k_overhead(df: pd.DataFrame, impl: str, k_hi: int, n: int) -> tuple[float, float]:
    """(fixed cost per call, compute per step) in seconds at N = n: a call of K = 1 minus one step
    of a K = k_hi call, and that step. Their sum over the step bounds what K can gain."""
    d = df[(df["impl"] == impl) & (df["num_envs"] == n)]
    t1 = seconds_per_call(d[d["steps"] == 1]).median()
    tk = (seconds_per_call(d[d["steps"] == k_hi]) / k_hi).median()
    return t1 - tk, tk


def _k_reason(df, impl, kmax, max_n=None) -> str:
    r = k_speedup(df, impl, 1, kmax, max_n=max_n)
    if not len(r):
        return ""
    parts = []
    for n in sorted({r.index.min(), r.index.max()}):
        fixed, step = k_overhead(df, impl, kmax, n)
        fixed_text = f"{fmt_time(fixed)} fixed per call" if fixed > 0 else "no fixed cost measurable"
        parts.append(f"N = {pow2_label(n)}: {fixed_text}, {fmt_time(step)} per step")
    return (f"{impl} amortizes only a call's fixed cost (Python, dispatch) over K, and here a step's own CPU "
            f"compute is large against it ({'; '.join(parts)}); with a GPU computing the step, the paper's K = 1 "
            f"calls were mostly that fixed cost ({PAPER['f2_cpu_share_k1'].value:g} % CPU-bound, Fig 5)")


def overheads_rows(P: ChapterParams, o: pd.DataFrame, prof: pd.DataFrame) -> list[Finding]:
    """F.2: jax at the largest K over torch at its best K, and jax's gain from K = 1 to the largest
    K, each the median over N ≤ 2^13; the CPU-bound share of jax's time at K = 1 (one profiled run)."""
    rows, kmax = [], max(P.steps)
    if {"jax", "torch"} <= set(o["impl"]) and kmax > 1:
        small = o[o["num_envs"] <= SMALL_N]
        ratio = ratio_by_n(rates_by_n(small[(small["impl"] == "jax") & (small["steps"] == kmax)]),
                           best_rates_by_n(small[small["impl"] == "torch"]))
        tp = prof[prof["impl"] == "torch"] if len(prof) else prof
        calls = f", {tp['backend_calls_per_step'].median():.0f} Python→backend calls per torch step" if len(tp) else ""
        reason = (f"both compute on the same CPU cores, so what jax saves is torch's per-operation dispatch{calls}: "
                  f"{fmt_time(_per_env_step(small, 'torch'))} per environment-step in torch at best, "
                  f"{fmt_time(_per_env_step(small, 'jax', steps=kmax))} in jax")
        torch_k = small[small["impl"] == "torch"]["steps"].max()
        torch_gain = k_speedup(o, "torch", 1, torch_k, max_n=SMALL_N) if torch_k > 1 else pd.Series(dtype=float)
        rows.append(row("F.2", "speedup", f"jax (K = {kmax}) over torch (its best K), median over N ≤ 2^13",
                        "f2_xla_over_torch", ratio, reason,
                        numbers={"torch_k_gain": float(torch_gain.median()) if len(torch_gain) else None,
                                 "torch_kmax": int(torch_k)}))
        rows.append(row("F.2", "speedup", f"jax K = 1 → {kmax} (with inference), median over N ≤ 2^13",
                        "f2_xla_k1_to_k1000", k_speedup_spread(o, "jax", 1, kmax, max_n=SMALL_N),
                        _k_reason(o, "jax", kmax, SMALL_N)))
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


# ---- F.3 ------------------------------------------------------------------------------------------

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
        splits = []
        for n in sorted({r.index.min(), r.index.max()}):
            saved, step = k_overhead(f, fi, kmax, n)
            splits.append(f"at N = {pow2_label(n)} a K = 1 call takes {fmt_time(saved + step)} and a step of a "
                          f"K = {kmax} call {fmt_time(step)} ({fmt_x(r[n])})")
        reason = ("as in the paper, the gain is what a K = 1 call costs besides its step, which a fused call pays "
                  "once per K steps: "
                  + ("the launch" if spec(fi).gpu_only else "the native call and its OpenMP parallel region")
                  + ", and the state's trip to memory between steps; " + "; ".join(splits)
                  + (": the gain is largest at the smallest N, where a call's own work is smallest"
                     if r.idxmax() == r.index.min() else ""))
    torch_k = f[f["impl"] == "torch"]["steps"].max() if (f["impl"] == "torch").any() else 1
    torch_gain = k_speedup(f, "torch", 1, torch_k) if torch_k > 1 else pd.Series(dtype=float)
    rows.append(row("F.3", "speedup", f"fusion alone: {fi} K = 1 → {kmax}, median over N", "f3_fusion",
                    fused, reason, numbers={"torch_k_gain": float(torch_gain.median()) if len(torch_gain) else None}))
    rows.append(row("F.3", "speedup", f"jax K = 1 → {kmax} (simulation only), median over N", "f3_xla_k1_to_k1000",
                    k_speedup_spread(f, "jax", 1, kmax), _k_reason(f, "jax", kmax)))
    at_kmax = f[f["steps"] == kmax]
    ratios = ratio_by_n(rates_by_n(at_knobs(at_kmax[at_kmax["impl"] == fi])),
                        rates_by_n(at_knobs(at_kmax[at_kmax["impl"] == "jax"])))
    over = ratios["value"]
    reason = (f"{fi} and jax run on the same hardware here; at K = {kmax} jax needs "
              f"{fmt_time(_per_env_step(f, 'jax', steps=kmax))} per environment-step and {fi} "
              f"{fmt_time(_per_env_step(f, fi, steps=kmax))}; the paper's {fmt_x(PAPER['f3_fused_over_xla'].value)} "
              "sets a fused CUDA kernel against XLA's per-step GPU kernels") if len(over) else ""
    rows.append(row("F.3", "speedup", f"{fi} over jax at K = {kmax}, median over N", "f3_fused_over_xla",
                    ratios, reason))
    return rows


# ---- F.4 ------------------------------------------------------------------------------------------

def memory_regime_table(c: pd.DataFrame, ceil: dict) -> pd.DataFrame:
    """Per S, at the memory regime's N and C = 1: unfused (K = 1) and fused (largest K) throughput in
    environment-steps/s, the ceilings of ``harness.roofline`` in the same unit (an unfused step
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
    roofline's (``harness.roofline``): bytes moved per unfused step, and the speedup's bound."""
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
            reason = ((f"the speedup grows {fmt_x(g)} where the paper's grows {fmt_x(paper_growth)}; "
                       if direction == "grows" else "") + _f4_trend_reason(t, ceil, regime))
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


# ---- each chapter's findings, from its plans (``book.chapters`` lists them) ------------------------

def vectorization_findings(P: ChapterParams) -> list[Finding]:
    return vectorization_rows(P, vectorization_data(P))


def overheads_findings(P: ChapterParams) -> list[Finding]:
    return overheads_rows(P, overheads_data(P), profile_data(P))


def fusion_findings(P: ChapterParams) -> list[Finding]:
    return fusion_rows(P, fusion_data(P))


def complexity_findings(P: ChapterParams) -> list[Finding]:
    return complexity_rows(P, complexity_data(P), roofline_data(P))


def findings_frame(records) -> pd.DataFrame:
    """Records as the findings table (``COLUMNS``)."""
    return pd.DataFrame([r.as_row() for r in records], columns=COLUMNS)


def verdict_counts(F: pd.DataFrame) -> dict:
    """How many rows of the findings table got each verdict (``VERDICTS``' order, those that occur)
    and, under "borderline", how many are borderline."""
    counts = F["verdict"].value_counts() if len(F) else pd.Series(dtype=int)
    out = {v: int(counts[v]) for v in VERDICTS if counts.get(v, 0)}
    out["borderline"] = int((F["borderline"] != "").sum()) if len(F) else 0
    return out


def verdict_text(r) -> str:
    """The verdict as the tables print it: borderline verdicts marked."""
    return f"{r['verdict']} (borderline)" if r["borderline"] else r["verdict"]


def findings_md(rows) -> str:
    """The rows as the Markdown a chapter's conclusion ends with: quantity, ours (with its min–max
    over N) and the paper's, the verdict, what it depends on, and its reason."""
    lines = []
    for r in (rows.to_dict("records") if isinstance(rows, pd.DataFrame) else [x.as_row() for x in rows]):
        reason = f" — {r['reason']}" if r["reason"] else ""
        over = f" ({r['over N']})" if r["over N"] else ""
        border = f" Borderline: {r['borderline']}." if r["borderline"] else ""
        lines.append(f"* **{r['finding']}**, {r['quantity']}: **{r['ours']}** here{over}, {r['paper']} in the paper "
                     f"({r['paper source']}): *{r['verdict']}*{reason}.{border}")
    return "\n".join(lines)
