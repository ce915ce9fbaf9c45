"""Episode semantics shared by all implementations, and the counter hash of cuda/cartpole.cuh.

Autoreset: SAME_STEP. A vectorized implementation resets a finished environment inside the
step that finished it: ``step`` returns the flags (terminated, truncated) and reward of the
finished episode together with the *first observation of the next episode*; the terminal
observation stays available as ``env.final_obs()``. This is gymnasium's
``AutoresetMode.SAME_STEP`` (studylib.adapters.gym_vector adds the ``final_obs`` info entry and offers
NEXT_STEP, gymnasium's default, on top of it); gymnasium's own
``CartPoleVectorEnv`` uses NEXT_STEP instead (it returns the terminal observation and resets on
the following call, ignoring that call's action and giving reward 0). Every step of ours is a
real transition with reward 1, so samples/s counts only real transitions.

Rewards: 1 every step, including the terminating one (CartPole-v1). Truncation: after
``CartPoleParams.max_episode_steps`` (500) steps of an episode, as CartPole-v1's TimeLimit; a
step can be both terminated and truncated, as in gymnasium.

The counter hash (lowbias32 by C. Wellons) gives the "no policy" actions and the cpp/cuda reset
draws from (seed, env, episode, step) with no state to carry and nothing crossing to the host.
It is written once here for array modules and once in ``cuda/cartpole.cuh``; a test checks that
they agree bit for bit.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .sims.cartpole import CARTPOLE_V1, STATE_SIZE, CartPoleParams, carry, integrate, is_terminated

_MIX_MULTIPLIERS = (0x7FEB352D, 0x846CA68B)
_KEY_MULTIPLIERS = (0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F)
RESET_SALT = 0xA511E9B3
MASK32 = 0xFFFFFFFF


def _constants(wrap):
    # uint32 arrays (numpy, jax) need uint32-typed constants (jax rejects Python ints >= 2**31);
    # int64 tensors (torch, with a masking ``wrap``) take plain Python ints.
    return (lambda c: c) if wrap is not None else np.uint32


def mix32(x, wrap=None):
    """lowbias32 on uint32 arrays (numpy, jax). For int64 tensors (torch) pass ``wrap`` that masks
    to 32 bits after each multiply, which then gives the same bits."""
    k, w = _constants(wrap), wrap or (lambda v: v)
    x = x ^ (x >> k(16))
    x = w(x * k(_MIX_MULTIPLIERS[0]))
    x = x ^ (x >> k(15))
    x = w(x * k(_MIX_MULTIPLIERS[1]))
    return x ^ (x >> k(16))


def hash4(a, b, c, d, wrap=None):
    k, w = _constants(wrap), wrap or (lambda v: v)
    m = _KEY_MULTIPLIERS
    return mix32(w(w(a * k(m[0])) + w(b * k(m[1])) + w(c * k(m[2])) + w(d * k(m[3]))), wrap)


def hash_actions(seed, env, episode, elapsed, wrap=None):
    """The no-policy action of each env: top bit of hash4(seed, env, episode, step-in-episode)."""
    return hash4(seed, env, episode, elapsed, wrap) >> _constants(wrap)(31)


def hash_actions_numpy(seed: int, episode: np.ndarray, elapsed: np.ndarray) -> np.ndarray:
    n = len(episode)
    u32 = np.uint32
    seeds = np.full(n, seed, dtype=u32)  # arrays wrap silently; numpy scalars would warn
    return hash_actions(seeds, np.arange(n, dtype=u32), episode.astype(u32), elapsed.astype(u32)).astype(np.int64)


def reset_values_numpy(seed: int, env: np.ndarray, episode: np.ndarray, row_len: int) -> np.ndarray:
    """The cpp/cuda reset draws (cp_reset_value), as float32, shape (len(env), row_len)."""
    u32 = np.uint32
    bits = hash4(
        np.full((len(env), 1), seed ^ RESET_SALT, dtype=u32),
        env.astype(u32)[:, None],
        episode.astype(u32)[:, None],
        np.arange(row_len, dtype=u32)[None, :],
    ) >> u32(8)
    centered = bits.astype(np.int64) - 2**23  # exact in float32, as in cp_reset_value
    return centered.astype(np.float32) * (np.float32(0.1) / np.float32(2**24))


# ---- the episode step, once for every array module (numpy, torch, jax.numpy) ---------------------
# cuda/cartpole.cuh holds the same rules once in C (cp_thread_rollout / the CPU block loop).


class EpisodeStep(NamedTuple):
    """One step's result. ``state`` already holds the next episode's first CartPole for finished
    envs (same-step reset); ``final_obs`` is the CartPole at the end of the step, before that reset."""

    state: object  # (N, 4S)
    elapsed: object  # (N,) steps into the current episode (0 after a reset)
    episode: object  # (N,) episodes started; keys the reset draws of cpp/cuda/fused
    terminated: object  # (N,) bool
    truncated: object  # (N,) bool
    done: object  # terminated | truncated
    final_obs: object  # (N, 4)


def end_of_step(terminated, elapsed, episode, p: CartPoleParams = CARTPOLE_V1, xp=np):
    """Truncation at ``max_episode_steps`` and the counters of a same-step reset.

    Returns (truncated, done, elapsed, episode) after the step: a finished env's ``elapsed`` is 0
    and its ``episode`` one more. A step may be both terminated and truncated, as in gymnasium.
    """
    elapsed = elapsed + 1
    truncated = elapsed >= p.max_episode_steps
    done = terminated | truncated
    return truncated, done, xp.where(done, 0, elapsed), episode + done


def advance(state, elapsed, episode, actions, fresh, *, state_factor: int, compute_factor: int,
            p: CartPoleParams = CARTPOLE_V1, xp=np) -> EpisodeStep:
    """One step of N envs: the force of each action, C sub-steps of the CartPole, termination,
    truncation, the same-step reset of the CartPole to ``fresh`` (N, 4) where the episode ended,
    and the state factor's carried floats (columns 4..4S, ``dynamics.carry``) read and written.

    Pure: torch, torch.compile and jax.jit run these lines as they are (``xp`` = torch / jax.numpy).
    """
    # Python floats: each module's default float (float32 for torch and jax, float64 for numpy).
    force = xp.where(actions == 1, p.force_mag, -p.force_mag)
    final_obs = integrate(state[:, :STATE_SIZE], force, compute_factor, p, xp)
    terminated = is_terminated(final_obs, p)
    truncated, done, elapsed, episode = end_of_step(terminated, elapsed, episode, p, xp)
    cartpole = xp.where(done[:, None], fresh, final_obs)
    if state_factor > 1:
        cartpole = xp.concatenate((cartpole, carry(state[:, STATE_SIZE:], xp)), axis=1)
    return EpisodeStep(cartpole, elapsed, episode, terminated, truncated, done, final_obs)
