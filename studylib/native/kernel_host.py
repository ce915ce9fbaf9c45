"""The CUDA kernels executed on the CPU: ``cuda/cartpole_kernel.cu`` and ``cuda/fused_kernel.cu``
themselves, built by the host C++ compiler through ``cuda/cuda_host.h`` (studylib/native/build.py's
``cartpole_kernel_host`` and ``fused_kernel_host``) and launched over the same grid as on a GPU.

A test instrument: it runs the GPU-only code (the kernels' entry points, ``cp_thread_rollout``,
``load_weights_shared``, ``fused_collect_steps``, the warp-level episode count) on machines
without a GPU, so the tests compare it with the CPU builds and the Python reference. Serial and
slow (every CUDA thread a fiber); not an implementation to measure.

``HostKernelBackend`` is ``CpuLibraryBackend`` (studylib/native/backends.py: the same arrays, argument
struct and methods) with every native call replaced by a launch of the kernel, as
``CudaModuleBackend`` launches it: ``threads_per_block`` threads a block, ``ceil(n / threads)``
blocks, the episodes counted in a device-style counter the kernels add to.
"""

from __future__ import annotations

import ctypes

import numpy as np

from .. import native
from .backends import PAIRS, CollectedSteps, CpuLibraryBackend
from ..sims.cartpole import CartPoleParams
from ..errors import StudyError
from ..policy import MLPWeights


class HostKernelBackend(CpuLibraryBackend):
    """A kernel pair's CUDA kernels, built for and launched on the CPU (cuda/cuda_host.h)."""

    api = "cuda_host"

    def __init__(self, pair: str, num_envs: int, state_factor: int, compute_factor: int,
                 params: CartPoleParams, weights: MLPWeights | None = None):
        super().__init__(pair, num_envs, state_factor, compute_factor, params, weights)
        self._host = native.library(f"{PAIRS[pair].name}_kernel_host")
        self.threads_per_block = self.pair.threads_per_block
        self._done = np.zeros(1, dtype=np.uint64)  # the kernels' episodes_done counter
        self._args.episodes_done = self._done.ctypes.data
        prefix = f"host_{self.pair.name}"
        rollout = self._counted(getattr(self._host, f"{prefix}_rollout"))
        if self.pair.has_mlp:  # as CudaModuleBackend: the kernel without the MLP for other policies
            simulate = self._counted(getattr(self._host, f"{prefix}_rollout_no_mlp"))
            rollout = self._by_policy(rollout, simulate)
        self._rollout_fn = rollout
        self._reset_fn = self._launcher(getattr(self._host, f"{prefix}_reset"))
        self._restart_fn = self._launcher(getattr(self._host, f"{prefix}_restart"))

    def blocks(self, n: int) -> int:
        """The grid CudaModuleBackend launches for n threads."""
        return (n + self.threads_per_block - 1) // self.threads_per_block

    def _launch(self, fn, n: int, *args) -> None:
        error = fn(self.blocks(n), self.threads_per_block, *args)
        if error is not None:
            raise StudyError(f"host launch of {fn.__name__} failed: {error.decode()}")

    def _launcher(self, fn):
        return lambda args_ref: self._launch(fn, self.num_envs, args_ref)

    def _counted(self, fn):
        def launch(args_ref) -> int:
            self._done[0] = 0
            self._launch(fn, self.num_envs, args_ref)
            return int(self._done[0])
        return launch

    def _by_policy(self, with_mlp, without_mlp):
        return lambda args_ref: (with_mlp if self._args.policy == native.POLICY_MLP else without_mlp)(args_ref)

    def collect(self, num_steps: int, seed: int) -> CollectedSteps:
        bufs, t = self._prepare_collect(num_steps, seed, np)
        self._done[0] = 0
        self._call("fused_collect", self._launch, self._host.host_fused_collect, self.num_envs, self._args_ref,
                   ctypes.pointer(t))
        return CollectedSteps(**bufs, episodes_finished=int(self._done[0]))

    def mlp_logits(self, obs) -> np.ndarray:
        self._check_mlp()
        obs = np.ascontiguousarray(obs, dtype=np.float32)
        out = np.empty((len(obs), 2), dtype=np.float32)
        self._call("fused_mlp_logits", self._launch, self._host.host_fused_mlp_logits, len(obs), obs.ctypes.data,
                   out.ctypes.data, self._weights.ctypes.data, len(obs))
        return out
