"""In-kernel collection (fused_collect): T steps of N environments in one call with the MLP as a
stochastic policy, and the trajectory it writes. The CPU build of the kernel source is tested
here; the CUDA build's PTX compile is checked in tests/test_kernel_source.py."""

import numpy as np
import pytest
import torch

import studylib
from studylib import native
from studylib.native.backends import CpuLibraryBackend
from studylib.sims.cartpole import CARTPOLE_V1, RESET_HIGH, RESET_LOW, reference_step
from studylib.episodes import reset_values_numpy
from studylib.errors import ConfigError
from studylib.policy import MLPWeights, mlp_logits, mlp_weights


def _weights(seed=0, scale=4.0) -> MLPWeights:
    """Random weights with the output layer scaled, so probabilities spread over (0, 1)."""
    w = mlp_weights(seed)
    return MLPWeights(w.w1, w.b1, w.w2, w.b2, (w.w3 * scale).astype(np.float32), w.b3)


def _constant_policy(p1: float) -> MLPWeights:
    """p(action 1) = p1 on every state: the output layer's weights 0, its biases 0 and logit(p1)."""
    w = mlp_weights(0)
    b3 = np.array([0.0, np.log(p1 / (1 - p1))], dtype=np.float32)
    return MLPWeights(w.w1, w.b1, w.w2, w.b2, np.zeros_like(w.w3), b3)


def _env(n, seed=0, weights=None, **kw):
    env = studylib.make("fused", n, seed=seed, device="cpu", **kw)
    env.set_policy_weights(weights if weights is not None else _weights())
    return env


def _float64_logits(weights, obs):
    layers = [(w.astype(np.float64), b.astype(np.float64)) for w, b in weights.layers()]
    return mlp_logits(layers, np.asarray(obs, np.float64))


def _counters(episode0, elapsed0, flags):
    """Episode and step-in-episode counters of every step (T, N), from the counters before the
    call and the recorded flags: both advance as cp_env_finish advances them."""
    t_, n = flags.shape
    ep, el = episode0.astype(np.int64).copy(), elapsed0.astype(np.int64).copy()
    eps, els = np.empty((t_, n), np.int64), np.empty((t_, n), np.int64)
    for t in range(t_):
        eps[t], els[t] = ep, el
        done = flags[t] != 0
        ep, el = np.where(done, ep + 1, ep), np.where(done, 0, el + 1)
    return eps, els


def test_ctypes_trajectory_struct_has_the_cpp_layout():
    layout = native.library_trajectory_layout()
    assert layout == native.trajectory_args_layout()
    assert len(layout) == 1 + len(native.TrajectoryArgs._fields_)


def test_one_native_call_for_the_whole_trajectory():
    env = _env(20)
    calls = []
    env.backend.call_hook = lambda name, fn, *args: calls.append(name) or fn(*args)
    steps = env.collect(64)
    assert calls == ["fused_collect"]
    assert steps.obs.shape == (64, 20, 4) and steps.final_obs.shape == (64, 20, 4)
    assert steps.actions.shape == steps.logp.shape == steps.flags.shape == (64, 20)
    assert steps.episodes_finished == int((steps.flags != 0).sum()) > 0


@pytest.mark.parametrize("p1", [0.8, 0.3])
def test_action_frequency_matches_the_softmax(p1):
    """The same p on every state: the frequency of action 1 over N*T draws within 4 standard errors."""
    n, t_ = 256, 64
    env = _env(n, seed=1, weights=_constant_policy(p1))
    actions = env.collect(t_).actions
    draws = n * t_
    se = np.sqrt(p1 * (1 - p1) / draws)
    assert abs(actions.mean() - p1) < 4 * se, (actions.mean(), p1, se)
    # and no environment or step is stuck: every env and every step sees both actions
    assert 0 < actions.mean(axis=0).min() and actions.mean(axis=0).max() < 1
    assert 0 < actions.mean(axis=1).min() and actions.mean(axis=1).max() < 1


