"""Every implementation against gymnasium's CartPole-v1, transition for transition.

float32 implementations (cpp, torch, jax, cuda) are compared with rtol 1e-5 plus atol 1e-6: the
absolute term covers components that cancel to ~0 (e.g. x + tau * x_dot with x ~ -tau * x_dot),
where float32 input rounding (~6e-8 relative) makes any relative bound meaningless. gym computes
in float64 and must match exactly.
"""

import numpy as np
import pytest
from gymnasium.envs.classic_control.cartpole import CartPoleEnv

import gymnasium
import studylib
from studylib.sims.cartpole import CARTPOLE_V1, RESET_HIGH, RESET_LOW, reference_step
from studylib.episodes import hash_actions_numpy
from studylib.policy import reference_actions
from tests.conftest import gym_reference_step, random_states

RTOL, ATOL = 1e-5, 1e-6
# A float32 value within this distance of a threshold may land on either side of it after
# float32 rounding; flags may then legitimately differ from the float64 reference.
THRESHOLD_SLACK = 1e-5


def _tolerance(impl):
    return (0.0, 0.0) if impl == "gym" else (RTOL, ATOL)


def _distance_to_threshold(next_states):
    p = CARTPOLE_V1
    return np.minimum(np.abs(np.abs(next_states[:, 0]) - p.x_threshold),
                      np.abs(np.abs(next_states[:, 2]) - p.theta_threshold_radians))


def _one_step(impl, states, actions):
    env = studylib.make(impl, len(states), seed=3)
    env.reset()
    env.set_state(states)
    obs, reward, terminated, truncated = (np.asarray(x) for x in env.step(actions))
    return env, obs, reward, terminated, truncated


def _check_transition(impl, states, actions):
    ref_state, ref_obs, ref_term = gym_reference_step(states, actions)
    env, obs, reward, terminated, truncated = _one_step(impl, states, actions)
    assert obs.shape == (len(states), 4) and obs.dtype == np.float32
    np.testing.assert_array_equal(reward, np.ones(len(states), np.float32))  # 1 every step
    assert not truncated.any()
    live = ~ref_term & ~terminated  # finished envs were reset in the same step: fresh draws
    rtol, atol = _tolerance(impl)
    np.testing.assert_allclose(obs[live], ref_obs[live], rtol=rtol, atol=atol)
    np.testing.assert_allclose(env.get_state()[live], ref_state[live], rtol=rtol, atol=atol)
    assert np.all((obs[terminated] >= RESET_LOW) & (obs[terminated] <= RESET_HIGH))
    differ = terminated != ref_term
    if impl == "gym":
        assert not differ.any()
    else:  # only where float32 rounding can put the value on either side of the threshold
        assert np.all(_distance_to_threshold(ref_state[differ]) < THRESHOLD_SLACK), ref_state[differ]
    return differ


@pytest.mark.parametrize("action", [0, 1])
def test_one_step_from_random_states(impl, action):
    rng = np.random.default_rng(10 + action)
    states = random_states(rng, 512)
    actions = np.full(512, action)
    _check_transition(impl, states, actions)


def test_one_step_at_a_hair_from_each_threshold(impl):
    """States whose next x or theta lands at +-delta from a threshold, delta down to 0."""
    rng = np.random.default_rng(20)
    p = CARTPOLE_V1
    deltas = np.array([1e-2, 1e-4, 1e-6, 1e-8, 0.0, -1e-8, -1e-6, -1e-4, -1e-2])
    rows, actions = [], []
    for sign in (1, -1):
        for delta in deltas:
            for action in (0, 1):
                s = random_states(rng, 1)[0] * 0.3
                # x_next = x + tau * x_dot exactly, so shifting x moves x_next by the same amount.
                s[0] = sign * (p.x_threshold + delta) - p.tau * s[1]
                rows.append(s.copy()); actions.append(action)
                s = random_states(rng, 1)[0] * 0.3
                # theta_next = theta + tau * theta_dot: choose theta_dot to land at the target.
                s[3] = (sign * (p.theta_threshold_radians + delta) - s[2]) / p.tau
                rows.append(s.copy()); actions.append(action)
    states = np.array(rows)
    differ = _check_transition(impl, states, np.array(actions))
    if impl != "gym":
        print(f"{impl}: {differ.sum()} of {len(states)} flags differ, all within float32 rounding of a threshold")


