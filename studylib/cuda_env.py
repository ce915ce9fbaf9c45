"""``cuda``: the hand-written kernel of ``cuda/cartpole_kernel.cu``, launched through CuPy.

One launch runs K steps per environment with the state in registers (simulator kernel fusion,
paper section 4). With the MLP policy each step is one launch plus a CuPy (cuBLAS) inference, as
the paper's CUDA simulation paired with framework inference. Where no CUDA device exists,
``make("cuda", ...)`` raises ``DeviceUnavailableError`` with one line saying so; the same kernel
logic runs on the CPU as the ``cpp`` implementation. The launches go through ``self.backend``
(studylib.backends.CudaModuleBackend, kernel pair "cartpole").
"""

from __future__ import annotations

import numpy as np

from . import native
from .backends import CudaModuleBackend
from .base import VectorCartPole
from .dynamics import STATE_SIZE
from .devices import require_cuda
from .errors import ConfigError
from .policy import mlp_logits


class CudaCartPole(VectorCartPole):
    name = "cuda"

    @classmethod
    def estimate_bytes(cls, num_envs, state_factor):
        # Host-side staging only; device memory is checked by CUDA's allocator.
        return num_envs * 64

    def _resolve_device(self, device):
        if device == "cpu":
            raise ConfigError("the cuda implementation runs on 'cuda' only, got device='cpu'")
        require_cuda("the cuda implementation needs an NVIDIA GPU (its kernel logic runs on the CPU as 'cpp')")
        return "cuda"

    def __init__(self, settings):
        super().__init__(settings)
        import cupy as cp

        self._cp = cp
        self.backend = CudaModuleBackend("cartpole", self.num_envs, self.state_factor, self.compute_factor,
                                         self.params)
        self.state = self.backend.state  # (N, 4S) on the GPU; the policy reads copy 0 in place
        self._layers = [(cp.asarray(w), cp.asarray(b)) for w, b in self.policy_weights.layers()]
        self._reset()

    def _reset(self):
        self.backend.reset(self.seed)
        return self.backend.obs()

    def _step(self, actions):
        self.backend.rollout(actions, 1, native.POLICY_ACTIONS, self.seed, final_obs=True)
        flags = self.backend.flags()
        return self.backend.obs(), np.ones(self.num_envs, np.float32), (flags & 1).astype(bool), (flags & 2).astype(bool)

    def final_obs(self) -> np.ndarray:
        """Observations (N, 4) at the end of the last ``step``, before its same-step resets (numpy):
        a finished env's terminal observation; the others' equal what ``step`` returned.
        StudyError if a reset or rollout came after that step."""
        return self.backend.final_obs()

    def _set_state(self, states):
        self.backend.set_state(states)

    def get_state(self):
        return self.backend.get_state()

    def policy_actions(self):
        cp = self._cp
        return cp.argmax(mlp_logits(self._layers, self.state[:, :STATE_SIZE], xp=cp), axis=1).astype(cp.int32)

    def _rollout(self, num_steps, policy):
        if policy == "none":
            return self.backend.rollout(None, num_steps, native.POLICY_HASH, self.seed)  # K steps fused in one launch
        return self.backend.rollout_actions(self.policy_actions, num_steps, self.seed)  # one wait, at the end

    def synchronize(self):
        self.backend.synchronize()
