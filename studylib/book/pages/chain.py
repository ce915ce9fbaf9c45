"""The chapter "Beyond CartPole: an articulated robot" (book/chain.md): the n-link chain's points,
the cost model's predictions saved before the measurements, the measurements, and the tables the
page shows. The findings on it are claims_chain.py's.

    P = book.params("chain", preset=preset)
    predicted, measured = book.chain_data(P)     # chain_predictions.json, then chain.json
    book.chain_table(measured)                  # samples/s per implementation, n, N, K
    book.prediction_errors(predicted, measured)  # log2(predicted / measured) per point
    chain.answer(P, labelled)                    # the page's first paragraph: claims_chain's verdicts in words
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ... import sims
from ...harness.robotics import chain_study
from ...implspec import book_order, spec
from .. import answers
from ..comparisons import Labelled, comparisons_text
from ..plans import _measured, capped_points
from ..presets import ChainParams

KEY = ["impl", "policy", "links", "num_envs", "steps"]


def chain_points(P: ChainParams, policies=None):
    """(points, dropped): the chain's points under each of ``policies`` (None: the chapter's
    ``P.policies``) for the chapter's implementations whose records implement it, every n × N × K
    whose work per call N·K is within the cap."""
    record = sims.sim(chain_study.SIM)
    impls = [i for i in P.impls if spec(i).implements(chain_study.SIM)]
    points, dropped = [], []
    for policy in P.policies if policies is None else policies:
        fused = fused_and_xla(policy)[0]  # the policy's manual fusion (the MLP's: fused, not a paper row)
        p, d = capped_points(P, book_order(impls + [fused] if fused and fused not in impls else impls), policy,
                             sim=chain_study.SIM,
                             params=[record.params_of({"links": n}) for n in P.links])
        points += p
        dropped += [x for x in d if x not in dropped]
    return points, dropped


def chain_predictions(P: ChainParams, points=None) -> pd.DataFrame:
    """The cost model's predictions of the chapter's points: saved ones read, missing ones predicted
    and saved first (here; another machine's snapshot is read only)."""
    from .model import model_machine

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


# The n a committed snapshot may hold beyond the preset's plan (the chapter reads them where saved):
# 1 to 8 the unrolled C builds, 16 and 32 the run-time-n build and the shorter timesteps
SNAPSHOT_LINKS = (1, 2, 4, 8, 16, 32)
SNAPSHOT_ENGINES = ("mujoco-rollout", "mjx")  # MuJoCo's engines a snapshot may hold on the chain (MJX: a compile per point)


def beyond_plan(P: ChainParams):
    """The chapter's N and K grid at the n (``SNAPSHOT_LINKS``), policies (``settings.POLICIES``) and
    MuJoCo engines (``SNAPSHOT_ENGINES``) its plan does not measure: (the chapter's parameters
    widened to them, the points of the wider grid that are not the plan's)."""
    from dataclasses import replace

    from ...harness.sweep import POINTS
    from ...settings import POLICIES

    wide = replace(P, links=tuple(sorted(set(P.links) | set(SNAPSHOT_LINKS))), policies=tuple(dict.fromkeys(("none", *POLICIES))),
                   engines=tuple(dict.fromkeys((*P.engines, *SNAPSHOT_ENGINES))))
    planned = {POINTS.row_key(POINTS.columns(x)) for x in chain_points(P)[0]}
    return wide, [x for x in chain_points(wide)[0] if POINTS.row_key(POINTS.columns(x)) not in planned]


def saved_beyond_plan(P: ChainParams) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(predictions, measurements) of the grid's points beyond the plan (``beyond_plan``: other n,
    other policies) as saved in the machine's data files (a wider run's, e.g. a committed
    snapshot's): read, never measured, never predicted here."""
    from ...harness.data.provenance import machine_key
    from ...harness.sweep import POINTS, read_saved

    points = beyond_plan(P)[1]
    folder = P.machine or machine_key()
    saved = read_saved(chain_study.MEASUREMENTS, points, POINTS, data_dir=P.data_dir, machine=folder)
    measured = pd.DataFrame(saved.rows)
    if measured.empty:
        return pd.DataFrame(), pd.DataFrame()
    measured["machine"] = saved.machines
    forecast = read_saved(chain_study.PREDICTIONS, points, chain_study.KEYING, data_dir=P.data_dir, machine=folder)
    return pd.DataFrame(forecast.rows), measured


