"""The record every finding is (``Finding``), how one is made and judged (``row``), and how the
records are tabulated and printed (``findings_frame``, ``verdict_counts``, ``verdict_text``,
``findings_md``); with the reasons more than one finding gives in this machine's numbers: seconds
per environment-step of an implementation, and a K = 1 call split into its fixed cost and its step
(``k_overhead``). The findings themselves are claims_f1 ... claims_f4; studylib/book/claims/findings.py
gathers them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .analysis import (LARGEST, MEDIAN, NOT_MEASURED, NOT_REPRODUCED, ONE_N, ONE_VALUE, PARTLY, REPRODUCED, RULES,
                       SIZE_FACTOR, VERDICTS, Judgement, at_knobs, judge, k_speedup, rates_by_n,
                       seconds_per_call)
from ..format import fmt_time, fmt_x, pow2_label
from .paper import PAPER

COLUMNS = ["finding", "key", "rule", "quantity", "paper", "paper source", "ours", "summary", "over N", "verdict",
           "borderline", "reason", "paper_value", "ours_value", "ours_low", "ours_high"]


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


def headline_ns(values: pd.Series, summary: str = MEDIAN) -> list:
    """The N whose ratios make a headline over N: the largest's N, or the middle N of a median (two
    when the count is even: the median is then their mean)."""
    v = values.dropna().sort_values()
    if not len(v):
        return []
    if summary == LARGEST:
        return [v.index[-1]]
    mid = (len(v) - 1) / 2
    return sorted({v.index[int(np.floor(mid))], v.index[int(np.ceil(mid))]})


def ratio_reason(num: pd.DataFrame, den: pd.DataFrame, ratios: pd.DataFrame, a: str, b: str,
                 summary: str = MEDIAN) -> str:
    """The headline's own numbers: at the N that make it (``headline_ns``), one environment-step's
    time in ``a`` (``num``'s rate) and in ``b`` (``den``'s), from the very rates whose ratio is the
    headline, so a reader gets the headline back from them (the mean of the two where a median
    falls between two N)."""
    ns = headline_ns(ratios["value"], summary)
    parts = [f"at N = {pow2_label(n)}: {fmt_time(1 / num['value'][n])} per environment-step in {a}, "
             f"{fmt_time(1 / den['value'][n])} in {b} ({fmt_x(ratios['value'][n])})" for n in ns]
    return "; ".join(parts) + ("; the median is their mean" if len(ns) == 2 else "")


def reason_then(head: str, tail: str, sep: str = "; ") -> str:
    """``head`` (a ratio's reason) followed by ``tail`` (where or why), or nothing where ``head`` is
    empty: a ratio with no N both rows share has no numbers to explain, and ``row`` then says so."""
    return f"{head}{sep}{tail}" if head else ""


def k_gain_reason(df: pd.DataFrame, impl: str, kmax: int, gain: pd.DataFrame, max_n=None, state_factor=1,
                  compute_factor=1) -> str:
    """A K = 1 → ``kmax`` gain's reason: the per-step times at K = ``kmax`` and K = 1 at the N that
    make its headline (``ratio_reason``, from the rates the gain was computed from), then why
    (``_k_reason``: the fixed cost per call against the step)."""
    d = at_knobs(df[df["impl"] == impl], state_factor, compute_factor)
    if max_n is not None:
        d = d[d["num_envs"] <= max_n]
    hi, lo = rates_by_n(d[d["steps"] == kmax]), rates_by_n(d[d["steps"] == 1])
    if not len(gain):
        return ""
    head = ratio_reason(hi, lo, gain, f"{impl} at K = {kmax}", f"{impl} at K = 1")
    why = _k_reason(df, impl, kmax, max_n)
    return head + (f"; {why}" if why else "")


def k_overhead(df: pd.DataFrame, impl: str, k_hi: int, n: int) -> tuple[float, float]:
    """(fixed cost per call, compute per step) in seconds at N = n: a call of K = 1 minus one step
    of a K = k_hi call, and that step. Their sum over the step bounds what K can gain."""
    d = df[(df["impl"] == impl) & (df["num_envs"] == n)]
    t1 = seconds_per_call(d[d["steps"] == 1]).median()
    tk = (seconds_per_call(d[d["steps"] == k_hi]) / k_hi).median()
    return t1 - tk, tk


def on_gpu(df: pd.DataFrame, impl: str) -> bool:
    """Whether ``impl``'s rows were measured on a GPU (their resolved ``device``): a reason then
    speaks of the GPU, not of this machine's CPU cores."""
    devices = df.loc[df["impl"] == impl, "device"] if "device" in df else pd.Series(dtype=str)
    return bool(len(devices)) and devices.astype(str).str.startswith("cuda").all()


def _k_reason(df, impl, kmax, max_n=None) -> str:
    r = k_speedup(df, impl, 1, kmax, max_n=max_n)
    if not len(r):
        return ""
    parts = []
    for n in sorted({r.index.min(), r.index.max()}):
        fixed, step = k_overhead(df, impl, kmax, n)
        fixed_text = f"{fmt_time(fixed)} fixed per call" if fixed > 0 else "no fixed cost measurable"
        parts.append(f"N = {pow2_label(n)}: {fixed_text}, {fmt_time(step)} per step")
    if on_gpu(df, impl):
        return (f"{impl} amortizes a call's fixed cost (Python, dispatch) over K; on this GPU ({'; '.join(parts)}) "
                f"the per-step cost that remains is the step's own GPU work and kernel launches, which a larger K "
                f"does not amortize; the paper's K = 1 calls were {PAPER['f2_cpu_share_k1'].value:g} % CPU-bound "
                "(Fig 5)")
    return (f"{impl} amortizes only a call's fixed cost (Python, dispatch) over K, and here a step's own CPU "
            f"compute is large against it ({'; '.join(parts)}); with a GPU computing the step, the paper's K = 1 "
            f"calls were mostly that fixed cost ({PAPER['f2_cpu_share_k1'].value:g} % CPU-bound, Fig 5)")


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
