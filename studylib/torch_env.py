"""``torch``: the N x (4*S) state matrix stepped with eager PyTorch ops, on the CPU or a GPU.

The physics is ``studylib.dynamics.integrate`` with ``xp=torch`` (the reference's own lines on
float32 tensors). Eager execution means every op of every step is its own Python->ATen call
(and on a GPU its own kernel launch), however many steps a rollout asks for: the paper's F.2.
"""

from __future__ import annotations

import numpy as np
import torch

from .base import VectorCartPole
from .dynamics import RESET_HIGH, RESET_LOW, STATE_SIZE
from .episodes import MASK32, advance, hash_actions
from .devices import resolve_torch_device
from .policy import TorchGreedyMLP


def _mask32(v):
    return v & MASK32


class TorchCartPole(VectorCartPole):
    name = "torch"

    @classmethod
    def estimate_bytes(cls, num_envs, state_factor):
        # State, the reset draws and ~20 float32 temporaries of the state's size per step,
        # plus the policy's activations.
        return num_envs * (4 * 4 * state_factor * 24 + 4 * 64 * 4 + 64)

    def _resolve_device(self, device):
        return resolve_torch_device(device)

    def __init__(self, settings):
        super().__init__(settings)
        dev = self.device
        self._generator = torch.Generator(device=dev)
        self._env_index = torch.arange(self.num_envs, device=dev, dtype=torch.int64)
        self._policy = TorchGreedyMLP(self.policy_weights, dev)
        self._layers = self._policy.layers  # the same weights, for torch-compile's compiled step
        self._reset()

    def _draw_reset_rows(self):
        u = torch.rand((self.num_envs, self.row_len), generator=self._generator, device=self.device)
        return u * (RESET_HIGH - RESET_LOW) + RESET_LOW

    def _reset(self):
        self._generator.manual_seed(self.seed)
        self.state = self._draw_reset_rows()
        self.elapsed = torch.zeros(self.num_envs, dtype=torch.int64, device=self.device)
        self.episode = torch.zeros(self.num_envs, dtype=torch.int64, device=self.device)
        self._final_obs = self.state[:, :STATE_SIZE]
        return self.state[:, :STATE_SIZE].cpu().numpy()

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
        out = self._advance(torch.from_numpy(actions).to(self.device))
        terminated, truncated = out.terminated, out.truncated
        obs = self.state[:, :STATE_SIZE].cpu().numpy()
        return obs, np.ones(self.num_envs, np.float32), terminated.cpu().numpy(), truncated.cpu().numpy()

    def final_obs(self):
        return self._final_obs.cpu().numpy().copy()

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
