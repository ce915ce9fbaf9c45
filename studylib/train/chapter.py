"""The training chapter's plan and data (book/training.md): resumable runs, summaries.

    P = chapter.params(preset=None, data_dir=None)      # the preset's plan ($STUDYLIB_PRESET)
    solve = chapter.solve_runs(P)                       # every trainer x seed, time to solve
    sweep = chapter.sweep_runs(P)                       # N from small to large, fixed T

    pop = chapter.population_runs(P)                    # each population collector's seeds in one program

Every run goes through ``results``: a run whose key is saved is read, not trained again, so a
rebuild is fast and an interrupted build resumes (a population saves each seed as it finishes and
resumes with the unfinished seeds only). Two measures, kept apart: wall-clock to solve from
single-seed runs (one process, one seed at a time); samples and updates to solve, and the solve
rate, also from populations (whose wall-clock is shared by all their seeds). The parameters
(``TrainingParams``, frozen and typed) start from the presets' table (``harness.presets``):
  tiny     seconds; what the test suite's book build runs (no conclusion is meaningful)
  default  the book build on 2 CPU cores
  paper    32 single runs per trainer, 64 seeds per population, N from 2^3 to 2^14 with 16 seeds
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..harness import sweep
from . import results, stats, train
from .params import TrainingParams
from .settings import PEER_TRAINERS, TrainRun

TRAINER_LABELS = {"sb3": "SB3 PPO (rl-zoo settings, gymnasium CartPole-v1)",
                  "gymnasium-vector": "our PPO, cleanrl's settings (gymnasium CartPoleVectorEnv)", "jax": "jax (PPO fully jitted)"}


Params = TrainingParams  # the chapter's parameters: frozen, typed (``train.params``)


def params(preset=None, data_dir=None, collectors=None, seeds=None, sweep_num_envs=None, **given) -> TrainingParams:
    """The chapter's parameters at ``preset`` (``$STUDYLIB_PRESET``), those given overriding it;
    ConfigError (one line) for a value of the wrong type."""
    return TrainingParams.resolve("training", preset=preset, data_dir=data_dir, collectors=collectors, seeds=seeds,
                                  sweep_num_envs=sweep_num_envs, **given)


def run_or_load(run: TrainRun, data_dir) -> dict:
    """The saved row of ``run`` if there is one, else train it now and save the row (None, left
    untrained, in a session that measures nothing)."""
    settings = run.settings.as_dict() if not run.is_peer else None
    rows = results.load(data_dir)
    if settings is not None:
        row = results.find(rows, _key(run))
        if row is not None:
            return row
    else:  # a peer's settings are its own: match on the rest
        for row in rows:
            if (row["collector"], row["seed"], row["budget_s"]) == (run.collector, run.seed, run.budget_seconds):
                return row
    if _left_unmeasured([run], population=False):
        return None
    row = train(run).as_dict()
    results.save_row(data_dir, row)
    return row


def _left_unmeasured(runs: list[TrainRun], population: bool) -> bool:
    """Whether ``runs`` (not saved) are left untrained because the session measures nothing
    (``sweep.READ_ONLY``: ``data check`` asking what a build would measure); they are reported to it."""
    if not sweep.read_only():
        return False
    sweep.report_unmeasured(results.FILE_NAME, [
        {"collector": r.collector, "num_envs": r.n, "seed": r.seed, "budget_s": r.budget_seconds,
         "population": population, "reason": "not trained here"} for r in runs])
    return True


def _key(run: TrainRun, population: bool = False) -> str:
    return results.row_key(run.collector, run.n, run.seed, {**run.settings.as_dict(), "num_envs": run.n},
                           run.budget_seconds, population)


def population_or_load(runs: list[TrainRun], data_dir) -> list[dict]:
    """The seeds of ``runs`` (one collector) as one population: saved seeds are read; the others are
    trained together in one program (``train.train_population``: the JAX PPO vmapped, the PyTorch
    PPO batched), each saved as soon as it finishes (an interruption loses no finished seed)."""
    from . import train_population

    rows = results.load(data_dir)
    saved = {r.seed: results.find(rows, _key(r, population=True)) for r in runs}
    todo = [r for r in runs if saved[r.seed] is None]
    if todo and not _left_unmeasured(todo, population=True):
        def keep(result):
            saved[result.seed] = result.as_dict()
            results.save_row(data_dir, saved[result.seed])

        train_population(todo, on_result=keep)
    return [saved[r.seed] for r in runs if saved[r.seed] is not None]


def _frame(rows) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    if len(df):
        df["wall_to_solve"] = np.where(df["solved"], df["wall_s"], np.nan)
        df["label"] = df["collector"].map(lambda c: TRAINER_LABELS.get(c, c))
    return df


def solve_runs(P: Params, progress=None) -> pd.DataFrame:
    """Every collector and peer, every seed, one at a time, at the preset's N and common budget."""
    rows = []
    for c in [*P.collectors, *P.peers]:
        peer = c in PEER_TRAINERS
        for seed in P.seeds:
            run = TrainRun(c, None if peer else P.num_envs, seed=seed, settings=P.settings, max_seconds=P.budget_s)
            row = run_or_load(run, P.data_dir)
            if row is not None:  # None: left untrained by a read-only session
                rows.append(row)
                if progress:
                    progress(row)
    return _frame(rows)


