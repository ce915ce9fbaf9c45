"""Seeding, determinism, and the C++/CUDA counter hash against its Python twin."""

import numpy as np
import pytest

import studylib
from studylib.sims.cartpole import RESET_HIGH, RESET_LOW
from studylib.episodes import hash_actions, hash_actions_numpy, reset_values_numpy


def _trajectory(impl, seed, policy, n=32, calls=5, k=20):
    env = studylib.make(impl, n, seed=seed, state_factor=2)
    states = [env.reset()]
    done = []
    for _ in range(calls):
        done.append(env.rollout(k, policy=policy).episodes_finished)
        states.append(env.get_state())
    return np.array(states[1:]), done, states[0]


@pytest.mark.parametrize("policy", ["mlp", "none"])
def test_same_seed_same_trajectory_different_seed_different(impl, policy):
    a, done_a, first = _trajectory(impl, 1, policy)
    b, done_b, _ = _trajectory(impl, 1, policy)
    c, _, _ = _trajectory(impl, 2, policy)
    np.testing.assert_array_equal(a, b)
    assert done_a == done_b and sum(done_a) > 0  # resets happened, and identically
    assert not np.array_equal(a, c)
    assert np.all((first >= RESET_LOW) & (first <= RESET_HIGH)) and len(np.unique(first)) == first.size


def test_reset_is_reproducible_and_reseeds(impl):
    env = studylib.make(impl, 16, seed=4)
    first = env.reset()
    env.rollout(30, policy="none")
    np.testing.assert_array_equal(env.reset(), first)


def test_cpp_reset_draws_equal_the_python_hash():
    n, s = 100, 3
    env = studylib.make("cpp", n, seed=12345, state_factor=s)
    env.reset()
    expected = reset_values_numpy(12345, np.arange(n), np.zeros(n), 4 * s)
    np.testing.assert_array_equal(env.get_state(), expected)  # bit for bit


def test_hash_is_the_same_in_numpy_torch_and_jax():
    import jax.numpy as jnp
    import torch

    rng = np.random.default_rng(0)
    episode = rng.integers(0, 2**32, 1000, dtype=np.uint64).astype(np.uint32)
    elapsed = rng.integers(0, 500, 1000).astype(np.uint32)
    ref = hash_actions_numpy(7, episode, elapsed)
    assert 0.45 < ref.mean() < 0.55
    env_t = torch.arange(1000, dtype=torch.int64)
    t = hash_actions(7, env_t, torch.from_numpy(episode.astype(np.int64)), torch.from_numpy(elapsed.astype(np.int64)),
                     wrap=lambda v: v & 0xFFFFFFFF)
    j = hash_actions(jnp.uint32(7), jnp.arange(1000, dtype=jnp.uint32), jnp.asarray(episode), jnp.asarray(elapsed))
    np.testing.assert_array_equal(t.numpy(), ref)
    np.testing.assert_array_equal(np.asarray(j), ref)


def test_episode_counts_agree_across_vectorized_implementations_without_policy():
    """cpp/torch/jax take the same hashed actions; from the same states their first steps agree.
    A quarter of the envs start moving fast towards the edge, so episodes do end within 5 steps."""
    n = 64
    states = np.zeros((n, 4))
    states[: n // 4, 0] = np.linspace(2.2, 2.35, n // 4)
    states[: n // 4, 1] = 3.0  # at most ~0.3 m + the push from the edge: crossing within 5 steps
    finished = {}
    for impl in ("cpp", "torch", "jax"):
        env = studylib.make(impl, n, seed=3)
        env.reset()
        env.set_state(states)
        finished[impl] = env.rollout(5, policy="none").episodes_finished
    assert len(set(finished.values())) == 1, finished
    assert finished["cpp"] >= n // 8, finished  # the fast envs ended; the zero states did not


PYTHON_FAMILY = ("gym", "torch", "torch-compile", "jax")


@pytest.mark.parametrize("impl_name", PYTHON_FAMILY)
def test_final_obs_is_the_terminal_observation_before_the_same_step_reset(impl_name):
    """Half the envs start just past a threshold-crossing state: their final_obs is the reference's
    terminal observation, their returned obs a fresh reset; the other half's final_obs is the obs."""
    from studylib.sims.cartpole import reference_step

    n = 8
    env = studylib.make(impl_name, n, seed=1)
    env.reset()
    states = np.zeros((n, 4))
    states[: n // 2, 0] = 2.399  # pushed right from x = 2.399 with x_dot = 1: crosses 2.4
    states[: n // 2, 1] = 1.0
    env.set_state(states)
    actions = np.ones(n, int)
    obs, _, terminated, _ = env.step(actions)
    _, ref_obs, ref_terminated = reference_step(states, actions)
    np.testing.assert_array_equal(terminated, ref_terminated)
    assert terminated[: n // 2].all() and not terminated[n // 2:].any()
    final = env.final_obs()
    np.testing.assert_allclose(final, ref_obs, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(final[n // 2:], obs[n // 2:])
    assert np.all(np.abs(obs[: n // 2]) <= RESET_HIGH)  # the done envs were reset in the same step
