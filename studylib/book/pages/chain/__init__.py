"""The chapter "Beyond CartPole: an articulated robot" (book/chain.md): the n-link chain's points,
the cost model's predictions saved before the measurements, the measurements, and the tables the
page shows; the §7 comparison with XLA, F.4's gains, XLA's formulations and the page's answer are
``fusion.py``'s, read from here. The findings on it are claims_chain.py's.

    P = book.params("chain", preset=preset)
    predicted, measured = book.chain_data(P)     # chain_predictions.json, then chain.json
    book.chain_table(measured)                  # samples/s per implementation, n, N, K
    book.prediction_errors(predicted, measured)  # log2(predicted / measured) per point
    model_check.version_summary(...)             # the model's errors per version (model_check.py)
    chain.answer(P, labelled)                    # the page's first paragraph: claims_chain's verdicts in words
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .... import sims
from ....harness.robotics import chain_study
from ....implspec import book_order, spec
from ...plans import _measured, capped_points
from ...presets import CHAIN_SNAPSHOT_LINKS, ChainParams

KEY = ["impl", "policy", "links", "num_envs", "steps"]


def chain_points(P: ChainParams, policies=None):
    """(points, dropped): the chain's points under each of ``policies`` (None: the chapter's
    ``P.policies``) for the chapter's implementations whose records implement it, every n × N × K
    whose work per call N·K is within the cap."""
    from ...claims.chain import fused_impl

    record = sims.sim(chain_study.SIM)
    impls = [i for i in P.impls if spec(i).implements(chain_study.SIM)]
    points, dropped = [], []
    for policy in P.policies if policies is None else policies:
        fused = fused_impl(policy)  # the policy's manual fusion (the MLP's: fused, not a paper row)
        p, d = capped_points(P, book_order(impls + [fused] if fused and fused not in impls else impls), policy,
                             sim=chain_study.SIM,
                             params=[record.params_of({"links": n}) for n in P.links])
        points += p
        dropped += [x for x in d if x not in dropped]
    return points, dropped


def chain_predictions(P: ChainParams, points=None) -> pd.DataFrame:
    """The cost model's predictions of the chapter's points: saved ones read, missing ones predicted
    and saved first (here; another machine's snapshot is read only)."""
    from ..model import model_machine

    points = chain_points(P)[0] if points is None else points
    machine = None if P.machine else model_machine(P)
    result = chain_study.predictions(points, machine, data_dir=P.data_dir, machine_folder=P.machine,
                                     log=lambda msg: None)
    return pd.DataFrame(result.rows)


def chain_data(P: ChainParams) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(predictions, measurements): the predictions of every point first, then the measurements;
    the same grid's rows under the policies the chapter does not measure (``saved_beyond_plan``) are
    read besides, with their saved predictions."""
    points, dropped = chain_points(P)
    predicted = chain_predictions(P, points)
    measured = _measured(chain_study.MEASUREMENTS, P, points, dropped)
    more_predicted, more = saved_beyond_plan(P)
    if len(more):
        attrs = measured.attrs
        measured = pd.concat([measured, more], ignore_index=True)
        measured.attrs.update(attrs)
        predicted = pd.concat([predicted, more_predicted], ignore_index=True)
    measured.attrs["beyond_plan"] = len(more)  # rows read beside the plan's (other n, other policies)
    return predicted, measured


SNAPSHOT_LINKS = CHAIN_SNAPSHOT_LINKS  # the n a committed snapshot may hold beyond the plan (presets)
# MuJoCo's engines a snapshot may hold on the chain (MJX: a compile per point; mjx-unfused: the
# same without XLA's fusion pass, MJX's faster program from n = 6 on here)
SNAPSHOT_ENGINES = ("mujoco-rollout", "mjx", "mjx-unfused")


def widened(P: ChainParams) -> ChainParams:
    """The chapter's parameters widened to the n (``SNAPSHOT_LINKS``), policies
    (``settings.POLICIES``) and MuJoCo engines (``SNAPSHOT_ENGINES``) a wider run may have saved."""
    from dataclasses import replace

    from ....settings import POLICIES

    return replace(P, links=tuple(sorted(set(P.links) | set(SNAPSHOT_LINKS))),
                   policies=tuple(dict.fromkeys(("none", *POLICIES))),
                   engines=tuple(dict.fromkeys((*P.engines, *SNAPSHOT_ENGINES))))


def beyond_plan(P: ChainParams):
    """The chapter's N and K grid at the n, policies and engines its plan does not measure: (the
    chapter's parameters ``widened`` to them, the points of the wider grid that are not the plan's)."""
    from ....harness.sweep import POINTS

    wide = widened(P)
    planned = {POINTS.row_key(POINTS.columns(x)) for x in chain_points(P)[0]}
    return wide, [x for x in chain_points(wide)[0] if POINTS.row_key(POINTS.columns(x)) not in planned]


def saved_rows(P: ChainParams, points) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(predictions, measurements) of ``points`` as saved in the machine's data files, the
    measurements with the machine that made them; read, never measured, never predicted here
    (two empty frames where none of the points was measured)."""
    from ....harness.sweep import POINTS, read_saved

    folder = P.data_machine
    saved = read_saved(chain_study.MEASUREMENTS, points, POINTS, data_dir=P.data_dir, machine=folder)
    measured = pd.DataFrame(saved.rows)
    if measured.empty:
        return pd.DataFrame(), pd.DataFrame()
    measured["machine"] = saved.machines
    forecast = read_saved(chain_study.PREDICTIONS, points, chain_study.KEYING, data_dir=P.data_dir, machine=folder)
    return pd.DataFrame(forecast.rows), measured


