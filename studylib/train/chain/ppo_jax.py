"""PPO for continuous actions on the n-link chain, fully jitted in JAX (PureJaxRL's shape).

The algorithm is cleanrl's ppo_continuous_action.py (Huang et al., "The 37 Implementation Details
of Proximal Policy Optimization"); the program's shape is PureJaxRL's ppo_continuous_action.py
(Lu et al. 2022): the chain's gymnax-style pure functions (``studylib.adapters.jax_chain``,
vmapped over N environments), the policy, the running normalizations, GAE, the shuffles and the
optimizer (optax: gradient-norm clipping and Adam) are traced into ONE XLA program, and
``lax.scan`` runs the updates between two checks in one call. cleanrl's agent::

    self.critic = nn.Sequential(layer_init(nn.Linear(obs, 64)), nn.Tanh(),
        layer_init(nn.Linear(64, 64)), nn.Tanh(), layer_init(nn.Linear(64, 1), std=1.0))
    self.actor_mean = nn.Sequential(layer_init(nn.Linear(obs, 64)), nn.Tanh(),
        layer_init(nn.Linear(64, 64)), nn.Tanh(), layer_init(nn.Linear(64, act), std=0.01))
    self.actor_logstd = nn.Parameter(torch.zeros(1, act))

and its loss::

    pg_loss = torch.max(-mb_advantages * ratio,
                        -mb_advantages * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)).mean()
    v_loss_unclipped = (newvalue - b_returns[mb_inds]) ** 2
    v_clipped = b_values[mb_inds] + torch.clamp(newvalue - b_values[mb_inds], -args.clip_coef, args.clip_coef)
    v_loss = 0.5 * torch.max(v_loss_unclipped, (v_clipped - b_returns[mb_inds]) ** 2).mean()
    loss = pg_loss - args.ent_coef * entropy_loss + v_loss * args.vf_coef

Where this differs from cleanrl (settings: ``chain_settings``): N environments per batch, no
learning-rate annealing, truncations bootstrapped, and the observation/reward normalizations are
the trainer's (``running_norm``, updated once per step with the N rows) instead of gymnasium
wrappers. The sample's log-probability is of the unclipped action; the environment steps the
action clipped to [-1, 1].

Timing (``chain_clock``/``progress``): tracing and compilation before the first step
(``compile_s``); the chunks' calls and the checks are ``wall_s``. Collection and learning are one
program; their split is estimated afterwards (untimed) from a program that only collects.
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

from ...adapters import jax_chain
from . import gaussian, running_norm as rn
from .evaluate import ChainClock
from .policy import HIDDEN, make_policy_arrays
from .settings import ChainPPOSettings, ChainRun
from ..cartpole.ppo_jax import _init_mlp, _mlp
from .. import ppo_jax_parts as parts
from ..progress import TrainResult


class Transition(NamedTuple):
    obs: jax.Array  # (N, D) normalized as the policy saw it
    action: jax.Array  # (N, 1) the unclipped sample
    logp: jax.Array  # (N,)
    reward: jax.Array  # (N,) scaled
    terminated: jax.Array  # (N,) bool
    truncated: jax.Array  # (N,) bool
    final_obs: jax.Array  # (N, D) normalized, before the same-step reset


class Runner(NamedTuple):
    params: dict  # {"actor": [(W, b)] * 3, "log_std": (1,), "critic": [(W, b)] * 3}
    opt_state: optax.OptState
    env_state: jax_chain.EnvState  # N environments
    raw_obs: jax.Array  # (N, D) current observations, as the environments give them
    obs_moments: rn.Moments
    reward_scale: rn.RewardScale
    episode_return: jax.Array  # (N,) unscaled return of each running episode
    key: jax.Array


def init_params(key, obs_size: int, init_log_std: float) -> dict:
    k_actor, k_critic = jax.random.split(key)
    sizes = (obs_size, HIDDEN, HIDDEN, 1)
    return {"actor": _init_mlp(k_actor, sizes, 0.01), "log_std": jnp.full((1,), init_log_std, jnp.float32),
            "critic": _init_mlp(k_critic, sizes, 1.0)}


def _value(params, obs):
    return _mlp(params["critic"], obs)[..., 0]


def make_program(s: ChainPPOSettings):
    """(init(key) -> Runner, update(runner) -> (runner, (sum, count) of finished returns),
    collect(runner) -> runner, observe(runner) -> normalized obs): pure functions to trace."""
    env, env_params = jax_chain.make(s.links)
    n, t_, d = s.num_envs, s.num_steps, env.obs_shape[0]
    batch, mb = s.batch_size, s.minibatch_size
    tx = optax.chain(optax.clip_by_global_norm(s.max_grad_norm), optax.adam(s.learning_rate, eps=s.adam_eps))
    reset_n = jax.vmap(env.reset, in_axes=(0, None))
    step_n = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def normalized(moments, raw):
        return rn.normalize(moments, raw, s.obs_clip, jnp) if s.norm_obs else raw

    def init(key) -> Runner:
        k_params, k_env, key = jax.random.split(key, 3)
        params = init_params(k_params, d, s.init_log_std)
        raw, env_state = reset_n(jax.random.split(k_env, n), env_params)
        return Runner(params, tx.init(params), env_state, raw, rn.initial_moments((d,), jnp),
                      rn.initial_reward_scale(n, jnp), jnp.zeros(n), key)

    def rollout(runner: Runner):
        params = runner.params

        def one_step(carry, _):
            env_state, raw, moments, scale, ep_ret, key = carry
            key, k_act, k_env = jax.random.split(key, 3)
            if s.norm_obs:
                moments = rn.update(moments, raw)
            obs = normalized(moments, raw)
            mean = _mlp(params["actor"], obs)
            action = mean + jnp.exp(params["log_std"]) * jax.random.normal(k_act, mean.shape)
            logp = gaussian.log_prob(mean, params["log_std"], action, jnp)
            raw, env_state, reward, term, trunc, info = step_n(jax.random.split(k_env, n), env_state,
                                                               jnp.clip(action[:, 0], -1.0, 1.0), env_params)
            scaled = reward
            if s.norm_reward:
                scale, scaled = rn.scale_rewards(scale, reward, term.astype(jnp.float32), s.gamma, s.reward_clip, jnp)
            ep_ret = ep_ret + reward
            done = term | trunc
            finished = (jnp.sum(jnp.where(done, ep_ret, 0.0)), jnp.sum(done))
            tr = Transition(obs, action, logp, scaled, term, trunc, normalized(moments, info["final_observation"]))
            return (env_state, raw, moments, scale, jnp.where(done, 0.0, ep_ret), key), (tr, finished)

        carry = (runner.env_state, runner.raw_obs, runner.obs_moments, runner.reward_scale, runner.episode_return,
                 runner.key)
        (env_state, raw, moments, scale, ep_ret, key), (traj, finished) = jax.lax.scan(one_step, carry, None, length=t_)
        runner = runner._replace(env_state=env_state, raw_obs=raw, obs_moments=moments, reward_scale=scale,
                                 episode_return=ep_ret, key=key)
        return runner, traj, finished

    def gae(params, traj: Transition, last_obs):
        adv, values = parts.gae(_value, params, traj, last_obs, s.gamma, s.gae_lambda)
        return adv, adv + values, values

    def loss_fn(params, obs, action, logp_old, adv, target, value_old):
        logp = gaussian.log_prob(_mlp(params["actor"], obs), params["log_std"], action, jnp)
        if s.norm_adv:
            adv = (adv - adv.mean()) / (adv.std(ddof=1) + 1e-8)
        ratio = jnp.exp(logp - logp_old)
        pg_loss = jnp.maximum(-adv * ratio, -adv * jnp.clip(ratio, 1 - s.clip_coef, 1 + s.clip_coef)).mean()
        value = _value(params, obs)
        v_loss = jnp.square(value - target)
        if s.clip_vloss:
            clipped = value_old + jnp.clip(value - value_old, -s.clip_coef, s.clip_coef)
            v_loss = jnp.maximum(v_loss, jnp.square(clipped - target))
        loss = pg_loss + s.vf_coef * 0.5 * v_loss.mean()
        if s.ent_coef > 0:
            loss = loss - s.ent_coef * gaussian.entropy(params["log_std"], jnp)
        return loss

    grad_fn = jax.grad(loss_fn)

    def update(runner: Runner):
        runner, traj, finished = rollout(runner)
        adv, target, values = gae(runner.params, traj, normalized(runner.obs_moments, runner.raw_obs))
        data = (traj.obs.reshape(batch, d), traj.action.reshape(batch, 1), traj.logp.reshape(batch),
                adv.reshape(batch), target.reshape(batch), values.reshape(batch))

        params, opt_state, key = parts.sgd_epochs(grad_fn, tx, runner.params, runner.opt_state, runner.key, data,
                                                  batch=batch, num_minibatches=s.num_minibatches, minibatch_size=mb,
                                                  epochs=s.update_epochs)
        total = (finished[0].sum(), finished[1].sum())
        return runner._replace(params=params, opt_state=opt_state, key=key), total

    def collect_only(runner: Runner):
        return rollout(runner)[0]

    return init, update, collect_only


@functools.lru_cache(maxsize=8)
def _compiled(s: ChainPPOSettings, updates_per_call: int):
    """(init, chunk, collect_only) for these settings, compiled once per process."""
    init, update, collect_only = make_program(s)

    chunk = parts.updates_in_one_call(update, updates_per_call)
    init = jax.jit(init)
    example = jax.eval_shape(init, jax.random.key(0))
    return init, jax.jit(chunk, donate_argnums=0).lower(example).compile(), jax.jit(collect_only)


def policy_arrays(runner: Runner, s: ChainPPOSettings) -> dict:
    """The deterministic policy (``chain_policy``) of the runner's actor and normalization."""
    m = runner.obs_moments
    if s.norm_obs:
        return make_policy_arrays(runner.params["actor"], runner.params["log_std"], m.mean, m.var, s.obs_clip)
    d = m.mean.shape[0]
    return make_policy_arrays(runner.params["actor"], runner.params["log_std"], np.zeros(d), np.ones(d),
                              np.finfo(np.float32).max)