def test_actions_follow_the_state_dependent_probabilities():
    """Random weights: the count of action 1 against the sum of the per-step probabilities
    (float64 reference logits on the recorded observations), within 4 standard deviations."""
    weights = _weights(3)
    env = _env(128, seed=2, weights=weights)
    steps = env.collect(128)
    logits = _float64_logits(weights, steps.obs.reshape(-1, 4))
    p1 = 1 / (1 + np.exp(logits[:, 0] - logits[:, 1]))
    assert p1.min() < 0.2 and p1.max() > 0.8  # the policy really depends on the state
    z = (steps.actions.sum() - p1.sum()) / np.sqrt((p1 * (1 - p1)).sum())
    assert abs(z) < 4, z


def test_actions_are_the_documented_draws():
    """Every action is u < sigmoid(l1 - l0) with u = native.sample_uniforms(seed, env, episode,
    step in episode), bit for bit, except where u is within float rounding of the probability."""
    weights, seed, n = _weights(5), 11, 40
    env = _env(n, seed=seed, weights=weights)
    env.collect(30)  # start mid-episode: the counters are not all 0
    episode0, elapsed0 = env.backend._episode.copy(), env.backend._elapsed.copy()
    steps = env.collect(100)
    eps, els = _counters(episode0, elapsed0, steps.flags)
    u = native.sample_uniforms(seed, np.broadcast_to(np.arange(n), eps.shape), eps, els).astype(np.float64)
    logits = _float64_logits(weights, steps.obs.reshape(-1, 4)).reshape(100, n, 2)
    p1 = 1 / (1 + np.exp(logits[..., 0] - logits[..., 1]))
    sure = np.abs(u - p1) > 1e-5
    assert sure.mean() > 0.999
    np.testing.assert_array_equal(steps.actions[sure], (u < p1)[sure])


def test_logp_equals_torch_categorical_log_prob():
    weights = _weights(7, scale=8.0)
    env = _env(64, seed=3, weights=weights)
    steps = env.collect(100)
    layers = [(torch.from_numpy(w), torch.from_numpy(b)) for w, b in weights.layers()]
    logits = mlp_logits(layers, torch.from_numpy(steps.obs), xp=torch)
    expected = torch.distributions.Categorical(logits=logits).log_prob(torch.from_numpy(steps.actions).long())
    assert expected.min() < -3  # unlikely actions were drawn too: the test covers both tails
    np.testing.assert_allclose(steps.logp, expected.numpy(), rtol=0, atol=1e-5)


def test_logp_of_extreme_logits_is_finite_and_exact():
    """Logits 60 and 200 apart: the sure action, with logp -exp(-60) (or 0), nothing overflows."""
    w = _constant_policy(0.5)
    env = _env(32, weights=w)
    for b3, action in (([0.0, 60.0], 1), ([60.0, 0.0], 0), ([0.0, 200.0], 1), ([200.0, 0.0], 0)):
        env.set_policy_weights(MLPWeights(w.w1, w.b1, w.w2, w.b2, w.w3, np.array(b3, np.float32)))
        steps = env.collect(50)
        assert np.all(steps.actions == action)
        np.testing.assert_allclose(steps.logp, np.float32(-np.exp(-max(b3))), rtol=1e-5, atol=0)