def saved_beyond_plan(P: ChainParams) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(predictions, measurements) of the grid's points beyond the plan (``beyond_plan``: other n,
    other policies) as saved in the machine's data files (a wider run's, e.g. a committed
    snapshot's): ``saved_rows``."""
    return saved_rows(P, beyond_plan(P)[1])


ENGINES_FILE = "chain_engines"  # MuJoCo's engines on the chain, apart from the engines chapter's rows


def chain_engine_data(P: ChainParams) -> pd.DataFrame:
    """MuJoCo's engines (``P.engines``: mujoco.rollout on every core, MJX) on the chain's own MJCF at
    every n and N of the chapter at its largest K, simulation only (uniform random controls), K counted in
    environment steps as our rows are: a call of K environment steps is K × frame_skip mj_steps.
    Columns of ``engines.measure_engine`` plus ``links``, ``env_steps`` (K in environment steps)
    and ``env_steps_per_s`` (mj_steps/s over the frame skip). Measured here once, then read;
    another machine's snapshot read only. N·K within the chapter's "*" cap (in environment steps)."""
    from ....harness.robotics import engine_study
    from ....harness.sweep import read_saved, run

    items = chain_engine_items(P)
    result = run(ENGINES_FILE, items, engine_study.measure_item, engine_study.KEYING, data_dir=P.data_dir,
                 progress=False, log=lambda msg: None, machine=P.machine)
    wider = [i for i in chain_engine_items(widened(P)) if i not in items]  # other n: read where saved
    more = read_saved(ENGINES_FILE, wider, engine_study.KEYING, data_dir=P.data_dir, machine=P.data_machine)
    df = pd.DataFrame(result.rows + more.rows)
    if len(df):
        df["links"] = df["model"].str.removeprefix("chain").astype(int)
        df["env_steps"] = df["steps"] // df["frame_skip"]
        df["env_steps_per_s"] = df["samples_per_s"] / df["frame_skip"]
    unsaved: dict[str, set] = {}  # the wider grid's (engine, n) with no row in the machine's file
    for s in more.skipped:
        unsaved.setdefault(s["engine"], set()).add(int(s["model"].removeprefix("chain")))
    df.attrs.update(skipped=list(result.skipped), measured=result.measured, reused=result.reused,
                    unsaved={engine: sorted(ns) for engine, ns in unsaved.items()})
    return df


def unsaved_engines_text(engines: pd.DataFrame) -> str:
    """Which of MuJoCo's engines the machine's data lack at which n of the wider grid
    (``chain_engine_data``'s ``unsaved``), as a sentence; "" when none is missing."""
    unsaved = engines.attrs.get("unsaved") or {}
    if not unsaved:
        return ""
    return ("Not in this machine's data (no row at the chapter's N and K): "
            + "; ".join(f"`{e}` at n = {', '.join(map(str, ns))}" for e, ns in unsaved.items()) + ".")