def train(run: ChainRun, *, log=None, progress=None) -> TrainResult:
    """Train ``run`` (collector ``jax``) until gymnasium's judge says solved or the budget is spent."""
    s = run.settings
    clock = ChainClock(run, log=log, progress=progress)
    start = time.perf_counter()
    init, chunk, collect_only = _compiled(s, clock.updates_per_check)
    runner = jax.block_until_ready(init(jax.random.key(run.seed)))
    device = str(jax.devices()[0].platform)
    clock.start(compile_s=time.perf_counter() - start, device="cuda" if device == "gpu" else device)
    program_s = 0.0
    while True:
        t = time.perf_counter()
        runner, ret_sum, count = chunk(runner)
        count = int(count)  # waits for the chunk
        program_s += time.perf_counter() - t
        clock.add_update(clock.updates_per_check * s.batch_size, float(ret_sum) / count if count else math.nan,
                         bootstraps_truncation=True, updates=clock.updates_per_check)
        if clock.check(policy_arrays(runner, s)) or clock.out_of_budget():
            break
    arrays = policy_arrays(runner, s)
    collect_s = min(program_s, parts.collect_seconds_per_update(collect_only, runner) * clock.updates)
    clock.set_parts(collect_s, program_s - collect_s)
    return clock.finish(arrays, trainer="jax-ppo-continuous")


