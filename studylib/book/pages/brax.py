"""Fig 2's Brax lines: Brax environments (XLA, jit + vmap + scan of K steps, zero actions) timed on
this machine by ``harness.timing`` and saved in ``fig2_brax.json`` through ``harness.sweep``.

Beside them, at the same N and the same K, CartPole (``CARTPOLE``: ``studylib.adapters.jax_functional``,
our gymnax-style functional CartPole-v1) goes through the very same code: jit + vmap + scan, zero
actions, same timer. Each row also carries XLA's count of the step's work (``flops_per_step``,
``transcendentals_per_step``: HLO cost analysis of the lowered rollout, whose loop body it counts
once, divided by N), so the gap between the two is stated in operations as well as in time."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...harness.sweep import Keying, keyed_by, run, timing_in
from ..presets import ChapterParams

# Rows saved before the work was counted (no ``work_counted``) do not match and are measured again.
BRAX_KEYS = ("env", "num_envs", "steps", "repeats", "min_seconds", "work_counted")
WORK_COUNTER = "xla-hlo-cost-analysis"
CARTPOLE = "cartpole"  # our CartPole through Brax's harness (not a Brax environment)


def brax_available() -> tuple[bool, str]:
    try:
        import importlib.util

        if importlib.util.find_spec("brax") is None:
            return False, "brax is not installed (`pip install brax`)"
        return True, ""
    except Exception as e:  # pragma: no cover
        return False, str(e)


def _backend(env_name: str) -> str:
    if env_name == CARTPOLE:
        return "studylib.adapters.jax_functional"
    return "spring" if env_name != "inverted_pendulum" else "positional"


class _CartPoleAsBrax:
    """CartPole-v1 (``studylib.adapters.jax_functional``) behind Brax's ``reset(key)`` / ``step(state,
    action)``: the state carries its PRNG key for the same-step resets; the action is 0 (push left),
    as Brax's zero actions."""

    action_size = 1

    @staticmethod
    def reset(key):
        from ...adapters import jax_functional as cartpole

        return key, cartpole.reset(key)[1]

    @staticmethod
    def step(state, action):
        import jax
        import jax.numpy as jnp

        from ...adapters import jax_functional as cartpole

        key, env_state = state
        key, sub = jax.random.split(key)
        return key, cartpole.step(sub, env_state, jnp.zeros((), jnp.int32))[1]


def _load_env(env_name: str):
    """A Brax environment (or ``CARTPOLE`` through the same interface), without the warnings and
    log lines Brax prints while importing."""
    import contextlib
    import io
    import logging
    import warnings

    if env_name == CARTPOLE:
        return _CartPoleAsBrax()
    logging.getLogger("absl").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            from brax import envs

            return envs.get_environment(env_name, backend=_backend(env_name))


def brax_throughput(item: dict) -> dict:
    """One row: steps/s of ``item["num_envs"]`` copies of Brax env ``item["env"]``, K steps per call."""
    import time
    from importlib import metadata

    import jax
    import jax.numpy as jnp

    from ...harness.data.provenance import machine_key, now_utc
    from ...harness.timing import time_regions

    n, k = item["num_envs"], item["steps"]
    env = _load_env(item["env"])
    step = jax.vmap(env.step)

    def scan_k_steps(state):
        def body(s, _):
            return step(s, jnp.zeros((n, env.action_size))), None  # zero actions

        return jax.lax.scan(body, state, None, length=k)[0]

    t0 = time.perf_counter()
    state = [jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(0), n))]
    lowered = jax.jit(scan_k_steps).lower(state[0])  # traced once: the cost count and the compile share it
    cost = lowered.cost_analysis()  # counts the loop body once: one step of N environments
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost
    rollout = lowered.compile()
    state[0] = rollout(state[0])
    jax.block_until_ready(state[0])
    compile_s = time.perf_counter() - t0

    def call():
        state[0] = rollout(state[0])

    t = time_regions(call, repeats=item["repeats"], min_seconds=item["min_seconds"],
                     sync=lambda: jax.block_until_ready(state[0]))
    rates = t.summary(n * k)
    return {**item, "samples_per_s": float(rates["median"]), "samples_per_s_min": float(rates["min"]),
            "samples_per_s_max": float(rates["max"]), "compile_s": compile_s, "backend": _backend(item["env"]),
            "flops_per_step": float(cost.get("flops", float("nan"))) / n,
            "transcendentals_per_step": float(cost.get("transcendentals", 0.0)) / n,
            "policy": "zero actions", "machine": machine_key(), "date": now_utc(),
            "brax": metadata.version("brax") if item["env"] != CARTPOLE else None}


