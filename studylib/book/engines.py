"""The chapter "Fig 2 on real robotics engines" (book/engines.md): the engines' rows, the models'
sizes, and Fig 2 redrawn with CartPole and the chain beside them, in environment steps per second.

    P = book.params("engines", preset=preset)
    rows = book_engines.engine_data(P)            # engines.json: one row per engine, model, N, K
    book_engines.models_table(rows)               # nq, nv, nu, contacts per step, frame skip
    book_engines.fig2_frame(P, rows)              # engines + CartPole + chain, env steps/s vs N

Units: an engine's row counts mj_steps (MuJoCo's steps); one environment step of a gymnasium v5
task is ``frame_skip`` of them, so ``env_steps_per_s`` = samples/s ÷ frame_skip. CartPole's step
is one Euler step (its environment step); the chain's rows already count environment steps
(frame_skip RK4 mj_steps each).
"""

from __future__ import annotations

import pandas as pd

from ..harness import engine_study
from .presets import EnginesParams

MODEL_COLUMNS = ["model", "nq", "nv", "nu", "frame_skip", "contacts", "contacts_per_step", "xml_solver"]


def engine_data(P: EnginesParams) -> pd.DataFrame:
    """The engines' rows (measured here once, then read; another machine's snapshot read only);
    ``attrs["skipped"]``: the (engine, model) pairs that cannot run here, with the reason."""
    items, dropped, unsupported = engine_study.engine_items(P.engines, P.models, P.num_envs, P.steps, P.cap_for,
                                               compiled_models=P.compiled_models,
                                               compiled_num_envs=P.compiled_num_envs, repeats=P.repeats,
                                               min_seconds=P.min_seconds)
    result = engine_study.engine_rows(items, data_dir=P.data_dir, machine=P.machine, log=lambda msg: None)
    df = pd.DataFrame(result.rows)
    if len(df):
        df["env_steps_per_s"] = df["samples_per_s"] / df["frame_skip"]
    skipped = [{"engine": e, "model": m, "reason": why} for e, m, why in unsupported] + list(result.skipped)
    df.attrs.update(skipped=skipped, dropped=dropped, measured=result.measured, reused=result.reused,
                    stale=result.stale)
    return df


def agreement_table(P: EnginesParams) -> pd.DataFrame:
    """Cross-engine agreement (harness.engine_agreement): per model, each engine of the chapter
    that can be given a state (MJX on its compiled models only) against mj_step in float64 after
    1 and 100 steps from the same state and controls (environment 0 of N = MJX's N, one for the
    Python loop); an engine that cannot take part gives its reason."""
    from ..harness.engine_agreement import agreement
    from ..harness.engines import engine_record

    rows, n = [], (P.compiled_num_envs or P.num_envs)[0]  # MJX: the N its measurement compiled
    for model in P.models:
        names = [e for e in P.engines if not (engine_record(e).compiles and model not in P.compiled_models)]
        rows += agreement(model, engines=names, num_envs=n)
    return pd.DataFrame(rows)


def models_table(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per model: its sizes and the contacts MuJoCo C finds per step (measured)."""
    if rows.empty:
        return pd.DataFrame(columns=MODEL_COLUMNS)
    return rows.drop_duplicates("model")[MODEL_COLUMNS].sort_values("nv").reset_index(drop=True)


def best_per_engine(rows: pd.DataFrame) -> pd.DataFrame:
    """Per model and engine: the fastest row (over N and K), in environment steps per second."""
    if rows.empty:
        return rows
    best = rows.loc[rows.groupby(["model", "engine"])["env_steps_per_s"].idxmax()]
    return best[["model", "engine", "paper_row", "num_envs", "steps", "env_steps_per_s", "compile_s"]].reset_index(drop=True)


def fig2_frame(engine_rows: pd.DataFrame, cartpole: pd.DataFrame, chain: pd.DataFrame) -> pd.DataFrame:
    """Fig 2 redrawn: environment steps/s against N, one line per (system, what runs it), K as in
    each source's rows at its largest K: the engines on each model, our CartPole (fig2_cartpole:
    every implementation at the chapter's K) and our chain at n = 2 (the inverted double
    pendulum's size), policy "none" everywhere but CartPole's own rows (theirs say which)."""
    parts = []
    if len(engine_rows):
        e = engine_rows[engine_rows["steps"] == engine_rows.groupby(["engine", "model"])["steps"].transform("max")]
        parts.append(pd.DataFrame({"system": e["model"], "runs_on": e["engine"], "num_envs": e["num_envs"],
                                   "steps": e["steps"], "env_steps_per_s": e["env_steps_per_s"]}))
    if len(cartpole):
        c = cartpole[cartpole["steps"] == cartpole["steps"].max()]
        parts.append(pd.DataFrame({"system": "CartPole (ours)", "runs_on": c["impl"], "num_envs": c["num_envs"],
                                   "steps": c["steps"], "env_steps_per_s": c["samples_per_s"]}))
    if len(chain):
        c = chain[(chain["links"] == 2) & (chain["steps"] == chain["steps"].max())]
        parts.append(pd.DataFrame({"system": "chain n = 2 (ours)", "runs_on": c["impl"], "num_envs": c["num_envs"],
                                   "steps": c["steps"], "env_steps_per_s": c["samples_per_s"]}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def gap_table(fig2: pd.DataFrame) -> pd.DataFrame:
    """Per system: its fastest rate here (over N and what runs it), and CartPole's fastest over it."""
    if fig2.empty:
        return fig2
    best = fig2.loc[fig2.groupby("system")["env_steps_per_s"].idxmax()].set_index("system")
    cart = best["env_steps_per_s"].get("CartPole (ours)")
    best["cartpole_over"] = cart / best["env_steps_per_s"] if cart else float("nan")
    return best.sort_values("env_steps_per_s", ascending=False).reset_index()
