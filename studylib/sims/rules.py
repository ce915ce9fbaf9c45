"""The episode rules every array implementation shares, written once for numpy, torch and
jax.numpy, and the record of one simulator's rules (``EpisodeRules``): what a simulator provides in
array form so that the generic implementations (``studylib.envs.torch_env.TorchEnv``,
``jax_env.JaxEnv``, ``torch_compile_env.TorchCompileEnv``) run it with no code of their own.

A simulator provides three pure functions of (..., p, xp): ``reset_states(seed, env, episode, p,
xp, wrap)`` (a new episode's state rows, from the counter hash), ``observation(state, p, xp)`` and
``env_step(state, actions, p, xp) -> (next_state, final_observation, reward, terminated)`` (the
physics and what its reference reads after it). Everything else is here: the truncation, the
same-step autoreset and the episode counters (``studylib.episodes.end_of_step``, CartPole's), the
hashed uniforms and normals every language reproduces (``reset_uniform``, ``normal``), the
no-policy controls and the Gaussian policy's noise, keyed by (seed, env, episode, step in episode).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np

from ..episodes import MASK32, end_of_step, hash4
from ..policy import gaussian_actions

CONTROL_SALT = 0x6A09E667  # the no-policy controls' (cuda/chain.cuh's ch_hash_ctrl)
NOISE_SALTS = (0xBB67AE85, 0xA54FF53A)  # the policy's Gaussian noise: Box–Muller's two uniforms
UNIFORM_UNIT = 2.0 ** -24  # (2 b + 1) 2⁻²⁴ for a 23-bit b: the open interval (0, 1), exact in float32


def _float32(x, xp):
    return x.to(xp.float32) if hasattr(x, "to") else x.astype(xp.float32)


def _u32(x):
    """An integer array (numpy, jax) or scalar as uint32: hash4's arithmetic then wraps at 32 bits."""
    return x.astype(np.uint32) if hasattr(x, "astype") else np.uint32(x)


def _salted(salt: int, seed, like, wrap):
    """seed ^ salt as hash4 takes it: a Python int (torch's int64 tensors, with ``wrap``), or a
    uint32 array of ``like``'s shape (numpy, jax; ``seed`` may be a traced jax uint32)."""
    if wrap is not None:
        return (int(seed) ^ salt) & MASK32
    if isinstance(seed, (int, np.integer)):
        value = np.uint32((int(seed) ^ salt) & MASK32)
        return np.full(np.shape(like), value, np.uint32) if isinstance(like, np.ndarray) else like * 0 + value
    return like * 0 + (seed ^ np.uint32(salt))


def reset_uniform(salt: int, seed, env, episode, component, xp=np, wrap=None):
    """U(0, 1) on the 2²³ midpoints (2 b + 1) 2⁻²⁴, b the top 23 bits of hash4(seed ^ salt, env,
    episode, component): never 0 (Box–Muller takes its log), exact in float32. ``env``, ``episode``
    and ``component`` broadcast; integer arrays (numpy, jax: taken as uint32, which wrap as the C
    code's) or int64 tensors with ``wrap`` (torch)."""
    shift = 9 if wrap is not None else np.uint32(9)
    if wrap is None:
        env, episode, component = _u32(env), _u32(episode), _u32(component)
    bits = hash4(_salted(salt, seed, env * 0 + episode * 0 + component * 0, wrap), env, episode, component,
                 wrap) >> shift
    return (_float32(bits, xp) * 2.0 + 1.0) * UNIFORM_UNIT


def reset_uniforms(salt: int, seed, env, episode, count: int, xp=np, wrap=None):
    """(N, count): ``reset_uniform`` of components 0..count-1 for each env (N,) in its episode (N,),
    the rows a new episode's state is drawn from. The component index is made where ``env`` lives
    (torch: on its device; a CPU index beside CUDA env indices is an error in torch, not a copy)."""
    comp = (xp.arange(count, dtype=xp.int64, device=env.device) if wrap is not None
            else xp.arange(count, dtype=xp.uint32))[None, :]
    return reset_uniform(salt, seed, env[:, None], episode[:, None], comp, xp, wrap)


def normal(u1, u2, xp=np):
    """Box–Muller: sqrt(−2 ln u1) cos(2π u2), one standard normal from two uniforms in (0, 1)."""
    return xp.sqrt(-2.0 * xp.log(u1)) * xp.cos((2.0 * math.pi) * u2)


