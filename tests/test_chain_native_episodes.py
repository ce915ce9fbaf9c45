"""The chain's episode step in C (cuda/chain.cuh ch_env_step and the CPU build's block loop,
studylib.sims.chain.backend.ChainNativeBackend) against its specification, studylib.sims.chain.episode
(numpy float64): states, observations, rewards, flags, counters and the same-step resets for
n = 1 .. 32 (the unrolled builds and the run-time-n one), the hashed draws bit for bit, the fused
Gaussian MLP policy against a float64 forward pass, K-step rollouts against K single steps, and
the CUDA kernels' host build against the CPU build.

Tolerances. The physics runs in float32 through frame_skip RK4 steps (5 to 25 of them, each four
Cholesky solves of an (n+1)-square system): its error against float64 grows with n (the mass
matrix's condition, the stiffer chain). The bound used is the float32 arithmetic's own error:
numpy running ``dynamics.env_step`` on float32 arrays (the same formulas, numpy's float32 sin/cos),
compared with float64 on the same inputs, times 10 (the C builds contract into FMAs, use other
sin/cos, and -ffast-math reassociates), plus 1e-6 where that error happens to be tiny. Measured on
this machine, one step from random states (x in ±1, angles in ±0.5, velocities in ±2): relative
error 1e-6 (n = 1, 2) to 1e-5 (n = 8), 4e-5 (16), 5e-4 (32), within 2 to 5 times numpy float32's.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from studylib import native
from studylib.errors import ConfigError
from studylib.policy import mlp_weights
from studylib.sims.chain import dynamics as D
from studylib.sims.chain import episode as E
from studylib.sims.chain import native as nc
from studylib.sims.chain.backend import ChainNativeBackend
from studylib.sims.chain.model import ChainParams
from tests.test_chain import random_inputs, relative_error

pytestmark = pytest.mark.usefixtures("native_compiler")

LINKS = (1, 2, 4, 8, 16, 32)
U32 = np.uint32
COUNT = 160  # environments of each test (10 blocks of 16 lanes)


def _params(n):
    return ChainParams(links=n)


def _weights(n, seed=3):
    return mlp_weights(seed, sizes=(3 * n + 3, 64, 64, 1))


def _float32_error(states, ctrl, p):
    """numpy float32's own error on one environment step (env_step) against float64: the scale of
    what float32 arithmetic loses here (states and observations, relative; rewards absolute)."""
    s64, o64, r64, _ = D.env_step(states, ctrl, p)
    s32, o32, r32, _ = D.env_step(states.astype(np.float32), ctrl.astype(np.float32), p)
    return (max(relative_error(s32, s64).max(), relative_error(o32, o64).max()),
            np.abs(r32.astype(np.float64) - r64).max())


def _backend(n, count=COUNT, seed=0, **kwargs):
    """A backend holding random states (tests/test_chain.py's), counters near the truncation limit
    (so that some episodes end by truncation in the first steps) and assorted episode numbers."""
    p = _params(n)
    states, ctrl = random_inputs(n, count, seed=seed)
    b = ChainNativeBackend(count, p, **kwargs)
    b.set_state(states)
    b.elapsed[:] = p.max_episode_steps - 1 - np.arange(count) % 4
    b.episode[:] = np.arange(count) % 7 * 1000
    return b, states, ctrl


# ---- the hashed draws ----

def test_the_uniforms_and_controls_are_episode_pys_bit_for_bit():
    lib = native.library("chain_cpu")
    rng = np.random.default_rng(0)
    seed = 0xDEADBEEF
    env, ep, comp = (rng.integers(0, 2**32, 300, dtype=np.uint64).astype(U32) for _ in range(3))
    for salt in (E.RESET_SALT, *E.NOISE_SALTS):
        ours = np.array([lib.chain_uniform(salt, seed, int(e), int(k), int(c)) for e, k, c in zip(env, ep, comp)],
                        np.float32)
        np.testing.assert_array_equal(ours, E.reset_uniform(salt, seed, env, ep, comp))
    ours = np.array([lib.chain_hash_ctrl(seed, int(e), int(k), int(c)) for e, k, c in zip(env, ep, comp)], np.float32)
    theirs = E.hash_controls(seed, env, ep, comp)
    np.testing.assert_array_equal(ours, theirs)
    assert ours.min() >= -1 and ours.max() < 1 and ours.std() > 0.5
    # the physics-only rollout's control is the episode-0 one with the step counter for elapsed
    np.testing.assert_array_equal(nc.hash_ctrl(seed, env, comp), E.hash_controls(seed, env, np.zeros_like(env), comp))
    # Box–Muller in float32 (logf, cosf, sqrtf): to float32 rounding, not bits
    noise = np.array([lib.chain_policy_noise(seed, int(e), int(k), int(c)) for e, k, c in zip(env, ep, comp)])
    np.testing.assert_allclose(noise, E.policy_noise(seed, env, ep, comp), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("n", (1, 2, 8, 9, 32))
def test_reset_draws_episode_zero_of_every_env(n):
    """qpos bit for bit (2u − 1 on the 23-bit grid, times 0.1, one rounding); qvel, Box–Muller in
    float32, to a few float32 ulps of its 0.1-scaled values."""
    p = _params(n)
    b = ChainNativeBackend(COUNT, p)
    b.elapsed[:], b.episode[:] = 5, 9
    b.reset(1234)
    ref = E.reset_states(1234, np.arange(COUNT, dtype=U32), np.zeros(COUNT, U32), p)
    np.testing.assert_array_equal(b.state[:, :n + 1], ref[:, :n + 1])
    np.testing.assert_allclose(b.state[:, n + 1:], ref[:, n + 1:], rtol=2e-6, atol=1e-7)
    assert not b.elapsed.any() and not b.episode.any()
    np.testing.assert_allclose(b.obs(), D.observation(ref.astype(np.float64), p), rtol=1e-6, atol=1e-6)


def test_restart_starts_the_masked_envs_next_episode():
    p = _params(3)
    b, states, _ = _backend(3)
    el, ep = b.elapsed.copy(), b.episode.copy()
    mask = np.arange(COUNT) % 3 == 0
    b.final_obs_out[:] = -7
    b.restart(mask, 55)
    fresh = E.reset_states(55, np.arange(COUNT, dtype=U32), (ep + 1).astype(U32), p)
    np.testing.assert_array_equal(b.state[mask, :4], fresh[mask, :4])
    np.testing.assert_allclose(b.state[mask], fresh[mask], rtol=2e-6, atol=1e-7)
    np.testing.assert_array_equal(b.state[~mask], states[~mask].astype(np.float32))
    np.testing.assert_array_equal(b.elapsed, np.where(mask, 0, el))
    np.testing.assert_array_equal(b.episode, np.where(mask, ep + 1, ep))
    np.testing.assert_allclose(b.final_obs_out[mask], b.obs()[mask])
    assert (b.final_obs_out[~mask] == -7).all()


# ---- the episode step against episode.advance ----

def _check_step(b, states, el, ep, ctrl, p, seed, done_count):
    """The backend after one step from (states, el, ep) with ``ctrl`` against episode.advance."""
    N = len(states)
    env = np.arange(N, dtype=U32)
    fresh = E.reset_states(seed, env, (ep + 1).astype(U32), p)
    ref = E.advance(states, el.astype(np.int64), ep.astype(np.int64), ctrl, fresh.astype(np.float64), p)
    bound, reward_bound = _float32_error(states, ctrl, p)
    tol = 10 * bound + 1e-6
    # flags: exact, except where the tip is within float32's reach of the termination height
    _, seen = D._steps(states, ctrl, p, np, p.frame_skip)
    _, y = D.tip(seen, p)
    clear = np.abs(y - p.length / 1.2) > 1e-3
    assert clear.mean() > 0.9
    np.testing.assert_array_equal((b.flags_out & 1)[clear], ref.terminated[clear])
    np.testing.assert_array_equal((b.flags_out >> 1) & 1, ref.truncated)
    np.testing.assert_array_equal(b.elapsed[clear], ref.elapsed[clear])
    np.testing.assert_array_equal(b.episode[clear], ref.episode[clear])
    assert abs(done_count - int(ref.done.sum())) <= (~clear).sum()
    assert ref.done[clear].any() and (~ref.done[clear]).any() and ref.truncated.any()
    assert relative_error(b.final_obs_out, ref.final_obs).max() <= tol
    assert relative_error(b.state[clear], ref.state[clear]).max() <= tol  # a reset row: float32 draws
    np.testing.assert_array_equal(b.state[clear & ref.done, :p.links + 1], fresh[clear & ref.done, :p.links + 1])
    # the reward: 10 − 0.01 x² − (y − target)² − velocity terms of up to ~1e3 at n = 32: absolute
    assert np.abs(b.reward_out[clear] - ref.reward[clear]).max() <= 10 * reward_bound + 1e-4 * np.abs(ref.reward).max()


@pytest.mark.parametrize("n", LINKS)
def test_one_step_is_episode_advance(n):
    """One step of the CPU build (the unrolled lane loop for n <= 8, the run-time-n one above) from
    random states with random controls (some outside [-1, 1]: the actuator clips), counters near
    the truncation limit: the same next states (reset rows where the episode ended), final
    observations, rewards, flags and counters as episode.advance in float64."""
    p = _params(n)
    b, states, ctrl = _backend(n, seed=n)
    ctrl = ctrl * 1.5
    el, ep = b.elapsed.copy(), b.episode.copy()
    done = b.step(ctrl.astype(np.float32), 77)
    _check_step(b, states, el, ep, ctrl.astype(np.float32).astype(np.float64), p, 77, done)


@pytest.mark.parametrize("n", (2, 8))
def test_the_run_time_n_build_is_the_unrolled_one(n):
    """The run-time-n build (CH_GENERIC, every n above 8) at an unrolled n: the same operations, on
    a block's lanes as one vector value (ch_mj_step_block) instead of the unrolled lane loop."""
    unrolled, states, ctrl = _backend(n)
    generic, _, _ = _backend(n, generic=True)
    for b in (unrolled, generic):
        b.step(ctrl.astype(np.float32), 5)
        b.rollout(7, "none", 5)
    assert relative_error(generic.state, unrolled.state).max() < 1e-4
    np.testing.assert_array_equal(generic.elapsed, unrolled.elapsed)
    np.testing.assert_array_equal(generic.episode, unrolled.episode)


@pytest.mark.parametrize("n", (1, 8, 12))
def test_a_hashed_rollout_is_k_single_steps_of_the_hashed_controls(n):
    """K = 12 steps in one call (policy "none") against K calls of one step each, fed the
    controls episode.hash_controls draws from the counters before each step: the same lane loop and
    the same controls, so the same floats; episodes end (by truncation in the first steps) and
    restart in between, and their count adds up."""
    K, seed = 12, 31
    fused, _, _ = _backend(n)
    single, _, _ = _backend(n)
    env = np.arange(COUNT, dtype=U32)
    done = fused.rollout(K, "none", seed)
    single_done = 0
    for _ in range(K):
        ctrl = E.hash_controls(seed, env, single.episode, single.elapsed.astype(U32))
        single_done += single.step(ctrl, seed)
    assert done == single_done > 0
    np.testing.assert_array_equal(fused.elapsed, single.elapsed)
    np.testing.assert_array_equal(fused.episode, single.episode)
    np.testing.assert_array_equal(fused.flags_out, single.flags_out)
    np.testing.assert_allclose(fused.state, single.state, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(fused.reward_out, single.reward_out, rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(fused.final_obs_out, single.final_obs_out, rtol=1e-6, atol=1e-6)


# ---- the fused MLP policy ----

def _reference_actions(weights, obs, log_std, z):
    """The Gaussian policy in float64: clip(mean + exp(log_std) z, -1, 1), mean the MLP's output."""
    h = np.tanh(obs.astype(np.float64) @ weights.w1.astype(np.float64) + weights.b1)
    h = np.tanh(h @ weights.w2.astype(np.float64) + weights.b2)
    mean = (h @ weights.w3.astype(np.float64) + weights.b3)[:, 0]
    return np.clip(mean + np.exp(log_std) * z.astype(np.float64), -1, 1), mean


@pytest.mark.parametrize("n", (1, 2, 8, 16))
def test_the_mlp_policys_actions_are_a_float64_forward_pass(n):
    """The fused rollout's block function (chain_mlp_actions) against numpy float64 on the same
    weights, observations and noise: within 1e-4 (float32 sums of 64 terms, mlp.cuh's tanh within
    5e-7 of tanh). The means spread over about ±1 and some actions clip."""
    weights, log_std, seed = _weights(n), -0.7, 9
    b, _, _ = _backend(n, weights=weights, log_std=log_std)
    z = E.policy_noise(seed, np.arange(COUNT, dtype=U32), b.episode, b.elapsed.astype(U32))
    ref, mean = _reference_actions(weights, b.obs(), log_std, z)
    ours = b.policy_actions(seed)
    assert np.abs(ours - ref).max() < 1e-4
    assert mean.std() > 0.05


@pytest.mark.parametrize("n", (2, 8, 10))
def test_an_mlp_rollout_is_k_single_steps_of_its_actions(n):
    """K steps with the MLP fused in one call against K times (its actions at the current state,
    then one step with them): the same block function and lane loop, so equal to float rounding."""
    K, seed, weights = 10, 4, _weights(n)
    fused, _, _ = _backend(n, weights=weights, log_std=-1.0)
    single, _, _ = _backend(n, weights=weights, log_std=-1.0)
    done = fused.rollout(K, "mlp", seed)
    single_done = 0
    for _ in range(K):
        single_done += single.step(single.policy_actions(seed), seed)
    assert done == single_done > 0
    np.testing.assert_array_equal(fused.elapsed, single.elapsed)
    np.testing.assert_array_equal(fused.episode, single.episode)
    # float rounding apart (the two entry points compile the same lane loop into different code),
    # grown over K steps of a chaotic system
    assert relative_error(fused.state, single.state).max() < 1e-4
    assert relative_error(fused.final_obs_out, single.final_obs_out).max() < 1e-4


def test_the_policy_needs_its_shapes():
    with pytest.raises(ConfigError, match="layers of shapes"):
        ChainNativeBackend(4, _params(2), weights=_weights(3))
    b = ChainNativeBackend(4, _params(2))
    with pytest.raises(ConfigError, match="needs weights"):
        b.rollout(1, "mlp", 0)


# ---- the CUDA kernels' host build ----

@pytest.mark.parametrize("n", (2, 8, 11))
@pytest.mark.parametrize("policy", ("ctrl", "none", "mlp"))
def test_the_kernels_host_build_is_the_cpu_build(n, policy):
    """chain_kernel.cu's episode kernels (one thread per environment), built by g++ through
    cuda_host.h and launched over CuPy's grid, against the CPU build: the same header (ch_env_step
    per thread there, its pieces lane by lane here), scalar sinf/cosf there and libmvec's here."""
    weights, K = _weights(n), 6
    cpu, _, ctrl = _backend(n, count=150, weights=weights, log_std=-0.5)
    host, _, _ = _backend(n, count=150, weights=weights, log_std=-0.5, device="host-kernel")
    for b in (cpu, host):
        if policy == "ctrl":
            done = b.step(ctrl.astype(np.float32), 3)
        else:
            done = b.rollout(K, policy, 3)
        b.done = done
    assert cpu.done == host.done
    np.testing.assert_array_equal(cpu.elapsed, host.elapsed)
    np.testing.assert_array_equal(cpu.episode, host.episode)
    np.testing.assert_array_equal(cpu.flags_out, host.flags_out)
    assert relative_error(host.state, cpu.state).max() < 1e-4
    assert relative_error(host.final_obs_out, cpu.final_obs_out).max() < 1e-4
    assert np.abs(host.reward_out - cpu.reward_out).max() < 1e-3
    for b in (cpu, host):
        b.reset(8)
    np.testing.assert_array_equal(cpu.state[:, :n + 1], host.state[:, :n + 1])
    np.testing.assert_allclose(cpu.state, host.state, rtol=2e-6, atol=1e-7)
    mask = np.arange(150) % 2 == 0
    for b in (cpu, host):
        b.restart(mask, 8)
    np.testing.assert_array_equal(cpu.episode, host.episode)
    np.testing.assert_allclose(cpu.final_obs_out[mask], host.final_obs_out[mask], rtol=1e-5, atol=1e-6)


# ---- bad input ----

@pytest.mark.parametrize("links", (0, 33, -1))
def test_links_outside_1_to_32_are_refused(links):
    with pytest.raises(ConfigError):
        _params(links)
    lib = native.library("chain_cpu")
    state = np.zeros((4, 8), np.float32)
    el, ep, fl, rw = np.zeros(4, np.int32), np.zeros(4, U32), np.zeros(4, np.uint8), np.zeros(4, np.float32)
    params = nc.params_array(_params(3))
    args = nc.ChainArgs(state=state.ctypes.data, params=params.ctypes.data, n=4, links=links, num_steps=1,
                        elapsed=el.ctypes.data, episode=ep.ctypes.data, flags_out=fl.ctypes.data,
                        reward_out=rw.ctypes.data, policy=nc.POLICY_HASH)
    assert lib.chain_episodes(ctypes.byref(args)) == -1  # -CH_ERR_LINKS
    assert lib.chain_reset(ctypes.byref(args)) == 1 and lib.chain_rollout(ctypes.byref(args)) == 1
    assert native.library("chain_kernel_host").host_chain_episodes(1, 32, ctypes.byref(args), None) is not None
    assert not state.any() and not ep.any()


def test_missing_episode_arrays_and_policies_are_refused():
    lib = native.library("chain_cpu")
    state, params = np.zeros((4, 6), np.float32), nc.params_array(_params(2))
    args = nc.ChainArgs(state=state.ctypes.data, params=params.ctypes.data, n=4, links=2, num_steps=1,
                        policy=nc.POLICY_HASH)
    assert lib.chain_episodes(ctypes.byref(args)) == -3  # no counters
    el, ep, fl, rw = np.zeros(4, np.int32), np.zeros(4, U32), np.zeros(4, np.uint8), np.zeros(4, np.float32)
    args.elapsed, args.episode, args.flags_out, args.reward_out = (a.ctypes.data for a in (el, ep, fl, rw))
    args.policy = nc.POLICY_MLP
    assert lib.chain_episodes(ctypes.byref(args)) == -3  # no weights
    args.policy = 7
    assert lib.chain_episodes(ctypes.byref(args)) == -5
    args.policy, args.num_steps = nc.POLICY_HASH, -1
    assert lib.chain_episodes(ctypes.byref(args)) == -4
    assert not state.any()


def test_the_cpu_builds_sine_and_cosine_are_libms():
    """The CPU build's inline ch_sincos (cuda/chain.cuh), read through the observation (sin and cos
    of every hinge angle): within 1.2e-7 of float64 sin/cos of the same float32 angles up to 1000 rad."""
    p = _params(8)
    angles = np.random.default_rng(0).uniform(-1000, 1000, (512, 8)).astype(np.float32)
    angles[:8] = np.linspace(-np.pi, np.pi, 64, dtype=np.float32).reshape(8, 8)  # every quadrant's edges
    b = ChainNativeBackend(512, p)
    states = np.zeros((512, p.state_size), np.float32)
    states[:, 1:9] = angles
    b.set_state(states)
    obs = b.obs()
    a64 = angles.astype(np.float64)
    assert np.abs(obs[:, 1:9] - np.sin(a64)).max() < 1.2e-7 and np.abs(obs[:, 9:17] - np.cos(a64)).max() < 1.2e-7
