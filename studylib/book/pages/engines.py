"""The chapter "Fig 2 on real robotics engines" (book/engines.md): the engines' rows, the models'
sizes, and Fig 2 redrawn with CartPole and the chain beside them, in environment steps per second.

    P = book.params("engines", preset=preset)
    rows = book_engines.engine_data(P)            # engines.json: one row per engine, model, N, K
    book_engines.models_table(rows)               # nq, nv, nu, contacts per step, frame skip
    book_engines.fig2_frame(P, rows)              # engines + CartPole + chain, env steps/s vs N
    book_engines.answer(P, gap, split, labelled)  # the page's first paragraph: Fig 2's claim, F.1 and F.3 in words

Units: an engine's row counts mj_steps (MuJoCo's steps); one environment step of a gymnasium v5
task is ``frame_skip`` of them, so ``env_steps_per_s`` = samples/s ÷ frame_skip. CartPole's step
is one Euler step (its environment step); the chain's rows already count environment steps
(frame_skip RK4 mj_steps each).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...harness.robotics import engine_predict, engine_study
from .. import answers
from ..presets import EnginesParams
from ..comparisons import fig2_text

MODEL_COLUMNS = ["model", "nq", "nv", "nu", "frame_skip", "contacts", "contacts_per_step", "xml_solver"]


def engine_items(P: EnginesParams):
    """(items, dropped, unsupported) of the chapter's plan (engine_study.engine_items)."""
    return engine_study.engine_items(P.engines, P.models, P.num_envs, P.steps, P.cap_for,
                                     compiled_models=P.compiled_models, compiled_num_envs=P.compiled_num_envs,
                                     compiled_policies=P.compiled_policies,
                                     policies=P.policies, repeats=P.repeats, min_seconds=P.min_seconds)


def engine_predictions(P: EnginesParams, items=None) -> pd.DataFrame:
    """The cost model's predictions of the chapter's items (harness.robotics.engine_predict): saved ones
    read, missing ones predicted and saved first (here; another machine's snapshot is read only)."""
    from ...harness.atari.engines import cores
    from .model import model_machine

    items = engine_items(P)[0] if items is None else items
    machine = None if P.machine else model_machine(P)
    result = engine_predict.predictions(items, machine, cores(), data_dir=P.data_dir, machine_folder=P.machine,
                                        log=lambda msg: None)
    return pd.DataFrame(result.rows)


def engine_data(P: EnginesParams) -> pd.DataFrame:
    """The engines' rows (measured here once, then read; another machine's snapshot read only),
    each item's prediction saved before it is measured; ``attrs["skipped"]``: the (engine, model)
    pairs that cannot run here, with the reason."""
    items, dropped, unsupported = engine_items(P)
    engine_predictions(P, items)  # before any measurement of them (never rewritten)
    result = engine_study.engine_rows(items, data_dir=P.data_dir, machine=P.machine, log=lambda msg: None)
    df = pd.DataFrame(result.rows)
    if len(df):
        df["env_steps_per_s"] = df["samples_per_s"] / df["frame_skip"]
        df = engine_study.with_policy(df)
    skipped = [{"engine": e, "model": m, "reason": why} for e, m, why in unsupported] + list(result.skipped)
    df.attrs.update(skipped=skipped, dropped=dropped, measured=result.measured, reused=result.reused,
                    stale=result.stale)
    return df


def agreement_table(P: EnginesParams) -> pd.DataFrame:
    """Cross-engine agreement (harness.robotics.engine_agreement): per model, each engine of the chapter
    that can be given a state (MJX on its compiled models only) against mj_step in float64 after
    1 and 100 steps from the same state and controls (environment 0 of N = MJX's N, one for the
    Python loop); an engine that cannot take part gives its reason."""
    from ...harness.robotics.engine_agreement import agreement
    from ...harness.robotics.engines import engine_record

    rows, n = [], (P.compiled_num_envs or P.num_envs)[0]  # MJX: the N its measurement compiled
    for model in P.models:
        names = [e for e in P.engines if not (engine_record(e).compiles and model not in P.compiled_models)]
        rows += agreement(model, engines=names, num_envs=n)
    return pd.DataFrame(rows)


