"""The chain's in-kernel collection (chain_collect, cuda/chain_trajectory.h; ``ChainNativeBackend.collect``):
a trajectory of T steps written by ONE call is the trajectory that T single steps with the fused
policy's own actions produce, every recorded sample and log-probability is what the Gaussian
gives for the noise episode.py draws, the policy sees the normalized observation, and the CUDA
kernel's host build writes the CPU build's trajectory."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from studylib.errors import ConfigError
from studylib.sims.chain import episode as E
from studylib.sims.chain import native as nc
from studylib.sims.chain.backend import ChainNativeBackend
from studylib.train.chain import gaussian
from tests.test_chain import relative_error
from tests.test_chain_native_episodes import (
    COUNT,
    U32,
    _backend,
    _reference_actions,
    _weights,
)

pytestmark = pytest.mark.usefixtures("native_compiler")


def test_the_trajectory_struct_has_the_ctypes_layout():
    assert nc.library_layout("chain_trajectory_layout") == nc.trajectory_args_layout()
    assert len(nc.trajectory_args_layout()) == 1 + len(nc.ChainTrajectoryArgs._fields_)


@pytest.mark.parametrize("n", (1, 2, 10))
def test_a_collected_trajectory_is_t_single_steps_of_the_policys_actions(n):
    """collect(T) against T times (the fused policy's action at the current state, recorded, then
    one step with it): states, counters, observations, rewards, flags and pre-reset observations."""
    T, seed, weights, log_std = 12, 4, _weights(n), -0.8
    kernel, _, _ = _backend(n, weights=weights, log_std=log_std)
    single, _, _ = _backend(n, weights=weights, log_std=log_std)
    traj, done = kernel.collect(T, seed)
    single_done, rows = 0, []
    for _ in range(T):
        obs, action = single.obs(), single.policy_actions(seed)
        single_done += single.step(action, seed)
        rows.append((obs, action, single.reward_out.copy(), single.flags_out.copy(), single.final_obs_out.copy()))
    obs, actions, reward, flags, final_obs = (np.stack(x) for x in zip(*rows))
    assert done == single_done > 0 and traj.obs.shape == (T, COUNT, 3 * n + 3)
    np.testing.assert_array_equal(kernel.elapsed, single.elapsed)
    np.testing.assert_array_equal(kernel.episode, single.episode)
    np.testing.assert_array_equal(traj.flags, flags)
    # the same block function and lane loop, reached through two entry points: float rounding apart,
    # grown over T steps of a chaotic system (most at the run-time-n build's n = 10)
    assert relative_error(kernel.state, single.state).max() < 1e-4
    assert relative_error(traj.obs, obs).max() < 1e-4 and relative_error(traj.final_obs, final_obs).max() < 1e-4
    assert np.abs(traj.reward - reward).max() < 1e-3
    np.testing.assert_allclose(np.clip(traj.actions, -1, 1), actions, atol=1e-5)
    assert (np.abs(traj.actions) > 1).any()  # the record keeps the unclipped sample
    unended = traj.flags[:-1] == 0  # an episode that goes on starts its next step where this one ended
    np.testing.assert_allclose(traj.obs[1:][unended], traj.final_obs[:-1][unended], rtol=1e-6, atol=1e-7)


def test_samples_and_log_probabilities_are_the_gaussians_for_episode_pys_noise():
    """Step by step: sample = mean + σ z with z = episode.policy_noise(seed, env, episode, elapsed)
    and mean a float64 forward pass on the normalized observation; log p = gaussian.log_prob."""
    n, T, seed, weights, log_std = 3, 5, 11, _weights(3), -0.6
    b, _, _ = _backend(n, weights=weights, log_std=log_std)
    rng = np.random.default_rng(0)
    shift = rng.normal(0, 0.3, 3 * n + 3).astype(np.float32)
    scale = rng.uniform(0.5, 2.0, 3 * n + 3).astype(np.float32)
    episodes, elapsed = [], []
    probe, _, _ = _backend(n, weights=weights, log_std=log_std)
    traj, _ = b.collect(T, seed, (shift, scale, 1.5))
    for t in range(T):  # the counters each step began with (the probe steps the trajectory's actions)
        episodes.append(probe.episode.copy()), elapsed.append(probe.elapsed.copy())
        probe.step(np.clip(traj.actions[t], -1, 1), seed)
    env = np.arange(COUNT, dtype=U32)
    for t in range(T):
        z = E.policy_noise(seed, env, episodes[t], elapsed[t].astype(U32)).astype(np.float64)
        seen = np.clip((traj.obs[t] - shift) * scale, -1.5, 1.5)
        _, mean = _reference_actions(weights, seen, log_std, z)
        np.testing.assert_allclose(traj.actions[t], mean + np.exp(log_std) * z, atol=1e-4)
        np.testing.assert_allclose(traj.logp[t], -0.5 * z * z - log_std - gaussian.HALF_LOG_2PI, atol=1e-5)
        learner_view = gaussian.log_prob(mean[:, None], np.array([log_std]), traj.actions[t][:, None], np)
        np.testing.assert_allclose(traj.logp[t], learner_view, atol=2e-3)  # from the float32 sample
    assert (np.abs((traj.obs - shift) * scale) > 1.5).any()  # the clip was exercised


@pytest.mark.parametrize("n", (2, 8, 11))
def test_the_kernels_host_build_collects_the_cpu_builds_trajectory(n):
    weights, T = _weights(n), 6
    norm = (np.full(3 * n + 3, 0.1, np.float32), np.full(3 * n + 3, 0.9, np.float32), 5.0)
    cpu, _, _ = _backend(n, count=150, weights=weights, log_std=-0.5)
    host, _, _ = _backend(n, count=150, weights=weights, log_std=-0.5, device="host-kernel")
    (a, done_a), (b, done_b) = cpu.collect(T, 3, norm), host.collect(T, 3, norm)
    assert done_a == done_b > 0
    np.testing.assert_array_equal(a.flags, b.flags)
    np.testing.assert_array_equal(cpu.episode, host.episode)
    for x, y in ((a.obs, b.obs), (a.final_obs, b.final_obs), (a.actions, b.actions)):
        assert relative_error(y, x).max() < 1e-4
    assert np.abs(a.logp - b.logp).max() < 1e-4 and np.abs(a.reward - b.reward).max() < 1e-3


def test_collect_refuses_what_it_cannot_run():
    b = ChainNativeBackend(4, _backend(2, count=4)[0].params)
    with pytest.raises(ConfigError, match="needs weights"):
        b.collect(3, 0)
    b.set_weights(_weights(2), 0.0)
    with pytest.raises(ConfigError, match="shape"):
        b.collect(3, 0, (np.zeros(4, np.float32), np.ones(9, np.float32), 10.0))
    with pytest.raises(ConfigError, match="num_steps"):
        b.collect(-1, 0)
    lib = nc.library("chain_cpu")
    t = nc.ChainTrajectoryArgs()  # every array null
    b._call(0, nc.POLICY_MLP, 3)
    assert lib.chain_collect(ctypes.byref(b._args), ctypes.byref(t)) == -3  # CH_ERR_NULL
    b._call(0, nc.POLICY_HASH, 3)
    assert lib.chain_collect(ctypes.byref(b._args), ctypes.byref(t)) == -5  # CH_ERR_POLICY
