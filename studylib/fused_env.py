"""``fused``: policy inference and simulation in ONE kernel (the paper's section 7, future work).

One call runs K steps of every environment, each step the MLP 4 -> 64 -> 64 -> 2 on the
observation, the greedy action, the CartPole step (S copies, C sub-steps), termination,
truncation and the same-step reset, with the state kept in registers / L1 throughout. There is
no framework call per step and no activation, action or observation written to memory between
steps: where ``cpp`` and ``cuda`` pay one simulation call plus one framework inference per step
with the MLP, ``fused`` pays one call per rollout.

The same source runs on both devices: ``cuda/mlp.cuh`` (the forward pass, a template over the
lane type) and ``cuda/cartpole.cuh`` (the physics), compiled into ``cuda/fused_cpu.cpp`` (SIMD
lanes = environments, OpenMP threads over blocks of them; built by studylib/native.py) and into
``cuda/fused_kernel.cu`` (one thread per environment, launched through CuPy). Resets draw from
the counter hash, so a fused env and a ``cpp`` env with the same seed start from the same state,
and ``policy="none"`` takes the same hashed actions as ``cpp``/``cuda``.
"""

from __future__ import annotations

import numpy as np

from . import native
from .base import VectorCartPole
from .dynamics import STATE_SIZE
from .devices import cuda_status, require_cuda
from .policy import MLPWeights

THREADS_PER_BLOCK = 128
# The `policy` argument of the kernels (FUSED_POLICY_* in cuda/mlp.cuh).
POLICY_ACTIONS, POLICY_MLP, POLICY_HASH = 0, 1, 2
_POLICY_CODES = {"mlp": POLICY_MLP, "none": POLICY_HASH}


def pack_weights(weights: MLPWeights) -> np.ndarray:
    """The MLP as one float32 array in cuda/mlp.cuh's layout: w1, b1, w2, b2, w3, b3, each
    row-major (w_i has shape (fan_in, fan_out), as in studylib.policy)."""
    return np.ascontiguousarray(np.concatenate([a.ravel() for layer in weights.layers() for a in layer]),
                                dtype=np.float32)


def _ptr(a: np.ndarray):
    return a.ctypes.data


class _CpuBackend:
    """cuda/fused_cpu.cpp through ctypes; arrays are numpy, written in place."""

    def __init__(self, env: "FusedCartPole"):
        self.env = env
        self.lib = native.library("fused_cpu")  # builds cuda/fused_cpu.cpp on first use (cached)
        self.state = np.zeros((env.num_envs, env.row_len), dtype=np.float32)
        self.elapsed = np.zeros(env.num_envs, dtype=np.int32)
        self.episode = np.zeros(env.num_envs, dtype=np.uint32)
        self.flags = np.zeros(env.num_envs, dtype=np.uint8)

    def reset(self):
        e = self.env
        self.lib.fused_reset(_ptr(self.state), _ptr(self.elapsed), _ptr(self.episode), e.num_envs,
                             e.state_factor, e.seed)

    def call(self, actions, num_steps, policy_code) -> int:
        e = self.env
        if actions is not None:
            actions = np.ascontiguousarray(actions, dtype=np.int32)
        return self.lib.fused_rollout(
            _ptr(self.state), _ptr(self.elapsed), _ptr(self.episode),
            None if actions is None else _ptr(actions), _ptr(self.flags), _ptr(e._params),
            _ptr(e._weights), e.params.max_episode_steps, e.num_envs, e.state_factor,
            e.compute_factor, num_steps, e.seed, policy_code,
        )

    def obs(self):
        return self.state[:, :STATE_SIZE].copy()

    def flags_np(self):
        return self.flags

    def set_state(self, states):
        self.state[...] = states

    def get_state(self):
        return self.state.copy()

    def mlp_logits(self, obs):
        obs = np.ascontiguousarray(obs, dtype=np.float32)
        out = np.empty((len(obs), 2), dtype=np.float32)
        self.lib.fused_mlp_logits(_ptr(obs), _ptr(out), _ptr(self.env._weights), len(obs))
        return out

    def synchronize(self):
        pass


