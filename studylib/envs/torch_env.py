"""``torch``: the N x (4*S) state matrix stepped with eager PyTorch ops, on the CPU or a GPU (``TorchCartPole``;
``TorchEnv`` below is the same for any simulator with an array-form episode module: the n-link chain).

The physics is ``studylib.sims.cartpole.integrate`` with ``xp=torch`` (the reference's own lines on
float32 tensors) on the CartPole's 4 columns; the state factor's carried columns are sign-flipped
and concatenated every step (``episodes.advance``). Eager execution means every op of every step is its own Python->ATen call
(and on a GPU its own kernel launch), however many steps a rollout asks for: the paper's F.2.

With ``arrays="native"`` reset/step/final_obs/restart take and return tensors on the env's
device: each step makes a new state tensor there (``episodes.advance`` is pure) and returns a
view of it, with no copy to the host.
"""

from __future__ import annotations

import numpy as np
import torch

from ..arrays import TorchKind
from . import footprint
from .base import VectorCartPole, VectorEnv, restart_rows
from ..sims.cartpole import RESET_HIGH, RESET_LOW, STATE_SIZE
from ..episodes import MASK32, advance, hash_actions
from ..devices import resolve_torch_device
from ..policy import GAUSSIAN_LOG_STD, TorchGreedyMLP


def _mask32(v):
    return v & MASK32


class _OnTorchDevice:
    """Where a torch implementation runs and what it hands out: the requested device as torch
    resolves it, and tensors on it (arrays="native"). CartPole's class and the generic one share it."""

    def _resolve_device(self, device):
        return resolve_torch_device(device)

    def _native_kind(self):
        return TorchKind(self.device)


class TorchCartPole(_OnTorchDevice, VectorCartPole):
    name = "torch"

    @classmethod
    def estimate_bytes(cls, num_envs, state_factor, params=None):
        return footprint.torch_cartpole(num_envs, state_factor, params)

    def __init__(self, settings):
        super().__init__(settings)
        dev = self.device
        self._generator = torch.Generator(device=dev)
        self._env_index = torch.arange(self.num_envs, device=dev, dtype=torch.int64)
        self._policy = TorchGreedyMLP(self.policy_weights, dev)
        self._layers = self._policy.layers  # the same weights, for torch-compile's compiled step
        self._reset()

    def _draw_reset_rows(self, rows: int | None = None, columns: int = STATE_SIZE):
        """Reset draws: a new episode's CartPoles (``columns`` 4), or whole state rows (``reset``)."""
        u = torch.rand((self.num_envs if rows is None else rows, columns), generator=self._generator,
                       device=self.device)
        return u * (RESET_HIGH - RESET_LOW) + RESET_LOW

    def _reset(self):
        self._generator.manual_seed(self.seed)
        self.state = self._draw_reset_rows(columns=self.row_len)
        self.elapsed = torch.zeros(self.num_envs, dtype=torch.int64, device=self.device)
        self.episode = torch.zeros(self.num_envs, dtype=torch.int64, device=self.device)
        self._final_obs = self.state[:, :STATE_SIZE]
        return self._obs()

    def _obs(self):
        """The CartPole (columns 0..3 of the state): a view on the device (native), or numpy (no copy on the CPU: a
        state tensor is never written in place; each step or restart makes a new one)."""
        obs = self.state[:, :STATE_SIZE]
        return obs if self._native else obs.cpu().numpy()

    def _advance(self, actions: torch.Tensor):
        """One vectorized step with a same-step reset (episodes.advance); returns its EpisodeStep."""
        out = advance(self.state, self.elapsed, self.episode, actions, self._draw_reset_rows(),
                      state_factor=self.state_factor, compute_factor=self.compute_factor, p=self.params, xp=torch)
        self.state, self.elapsed, self.episode = out.state, out.elapsed, out.episode
        self._final_obs = out.final_obs
        return out

    def policy_actions(self) -> torch.Tensor:
        # No tensor here requires grad, so no autograd graph is recorded.
        return self._policy(self.state[:, :STATE_SIZE])

    def hashed_actions(self) -> torch.Tensor:
        return hash_actions(self.seed, self._env_index, self.episode, self.elapsed, wrap=_mask32)

    def _step(self, actions):
        out = self._advance(actions if self._native else torch.from_numpy(actions).to(self.device))
        return self._outputs(out.terminated, out.truncated)

    def _outputs(self, terminated, truncated):
        """What ``step`` returns after the state was advanced (numpy, or tensors on the device)."""
        if self._native:
            return self._obs(), torch.ones(self.num_envs, device=self.device), terminated, truncated
        return self._obs(), np.ones(self.num_envs, np.float32), terminated.cpu().numpy(), truncated.cpu().numpy()

    def final_obs(self):
        return self._final_obs if self._native else self._final_obs.cpu().numpy().copy()

    def _restart(self, mask):
        mask = mask if self._native else torch.from_numpy(mask).to(self.device)
        if self.device != "cpu":  # restart_rows: no look at the mask (nonzero would wait for the device)
            self.state, self.elapsed, self.episode, self._final_obs = restart_rows(
                self.state, self.elapsed, self.episode, self._final_obs, mask, self._draw_reset_rows(), torch)
            return self._obs()
        # On the CPU the same by index: draws for the restarted rows only and no where over (N, 4),
        # much the cheaper when a few % of the envs restart. Out of place, as every update of the
        # state here: observations returned earlier are views of the old tensors.
        index = mask.nonzero().squeeze(1)
        fresh = self._draw_reset_rows(len(index))
        columns = torch.arange(STATE_SIZE, device=self.device)
        self.state = self.state.index_put((index[:, None], columns[None, :]), fresh)
        self._final_obs = self._final_obs.index_put((index,), fresh[:, :STATE_SIZE])
        self.elapsed, self.episode = self.elapsed.index_fill(0, index, 0), self.episode + mask
        return self._obs()

    def _set_state(self, states):
        self.state = torch.as_tensor(states, dtype=torch.float32, device=self.device).clone()

    def get_state(self):
        return self.state.cpu().numpy().copy()

    def _rollout(self, num_steps, policy):
        done_total = torch.zeros((), dtype=torch.int64, device=self.device)
        for _ in range(num_steps):  # eager: Python drives every step
            actions = self.policy_actions() if policy == "mlp" else self.hashed_actions()
            done_total += self._advance(actions).done.sum()
        return int(done_total)  # .item() synchronizes with the device

    def synchronize(self):
        if self.device.startswith("cuda"):
            torch.cuda.synchronize()


