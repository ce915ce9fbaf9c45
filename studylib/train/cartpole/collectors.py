"""Collectors: T steps of N environments with the policy being trained, as one trajectory.

A collector is what PPO's learner sees of an environment implementation:

    collector = make_collector("cpp", num_envs=4096, seed=0)
    collector.warm_up()                          # compiles / builds; seconds in collector.compile_s
    traj = collector.collect(model, num_steps)   # T steps with model's current actor, sampled

``collect`` takes the model at every call because its weights change after every update: a
collector reads them at the start of the call. It returns a ``Trajectory`` of torch tensors on the
learner's device. Two kinds:

``StepCollector`` (every collector but ``fused``; ``fused-step`` is ``fused`` driven this way)
    Any ``studylib`` implementation through the public API: ``env.step(actions)`` once per step
    (same-step autoreset), the actions sampled from the PyTorch actor's logits between steps.
    T framework inferences and T ``step`` calls per trajectory.
``FusedCollector`` (``fused``)
    The fused kernel with the actor inside it: the model's actor weights are copied into the
    kernel's weight buffer (``set_policy_weights``: an argument of the kernel, no rebuild), and ONE
    native call (``FusedCartPole.collect``) runs all T steps, sampling every action in the kernel
    from the softmax of the logits and writing the whole trajectory. ``cpp`` has no MLP in its
    kernel, so it stays a ``StepCollector``.

Both sample with the same rule (action 1 where a uniform u < sigmoid(l1 - l0), ``sample_actions``)
from different uniform streams: PyTorch's generator, or the kernel's counter hash. The critic's
values are not part of a trajectory: the learner computes them for all T x N observations in one
batched call (``TorchPPO.advantages``).

Truncation: bootstrapping a truncated episode needs the observation *before* the same-step reset.
Every implementation gives it (``env.final_obs()``, the CartPole's observation at the end of the last
step; the fused kernel records it at every step), so the trajectories carry it and GAE bootstraps
truncated episodes; a collector without it (the gymnasium-vector peer) leaves ``final_obs`` None and
GAE treats a truncation like a termination.
"""

from __future__ import annotations

import abc
import time
from dataclasses import dataclass

import numpy as np
import torch

from ...sims.cartpole import STATE_SIZE
from ...errors import ConfigError
from ...policy import MLPWeights
from ...envs.registry import make
from .actor_critic import ARRAY_NAMES
from ..settings import collector_spec


@dataclass
class Trajectory:
    """T steps of N environments. Step t: ``obs[t]`` seen, ``actions[t]`` taken with log-probability
    ``logp[t]``, ``rewards[t]`` received, the episode ``terminated[t]`` / ``truncated[t]``."""

    obs: torch.Tensor  # (T, N, 4) float32
    actions: torch.Tensor  # (T, N) int64 in {0, 1}
    logp: torch.Tensor  # (T, N) float32, log pi(a_t | o_t) under the collecting policy
    rewards: torch.Tensor  # (T, N) float32
    terminated: torch.Tensor  # (T, N) bool
    truncated: torch.Tensor  # (T, N) bool
    next_obs: torch.Tensor  # (N, 4) the observation after the last step (bootstraps the tail)
    final_obs: torch.Tensor | None  # (T, N, 4) observation before a same-step reset (used where truncated), or None
    valid: torch.Tensor | None = None  # (T, N) bool: False for a NEXT_STEP env's reset step (no transition)
    episode_returns: np.ndarray | None = None  # returns of the episodes that ended in these steps

    @property
    def num_steps(self) -> int:
        return self.obs.shape[0]

    @property
    def num_envs(self) -> int:
        return self.obs.shape[1]

    @property
    def bootstraps_truncation(self) -> bool:
        return self.final_obs is not None