ENGINES_FILE = "chain_engines"  # MuJoCo's engines on the chain, apart from the engines chapter's rows


def chain_engine_data(P: ChainParams) -> pd.DataFrame:
    """MuJoCo's engines (``P.engines``: mujoco.rollout on every core, MJX) on the chain's own MJCF at
    every n and N of the chapter at its largest K, simulation only (uniform random controls), K counted in
    environment steps as our rows are: a call of K environment steps is K × frame_skip mj_steps.
    Columns of ``engines.measure_engine`` plus ``links``, ``env_steps`` (K in environment steps)
    and ``env_steps_per_s`` (mj_steps/s over the frame skip). Measured here once, then read;
    another machine's snapshot read only. N·K within the chapter's "*" cap (in environment steps)."""
    from ...harness.data.provenance import machine_key
    from ...harness.robotics import engine_study
    from ...harness.sweep import read_saved, run

    items = chain_engine_items(P)
    result = run(ENGINES_FILE, items, engine_study.measure_item, engine_study.KEYING, data_dir=P.data_dir,
                 progress=False, log=lambda msg: None, machine=P.machine)
    wider = [i for i in chain_engine_items(beyond_plan(P)[0]) if i not in items]  # other n: read where saved
    more = read_saved(ENGINES_FILE, wider, engine_study.KEYING, data_dir=P.data_dir, machine=P.machine or machine_key())
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


def chain_engine_items(P: ChainParams) -> list:
    """``chain_engine_data``'s items: every engine, n and N of the chapter at its largest K (the K of
    the §7 comparison, cpp against jax) in environment steps, N·K within the chapter's "*" cap."""
    from ...harness.robotics import engine_study

    cap, k = P.cap_for("*"), max(P.steps)
    return [engine_study.EngineItem(engine, f"chain{n}", num, k * sims.sim(chain_study.SIM).params_of(
                {"links": n}).frame_skip)
            for engine in P.engines for n in P.links for num in P.num_envs if num * k <= cap]


def engines_beside_ours(measured: pd.DataFrame, engines: pd.DataFrame) -> pd.DataFrame:
    """Per (n, N, K) measured by both: each MuJoCo engine's environment steps/s on the chain beside
    our fused implementation's (cpp) and XLA's (jax), and cpp over the engine: the same model in a
    general engine and in code written for it."""
    fused, xla = fused_and_xla()
    measured = no_policy(measured)
    if engines.empty or measured.empty:
        return pd.DataFrame()
    ours = measured[measured["impl"].isin([fused, xla])].pivot_table(
        index=["links", "num_envs", "steps"], columns="impl", values="samples_per_s")
    out = engines.rename(columns={"env_steps": "k"}).merge(
        ours.reset_index().rename(columns={"steps": "k"}), on=["links", "num_envs", "k"])
    out["fused_over_engine"] = out[fused] / out["env_steps_per_s"] if fused in out else np.nan
    cols = ["links", "num_envs", "k", "engine", "env_steps_per_s", *[c for c in (fused, xla) if c in out],
            "fused_over_engine", "frame_skip", "compile_s"]
    return out[cols].sort_values(["links", "num_envs", "k", "engine"]).reset_index(drop=True)


# the page's agreement check: one environment step of CHECK_ENVS chains from v5's reset draws
CHECK_ENVS = 16


def _relative_error(a, b) -> float:
    """max |a − b| / max(|b|, 1) (relative where |b| > 1, absolute near zero, as the tests)."""
    return float((np.abs(np.asarray(a, np.float64) - b) / np.maximum(np.abs(b), 1.0)).max())


def _start(links: int, num_envs: int, seed: int):
    """(params, float64 states, float64 controls): v5's reset draws of episode 0 and the
    no-policy controls of the first step, the hashed ones every implementation draws."""
    from ...sims import chain
    from ...sims.chain import episode

    p = chain.ChainParams(links=links)
    env, zero = np.arange(num_envs, dtype=np.uint32), np.zeros(num_envs, np.uint32)
    states = episode.reset_states(seed, env, zero, p).astype(np.float64)
    return p, states, episode.hash_controls(seed, env, zero, zero).astype(np.float64)


