"""Environments of a population of seeds, stepped in one call: S blocks of N environments, block k
seeded as a single run of seed k would be, its actions drawn from seed k's own actor and stream.

A population of S seeds steps ONE ``studylib`` environment of S * N environments: one ``step``
call per step for all seeds (not one environment per seed). What makes block k the environments
of seed k alone is how it is seeded, so each block draws from its seed's streams:

* ``torch``: a single env draws every step's reset candidates, (N, 4) uniforms, from one
  generator seeded by its seed (``TorchCartPole._draw_reset_rows``); the population env draws
  block k's (N, 4) from a generator seeded by seed k and concatenates the blocks. The physics is
  elementwise, so block k's states are those of a single env of seed k, bit for bit.
* ``torch-compile``: the same draws, (steps, N, 4) per compiled call, block by block.
* ``gym``: env i of a single run is seeded from (seed, i) and then continues its own RNG; env j
  of block k is seeded from (seed k, j).

The kernel implementations (``cpp``, ``fused``) key their reset draws by one seed per call
(``RolloutArgs.seed``: hash(seed, env index, episode, step)), and ``fused`` runs one actor's
weights for all its environments; a block of them cannot draw seed k's streams or run seed k's
actor without a kernel that takes a seed and weights per block, so they have no population here.

The actions: block k's (N,) uniforms come from a generator seeded by seed k, the draws a single
run's ``StepCollector`` makes (``collectors.sample_actions``), so a seed's rollouts do not
depend on the seeds beside it (tests/test_train_population.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from ...sims.cartpole import RESET_HIGH, RESET_LOW, STATE_SIZE
from ...errors import ConfigError
from ...envs.gym_env import GymCartPole
from ...settings import EnvSettings
from ...envs.torch_compile_env import TorchCompileCartPole
from ...envs.torch_env import TorchCartPole
from .collectors import Trajectory, sample_actions, step_trajectory


def _blocks(num_envs: int, seeds) -> tuple[tuple[int, ...], int]:
    """(the blocks' seeds, environments per block); ConfigError where N does not split evenly."""
    seeds = tuple(int(s) for s in seeds)
    if num_envs % len(seeds):
        raise ConfigError(f"{num_envs} environments do not split into {len(seeds)} blocks")
    return seeds, num_envs // len(seeds)


class BlockSeededTorchCartPole(TorchCartPole):
    """``torch`` environments in ``len(seeds)`` blocks; block k draws its resets from seed k."""

    def __init__(self, settings: EnvSettings, seeds):
        self.block_seeds, self.block = _blocks(settings.num_envs, seeds)
        super().__init__(settings)

    def _draw_reset_rows(self, rows: int | None = None, columns: int = STATE_SIZE):
        if rows is not None:  # only the CPU restart path asks for a few rows; _restart below never does
            raise NotImplementedError("a block-seeded env draws whole blocks")
        u = torch.cat([torch.rand((self.block, columns), generator=g, device=self.device) for g in self._generators])
        return u * (RESET_HIGH - RESET_LOW) + RESET_LOW

    def _reset(self):
        self._generators = [torch.Generator(device=self.device).manual_seed(s) for s in self.block_seeds]
        return super()._reset()

    def _restart(self, mask):
        # As TorchCartPole on a GPU: fresh rows for every env, kept where the mask is set (whole
        # blocks drawn, so each block stays on its seed's stream).
        from ...envs.base import restart_rows

        mask = mask if self._native else torch.from_numpy(mask).to(self.device)
        self.state, self.elapsed, self.episode, self._final_obs = restart_rows(
            self.state, self.elapsed, self.episode, self._final_obs, mask, self._draw_reset_rows(), torch)
        return self._obs()

    def hashed_actions(self) -> torch.Tensor:
        raise NotImplementedError("a population's actions come from its actors")


class BlockSeededTorchCompileCartPole(BlockSeededTorchCartPole, TorchCompileCartPole):
    """``torch-compile`` environments in blocks: the compiled step takes its reset uniforms as an
    argument, (steps, N, 4), drawn here block by block from each block's generator."""

    def _uniforms(self, steps: int) -> torch.Tensor:
        return torch.cat([torch.rand((steps, self.block, STATE_SIZE), generator=g, device=self.device)
                          for g in self._generators], dim=1)

    def compile(self, num_steps: int, policy: str = "mlp") -> float:
        raise NotImplementedError("a population env compiles on its first step (its generators are not saved)")


class BlockSeededGymCartPole(GymCartPole):
    """``gym`` environments in ``len(seeds)`` blocks; env j of block k is seeded from (seed k, j)."""

    def __init__(self, settings: EnvSettings, seeds):
        self.block_seeds, self.block = _blocks(settings.num_envs, seeds)
        super().__init__(settings)

    def _reset(self):
        # GymCartPole._reset with (seed k, j) for env j of block k, and block k's carried floats
        # drawn from (seed k, "carried").
        for i, env in enumerate(self._envs):
            k, j = divmod(i, self.block)
            env.reset(seed=int(np.random.SeedSequence([self.block_seeds[k], j]).generate_state(1)[0]))
        self._carried = np.concatenate([np.random.default_rng([s, 0xCA]).uniform(
            RESET_LOW, RESET_HIGH, (self.block, self.row_len - STATE_SIZE)) for s in self.block_seeds])
        self.elapsed[:] = 0
        self.episode[:] = 0
        self._obs = np.array([env.state for env in self._envs], dtype=np.float32)
        self._final_obs = self._obs.copy()
        return self._obs.copy()

    def _rollout(self, num_steps, policy):
        raise NotImplementedError("a population's actions come from its actors")


POPULATION_ENVS = {"torch": BlockSeededTorchCartPole, "torch-compile": BlockSeededTorchCompileCartPole,
                   "gym": BlockSeededGymCartPole}


def population_env(impl: str, num_envs: int, seeds, device: str | None = "cpu"):
    """``len(seeds)`` blocks of ``num_envs`` environments of ``impl`` in one env (ConfigError where
    ``impl`` cannot seed a block per seed)."""
    if impl not in POPULATION_ENVS:
        raise ConfigError(f"collector {impl!r} has no population (its environments take one seed per call); "
                          f"population collectors: {', '.join(POPULATION_ENVS)}")
    settings = EnvSettings(impl, num_envs * len(seeds), seed=int(seeds[0]), device=device)
    return POPULATION_ENVS[impl](settings, seeds)


@dataclass
class PopulationTrajectory:
    """T steps of S blocks of N environments: ``steps`` holds them as (T, S * N, ...) arrays, block
    k being columns k N .. (k + 1) N - 1; ``episode_returns[k]`` the returns of block k's episodes."""

    steps: Trajectory
    seeds: int
    episode_returns: list

    def blocks(self, kept: list[int]) -> Trajectory:
        """The steps of blocks ``kept`` only, (T, len(kept) * N, ...), in that order."""
        s = self.steps
        if len(kept) == self.seeds:
            return s
        n = s.num_envs // self.seeds
        columns = torch.cat([torch.arange(k * n, (k + 1) * n) for k in kept]).to(s.obs.device)
        pick = lambda x: x.index_select(1, columns)  # noqa: E731
        return Trajectory(pick(s.obs), pick(s.actions), pick(s.logp), pick(s.rewards), pick(s.terminated),
                          pick(s.truncated), next_obs=s.next_obs.index_select(0, columns),
                          final_obs=None if s.final_obs is None else pick(s.final_obs))


class PopulationCollector:
    """T steps of every block per ``collect``: each step ONE call of the population env, with the
    actions of block k sampled from actor k with seed k's generator."""

    def __init__(self, impl: str, num_envs: int, seeds, device: str | None = "cpu"):
        self.name = impl
        self.env = population_env(impl, num_envs, seeds, device)
        self.num_envs, self.size = num_envs, len(seeds)
        self.device = "cuda" if str(self.env.device).startswith("cuda") else "cpu"
        self._generators = [torch.Generator(device=self.device).manual_seed(int(s)) for s in seeds]
        self._episode_return = np.zeros(num_envs * self.size)
        self._obs = None
        self.active = list(range(self.size))  # blocks whose actor is the model's (in its order)
        self.compile_s = 0.0

    def warm_up(self) -> None:
        start = time.perf_counter()
        self.env.reset()
        self.env.step(np.zeros(self.num_envs * self.size, dtype=np.int64))
        self._obs = self._to_device(self.env.reset())  # back to the seeded initial state
        self.compile_s = time.perf_counter() - start

    def _to_device(self, array) -> torch.Tensor:
        return torch.as_tensor(np.asarray(array, dtype=np.float32), device=self.device)

    def _sample(self, model, obs: torch.Tensor):
        """Actions (S * N,) and log-probabilities: the active blocks' logits (A, N, 2) from the
        model (its seed j is block ``active[j]``), one uniform per env from its block's generator
        (collectors.sample_actions, block by block). A block no longer trained (its seed finished)
        keeps stepping with action 0, unused, and draws nothing."""
        blocks = obs.view(self.size, self.num_envs, STATE_SIZE)
        if len(self.active) < self.size:
            blocks = blocks[self.active]
        logits = model.logits(blocks)
        actions = torch.zeros((self.size, self.num_envs), dtype=torch.int64, device=obs.device)
        logp = torch.zeros((self.size, self.num_envs), device=obs.device)
        for j, k in enumerate(self.active):
            actions[k], logp[k] = sample_actions(logits[j], self._generators[k])
        return actions.view(-1), logp.view(-1)

    @torch.no_grad()
    def collect(self, model, num_steps: int) -> PopulationTrajectory:
        if self._obs is None:
            self.warm_up()
        steps, self._obs, ended = step_trajectory(self.env, self._obs, num_steps, self._episode_return,
                                                  self._to_device, lambda obs: self._sample(model, obs))
        block = ended // self.num_envs
        finished = [steps.episode_returns[block == k].astype(float) for k in range(self.size)]
        return PopulationTrajectory(steps, self.size, finished)
