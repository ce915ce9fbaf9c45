"""The numbers the chapters compute from the measurements (plateaus, speedups, trends) and the
rules that compare them with the paper's (``RULES``, ``judge``).

A verdict is one of ``VERDICTS``:

  reproduced           the paper's comparison holds here at about the paper's size: at the summary
                       value (the median over N) and at every N measured
  partly reproduced    the paper's direction holds and the summary is within ``PARTLY_FACTOR`` of the
                       paper's value, but not close enough (or not at every N) to be reproduced
  not reproduced here  anything else; the row says why, in this machine's numbers
  not measured         this build has no data for it

A rule is an ordered list of bands (``Band``): a value gets the verdict of the first band whose
limit it does not exceed. The verdict and the rule's description (``Rule.description``) are both
read from those bands, so the text the book prints is the code that judges.

A quantity measured at several N is summarized by its **median over N** (``MEDIAN``), shown with
its min–max; a claim the paper states as "up to" or "at most" is summarized by the **largest
value over N** (``LARGEST``), as the paper's own number is. ``judge`` also says when a verdict is
*borderline*: when leaving out any one N changes it, when moving every ratio to the low or the
high end of its repeats changes it (two builds of one commit can then disagree), or when a
quantity meant over N was measured at one N only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_MEASURED = ("reproduced", "partly reproduced", "not reproduced here",
                                                    "not measured")
VERDICTS = (REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_MEASURED)

NO_SPEEDUP = 1.05  # a ratio at most this is "no speedup" (timing noise is a few percent)
SIZE_FACTOR = 2.0  # "about the paper's size": within this factor
PARTLY_FACTOR = 10.0  # "partly": the paper's direction, and within this factor of the paper's value
TREND_FACTOR = 1.5  # a trend: the last value at least this multiple of the first (or at most its inverse)
SHARE_POINTS = 10.0  # a share within this many percentage points of the paper's
MAJORITY = 50.0  # a share above this is a majority (the paper's direction for "mostly CPU-bound")
# A share read from one profiled run has no repeats to measure its spread; two cold builds of one
# commit on one machine measured jax's CPU-bound share at 44 % and 60 %: a share this close to a
# limit is borderline.
SINGLE_RUN_SHARE_MARGIN = 16.0

BORDERLINE = ("a verdict that leaving out any one N changes, that moving every ratio to the slow or the fast end "
              "of its repeats changes, that rests on one N of a quantity meant over N, or (a share from one "
              f"profiled run, which has no repeats) that moving the share by ±{SINGLE_RUN_SHARE_MARGIN:g} points "
              "changes (a margin set from two earlier cold builds of one commit on one machine, whose profiles "
              f"put jax's CPU-bound share {SINGLE_RUN_SHARE_MARGIN:g} points apart)")

MEDIAN, LARGEST, ONE_VALUE = "median over N", "largest over N", "one value"
ONE_N = "one N only"  # a median or largest over N that found one N: one point, no spread to show
SUMMARIES = (MEDIAN, LARGEST, ONE_VALUE, ONE_N)


@dataclass(frozen=True)
class Band:
    """Values up to ``scale · paper + offset`` (``scale = 0``: an absolute limit) get ``verdict``;
    ``why`` names the band in the description."""

    scale: float
    offset: float
    verdict: str
    why: str
    inclusive: bool = True  # the limit itself belongs to this band

    def limit(self, paper: float) -> float:
        return self.scale * paper + self.offset

    def contains(self, value: float, paper: float) -> bool:
        lim = self.limit(paper)
        return value <= lim if self.inclusive else value < lim

    def limit_text(self, unit: str) -> str:
        if math.isinf(self.offset):
            return ""
        if self.scale == 0:
            return f"{self.offset:g}{unit}"
        if self.offset == 0:
            return "the paper's" if self.scale == 1 else f"{self.scale:g} × the paper's"
        points = " points" if unit.strip() == "%" else unit  # a share's offset is in percentage points
        return f"the paper's {'+' if self.offset > 0 else '−'} {abs(self.offset):g}{points}"


@dataclass(frozen=True)
class Rule:
    """A named comparison of one measured number with the paper's: ``bands`` in order."""

    name: str
    bands: tuple[Band, ...]
    unit: str = "×"  # how the description writes an absolute limit
    measures: str = "ours"  # what the value is, for the description

    def __post_init__(self):
        assert math.isinf(self.bands[-1].offset), f"rule {self.name}: the last band must be unbounded"

    def band(self, value: float, paper: float) -> Band:
        """The first band that contains ``value``."""
        return next(b for b in self.bands if b.contains(value, paper))

    def level(self, value: float, paper: float) -> str:
        """The verdict of one value (no N, no repeats): its band's."""
        return NOT_MEASURED if _missing(value) else self.band(value, paper).verdict

    @property
    def description(self) -> str:
        """The bands in words, in order: generated from the same bands ``level`` reads."""
        parts, prev = [], None
        for b in self.bands:
            hi = b.limit_text(self.unit)
            op = "≤" if b.inclusive else "<"
            if prev is None:
                span = f"{self.measures} {op} {hi}"
            elif hi:
                span = f"then {op} {hi}"
            else:
                span = "above"
            parts.append(f"{span} → {b.verdict} ({b.why})")
            prev = b
        return "; ".join(parts)

    @property
    def compares(self) -> str:  # the former name of ``description``
        return self.description

    @property
    def has_partly(self) -> bool:
        return any(b.verdict == PARTLY for b in self.bands)


