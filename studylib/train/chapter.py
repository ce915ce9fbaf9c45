"""The training chapter's plan and data (book/training.md): presets, resumable runs, summaries.

    P = chapter.params(preset=None, data_dir=None)      # the preset's plan ($STUDYLIB_PRESET)
    solve = chapter.solve_runs(P)                       # every trainer x seed, time to solve
    sweep = chapter.sweep_runs(P)                       # N from small to large, fixed T

Every run goes through ``results``: a run whose key is saved is read, not trained again, so a
rebuild is fast and an interrupted build resumes. Presets (as the other chapters'):
  tiny     seconds; what the test suite's book build runs (no conclusion is meaningful)
  default  the book build on 2 CPU cores: 3 seeds of every collector, the peers under a time
           budget, a short N sweep with one seed
  paper    more seeds, longer budgets, N from 2^3 to 2^16
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from . import results, train
from .settings import COLLECTORS, PEER_TRAINERS, PPOSettings, TrainRun

PRESETS = {
    # tiny: no jax (its compilation alone takes longer than the rest of the preset)
    "tiny": {"collectors": ["cpp", "fused", "fused-step", "torch"], "peers": list(PEER_TRAINERS), "seeds": [0],
             "num_envs": 16, "budget_s": 0.5, "peer_budget_s": 0.5,
             "sweep_collectors": ["fused"], "sweep_num_envs": [8, 64], "sweep_seeds": [0], "sweep_budget_s": 0.5},
    "default": {"collectors": list(COLLECTORS), "peers": list(PEER_TRAINERS), "seeds": [0, 1, 2],
                "num_envs": None, "budget_s": 15.0, "peer_budget_s": 8.0,
                "sweep_collectors": ["fused", "jax"], "sweep_num_envs": [8, 64, 1024, 16384], "sweep_seeds": [0],
                "sweep_budget_s": 6.0},
    "paper": {"collectors": list(COLLECTORS), "peers": list(PEER_TRAINERS), "seeds": [0, 1, 2, 3, 4],
              "num_envs": None, "budget_s": 120.0, "peer_budget_s": 300.0,
              "sweep_collectors": ["fused", "cpp", "torch", "jax"], "sweep_num_envs": [2**k for k in range(3, 17)],
              "sweep_seeds": [0, 1, 2], "sweep_budget_s": 60.0},
}
TRAINER_LABELS = {"sb3": "SB3 PPO (rl-zoo settings, gymnasium CartPole-v1)",
                  "cleanrl": "cleanrl-style (gymnasium CartPoleVectorEnv)", "jax": "jax (PPO fully jitted)"}


@dataclass
class Params:
    preset: str
    data_dir: object
    collectors: list  # the PPO collectors run here (cuda only with a GPU)
    peers: list
    seeds: list
    num_envs: int  # N of the time-to-solve runs
    budget_s: float  # per PPO run
    peer_budget_s: float  # per peer run (SB3 and cleanrl-style are capped: "not solved within X s")
    sweep_collectors: list
    sweep_num_envs: list
    sweep_seeds: list
    sweep_budget_s: float
    settings: PPOSettings = field(default_factory=PPOSettings)
    not_here: dict = field(default_factory=dict)  # collector -> why it cannot run on this machine

    def describe(self) -> str:
        s = self.settings
        return (f"preset **{self.preset}**; collectors {', '.join(self.collectors)}; peers {', '.join(self.peers)}; "
                f"seeds {self.seeds}; N = {self.num_envs}, T = {s.num_steps} for the time to solve; budget "
                f"{self.budget_s:g} s per PPO run, {self.peer_budget_s:g} s per peer run; sweep N = {self.sweep_num_envs} "
                f"({', '.join(self.sweep_collectors)}, seeds {self.sweep_seeds}, {self.sweep_budget_s:g} s each). "
                f"Data: `{os.path.relpath(results.path_for(self.data_dir))}`.")


def _cuda_reason() -> str | None:
    from ..devices import cuda_status

    ok, reason = cuda_status()
    return None if ok else reason


def params(preset=None, data_dir=None, collectors=None, seeds=None, sweep_num_envs=None) -> Params:
    from ..book import resolve_data_dir, resolve_preset

    name = resolve_preset(preset)
    base = dict(PRESETS[name])
    for key, value in (("collectors", collectors), ("seeds", seeds), ("sweep_num_envs", sweep_num_envs)):
        if value is not None:
            base[key] = list(value)
    not_here = {}
    reason = _cuda_reason()
    if reason and "cuda" in base["collectors"]:
        not_here["cuda"] = reason
    base["collectors"] = [c for c in base["collectors"] if c not in not_here]
    base["sweep_collectors"] = [c for c in base["sweep_collectors"] if c not in not_here]
    settings = PPOSettings()
    base["num_envs"] = base["num_envs"] or settings.num_envs
    return Params(preset=name, data_dir=resolve_data_dir(data_dir), settings=settings, not_here=not_here, **base)


def run_or_load(run: TrainRun, data_dir) -> dict:
    """The saved row of ``run`` if there is one, else train it now and save the row."""
    settings = run.settings.as_dict() if not run.is_peer else None
    rows = results.load(data_dir)
    if settings is not None:
        row = results.find(rows, results.row_key(run.collector, run.n, run.seed, {**settings, "num_envs": run.n},
                                                 run.budget_seconds))
        if row is not None:
            return row
    else:  # a peer's settings are its own: match on the rest
        for row in rows:
            if (row["collector"], row["seed"], row["budget_s"]) == (run.collector, run.seed, run.budget_seconds):
                return row
    row = train(run).as_dict()
    results.save_row(data_dir, row)
    return row


def _frame(rows) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    if len(df):
        df["wall_to_solve"] = np.where(df["solved"], df["wall_s"], np.nan)
        df["label"] = df["collector"].map(lambda c: TRAINER_LABELS.get(c, c))
    return df


def solve_runs(P: Params, progress=None) -> pd.DataFrame:
    """Every collector and peer, every seed, at the preset's N and budgets."""
    rows = []
    for c in [*P.collectors, *P.peers]:
        peer = c in PEER_TRAINERS
        for seed in P.seeds:
            run = TrainRun(c, None if peer else P.num_envs, seed=seed, settings=P.settings,
                           max_seconds=P.peer_budget_s if peer else P.budget_s)
            rows.append(run_or_load(run, P.data_dir))
            if progress:
                progress(rows[-1])
    return _frame(rows)