def brax_data(P: ChapterParams) -> pd.DataFrame:
    """Fig 2: Brax environments on this machine (an empty frame where Brax is not installed)."""
    if not brax_available()[0]:
        return pd.DataFrame()
    items = [{"env": e, "num_envs": n, "steps": P.brax_steps, "repeats": P.repeats, "min_seconds": P.min_seconds,
              "work_counted": WORK_COUNTER} for e in (CARTPOLE, *P.brax_envs) for n in P.brax_num_envs]
    keying = Keying(dict, keyed_by(*BRAX_KEYS), lambda i: f"brax {i['env']} N={i['num_envs']} K={i['steps']}",
                    "brax", timing=timing_in(BRAX_KEYS))
    result = run("fig2_brax", items, brax_throughput, keying, data_dir=P.data_dir, progress=False, log=lambda m: None,
                 machine=P.machine)
    return pd.DataFrame(result.rows)


def brax_gap(bx: pd.DataFrame) -> pd.DataFrame:
    """Fig 2's gap in numbers, at the largest N where CartPole and Brax were both measured (same K):
    per simulator its rate, time per environment-step, how much slower than CartPole, XLA-counted
    flops per step, how many times CartPole's, and time per flop against CartPole's."""
    from ..format import pow2_label

    if not len(bx) or CARTPOLE not in set(bx["env"]):
        return pd.DataFrame()
    cart = bx[bx["env"] == CARTPOLE]
    common = sorted(set(cart["num_envs"]) & set(bx[bx["env"] != CARTPOLE]["num_envs"]))
    if not common:
        return pd.DataFrame()
    n = common[-1]
    at = bx[bx["num_envs"] == n].copy()
    if "flops_per_step" not in at.columns:
        at["flops_per_step"] = float("nan")
    ref = at[at["env"] == CARTPOLE].iloc[0]
    at["time_per_step"] = 1e6 / at["samples_per_s"]
    at["slower"] = ref["samples_per_s"] / at["samples_per_s"]
    at["more_work"] = at["flops_per_step"] / ref["flops_per_step"]
    at["time_per_flop"] = at["slower"] / at["more_work"]
    at["simulator"] = at["env"]
    at["N"] = pow2_label(n)
    at["K"] = at["steps"]
    cols = ["simulator", "N", "K", "samples_per_s", "time_per_step", "slower", "flops_per_step", "more_work",
            "time_per_flop"]
    return at.sort_values("slower")[cols].reset_index(drop=True)


@dataclass(frozen=True)
class BraxGapSummary:
    """Fig 2's gap as the page states it, from ``brax_gap``'s Brax rows (CartPole's own row left out)."""

    num_envs: str  # N, as labelled
    steps: int  # K on both sides
    slower: tuple  # (least, most) times CartPole's time per environment-step
    more_work: tuple | None  # (least, most) times CartPole's XLA-counted flops (None: rows saved before counting)
    time_per_flop: tuple | None  # (least, most) time per flop over CartPole's
    work_share: float | None  # the least share, on a log scale, of the gap the extra work explains

    @property
    def explained(self) -> str | None:
        """How much of the gap the work explains: "all" (share ≥ 1), "most" (≥ 0.5) or "little"."""
        if self.work_share is None:
            return None
        return "all" if self.work_share >= 1 else "most" if self.work_share >= 0.5 else "little"


def _range(s: pd.Series) -> tuple:
    return float(s.min()), float(s.max())


def brax_gap_summary(gap: pd.DataFrame) -> BraxGapSummary | None:
    """``brax_gap`` summarized: how much slower a Brax step is than CartPole's, how much more work
    XLA counts in it, and the part of the gap that work explains on a log scale, log(more work) /
    log(slower), the least over the Brax environments (None where nothing was measured)."""
    rows = gap[gap["simulator"] != CARTPOLE] if len(gap) else gap
    if not len(rows):
        return None
    work, slower = rows["more_work"], rows["slower"]
    counted = bool(work.notna().all())
    return BraxGapSummary(str(gap["N"].iloc[0]), int(gap["K"].iloc[0]), _range(slower),
                          _range(work) if counted else None, _range(rows["time_per_flop"]) if counted else None,
                          float((np.log(work) / np.log(slower)).min()) if counted else None)


def best_rate(fig2: pd.DataFrame, env: str) -> float:
    """The best rate of line ``env`` of Fig 2 over its N (nan where it was not measured)."""
    rows = fig2[fig2["env"] == env] if len(fig2) else fig2
    return float(rows["samples_per_s"].max()) if len(rows) else float("nan")