INF = float("inf")


def _around_the_paper(short, within: str, above) -> tuple[Band, ...]:
    """The ladder a value in the paper's direction climbs, relative to the paper's value: more
    than PARTLY_FACTOR× short (not reproduced), SIZE_FACTOR–PARTLY_FACTOR× short (partly), within
    SIZE_FACTOR× (reproduced), SIZE_FACTOR–PARTLY_FACTOR× above (partly), further above (not).
    ``short`` and ``above`` word a band from its range ("more than 10×", "2–10×")."""
    far, near = f"more than {PARTLY_FACTOR:g}×", f"{SIZE_FACTOR:g}–{PARTLY_FACTOR:g}×"
    return (Band(1 / PARTLY_FACTOR, 0, NOT_REPRODUCED, short(far), inclusive=False),
            Band(1 / SIZE_FACTOR, 0, PARTLY, short(near), inclusive=False),
            Band(SIZE_FACTOR, 0, REPRODUCED, within),
            Band(PARTLY_FACTOR, 0, PARTLY, above(near)),
            Band(0, INF, NOT_REPRODUCED, above(far)))


RULES = {
    "speedup": Rule("speedup", (
        Band(0, NO_SPEEDUP, NOT_REPRODUCED, "no speedup"),
        *_around_the_paper(lambda x: f"faster, but {x} short of the paper's", f"within {SIZE_FACTOR:g}× of the paper's",
                           lambda x: f"{x} above the paper's"))),
    "at most": Rule("at most", (
        Band(0, NO_SPEEDUP, NOT_REPRODUCED, "no speedup"),
        Band(NO_SPEEDUP, 0, REPRODUCED, f"a speedup within the paper's bound, {NO_SPEEDUP:g}× for timing noise"),
        Band(0, INF, NOT_REPRODUCED, "above the paper's bound"))),
    "majority share": Rule("majority share", (
        Band(0, MAJORITY, NOT_REPRODUCED, "not a majority"),
        Band(1, -SHARE_POINTS, PARTLY, "a majority, further from the paper's", inclusive=False),
        Band(1, SHARE_POINTS, REPRODUCED, f"within {SHARE_POINTS:g} points of the paper's"),
        Band(0, INF, PARTLY, "a majority, further from the paper's")), unit=" %"),
    "grows": Rule("grows", (
        Band(0, TREND_FACTOR, NOT_REPRODUCED, "flat or falls"),
        *_around_the_paper(lambda x: f"grows, but {x} less than the paper's",
                           f"grows within {SIZE_FACTOR:g}× of the paper's growth", lambda x: f"grows {x} more than the paper's")),
        measures="growth (last/first)"),
    "flat": Rule("flat", (
        Band(0, SIZE_FACTOR, REPRODUCED, f"flat: the same within {SIZE_FACTOR:g}×"),
        Band(0, INF, NOT_REPRODUCED, "varies with N")), measures="max/min over N"),
    # the chain's F.4: the fusion speedup where the flops per byte are high over where they are low
    "falls": Rule("falls", (
        Band(0, 1 / TREND_FACTOR, REPRODUCED, "falls as the flops per byte grow"),
        Band(0, INF, NOT_REPRODUCED, "does not fall as the flops per byte grow")),
        measures="speedup at high flops per byte over low"),
    "vanishes": Rule("vanishes", (
        Band(0, SIZE_FACTOR, REPRODUCED, "little or no gain"),
        Band(0, INF, NOT_REPRODUCED, "a clear gain remains"))),
}


def _missing(v) -> bool:
    return v is None or not np.isfinite(v)


