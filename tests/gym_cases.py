"""The implementations the gymnasium adapter tests run, and gymnasium's CartPole-v1 beside ours."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import studylib
import studylib.gym_vector  # noqa: F401  (registers studylib/CartPole-v1)
from studylib.base import VectorCartPole
from studylib.registry import implementation_class
from tests.conftest import IMPL_PARAMS


def _lacks_final_obs(impl: str) -> bool:
    return implementation_class(impl).final_obs is VectorCartPole.final_obs


def _gym_impl_params():
    """Every implementation; a test of one without ``final_obs()`` yet may fail with
    NotImplementedError only (where it never needs a terminal observation it passes). TODO(integrator): cpp/fused/cuda get final_obs() from another branch;
    once merged these marks vanish by themselves (the check reads the class), nothing to edit."""
    for param in IMPL_PARAMS:
        impl = param.values[0]
        marks = list(param.marks)
        if not marks and _lacks_final_obs(impl):  # (a skipped cuda is not imported)
            marks.append(pytest.mark.xfail(raises=NotImplementedError, strict=False,
                                           reason=f"TODO: {impl} has no final_obs() yet (another branch adds it)"))
        yield pytest.param(impl, marks=marks, id=impl)


GYM_IMPLS = list(_gym_impl_params())


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
