"""Our implementations as a gymnasium vector environment, for RL code.

    import gymnasium, studylib.gym_vector                      # the import registers the id
    envs = gymnasium.make_vec("studylib/CartPole-v1", num_envs=4096,
                              vectorization_mode="vector_entry_point", impl="fused")
    obs, info = envs.reset(seed=0)
    obs, reward, terminated, truncated, info = envs.step(envs.action_space.sample())

``StudylibVectorEnv`` wraps ``studylib.make(impl, num_envs, ...)`` (any of
``studylib.IMPLEMENTATIONS``) in ``gymnasium.vector.VectorEnv``'s API. The autoreset mode is
``AutoresetMode.SAME_STEP`` (see studylib/episodes.py): the step that ends an episode returns its
reward and flags with the first observation of the next episode; the terminal observation is not
returned (no ``final_obs`` info entry: CartPole's terminal state is only needed to bootstrap
truncated episodes, and carrying it would cost a copy of the state every step).

Seeding follows gymnasium: ``reset(seed=s)`` seeds ``self.np_random`` and starts every env's
episode 0 from ``s``; ``reset()`` without a seed draws a fresh seed from ``self.np_random``, so
successive unseeded resets start new, different episodes, reproducibly given the first seed.
"""

from __future__ import annotations

import dataclasses

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from .registry import make
from .settings import MAX_SEED
from .dynamics import CARTPOLE_V1
from .errors import ConfigError

ENV_ID = "studylib/CartPole-v1"


def observation_space(p=CARTPOLE_V1) -> spaces.Box:
    """gymnasium's CartPole-v1 observation space (angle and position bounds at twice the
    termination thresholds, velocities unbounded)."""
    high = np.array([p.x_threshold * 2, np.inf, p.theta_threshold_radians * 2, np.inf], dtype=np.float32)
    return spaces.Box(-high, high, dtype=np.float32)


class StudylibVectorEnv(VectorEnv):
    """``num_envs`` CartPole-v1 environments of studylib implementation ``impl``.

    Keyword arguments go to ``studylib.make`` (device, state_factor, compute_factor,
    policy_seed); ``max_episode_steps`` replaces CartPole-v1's 500.
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 1, impl: str = "cpp", *, seed: int = 0, device=None,
                 state_factor: int = 1, compute_factor: int = 1, policy_seed: int = 0,
                 max_episode_steps: int | None = None, render_mode: str | None = None):
        if render_mode is not None:
            raise ConfigError(f"render_mode {render_mode!r} is not supported (no rendering)")
        params = CARTPOLE_V1
        if max_episode_steps is not None and max_episode_steps != params.max_episode_steps:
            params = dataclasses.replace(params, max_episode_steps=int(max_episode_steps))
        self.impl = impl
        self.env = make(impl, num_envs, seed=seed, device=device, state_factor=state_factor,
                        compute_factor=compute_factor, policy_seed=policy_seed, params=params)
        self.num_envs = self.env.num_envs
        self.render_mode = None
        self.single_observation_space = observation_space(params)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.single_action_space = spaces.Discrete(2)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

    def _reseed(self, seed: int) -> None:
        """The seed of the next ``reset``: every implementation's reset draws from ``env.seed``
        (cpp/fused/cuda: the counter hash; torch: Generator.manual_seed; jax: random.key; gym:
        per-copy seeds). Only the no-policy rollout actions of the jitted implementations keep
        the seed they were compiled with, and this class never uses them."""
        self.env.seed = seed

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Reset every env; returns (observations (num_envs, 4) float32, {})."""
        if seed is not None and not isinstance(seed, (int, np.integer)):
            raise ConfigError(f"seed must be one integer for all envs (or None), got {seed!r}")
        super().reset(seed=seed)  # seeds self.np_random (gymnasium's convention) when seed is given
        if seed is None:  # a new episode for everyone: a fresh seed from np_random
            seed = int(self.np_random.integers(0, MAX_SEED + 1))
        else:
            seed = int(seed)
        self._reseed(seed)
        obs = np.asarray(self.env.reset(), dtype=np.float32)
        return obs, {}

    def step(self, actions):
        """One step of every env; returns (obs, reward, terminated, truncated, {}), where a
        finished env's obs is already the first of its next episode (SAME_STEP)."""
        obs, reward, terminated, truncated = self.env.step(np.asarray(actions))
        return (np.asarray(obs, dtype=np.float32), np.asarray(reward, dtype=np.float32),
                np.asarray(terminated, dtype=bool), np.asarray(truncated, dtype=bool), {})

    def close_extras(self, **kwargs):
        self.env = None


def register() -> None:
    """Register ``studylib/CartPole-v1`` with gymnasium (done once, on importing this module)."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, vector_entry_point=f"{__name__}:StudylibVectorEnv")


register()