class _CudaBackend:
    """cuda/fused_kernel.cu through CuPy (NVRTC); arrays live on the GPU."""

    def __init__(self, env: "FusedCartPole"):
        import cupy as cp

        self.env, self.cp = env, cp
        module = cp.RawModule(code=native.FUSED_KERNEL_SOURCE.read_text(),
                              options=(f"-I{native.CUDA_SOURCE_DIR}", "--std=c++17"))
        self.rollout_kernel = module.get_function("fused_rollout")
        self.reset_kernel = module.get_function("fused_reset")
        self.logits_kernel = module.get_function("fused_mlp_logits")
        self.params = cp.asarray(env._params)
        self.weights = cp.asarray(env._weights)
        self.state = cp.zeros((env.num_envs, env.row_len), dtype=cp.float32)
        self.elapsed = cp.zeros(env.num_envs, dtype=cp.int32)
        self.episode = cp.zeros(env.num_envs, dtype=cp.uint32)
        self.flags = cp.zeros(env.num_envs, dtype=cp.uint8)
        self.done = cp.zeros(1, dtype=cp.uint64)
        self.grid = ((env.num_envs + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK,)

    def reset(self):
        e = self.env
        self.reset_kernel(self.grid, (THREADS_PER_BLOCK,),
                          (self.state, self.elapsed, self.episode, np.int64(e.num_envs),
                           np.int32(e.state_factor), np.uint32(e.seed)))

    def call(self, actions, num_steps, policy_code) -> int:
        e, cp = self.env, self.cp
        if actions is not None:
            actions = cp.asarray(actions, dtype=cp.int32)
        self.done.fill(0)
        self.rollout_kernel(
            self.grid, (THREADS_PER_BLOCK,),
            (self.state, self.elapsed, self.episode, actions if actions is not None else 0,
             self.flags, self.done, self.params, self.weights, np.int32(e.params.max_episode_steps),
             np.int64(e.num_envs), np.int32(e.state_factor), np.int32(e.compute_factor),
             np.int32(num_steps), np.uint32(e.seed), np.int32(policy_code)),
        )
        return int(self.done.get()[0])  # waits for the kernel

    def obs(self):
        return self.cp.asnumpy(self.state[:, :STATE_SIZE])

    def flags_np(self):
        return self.cp.asnumpy(self.flags)

    def set_state(self, states):
        self.state[...] = self.cp.asarray(states, dtype=self.cp.float32)

    def get_state(self):
        return self.cp.asnumpy(self.state)

    def mlp_logits(self, obs):
        cp = self.cp
        obs = cp.asarray(obs, dtype=cp.float32)
        out = cp.empty((len(obs), 2), dtype=cp.float32)
        grid = ((len(obs) + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK,)
        self.logits_kernel(grid, (THREADS_PER_BLOCK,), (obs, out, self.weights, np.int64(len(obs))))
        return cp.asnumpy(out)

    def synchronize(self):
        self.cp.cuda.runtime.deviceSynchronize()


class FusedCartPole(VectorCartPole):
    name = "fused"

    @classmethod
    def estimate_bytes(cls, num_envs, state_factor):
        # float32 state + elapsed/episode counters + flags; no activations are ever stored.
        return num_envs * (16 * state_factor + 9)

    def _resolve_device(self, device):
        if device == "cpu" or (device is None and not cuda_status()[0]):
            return "cpu"
        require_cuda("use device='cpu' (the same kernel source, built for the CPU)")
        return "cuda"

    def __init__(self, settings):
        super().__init__(settings)
        self._params = native.params_array(self.params)
        self._weights = pack_weights(self.policy_weights)
        self._backend = _CpuBackend(self) if self.device == "cpu" else _CudaBackend(self)
        self._reset()

    def _reset(self):
        self._backend.reset()
        return self._backend.obs()

    def _step(self, actions):
        self._backend.call(actions, 1, POLICY_ACTIONS)
        flags = self._backend.flags_np()
        return (self._backend.obs(), np.ones(self.num_envs, np.float32),
                (flags & 1).astype(bool), (flags & 2).astype(bool))

    def _set_state(self, states):
        self._backend.set_state(states)

    def get_state(self):
        return self._backend.get_state()

    def _rollout(self, num_steps, policy):
        return self._backend.call(None, num_steps, _POLICY_CODES[policy])  # K steps, ONE call

    def mlp_logits(self, obs) -> np.ndarray:
        """The kernel's own forward pass on observations (n, 4) -> logits (n, 2) (for tests)."""
        return self._backend.mlp_logits(obs)

    def synchronize(self):
        self._backend.synchronize()
