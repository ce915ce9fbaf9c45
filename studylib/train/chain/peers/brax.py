"""Brax's own PPO as a peer on the inverted (double) pendulum, judged by time to its own threshold.

``train(run)`` trains ``brax.training.agents.ppo.train`` on Brax's ``inverted_pendulum``
(``run.settings.links == 1``) or ``inverted_double_pendulum`` (2) with Brax's own hyperparameters,
stops at the first evaluation whose mean episode reward reaches ``THRESHOLDS[n]`` (or when the
run's time budget or Brax's ``num_timesteps`` is spent) and returns a ``TrainResult``.

The hyperparameters (``BRAX_PPO``) are Brax's ``train_fn`` table in its notebook
``notebooks/training.ipynb`` (github.com/google/brax, read at commit 0b96d056, 2026-06-29); the
installed brax 0.14.2 package ships no such table (``brax/training/learner.py`` has generic flag
defaults only). Both tasks share them but for ``num_timesteps`` (2M / 20M)::

    functools.partial(ppo.train, num_timesteps=2_000_000, num_evals=20, reward_scaling=10,
        episode_length=1000, normalize_observations=True, action_repeat=1, unroll_length=5,
        num_minibatches=32, num_updates_per_batch=4, discounting=0.97, learning_rate=3e-4,
        entropy_cost=1e-2, num_envs=2048, batch_size=1024, seed=1)

with the notebook's physics ``backend='positional'``. Changes, each named in ``settings``:
``seed`` is the run's; ``num_evals`` is raised so that Brax evaluates after every training step
(one training step = batch_size x unroll_length x num_minibatches = 163,840 env steps and
num_updates_per_batch x num_minibatches = 128 gradient steps; ``updates`` counts training
steps); ``num_envs`` may be overridden (``num_envs=``) and the row then says so.

The clock (``progress.py``'s rule, adapted): Brax evaluates at step 0 before training; everything
until that first ``progress_fn`` call (env and network setup, compiling and running the step-0
evaluation) is ``compile_s``. The training epoch is compiled at its first call, after that
point; the XLA tracing/lowering/compile durations JAX reports through ``jax.monitoring`` from then
on are moved from ``wall_s`` to ``compile_s``. ``wall_s`` is the rest, up to the passing
evaluation, evaluations (``eval_s``, Brax's ``eval/epoch_eval_time``) included. Brax collects and
updates in one XLA program (``training_epoch``), so there is no honest collect/learn split:
``collect_s = learn_s = nan``. ``eval_return`` is Brax's last ``eval/episode_reward`` (128
episodes of the stochastic policy, Brax's default), not a gymnasium replay.

brax 0.14.2 calls ``jax.device_put_replicated``, which jax 0.10 no longer exports: for the
duration of each ``ppo.train`` call only, JAX's own implementation (``jax._src.api``) is put back
under that name.

Measured by hand (2-core CPU, shared, seed 0, N = 2048, brax 0.14.2 / jax 0.10.2):
inverted_pendulum solved (eval 999.8) at 983,040 steps (6 training steps), wall_s 59 s, compile_s
32 s; inverted_double_pendulum not solved in a 230 s budget: eval reward ~900-957 of 9,100 after
3.1M steps (Brax budgets 20M), compile_s 51 s, ~13,000 env steps/s.
"""

from __future__ import annotations

import math
import time

from ....errors import ConfigError
from ...progress import TrainResult
from ..settings import ChainRun

ENV_NAMES = {1: "inverted_pendulum", 2: "inverted_double_pendulum"}
BACKEND = "positional"  # the notebook's backend

BRAX_PPO = {"num_evals": 20, "reward_scaling": 10, "episode_length": 1000, "normalize_observations": True,
            "action_repeat": 1, "unroll_length": 5, "num_minibatches": 32, "num_updates_per_batch": 4,
            "discounting": 0.97, "learning_rate": 3e-4, "entropy_cost": 1e-2, "num_envs": 2048, "batch_size": 1024}
NUM_TIMESTEPS = {1: 2_000_000, 2: 20_000_000}

# Thresholds as gymnasium's registrations, from the maximum of Brax's own reward in 1000 steps:
# inverted_pendulum pays 1 per step (the falling step included): at most 1000, and 950 = 95% is
# InvertedPendulum-v5's own 950 of 1000. inverted_double_pendulum pays 10 - 0.01 x_tip^2 -
# (y_tip - 2)^2 - velocity terms; upright y_tip = 1.2 (measured 1.198), so at most 10 - 0.64 = 9.36
# per step (measured 9.356), about 9,360 per episode, as v5: InvertedDoublePendulum-v5's 9100
# (97%) keeps its meaning, "balanced for (nearly) the whole episode".
THRESHOLDS = {1: 950.0, 2: 9100.0}

_COMPILE_EVENTS = ("/jax/core/compile/jaxpr_trace_duration", "/jax/core/compile/jaxpr_to_mlir_module_duration",
                   "/jax/core/compile/backend_compile_duration")


class _Stop(Exception):
    """Raised from progress_fn to end brax's training loop early."""


