"""The training chapter's conclusions, computed once from its runs (book/training.md renders them):
its first paragraph (``answer``), populations against single runs, the bandwidth-vs-latency
optimum in N, Amdahl's bound on what faster collection can save, the ranked comparisons and the
solve-confirmation counts.

Every number a sentence of the chapter states comes from here, each with its interval where it is
an aggregate over seeds (``stats``: IQM, stratified bootstrap 95% CI, censored times to solve).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import stats
from .chapter import collection_answer, compare_times, summary


@dataclass(frozen=True)
class PopulationRate:
    """One way of training a collector's seeds: as a population (one program) or one at a time.
    ``wall_s``: the population's shared clock until its last seed finished, or the sum of the single
    runs' clocks (compile apart); ``seeds_per_minute``: solved seeds per minute of that wall-clock."""

    collector: str
    how: str  # "population" | "one at a time"
    seeds: int
    solved: int
    wall_s: float
    compile_s: float
    samples: tuple  # IQM samples to solve (value, lo, hi)
    updates: tuple

    @property
    def cost_per_seed_s(self) -> float:
        return self.wall_s / self.seeds if self.seeds else math.nan

    @property
    def seeds_per_minute(self) -> float:
        return 60 * self.solved / self.wall_s if self.wall_s > 0 else math.nan

    @property
    def seeds_per_minute_with_compile(self) -> float:
        total = self.wall_s + self.compile_s
        return 60 * self.solved / total if total > 0 else math.nan


def _rate(collector: str, how: str, g: pd.DataFrame, wall_s: float) -> PopulationRate:
    first = g.loc[g["seed"].idxmin()]
    return PopulationRate(collector, how, len(g), int(g["solved"].sum()), float(wall_s), float(first["compile_s"]),
                          stats.iqm_ci(stats.censored(g["samples"], g["solved"])),
                          stats.iqm_ci(stats.censored(g["updates"], g["solved"])))


def population_rates(solve: pd.DataFrame, pop: pd.DataFrame) -> list[PopulationRate]:
    """Per population collector: its population and, where the single-seed runs have it, the same
    collector one seed at a time (the population's wall-clock is shared: its last seed's clock)."""
    out = []
    if not len(pop):
        return out
    for c, g in pop.groupby("collector", sort=False):
        out.append(_rate(c, "population", g, g["wall_s"].max()))
        single = solve[solve["collector"] == c] if len(solve) else solve
        if len(single):
            out.append(_rate(c, "one at a time", single, single["wall_s"].sum()))
    return out


def population_gain(rates: list[PopulationRate], collector: str) -> float:
    """Seeds solved per minute (compile apart), the population's over one at a time's; NaN where
    either is missing. One measurement of each, so no interval: the page says so."""
    by = {r.how: r for r in rates if r.collector == collector}
    if "population" not in by or "one at a time" not in by or not by["one at a time"].seeds_per_minute > 0:
        return math.nan
    return by["population"].seeds_per_minute / by["one at a time"].seeds_per_minute


def samples_population_vs_single(solve: pd.DataFrame, pop: pd.DataFrame, collector: str) -> dict | None:
    """``stats.compare`` of samples to solve, the population's seeds against the single runs' (the
    same algorithm: they should not differ); None where either side is missing."""
    p = pop[pop["collector"] == collector] if len(pop) else pop
    s = solve[solve["collector"] == collector] if len(solve) else solve
    if not len(p) or not len(s):
        return None
    return stats.compare(stats.censored(p["samples"], p["solved"]), stats.censored(s["samples"], s["solved"]))


# ---- the bandwidth-vs-latency sweep ------------------------------------------------------------
SWEEP_MEASURES = (("updates to solve", "updates"), ("samples to solve", "samples"),
                  ("population wall-clock per seed (s)", "per_seed_s"))


def sweep_table(sweep: pd.DataFrame) -> pd.DataFrame:
    """Per N and measure: IQM over the seeds with its 95% interval (unsolved seeds censored) and the
    solve count. The wall-clock per seed is the population's clock at the seed's solve divided by
    the population's size (a population's cost per seed, not a single run's time)."""
    if not len(sweep):
        return pd.DataFrame(columns=["num_envs", "measure", "iqm", "lo", "hi", "solved"])
    sweep = sweep.assign(per_seed_s=lambda d: d["wall_s"] / d["population"])
    rows = []
    for n, g in sweep.groupby("num_envs"):
        for measure, col in SWEEP_MEASURES:
            m, lo, hi = stats.iqm_ci(stats.censored(g[col], g["solved"]))
            rows.append({"num_envs": n, "measure": measure, "iqm": m, "lo": lo, "hi": hi,
                         "solved": f"{int(g['solved'].sum())} / {len(g)}"})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Optimum:
    """The N of the smallest IQM cost per seed, its interval, and every other N whose interval
    overlaps it (the optimum lies among these at this many seeds)."""

    num_envs: int
    iqm: float
    lo: float
    hi: float
    tied: tuple


