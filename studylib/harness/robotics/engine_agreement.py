"""Whether the robotics engines (studylib.harness.robotics.engines) compute the same physics: from the same
state and controls, the state each reaches after s steps against ``mujoco.mj_step`` in float64.

Like for like: every engine and the reference run the MjModel with ``opt.solver`` set to Newton
(MJX has no PGS, humanoid.xml's solver; the others' files already use Newton). The reference steps
one ``MjData`` from (qpos, qvel) with ``qacc_warmstart`` zero, as a fresh ``Rollout`` call does.

An engine that compiles per K (mjx) is stepped K = 1 at a time, s calls: ``mjx.Data`` carries its
warm start between calls, so s calls of one step are the s steps of one trajectory. mujoco-rollout
makes one call of K = s steps (a call restarts its warm start). Engines that cannot be given a state
(envpool) take no part and say why.

MJX runs in float32 (JAX's default), so its error after one step is float32 rounding; on contact
models the trajectories then separate (contacts switch on and off at slightly different times):
``agreement`` reports the error at every step count asked, growth and all.
"""

from __future__ import annotations

import numpy as np

from .engine_models import describe, initial_state, load
from .engines import ENGINES, build, c_reference, engine_record

STEPS = (1, 100)


def _engine_state(engine: str, model: str, steps: int, seed: int, pattern: str, num_envs: int = 1):
    """(qpos, qvel) of environment 0 after ``steps`` steps, and the engine's controls; a vectorized
    engine steps ``num_envs`` environments (environment 0's start and controls do not depend on N),
    so an XLA engine can reuse the program a measurement at that N compiled."""
    rec = engine_record(engine)
    per_call = 1 if rec.compiles else steps
    n = num_envs if rec.vectorized else 1
    state = initial_state(load(model, "newton"), n, seed)
    inst, m, ctrl = build(engine, model, n, per_call, seed, pattern, solver="newton", state=state)
    try:
        for _ in range(steps // per_call):
            inst.call()
        inst.sync()
        qpos, qvel = inst.state()
    finally:
        inst.close()
    return qpos[0], qvel[0], ctrl


def agreement(model: str, steps=STEPS, engines=None, seed: int = 0, pattern: str = "random",
              num_envs: int = 1) -> list[dict]:
    """One row per (engine, s): max |qpos - qpos_ref| and max |qvel - qvel_ref| of environment 0
    after s steps (a vectorized engine stepping ``num_envs``), the reference's size (max
    |qpos_ref|, |qvel_ref|) and its contacts per step. An engine that cannot run the model, or
    cannot be given a state, gives one row with its ``reason``."""
    m = load(model, "newton")
    qpos0, qvel0 = initial_state(m, 1, seed)
    base = {k: v for k, v in describe(model).items() if k in ("model", "nq", "nv", "contacts")}
    rows = []
    for name in engines or ENGINES:
        rec = engine_record(name)
        reason = rec.unavailable(model) or (None if rec.settable_state else f"{rec.title} cannot be set to a state")
        if reason is not None:
            rows.append({**base, "engine": name, "steps": None, "reason": reason})
            continue
        for s in steps:
            qpos, qvel, ctrl = _engine_state(name, model, s, seed, pattern, num_envs)
            ref_qpos, ref_qvel, ncon, _ = c_reference(m, qpos0, qvel0, ctrl, s)
            rows.append({**base, "engine": name, "steps": s, "reason": None, "solver": "Newton",
                         "max_abs_dqpos": float(np.max(np.abs(qpos - ref_qpos))),
                         "max_abs_dqvel": float(np.max(np.abs(qvel - ref_qvel))),
                         "ref_max_abs_qpos": float(np.max(np.abs(ref_qpos))),
                         "ref_max_abs_qvel": float(np.max(np.abs(ref_qvel))), "contacts_per_step": ncon})
    return rows
