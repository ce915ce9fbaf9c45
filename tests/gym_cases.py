"""The implementations the gymnasium adapter tests run, and gymnasium's CartPole-v1 beside ours."""

from __future__ import annotations

import gymnasium
import numpy as np

import studylib
import studylib.adapters.gym_vector  # noqa: F401  (registers studylib/CartPole-v1)
from tests.conftest import IMPL_PARAMS


GYM_IMPLS = IMPL_PARAMS  # every implementation (cuda skipped without a GPU)


def make_ours(impl, n, **kwargs):
    return gymnasium.make_vec("studylib/CartPole-v1", num_envs=n, impl=impl, **kwargs)


def make_theirs(n, mode=gymnasium.vector.AutoresetMode.NEXT_STEP, **kwargs):
    """gymnasium's CartPole-v1 in a SyncVectorEnv: any autoreset mode, and per-env states."""
    return gymnasium.make_vec("CartPole-v1", num_envs=n, vectorization_mode="sync",
                              vector_kwargs={"autoreset_mode": mode}, **kwargs)


def their_states(envs) -> np.ndarray:
    """The float64 states (N, 4) of a SyncVectorEnv of gymnasium CartPoles."""
    return np.array([e.unwrapped.state for e in envs.unwrapped.envs])


def inner(envs) -> studylib.VectorCartPole:
    """Our implementation under the adapter (and any wrappers)."""
    return envs.unwrapped.env
