"""A gymnasium vector env as a Stable-Baselines3 ``VecEnv``: SB3's algorithms on studylib's batched
implementations, one call for all N envs a step, where ``make_vec_env`` steps N single envs in a
Python loop (``DummyVecEnv``)::

    import studylib.adapters.sb3_vec as sb3_vec
    from stable_baselines3 import PPO
    envs = sb3_vec.make("studylib/Chain-v0", 64, impl="fused", links=2)    # or studylib/CartPole-v1
    PPO("MlpPolicy", envs).learn(100_000)

``SB3VecEnv`` wraps any gymnasium ``VectorEnv`` whose autoreset mode is ``SAME_STEP``, the only one
with SB3's semantics (the step that ends an episode returns the next episode's first observation,
the last one in the info), and gives SB3 what ``DummyVecEnv.step_wait`` gives: dones = terminated
or truncated, and for a done env ``infos[i]["terminal_observation"]`` and
``infos[i]["TimeLimit.truncated"]`` (truncated and not terminated). Seeds set by ``seed(s)`` are
used at the next ``reset`` as ``DummyVecEnv`` uses them: env i gets s + i. On gymnasium's own
``SyncVectorEnv`` the transitions are ``DummyVecEnv``'s, step for step
(tests/test_sb3_vec.py). On studylib's envs the first episodes are the single envs' (each env's
seeded draw); later resets are the implementation's own draws, which ``DummyVecEnv`` would take
from each single env's generator.
"""

from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium.envs.registration import load_env_creator
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env import VecEnv

from ..errors import ConfigError
from . import gym_chain  # noqa: F401  (registers the chain's ids)
from .gym_vector import StudylibVectorEnv  # (and the import registers CartPole's)


class SB3VecEnv(VecEnv):
    """``envs`` (a gymnasium ``VectorEnv`` in ``SAME_STEP`` autoreset mode) under SB3's ``VecEnv`` API."""

    def __init__(self, envs: gymnasium.vector.VectorEnv):
        mode = envs.metadata.get("autoreset_mode")
        if mode != AutoresetMode.SAME_STEP:
            raise ConfigError(f"SB3's VecEnv resets an env in the step that ends its episode: make the vector env "
                              f"with autoreset_mode=AutoresetMode.SAME_STEP (this one's is {mode!r})")
        self.envs = envs
        self.render_mode = envs.render_mode
        super().__init__(envs.num_envs, envs.single_observation_space, envs.single_action_space)
        self._actions = None

    def reset(self):
        seeds = None if all(s is None for s in self._seeds) else list(self._seeds)
        options = self._options[0] if self._options[0] else None  # one options dict for all, as set_options(dict)
        obs, _ = self.envs.reset(seed=seeds, options=options)
        self.reset_infos = [{} for _ in range(self.num_envs)]
        self._reset_seeds()
        self._reset_options()
        return np.asarray(obs)

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self):
        obs, reward, terminated, truncated, info = self.envs.step(self._actions)
        terminated, truncated = np.asarray(terminated, bool), np.asarray(truncated, bool)
        dones = terminated | truncated
        infos = [{"TimeLimit.truncated": bool(truncated[i] and not terminated[i])} for i in range(self.num_envs)]
        final_obs = info.get("final_obs")
        for i in np.flatnonzero(dones):
            infos[i]["terminal_observation"] = np.asarray(final_obs[i])
        return np.asarray(obs), np.asarray(reward, np.float32), dones, infos

    def close(self) -> None:
        self.envs.close()

    def get_images(self):
        frames = self.envs.render()
        return list(frames) if frames is not None else [None] * self.num_envs

    # SB3 asks these of every env (VecNormalize, evaluate_policy, the Monitor check): the vector env
    # is one object, so an attribute is its own, the same for every index.
    def get_attr(self, attr_name: str, indices=None) -> list:
        return [getattr(self.envs, attr_name)] * len(self._get_indices(indices))

    def set_attr(self, attr_name: str, value, indices=None) -> None:
        setattr(self.envs, attr_name, value)

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list:
        result = getattr(self.envs, method_name)(*method_args, **method_kwargs)
        return [result] * len(self._get_indices(indices))

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        return [False] * len(self._get_indices(indices))


def make(env_id: str, num_envs: int, *, vectorization_mode: str | None = None, **kwargs) -> SB3VecEnv:
    """``gymnasium.make_vec(env_id, num_envs, ...)`` in ``SAME_STEP`` autoreset mode under SB3's API:
    studylib's ids through their vector entry point (``kwargs`` to it: impl, links, ...), other ids
    through gymnasium's ``SyncVectorEnv`` (or ``vectorization_mode="async"``; ``kwargs`` to each env):
    other vector entry points, such as gymnasium's ``CartPoleVectorEnv``, have no ``SAME_STEP`` mode."""
    spec = gymnasium.spec(env_id)
    mode = vectorization_mode or ("vector_entry_point" if _is_studylibs(spec.vector_entry_point) else "sync")
    if mode == "vector_entry_point":
        envs = gymnasium.make_vec(env_id, num_envs, vectorization_mode=mode, autoreset_mode=AutoresetMode.SAME_STEP,
                                  **kwargs)
    else:
        envs = gymnasium.make_vec(env_id, num_envs, vectorization_mode=mode,
                                  vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP}, **kwargs)
    return SB3VecEnv(envs)


def _is_studylibs(entry_point) -> bool:
    if entry_point is None:
        return False
    creator = load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point
    return isinstance(creator, type) and issubclass(creator, StudylibVectorEnv)
