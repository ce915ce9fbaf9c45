"""PPO fully jitted in JAX, PureJaxRL's shape: collection, GAE and the update in ONE XLA program.

The environment is ``studylib.adapters.jax_functional`` (gymnax's ``reset``/``step``, vmapped over N envs);
the policy, the physics, GAE, the shuffles and the optimizer (optax: gradient-norm clipping and
Adam) are traced together, and ``lax.scan`` runs several updates per call, so Python only sees
the program between greedy checks. The algorithm and every hyperparameter are the PyTorch PPO's
(``studylib.train.cartpole.ppo_torch``, the same ``PPOSettings``); the environment returns the pre-reset
observation (``info["final_observation"]``), so truncated episodes are bootstrapped.

Timing (``studylib.train.progress``): tracing and XLA compilation come before the first step
(``compile_s``); the compiled chunk's calls and the greedy checks are ``wall_s``. Collection and
learning are one program, so their split is estimated afterwards (untimed) by running a program
that only collects, and reported as such.
"""

from __future__ import annotations

import functools
import math
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ...adapters import jax_functional as env
from ...policy import LAYER_SIZES
from .. import ppo_jax_parts as parts
from ..progress import Clock, SharedTime, TrainResult, check_population
from ..results import POPULATION_TRAINER
from ..settings import PPOSettings, TrainRun


class Transition(NamedTuple):
    obs: jax.Array  # (N, 4)
    action: jax.Array  # (N,) int32
    logp: jax.Array  # (N,)
    reward: jax.Array  # (N,)
    terminated: jax.Array  # (N,) bool
    truncated: jax.Array  # (N,) bool
    final_obs: jax.Array  # (N, 4) before the same-step reset


class Runner(NamedTuple):
    """Everything the program carries from one update to the next."""

    params: dict  # {"actor": [(W, b)] * 3, "critic": [(W, b)] * 3}
    opt_state: optax.OptState
    env_state: env.EnvState  # N environments (batched)
    obs: jax.Array  # (N, 4) current observations
    episode_return: jax.Array  # (N,) return of each env's running episode
    key: jax.Array


def _init_mlp(key, sizes, out_gain: float):
    """cleanrl's initialization: orthogonal, gain sqrt(2) on hidden layers, zero biases."""
    layers = []
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        key, k = jax.random.split(key)
        gain = out_gain if i == len(sizes) - 2 else math.sqrt(2)
        layers.append((jax.nn.initializers.orthogonal(gain)(k, (fan_in, fan_out), jnp.float32),
                       jnp.zeros(fan_out, jnp.float32)))
    return layers


def _mlp(layers, x):
    for w, b in layers[:-1]:
        x = jnp.tanh(x @ w + b)
    w, b = layers[-1]
    return x @ w + b


def init_params(key) -> dict:
    k_actor, k_critic = jax.random.split(key)
    return {"actor": _init_mlp(k_actor, LAYER_SIZES, 0.01), "critic": _init_mlp(k_critic, (*LAYER_SIZES[:-1], 1), 1.0)}


def actor_arrays(params: dict) -> dict[str, np.ndarray]:
    """The actor as W1 b1 W2 b2 W3 b3 (already x @ W layout)."""
    out = {}
    for i, (w, b) in enumerate(params["actor"], start=1):
        out[f"W{i}"], out[f"b{i}"] = np.asarray(w, np.float32), np.asarray(b, np.float32)
    return out


def _value(params, obs):
    return _mlp(params["critic"], obs)[..., 0]