def mujoco_agreement(links: int, num_envs: int = CHECK_ENVS, seed: int = 0) -> float:
    """The float64 reference against MuJoCo's own mj_step on ``chain_mjcf(links)``: one environment
    step (frame_skip mj_steps) from ``num_envs`` reset draws with the hashed controls."""
    import mujoco

    from ...sims import chain
    from ...sims.chain.model import chain_mjcf

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
    from ...envs.registry import make
    from ...sims import chain

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
    from ...sims import chain
    from ...sims.chain import episode

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

    from ...sims.chain.model import chain_mjcf
    from ..figures.model_pictures import side_view

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
    from ..figures.model_pictures import picture

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


def error_summary(errors: pd.DataFrame) -> pd.DataFrame:
    """Per implementation: points, the median and the range of log2 errors, and the share of
    points the model got within a factor of 2 (|log2 error| ≤ 1)."""
    if errors.empty:
        return pd.DataFrame(columns=["impl", "points", "median", "low", "high", "within 2x"])
    g = errors.groupby("impl")["log2_error"]
    out = pd.DataFrame({"points": g.size(), "median": g.median(), "low": g.min(), "high": g.max(),
                        "within 2x": g.apply(lambda e: float((e.abs() <= 1).mean()))})
    return out.loc[book_order(out.index)].reset_index()


def work_per_step(links: int) -> dict:
    """The chain's counted work per environment step at n = ``links`` (its record's, with the
    timestep rule's frame_skip): flops_per_step, transcendentals_per_step, bytes_per_step."""
    return chain_study.work(sims.sim(chain_study.SIM).params_of({"links": links}))


def fusion_gains(measured: pd.DataFrame, kmax: int) -> pd.DataFrame:
    """F.4's numbers per policy and n: the policy's fused implementation (``fused_and_xla``), the
    counted flops per step (the MLP's with it) and bytes per unfused step, their ratio
    (``claims_chain.flops_per_byte``, F.4's axis) and the fused speedup K = 1 -> ``kmax``, median
    over N (``claims_chain.fusion_gain_by_n``, the values ``compute_bound_row`` judges)."""
    from ..claims.chain import (
        POLICY_TAGS,
        flops_per_byte,
        flops_per_step,
        fusion_gain_by_n,
    )

    rows = []
    for policy in POLICY_TAGS:  # without a policy first
        fused = fused_and_xla(policy)[0]
        d = measured[measured["policy"] == policy] if len(measured) else measured
        for n, gain in sorted(fusion_gain_by_n(d, kmax, policy).items()):
            rows.append({"policy": policy, "links": n, "impl": fused, "flops": flops_per_step(n, policy),
                         "bytes": work_per_step(n)["bytes_per_step"], "flops_per_byte": flops_per_byte(n, policy),
                         "steps": kmax, "gain": gain})
    return pd.DataFrame(rows)


def no_policy(measured: pd.DataFrame) -> pd.DataFrame:
    """The rows without a policy (the hashed controls): the physics comparisons' (the §7 table,
    MuJoCo's engines, which run open-loop, F.4's fusion gain)."""
    return measured[measured["policy"] == "none"] if len(measured) else measured


def fused_and_xla(policy: str = "none") -> tuple[str | None, str | None]:
    """The chain's fused implementation under ``policy`` (a native call of K steps with the policy
    inside: cpp without one, fused with the MLP) and its XLA one, from their records
    (``claims_chain.fused_impl``, ``xla_impl``)."""
    from ..claims.chain import fused_impl, xla_impl

    return fused_impl(policy), xla_impl()


