"""``cpp``: multi-core C++ simulation (the paper's C++ row), policy inference in PyTorch on the CPU.

The simulation is the CPU build of ``cuda/cartpole.cuh`` (see ``cuda/cartpole_cpu.cpp``): OpenMP
threads across environments, SIMD lanes within a thread. It writes in place into a torch CPU
tensor; the policy reads its first four columns (copy 0 = the observation) without a copy.

With the MLP policy every step is one C++ call plus one inference (K calls per rollout). With
no policy the C++ code runs all K steps in one call, keeping each block of environments in cache:
the CPU form of simulator kernel fusion (paper section 4). K=1 calls are the unfused form.
"""

from __future__ import annotations

import numpy as np
import torch

from . import native
from .base import VectorCartPole
from .dynamics import STATE_SIZE
from .errors import ConfigError
from .policy import TorchGreedyMLP


def _ptr(a: np.ndarray):
    return a.ctypes.data


class CppCartPole(VectorCartPole):
    name = "cpp"

    @classmethod
    def estimate_bytes(cls, num_envs, state_factor):
        # float32 state + elapsed/episode counters + flags + the policy's activations (N x 64 x 2).
        return num_envs * (16 * state_factor + 9 + 4 * 64 * 3)

    def _resolve_device(self, device):
        if device == "cuda":
            raise ConfigError(f"cpp simulates on the CPU and infers there without a copy; device must be 'cpu', got {device!r}")
        return "cpu"

    def __init__(self, settings):
        super().__init__(settings)
        self._lib = native.library()  # builds cuda/cartpole_cpu.cpp on first use (cached)
        self._params = native.params_array(self.params)
        self._state_np = np.zeros((self.num_envs, self.row_len), dtype=np.float32)
        self.state = torch.from_numpy(self._state_np)  # shares memory with _state_np
        self._elapsed = np.zeros(self.num_envs, dtype=np.int32)
        self._episode = np.zeros(self.num_envs, dtype=np.uint32)
        self._flags = np.zeros(self.num_envs, dtype=np.uint8)
        self._policy = TorchGreedyMLP(self.policy_weights)  # reads the state in place
        self._actions = np.zeros(self.num_envs, dtype=np.int32)
        self._reset()

    def _call(self, actions: np.ndarray | None, num_steps: int) -> int:
        return self._lib.cartpole_rollout(
            _ptr(self._state_np), _ptr(self._elapsed), _ptr(self._episode),
            None if actions is None else _ptr(actions), _ptr(self._flags), _ptr(self._params),
            self.params.max_episode_steps, self.num_envs,
            self.state_factor, self.compute_factor, num_steps, self.seed,
        )

    def _obs(self):
        return self._state_np[:, :STATE_SIZE].copy()

    def _reset(self):
        self._lib.cartpole_reset(_ptr(self._state_np), _ptr(self._elapsed), _ptr(self._episode),
                                 self.num_envs, self.state_factor, self.seed)
        return self._obs()

    def _step(self, actions):
        self._call(np.ascontiguousarray(actions, dtype=np.int32), 1)
        return (self._obs(), np.ones(self.num_envs, np.float32),
                (self._flags & 1).astype(bool), (self._flags & 2).astype(bool))

    def _set_state(self, states):
        self._state_np[...] = states

    def get_state(self):
        return self._state_np.copy()

    def policy_actions(self) -> torch.Tensor:
        """Greedy MLP actions for the current observations, int32, read from the state in place."""
        actions = torch.from_numpy(self._actions)
        return actions.copy_(self._policy(self.state[:, :STATE_SIZE]))

    def _rollout(self, num_steps, policy):
        if policy == "none":
            return self._call(None, num_steps)  # all K steps fused in one call
        done = 0
        for _ in range(num_steps):
            done += self._call(self.policy_actions().numpy(), 1)
        return done