def verdict(rule: str, ours, paper=None) -> str:
    """The verdict of rule ``rule`` (a key of ``RULES``) on one number and the paper's (no N, no
    repeats; ``judge`` judges a quantity measured at several N). For "grows", ``ours`` and ``paper``
    are growth ratios (last/first); for "flat", a max/min spread."""
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; valid: {', '.join(RULES)}")
    return RULES[rule].level(ours, paper)


@dataclass(frozen=True)
class Judgement:
    """A rule's verdict on one quantity, with what it stands on."""

    verdict: str
    value: float  # the summary: the median (or the largest) over N, or the one value
    low: float  # min over N (the value itself for one value)
    high: float  # max over N
    summary: str  # one of SUMMARIES
    num_n: int  # how many N the summary is over
    failing_n: tuple = ()  # N where the rule does not hold though it holds at the median
    borderline: str = ""  # why the verdict could change between two builds ("" when it could not)
    unstable_n: tuple = field(default=())  # the N whose removal alone changes the verdict


def summarize(values: pd.Series, summary: str) -> float:
    s = values.dropna()
    if s.empty:
        return np.nan
    return float(s.max()) if summary == LARGEST else float(s.median())


def _as_series(values) -> pd.Series:
    if isinstance(values, pd.Series):
        return values.dropna().sort_index()
    return pd.Series([] if _missing(values) else [float(values)], dtype=float)


def _verdict_over_n(rule: Rule, paper, s: pd.Series, summary: str) -> tuple[str, tuple]:
    if s.empty:
        return NOT_MEASURED, ()
    level = rule.level(summarize(s, summary), paper)
    if summary != MEDIAN or level != REPRODUCED:
        return level, ()
    failing = tuple(n for n, x in s.items() if rule.level(x, paper) != REPRODUCED)
    if failing:  # holds at the median, not at every N: at best partly
        level = PARTLY if rule.has_partly else NOT_REPRODUCED
    return level, failing


def judge(rule: str, paper, values, *, summary: str = MEDIAN, low=None, high=None, margin: float = 0.0) -> Judgement:
    """The verdict of ``rule`` on a quantity: ``values`` is a Series indexed by N (or one number,
    ``summary = ONE_VALUE``); ``low``/``high`` the same quantity at the low and the high end of each
    point's repeats (a Series like ``values``, or a number); ``margin`` a noise band around a
    single value that has no repeats. The verdict needs the rule at the summary and, for a median,
    at every N (``failing_n`` lists those where it does not)."""
    from ..format import pow2_label

    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; valid: {', '.join(RULES)}")
    r = RULES[rule]
    s = _as_series(values)
    if summary == ONE_VALUE and len(s) > 1:
        raise ValueError("one value expected")
    if summary != ONE_VALUE and not isinstance(values, pd.Series):
        summary = ONE_VALUE
    level, failing = _verdict_over_n(r, paper, s, summary)
    if s.empty:
        return Judgement(NOT_MEASURED, np.nan, np.nan, np.nan, summary, 0)
    why, unstable = [], []
    if summary != ONE_VALUE and len(s) == 1:  # nothing to check it against: one N carries it
        why.append(f"measured at one N only (N = {pow2_label(s.index[0])})")
    if summary != ONE_VALUE and len(s) >= 2:
        for n in s.index:
            other, _ = _verdict_over_n(r, paper, s.drop(n), summary)
            if other != level:
                unstable.append(n)
                why.append(f"without N = {pow2_label(n)}: {other}")
    for end, name in ((low, "low"), (high, "high")):
        if end is None:
            continue
        e = _as_series(end)
        e = e.reindex(s.index).fillna(s) if isinstance(values, pd.Series) else e
        other, _ = _verdict_over_n(r, paper, e, summary)
        if other != level:
            why.append(f"at the {name} end of the repeats ({_fmt(summarize(e, summary), r.unit)}): {other}")
    if margin:
        v = float(s.iloc[0]) if summary == ONE_VALUE else summarize(s, summary)
        for other_value in (v - margin, v + margin):
            other = r.level(other_value, paper)
            if other != level:
                noise = f"±{margin:g}" + (" points" if r.unit.strip() == "%" else "×")
                why.append(f"{_fmt(other_value, r.unit)}, within the {noise} a single run can move: {other}")
                break
    value = summarize(s, summary if summary != ONE_VALUE else MEDIAN)
    if summary != ONE_VALUE and len(s) == 1:
        summary = ONE_N
    return Judgement(level, value, float(s.min()), float(s.max()), summary, len(s), failing, "; ".join(why),
                     tuple(unstable))


def _fmt(v, unit) -> str:
    return f"{v:.0f} %" if unit.strip() == "%" else f"{v:.3g}×"