def population_runs(P: Params) -> pd.DataFrame:
    """The preset's populations at N, one per population collector that runs here (samples and
    updates to solve; each population's wall-clock is shared by its seeds)."""
    rows = []
    for c in P.population_collectors:
        if c in P.not_here or not P.population_seeds:
            continue
        runs = [TrainRun(c, P.num_envs, seed=k, settings=P.settings, max_seconds=P.population_budget_s)
                for k in P.population_seeds]
        rows.extend(population_or_load(runs, P.data_dir))
    return _frame(rows)


def sweep_runs(P: Params, progress=None) -> pd.DataFrame:
    """The bandwidth-vs-latency sweep: N from small to large at the settings' T, one jax population
    of the sweep's seeds per N."""
    rows = []
    if not P.sweep_seeds:
        return _frame(rows)
    for n in P.sweep_num_envs:
        runs = [TrainRun("jax", n, seed=k, settings=P.settings, max_seconds=P.sweep_budget_s) for k in P.sweep_seeds]
        rows.extend(population_or_load(runs, P.data_dir))
        if progress and rows:
            progress(rows[-1])
    return _frame(rows)


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per trainer (and N): runs, solved, IQM time / samples / updates to solve with 95% CIs
    (``stats``; unsolved runs censored), the first run with its compile, shares of the wall-clock."""
    out = []
    if not len(df):
        return pd.DataFrame(out)
    for (collector, n), g in df.groupby(["collector", "num_envs"], sort=False):
        population = bool(g["trainer"].isin(results.POPULATION_TRAINERS).all()) if "trainer" in g else False
        time_ = stats.iqm_ci(stats.censored(g["wall_s"], g["solved"]))
        samples = stats.iqm_ci(stats.censored(g["samples"], g["solved"]))
        updates = stats.iqm_ci(stats.censored(g["updates"], g["solved"]))
        first = g.loc[g["seed"].idxmin()]
        total = g[["collect_s", "learn_s", "eval_s"]].sum()
        wall = total.sum()
        row = {
            "collector": collector, "num_envs": n, "runs": len(g), "solved": int(g["solved"].sum()),
            "population": population, "budget_s": g["budget_s"].max(),
            "iqm_s": time_[0], "iqm_s_lo": time_[1], "iqm_s_hi": time_[2],
            "iqm_samples": samples[0], "iqm_samples_lo": samples[1], "iqm_samples_hi": samples[2],
            "iqm_updates": updates[0], "iqm_updates_lo": updates[1], "iqm_updates_hi": updates[2],
            "samples_per_s": float(g["samples_per_s"].median()), "updates_per_s": float(g["updates_per_s"].median()),
            # the first seed's: a later seed in the same process reuses the compiled program
            "compile_s": float(first["compile_s"]), "first_run_s": float(first["compile_s"] + first["wall_s"]),
            "first_run_solved": bool(first["solved"]),
            "eval_return": float(g["eval_return"].median()),
            "unconfirmed": int(g.get("unconfirmed_checks", pd.Series(0, index=g.index)).fillna(0).sum()),
            "confirmed": int(g["solved_in_training"].sum()),
        }
        if population:  # one program for collection and learning: no split; the wall-clock is shared
            row.update(collect_share=math.nan, learn_share=math.nan, eval_share=math.nan,
                       collect_ms_per_update=math.nan, learn_ms_per_update=math.nan)
        else:
            row.update(collect_share=total["collect_s"] / wall, learn_share=total["learn_s"] / wall,
                       eval_share=total["eval_s"] / wall,
                       collect_ms_per_update=1e3 * total["collect_s"] / g["updates"].sum() if g["updates"].sum() else math.nan,
                       learn_ms_per_update=1e3 * total["learn_s"] / g["updates"].sum() if g["updates"].sum() else math.nan)
        row["bootstraps_truncation"] = bool(g["bootstraps_truncation"].all())
        out.append(row)
    return pd.DataFrame(out)


def unsolved(df: pd.DataFrame) -> pd.DataFrame:
    """Every unsolved run: why it stopped, its last greedy check, gymnasium's verdict."""
    if not len(df):
        return pd.DataFrame()
    u = df[~df["solved"]].copy()
    u["last_greedy"] = [c[-1][3] if len(c) else math.nan for c in u["curve"]]
    u["why"] = [("gymnasium's confirmation below the threshold" if r["solved_in_training"] else
                 {"max_seconds": "the time budget ran out", "max_samples": "the sample budget ran out"}.get(r["stopped"], r["stopped"]))
                for _, r in u.iterrows()]
    return u[["collector", "num_envs", "seed", "why", "wall_s", "budget_s", "samples", "last_greedy", "eval_return"]]


