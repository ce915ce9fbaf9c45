"""Collecting the chain for the PyTorch PPO: T steps of N environments of any studylib
implementation (``studylib.make(impl, N, sim="chain")``), as one ``Trajectory``.

    collector = make_collector("fused", settings, seed=0)
    traj = collector.collect(model, settings.num_steps)   # a collectors.Trajectory

Two kinds, chosen by the collector's record (``studylib.train.collector_spec``: samples_in_kernel):

* ``ChainStepCollector`` (cpp, torch, torch-compile, gym, fused-step): the Gaussian's actions
  sampled in PyTorch, one ``env.step`` per step;
* ``ChainKernelCollector`` (fused): the whole trajectory in ONE kernel call, the policy's forward
  pass, its Gaussian sample and log-probability, the physics and the episode step inside the
  kernel (``FusedChain.collect``), the normalizations applied around the call.

One ``env.step`` per step (same-step autoreset; ``env.final_obs()`` the pre-reset observation,
so GAE bootstraps truncations). The implementations that have them hand out their own arrays
(``arrays="native"``: torch tensors over cpp's and fused's native buffers, torch's tensors), so
observations reach the learner without a numpy round trip; gym gives numpy arrays.

The collector keeps the running normalizations (``running_norm``: gymnasium's
NormalizeObservation and NormalizeReward, updated with each step's N rows), since they are part
of what the policy sees: the trajectory holds normalized observations and scaled rewards, and
``normalization()`` is what the deterministic policy is saved with.

The kernel collector keeps the same normalizations with one difference: within a trajectory the
kernel normalizes with the statistics at its start (the policy is an argument of one call), and
they are then updated with the trajectory's T·N observations at once. Chan's parallel update is
exact, so the statistics after the trajectory are those T per-step updates give; only what the
policy saw within it differs (statistics up to T steps older). The reward scale is computed for
the T steps after the call (``running_norm.scale_reward_sequence``: the step collector's T updates
in closed form).
"""

from __future__ import annotations

import time

import numpy as np
import torch

from ...envs.registry import make
from ...policy import MLPWeights
from ..cartpole.collectors import Trajectory
from ..settings import collector_spec
from . import gaussian
from . import running_norm as rn
from .settings import ChainPPOSettings

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


class ChainKernelCollector(ChainStepCollector):
    """N chains of ``fused``, a trajectory of T steps per kernel call, the actions sampled inside it."""

    def __init__(self, impl: str, settings: ChainPPOSettings, seed: int, device: str = "cpu"):
        super().__init__(impl, settings, seed, device)
        # the reward scale in float64 numpy: scaled a trajectory at a time (running_norm.scale_reward_sequence)
        self.reward_scale = rn.initial_reward_scale(self.num_envs, np, dtype=np.float64)

    def warm_up(self) -> None:
        """The library's load and one recorded step, then back to the seeded initial state."""
        start = time.perf_counter()
        self.env.reset()
        self.env.collect(1)
        self._raw = self._tensor(self.env.reset()).clone()
        self.compile_s = time.perf_counter() - start

    def _frozen(self):
        """(shift, scale) as float32 tensors: the normalization of this trajectory, or None."""
        if not self.s.norm_obs:
            return None
        m = self.obs_moments
        return m.mean.float(), 1.0 / torch.sqrt(m.var.float() + rn.EPSILON)

    def _apply(self, frozen, raw: torch.Tensor) -> torch.Tensor:
        """The kernel's ch_normalized in the same float32 operations: the observations the policy saw."""
        if frozen is None:
            return raw
        shift, scale = frozen
        return ((raw - shift) * scale).clamp(-self.s.obs_clip, self.s.obs_clip)

    @torch.no_grad()
    def collect(self, model, num_steps: int) -> Trajectory:
        if self._raw is None:
            self.warm_up()
        s, d = self.s, self.s.chain.observation_size
        self.env.set_policy(MLPWeights(*(a for layer in model.actor_layers() for a in layer)),
                            float(model.log_std.detach().cpu()[0]))
        frozen = self._frozen()
        normalization = None if frozen is None else (frozen[0].numpy(), frozen[1].numpy(), s.obs_clip)
        k = self.env.collect(num_steps, normalization)
        raw, final_raw = torch.from_numpy(k.obs), torch.from_numpy(k.final_obs)
        flags = torch.from_numpy(k.flags)
        terminated, truncated = (flags & 1) != 0, (flags & 2) != 0
        raw_rewards = torch.from_numpy(k.reward)
        obs, final_obs = self._apply(frozen, raw), self._apply(frozen, final_raw)
        if s.norm_obs:
            self.obs_moments = rn.update(self.obs_moments, raw.reshape(-1, d))
        next_raw = self._tensor(self.env.observe()).clone()
        next_obs = self.normalized(next_raw)  # as the step collector's: the updated statistics
        rewards = raw_rewards
        if s.norm_reward:
            self.reward_scale, scaled = rn.scale_reward_sequence(self.reward_scale, k.reward, k.flags & 1, s.gamma,
                                                                 s.reward_clip)
            rewards = torch.from_numpy(scaled.astype(np.float32))
        self._raw = next_raw
        returns = self._finished_returns(k.reward.astype(np.float64), k.flags != 0)
        return Trajectory(obs, torch.from_numpy(k.actions)[..., None], torch.from_numpy(k.logp), rewards, terminated,
                          truncated, next_obs=next_obs, final_obs=final_obs, episode_returns=returns)


def make_collector(collector: str, settings: ChainPPOSettings, seed: int, device: str = "cpu") -> ChainStepCollector:
    """The collector of the PyTorch PPO named ``collector`` (one of CHAIN_COLLECTORS but "jax"): the
    kernel collector where its record says the kernel samples the actions, else the step collector
    over the implementation the record names."""
    spec = collector_spec(collector)
    kind = ChainKernelCollector if spec.samples_in_kernel else ChainStepCollector
    return kind(spec.impl, settings, seed, device)