def mjx_programs_text(engines: pd.DataFrame) -> str:
    """An engine's two XLA programs (its record's ``unfused_of``: MJX's default and without the
    "fusion" pass) where the data hold both at one (n, N, K): per n, the median over N and K of
    the unfused program's rate over the default's, as a sentence; "" where no point has both."""
    from ....harness.robotics.engines import ENGINES
    from ...format import fmt_x

    if engines.empty:
        return ""
    rates = engines.pivot_table(index=["links", "num_envs", "env_steps"], columns="engine", values="env_steps_per_s")
    sentences = []
    for unfused, default in ((e.name, e.unfused_of) for e in ENGINES.values() if e.unfused_of):
        if not {unfused, default} <= set(rates.columns):
            continue
        ratio = (rates[unfused] / rates[default]).dropna().groupby(level="links").median()
        if len(ratio):
            sentences.append(f"`{unfused}` over `{default}` (median over N and K): "
                             + ", ".join(f"n = {n}: {fmt_x(v)}" for n, v in ratio.items()) + ".")
    return " ".join(sentences)


def chain_engine_items(P: ChainParams) -> list:
    """``chain_engine_data``'s items: every engine, n and N of the chapter at its largest K (the K of
    the §7 comparison, cpp against jax) in environment steps, N·K within the chapter's "*" cap, n
    where the engine's record plans it (``not_planned``: MJX's default program to n = 4)."""
    from ....harness.robotics import engine_study
    from ....harness.robotics.engines import engine_record

    cap, k = P.cap_for("*"), max(P.steps)
    return [engine_study.EngineItem(engine, f"chain{n}", num, k * sims.sim(chain_study.SIM).params_of(
                {"links": n}).frame_skip)
            for engine in P.engines for n in P.links for num in P.num_envs
            if num * k <= cap and engine_record(engine).not_planned(f"chain{n}") is None]


# the page's agreement check: one environment step of CHECK_ENVS chains from v5's reset draws
CHECK_ENVS = 16


def _relative_error(a, b) -> float:
    """max |a − b| / max(|b|, 1) (relative where |b| > 1, absolute near zero, as the tests)."""
    return float((np.abs(np.asarray(a, np.float64) - b) / np.maximum(np.abs(b), 1.0)).max())


def _start(links: int, num_envs: int, seed: int):
    """(params, float64 states, float64 controls): v5's reset draws of episode 0 and the
    no-policy controls of the first step, the hashed ones every implementation draws."""
    from ....sims import chain
    from ....sims.chain import episode

    p = chain.ChainParams(links=links)
    env, zero = np.arange(num_envs, dtype=np.uint32), np.zeros(num_envs, np.uint32)
    states = episode.reset_states(seed, env, zero, p).astype(np.float64)
    return p, states, episode.hash_controls(seed, env, zero, zero).astype(np.float64)


def mujoco_agreement(links: int, num_envs: int = CHECK_ENVS, seed: int = 0) -> float:
    """The float64 reference against MuJoCo's own mj_step on ``chain_mjcf(links)``: one environment
    step (frame_skip mj_steps) from ``num_envs`` reset draws with the hashed controls."""
    import mujoco

    from ....sims import chain
    from ....sims.chain.model import chain_mjcf

    p, states, ctrl = _start(links, num_envs, seed)
    m = mujoco.MjModel.from_xml_string(chain_mjcf(links))
    d = mujoco.MjData(m)
    ours = chain.physics_step(states, ctrl, p, steps=p.frame_skip)
    n1, theirs = links + 1, np.empty_like(states)
    for i in range(num_envs):
        mujoco.mj_resetData(m, d)
        d.qpos[:], d.qvel[:], d.ctrl[0] = states[i, :n1], states[i, n1:], ctrl[i]
        for _ in range(p.frame_skip):
            mujoco.mj_step(m, d)
        theirs[i] = np.concatenate([d.qpos, d.qvel])
    return _relative_error(ours, theirs)


def conformance(P: ChainParams) -> pd.DataFrame:
    """Per n: the reference against MuJoCo (one step), and each implementation's environment step
    (``set_state`` at v5's reset draws, then ``step`` with the hashed controls: its observation
    and reward) against the float64 reference's (``studylib.sims.chain.dynamics.env_step``):
    float32 implementations within float32 rounding of frame_skip RK4 steps; gym steps MuJoCo."""
    from ....envs.registry import make
    from ....sims import chain

    rows = []
    for n in P.links:
        params = sims.sim(chain_study.SIM).params_of({"links": n})
        p, states, ctrl = _start(n, CHECK_ENVS, 0)
        _, ref_obs, ref_reward, _ = chain.env_step(states, ctrl, p)
        row = {"links": n, "reference vs MuJoCo": mujoco_agreement(n)}
        for impl in [i for i in P.impls if spec(i).implements(chain_study.SIM)]:
            env = make(impl, CHECK_ENVS, sim=chain_study.SIM, params=params)
            env.set_state(states)
            _, reward, _, _ = env.step(ctrl.astype(np.float32))
            row[impl] = max(_relative_error(env.final_obs(), ref_obs), _relative_error(reward, ref_reward))
        rows.append(row)
    return pd.DataFrame(rows)