def trend_direction(growth) -> str:
    """"grows", "falls" or "flat" for a last/first ratio."""
    if growth >= TREND_FACTOR:
        return "grows"
    return "falls" if growth <= 1 / TREND_FACTOR else "flat"


def trend(values: pd.Series) -> float:
    """Last over first of a series sorted by its index (e.g. the speedup by S): its growth."""
    s = values.dropna().sort_index()
    return float(s.iloc[-1] / s.iloc[0]) if len(s) >= 2 else np.nan


def spread(values: pd.Series) -> float:
    """max/min of a series (1 = flat); nan with fewer than two values."""
    s = values.dropna()
    return float(s.max() / s.min()) if len(s) >= 2 else np.nan


def plateau_n(df_impl: pd.DataFrame, frac=0.9):
    """Smallest N whose throughput reaches ``frac`` of the implementation's best (its plateau)."""
    s = df_impl.groupby("num_envs")["samples_per_s"].max().sort_index()
    if s.empty:
        return None
    return int(s[s >= frac * s.max()].index.min())


def at_knobs(d: pd.DataFrame, state_factor=1, compute_factor=1) -> pd.DataFrame:
    """The rows at state factor S and compute factor C (S = C = 1: CartPole itself)."""
    for knob, v in (("state_factor", state_factor), ("compute_factor", compute_factor)):
        if knob in d:
            d = d[d[knob] == v]
    return d


def k_speedup(df: pd.DataFrame, impl: str, k_lo: int, k_hi: int, *, max_n=None) -> pd.Series:
    """Per N: throughput at K = k_hi over K = k_lo for one implementation (S = C = 1 rows)."""
    return k_speedup_spread(df, impl, k_lo, k_hi, max_n=max_n)["value"]


def rates_by_n(d: pd.DataFrame) -> pd.DataFrame:
    """Per N: the median throughput of the rows (``value``) and the low and high end of their
    repeats (``low``, ``high``: the rows' slowest and fastest repeat; the median where a row has none)."""
    if d.empty:
        return pd.DataFrame(columns=["value", "low", "high"], dtype=float)
    lo = d["samples_per_s_min"].fillna(d["samples_per_s"]) if "samples_per_s_min" in d else d["samples_per_s"]
    hi = d["samples_per_s_max"].fillna(d["samples_per_s"]) if "samples_per_s_max" in d else d["samples_per_s"]
    g = d.assign(_lo=lo, _hi=hi).groupby("num_envs")
    return pd.DataFrame({"value": g["samples_per_s"].median(), "low": g["_lo"].min(), "high": g["_hi"].max()})


def best_rates_by_n(d: pd.DataFrame) -> pd.DataFrame:
    """Per N: the fastest row (over implementations and K) with its repeats' ends, as ``rates_by_n``."""
    if d.empty:
        return rates_by_n(d)
    return rates_by_n(d.loc[d.groupby("num_envs")["samples_per_s"].idxmax()])


def ratio_by_n(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Per N measured in both: a / b (``value``) and its range over the repeats (``low`` = a's
    slowest over b's fastest, ``high`` the other way round)."""
    out = pd.DataFrame({"value": a["value"] / b["value"], "low": a["low"] / b["high"], "high": a["high"] / b["low"]})
    return out.dropna().sort_index()


def k_speedup_spread(df: pd.DataFrame, impl: str, k_lo: int, k_hi: int, *, max_n=None, state_factor=1,
                     compute_factor=1) -> pd.DataFrame:
    """Per N: throughput at K = k_hi over K = k_lo for one implementation at (S, C), with the
    range over the repeats (``ratio_by_n``)."""
    d = at_knobs(df[df["impl"] == impl], state_factor, compute_factor)
    if max_n is not None:
        d = d[d["num_envs"] <= max_n]
    return ratio_by_n(rates_by_n(d[d["steps"] == k_hi]), rates_by_n(d[d["steps"] == k_lo]))


def fusion_speedups(df: pd.DataFrame) -> pd.DataFrame:
    """Throughput at each K over throughput at K = 1 with the same (impl, N, S, C): paper Fig 9's y."""
    keys = ["impl", "num_envs", "state_factor", "compute_factor"]
    if df.empty:
        return pd.DataFrame(columns=[*keys, "steps", "speedup"])
    base = df[df["steps"] == 1].groupby(keys)["samples_per_s"].median().rename("base")
    out = df.join(base, on=keys)
    out["speedup"] = out["samples_per_s"] / out["base"]
    return out.dropna(subset=["speedup"])


def seconds_per_call(df: pd.DataFrame) -> pd.Series:
    """Seconds one rollout call takes, per row: N·K / samples per second."""
    return df["num_envs"] * df["steps"] / df["samples_per_s"]
