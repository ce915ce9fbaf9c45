"""Fig 2's Brax lines: Brax environments (XLA, jit + vmap + scan of K steps, zero actions) timed on
this machine by ``harness.timing`` and saved in ``fig2_brax.json`` through ``harness.sweep``."""

from __future__ import annotations

import pandas as pd

from ..harness.sweep import Keying, keyed_by, run
from .presets import ChapterParams

BRAX_KEYS = ("env", "num_envs", "steps", "repeats", "min_seconds")


def brax_available() -> tuple[bool, str]:
    try:
        import importlib.util

        if importlib.util.find_spec("brax") is None:
            return False, "brax is not installed (`pip install brax`)"
        return True, ""
    except Exception as e:  # pragma: no cover
        return False, str(e)


def _backend(env_name: str) -> str:
    return "spring" if env_name != "inverted_pendulum" else "positional"


def _load_env(env_name: str):
    """A Brax environment, without the warnings and log lines Brax prints while importing."""
    import contextlib
    import io
    import logging
    import warnings

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

    from ..harness.provenance import machine_key, now_utc
    from ..harness.timing import time_regions

    n, k = item["num_envs"], item["steps"]
    env = _load_env(item["env"])
    step = jax.vmap(env.step)

    @jax.jit
    def rollout(state):
        def body(s, _):
            return step(s, jnp.zeros((n, env.action_size))), None

        return jax.lax.scan(body, state, None, length=k)[0]

    t0 = time.perf_counter()
    state = [jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(0), n))]
    state[0] = rollout(state[0])
    jax.block_until_ready(state[0].obs)
    compile_s = time.perf_counter() - t0

    def call():
        state[0] = rollout(state[0])

    t = time_regions(call, repeats=item["repeats"], min_seconds=item["min_seconds"],
                     sync=lambda: jax.block_until_ready(state[0].obs))
    rates = t.summary(n * k)
    return {**item, "samples_per_s": float(rates["median"]), "samples_per_s_min": float(rates["min"]),
            "samples_per_s_max": float(rates["max"]), "compile_s": compile_s, "backend": _backend(item["env"]),
            "policy": "zero actions", "machine": machine_key(), "date": now_utc(), "brax": metadata.version("brax")}


def brax_data(P: ChapterParams) -> pd.DataFrame:
    """Fig 2: Brax environments on this machine (an empty frame where Brax is not installed)."""
    if not brax_available()[0]:
        return pd.DataFrame()
    items = [{"env": e, "num_envs": n, "steps": P.brax_steps, "repeats": P.repeats, "min_seconds": P.min_seconds}
             for e in P.brax_envs for n in P.brax_num_envs]
    keying = Keying(dict, keyed_by(*BRAX_KEYS), lambda i: f"brax {i['env']} N={i['num_envs']} K={i['steps']}")
    result = run("fig2_brax", items, brax_throughput, keying, data_dir=P.data_dir, progress=False, log=lambda m: None,
                 machine=P.machine)
    return pd.DataFrame(result.rows)
