"""studylib.train.stats: rliable's IQM and probability of improvement, censored times, verdicts
that can fail (a comparison earns "faster" only when its interval excludes parity)."""

from __future__ import annotations

import math

import numpy as np
from rliable import metrics

from studylib.train import stats


def test_iqm_is_rliables_and_censoring_enters_as_infinity():
    x = np.random.default_rng(0).lognormal(size=16)
    assert stats.iqm(x) == float(metrics.aggregate_iqm(x.reshape(-1, 1)))
    t = stats.censored([1.0, 2, 3, 4, 5, 6, 7, 8], [True] * 7 + [False])
    assert t[-1] == math.inf and stats.iqm(t) == 4.5  # one censored run of eight: the IQM is exact
    m, lo, hi = stats.iqm_ci(t)
    assert m == 4.5 and lo <= m and hi == math.inf  # resamples with 3 censored runs: unbounded
    assert stats.iqm(stats.censored([1.0, 2, 3, 4], [True, False, False, True])) == math.inf


def test_verdicts_need_the_interval_to_exclude_parity():
    rng = np.random.default_rng(1)
    fast, slow = rng.normal(1.0, 0.1, 16), rng.normal(2.0, 0.2, 16)
    c = stats.compare(fast, slow)
    assert c["ratio_lo"] > 1 and c["p_lo"] > 0.5 and stats.verdict(c, "f", "s").startswith("`f` trains faster than `s`")
    assert stats.verdict(stats.compare(slow, fast), "s", "f").startswith("`f` trains faster than `s`")
    same = stats.compare(rng.normal(1.0, 0.3, 8), rng.normal(1.05, 0.3, 8))
    assert same["ratio_lo"] <= 1 <= same["ratio_hi"]
    assert "indistinguishable at 8 and 8 seeds" in stats.verdict(same, "a", "b")
    assert math.isclose(c["p_improve"], float(metrics.probability_of_improvement(-fast.reshape(-1, 1), -slow.reshape(-1, 1))))


def test_a_censored_iqm_gives_no_ratio_but_still_a_verdict():
    fast = np.random.default_rng(2).normal(1.0, 0.1, 8)
    mostly_unsolved = stats.censored(np.full(8, 60.0), [True] * 2 + [False] * 6)
    text = stats.verdict(stats.compare(fast, mostly_unsolved), "f", "u", "solves faster")
    assert text.startswith("`f` solves faster than `u`: `u`'s IQM is censored") and "unbounded" not in text


def test_one_seed_is_not_compared():
    """One run gives no interval, so no verdict: not "indistinguishable", which the page would read
    as measured parity (16 solved seeds against one unsolved run)."""
    fast = np.random.default_rng(3).normal(1.5, 0.1, 16)
    text = stats.verdict(stats.compare(fast, stats.censored([600.0], [False])), "jax", "brax", "solves faster")
    assert text == "`jax` and `brax` are not compared: `brax` has 1 seed (an interval needs two at least)."
    both = stats.verdict(stats.compare([1.0], [2.0]), "a", "b")
    assert "`a` has 1 seed and `b` has 1 seed" in both


def test_fraction_solved_counts_censored_runs_as_never_solved():
    f = stats.fraction_solved({"a": stats.censored([1.0, 2.0, 3.0, 9.0], [True, True, True, False])}, [0.5, 2.0, 100.0])
    assert list(f["fraction"]) == [0.0, 0.5, 0.75]
    assert (f["lo"] <= f["fraction"]).all() and (f["fraction"] <= f["hi"]).all()


def test_a_lower_limit_of_zero_says_why():
    """One unsolved run of eight for X: resamples with three or more copies of it (about 6% of them)
    censor X's IQM, so the ratio IQM(Y) / IQM(X) is 0 there and the interval's lower limit is 0,
    printed as such with its reason, not as a computed "0.00×"."""
    x = stats.censored([1.9, 1.4, 1.8, 1.2, 2.7, 3.6, 5.0, 1.1], [True, False] + [True] * 6)
    y = [4.5, 5.7, 5.1, 1.6, 2.0, 5.1, 9.0, 4.5]
    c = stats.compare(x, y)
    assert c["ratio_lo"] == 0 and 1 < c["ratio"] < c["ratio_hi"] < math.inf
    text = stats.verdict(c, "fused", "gym")
    assert "(95% CI 0×–" in text and "0× where a resample leaves over a quarter of `fused`'s runs unsolved" in text
    assert "0.00×" not in text and "indistinguishable" in text
    assert stats.fmt_x(0.0) == "0×" and stats.fmt_x(1.914) == "1.91×" and stats.fmt_x(math.inf) == "unbounded"


def test_an_iqm_prints_with_its_interval_and_says_why_where_it_has_none():
    """One formatter for every IQM the chapters print: the unit after the IQM, then the interval;
    a censored IQM (over a quarter unsolved), a single run and an unbounded limit said in words."""
    assert stats.fmt_iqm(12.345, 10.1, 14.2, "{:.2f}", " s") == "12.35 s (10.10–14.20)"
    assert stats.fmt_iqm(61_000, 59_500, math.inf, "{:,.0f}") == "61,000 (59,500–unbounded)"
    assert stats.fmt_iqm(3.0, math.nan, math.nan, unit=" s") == "3 s (one run: no interval)"
    assert stats.fmt_iqm(math.inf, 5.0, math.inf, budget=600) == "over a quarter of the runs not solved within 600 s"
    assert stats.fmt_iqm(math.inf, 5.0, math.inf) == "over a quarter of the runs not solved"


def test_amdahls_excess_is_carried_by_the_factor_beyond_the_bound():
    """Time to solve = samples x time per sample; the bound (here 2x) covers the time per sample only."""
    assert stats.amdahl_excess(1.5, 2.0, 1.0, 1.5) is None  # within the bound
    assert stats.amdahl_excess(math.inf, 2.0, 1.0, 1.5) is None  # a censored ratio: nothing to explain
    assert stats.amdahl_excess(4.0, 2.0, 3.0, 4 / 3) == "samples"  # 3x fewer samples, 1.33x per sample
    assert stats.amdahl_excess(4.0, 2.0, 1.0, 4.0) == "per sample"  # the same samples, 4x per sample
    assert stats.amdahl_excess(6.0, 2.0, 2.0, 3.0) == "per sample"  # both factors beyond: per sample is said
