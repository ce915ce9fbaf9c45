"""The chain's episode step, once for every array module (numpy, torch, jax.numpy): gymnasium's
InvertedDoublePendulum-v5 environment generalized to n links, with the study's same-step
autoreset and episode counting (``studylib.episodes``, as CartPole's). cuda/chain.cuh holds the
same rules once in C.

v5's ``step`` (gymnasium/envs/mujoco/inverted_double_pendulum_v5.py), mirrored by
``dynamics.env_step`` (observation, reward, termination) and ``advance`` here:

    self.do_simulation(action, self.frame_skip)
    x, _, y = self.data.site_xpos[0]
    observation = self._get_obs()
    terminated = bool(y <= 1)
    reward, reward_info = self._get_rew(x, y, terminated)

and its ``reset_model``:

    noise_low = -self._reset_noise_scale
    noise_high = self._reset_noise_scale
    self.set_state(
        self.init_qpos + self.np_random.uniform(low=noise_low, high=noise_high, size=self.model.nq),
        self.init_qvel + self.np_random.standard_normal(self.model.nv) * self._reset_noise_scale,
    )

with ``reset_noise_scale`` = 0.1 and init_qpos = init_qvel = 0 (the chain upright at rest);
``max_episode_steps`` = 1000 (its registration's TimeLimit): ``truncated`` after 1000 steps.

The reset draws come from the counter hash (``studylib.episodes.hash4``), keyed by (seed, env,
episode, component), as cpp/cuda/fused draw CartPole's: the same numbers in every
implementation and language, with nothing to carry and nothing crossing to the host. v5's
uniform is ``reset_uniform`` (a 23-bit grid, exact in float32), its normal Box–Muller's from two
such uniforms. So are the Gaussian policy's noise (``policy_noise``) and the no-policy controls
(``hash_controls``: uniform in [-1, 1), keyed by (seed, env, episode, step in episode) as
CartPole's hashed actions).

InvertedPendulum-v5 (n = 1) is not followed where it differs: its model is another file (a 1.5 m
pole of another capsule on a cart of gear 3, timestep 0.02 s, frame_skip 2), its observation the
raw (qpos, qvel), its reward 1 a step and its termination |θ| > 0.2 or a non-finite state. The
chain at n = 1 is the double pendulum's model with one link, so that every n is one family with
one reward: InvertedPendulum-v5's rules at n = 1 would change the task between n = 1 and n = 2.
"""

from __future__ import annotations

import numpy as np

from .. import rules
from ..rules import (CONTROL_SALT, NOISE_SALTS, UNIFORM_UNIT, EpisodeRules, EpisodeStep, controls,  # noqa: F401
                     hash_controls, normal, policy_noise, reset_uniform, reset_uniforms)
from .dynamics import env_step, observation
from .model import ChainParams

RESET_NOISE = 0.1  # v5's reset_noise_scale: qpos + U(±0.1), qvel + 0.1 N(0, 1)
RESET_SALT = 0x3C6EF372  # keys the chain's reset draws (CartPole's are 0xA511E9B3)


def reset_states(seed, env, episode, p: ChainParams, xp=np, wrap=None):
    """(N, 2(n+1)): v5's reset draw of episode ``episode`` (N,) of each env ``env`` (N,): qpos
    uniform in ±0.1 (components 0..n) and qvel 0.1 N(0, 1) (Box–Muller of components n+1+2i and
    n+2+2i). float32 on torch/jax; numpy computes it in float32 too (the draws, not the physics)."""
    n1 = p.links + 1
    u = reset_uniforms(RESET_SALT, seed, env, episode, 3 * n1, xp, wrap)
    qpos = RESET_NOISE * (2.0 * u[:, :n1] - 1.0)
    qvel = RESET_NOISE * normal(u[:, n1::2], u[:, n1 + 1::2], xp)
    return xp.concatenate((qpos, qvel), axis=1)


def xla_env_step(p: ChainParams):
    """XLA's fastest formulation of the physics, observation, reward and termination for ``p``
    (``dynamics_xla.best_env_step``: what the jax implementation and the gymnax-style functions
    trace instead of ``dynamics.env_step``)."""
    from . import dynamics_xla

    return dynamics_xla.best_env_step(p)


def advance(state, elapsed, episode, actions, fresh, p: ChainParams, xp=np, step=env_step) -> EpisodeStep:
    """One environment step of N chains with controls ``actions`` (N,) (clipped to [-1, 1] by the
    actuator, as MuJoCo's ctrlrange): v5's frame_skip mj_steps, observation, reward and
    termination (``dynamics.env_step``, or ``step`` of its contract), truncation at
    ``max_episode_steps``, and the same-step reset to ``fresh`` (N, 2(n+1)) where the episode
    ended (``studylib.sims.rules.advance``)."""
    return rules.advance(state, elapsed, episode, actions, fresh, p, xp, step, observation)


# Up to this n an eager framework runs the columns (dynamics.env_step: ~10 n² calls a forward
# dynamics, each on (N,) arrays); above it the batched matrices (dynamics_batched: a few dozen
# calls on (N, n+1, n+1) arrays and a batched solve, whatever n).
EAGER_COLUMNS_UP_TO = 4


def eager_env_step(p: ChainParams):
    """The physics torch runs for ``p``: the columns up to ``EAGER_COLUMNS_UP_TO`` links, the batched
    matrices above."""
    from . import dynamics_batched

    return env_step if p.links <= EAGER_COLUMNS_UP_TO else dynamics_batched.env_step


RULES = EpisodeRules(reset_states, observation, env_step, xla_env_step, eager_env_step)  # the record names these
step_with_reset = RULES.step_with_reset
xla_step = RULES.xla_step