def fused_over_xla(measured: pd.DataFrame, fma_flops_per_s: float | None = None) -> pd.DataFrame:
    """The paper's §7 question ("how manual kernel fusion compares to the kernels produced by
    XLA"), per policy and n: at the largest K both ran (one K per (policy, n), as F.3's "at K = max"
    row: a median mixing K would be another quantity), and per N measured for both at it, the
    policy's fused implementation (``fused_and_xla``: cpp, one C kernel fusing K steps, without a
    policy; fused, simulation and MLP in one kernel, with it) over the XLA one (jax: lax.scan over K
    steps), with the fused one's achieved GFLOP/s on counted flops (the chain's, the MLP's forward
    pass too under it) and, given the machine's ``fma_flops_per_s``, their share of that ceiling.
    Columns ``fused`` and ``xla`` hold the rates, ``fused_impl`` the name; ``attrs``: the names
    without a policy."""
    from ..claims.chain import flops_per_step

    rows = []
    for (policy, n), d in measured.groupby(["policy", "links"]) if len(measured) else []:
        fused, xla = fused_and_xla(policy)
        both = set(d[d["impl"] == fused]["steps"]) & set(d[d["impl"] == xla]["steps"])
        if not both:
            continue
        k, flops = max(both), flops_per_step(int(n), policy)
        for num, g in d[d["steps"] == k].groupby("num_envs"):
            at = g.groupby("impl")["samples_per_s"].median()
            if fused not in at or xla not in at:
                continue
            rows.append({"policy": policy, "links": int(n), "num_envs": int(num), "steps": int(k), "fused_impl": fused,
                         "fused": at[fused], "xla": at[xla], "fused_over_xla": at[fused] / at[xla],
                         "fused_gflop_per_s": at[fused] * flops / 1e9,
                         "fma_share": at[fused] * flops / fma_flops_per_s if fma_flops_per_s else np.nan})
    out = pd.DataFrame(rows)
    if len(out):
        out = out.sort_values(["policy", "links", "num_envs"], key=lambda c: c.map({"none": 0, "mlp": 1})
                              if c.name == "policy" else c, ignore_index=True)
    out.attrs.update(zip(("fused", "xla"), fused_and_xla("none")))
    return out


def saved_fma_ceiling(P: ChainParams) -> float | None:
    """The FMA ceiling (flops/s) the machine's data folder saved (the roofline's measurement; None
    where it has none): read, never measured, so that another machine's snapshot is priced by its
    own ceiling."""
    from ...harness.data import store
    from ...harness.data.provenance import machine_key
    from ...harness.model.roofline import saved_ceilings

    try:
        return saved_ceilings(store.machine_folder(P.data_dir, P.machine or machine_key())).get("fma_flops_per_s")
    except store.DataDirError:
        return None


def formulation_data(P: ChainParams) -> pd.DataFrame:
    """XLA's formulations of the chain (``P.formulations`` at ``P.formulation_links``, N and K of
    the parameters: harness.robotics.chain_formulations), measured here once, then read; another
    machine's snapshot read only. Adds ``xla_over_counted`` (XLA's flops per environment step
    over the study's count, where XLA counted the whole program)."""
    from ...harness.robotics import chain_formulations as cf

    items = cf.formulation_items(P.formulations, P.formulation_links, P.formulation_num_envs, P.formulation_steps,
                                 repeats=P.repeats, min_seconds=P.min_seconds)
    result = cf.formulation_rows(items, data_dir=P.data_dir, machine=P.machine)
    df = pd.DataFrame(result.rows)
    if len(df):
        df["xla_over_counted"] = df["xla_flops"].astype(float) / df["counted_flops"]
        df = df.sort_values(["links", "env_steps_per_s"], ascending=[True, False]).reset_index(drop=True)
    df.attrs.update(skipped=list(result.skipped), measured=result.measured, reused=result.reused)
    return df


def formulation_table(df: pd.DataFrame) -> pd.DataFrame:
    """The page's table: per n and formulation, env steps/s, its share of the fastest, compile
    seconds, XLA's flops and transcendentals per environment step beside the counted ones ("—"
    where the program has loops inside the scan: XLA counts a loop body once), whether the jax
    implementation runs it."""
    if df.empty:
        return df
    out = df.assign(of_best=df["env_steps_per_s"] / df.groupby("links")["env_steps_per_s"].transform("max"))
    return out[["links", "formulation", "env_steps_per_s", "of_best", "compile_s", "xla_loops", "xla_flops",
                "counted_flops", "xla_over_counted", "xla_transcendentals", "counted_transcendentals", "chosen"]]