class TorchEnv(_OnTorchDevice, VectorEnv):
    """``torch`` for any simulator whose record names an array-form episode module (the n-link
    chain's, ``studylib.sims.chain.episode``; the recipe in studylib/sims/__init__.py): the
    (N, state) rows stepped with eager PyTorch ops on the CPU or a GPU, that module's episode step
    (the policy's controls, physics, observation, reward, termination, truncation, the same-step
    reset to its hashed draws) on float32 tensors. Every operation of every step is its own
    Python->ATen call, as CartPole's; K steps a Python loop."""

    name = "torch"

    @classmethod
    def estimate_bytes(cls, num_envs, state_factor, params=None):
        return footprint.array_rules(num_envs, state_factor, params)

    def __init__(self, settings):
        super().__init__(settings)
        dev = self.device
        self.rules = self.sim.episode_rules()
        self._physics = self.rules.eager_step(self.params)
        self._env_index = torch.arange(self.num_envs, device=dev, dtype=torch.int64)
        self._layers = [(torch.from_numpy(w).to(dev), torch.from_numpy(b).to(dev))
                        for w, b in self.policy_weights.layers()]
        self.log_std = GAUSSIAN_LOG_STD
        self._reset()

    def _zeros(self):
        return torch.zeros(self.num_envs, dtype=torch.int64, device=self.device)

    def _reset(self):
        self.elapsed, self.episode = self._zeros(), self._zeros()
        self.state = self.rules.reset_states(self.seed, self._env_index, self.episode, self.params, torch, _mask32)
        self._obs_now = self._final_obs = self.rules.observation(self.state, self.params, torch)
        return self._out(self._obs_now)

    def _out(self, array):
        return array if self._native else array.cpu().numpy()

    def _advance(self, actions):
        out = self.rules.step_with_reset(self.state, self.elapsed, self.episode, actions, self.seed,
                                         self._env_index, self.params, torch, _mask32, self._physics)
        self.state, self.elapsed, self.episode = out.state, out.elapsed, out.episode
        self._obs_now, self._final_obs = out.observation, out.final_obs
        return out

    def _step(self, actions):
        with torch.inference_mode():
            out = self._advance(actions if self._native else torch.from_numpy(actions).to(self.device))
        if self._native:
            return out.observation, out.reward.to(torch.float32), out.terminated, out.truncated
        return (self._out(out.observation), out.reward.cpu().numpy().astype(np.float32),
                out.terminated.cpu().numpy(), out.truncated.cpu().numpy())

    def final_obs(self):
        return self._final_obs if self._native else self._final_obs.cpu().numpy().copy()

    def _restart(self, mask):
        mask = mask if self._native else torch.from_numpy(mask).to(self.device)
        fresh = self.rules.reset_states(self.seed, self._env_index, self.episode + 1, self.params, torch, _mask32)
        self.state = torch.where(mask[:, None], fresh, self.state)
        self.elapsed, self.episode = torch.where(mask, 0, self.elapsed), self.episode + mask
        obs = self.rules.observation(self.state, self.params, torch)
        self._final_obs = torch.where(mask[:, None], obs, self._final_obs)
        self._obs_now = obs
        return self._out(obs)

    def _set_state(self, states):
        self.state = torch.as_tensor(states, dtype=torch.float32, device=self.device).clone()
        self._obs_now = self.rules.observation(self.state, self.params, torch)

    def get_state(self):
        return self.state.cpu().numpy().copy()

    def _rollout(self, num_steps, policy):
        done_total = torch.zeros((), dtype=torch.int64, device=self.device)
        with torch.inference_mode():
            for _ in range(num_steps):  # eager: Python drives every step
                actions = self.rules.controls(policy, self._obs_now, self.seed, self._env_index, self.episode,
                                              self.elapsed, self._layers, self.log_std, torch, _mask32)
                done_total += self._advance(actions).done.sum()
        return int(done_total)

    def synchronize(self):
        if self.device.startswith("cuda"):
            torch.cuda.synchronize()
