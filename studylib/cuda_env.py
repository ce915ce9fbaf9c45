"""``cuda``: the hand-written kernel of ``cuda/cartpole_kernel.cu``, launched through CuPy.

One launch runs K steps per environment with the state in registers (simulator kernel fusion,
paper section 4). With the MLP policy each step is one launch plus a CuPy (cuBLAS) inference, as
the paper's CUDA simulation paired with framework inference. Where no CUDA device exists,
``make("cuda", ...)`` raises ``DeviceUnavailableError`` with one line saying so; the same kernel
logic runs on the CPU as the ``cpp`` implementation.
"""

from __future__ import annotations

import numpy as np

from . import native
from .base import VectorCartPole
from .dynamics import STATE_SIZE
from .devices import require_cuda
from .errors import ConfigError
from .policy import mlp_logits

THREADS_PER_BLOCK = 256


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
        module = cp.RawModule(
            code=native.KERNEL_SOURCE.read_text(),
            options=(f"-I{native.CUDA_SOURCE_DIR}", "--std=c++17"),
            name_expressions=None,
        )
        self._rollout_kernel = module.get_function("cartpole_rollout")
        self._reset_kernel = module.get_function("cartpole_reset")
        self._params = cp.asarray(native.params_array(self.params))
        self.state = cp.zeros((self.num_envs, self.row_len), dtype=cp.float32)
        self._elapsed = cp.zeros(self.num_envs, dtype=cp.int32)
        self._episode = cp.zeros(self.num_envs, dtype=cp.uint32)
        self._flags = cp.zeros(self.num_envs, dtype=cp.uint8)
        self._done = cp.zeros(1, dtype=cp.uint64)
        self._layers = [(cp.asarray(w), cp.asarray(b)) for w, b in self.policy_weights.layers()]
        self._grid = ((self.num_envs + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK,)
        self._reset()

    def _launch(self, actions, num_steps: int) -> None:
        cp = self._cp
        self._rollout_kernel(
            self._grid, (THREADS_PER_BLOCK,),
            (self.state, self._elapsed, self._episode, actions if actions is not None else 0,
             self._flags, self._done, self._params, np.int32(self.params.max_episode_steps),
             np.int64(self.num_envs), np.int32(self.state_factor), np.int32(self.compute_factor),
             np.int32(num_steps), np.uint32(self.seed)),
        )

    def _reset(self):
        self._reset_kernel(self._grid, (THREADS_PER_BLOCK,),
                           (self.state, self._elapsed, self._episode, np.int64(self.num_envs),
                            np.int32(self.state_factor), np.uint32(self.seed)))
        return self._cp.asnumpy(self.state[:, :STATE_SIZE])

    def _step(self, actions):
        self._launch(self._cp.asarray(actions, dtype=self._cp.int32), 1)
        flags = self._cp.asnumpy(self._flags)
        return (self._cp.asnumpy(self.state[:, :STATE_SIZE]), np.ones(self.num_envs, np.float32),
                (flags & 1).astype(bool), (flags & 2).astype(bool))

    def _set_state(self, states):
        self.state[...] = self._cp.asarray(states, dtype=self._cp.float32)

    def get_state(self):
        return self._cp.asnumpy(self.state)

    def policy_actions(self):
        cp = self._cp
        return cp.argmax(mlp_logits(self._layers, self.state[:, :STATE_SIZE], xp=cp), axis=1).astype(cp.int32)

    def _rollout(self, num_steps, policy):
        self._done.fill(0)
        if policy == "none":
            self._launch(None, num_steps)  # K steps fused in one launch
        else:
            for _ in range(num_steps):
                self._launch(self.policy_actions(), 1)
        return int(self._done.get()[0])

    def synchronize(self):
        self._cp.cuda.runtime.deviceSynchronize()
