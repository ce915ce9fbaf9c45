"""Observation normalization and reward scaling, as gymnasium's wrappers that cleanrl's
ppo_continuous_action.py puts around every environment::

    env = gym.wrappers.NormalizeObservation(env)
    env = gym.wrappers.TransformObservation(env, lambda obs: np.clip(obs, -10, 10))
    env = gym.wrappers.NormalizeReward(env, gamma=gamma)
    env = gym.wrappers.TransformReward(env, lambda reward: np.clip(reward, -10, 10))

but kept by the trainer, not by an environment wrapper, so that they work on the vectorized
batches of every collector (numpy, torch or jax arrays: the functions take the array module).
The statistics are gymnasium's ``RunningMeanStd`` (the parallel update of Chan et al. from a
batch's mean and variance, initial count 1e-4, epsilon 1e-8); the reward is divided by the
standard deviation of the running discounted return, as NormalizeReward's::

    self.accumulated_reward = self.accumulated_reward * self.gamma * (1 - terminated) + reward
    self.return_rms.update(self.accumulated_reward)
    normalized_reward = reward / np.sqrt(self.return_rms.var + self.epsilon)

One difference: with N environments per call the statistics are updated once per step with the
N rows of that step (gymnasium's vector wrappers do the same), where cleanrl's single-env
wrappers update once per row.
"""

from __future__ import annotations

from typing import NamedTuple

EPSILON = 1e-8  # gymnasium's NormalizeObservation / NormalizeReward epsilon
INITIAL_COUNT = 1e-4  # gymnasium's RunningMeanStd(epsilon=1e-4): the count before any data


class Moments(NamedTuple):
    """A running mean and (population) variance of rows of one shape, and how many rows."""

    mean: object
    var: object
    count: object


def initial_moments(shape, xp, **array_kwargs) -> Moments:
    return Moments(xp.zeros(shape, **array_kwargs), xp.ones(shape, **array_kwargs),
                   xp.asarray(INITIAL_COUNT, **array_kwargs))


def update(m: Moments, batch) -> Moments:
    """``RunningMeanStd.update(batch)``: the moments of the rows seen so far and ``batch``'s rows."""
    n = batch.shape[0]
    batch_mean = batch.mean(0)
    batch_var = ((batch - batch_mean) ** 2).mean(0)
    delta = batch_mean - m.mean
    total = m.count + n
    mean = m.mean + delta * n / total
    m2 = m.var * m.count + batch_var * n + delta * delta * m.count * n / total
    return Moments(mean, m2 / total, total)


def normalize(m: Moments, obs, clip: float, xp):
    """NormalizeObservation then the clip to [-clip, clip]: what the networks see."""
    return xp.clip((obs - m.mean) / xp.sqrt(m.var + EPSILON), -clip, clip)


class RewardScale(NamedTuple):
    """NormalizeReward's state: the moments of the discounted return and each env's return."""

    moments: Moments
    discounted: object  # (N,) each environment's running discounted return


def initial_reward_scale(num_envs: int, xp, **array_kwargs) -> RewardScale:
    return RewardScale(initial_moments((), xp, **array_kwargs), xp.zeros(num_envs, **array_kwargs))


def scale_rewards(state: RewardScale, reward, terminated, gamma: float, clip: float, xp):
    """(new state, the rewards divided by the return's standard deviation and clipped to ±clip)."""
    discounted = state.discounted * gamma * (1.0 - terminated) + reward
    moments = update(state.moments, discounted)
    scaled = xp.clip(reward / xp.sqrt(moments.var + EPSILON), -clip, clip)
    return RewardScale(moments, discounted), scaled


def scale_reward_sequence(state: RewardScale, rewards, terminated, gamma: float, clip: float):
    """``scale_rewards`` over T steps at once, on numpy float64 arrays (rewards, terminated: (T, N);
    ``state`` from ``initial_reward_scale(N, np, dtype=np.float64)``): for a trajectory recorded
    whole (the fused kernel's), the same result as T calls up to float rounding, in a few array
    operations instead of T rounds of small ones. The discounted returns go step by step (N values
    a step); the moments after step t are then those of every row so far, which is what t of
    Chan's updates give: count_t = c0 + t N, mean_t = (c0 m0 + Σ rows) / count_t, var_t =
    (c0 (v0 + m0²) + Σ rows²) / count_t − mean_t². Returns (the new state, the scaled rewards (T, N))."""
    import numpy as np

    r, ended = np.asarray(rewards, np.float64), np.asarray(terminated, np.float64)
    num_steps, num_envs = r.shape
    returns, discounted = np.empty_like(r), np.asarray(state.discounted, np.float64)
    for t in range(num_steps):
        discounted = discounted * gamma * (1.0 - ended[t]) + r[t]
        returns[t] = discounted
    m = state.moments
    c0, m0, v0 = float(m.count), float(m.mean), float(m.var)
    count = c0 + num_envs * np.arange(1, num_steps + 1, dtype=np.float64)
    mean = (c0 * m0 + np.cumsum(returns.sum(1))) / count
    var = (c0 * (v0 + m0 * m0) + np.cumsum((returns * returns).sum(1))) / count - mean * mean
    scaled = np.clip(r / np.sqrt(var + EPSILON)[:, None], -clip, clip)
    return RewardScale(Moments(np.float64(mean[-1]), np.float64(var[-1]), np.float64(count[-1])), discounted), scaled