def test_truncation_at_500_steps_and_same_step_reset(impl):
    n = 4
    env = studylib.make(impl, n, seed=5)
    env.reset()
    balanced = np.zeros((n, 4))
    for t in range(1, CARTPOLE_V1.max_episode_steps + 1):
        env.set_state(balanced)  # upright and still: never terminates
        obs, reward, terminated, truncated = (np.asarray(x) for x in env.step(np.arange(n) % 2))
        assert not np.asarray(terminated).any()
        assert np.asarray(truncated).all() == (t == CARTPOLE_V1.max_episode_steps), t
    # the truncating step returned the first observation of the next episode
    assert np.all((obs >= RESET_LOW) & (obs <= RESET_HIGH)) and np.any(obs != 0)
    env.set_state(balanced)
    assert not np.asarray(env.step(np.zeros(n, int))[3]).any()  # the counter restarted


def test_long_run_lockstep_with_gymnasium(impl):
    """1500 steps in lockstep with gymnasium.make('CartPole-v1') (TimeLimit included), half the
    envs under a balancing controller (so episodes run into truncation at 500) and half random.

    Before every step the reference's state is forced into the implementation (set_state keeps
    the episode counters), so each transition is compared from a shared state along real
    episodes: float32 drift, which an inverted pendulum amplifies ~e^4.4 per simulated second
    under open-loop actions, cannot hide a wrong transition or a wrong episode count."""
    n, steps = 8, 1500
    rng = np.random.default_rng(30)
    refs = [gymnasium.make("CartPole-v1") for _ in range(n)]
    ref_obs = np.array([r.reset(seed=100 + i)[0] for i, r in enumerate(refs)])
    env = studylib.make(impl, n, seed=7)
    env.reset()
    rtol, atol = _tolerance(impl)
    compared = np.ones(n, bool)  # envs still in lockstep
    terminations = truncations = 0
    for _ in range(steps):
        env.set_state(np.array([r.unwrapped.state for r in refs]))
        ctrl = (ref_obs[:, 2] + 0.5 * ref_obs[:, 3] > 0).astype(int)
        actions = np.where(np.arange(n) < n // 2, ctrl, rng.integers(0, 2, n))
        obs, _, terminated, truncated = (np.asarray(x) for x in env.step(actions))
        for i, r in enumerate(refs):
            o, reward, term, trunc, _ = r.step(int(actions[i]))
            assert reward == 1.0
            if compared[i] and (term, trunc) != (terminated[i], truncated[i]):
                # Allowed only within float32 rounding of a threshold; the env then leaves the test.
                assert impl != "gym" and not trunc
                assert _distance_to_threshold(np.array([r.unwrapped.state]))[0] < THRESHOLD_SLACK
                compared[i] = False
            elif compared[i] and not (term or trunc):
                np.testing.assert_allclose(obs[i], o, rtol=rtol, atol=atol)
            terminations += term
            truncations += trunc and not term
            if term or trunc:
                o, _ = r.reset()
            ref_obs[i] = o
    assert compared.sum() >= n - 1, "more than one env left lockstep at a threshold"
    assert terminations >= 40 and truncations >= 4  # both episode ends were exercised
    print(f"{impl}: {terminations} terminations, {truncations} truncations, all in lockstep")


def test_mlp_policy_chooses_the_reference_actions(impl):
    n = 256
    rng = np.random.default_rng(40)
    states = random_states(rng, n) * 0.5
    env = studylib.make(impl, n, seed=1)
    env.reset()
    env.set_state(states)
    env.rollout(1, policy="mlp")
    actions, margin = reference_actions(env.policy_weights, states[:, :4].astype(np.float32))
    assert 0 < actions.sum() < n  # the policy is not constant on these states
    expected, _, term = reference_step(states, actions)
    sure = (margin > 1e-4) & ~term  # float32 logits can only flip a near-tie
    rtol, atol = _tolerance(impl)
    np.testing.assert_allclose(env.get_state()[sure], expected[sure], rtol=rtol, atol=atol)
    assert sure.sum() > 0.9 * n


def test_no_policy_takes_the_hashed_actions(impl):
    n = 256
    rng = np.random.default_rng(41)
    states = random_states(rng, n) * 0.5
    env = studylib.make(impl, n, seed=9)
    env.reset()  # episode 0, step 0 in every env
    env.set_state(states)
    env.rollout(1, policy="none")
    actions = hash_actions_numpy(9, np.zeros(n, np.int64), np.zeros(n, np.int64))
    assert 0.3 < actions.mean() < 0.7
    expected, _, term = reference_step(states, actions)
    rtol, atol = _tolerance(impl)
    np.testing.assert_allclose(env.get_state()[~term], expected[~term], rtol=rtol, atol=atol)


@pytest.mark.parametrize("state_factor,compute_factor", [(3, 1), (1, 4), (2, 3)])
def test_knobs_match_the_reference(impl, state_factor, compute_factor):
    n = 64
    rng = np.random.default_rng(50)
    states = random_states(rng, n, state_factor) * 0.5
    actions = rng.integers(0, 2, n)
    env = studylib.make(impl, n, seed=2, state_factor=state_factor, compute_factor=compute_factor)
    env.reset()
    env.set_state(states)
    obs, _, terminated, _ = (np.asarray(x) for x in env.step(actions))
    expected, expected_obs, expected_term = reference_step(states, actions, compute_factor=compute_factor)
    live = ~expected_term
    rtol, atol = _tolerance(impl)
    np.testing.assert_allclose(env.get_state()[live], expected[live], rtol=rtol, atol=atol)
    np.testing.assert_allclose(obs[live], expected_obs[live], rtol=rtol, atol=atol)
    state = env.get_state()
    if compute_factor == 1:  # the CartPole against gymnasium itself, whatever S (paper §4.2's S adds memory only)
        ref_state, _, ref_term = gym_reference_step(states[:, :4], actions)
        np.testing.assert_array_equal(ref_term, expected_term)
        np.testing.assert_allclose(state[live, :4], ref_state[live], rtol=rtol, atol=atol)
    else:
        single = reference_step(states, actions, compute_factor=1)[0][live]
        assert np.abs(state[live] - single).max() > 1e-4  # the sub-steps changed the result
    # The carried floats of every env, finished or not, flipped their sign exactly once.
    np.testing.assert_array_equal(state[:, 4:], -states[:, 4:].astype(env.dtype))
    # A finished env's CartPole was reset to a fresh draw in the same step.
    assert np.all((state[~live, :4] >= RESET_LOW) & (state[~live, :4] <= RESET_HIGH))


def test_state_factor_k_steps_in_one_call_equal_k_single_steps(impl):
    """Paper §4.2's S: a K-step call reads and writes the carried floats once (fused) and K calls
    of one step every step; both end in the same state, the carried floats flipped K times."""
    n, s, k = 48, 3, 7
    states = random_states(np.random.default_rng(51), n, s) * 0.3
    ends = []
    for calls in ([k], [1] * k):
        env = studylib.make(impl, n, seed=5, state_factor=s)
        env.reset()
        env.set_state(states)
        finished = sum(env.rollout(c, policy="none").episodes_finished for c in calls)
        ends.append(env.get_state())
    assert finished > 0  # same-step resets happened in between
    np.testing.assert_array_equal(ends[0], ends[1])
    np.testing.assert_array_equal(ends[0][:, 4:], -states[:, 4:].astype(env.dtype))  # K = 7: odd


def test_gym_is_gymnasium_cartpole():
    env = studylib.make("gym", 2)
    assert all(type(e) is CartPoleEnv for e in env._envs)