PICTURE_LINKS = (1, 2, 4)  # the chains drawn atop the chapter


def first_episode(links: int, seed: int = 0) -> np.ndarray:
    """(T, n+1) qpos of environment 0's first episode without a policy: v5's reset draw, then one
    row per environment step (the float64 reference, the hashed controls every implementation
    draws) up to and including the step that ends it (the tip below n L / 1.2; at most the
    episode's time limit)."""
    p, state, _ = _start(links, 1, seed)
    from ....sims import chain
    from ....sims.chain import episode

    env, zero = np.zeros(1, np.uint32), np.zeros(1, np.uint32)
    poses = [state[0, :links + 1]]
    for t in range(p.max_episode_steps):
        ctrl = episode.hash_controls(seed, env, zero, np.full(1, t, np.uint32)).astype(np.float64)
        state, _, _, terminated = chain.env_step(state, ctrl, p)
        poses.append(state[0, :links + 1])
        if terminated[0]:
            break
    return np.array(poses)


def chain_views(links=PICTURE_LINKS, seed: int = 0) -> pd.DataFrame:
    """``model_pictures.side_view`` of ``chain_mjcf(n)`` at three poses of ``first_episode(n)``,
    for each n in ``links``: the reset draw (faint), the pose halfway through and the last one
    (opaque), with a ``panel`` column ("n = 4"), ``pose`` (the environment step) and ``opacity``;
    the rail is drawn once."""
    import mujoco

    from ....sims.chain.model import chain_mjcf
    from ...figures.model_pictures import side_view

    frames = []
    for n in links:
        m = mujoco.MjModel.from_xml_string(chain_mjcf(n))
        poses = first_episode(n, seed)
        last = len(poses) - 1
        for step, opacity in ((0, 0.2), (last // 2, 0.45), (last, 1.0)):
            v = side_view(m, poses[step])
            if step < last:
                v = v[v["geom"] != "rail"]
            frames.append(v.assign(panel=f"n = {n}", pose=step, opacity=opacity))
    return pd.concat(frames, ignore_index=True)


def chain_picture(links=PICTURE_LINKS, seed: int = 0):
    """The chains of ``links`` links falling through their first episode (``chain_views``), side
    by side at one scale (an Altair chart; the page titles it)."""
    from ...figures.model_pictures import picture

    return picture(chain_views(links, seed), order=[f"n = {n}" for n in links], panel_height=200.0)


def chain_table(measured: pd.DataFrame) -> pd.DataFrame:
    """Samples/s per (n, N, K) row, one column per implementation (the book's order)."""
    if measured.empty:
        return pd.DataFrame()
    t = measured.pivot_table(index=["links", "num_envs", "steps"], columns="impl", values="samples_per_s")
    return t[[i for i in book_order(t.columns)]]


def prediction_errors(predicted: pd.DataFrame, measured: pd.DataFrame) -> pd.DataFrame:
    """Per measured point: predicted and measured samples/s, ``log2_error`` = log2(predicted /
    measured) (0: exact; ±1: a factor of 2), the regime the model named."""
    if predicted.empty or measured.empty:
        return pd.DataFrame(columns=[*KEY, "predicted", "measured", "log2_error", "regime"])
    p = predicted[[*KEY, "predicted_samples_per_s", "regime"]].rename(columns={"predicted_samples_per_s": "predicted"})
    m = measured[KEY + ["samples_per_s"]].rename(columns={"samples_per_s": "measured"})
    d = p.merge(m, on=KEY)
    d["log2_error"] = np.log2(d["predicted"] / d["measured"])
    return d


# The §7 comparison, MuJoCo's engines beside ours, F.4, XLA's formulations and the page's answer
# (chain/fusion.py), read from here
from .fusion import (  # noqa: F401, I001
    MATERIAL, answer, engines_beside_ours, formulation_data, formulation_sentence, formulation_table, fused_and_xla,
    fused_over_best_formulation, fusion_answer, fusion_conclusion,
    fused_over_xla, fusion_gains, no_policy, saved_fma_ceiling, work_per_step,
)