def per_seed(df: pd.DataFrame, collector: str) -> pd.DataFrame:
    """One trainer's runs with the per-seed measures the comparisons use."""
    g = df[df["collector"] == collector].copy()
    g["time"] = stats.censored(g["wall_s"], g["solved"])
    g["collect_ms_per_update"] = 1e3 * g["collect_s"] / g["updates"].clip(lower=1)
    g["collect_share"] = g["collect_s"] / (g["collect_s"] + g["learn_s"] + g["eval_s"])
    return g


def compare_times(df: pd.DataFrame, x: str, y: str) -> dict:
    """stats.compare of two trainers' censored wall-clock times to solve."""
    return stats.compare(per_seed(df, x)["time"], per_seed(df, y)["time"])


def collection_answer(df: pd.DataFrame, slow: str, fast: str) -> dict:
    """Does faster collection train faster? The collection speedup per update of ``fast`` over
    ``slow``, the time-to-solve speedup, and ``fast``'s collection share, each with a 95% CI."""
    a, b = per_seed(df, fast), per_seed(df, slow)
    return {"collection": stats.compare(a["collect_ms_per_update"], b["collect_ms_per_update"]),
            "solve": stats.compare(a["time"], b["time"]),
            "share_fast": stats.iqm_ci(a["collect_share"]), "share_slow": stats.iqm_ci(b["collect_share"])}


def curves(df: pd.DataFrame) -> pd.DataFrame:
    """Learning curves, long form: one row per greedy check of every run."""
    rows = []
    for _, r in df.iterrows():
        for wall, samples, updates, greedy, train_mean in r["curve"]:
            rows.append({"collector": r["collector"], "seed": r["seed"], "num_envs": r["num_envs"], "wall_s": wall,
                         "samples": samples, "updates": updates, "greedy_return": greedy})
    return pd.DataFrame(rows)
