"""The CUDA kernels executed on the CPU (cuda/cuda_host.h, studylib/native/kernel_host.py): every entry
point of cartpole_kernel.cu and fused_kernel.cu, launched over the grid CuPy would launch, against
the CPU builds of the same logic (cartpole_cpu, fused_cpu) and the Python reference.

N is never a multiple of the block (256 threads for cartpole, 128 for fused) nor of the warp: the
last block and its last warp are partial, so the threads past N return early, the weights are
still loaded by the whole block, and the warp-level episode count sees partial warps.
"""

import numpy as np
import pytest

from studylib import native
from studylib.native.backends import CpuLibraryBackend
from studylib.sims.cartpole import CARTPOLE_V1, reference_step
from studylib.episodes import reset_values_numpy
from studylib.policy import mlp_logits, mlp_weights
from tests.conftest import random_states

NS = (37, 300)  # one partial block; full blocks then a partial one (and partial warps in both)
STATE_FACTORS = (1, 2)


pytestmark = pytest.mark.usefixtures("native_compiler")  # skips the module where no C++ compiler builds


def _pair(pair: str, n: int, state_factor: int = 1, policy_seed: int = 0):
    """The kernel on the host and the CPU build, same arrays and knobs, both reset with seed 5."""
    from studylib.native.kernel_host import HostKernelBackend

    weights = mlp_weights(policy_seed) if pair == "fused" else None
    host = HostKernelBackend(pair, n, state_factor, 1, CARTPOLE_V1, weights)
    cpu = CpuLibraryBackend(pair, n, state_factor, 1, CARTPOLE_V1, weights)
    for b in (host, cpu):
        b.reset(5)
    return host, cpu


def _assert_same(host, cpu, atol=1e-4):
    """Counters and flags identical; states to float tolerance (the host kernel steps one env at a
    time with scalar sinf/cosf, the CPU build a block of lanes with vector ones)."""
    np.testing.assert_array_equal(host.flags_out, cpu.flags_out)
    np.testing.assert_array_equal(host._elapsed, cpu._elapsed)
    np.testing.assert_array_equal(host._episode, cpu._episode)
    np.testing.assert_allclose(host.state, cpu.state, rtol=0, atol=atol)


@pytest.mark.parametrize("pair", ["cartpole", "fused"])
@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("state_factor", STATE_FACTORS)
def test_reset_and_no_policy_rollout_match_the_cpu_build(pair, n, state_factor):
    host, cpu = _pair(pair, n, state_factor)
    np.testing.assert_array_equal(host.state, cpu.state)  # the reset draws, bit for bit
    row_len = host.state.shape[1]
    np.testing.assert_array_equal(host.state, reset_values_numpy(5, np.arange(n), np.zeros(n), row_len))
    assert host.rollout(None, 1, native.POLICY_HASH, 5) == cpu.rollout(None, 1, native.POLICY_HASH, 5) == 0
    done = host.rollout(None, 300, native.POLICY_HASH, 5)
    assert done == cpu.rollout(None, 300, native.POLICY_HASH, 5)
    assert done > n  # every env ended episodes: resets inside the kernel's K-step loop
    _assert_same(host, cpu)


@pytest.mark.parametrize("pair", ["cartpole", "fused"])
def test_no_policy_rollout_matches_the_python_episode_step(pair):
    """K hashed-action steps in one launch against studylib.episodes.advance stepped K times in
    float64 with the same hashed actions and reset draws: counters identical, states close."""
    from studylib.episodes import advance, hash_actions

    n, k, seed = 37, 40, 5
    host, _ = _pair(pair, n)
    state = host.get_state().astype(np.float64)
    env, elapsed, episode = np.arange(n, dtype=np.uint32), np.zeros(n, np.int64), np.zeros(n, np.int64)
    done = 0
    for _ in range(k):
        actions = hash_actions(np.full(n, seed, np.uint32), env, episode.astype(np.uint32), elapsed.astype(np.uint32))
        fresh = reset_values_numpy(seed, env, episode + 1, state.shape[1]).astype(np.float64)
        out = advance(state, elapsed, episode, actions.astype(np.int64), fresh, state_factor=1, compute_factor=1)
        state, elapsed, episode, done = out.state, out.elapsed, out.episode, done + int(out.done.sum())
    assert host.rollout(None, k, native.POLICY_HASH, seed) == done > 0
    np.testing.assert_array_equal(host._elapsed, elapsed)
    np.testing.assert_array_equal(host._episode, episode)
    np.testing.assert_allclose(host.get_state(), state, rtol=0, atol=1e-4)


def test_fused_rollout_runs_the_policies_without_the_mlp_as_its_lighter_sibling():
    """The GPU backend launches fused_rollout_no_mlp for policy "none" and the caller's actions;
    fused_rollout itself still takes them (the entry point's contract): the same results."""
    host, cpu = _pair("fused", 300)
    host._rollout_fn = host._counted(host._host.host_fused_rollout)  # the MLP kernel, whatever the policy
    assert host.rollout(None, 200, native.POLICY_HASH, 5) == cpu.rollout(None, 200, native.POLICY_HASH, 5)
    actions = np.arange(300, dtype=np.int32) % 2
    assert host.rollout(actions, 1, native.POLICY_ACTIONS, 5) == cpu.rollout(actions, 1, native.POLICY_ACTIONS, 5)
    _assert_same(host, cpu)


