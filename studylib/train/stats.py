"""Statistics of training runs, after Agarwal et al. 2021 ("Deep Reinforcement Learning at the Edge
of the Statistical Precipice", NeurIPS; the ``rliable`` library): interquartile means (IQM) with
bootstrap 95% confidence intervals, probability of improvement, performance profiles.

The statistics are rliable's own (``rliable.metrics.aggregate_iqm``,
``rliable.metrics.probability_of_improvement``). The intervals are percentile bootstraps from
``scipy.stats.bootstrap``, each trainer's runs resampled on their own: with one task (CartPole)
that is rliable's stratified bootstrap. (rliable 1.2's own bootstrap classes pass ``random_state``
to arch, which arch 8 removed, and arch 7 does not import under pandas 3.)

Time to solve is a *censored* quantity: an unsolved run is "more than its budget", never a number.
It enters as +inf. The IQM drops the top quarter of the runs, so it is finite, and exact, while
fewer than a quarter of the runs are unsolved (with one budget for all, every unsolved run is
above every solved one); a bootstrap sample with more censored runs gives an unbounded upper
limit, reported as such. The fraction of seeds solved by wall-clock t is the Kaplan-Meier estimate
for this censoring (every run censored at one budget, after every solve): the share of runs
solved by t (a performance profile of the times), with a bootstrap interval.

A comparison says "X is faster than Y" only when the 95% interval of the ratio of their IQMs
excludes 1; otherwise the two are indistinguishable at these numbers of seeds (``verdict``).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import scipy.stats

REPS = 2000  # bootstrap resamples
CONFIDENCE = 0.95
BIG = 1e300  # +inf inside the bootstrap (scipy needs finite statistics); mapped back afterwards


def censored(values, solved) -> np.ndarray:
    """A run's value (time, samples, updates to solve) where it solved, +inf where it did not."""
    return np.where(np.asarray(solved, bool), np.asarray(values, float), np.inf)


def _finite(x) -> np.ndarray:
    return np.where(np.isinf(np.asarray(x, float)), BIG, np.asarray(x, float))


def _back(v: float) -> float:
    return math.inf if v >= BIG / 10 else float(v)


def _iqm(x) -> float:
    from rliable import metrics

    return float(metrics.aggregate_iqm(np.asarray(x).reshape(-1, 1)))


def iqm(x) -> float:
    """rliable's interquartile mean (the 25% trimmed mean); inf when over a quarter is censored."""
    return _back(_iqm(_finite(x)))


def _interval(samples, statistic, seed: int) -> tuple[float, float]:
    """Percentile bootstrap, each sample resampled on its own; ``statistic(*samples, axis=-1)``.
    No interval (NaN, NaN) where a sample has fewer than two runs: resampling one run says nothing."""
    if any(len(s) < 2 for s in samples):
        return math.nan, math.nan
    with np.errstate(over="ignore", invalid="ignore"):
        res = scipy.stats.bootstrap(tuple(samples), statistic, n_resamples=REPS, confidence_level=CONFIDENCE,
                                    method="percentile", vectorized=True, rng=np.random.default_rng(seed))
    return _back(res.confidence_interval.low), _back(res.confidence_interval.high)


def _iqm_v(x, axis=-1):
    """rliable's aggregate_iqm (scipy's trim_mean, 25%) along ``axis`` (for the bootstrap)."""
    return scipy.stats.trim_mean(x, proportiontocut=0.25, axis=axis)


def _ratio_v(a, b, axis=-1):
    ia, ib = _iqm_v(a, axis), _iqm_v(b, axis)
    both = (ia >= BIG / 10) & (ib >= BIG / 10)  # neither solved: no ratio
    return np.where(both, np.nan, np.where(ia >= BIG / 10, 0.0, np.minimum(ib / ia, BIG)))


def _p_faster_v(a, b, axis=-1):
    """rliable's probability_of_improvement of -A over -B (Mann-Whitney U / (n_a n_b)), vectorized."""
    u = scipy.stats.mannwhitneyu(-a, -b, alternative="greater", axis=axis).statistic
    return u / (a.shape[axis] * b.shape[axis])


def iqm_ci(x, seed: int = 0) -> tuple[float, float, float]:
    """(IQM, 95% low, 95% high) of censored values."""
    x = _finite(x)
    if len(x) == 0:
        return math.nan, math.nan, math.nan
    return (_back(_iqm(x)), *_interval([x], _iqm_v, seed))


def iqm_table(groups: dict, seed: int = 0) -> pd.DataFrame:
    """{name: censored values} -> name, runs, solved, iqm, lo, hi."""
    rows = []
    for name, x in groups.items():
        x = np.asarray(x, float)
        m, lo, hi = iqm_ci(x, seed)
        rows.append({"name": name, "runs": len(x), "solved": int(np.isfinite(x).sum()), "iqm": m, "lo": lo, "hi": hi})
    return pd.DataFrame(rows)


def _p_faster(a, b) -> float:
    """P(a run of A takes less than a run of B), rliable's probability of improvement of -A over -B."""
    from rliable import metrics

    return float(metrics.probability_of_improvement(-np.asarray(a).reshape(-1, 1), -np.asarray(b).reshape(-1, 1)))


def compare(x, y, seed: int = 0) -> dict:
    """Is X faster than Y (censored times, or samples)? ``ratio`` = IQM(Y) / IQM(X) (> 1: X is
    faster) with its 95% interval (X and Y resampled independently), and the probability of
    improvement P(a run of X is faster than a run of Y) with its interval."""
    x, y = _finite(x), _finite(y)
    lo, hi = _interval([x, y], _ratio_v, seed)
    p_lo, p_hi = _interval([x, y], _p_faster_v, seed)
    return {"ratio": _back(float(_ratio_v(x, y))), "ratio_lo": lo, "ratio_hi": hi, "p_improve": _p_faster(x, y),
            "p_lo": p_lo, "p_hi": p_hi, "runs_x": len(x), "runs_y": len(y)}