def sweep_runs(P: Params, progress=None) -> pd.DataFrame:
    """The bandwidth-vs-latency sweep: N from small to large at the settings' T."""
    rows = []
    for c in P.sweep_collectors:
        for n in P.sweep_num_envs:
            for seed in P.sweep_seeds:
                run = TrainRun(c, n, seed=seed, settings=P.settings, max_seconds=P.sweep_budget_s)
                rows.append(run_or_load(run, P.data_dir))
                if progress:
                    progress(rows[-1])
    return _frame(rows)


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per trainer (and N): runs, solved, median / min / max time to solve, samples, shares."""
    out = []
    for (collector, n), g in df.groupby(["collector", "num_envs"], sort=False):
        solved = g[g["solved"]]
        wall = solved["wall_s"]
        total = g[["collect_s", "learn_s", "eval_s"]].sum()
        out.append({
            "collector": collector, "num_envs": n, "runs": len(g), "solved": len(solved),
            # the median over all seeds, an unsolved run counting as "more than its budget"
            "median_s": float(np.median(np.where(g["solved"], g["wall_s"], np.inf))),
            "min_s": wall.min() if len(wall) else math.nan, "max_s": wall.max() if len(wall) else math.nan,
            "budget_s": g["budget_s"].max(), "median_samples": float(solved["samples"].median()) if len(solved) else math.nan,
            "median_updates": float(solved["updates"].median()) if len(solved) else math.nan,
            "samples_per_s": float(g["samples_per_s"].median()), "updates_per_s": float(g["updates_per_s"].median()),
            # the largest: a later seed in the same process reuses the compiled program
            "compile_s": float(g["compile_s"].max()), "eval_return": float(g["eval_return"].median()),
            "collect_share": total["collect_s"] / total.sum(), "learn_share": total["learn_s"] / total.sum(),
            "eval_share": total["eval_s"] / total.sum(), "bootstraps_truncation": bool(g["bootstraps_truncation"].all()),
            # per update, over all seeds: what one trajectory costs to collect and to learn from
            "collect_ms_per_update": 1e3 * total["collect_s"] / g["updates"].sum() if g["updates"].sum() else math.nan,
            "learn_ms_per_update": 1e3 * total["learn_s"] / g["updates"].sum() if g["updates"].sum() else math.nan,
        })
    return pd.DataFrame(out)


def curves(df: pd.DataFrame) -> pd.DataFrame:
    """Learning curves, long form: one row per greedy check of every run."""
    rows = []
    for _, r in df.iterrows():
        for wall, samples, updates, greedy, train_mean in r["curve"]:
            rows.append({"collector": r["collector"], "seed": r["seed"], "num_envs": r["num_envs"], "wall_s": wall,
                         "samples": samples, "updates": updates, "greedy_return": greedy})
    return pd.DataFrame(rows)


def fmt_s(median: float, budget: float) -> str:
    """A median time to solve, or 'not solved within X s'."""
    return f"{median:.2f} s" if math.isfinite(median) else f"not solved within {budget:g} s"


def ratio(a: float, b: float, b_budget: float) -> str:
    """How many times faster a is than b; a lower bound when b did not solve within its budget."""
    if not math.isfinite(a):
        return "n/a"
    if math.isfinite(b):
        return f"{b / a:.3g}×"
    return f"> {b_budget / a:.3g}×"