def sweep_optimum(table: pd.DataFrame) -> Optimum | None:
    t = table[table["measure"] == SWEEP_MEASURES[2][0]].set_index("num_envs")
    ok = t[np.isfinite(t["iqm"].astype(float))]
    if not len(ok):
        return None
    best = ok["iqm"].idxmin()
    tied = tuple(int(n) for n in ok.index if n != best and ok.loc[n, "lo"] <= ok.loc[best, "hi"])
    return Optimum(int(best), float(ok.loc[best, "iqm"]), float(ok.loc[best, "lo"]), float(ok.loc[best, "hi"]), tied)


# ---- where the wall-clock goes ----------------------------------------------------------------
@dataclass(frozen=True)
class CollectionBound:
    """Among the PyTorch-PPO collectors: the range of collection's and learning's shares of the
    wall-clock (every seed's totals), and Amdahl's bound: an infinitely fast collector removes at
    most the largest collection share, so time to solve falls at most 1 / (1 - share)."""

    collectors: tuple
    collect_share: tuple  # (min, max) over the collectors
    learn_share: tuple
    largest_share_collector: str
    bound: float


def collection_bound(S: pd.DataFrame, collectors) -> CollectionBound | None:
    side = [c for c in collectors if c in S.index and np.isfinite(S.loc[c, "collect_share"])]
    if not side:
        return None
    share = S.loc[side, "collect_share"]
    learn = S.loc[side, "learn_share"]
    top = share.idxmax()
    return CollectionBound(tuple(side), (float(share.min()), float(share.max())), (float(learn.min()), float(learn.max())),
                           top, 1 / max(1 - float(share.max()), 1e-9))


def beyond_bound(measured: dict, S: pd.DataFrame, slow: str, fast: str, bound: CollectionBound) -> str:
    """Where ``fast``'s measured time-to-solve ratio over ``slow`` (IQM; ``measured``: the "solve"
    comparison of ``chapter.collection_answer`` for the pair, computed once) exceeds Amdahl's bound, the
    sentence that says why: time to solve is samples to solve times wall-clock per sample, and the
    bound holds for the second only. Its two factors as measured (IQM samples to solve, median
    samples/s), and which of them carries the excess (``stats.amdahl_excess``); "" where the ratio
    is within the bound (or not finite). A ratio whose 95% interval reaches below the bound is
    called beyond it as a point estimate only."""
    ratio = measured["ratio"]
    n_fast, n_slow = float(S.loc[fast, "iqm_samples"]), float(S.loc[slow, "iqm_samples"])
    per_sample = float(S.loc[fast, "samples_per_s"]) / float(S.loc[slow, "samples_per_s"])
    if (excess := stats.amdahl_excess(ratio, bound.bound, n_slow / n_fast, per_sample)) is None:
        return ""
    only = ("" if measured["ratio_lo"] > bound.bound else f" as a point estimate only (its 95% interval, "
            f"{stats.fmt_x(measured['ratio_lo'])}–{stats.fmt_x(measured['ratio_hi'])}, reaches below it)")
    text = (f" The time-to-solve ratio measured above, {stats.fmt_x(ratio)}, is beyond this bound{only}: time to solve "
            "is samples to solve times wall-clock per sample, and the bound holds for the second only. ")
    # (a finite time ratio has both IQMs uncensored, and so both samples' IQMs)
    text += (f"`{fast}`'s runs solved in {n_fast:,.0f} samples (IQM) and `{slow}`'s in {n_slow:,.0f} "
             f"({stats.fmt_x(n_slow / n_fast)} as many); per sample `{fast}` ran {stats.fmt_x(per_sample)} as fast as "
             f"`{slow}` (median samples/s, checks included)")
    if excess == "per sample":
        return text + ", beyond the bound as well: in these runs more than collection (learning or the checks) took less time per sample."
    return text + ": the rest is in the samples, which collection speed does not shorten."


def bound_sentence(measured: dict, S: pd.DataFrame, side: list) -> str:
    """Amdahl's bound among the PyTorch-PPO collectors ``side`` (fastest collection first), and
    ``beyond_bound``'s reason where the fastest's measured ratio over the slowest (``measured``:
    ``collection_answer(solve, side[-1], side[0])["solve"]``) exceeds it."""
    b = collection_bound(S, side)
    return (f"Collection is {b.collect_share[0]:.0%}–{b.collect_share[1]:.0%} of these collectors' wall-clock, so an "
            f"infinitely fast collector could cut the wall-clock per sample, and so time to solve at equal samples, at most "
            f"{b.bound:.3g}× (Amdahl's bound)." + beyond_bound(measured, S, side[-1], side[0], b))