MATERIAL = 1.1  # a formulation faster by less than this is as fast (two builds may order them either way)


def formulation_sentence(df: pd.DataFrame) -> str:
    """Whether the jax implementation's formulation is the fastest measured here at each n (a miss:
    the fastest's slowest timed region faster than the chosen one's fastest, and the fastest more
    than ``MATERIAL`` times the chosen's rate: runs on a shared machine differ by a few percent), and what XLA's program counts beyond the physics where it counted the
    whole program: a rule that can fail (the choice is made once, in ``dynamics_xla.BEST``; these
    rows measure it on this machine)."""
    if df.empty:
        return "No formulation of the chain was measured for these parameters."
    parts, misses = [], []
    for n, g in df.groupby("links"):
        best, chosen = g.loc[g["env_steps_per_s"].idxmax()], g[g["chosen"]]
        if chosen.empty:
            parts.append(f"n = {n}: the jax implementation's formulation was not measured")
            continue
        c = chosen.iloc[0]
        if c["formulation"] == best["formulation"]:
            parts.append(f"n = {n}: `{c['formulation']}` is the fastest ({best['env_steps_per_s']:.3g} env steps/s)")
        elif (best["env_steps_per_s_min"] <= c["env_steps_per_s_max"]
              or best["env_steps_per_s"] <= MATERIAL * c["env_steps_per_s"]):
            parts.append(f"n = {n}: `{best['formulation']}` ({best['env_steps_per_s']:.3g}) and the jax "
                         f"implementation's `{c['formulation']}` ({c['env_steps_per_s']:.3g}) are as fast within "
                         "the spread of their timed regions or 10%")
        else:
            misses.append(n)
            parts.append(f"n = {n}: `{best['formulation']}` is the fastest ({best['env_steps_per_s']:.3g}), "
                         f"{best['env_steps_per_s'] / c['env_steps_per_s']:.2f}× the jax implementation's "
                         f"`{c['formulation']}`")
    whole = df[df["whole_program"] & (df["formulation"] == "columns")]
    added = ("" if whole.empty else " In the reference's columns, XLA's compiled program counts "
             + ", ".join(f"{r.xla_over_counted:.1f}× the counted flops and {r.xla_transcendentals / r.counted_transcendentals:.1f}× "
                         f"the sines, cosines and roots at n = {r.links}" for r in whole.itertuples())
             + " (work its source does not hold, growing with n).")
    verdict = ("The jax rows run XLA's fastest formulation measured here, or one as fast within the spread, "
               "at every n." if not misses else
               f"The jax rows do not run the fastest formulation measured here at n = {', '.join(map(str, misses))}: "
               "their comparisons with XLA understate XLA there by the factor given.")
    return "; ".join(parts) + ". " + verdict + added


def answer(P: ChainParams, labelled) -> str:
    """The chapter's first paragraph: whether the paper's CartPole comparisons hold on the chain,
    from ``claims_chain.labelled_findings`` (the verdicts the page's table shows): their count per
    verdict, then each comparison with ours over the n beside the paper's (``comparisons.comparisons_text``)."""
    if not labelled:
        return "The chain was not measured in this build, so the paper's comparisons are not made on it here."
    from ..claims.chain import label as policy_label

    mlp = policy_label(0, "mlp")[5:]
    links = ", ".join(dict.fromkeys(name[4:].removesuffix(mlp) for name, _ in labelled if name.startswith("n = ")))
    with_mlp = any(name.endswith(mlp) for name, _ in labelled)
    found = [f for _, f in labelled]
    how = ("without a policy (the simulation and its episode rules) and with the Gaussian MLP policy (labelled MLP)"
           if with_mlp else "without a policy (the simulation and its episode rules)")
    return (f"On the chain at n = {links} links, measured on {answers.where(P)} {how}, K up to {max(P.steps)}, the "
            f"paper's comparisons, each judged by CartPole's rule once per n{' and policy' if with_mlp else ''} (F.4 "
            f"once across n), give {answers.counts_text(found)}. By comparison: "
            + comparisons_text([Labelled("chain", label, f) for label, f in labelled]) + ".")
