"""The chain's PPO parts that need no training: the Gaussian's formulas against torch's and
jax's, the running normalizations against numpy over all the data, the settings' checks, the
policy arrays, and gymnasium's judge on hand-made policies."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from studylib.errors import ConfigError
from studylib.train.chain import gaussian, running_norm as rn
from studylib.train.chain.evaluate import JUDGE_EPISODES, gymnasium_returns, judge, screen_return
from studylib.train.chain.policy import (deterministic_actions, load_policy, make_policy_arrays, save_policy,
                                         zero_policy)
from studylib.train.chain.settings import CHAIN_SOLVE_RETURN, ChainPPOSettings, ChainRun


def _samples(seed=0, rows=257):
    rng = np.random.default_rng(seed)
    mean = rng.normal(size=(rows, 1)).astype(np.float32)
    log_std = np.array([-0.7], np.float32)
    action = (mean + np.exp(log_std) * rng.normal(size=(rows, 1)) * 3).astype(np.float32)
    return mean, log_std, action


def test_log_prob_matches_torch_normal():
    mean, log_std, action = _samples()
    ours = gaussian.log_prob(torch.from_numpy(mean), torch.from_numpy(log_std), torch.from_numpy(action), torch)
    ref = torch.distributions.Normal(torch.from_numpy(mean), torch.from_numpy(log_std).exp()).log_prob(
        torch.from_numpy(action)).sum(1)
    torch.testing.assert_close(ours, ref, atol=1e-5, rtol=1e-5)
    ent = gaussian.entropy(torch.from_numpy(log_std), torch)
    ref_ent = torch.distributions.Normal(torch.zeros(1), torch.from_numpy(log_std).exp()).entropy().sum()
    torch.testing.assert_close(ent, ref_ent, atol=1e-5, rtol=1e-5)


def test_log_prob_matches_jax_norm():
    import jax.numpy as jnp
    from jax.scipy.stats import norm

    mean, log_std, action = _samples(seed=1)
    ours = gaussian.log_prob(jnp.asarray(mean), jnp.asarray(log_std), jnp.asarray(action), jnp)
    ref = norm.logpdf(jnp.asarray(action), jnp.asarray(mean), jnp.exp(jnp.asarray(log_std))).sum(-1)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(ref), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("xp_name", ["numpy", "torch"])
def test_running_moments_equal_the_moments_of_all_rows(xp_name):
    rng = np.random.default_rng(2)
    rows = [rng.normal(3.0, 2.0, size=(8, 5)) for _ in range(40)]
    xp = np if xp_name == "numpy" else torch
    wrap = (lambda a: a) if xp is np else (lambda a: torch.from_numpy(a))
    m = rn.initial_moments((5,), xp, dtype=np.float64 if xp is np else torch.float64)
    for r in rows:
        m = rn.update(m, wrap(r))
    every = np.concatenate(rows)
    # the initial count of 1e-4 (gymnasium's) weighs next to nothing
    np.testing.assert_allclose(np.asarray(m.mean), every.mean(0), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(m.var), every.var(0), rtol=1e-5)
    assert float(m.count) == pytest.approx(len(every), abs=1e-3)


def test_reward_scale_follows_gymnasiums_rule():
    """Divided by the std of the running discounted return, which restarts at a termination."""
    state = rn.initial_reward_scale(2, np)
    gamma, returns = 0.9, []
    disc = np.zeros(2)
    for t in range(30):
        reward, term = np.array([1.0, 2.0]), np.array([float(t == 10), 0.0])
        state, scaled = rn.scale_rewards(state, reward, term, gamma, 10.0, np)
        disc = disc * gamma * (1 - term) + reward
        returns.append(disc.copy())
    all_returns = np.concatenate(returns)
    assert float(state.moments.var) == pytest.approx(all_returns.var(), rel=1e-4)
    np.testing.assert_allclose(scaled, np.clip(reward / np.sqrt(all_returns.var() + rn.EPSILON), -10, 10), rtol=1e-4)


def test_a_trajectorys_reward_scale_at_once_is_t_steps_of_it():
    """scale_reward_sequence (the kernel collector's) against T calls of scale_rewards, carried over
    two trajectories: the scaled rewards, the moments and each environment's discounted return."""
    rng = np.random.default_rng(4)
    T, N, gamma = 64, 8, 0.99
    one = at_once = rn.initial_reward_scale(N, np, dtype=np.float64)
    for _ in range(2):
        rewards = rng.normal(9.0, 2.0, (T, N))
        terminated = rng.random((T, N)) < 0.03
        step_by_step = []
        for t in range(T):
            one, scaled = rn.scale_rewards(one, rewards[t], terminated[t].astype(float), gamma, 10.0, np)
            step_by_step.append(scaled)
        at_once, scaled_all = rn.scale_reward_sequence(at_once, rewards, terminated, gamma, 10.0)
        np.testing.assert_allclose(scaled_all, np.stack(step_by_step), rtol=1e-9)
        np.testing.assert_allclose(at_once.discounted, one.discounted, rtol=1e-12)
        for a, b in zip(at_once.moments, one.moments):
            assert float(a) == pytest.approx(float(b), rel=1e-9)
    assert (np.abs(scaled_all) < 10).all() and scaled_all.std() > 0.01  # not all clipped, not constant


def test_settings_are_checked_where_made():
    with pytest.raises(ConfigError, match="links"):
        ChainPPOSettings(links=0)
    with pytest.raises(ConfigError, match="links"):
        ChainPPOSettings(links=33)
    with pytest.raises(ConfigError, match="learning_rate"):
        ChainPPOSettings(learning_rate=0)
    with pytest.raises(ConfigError, match="minibatches"):
        ChainPPOSettings(num_envs=1, num_steps=4, num_minibatches=8)
    with pytest.raises(ConfigError, match="collectors"):
        ChainRun("cuda-graph")
    assert ChainPPOSettings().batch_size == 2048 and ChainPPOSettings().minibatch_size == 64
    assert ChainPPOSettings().solve_return == CHAIN_SOLVE_RETURN == 9100.0


def test_policy_arrays_round_trip_and_normalize(tmp_path):
    rng = np.random.default_rng(3)
    d = 9
    layers = [(rng.normal(size=(d, 64)), rng.normal(size=64)), (rng.normal(size=(64, 64)) / 8, rng.normal(size=64)),
              (rng.normal(size=(64, 1)), rng.normal(size=1))]
    mean, var = rng.normal(size=d), rng.uniform(0.5, 2, size=d)
    arrays = make_policy_arrays(layers, [-0.5], mean, var, 10.0)
    path = save_policy(tmp_path / "p.npz", arrays)
    again = load_policy(path)
    obs = rng.normal(size=(32, d)).astype(np.float32)
    x = np.clip((obs - mean) / np.sqrt(var + 1e-8), -10, 10)
    h = np.tanh(np.tanh(x @ layers[0][0] + layers[0][1]) @ layers[1][0] + layers[1][1])
    ref = np.clip((h @ layers[2][0] + layers[2][1])[:, 0], -1, 1)
    np.testing.assert_allclose(deterministic_actions(again, obs), ref, atol=1e-4)
    with pytest.raises(ConfigError, match="W2"):
        make_policy_arrays([layers[0], (np.zeros((3, 3)), np.zeros(3)), layers[2]], [0.0], mean, var, 10.0)


def test_zero_action_policy_is_not_solved():
    """The motor off: the single pendulum falls within a second (about 13 steps, return ~110),
    far from 950, let alone the threshold; the screen on cpp agrees with MuJoCo's episodes."""
    policy = zero_policy(1)
    verdict = judge(policy, 950.0, seed=0)
    assert verdict.first < 950 and verdict.second is None and not verdict.solved
    assert screen_return(policy, 16, seed=0) == pytest.approx(verdict.first, rel=0.15)


def test_judge_needs_both_evaluations():
    """At a bar the zero-action policy clears (its episodes all last a few steps), both
    evaluations run and pass; at an impossible one the first fails and the second never runs."""
    policy = zero_policy(2)
    low = float(gymnasium_returns(policy, 10, seed=5).mean()) / 2
    verdict = judge(policy, low, seed=5, episodes=10)
    assert verdict.solved and verdict.second is not None and verdict.second != verdict.first  # other resets
    impossible = judge(policy, 1e6, seed=5, episodes=10)
    assert not impossible.solved and impossible.second is None
    assert JUDGE_EPISODES == 100


def test_the_judges_episodes_dealt_to_processes_return_what_one_process_plays(monkeypatch):
    """The judge deals its episodes to spawned processes in contiguous shares: each episode's
    return is the one it has when all are played here (its reset seed and the policy decide it),
    on the chain and on gymnasium's own v5 (the transfer check); one core plays them here. To
    rounding: the policy's matrix products round differently with the batch's size (so do the
    lockstep batches of one process, which shrink as episodes end)."""
    from studylib.train.chain import evaluate

    rng = np.random.default_rng(0)
    d = 9
    policy = make_policy_arrays([(rng.normal(size=(d, 64)) * 0.3, np.zeros(64)), (rng.normal(size=(64, 64)) * 0.1,
                                 np.zeros(64)), (rng.normal(size=(64, 1)) * 0.1, np.zeros(1))],
                                np.zeros(1), np.zeros(d), np.ones(d), 10.0)
    here = {env: evaluate.play(evaluate.array_policy(policy), lambda env=env: evaluate._make_env(env), 6, 3,
                               evaluate.EVAL_SEED_OFFSET) for env in (2, evaluate.TRANSFER_ENV)}
    monkeypatch.setattr(evaluate, "MIN_EPISODES_PER_PROCESS", 3)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert evaluate.judge_processes(6) == 2 and evaluate.judge_processes(5) == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert evaluate.judge_processes(600) == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    try:
        np.testing.assert_allclose(evaluate.gymnasium_returns(policy, 6, seed=3), here[2], rtol=1e-7)
        np.testing.assert_allclose(evaluate.transfer_returns(policy, 6, seed=3), here[evaluate.TRANSFER_ENV], rtol=1e-7)
    finally:
        evaluate._POOL.pop(2).shutdown()
    assert len(set(here[2].round(6))) > 1  # the episodes differ: the shares' order is checked


def test_clock_solves_only_on_the_judges_word(monkeypatch):
    """A screen at the threshold calls the judge, with the clock paused; a judge that does not
    confirm leaves the run unsolved and counts an unconfirmed check; one that does solves it."""
    import time

    from studylib.train.chain import evaluate as chain_clock
    from studylib.train.chain.evaluate import Judgement

    verdicts = iter([Judgement(9500.0, 9000.0, 9100.0, 100), Judgement(9500.0, 9200.0, 9100.0, 100)])

    def slow_judge(arrays, threshold, seed, returns=None):
        time.sleep(0.3)
        return next(verdicts)

    monkeypatch.setattr(chain_clock, "screen_return", lambda arrays, episodes, seed: 9300.0)
    monkeypatch.setattr(chain_clock, "judge", slow_judge)
    clock = chain_clock.ChainClock(ChainRun("cpp", settings=ChainPPOSettings(links=1)))
    clock.start(compile_s=0.0, device="cpu")
    policy = zero_policy(1)
    assert not clock.check(policy) and clock.unconfirmed == 1 and clock.judgement is None
    assert clock.check(policy) and clock.judgement.second == 9200.0 and clock.stopped == "solved"
    assert clock.elapsed() < 0.3  # the judge's 0.6 s are not in the run's wall-clock
    assert clock.final_return(policy) == 9500.0  # the verdict's first evaluation, not a new one