def _jax_shim():
    """brax 0.14.2 calls ``jax.device_put_replicated``, which jax 0.10 removed from its public API
    (a deprecation stub that raises); the implementation is still ``jax._src.api``'s. Put back for
    the duration of one ``ppo.train`` call only."""
    from jax._src.api import device_put_replicated

    return device_put_replicated


def brax_settings(links: int, *, num_envs: int | None = None) -> dict:
    """Brax's hyperparameters for ``links`` (1 or 2) as used here, plus the task and threshold."""
    if links not in ENV_NAMES:
        raise ConfigError(f"Brax's PPO peer trains links 1 (inverted_pendulum) or 2 (inverted_double_pendulum), got {links}")
    s = dict(BRAX_PPO, num_timesteps=NUM_TIMESTEPS[links])
    per_step = s["batch_size"] * s["unroll_length"] * s["num_minibatches"] * s["action_repeat"]
    s["num_evals"] = 1 + math.ceil(s["num_timesteps"] / per_step)  # an evaluation after every training step
    changed = ["seed", "num_evals"]
    if num_envs is not None and num_envs != s["num_envs"]:
        s["num_envs"] = int(num_envs)
        changed.append("num_envs")
    s.update(env=ENV_NAMES[links], backend=BACKEND, links=links, threshold=THRESHOLDS[links],
             env_steps_per_training_step=per_step, changed_from_brax=changed,
             source="google/brax notebooks/training.ipynb train_fn")
    return s


def train(run: ChainRun, *, log=None, progress=None, num_envs: int | None = None) -> TrainResult:
    """Train Brax's PPO on ``run``'s task until its eval reward reaches the threshold (see module).
    ``progress(samples, nan, eval reward)``: as ``ChainClock``'s (a progress bar)."""
    s = brax_settings(run.settings.links, num_envs=num_envs)
    import jax
    from brax import envs
    from brax.training.agents.ppo import train as ppo

    from ...results import provenance

    budget, threshold, per_step = run.budget_seconds, s["threshold"], s["env_steps_per_training_step"]
    t_start = time.perf_counter()
    st = {"t0": None, "compile_after": 0.0, "eval_s": 0.0, "steps": 0, "reward": math.nan, "stopped": "",
          "curve": []}

    def on_compile(event, duration, **_):
        if st["t0"] is not None and event in _COMPILE_EVENTS:
            st["compile_after"] += duration

    def progress_fn(num_steps, metrics):
        now = time.perf_counter()
        reward = float(metrics["eval/episode_reward"])
        if st["t0"] is None:  # the step-0 evaluation: the clock starts here
            st["t0"], st["compile_s"] = now, now - t_start
        else:
            st["eval_s"] += float(metrics.get("eval/epoch_eval_time", 0.0))
        wall = now - st["t0"] - st["compile_after"]
        st.update(steps=int(num_steps), reward=reward, wall=wall)
        st["curve"].append([wall, int(num_steps), int(num_steps) // per_step, reward, math.nan])
        if log is not None:
            log(f"[brax {s['env']} N={s['num_envs']} seed={run.seed}] {wall:7.2f} s  steps {num_steps:10,d}  "
                f"eval reward {reward:8.1f}")
        if progress is not None:
            progress(int(num_steps), math.nan, reward)
        if num_steps > 0 and reward >= threshold:
            st["stopped"] = "solved"
        elif wall >= budget:
            st["stopped"] = "max_seconds"
        elif num_steps >= s["num_timesteps"]:
            st["stopped"] = "max_samples"
        if st["stopped"]:
            raise _Stop

    env = envs.get_environment(s["env"], backend=BACKEND)
    kwargs = {k: s[k] for k in (*BRAX_PPO, "num_timesteps")}
    jax.monitoring.register_event_duration_secs_listener(on_compile)
    shim = not hasattr(jax, "device_put_replicated")  # see _jax_shim
    if shim:
        jax.device_put_replicated = _jax_shim()
    try:
        ppo.train(env, seed=run.seed, progress_fn=progress_fn, **kwargs)
    except _Stop:
        pass
    finally:
        jax.monitoring.unregister_event_duration_listener(on_compile)
        if shim:
            del jax.device_put_replicated
    if not st["stopped"]:  # brax ran all its steps without the last check stopping it
        st["stopped"] = "max_samples"
    solved = st["stopped"] == "solved"
    wall, samples = st.get("wall", 0.0), st["steps"]
    updates = samples // per_step
    return TrainResult(
        collector="brax", num_envs=s["num_envs"], seed=run.seed, solved=solved, wall_s=wall,
        compile_s=st.get("compile_s", math.nan) + st["compile_after"], samples=samples, updates=updates,
        eval_return=st["reward"], solved_in_training=solved, stopped=st["stopped"],
        collect_s=math.nan, learn_s=math.nan, eval_s=st["eval_s"],
        samples_per_s=samples / wall if wall > 0 else math.nan,
        updates_per_s=updates / wall if wall > 0 else math.nan,
        batch_size=per_step, device="cpu" if jax.default_backend() == "cpu" else jax.default_backend(),
        bootstraps_truncation=False, curve=st["curve"], trainer="brax-ppo",
        settings={**run.settings.as_dict(), "num_envs": run.n},  # the row's key: the plan's run
        peer={**s, "env": f"{s['env']} (Brax)"}, budget_s=float(budget), provenance=provenance())
