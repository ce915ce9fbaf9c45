"""Collecting the chain for the PyTorch PPO: T steps of N environments of any studylib
implementation (``studylib.make(impl, N, sim="chain")``), the Gaussian's actions sampled in PyTorch.

    collector = ChainStepCollector("fused", settings, seed=0)
    traj = collector.collect(model, settings.num_steps)   # a collectors.Trajectory

One ``env.step`` per step (same-step autoreset; ``env.final_obs()`` the pre-reset observation,
so GAE bootstraps truncations). The implementations that have them hand out their own arrays
(``arrays="native"``: torch tensors over cpp's and fused's native buffers, torch's tensors), so
observations reach the learner without a numpy round trip; gym gives numpy arrays.

The collector keeps the running normalizations (``running_norm``: gymnasium's
NormalizeObservation and NormalizeReward, updated with each step's N rows), since they are part
of what the policy sees: the trajectory holds normalized observations and scaled rewards, and
``normalization()`` is what the deterministic policy is saved with.

The chain's ``fused`` kernel runs the Gaussian MLP inside its K-step rollout but records no
trajectory (observations, samples, log-probabilities per step): as a PPO collector it is stepped
once per step here, the same native step as ``cpp``.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from ...envs.registry import make
from . import gaussian, running_norm as rn
from .settings import ChainPPOSettings
from ..cartpole.collectors import Trajectory

NATIVE_ARRAYS = ("cpp", "fused", "torch", "torch-compile")  # these hand out torch tensors with arrays="native"


class ChainStepCollector:
    """N chains of implementation ``impl`` stepped once per step, actions sampled in PyTorch."""

    def __init__(self, impl: str, settings: ChainPPOSettings, seed: int, device: str = "cpu"):
        self.name, self.s = impl, settings
        self.num_envs = settings.num_envs
        self.native = impl in NATIVE_ARRAYS
        self.env = make(impl, settings.num_envs, sim="chain", params=settings.chain, seed=seed, device=device,
                        arrays="native" if self.native else "numpy")
        self.device = "cuda" if str(self.env.device).startswith("cuda") else "cpu"
        self._generator = torch.Generator(device=self.device).manual_seed(seed)
        d = settings.chain.observation_size
        self.obs_moments = rn.initial_moments((d,), torch, dtype=torch.float32, device=self.device)
        self.reward_scale = rn.initial_reward_scale(self.num_envs, torch, dtype=torch.float32, device=self.device)
        self._episode_return = np.zeros(self.num_envs)
        self._raw = None
        self.compile_s = 0.0

    def _tensor(self, array) -> torch.Tensor:
        return torch.as_tensor(array, dtype=torch.float32, device=self.device)

    def warm_up(self) -> None:
        """First calls (library loads, compilation), then back to the seeded initial state."""
        start = time.perf_counter()
        self.env.reset()
        zeros = torch.zeros(self.num_envs, device=self.device)
        self.env.step(zeros if self.native else zeros.numpy())
        self.env.synchronize()
        self._raw = self._tensor(self.env.reset()).clone()
        self.compile_s = time.perf_counter() - start

    def normalized(self, raw: torch.Tensor) -> torch.Tensor:
        return rn.normalize(self.obs_moments, raw, self.s.obs_clip, torch) if self.s.norm_obs else raw

    def normalization(self) -> tuple[np.ndarray, np.ndarray, float]:
        """(mean, variance, clip) the policy's observations are normalized with (identity if off)."""
        if not self.s.norm_obs:
            d = self.s.chain.observation_size
            return np.zeros(d), np.ones(d), float(np.finfo(np.float32).max)
        return self.obs_moments.mean.cpu().numpy(), self.obs_moments.var.cpu().numpy(), self.s.obs_clip

    @torch.no_grad()
    def collect(self, model, num_steps: int) -> Trajectory:
        if self._raw is None:
            self.warm_up()
        s, n, d, dev = self.s, self.num_envs, self.s.chain.observation_size, self.device
        obs_buf = torch.empty((num_steps, n, d), device=dev)
        final_buf = torch.empty((num_steps, n, d), device=dev)
        actions = torch.empty((num_steps, n, 1), device=dev)
        logp = torch.empty((num_steps, n), device=dev)
        rewards = torch.empty((num_steps, n), device=dev)
        terminated = torch.empty((num_steps, n), dtype=torch.bool, device=dev)
        truncated = torch.empty((num_steps, n), dtype=torch.bool, device=dev)
        raw_rewards = np.empty((num_steps, n))
        done_steps = np.empty((num_steps, n), dtype=bool)
        std = model.log_std.exp()
        for t in range(num_steps):
            if s.norm_obs:
                self.obs_moments = rn.update(self.obs_moments, self._raw)
            obs = obs_buf[t] = self.normalized(self._raw)
            mean = model.actor(obs)
            sample = mean + std * torch.randn(mean.shape, generator=self._generator, device=dev)
            actions[t], logp[t] = sample, gaussian.log_prob(mean, model.log_std, sample, torch)
            control = sample[:, 0].clamp(-1.0, 1.0)
            raw, reward, term, trunc = self.env.step(control if self.native else control.numpy())
            reward, terminated[t], truncated[t] = self._tensor(reward), torch.as_tensor(term), torch.as_tensor(trunc)
            final_buf[t] = self.normalized(self._tensor(self.env.final_obs()))
            self._raw = self._tensor(raw).clone()
            raw_rewards[t] = reward.cpu().numpy()
            done_steps[t] = (terminated[t] | truncated[t]).cpu().numpy()
            if s.norm_reward:
                self.reward_scale, reward = rn.scale_rewards(self.reward_scale, reward, terminated[t].float(), s.gamma,
                                                             s.reward_clip, torch)
            rewards[t] = reward
        return Trajectory(obs_buf, actions, logp, rewards, terminated, truncated, next_obs=self.normalized(self._raw),
                          final_obs=final_buf, episode_returns=self._finished_returns(raw_rewards, done_steps))

    def _finished_returns(self, rewards: np.ndarray, done: np.ndarray) -> np.ndarray:
        """The unscaled returns of the episodes that ended in these steps (the running ones carried)."""
        finished, ret = [], self._episode_return
        for t in range(rewards.shape[0]):
            ret += rewards[t]
            if done[t].any():
                finished.append(ret[done[t]].copy())
                ret[done[t]] = 0.0
        return np.concatenate(finished) if finished else np.empty(0)
