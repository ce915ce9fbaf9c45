"""The numbers the chapters compute from the measurements (plateaus, speedups, trends) and the
rules that compare them with the paper's (``RULES``, ``verdict``).

A verdict is one of ``VERDICTS``; every rule can give each of them that applies to it (the tests
build small frames for every outcome):

  reproduced           the paper's comparison holds here, at about the paper's size
  partly reproduced    the direction holds, the size does not (more than 2x away, say)
  not reproduced here  the direction does not hold on this machine; the row says why
  not measured         this build has no data for it
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_MEASURED = ("reproduced", "partly reproduced", "not reproduced here",
                                                    "not measured")
VERDICTS = (REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_MEASURED)

NO_SPEEDUP = 1.05  # a ratio at most this is "no speedup" (timing noise is a few percent)
SIZE_FACTOR = 2.0  # "about the paper's size": within this factor
TREND_FACTOR = 1.5  # a trend: the last value at least this multiple of the first (or at most its inverse)
SHARE_POINTS = 10.0  # a share within this many percentage points of the paper's


@dataclass(frozen=True)
class Rule:
    """A named comparison of one measured number with the paper's."""

    name: str
    compares: str  # what is compared, for the findings table's "rule" column


RULES = {
    "speedup": Rule("speedup", f"ours/paper within {SIZE_FACTOR:g}× → reproduced; ours > {NO_SPEEDUP} but further → "
                               f"partly; ours ≤ {NO_SPEEDUP} → not reproduced"),
    "at most": Rule("at most", f"{NO_SPEEDUP} < ours ≤ the paper's bound → reproduced; ours above the bound or "
                               f"≤ {NO_SPEEDUP} (no speedup) → not reproduced"),
    "majority share": Rule("majority share", f"within {SHARE_POINTS:g} points of the paper's → reproduced; "
                                             "still above 50 % → partly; 50 % or less → not reproduced"),
    "grows": Rule("grows", f"last/first ≥ {TREND_FACTOR:g} (grows) and within {SIZE_FACTOR:g}× of the paper's growth → "
                           f"reproduced; grows less → partly; flat or falls → not reproduced"),
    "flat": Rule("flat", f"max/min ≤ {SIZE_FACTOR:g} → reproduced; more → not reproduced"),
    "vanishes": Rule("vanishes", f"ours ≤ {SIZE_FACTOR:g}× (little or no gain) → reproduced; more → not reproduced"),
}


def _missing(v) -> bool:
    return v is None or not np.isfinite(v)


def verdict(rule: str, ours, paper=None) -> str:
    """The verdict of rule ``rule`` (a key of ``RULES``) on our number and the paper's. For
    "grows", ``ours`` and ``paper`` are growth ratios (last/first); for "flat", a max/min spread."""
    if _missing(ours):
        return NOT_MEASURED
    if rule == "speedup":
        if ours <= NO_SPEEDUP:
            return NOT_REPRODUCED
        return REPRODUCED if 1 / SIZE_FACTOR <= ours / paper <= SIZE_FACTOR else PARTLY
    if rule == "at most":
        return REPRODUCED if NO_SPEEDUP < ours <= paper * NO_SPEEDUP else NOT_REPRODUCED
    if rule == "majority share":
        if abs(ours - paper) <= SHARE_POINTS:
            return REPRODUCED
        return PARTLY if ours > 50 else NOT_REPRODUCED
    if rule == "grows":
        if trend_direction(ours) != "grows":
            return NOT_REPRODUCED
        return REPRODUCED if ours >= paper / SIZE_FACTOR else PARTLY
    if rule == "flat":
        return REPRODUCED if ours <= SIZE_FACTOR else NOT_REPRODUCED
    if rule == "vanishes":
        return REPRODUCED if ours <= SIZE_FACTOR else NOT_REPRODUCED
    raise ValueError(f"unknown rule {rule!r}; valid: {', '.join(RULES)}")


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


def k_speedup(df: pd.DataFrame, impl: str, k_lo: int, k_hi: int, *, max_n=None) -> pd.Series:
    """Per N: throughput at K = k_hi over K = k_lo for one implementation (S = C = 1 rows)."""
    d = df[df["impl"] == impl]
    for knob in ("state_factor", "compute_factor"):
        if knob in d:
            d = d[d[knob] == 1]
    if max_n is not None:
        d = d[d["num_envs"] <= max_n]
    lo = d[d["steps"] == k_lo].groupby("num_envs")["samples_per_s"].median()
    hi = d[d["steps"] == k_hi].groupby("num_envs")["samples_per_s"].median()
    return (hi / lo).dropna()


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
