"""The thin per-call path of cpp and fused on the CPU (cuda/step_binding.cpp): the same steps,
errors and restarts as the checked Python path, which a profiling hook forces."""

from __future__ import annotations

import numpy as np
import pytest

import studylib
from studylib.errors import ConfigError
from studylib.adapters.gym_vector import StudylibVectorEnv

N = 19  # two SIMD blocks, the second partial


def _pair(impl, **kwargs):
    fast = studylib.make(impl, N, seed=5, device="cpu", **kwargs)
    slow = studylib.make(impl, N, seed=5, device="cpu", **kwargs)
    slow.backend.call_hook = lambda name, fn, *args: fn(*args)
    assert fast.backend.stepper.enabled and not slow.backend.stepper.enabled
    return fast, slow


@pytest.mark.parametrize("impl", ["cpp", "fused"])
def test_the_thin_step_matches_the_python_path_for_every_integer_dtype_and_stride(impl):
    fast, slow = _pair(impl, params=studylib.CartPoleParams(max_episode_steps=30))
    np.testing.assert_array_equal(fast.reset(), slow.reset())
    rng = np.random.default_rng(0)
    dtypes = [np.int64, np.int32, np.int8, np.uint8, np.uint16, bool]
    ends = 0
    for t in range(120):
        a = rng.integers(0, 2, 2 * N)
        a = a.astype(dtypes[t % len(dtypes)])[::2] if t % 3 == 0 else a[:N].astype(dtypes[t % len(dtypes)])
        got, want = fast.step(a), slow.step(a)
        for x, y in zip(got, want):
            np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(fast.final_obs(), slow.final_obs())
        ends += int(want[2].sum() + want[3].sum())
    assert ends > 10  # restarts inside the steps were compared too
    assert fast.rollout(40, "none") == slow.rollout(40, "none")
    np.testing.assert_array_equal(fast.get_state(), slow.get_state())


def test_the_thin_step_returns_views_of_buffers_made_once():
    env = studylib.make("cpp", N, state_factor=2)
    env.reset()
    first = env.step(np.zeros(N, np.int64))
    second = env.step(np.ones(N, np.int64))
    assert all(a is b for a, b in zip(first, second))  # the same arrays, rewritten in place
    assert np.shares_memory(second[0], env.backend.state) and second[0].shape == (N, 4)
    np.testing.assert_array_equal(second[0], env.get_state()[:, :4])


@pytest.mark.parametrize("impl", ["cpp", "fused"])
@pytest.mark.parametrize("bad, message", [
    (np.full(N, 2), "actions must be 0"), (np.full(N, -1), "actions must be 0"),
    (np.zeros(N, np.float32), "actions must be integers"), (np.zeros(N + 1, np.int64), "shape"),
    (np.zeros((N, 1), np.int64), "shape"),
])
def test_bad_actions_raise_the_python_paths_errors_and_step_nothing(impl, bad, message):
    env = studylib.make(impl, N, device="cpu")
    env.reset()
    before = env.get_state()
    with pytest.raises(ConfigError, match=message):
        env.step(bad)
    np.testing.assert_array_equal(env.get_state(), before)


def test_lists_and_other_array_likes_take_the_python_path():
    fast, slow = _pair("cpp")
    fast.reset(), slow.reset()
    actions = [i % 2 for i in range(N)]
    np.testing.assert_array_equal(fast.step(actions)[0], slow.step(np.array(actions))[0])


def test_a_hook_sees_every_step_and_the_thin_path_returns_when_it_goes():
    env = studylib.make("cpp", N)
    env.reset()
    calls = []
    env.backend.call_hook = lambda name, fn, *args: calls.append(name) or fn(*args)
    env.step(np.zeros(N, np.int64))
    assert calls == ["cartpole_rollout"]
    env.backend.call_hook = None
    env.step(np.zeros(N, np.int64))
    assert calls == ["cartpole_rollout"] and env.backend.stepper.enabled


@pytest.mark.parametrize("impl", ["cpp", "fused"])
def test_the_adapters_thin_next_step_matches_its_python_path(impl):
    fast = StudylibVectorEnv(N, impl, device="cpu", max_episode_steps=25)
    slow = StudylibVectorEnv(N, impl, device="cpu", max_episode_steps=25)
    slow.env.backend.call_hook = lambda name, fn, *args: fn(*args)
    np.testing.assert_array_equal(fast.reset(seed=1)[0], slow.reset(seed=1)[0])
    rng = np.random.default_rng(1)
    kept = []
    restarts = 0
    for t in range(100):
        a = rng.integers(0, 2, N)
        if t == 50:  # a masked reset in the middle
            mask = np.arange(N) % 3 == 0
            np.testing.assert_array_equal(fast.reset(options={"reset_mask": mask})[0],
                                          slow.reset(options={"reset_mask": mask})[0])
        got, want = fast.step(a), slow.step(a)
        for x, y in zip(got[:4], want[:4]):
            np.testing.assert_array_equal(x, y)
        assert got[4] == want[4] == {}
        restarts += int((want[1] == 0).sum())
        kept.append((got[0], got[0].copy()))
    assert restarts > 5
    for obs, copy in kept:  # fresh arrays each step, as gymnasium's vector envs return
        np.testing.assert_array_equal(obs, copy)
