"""``cpp``: multi-core C++ simulation (the paper's C++ row), policy inference in PyTorch on the CPU.

The simulation is the CPU build of ``cuda/cartpole.cuh`` (see ``cuda/cartpole_cpu.cpp``): OpenMP
threads across environments, SIMD lanes within a thread. It writes in place into a torch CPU
tensor; the policy reads its first four columns (copy 0 = the observation) without a copy.

With the MLP policy every step is one C++ call plus one inference (K calls per rollout). With
no policy the C++ code runs all K steps in one call, keeping each block of environments in cache:
the CPU form of simulator kernel fusion (paper section 4). K=1 calls are the unfused form.
The calls go through ``self.backend`` (studylib.native.backends.CpuLibraryBackend, kernel pair "cartpole");
stepping, restarts and the arrays handed out (numpy copies, or zero-copy torch views with
``arrays="native"``) are studylib/envs/backend_env.py's. With numpy arrays, ``step`` is the thin path
of cuda/step_binding.cpp (about a C call per step; its outputs are views valid until the next step).
"""

from __future__ import annotations

import numpy as np
import torch

from . import footprint
from .. import native
from ..native.backends import CpuLibraryBackend
from .backend_env import BackendCartPole, NativeChainEnv
from ..sims.cartpole import STATE_SIZE
from ..policy import TorchGreedyMLP


class CppCartPole(BackendCartPole):
    name = "cpp"

    @classmethod
    def estimate_bytes(cls, num_envs, state_factor, params=None):
        return footprint.cpp_cartpole(num_envs, state_factor, params)

    def __init__(self, settings):
        super().__init__(settings)
        # cuda/cartpole_cpu.cpp, built on first use (cached)
        self._init_backend(CpuLibraryBackend("cartpole", self.num_envs, self.state_factor, self.compute_factor,
                                             self.params))
        self.state = torch.from_numpy(self.backend.state)  # shares memory with the backend's array
        self._policy = TorchGreedyMLP(self.policy_weights)  # reads the state in place
        self._actions = np.zeros(self.num_envs, dtype=np.int32)
        self._reset()

    def policy_actions(self) -> torch.Tensor:
        """Greedy MLP actions for the current observations, int32, read from the state in place."""
        actions = torch.from_numpy(self._actions)
        return actions.copy_(self._policy(self.state[:, :STATE_SIZE]))

    def _rollout(self, num_steps, policy):
        if policy == "none":
            return self.backend.rollout(None, num_steps, native.POLICY_HASH, self.seed)  # all K steps fused in one call
        return self.backend.rollout_actions(lambda: self.policy_actions().numpy(), num_steps, self.seed)


class CppChain(NativeChainEnv):
    """``cpp`` for the n-link chain: the C build of cuda/chain.cuh, K steps of the hashed controls
    in one native call (policy "none"); with the MLP, one native step per call and the Gaussian
    policy in PyTorch between them (``NativeChainEnv``)."""

    name = "cpp"
