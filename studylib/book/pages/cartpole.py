"""The CartPole chapter's conformance check (book/cartpole.md): one step of every implementation
from the same random states and actions against ``dynamics.reference_step`` (float64), and the
summary the page states, computed here once.

    conf = cartpole.conformance(P.impls, P.conformance_envs)   # one row per (impl, S, C)
    s = cartpole.conformance_summary(conf)                      # worst errors, and whether all agree
    cartpole.answer(P, gap, cp, s)                              # the page's first paragraph (gap: brax.brax_gap)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import answers
from ..claims.analysis import SIZE_FACTOR
from ..format import fmt_rate, fmt_x_range

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


def similar_text(slower: pd.Series) -> str:
    """The paper's "similar" (Fig 2) read as the introduction reads it (``overview.fig2_text``):
    each Brax environment's time per step within ``SIZE_FACTOR``× of CartPole's or not, and the
    verdict that gives (``answers.similar_verdict``)."""
    within = int(((slower <= SIZE_FACTOR) & (slower >= 1 / SIZE_FACTOR)).sum())
    verdict = answers.similar_verdict(within, len(slower))
    said = (f"within {SIZE_FACTOR:g}×, as similar as the paper's Fig 2 (XLA on a GPU) shows them" if within == len(slower)
            else f"{'none' if within == 0 else f'{within} of {len(slower)}'} within {SIZE_FACTOR:g}×, where the paper's "
                 "Fig 2 (XLA on a GPU) shows them similar")
    return f"{said}: *{verdict}*"


def _fig2_answer(gap: pd.DataFrame, cp: pd.DataFrame) -> str:
    """Fig 2's claim in this machine's numbers (``brax.brax_gap``, ``brax.brax_gap_summary``): how
    much slower a Brax step is than CartPole's through the same XLA code, and how much of that its
    work explains."""
    from .brax import CARTPOLE, brax_gap_summary

    g = brax_gap_summary(gap)
    if g is None:
        best = float(cp["samples_per_s"].max()) if len(cp) else float("nan")
        return ("no Brax environment was measured beside CartPole, so Fig 2's claim is not checked; "
                f"CartPole alone reaches **{fmt_rate(best)}** at its best N.")
    text = (f"at N = {g.num_envs} and K = {g.steps} on both sides, a step of Brax's robotics simulators takes "
            f"**{fmt_x_range(g.slower)}** CartPole's time through the same XLA code: "
            f"{similar_text(gap.loc[gap['simulator'] != CARTPOLE, 'slower'])}.")
    if g.more_work is not None:
        share = {"all": "all of the gap", "most": f"at least {g.work_share:.0%} of the gap on a log scale",
                 "little": f"only {g.work_share:.0%} of the gap on a log scale"}[g.explained]
        text += (f" XLA counts **{fmt_x_range(g.more_work)}** CartPole's flops in a Brax step: the extra work "
                 f"explains {share}.")
    return text


def answer(P, gap: pd.DataFrame, cp: pd.DataFrame, cs: ConformanceSummary) -> str:
    """The chapter's first paragraph: whether CartPole's XLA throughput is similar to Brax's robotics
    simulators' on this machine (Fig 2's claim), and whether every implementation steps CartPole-v1
    as the float64 reference does (``conformance_summary``)."""
    agree = ("every implementation agrees with the float64 reference to float32 precision" if cs.agree else
             "**some implementation disagrees with the float64 reference** (see the conformance table)")
    return (f"On {answers.where(P)}, " + _fig2_answer(gap, cp) + f" Over {cs.checks} one-step checks, {agree} "
            f"(largest relative error {cs.worst_relative['error']:.2e}, {cs.roundings:.2g} float32 roundings)"
            + (", so every implementation's throughput is CartPole-v1's." if cs.agree else "."))
