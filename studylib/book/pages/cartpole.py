"""The CartPole chapter's conformance check (book/cartpole.md): one step of every implementation
from the same random states and actions against ``dynamics.reference_step`` (float64), and the
summary the page states, computed here once.

    conf = cartpole.conformance(P.impls, P.conformance_envs)   # one row per (impl, S, C)
    s = cartpole.conformance_summary(conf)                      # worst errors, and whether all agree
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

ABS_TOLERANCE = 1e-5  # "agree to float32 precision": every state within this of the float64 reference
OBS_TOLERANCE = 1e-5  # observations: np.allclose(atol=) against the reference's
RELATIVE_FLOOR = 1e-3  # relative errors divide by max(|reference|, this), so a state near 0 does not blow up
KNOBS = ((1, 1), (4, 8))  # (S, C): CartPole-v1, and carried floats with sub-steps
FLOAT32_EPS = float(np.finfo(np.float32).eps)


def conformance(impls, num_envs: int, seed: int = 0) -> pd.DataFrame:
    """One step of each implementation in ``impls`` at each (S, C) of ``KNOBS`` from the same random
    states (inside the reset range) and actions, against ``reference_step``: the largest absolute
    and relative error of the state, whether the carried floats flipped exactly (S > 1), whether the
    observations match, and the mean reward."""
    import studylib
    from studylib.sims.cartpole import reference_step

    rng = np.random.default_rng(seed)
    n = int(num_envs)
    rows = []
    for impl in impls:
        for s, c in KNOBS:
            states = rng.uniform(-0.05, 0.05, (n, 4 * s))
            actions = rng.integers(0, 2, n)
            ref, ref_obs, _ = reference_step(states, actions, compute_factor=c)
            env = studylib.make(impl, n, seed=1, state_factor=s, compute_factor=c)
            env.reset()
            env.set_state(states)
            obs, reward, terminated, truncated = env.step(actions)
            got = np.asarray(env.get_state(), dtype=np.float64)
            err = np.abs(got - ref)
            carried = got[:, 4:] == -states[:, 4:].astype(env.dtype)  # flipped once, exactly (S > 1)
            rows.append({"impl": impl, "S": s, "C": c, "N": n, "max |error|": err.max(),
                         "max relative error": (err / np.maximum(np.abs(ref), RELATIVE_FLOOR)).max(),
                         "carried floats exact": bool(carried.all()) if s > 1 else "—",
                         "observations match": bool(np.allclose(np.asarray(obs, dtype=np.float64), ref_obs,
                                                                atol=OBS_TOLERANCE)),
                         "reward": float(np.asarray(reward, dtype=np.float64).mean())})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class ConformanceSummary:
    """What the page says of ``conformance``'s rows."""

    checks: int  # rows: (impl, S, C) checked
    worst: dict  # impl, S, C and "error" of the largest absolute error
    worst_relative: dict  # impl, S, C and "error" of the largest relative error
    roundings: float  # that relative error in float32 machine epsilons
    agree: bool  # every error < ABS_TOLERANCE, every observation matches, every carried float exact


def conformance_summary(conf: pd.DataFrame) -> ConformanceSummary:
    def at(col):
        r = conf.loc[conf[col].idxmax()]
        return {"impl": r["impl"], "S": int(r["S"]), "C": int(r["C"]), "error": float(r[col])}

    worst, rel = at("max |error|"), at("max relative error")
    agree = bool((conf["max |error|"] < ABS_TOLERANCE).all() and conf["observations match"].all()
                 and (conf["carried floats exact"] != False).all())  # noqa: E712 ("—" where S = 1)
    return ConformanceSummary(len(conf), worst, rel, rel["error"] / FLOAT32_EPS, agree)