@pytest.mark.parametrize("pair", ["cartpole", "fused"])
def test_one_step_with_the_callers_actions_matches_the_reference(pair):
    """POLICY_ACTIONS, one step from states on both sides of the thresholds: the flags and the
    pre-reset observations of gymnasium's formulas (studylib.sims.cartpole.reference_step)."""
    n = 301
    host, cpu = _pair(pair, n)
    rng = np.random.default_rng(7)
    states = random_states(rng, n).astype(np.float32)
    actions = rng.integers(0, 2, n).astype(np.int32)
    _, ref_obs, ref_term = reference_step(states.astype(np.float64), actions)
    for b in (host, cpu):
        b.set_state(states)
        b.step(actions, 5)
    assert ref_term.sum() >= 10 and (~ref_term).sum() >= 10
    np.testing.assert_array_equal(host.flags_out & 1, ref_term)
    np.testing.assert_allclose(host.final_obs(), ref_obs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(host.final_obs(), cpu.final_obs(), rtol=0, atol=1e-6)
    _assert_same(host, cpu, atol=1e-6)


@pytest.mark.parametrize("pair", ["cartpole", "fused"])
def test_restart_matches_the_cpu_build(pair):
    host, cpu = _pair(pair, 300)
    for b in (host, cpu):
        b.rollout(None, 40, native.POLICY_HASH, 5)
    mask = np.random.default_rng(8).random(300) < 0.4
    for b in (host, cpu):
        b.restart(mask, 5)
    _assert_same(host, cpu)
    np.testing.assert_array_equal(host.state[mask], cpu.state[mask])  # fresh draws, bit for bit
    np.testing.assert_array_equal(host.final_obs_out[mask], cpu.final_obs_out[mask])
    assert (host._elapsed[mask] == 0).all() and (host._elapsed[~mask] > 0).any()


@pytest.mark.parametrize("n", NS)
def test_fused_mlp_rollout_matches_the_cpu_build(n):
    host, cpu = _pair("fused", n, policy_seed=3)
    done = host.rollout(None, 120, native.POLICY_MLP, 5)
    assert done == cpu.rollout(None, 120, native.POLICY_MLP, 5) > 0
    _assert_same(host, cpu)


def test_fused_mlp_logits_match_the_reference_and_the_cpu_build():
    host, cpu = _pair("fused", 4, policy_seed=4)
    obs = random_states(np.random.default_rng(9), 333).astype(np.float32)
    logits = host.mlp_logits(obs)
    layers = [(w.astype(np.float64), b.astype(np.float64)) for w, b in mlp_weights(4).layers()]
    np.testing.assert_allclose(logits, mlp_logits(layers, obs.astype(np.float64)), rtol=0, atol=2e-6)
    np.testing.assert_allclose(logits, cpu.mlp_logits(obs), rtol=0, atol=1e-6)


@pytest.mark.parametrize("n", NS)
def test_fused_collect_matches_the_cpu_build_and_the_sampling_rule(n):
    host, cpu = _pair("fused", n, policy_seed=2)
    steps = 60
    h, c = host.collect(steps, 11), cpu.collect(steps, 11)
    assert h.episodes_finished == c.episodes_finished > 0
    np.testing.assert_array_equal(h.actions, c.actions)
    np.testing.assert_array_equal(h.flags, c.flags)
    for name in ("obs", "final_obs", "logp"):
        np.testing.assert_allclose(getattr(h, name), getattr(c, name), rtol=0, atol=1e-4, err_msg=name)
    _assert_same(host, cpu)
    # The sampling rule in Python: u from the counter hash keyed by (seed, env, episode, step in
    # episode), action 1 where u < sigmoid(logit1 - logit0) of the float64 reference MLP.
    layers = [(w.astype(np.float64), b.astype(np.float64)) for w, b in mlp_weights(2).layers()]
    env, elapsed, episode = np.arange(n), np.zeros(n, np.int64), np.zeros(n, np.int64)
    checked = 0
    for t in range(steps):
        logits = mlp_logits(layers, h.obs[t].astype(np.float64))
        p1 = 1.0 / (1.0 + np.exp(logits[:, 0] - logits[:, 1]))
        u = native.sample_uniforms(11, env, episode, elapsed).astype(np.float64)
        sure = np.abs(u - p1) > 1e-5
        np.testing.assert_array_equal(h.actions[t][sure], (u < p1)[sure])
        np.testing.assert_allclose(h.logp[t], np.log(np.where(h.actions[t] == 1, p1, 1 - p1)), atol=1e-5)
        checked += sure.sum()
        ended = h.flags[t] != 0
        elapsed, episode = np.where(ended, 0, elapsed + 1), episode + ended
    assert checked > 0.99 * n * steps
    np.testing.assert_array_equal(host._episode, episode)
    np.testing.assert_array_equal(host._elapsed, elapsed)