def verdict(c: dict, x: str, y: str, what: str = "trains faster") -> str:
    """The sentence a comparison earns: faster / slower only when the ratio's interval excludes 1."""
    few = [(name, runs) for name, runs in ((x, c["runs_x"]), (y, c["runs_y"])) if runs < 2]
    if few:  # no interval from one run (``_interval``): nothing to judge, whatever the point values
        said = " and ".join(f"`{name}` has {runs} seed{'' if runs == 1 else 's'}" for name, runs in few)
        return f"`{x}` and `{y}` are not compared: {said} (an interval needs two at least)."
    p = f"P({x} faster) = {c['p_improve']:.2f} ({c['p_lo']:.2f}–{c['p_hi']:.2f})"
    if math.isinf(c["ratio_lo"]):  # every resample of y's IQM censored: there is no ratio to give
        ci = f"`{y}`'s IQM is censored (over a quarter of its runs unsolved in every resample), {p}"
    else:  # a lower limit of exactly 0: resamples in which x's own IQM is censored (_ratio_v), said so
        why = f"; 0× where a resample leaves over a quarter of `{x}`'s runs unsolved" if c["ratio_lo"] == 0 else ""
        ci = f"IQM ratio {fmt_x(c['ratio'])} (95% CI {fmt_x(c['ratio_lo'])}–{fmt_x(c['ratio_hi'])}{why}), {p}"
    if c["ratio_lo"] > 1:
        return f"`{x}` {what} than `{y}`: {ci}."
    if c["ratio_hi"] < 1:
        return f"`{y}` {what} than `{x}`: {ci}."
    return f"`{x}` and `{y}` are indistinguishable at {c['runs_x']} and {c['runs_y']} seeds: {ci}."


def amdahl_excess(ratio: float, bound: float, fewer_samples: float, per_sample: float) -> str | None:
    """Which measured factor carries a time-to-solve ratio beyond Amdahl's bound. Time to solve is
    samples to solve times wall-clock per sample, so ``ratio`` = ``fewer_samples`` (the slower
    trainer's samples over the faster's) x ``per_sample`` (the faster's speed per sample over the
    slower's); the bound, 1 / (1 - collection's share), holds for the wall-clock per sample only.
    "per sample" where that factor alone exceeds the bound (more than collection took less time per
    sample), else "samples"; None where the ratio is within the bound or not finite."""
    if not (math.isfinite(ratio) and ratio > bound):
        return None
    return "per sample" if per_sample > bound else "samples"


def fmt_x(v: float) -> str:
    """A ratio: "unbounded" for +inf, "0×" for exactly 0 (a censored denominator), else two decimals."""
    if math.isnan(v):
        return "n/a"
    return "unbounded" if math.isinf(v) else ("0×" if v == 0 else f"{v:.2f}×")


def fmt_pct(m: float, lo: float, hi: float) -> str:
    """A share with its interval (the interval left out where it could not be computed)."""
    return f"{m:.0%}" + ("" if math.isnan(lo) or math.isnan(hi) else f" (95% CI {lo:.0%}–{hi:.0%})")


def fmt_range(median: float, lo: float, hi: float, fmt="{:.3g}", budget: float | None = None) -> str:
    """A median with its range over seeds; "not solved" where half or more did not solve."""
    if not math.isfinite(median):
        return "not solved by half the seeds" + (f" (budget {budget:g} s)" if budget else "")
    hi_s = fmt.format(hi) if math.isfinite(hi) else "unsolved"
    return f"{fmt.format(median)} ({fmt.format(lo)}–{hi_s})"


def fmt_iqm(m: float, lo: float, hi: float, fmt="{:.3g}", unit: str = "", budget: float | None = None) -> str:
    """An IQM with its 95% interval ("12.3 s (10.1–14.2)" with ``unit`` " s"); where over a quarter
    of the runs did not solve (an unbounded IQM) it says so, within ``budget`` seconds where given."""
    if not math.isfinite(m):
        return "over a quarter of the runs not solved" + (f" within {budget:g} s" if budget else "")
    if math.isnan(lo):
        return f"{fmt.format(m)}{unit} (one run: no interval)"
    return f"{fmt.format(m)}{unit} ({fmt.format(lo)}–{fmt.format(hi) if math.isfinite(hi) else 'unbounded'})"


def fraction_solved(groups: dict, taus, seed: int = 0) -> pd.DataFrame:
    """Fraction of runs solved by each t in ``taus`` (Kaplan-Meier under one common budget), with a
    95% bootstrap interval per t: name, t, fraction, lo, hi."""
    taus = np.asarray(taus, float)
    rows = []
    for k, v in groups.items():
        v = _finite(v)
        frac = lambda a: (a[:, None] <= taus[None, :]).mean(axis=0)  # noqa: E731
        rng = np.random.default_rng(seed)
        boot = np.stack([frac(v[rng.integers(0, len(v), len(v))]) for _ in range(REPS)]) if len(v) > 1 else None
        lo = np.quantile(boot, (1 - CONFIDENCE) / 2, axis=0) if boot is not None else frac(v)
        hi = np.quantile(boot, (1 + CONFIDENCE) / 2, axis=0) if boot is not None else frac(v)
        for t, f, a, b in zip(taus, frac(v), lo, hi):
            rows.append({"name": k, "t": float(t), "fraction": float(f), "lo": float(a), "hi": float(b)})
    return pd.DataFrame(rows)
