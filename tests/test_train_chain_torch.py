"""The PyTorch PPO for continuous actions: its collectors give consistent trajectories with every
implementation that runs on the CPU, and it learns the single pendulum over a fixed seed."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from studylib.train import train_chain
from studylib.train.chain import gaussian
from studylib.train.chain.collectors import make_collector
from studylib.train.chain.policy import deterministic_actions
from studylib.train.chain.ppo_torch import ChainTorchPPO, policy_arrays
from studylib.train.chain.settings import ChainPPOSettings, ChainRun

SMALL = ChainPPOSettings(links=2, num_envs=4, num_steps=64, num_minibatches=4, update_epochs=2)


@pytest.mark.parametrize("impl", ["fused", "fused-step", "cpp", "gym", "torch"])
def test_trajectory_is_what_the_policy_did(impl):
    """The learner's log-probabilities of the recorded actions are the recorded ones (the kernel's
    for fused: its forward pass, noise and normalization are the learner's)."""
    collector = make_collector(impl, SMALL, seed=1)
    learner = ChainTorchPPO(SMALL, seed=1)
    traj = collector.collect(learner.model, SMALL.num_steps)
    t_, n, d = SMALL.num_steps, SMALL.num_envs, 9
    assert traj.obs.shape == (t_, n, d) and traj.actions.shape == (t_, n, 1) and traj.final_obs.shape == (t_, n, d)
    with torch.no_grad():
        logp = gaussian.log_prob(learner.model.actor(traj.obs), learner.model.log_std, traj.actions, torch)
    torch.testing.assert_close(logp, traj.logp, atol=1e-5, rtol=1e-5)  # ratio 1 before the first step
    assert (traj.terminated | traj.truncated).any()  # an untrained policy drops the chain within 64 steps
    assert len(traj.episode_returns) == int((traj.terminated | traj.truncated).sum())
    assert traj.obs.abs().max() <= SMALL.obs_clip and traj.rewards.abs().max() <= SMALL.reward_clip
    learner.update(traj)  # runs, finite
    assert all(torch.isfinite(p).all() for p in learner.model.parameters())
    arrays = policy_arrays(learner, collector)
    with torch.no_grad():
        mean = learner.model.actor(traj.next_obs)[:, 0].clamp(-1, 1).numpy()
    raw = collector._raw.numpy()
    np.testing.assert_allclose(deterministic_actions(arrays, raw), mean, atol=1e-5)


def test_torch_ppo_learns_the_single_pendulum(monkeypatch):
    """24 updates of seed 2 on the fused collector (a trajectory per kernel call): the training
    episodes' mean return rises from an untrained policy's ~800 to near the 1000-step maximum
    (806, 4,482, 9,276 at the three checks when written, 9,342 at a fourth; other seeds dip below zero on the
    way, while the policy balances but lets the cart drift, and take longer). The threshold is set
    out of reach, so the run stops at its sample budget and gymnasium's judge is not run; the
    untimed final return (gymnasium's ``ChainMujocoEnv``, deterministic) is played on 20 episodes
    instead of 100 (8 s of the test's 18 s)."""
    from studylib.train.chain import evaluate

    monkeypatch.setattr(evaluate, "JUDGE_EPISODES", 20)
    s = ChainPPOSettings(links=1, max_samples=49_152, solve_return=1e6)
    result = train_chain(ChainRun("fused", seed=2, settings=s))  # torch on s.torch_threads (1), then restored
    train_returns = [row[4] for row in result.curve]
    assert result.stopped == "max_samples" and not result.solved and len(train_returns) == 3
    assert max(train_returns[-2:]) > max(5 * train_returns[0], 5000), train_returns
    assert result.trainer == "torch-ppo-continuous" and 0 < result.collect_s < result.wall_s
    assert result.eval_return > 5000, result.eval_return  # the greedy policy too (8,598 when written)