def hash_controls(seed, env, episode, elapsed, xp=np, wrap=None):
    """The no-policy control (paper Fig 8/9: "actions ... generated inside the simulation") of each
    env: (hash4(seed ^ CONTROL_SALT, env, episode, elapsed) >> 8) 2⁻²³ − 1, uniform in [-1, 1) on
    a 24-bit grid, exact in float32 (cuda/chain.cuh's ch_hash_ctrl, bit for bit)."""
    shift = 8 if wrap is not None else np.uint32(8)
    if wrap is None:
        env, episode, elapsed = _u32(env), _u32(episode), _u32(elapsed)
    bits = hash4(_salted(CONTROL_SALT, seed, env * 0 + episode * 0, wrap), env, episode, elapsed, wrap) >> shift
    return _float32(bits, xp) * (2.0 ** -23) - 1.0


def policy_noise(seed, env, episode, elapsed, xp=np, wrap=None):
    """The Gaussian policy's standard normal of each env at (episode, step in episode): Box–Muller
    of two hashed uniforms (NOISE_SALTS), the same in every implementation."""
    u1 = reset_uniform(NOISE_SALTS[0], seed, env, episode, elapsed, xp, wrap)
    u2 = reset_uniform(NOISE_SALTS[1], seed, env, episode, elapsed, xp, wrap)
    return normal(u1, u2, xp)


class EpisodeStep(NamedTuple):
    """One environment step of N environments. ``state`` already holds the next episode's first state
    for finished envs (same-step reset); ``final_obs`` is the observation at the end of the step,
    before that reset, and ``observation`` the one ``step`` returns (the new episode's first)."""

    state: object  # (N, state size)
    elapsed: object  # (N,) steps into the current episode (0 after a reset)
    episode: object  # (N,) episodes started
    observation: object  # (N, observation size)
    reward: object  # (N,) of the step taken (the finished episode's last, for a finished env)
    terminated: object  # (N,) bool
    truncated: object  # (N,) bool
    done: object  # terminated | truncated
    final_obs: object  # (N, observation size)


def advance(state, elapsed, episode, actions, fresh, p, xp, step, observation) -> EpisodeStep:
    """One environment step of N environments with ``actions`` (N,): the simulator's ``step``
    (physics, observation, reward, termination), truncation at ``p.max_episode_steps``, and the
    same-step reset to ``fresh`` (N, state size) where the episode ended (``episodes.end_of_step``'s
    counters); the returned observation is the new episode's first there (``observation`` of
    ``fresh``). Pure: torch, torch.compile and jax.jit run these lines as they are."""
    next_state, final_obs, reward, terminated = step(state, actions, p, xp)
    truncated, done, elapsed, episode = end_of_step(terminated, elapsed, episode, p, xp)
    state = xp.where(done[:, None], fresh, next_state)
    obs = xp.where(done[:, None], observation(fresh, p, xp), final_obs)
    return EpisodeStep(state, elapsed, episode, obs, reward, terminated, truncated, done, final_obs)


def controls(policy: str, obs, seed, env, episode, elapsed, weights, log_std: float, xp=np, wrap=None):
    """The controls (N,) a rollout steps with: the no-policy hashed controls (``policy`` "none"),
    or the Gaussian MLP's samples on ``obs`` (N, observation size) with the hashed noise ("mlp";
    ``studylib.policy.gaussian_actions``), in any array module."""
    if policy == "none":
        return hash_controls(seed, env, episode, elapsed, xp, wrap)
    return gaussian_actions(weights, obs, policy_noise(seed, env, episode, elapsed, xp, wrap), log_std, xp)


@dataclass(frozen=True)
class EpisodeRules:
    """One simulator's episode rules in array form (its record's ``episode``): its three functions
    (see the module doc) and, optionally, the fastest formulation of its physics for XLA
    (``xla_env_step(p)``) and for an eager framework (``eager_env_step(p)``), each a function of
    ``env_step``'s contract (None: ``env_step``)."""

    reset_states: Callable
    observation: Callable
    env_step: Callable
    xla_env_step: Callable | None = None
    eager_env_step: Callable | None = None

    def step_with_reset(self, state, elapsed, episode, actions, seed, env, p, xp=np, wrap=None, step=None) -> EpisodeStep:
        """``advance`` with the next episode's hashed reset draws (``reset_states`` of episode + 1)
        as the fresh states: what every array implementation runs each step. ``step``: the physics
        (default ``env_step``)."""
        fresh = self.reset_states(seed, env, episode + 1, p, xp, wrap)
        fresh = fresh.astype(state.dtype) if wrap is None else fresh
        return advance(state, elapsed, episode, actions, fresh, p, xp, step or self.env_step, self.observation)

    def xla_step(self, p):
        """The physics jax traces for ``p``."""
        return self.env_step if self.xla_env_step is None else self.xla_env_step(p)

    def eager_step(self, p):
        """The physics torch (eager, and torch.compile's trace) runs for ``p``."""
        return self.env_step if self.eager_env_step is None else self.eager_env_step(p)

    controls = staticmethod(controls)
