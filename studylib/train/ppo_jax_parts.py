"""The pieces of a fully jitted PPO that CartPole's trainer (``cartpole.ppo_jax``) and the chain's
(``chain.ppo_jax``) share, written once: GAE over a T-step trajectory with truncation
bootstrapped from the pre-reset observation, the epochs of shuffled minibatch steps, K updates
in one scan, and the collection timed alone.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np
import optax


def gae(value, params, traj, last_obs, gamma: float, gae_lambda: float):
    """(advantages, values) of ``traj`` (T, N) under ``value(params, obs)``: a truncated step
    bootstraps from its pre-reset observation (``traj.final_obs``), a terminated one from nothing."""
    values = value(params, traj.obs)
    next_values = jnp.concatenate([values[1:], value(params, last_obs)[None]])
    cut = traj.truncated & ~traj.terminated  # bootstrap from the pre-reset observation
    next_values = jnp.where(cut, value(params, traj.final_obs), next_values)
    delta = traj.reward + gamma * next_values * (1.0 - traj.terminated) - values
    carry_on = gamma * gae_lambda * (1.0 - (traj.terminated | traj.truncated))

    def back(last, x):
        dlt, c = x
        last = dlt + c * last
        return last, last

    _, adv = jax.lax.scan(back, jnp.zeros(values.shape[1:]), (delta, carry_on), reverse=True)
    return adv, values


def sgd_epochs(grad_fn, tx, params, opt_state, key, data, *, batch: int, num_minibatches: int,
               minibatch_size: int, epochs: int):
    """``epochs`` passes over ``data`` (arrays with the batch first), each a fresh permutation cut
    into ``num_minibatches`` minibatches, one optimizer step per minibatch: (params, opt_state, key)."""
    def epoch(carry, _):
        params, opt_state, key = carry
        key, k = jax.random.split(key)
        order = jax.random.permutation(k, batch)[: num_minibatches * minibatch_size].reshape(
            num_minibatches, minibatch_size)

        def minibatch(carry, idx):
            params, opt_state = carry
            grads = grad_fn(params, *(x[idx] for x in data))
            updates, opt_state = tx.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), None

        (params, opt_state), _ = jax.lax.scan(minibatch, (params, opt_state), order)
        return (params, opt_state, key), None

    (params, opt_state, key), _ = jax.lax.scan(epoch, (params, opt_state, key), None, length=epochs)
    return params, opt_state, key


def updates_in_one_call(update, num_updates: int):
    """``runner -> (runner, finished episodes' return sum, their count)`` over ``num_updates``
    updates in one scan (the updates between two checks)."""
    def run(runner):
        runner, (sums, counts) = jax.lax.scan(lambda r, _: update(r), runner, None, length=num_updates)
        return runner, sums.sum(), counts.sum()

    return run


def collect_seconds_per_update(fn, runner, repeats: int = 5) -> float:
    """Seconds one update's collection takes alone (the median of a few calls, after a warm-up)."""
    runner = jax.block_until_ready(fn(runner))
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        runner = jax.block_until_ready(fn(runner))
        times.append(time.perf_counter() - t)
    return float(np.median(times))