def test_transitions_equal_the_reference():
    """Every recorded transition is CartPole-v1's step of the recorded obs and action: final_obs
    is the reference's next observation (the terminal one where the episode ended), the flags are
    the reference's termination, and the next obs is final_obs or, after an end, the reset draw."""
    seed, n, t_ = 4, 48, 200
    env = _env(n, seed=seed)
    episode0 = env.backend._episode.copy()
    steps = env.collect(t_)
    obs, act, fin, flags = steps.obs, steps.actions, steps.final_obs, steps.flags
    _, ref_obs, ref_term = reference_step(obs.reshape(-1, 4), act.reshape(-1))
    np.testing.assert_allclose(fin.reshape(-1, 4), ref_obs, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal((flags & 1).reshape(-1) != 0, ref_term)
    done = flags[:-1] != 0
    assert done.sum() >= 20
    np.testing.assert_array_equal(obs[1:][~done], fin[:-1][~done])  # no end: the next obs is final_obs
    eps, _ = _counters(episode0, np.zeros(n), flags)
    t_idx, env_idx = np.nonzero(done)
    draws = reset_values_numpy(seed, env_idx, eps[t_idx + 1, env_idx], 4)
    np.testing.assert_array_equal(obs[1:][done], draws)  # after an end: the next episode's first obs
    assert np.all((draws >= RESET_LOW) & (draws <= RESET_HIGH))
    live = flags[-1] == 0
    np.testing.assert_array_equal(env.backend.obs()[live], fin[-1][live])  # the env goes on from there


def test_truncation_is_flagged_with_the_pre_reset_observation():
    """Episodes 3 steps short of the time limit: the third step is truncated, its final_obs is the
    reference step of its obs (what GAE bootstraps from), and the next obs is a reset draw."""
    n = 8
    env = _env(n, seed=5, weights=_constant_policy(0.5))
    env.set_state(np.zeros((n, 4)))  # upright and still: nothing terminates within 3 steps
    env.backend._elapsed[:] = CARTPOLE_V1.max_episode_steps - 3  # the counter the kernel reads
    steps = env.collect(4)
    truncated = (steps.flags & 2) != 0
    assert not truncated[:2].any() and truncated[2].all() and not truncated[3].any()
    assert not (steps.flags & 1).any()
    ref = reference_step(steps.obs[2], steps.actions[2])[1]
    np.testing.assert_allclose(steps.final_obs[2], ref, rtol=1e-5, atol=1e-6)
    assert not np.allclose(steps.obs[3], steps.final_obs[2])


def test_same_seed_same_trajectory_however_the_calls_are_split():
    whole = _env(37, seed=8).collect(60)
    split = _env(37, seed=8)
    parts = [split.collect(25), split.collect(35)]
    for field in ("obs", "actions", "logp", "flags", "final_obs"):
        np.testing.assert_array_equal(getattr(whole, field), np.concatenate([getattr(p, field) for p in parts]))
    other = _env(37, seed=9).collect(60)
    assert not np.array_equal(whole.actions, other.actions)
    # different calls draw differently: the second half is not the first one again
    assert not np.array_equal(parts[0].actions[:25], parts[1].actions[:25])


def test_weights_updated_between_calls_take_effect_without_a_rebuild():
    env = _env(256, seed=6, weights=_constant_policy(0.2))
    builds = native.build_info.cache_info()
    lib = native.library("fused_cpu")
    low = env.collect(32).actions.mean()
    env.set_policy_weights(_constant_policy(0.9))
    high = env.collect(32)
    assert native.library("fused_cpu") is lib  # the same loaded library
    assert native.build_info.cache_info().misses == builds.misses  # nothing was built again
    se = np.sqrt(0.25 / (256 * 32))
    assert abs(low - 0.2) < 5 * se and abs(high.actions.mean() - 0.9) < 5 * se
    np.testing.assert_allclose(high.logp, np.where(high.actions == 1, np.log(0.9), np.log(0.1)), atol=1e-5)


def test_state_factor_and_a_partial_block():
    """S = 2 (paper §4.2: the state row 2x CartPole's) and N not a multiple of the 16-lane block:
    the CartPole steps as CartPole-v1, the 4 carried floats flip sign once per step (read and
    written once per call), and the envs of the partial block are recorded like the others."""
    n = 37
    env = _env(n, seed=12, state_factor=2)
    before = env.get_state()
    steps = env.collect(1)
    ref_state = reference_step(before[:, :4], steps.actions[0])[0]
    live = steps.flags[0] == 0
    np.testing.assert_allclose(env.get_state()[live, :4], ref_state[live], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(env.get_state()[:, 4:], -before[:, 4:])
    np.testing.assert_array_equal(steps.obs[0], before[:, :4].astype(np.float32))
    env.collect(3)
    np.testing.assert_array_equal(env.get_state()[:, 4:], before[:, 4:])  # four flips


def test_only_the_fused_kernels_collect():
    cartpole = CpuLibraryBackend("cartpole", 8, 1, 1, CARTPOLE_V1)
    with pytest.raises(ConfigError, match="no MLP"):
        cartpole.collect(4, 0)