def sample_actions(logits: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Categorical sample over 2 actions and its log-probability, from one uniform per row:
    action 1 where u < sigmoid(l1 - l0). One draw per env keeps the stream reproducible."""
    diff = logits[..., 1] - logits[..., 0]
    u = torch.rand(diff.shape, generator=generator, device=diff.device)
    actions = u < torch.sigmoid(diff)
    logp = torch.nn.functional.logsigmoid(torch.where(actions, diff, -diff))
    return actions.long(), logp


def step_trajectory(env, obs: torch.Tensor, num_steps: int, episode_return: np.ndarray, to_device, sample):
    """T steps of ``env`` from ``obs``, one ``env.step`` call each, the actions and their
    log-probabilities from ``sample(obs)``: (the trajectory, the last observation, the index of the
    environment of every episode that ended, in the order of ``trajectory.episode_returns``).
    ``episode_return`` (one float per environment) carries the running returns across calls."""
    t_, n, dev = num_steps, obs.shape[0], obs.device
    obs_buf = torch.empty((t_, n, STATE_SIZE), device=dev)
    actions_buf = torch.empty((t_, n), dtype=torch.int64, device=dev)
    logp_buf = torch.empty((t_, n), device=dev)
    rewards = np.empty((t_, n), dtype=np.float32)
    terminated = np.empty((t_, n), dtype=bool)
    truncated = np.empty((t_, n), dtype=bool)
    final_obs = np.empty((t_, n, STATE_SIZE), dtype=np.float32)
    ended, returns = [], []
    for t in range(t_):
        obs_buf[t] = obs
        actions_buf[t], logp_buf[t] = sample(obs)
        next_obs, rewards[t], terminated[t], truncated[t] = env.step(actions_buf[t].cpu().numpy())
        final_obs[t] = env.final_obs()
        episode_return += rewards[t]
        done = terminated[t] | truncated[t]
        if done.any():
            ended.append(np.flatnonzero(done))
            returns.append(episode_return[done].copy())
            episode_return[done] = 0.0
        obs = to_device(next_obs)
    as_t = lambda a: torch.from_numpy(a).to(dev)  # noqa: E731
    steps = Trajectory(obs_buf, actions_buf, logp_buf, as_t(rewards), as_t(terminated), as_t(truncated),
                       next_obs=obs.clone(), final_obs=as_t(final_obs),
                       episode_returns=np.concatenate(returns) if returns else np.empty(0))
    return steps, obs, np.concatenate(ended) if ended else np.empty(0, dtype=np.int64)


class Collector(abc.ABC):
    """T steps of N environments per call, with the policy of the model passed in."""

    name: str = ""
    num_envs: int
    device: str  # where the trajectories (and so the learner) live: "cpu" or "cuda"
    compile_s: float = 0.0  # seconds spent in warm_up (compilation, library build, first calls)

    @abc.abstractmethod
    def warm_up(self) -> None:
        """Compile/build whatever the first step needs, then return to the seeded initial state."""

    @abc.abstractmethod
    def collect(self, model, num_steps: int) -> Trajectory:
        """T steps with ``model``'s current actor (sampled), returned as one trajectory."""


class StepCollector(Collector):
    """A ``studylib`` implementation stepped through ``env.step`` with actions sampled in PyTorch."""

    def __init__(self, impl: str, num_envs: int, seed: int, name: str | None = None, device: str | None = None):
        self.name = name or impl
        self.env = make(impl, num_envs, seed=seed, device=device)  # ConfigError / DeviceUnavailableError here
        self.num_envs = num_envs
        self.device = "cuda" if str(self.env.device).startswith("cuda") else "cpu"
        self._generator = torch.Generator(device=self.device).manual_seed(seed)
        self._episode_return = np.zeros(num_envs)
        self._obs = None

    def warm_up(self) -> None:
        start = time.perf_counter()
        self.env.reset()
        self.env.step(np.zeros(self.num_envs, dtype=np.int64))  # compiles torch-compile / jax steps
        self.env.synchronize()
        self._obs = self._to_device(self.env.reset())  # back to the seeded initial state
        self.compile_s = time.perf_counter() - start

    def _to_device(self, array) -> torch.Tensor:
        return torch.as_tensor(np.asarray(array, dtype=np.float32), device=self.device)

    @torch.no_grad()
    def collect(self, model, num_steps: int) -> Trajectory:
        if self._obs is None:
            self.warm_up()
        steps, self._obs, _ = step_trajectory(self.env, self._obs, num_steps, self._episode_return, self._to_device,
                                              lambda obs: sample_actions(model.logits(obs), self._generator))
        return steps


class FusedCollector(Collector):
    """``fused`` with the actor in the kernel: per ``collect``, the model's actor weights copied into
    the kernel's weight buffer, then ONE native call for all T steps (sampling in the kernel)."""

    name = "fused"

    def __init__(self, num_envs: int, seed: int, device: str | None = None, impl: str = "fused", name: str | None = None):
        self.name = name or impl
        self.env = make(impl, num_envs, seed=seed, device=device)  # builds the library (or compiles the module)
        self.num_envs = num_envs
        self.device = "cuda" if str(self.env.device).startswith("cuda") else "cpu"
        self._episode_return = np.zeros(num_envs)  # steps so far of every env's current episode
        self._ready = False

    def warm_up(self) -> None:
        start = time.perf_counter()
        self.env.collect(1)  # the first call: page-in, thread pool, the CUDA module's first launch
        self.env.synchronize()
        self.env.reset()  # back to the seeded initial state
        self._episode_return[:] = 0
        self._ready = True
        self.compile_s = time.perf_counter() - start

    def _tensor(self, array, dtype=None) -> torch.Tensor:
        """A numpy or CuPy (through __cuda_array_interface__) array as a tensor on the learner's
        device: no copy where it already is there (numpy on the CPU, CuPy on the GPU)."""
        t = (torch.from_numpy(array).to(self.device) if isinstance(array, np.ndarray)
             else torch.as_tensor(array, device=self.device))
        return t if dtype is None else t.to(dtype)

    @torch.no_grad()
    def collect(self, model, num_steps: int) -> Trajectory:
        if not self._ready:
            self.warm_up()
        arrays = model.actor_arrays()
        self.env.set_policy_weights(MLPWeights(*(arrays[k] for k in ARRAY_NAMES)))
        steps = self.env.collect(num_steps)
        flags = steps.flags
        terminated, truncated = (flags & 1) != 0, (flags & 2) != 0
        done = flags if isinstance(flags, np.ndarray) else flags.get()  # on the host for the returns
        finished = []
        ret = self._episode_return
        for t in range(num_steps):  # a CartPole episode's return is its length
            ret += 1
            ended = done[t] != 0
            if ended.any():
                finished.append(ret[ended].copy())
                ret[ended] = 0.0
        obs = self._tensor(steps.obs)
        return Trajectory(obs, self._tensor(steps.actions, torch.int64), self._tensor(steps.logp),
                          torch.ones(obs.shape[:2], device=self.device), self._tensor(terminated),
                          self._tensor(truncated), next_obs=self._tensor(self.env.backend.obs()),
                          final_obs=self._tensor(steps.final_obs),
                          episode_returns=np.concatenate(finished) if finished else np.empty(0))


def make_collector(name: str, num_envs: int, seed: int, device: str | None = None) -> Collector:
    """The collector for a torch-side PPO run, chosen by its record (``settings.collector_spec``;
    ``jax`` trains with studylib.train.cartpole.ppo_jax instead): one that samples in its kernel (``fused``)
    collects a trajectory per call; ``fused-step`` is the same kernel stepped with PyTorch's
    sampling (for the comparison); every other implementation is stepped. ``device``: "cpu" or
    "cuda", None for the implementation's default (CUDA where it can and a GPU exists); the
    learner goes where the collector is (``collector.device``), never on a device of its own."""
    record = collector_spec(name)
    if record.trainer != "torch-ppo":
        raise ConfigError(f"collector {name!r} trains with {record.trainer}, not through a PyTorch collector")
    if record.samples_in_kernel:
        return FusedCollector(num_envs, seed, device, impl=record.impl, name=name)
    return StepCollector(record.impl, num_envs, seed, name=name, device=device)