def models_table(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per model: its sizes, the contacts per step its rows counted (the median over the
    model's rows: each counts the states its timed regions stepped through, harness.robotics.engines)
    and, where the rows hold it, MuJoCo's own timer of one ``mj_step`` in C (``mj_step_s``, the
    median over the model's rows, each from a 1,000-step run in steady state that the rows of one K
    share within a build; ``mj_step_runs``: the rows)."""
    if rows.empty:
        return pd.DataFrame(columns=MODEL_COLUMNS)
    table = rows.drop_duplicates("model")[MODEL_COLUMNS].set_index("model")
    table["contacts_per_step"] = rows.groupby("model")["contacts_per_step"].median()
    if "mj_step_s" in rows:  # MuJoCo's own timer, once per row: the median over the model's rows
        table["mj_step_s"] = rows.groupby("model")["mj_step_s"].median()
        table["mj_step_runs"] = rows.groupby("model")["mj_step_s"].count()
    return table.reset_index().sort_values("nv").reset_index(drop=True)


def pictured_models(P: EnginesParams, rows: pd.DataFrame) -> list[str]:
    """The models the page measures (its parameters' and any its rows hold), in the models
    table's order (by nv)."""
    from ...harness.robotics import engine_models

    names = list(dict.fromkeys([*P.models, *(rows["model"] if "model" in rows else [])]))
    return sorted(names, key=lambda name: (int(engine_models.load(name).nv), name))


PICTURE_COLUMNS = 4  # panels to a row in the models' picture


def models_picture(names):
    """Each model in ``names`` at its initial pose (``qpos0``: ``mj_resetData``, then
    ``mj_forward``), seen from the side, one panel each at one scale, ``PICTURE_COLUMNS`` to a row
    (an Altair chart; the page titles it). Drawn from the compiled models' geoms
    (``model_pictures``), no renderer."""
    from ...harness.robotics import engine_models
    from ..figures.model_pictures import picture, side_view

    views = pd.concat([side_view(engine_models.load(name)).assign(panel=name) for name in names], ignore_index=True)
    return picture(views, order=list(names), columns=min(len(names), PICTURE_COLUMNS), panel_height=170.0)


def best_per_engine(rows: pd.DataFrame) -> pd.DataFrame:
    """Per model, engine and policy: the fastest row (over N and K), in environment steps per second."""
    if rows.empty:
        return rows
    best = rows.loc[rows.groupby(["model", "engine", "policy"])["env_steps_per_s"].idxmax()]
    return best[["model", "engine", "policy", "paper_row", "num_envs", "steps", "env_steps_per_s",
                 "compile_s"]].reset_index(drop=True)


def policy_cost(rows: pd.DataFrame) -> pd.DataFrame:
    """What the study's MLP costs each engine: per (model, engine), samples/s with the MLP over
    samples/s open loop at the same N and K, the median and the range over the (N, K) both measured;
    ``mlp_share``: the share of a step's time the policy adds (1 - the median ratio)."""
    cols = ["model", "engine", "points", "median", "low", "high", "mlp_share", "obs_width", "flops"]
    if rows.empty or not (rows["policy"] == "mlp").any():
        return pd.DataFrame(columns=cols)
    key = ["model", "engine", "num_envs", "steps"]
    both = rows[rows["policy"] == "none"].merge(rows[rows["policy"] == "mlp"], on=key, suffixes=("", "_mlp"))
    if both.empty:
        return pd.DataFrame(columns=cols)
    both["ratio"] = both["samples_per_s_mlp"] / both["samples_per_s"]
    g = both.groupby(["model", "engine"])
    out = pd.DataFrame({"points": g.size(), "median": g["ratio"].median(), "low": g["ratio"].min(),
                        "high": g["ratio"].max(), "obs_width": g["policy_obs_width_mlp"].first(),
                        "flops": g["policy_flops_per_sample_mlp"].first()}).reset_index()
    out["mlp_share"] = 1 - out["median"]
    return out[cols]


def fig2_frame(engine_rows: pd.DataFrame, cartpole: pd.DataFrame, chain: pd.DataFrame,
               brax: pd.DataFrame | None = None) -> pd.DataFrame:
    """Fig 2 redrawn: environment steps/s against N, one line per (system, what runs it), K as in
    each source's rows at its largest K: the engines on each model, our CartPole (fig2_cartpole:
    every implementation at the chapter's K), our chain at n = 2 (the inverted double
    pendulum's size) and Brax's own models (the CartPole chapter's fig2_brax rows, zero actions;
    one Brax step is one environment step, its frames inside), policy "none" everywhere but
    CartPole's own rows (theirs say which)."""
    parts = []
    if brax is not None and len(brax):
        from .brax import CARTPOLE

        b = brax[brax["env"] != CARTPOLE]  # Brax's harness on our CartPole: the CartPole line already
        parts.append(pd.DataFrame({"system": b["env"] + " (Brax)", "runs_on": "brax · " + b["backend"],
                                   "num_envs": b["num_envs"], "steps": b["steps"],
                                   "env_steps_per_s": b["samples_per_s"]}))
    engine_rows = engine_rows[engine_rows["policy"] == "none"] if len(engine_rows) else engine_rows
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
        parts.append(pd.DataFrame({"system": "chain2 (ours)", "runs_on": c["impl"], "num_envs": c["num_envs"],
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


def prediction_errors(predicted: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """Per measured row with a prediction: predicted and measured samples/s and ``log2_error`` =
    log2(predicted / measured) (0: exact; +1: predicted 2x too fast), the term the model said dominates."""
    cols = [*engine_study.COLUMNS, "predicted", "measured", "log2_error", "dominant"]
    if predicted.empty or rows.empty:
        return pd.DataFrame(columns=cols)
    p = predicted[predicted["predicted_samples_per_s"].notna()]
    p = engine_study.with_policy(p)
    d = p[[*engine_study.COLUMNS, "predicted_samples_per_s", "dominant"]].merge(
        rows[[*engine_study.COLUMNS, "samples_per_s"]], on=list(engine_study.COLUMNS))
    d = d.rename(columns={"predicted_samples_per_s": "predicted", "samples_per_s": "measured"})
    d["log2_error"] = np.log2(d["predicted"] / d["measured"])
    return d[cols]


def error_summary(errors: pd.DataFrame) -> pd.DataFrame:
    """Per engine and policy: points, the median and range of log2 errors, the share within 2x."""
    cols = ["engine", "policy", "points", "median", "low", "high", "within 2x"]
    if errors.empty:
        return pd.DataFrame(columns=cols)
    g = errors.groupby(["engine", "policy"])["log2_error"]
    out = pd.DataFrame({"points": g.size(), "median": g.median(), "low": g.min(), "high": g.max(),
                        "within 2x": g.apply(lambda e: float((e.abs() <= 1).mean()))})
    return out.reset_index()[cols]


def beyond_the_plan(P: EnginesParams, rows: pd.DataFrame) -> pd.DataFrame:
    """The rows this machine's engines file holds beyond the chapter's plan (measured by a rerun
    with other parameters, e.g. MJX at more N or gymnasium's AsyncVectorEnv): current rows only,
    read, never measured; one row per (engine, model, policy, N, K)."""
    from ...errors import ConfigError
    from ...harness.data import store

    try:
        saved = store.load(engine_study.FILE, data_dir=P.data_dir, machine=P.data_machine)
    except ConfigError:
        return pd.DataFrame()
    saved = engine_study.with_policy(saved)
    shown = set(map(tuple, rows[list(engine_study.COLUMNS)].itertuples(index=False))) if len(rows) else set()
    extra = saved[[tuple(r) not in shown for r in saved[list(engine_study.COLUMNS)].itertuples(index=False)]]
    return extra.sort_values(["engine", "model", "policy", "num_envs", "steps"]).reset_index(drop=True)


# The one robotics model the book also implements itself: the engines' "chain2" is the chain chapter's
# n = 2 (InvertedDoublePendulum-v5's cart and two links, without its rail limit; harness.robotics.engine_models).
TWIN_MODEL, TWIN_LINKS = "chain2", 2
SPLIT_COLUMNS = ["impl", "cartpole", "chain", "mujoco", "mujoco_engine", "engine", "model", "gap", "engine_share"]


def _simulation_only(d: pd.DataFrame) -> pd.DataFrame:
    """The rows without a policy, at the paper's CartPole (S = C = 1) where the rows have the knobs."""
    if d is None or d.empty:
        return pd.DataFrame(columns=["impl", "samples_per_s"])
    keep = pd.Series(True, index=d.index)
    for col, value in (("policy", "none"), ("state_factor", 1), ("compute_factor", 1)):
        if col in d:
            keep &= d[col] == value
    return d[keep]


def gap_split(engine_rows: pd.DataFrame, cartpole: pd.DataFrame, chain_rows: pd.DataFrame) -> pd.DataFrame:
    """Fig 2's gap between CartPole and a robotics model taken apart on the one model measured both in
    MuJoCo's engines and in our implementations (``TWIN_MODEL`` = the chain at n = ``TWIN_LINKS``).
    Every system simulation only, in environment steps/s, each at its fastest (N, K). Per
    implementation of ours that ran both CartPole (``cartpole``: any CartPole sweep's rows, e.g.
    fig2_cartpole and fig8 together) and the chain at n = 2 (``chain_rows``):

      engine = the chain in it / the same model in MuJoCo's fastest engine (same model, other engine)
      model  = CartPole in it / the chain in it (same engine, other model)
      gap    = engine × model = CartPole in it / the model in MuJoCo's fastest engine
      engine_share = log(engine) / log(gap): the engine's part of the gap on a log scale (0.5: even)

    Rows sorted by the chain's rate, fastest first (the first: our fastest implementation of the
    model). Empty where MuJoCo's engines, the chain or CartPole have no such row."""
    e = engine_rows[(engine_rows["model"] == TWIN_MODEL) & (engine_rows["policy"] == "none")] \
        if len(engine_rows) and {"model", "policy"} <= set(engine_rows.columns) else pd.DataFrame()
    chain = _simulation_only(chain_rows)
    chain = chain[chain["links"] == TWIN_LINKS] if "links" in chain else chain.iloc[0:0]
    cart = _simulation_only(cartpole)
    if e.empty or chain.empty or cart.empty:
        return pd.DataFrame(columns=SPLIT_COLUMNS)
    top = e.loc[e["env_steps_per_s"].idxmax()]
    both = pd.DataFrame({"cartpole": cart.groupby("impl")["samples_per_s"].max(),
                         "chain": chain.groupby("impl")["samples_per_s"].max()}).dropna()
    both["mujoco"], both["mujoco_engine"] = float(top["env_steps_per_s"]), top["engine"]
    both["engine"] = both["chain"] / both["mujoco"]
    both["model"] = both["cartpole"] / both["chain"]
    both["gap"] = both["engine"] * both["model"]
    both["engine_share"] = np.log(both["engine"]) / np.log(both["gap"])
    return both.rename_axis("impl").reset_index().sort_values("chain", ascending=False,
                                                                 ignore_index=True)[SPLIT_COLUMNS]


def answer(P: EnginesParams, gap: pd.DataFrame, split: pd.DataFrame, labelled) -> str:
    """The chapter's first paragraph: is CartPole representative of the robotics engines RL uses?
    Fig 2's claim in this machine's numbers and the gap taken apart (``comparisons.fig2_text``, as the
    introduction states it, with the verdict its "similar" gives, without the other
    implementations' split), then how the paper's F.1 and F.3 fare on the engines
    (``claims_engines.labelled_findings``), counted per verdict."""
    text = fig2_text(gap, split, answers.where(P), link=False, others=False, verdict=True)
    if not labelled:
        return text + " F.1 and F.3 were not measured on the engines in this build."
    return (text + f" The paper's F.1 and F.3, each judged on the engines by CartPole's rule once per model and policy, "
            f"give {answers.counts_text([f for _, f in labelled])} (each with its numbers in the section on them below).")