def torch_collectors(S: pd.DataFrame, collectors) -> list[str]:
    """The single-run collectors feeding the PyTorch PPO (per-update collection and learning are
    measured apart), fastest collection per update first."""
    from .settings import collector_spec

    side = [c for c in collectors if c in S.index and collector_spec(c).trainer == "torch-ppo"
            and np.isfinite(S.loc[c, "collect_ms_per_update"])]
    return list(S.loc[side].sort_values("collect_ms_per_update").index)


# ---- the answer ------------------------------------------------------------------------------
def collection_sentence(a: dict, slow: str, fast: str) -> str:
    """``fast`` against ``slow`` feeding the same PyTorch PPO (``a``: their
    ``chapter.collection_answer``, computed once): how much faster it collects per update and each
    one's collection share, with their intervals, then whether it trains faster (``stats.verdict``:
    only where the interval of the ratio excludes 1)."""
    c = a["collection"]
    return (f"Collection per update is {stats.fmt_x(c['ratio'])} faster with `{fast}` than with `{slow}` "
            f"(95% CI {stats.fmt_x(c['ratio_lo'])}–{stats.fmt_x(c['ratio_hi'])}); `{fast}` spends "
            f"{stats.fmt_pct(*a['share_fast'])} of its wall-clock collecting (IQM), `{slow}` "
            f"{stats.fmt_pct(*a['share_slow'])}. Time to solve: " + stats.verdict(a["solve"], fast, slow))


def answer(solve: pd.DataFrame, S: pd.DataFrame, collectors, where: str = "this machine") -> str:
    """The chapter's first paragraph: does faster collection train faster? The fastest against the
    slowest collector feeding the same PyTorch PPO (``collection_sentence``), Amdahl's bound on
    what any collector can save (``collection_bound``), and the fully jitted JAX PPO against the
    fastest PyTorch one; each "faster" only where its interval excludes 1. What is missing where
    too few trainers ran."""
    if not len(S):
        return f"No training run was trained or saved for this preset on {where}."
    side = torch_collectors(S, collectors)
    parts = [f"Measured on {where}."]
    if len(side) >= 2:
        pair = collection_answer(solve, side[-1], side[0])
        parts.append(f"Among the collectors feeding the same PyTorch PPO, `{side[0]}` collects fastest and "
                     f"`{side[-1]}` slowest. " + collection_sentence(pair, side[-1], side[0]))
        parts.append(bound_sentence(pair["solve"], S, side))
    best_torch = fastest(S, side) or (side[0] if side else None)
    if "jax" in S.index and best_torch:
        parts.append("The fully jitted JAX PPO against the fastest PyTorch one: "
                     + stats.verdict(compare_times(solve, "jax", best_torch), "jax", best_torch))
    if len(parts) == 1:
        parts.append("Too few trainers ran in this preset to compare collectors.")
    return " ".join(parts)


# ---- comparisons and confirmations -------------------------------------------------------------
def ranked_comparisons(solve: pd.DataFrame, S: pd.DataFrame) -> list[tuple[str, str, dict]]:
    """Each trainer against the one with the smallest IQM time to solve: (best, other, stats.compare);
    trainers whose IQM is unbounded (over a quarter unsolved) come last."""
    ranked = S[np.isfinite(S["iqm_s"])].sort_values("iqm_s")
    if not len(ranked):
        return []
    best = ranked.index[0]
    others = [*ranked.index[1:], *[c for c in S.index if c not in ranked.index]]
    return [(best, c, compare_times(solve, best, c)) for c in others]


def fastest(S: pd.DataFrame, collectors) -> str | None:
    """The collector with the smallest IQM time to solve among ``collectors`` (None if none solved)."""
    side = [c for c in collectors if c in S.index and np.isfinite(S.loc[c, "iqm_s"])]
    return S.loc[side, "iqm_s"].idxmin() if side else None


@dataclass(frozen=True)
class Confirmations:
    """First greedy checks at or above the threshold that the second, independent check did not
    confirm (single runs and populations), and confirmed solves gymnasium's CartPoleEnv rejected."""

    unconfirmed_single: int
    first_passes_single: int
    unconfirmed_population: int
    first_passes_population: int
    rejected_by_gymnasium: int


def confirmations(solve: pd.DataFrame, pop: pd.DataFrame) -> Confirmations:
    def counts(df):
        if not len(df):
            return 0, 0
        un = int(df["unconfirmed_checks"].fillna(0).sum()) if "unconfirmed_checks" in df else 0
        return un, un + int(df["solved_in_training"].sum())

    both = pd.concat([solve, pop], ignore_index=True) if len(pop) else solve
    rejected = int((both["solved_in_training"] & ~both["solved"]).sum()) if len(both) else 0
    return Confirmations(*counts(solve), *counts(pop), rejected)


def summaries(solve: pd.DataFrame, order) -> pd.DataFrame:
    """``chapter.summary`` of the single runs, one row per trainer in ``order`` (those that ran)."""
    S = summary(solve)
    if not len(S):
        return S
    S = S.set_index("collector")
    return S.loc[[c for c in order if c in S.index]]
