"""studylib as a gymnasium vector environment (gymnasium.make_vec, SAME_STEP autoreset)."""

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_reset_return_type, check_reset_seed_determinism
from gymnasium.vector import AutoresetMode

import studylib
import studylib.gym_vector  # noqa: F401  (registers studylib/CartPole-v1)
from studylib.dynamics import CARTPOLE_V1, RESET_HIGH, RESET_LOW

IMPLS = ["cpp", "fused", "torch", "jax", "gym"]  # torch-compile: covered by the conformance tests


def _make(impl, n=8, **kwargs):
    return gymnasium.make_vec("studylib/CartPole-v1", num_envs=n, vectorization_mode="vector_entry_point",
                              impl=impl, **kwargs)


@pytest.mark.parametrize("impl", IMPLS)
def test_gymnasium_checks_and_spaces(impl):
    envs = _make(impl)
    assert isinstance(envs.unwrapped, gymnasium.vector.VectorEnv)
    assert envs.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert envs.num_envs == 8
    assert envs.single_action_space == gymnasium.spaces.Discrete(2)
    assert envs.action_space.shape == (8,)
    ref = gymnasium.make("CartPole-v1")
    assert envs.single_observation_space == ref.observation_space
    assert envs.observation_space.shape == (8, 4) and envs.observation_space.dtype == np.float32
    check_reset_return_type(envs)
    check_reset_seed_determinism(envs)


@pytest.mark.parametrize("impl", IMPLS)
def test_rollout_with_same_step_autoreset(impl):
    envs = _make(impl, 16)
    obs, info = envs.reset(seed=3)
    assert info == {} and envs.observation_space.contains(obs)
    envs.action_space.seed(3)
    returns, episodes, ep_return = [], 0, np.zeros(16)
    for _ in range(600):
        obs, reward, terminated, truncated, info = envs.step(envs.action_space.sample())
        assert obs.shape == (16, 4) and obs.dtype == np.float32
        assert reward.dtype == np.float32 and np.all(reward == 1)
        assert terminated.dtype == bool and truncated.dtype == bool
        ep_return += reward
        done = terminated | truncated
        # SAME_STEP: a finished env's observation is already its next episode's first one
        assert np.all((obs[done] >= RESET_LOW) & (obs[done] <= RESET_HIGH))
        assert envs.observation_space.contains(obs)
        returns.extend(ep_return[done])
        ep_return[done] = 0
        episodes += done.sum()
    assert episodes > 100 and 8 < np.mean(returns) < 50  # random actions: ~22 steps per episode
    envs.close()


def test_seeding_follows_gymnasium():
    envs = _make("cpp")
    first, _ = envs.reset(seed=5)
    np.testing.assert_array_equal(envs.reset(seed=5)[0], first)
    unseeded = [envs.reset()[0] for _ in range(2)]  # new episodes, drawn from np_random
    assert not np.array_equal(unseeded[0], first) and not np.array_equal(unseeded[0], unseeded[1])
    envs.reset(seed=5)
    again = [envs.reset()[0] for _ in range(2)]
    np.testing.assert_array_equal(again[0], unseeded[0])  # reproducible from the first seed
    different = _make("cpp").reset(seed=6)[0]
    assert not np.array_equal(different, first)


def test_step_determinism_and_fresh_arrays():
    """gymnasium's check_step_determinism / check_returned_data_not_reused, for vectors."""
    envs = _make("fused")
    envs.action_space.seed(1)
    actions = envs.action_space.sample()
    outs = []
    for _ in range(2):
        envs.reset(seed=1)
        outs.append(envs.step(actions))
    for a, b in zip(outs[0][:4], outs[1][:4]):
        np.testing.assert_array_equal(a, b)
    assert not np.any(outs[0][3])  # no truncation after one step
    assert outs[0][0] is not outs[1][0]
    obs_a, _ = envs.reset(seed=1)
    obs_b, *_ = envs.step(actions)
    assert not np.shares_memory(obs_a, obs_b)


def test_max_episode_steps_and_bad_arguments():
    envs = _make("cpp", 4, max_episode_steps=10)
    envs.reset(seed=0)
    for t in range(10):
        envs.unwrapped.env.set_state(np.zeros((4, 4)))
        truncated = envs.step(np.zeros(4, int))[3]
    assert truncated.all()
    with pytest.raises(studylib.ConfigError, match="seed"):
        envs.reset(seed=[1, 2, 3, 4])
    with pytest.raises(studylib.ConfigError, match="unknown implementation"):
        _make("numba")
    assert CARTPOLE_V1.max_episode_steps == 500  # the replacement did not leak