def make_program(s: PPOSettings, num_envs: int, env_params=env.default_params):
    """(init(key) -> Runner, update(runner) -> (runner, (sum, count) of finished returns),
    collect(runner) -> runner): pure functions to trace."""
    n, t_ = num_envs, s.num_steps
    batch = n * t_
    mb = max(1, batch // s.num_minibatches)
    num_mb = batch // mb
    tx = optax.chain(optax.clip_by_global_norm(s.max_grad_norm), optax.adam(s.learning_rate, eps=s.adam_eps))
    reset_n = jax.vmap(env.reset, in_axes=(0, None))
    step_n = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def init(key) -> Runner:
        k_params, k_env, key = jax.random.split(key, 3)
        params = init_params(k_params)
        obs, env_state = reset_n(jax.random.split(k_env, n), env_params)
        return Runner(params, tx.init(params), env_state, obs, jnp.zeros(n), key)

    def rollout(runner: Runner):
        def one_step(carry, _):
            env_state, obs, ep_ret, key = carry
            key, k_act, k_env = jax.random.split(key, 3)
            logits = _mlp(runner.params["actor"], obs)
            diff = logits[:, 1] - logits[:, 0]  # categorical over 2 actions, as the torch collectors
            action = jax.random.uniform(k_act, (n,)) < jax.nn.sigmoid(diff)
            logp = jax.nn.log_sigmoid(jnp.where(action, diff, -diff))
            action = action.astype(jnp.int32)
            next_obs, env_state, reward, term, trunc, info = step_n(jax.random.split(k_env, n), env_state, action, env_params)
            ep_ret = ep_ret + reward
            done = term | trunc
            finished = (jnp.sum(jnp.where(done, ep_ret, 0.0)), jnp.sum(done))
            tr = Transition(obs, action, logp, reward, term, trunc, info["final_observation"])
            return (env_state, next_obs, jnp.where(done, 0.0, ep_ret), key), (tr, finished)

        carry = (runner.env_state, runner.obs, runner.episode_return, runner.key)
        (env_state, obs, ep_ret, key), (traj, finished) = jax.lax.scan(one_step, carry, None, length=t_)
        return runner._replace(env_state=env_state, obs=obs, episode_return=ep_ret, key=key), traj, finished

    def gae(params, traj: Transition, last_obs):
        adv, values = parts.gae(_value, params, traj, last_obs, s.gamma, s.gae_lambda)
        return adv, adv + values

    def loss_fn(params, obs, action, logp_old, adv, target):
        log_probs = jax.nn.log_softmax(_mlp(params["actor"], obs))
        logp = jnp.take_along_axis(log_probs, action[:, None], axis=1)[:, 0]
        if s.norm_adv:
            adv = (adv - adv.mean()) / (adv.std(ddof=1) + 1e-8) if adv.shape[0] > 1 else adv
        ratio = jnp.exp(logp - logp_old)
        pg_loss = jnp.maximum(-adv * ratio, -adv * jnp.clip(ratio, 1 - s.clip_coef, 1 + s.clip_coef)).mean()
        v_loss = 0.5 * jnp.square(_value(params, obs) - target).mean()
        loss = pg_loss + s.vf_coef * v_loss
        if s.ent_coef > 0:
            loss = loss - s.ent_coef * (-(jnp.exp(log_probs) * log_probs).sum(-1).mean())
        return loss

    grad_fn = jax.grad(loss_fn)

    def update(runner: Runner):
        runner, traj, finished = rollout(runner)
        adv, target = gae(runner.params, traj, runner.obs)
        data = (traj.obs.reshape(batch, -1), traj.action.reshape(batch), traj.logp.reshape(batch),
                adv.reshape(batch), target.reshape(batch))

        params, opt_state, key = parts.sgd_epochs(grad_fn, tx, runner.params, runner.opt_state, runner.key, data,
                                                  batch=batch, num_minibatches=num_mb, minibatch_size=mb,
                                                  epochs=s.update_epochs)
        total = (finished[0].sum(), finished[1].sum())
        return runner._replace(params=params, opt_state=opt_state, key=key), total

    def collect_only(runner: Runner):
        return rollout(runner)[0]

    return init, update, collect_only


def _chunk(update, num_updates: int):
    """``num_updates`` updates in one call (the updates between two greedy checks)."""
    return jax.jit(parts.updates_in_one_call(update, num_updates), donate_argnums=0)


@functools.lru_cache(maxsize=16)
def _compiled(s: PPOSettings, num_envs: int, updates_per_call: int):
    """(init, chunk, collect_only), traced and compiled once per (settings, N, updates per call) in
    this process: a second seed reuses the program (its compile_s is then only the init)."""
    init, update, collect_only = make_program(s, num_envs)
    init = jax.jit(init)
    example = jax.eval_shape(init, jax.random.key(0))
    return init, _chunk(update, updates_per_call).lower(example).compile(), jax.jit(collect_only)


def train(run: TrainRun, *, log=None) -> TrainResult:
    s, n = run.settings, run.n
    batch = n * s.num_steps
    clock = Clock(run, num_envs=n, batch_size=batch, log=log)
    start = time.perf_counter()
    init, chunk, collect_only = _compiled(s, n, clock.updates_per_check)
    runner = jax.block_until_ready(init(jax.random.key(run.seed)))
    device = str(jax.devices()[0].platform)
    clock.start(compile_s=time.perf_counter() - start, device="cuda" if device == "gpu" else device)
    program_s = 0.0
    while True:
        t = time.perf_counter()
        runner, ret_sum, count = chunk(runner)
        count = int(count)  # waits for the chunk
        program_s += time.perf_counter() - t
        clock.add_update(clock.updates_per_check * batch, float(ret_sum) / count if count else math.nan,
                         bootstraps_truncation=True, updates=clock.updates_per_check)
        if clock.check(actor_arrays(runner.params)) or clock.out_of_budget():
            break
    arrays = actor_arrays(runner.params)
    collect_s = min(program_s, parts.collect_seconds_per_update(collect_only, runner) * clock.updates)
    clock.set_parts(collect_s, program_s - collect_s)
    return clock.finish(arrays, trainer="jax-ppo")


# ---- many seeds in one program ------------------------------------------------------------------
# PureJaxRL's shape (Lu et al. 2022, "Discovered Policy Optimisation"; purejaxrl/ppo.py:
# ``jax.jit(jax.vmap(make_train(config)))(rngs)``): the same program, vmapped over the seeds'
# keys, compiled once. Each seed's key is ``jax.random.key(seed)`` and everything it draws is split
# from it alone, so a seed's run does not depend on the seeds beside it (tests/test_train_population.py checks
# seed 3 alone against seed 3 in a population of 16). The wall-clock is the population's: shared.


def population_keys(seeds) -> jax.Array:
    return jax.vmap(jax.random.key)(jnp.asarray(list(seeds), dtype=jnp.uint32))


def population_init(init):
    """``init`` for a batch of keys: each seed's own (unbatched) ``init``, stacked into one Runner.

    Not ``jit(vmap(init))``: vmapped, the orthogonal initialization's QR factorizations become
    batched LAPACK calls, which jaxlib's CPU runtime splits over its intra-op thread pool and then
    waits for from inside that pool. With two such calls at once (the actor's and the critic's) on a
    2-core machine, both pool threads wait for work that no thread is left to run: the program never
    finishes (seen here about once in eight runs; gdb: two threads in ``lapack_sgeqrf_ffi`` ->
    ``ParallelBatchMap`` -> ``BlockingCounter::Wait``, every other pool thread idle). Unbatched,
    each QR runs on the thread that calls it. The arithmetic is the same per seed."""
    one = jax.jit(init)

    def init_all(keys):
        runners = [one(key) for key in keys]
        return jax.tree.map(lambda *xs: jnp.stack(xs), *runners)

    return init_all


@functools.lru_cache(maxsize=8)
def _compiled_population(s: PPOSettings, num_envs: int, updates_per_call: int, size: int):
    """(init(keys) -> Runner of ``size`` seeds, chunk(runner) -> (runner, sums, counts) per seed)."""
    init, update, _ = make_program(s, num_envs)
    init_v = population_init(init)
    example = jax.eval_shape(jax.vmap(init), population_keys(range(size)))

    def run(runner):
        runner, (sums, counts) = jax.lax.scan(lambda r, _: update(r), runner, None, length=updates_per_call)
        return runner, sums.sum(), counts.sum()

    return init_v, jax.jit(jax.vmap(run), donate_argnums=0).lower(example).compile()


def train_population(runs: list[TrainRun], *, log=None, on_result=None) -> list[TrainResult]:
    """Train every run (one seed each; the same N, settings and budget) as ONE vmapped program.

    Each seed is checked by the common rule (``progress.Clock``) after every chunk (while the next
    chunk runs: the program and the checks overlap); a seed that
    solves or runs out of samples is finished at once (``on_result(result)``: the caller saves it,
    so an interrupted population resumes with the unfinished seeds only) and keeps being computed,
    unused, until the others finish (one program). ``wall_s`` and ``budget_s`` are the population's
    shared wall-clock; samples and updates to solve are the seed's own.
    """
    if not runs:
        return []
    first = runs[0]
    s, n = first.settings, first.n
    if any((r.collector, r.n, r.settings, r.budget_seconds) != ("jax", n, s, first.budget_seconds) for r in runs):
        raise ValueError("a population shares the collector 'jax', N, the settings and the budget")
    if len({r.seed for r in runs}) != len(runs):
        raise ValueError("a population's seeds must differ")
    size, batch = len(runs), n * s.num_steps
    shared = SharedTime()
    clocks = [Clock(r, num_envs=n, batch_size=batch, log=log, now=shared.now, population=size) for r in runs]
    upc = clocks[0].updates_per_check
    start = time.perf_counter()
    init, chunk = _compiled_population(s, n, upc, size)
    runner = jax.block_until_ready(init(population_keys(r.seed for r in runs)))
    compile_s = time.perf_counter() - start
    device = str(jax.devices()[0].platform)
    for c in clocks:
        c.start(compile_s=compile_s, device="cuda" if device == "gpu" else device)
    results: list[TrainResult | None] = [None] * size
    active = list(range(size))
    pending = chunk(runner)  # dispatched: XLA runs it while Python goes on
    while active:
        t = time.perf_counter()
        runner, sums, counts = pending
        sums, counts = np.asarray(sums), np.asarray(counts)  # waits for the chunk
        actors = [(np.array(w, np.float32), np.array(b, np.float32)) for w, b in runner.params["actor"]]  # copies
        # The next chunk runs while this one's greedy checks do (on the other core): checks and
        # program overlap; a seed that solves here has been computed one chunk further, unused.
        # Measured on 2 shared cores, 32 seeds, alternating: median wall 18.9 s against 21.4 s at
        # N = 64 (3 pairs, one the other way round), 8.5/10.9 s against 11.1/12.1 s at N = 16.
        pending = chunk(runner)
        program_s = time.perf_counter() - t
        arrays = {}
        for i in active:
            c = clocks[i]
            c.parts["learn"] += program_s  # collection and learning, one program (not split here)
            c.add_update(upc * batch, float(sums[i]) / counts[i] if counts[i] else math.nan,
                         bootstraps_truncation=True, updates=upc)
            arrays[i] = {name: a[i] for j, (w, b) in enumerate(actors, start=1) for name, a in ((f"W{j}", w), (f"b{j}", b))}
        passed = check_population([clocks[i] for i in active], [arrays[i] for i in active], s)
        finished = [i for i, ok in zip(active, passed) if ok or clocks[i].out_of_budget()]
        if finished:
            # the next chunk ends on the clock, before gymnasium's judging stops it (no program
            # time hides in the pause)
            t = time.perf_counter()
            pending = jax.block_until_ready(pending)
            for i in active:
                if i not in finished:
                    clocks[i].parts["learn"] += time.perf_counter() - t
        for i in finished:
            t_judge = time.perf_counter()
            results[i] = clocks[i].finish(arrays[i], trainer=POPULATION_TRAINER)
            if on_result is not None:
                on_result(results[i])
            shared.pause(time.perf_counter() - t_judge)
            active.remove(i)
    return results
