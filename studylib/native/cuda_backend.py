"""``CudaModuleBackend``: a kernel pair's CUDA kernels (cuda/*_kernel.cu) compiled by CuPy (NVRTC,
``KERNEL_OPTIONS``) and launched on CuPy arrays on the GPU, on CuPy's current stream or the one
``stream_source`` names. CuPy is imported when a backend is made, never at import.
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np

from .. import native
from ..sims.cartpole import STATE_SIZE, CartPoleParams
from ..policy import MLPWeights
from .backend_base import PAIRS, CollectedSteps, _NativeBackend

# What CudaModuleBackend passes to CuPy's RawModule besides the source; CuPy adds "-ftz=true",
# "-arch=sm_XX" (the device's), "--device-as-default-execution-space" (tests/test_nvrtc.py
# compiles with all of them).
KERNEL_OPTIONS = (f"-I{native.CUDA_SOURCE_DIR}", "--std=c++17")


def _on_stream(method):
    """Run a CudaModuleBackend method with CuPy's current stream set to the backend's stream."""

    @functools.wraps(method)
    def run(self, *args, **kwargs):
        with self._stream_scope():
            return method(self, *args, **kwargs)

    return run


class CudaModuleBackend(_NativeBackend):
    """A kernel pair's CUDA kernels through CuPy (NVRTC); CuPy arrays on the GPU. Callers check
    that a device exists first (studylib.devices.require_cuda).

    Streams: every launch and copy goes to CuPy's current stream, or, when ``stream_source`` is
    set (a callable returning a stream object with the CUDA stream protocol, ``__cuda_stream__``,
    e.g. ``torch.cuda.current_stream``), to that stream, asked afresh at every call. Torch reads
    the kernels' buffers through DLPack views on its own current stream: launching there orders
    the kernels and torch's reads without an event (studylib/envs/backend_env.py sets it)."""

    api = "cupy.RawKernel"

    def __init__(self, pair: str, num_envs: int, state_factor: int, compute_factor: int,
                 params: CartPoleParams, weights: MLPWeights | None = None):
        import cupy as cp

        self._cp = cp
        spec = PAIRS[pair]
        # The source carries a digest of its headers: CuPy's cache is keyed on the source string.
        module = cp.RawModule(code=native.source_with_header_digest(spec.kernel_source), options=KERNEL_OPTIONS)
        self.stream_source = None
        self._stream_cache = (None, None)  # (the stream handle last asked for, its CuPy stream)
        super().__init__(pair, num_envs, state_factor, compute_factor, params, weights, cp)
        self._rollout_kernel = module.get_function(self.rollout_entry)
        # The policies without the MLP get a kernel without its registers (fused_kernel.cu).
        self._simulate_kernel = (module.get_function(f"{self.rollout_entry}_no_mlp") if spec.has_mlp
                                 else self._rollout_kernel)
        self._reset_kernel = module.get_function(self.reset_entry)
        self._restart_kernel = module.get_function(self.restart_entry)
        self._logits_kernel = module.get_function("fused_mlp_logits") if spec.has_mlp else None
        self._collect_kernel = module.get_function("fused_collect") if spec.has_mlp else None
        self._done = cp.zeros(1, dtype=cp.uint64)
        self._args.episodes_done = self._address(self._done)
        self._args_value = native.by_value(self._args)  # the kernels take the struct by value
        self._block = (spec.threads_per_block,)
        self._grid = (self._blocks(num_envs),)

    def _blocks(self, n: int) -> int:
        return (n + self.pair.threads_per_block - 1) // self.pair.threads_per_block

    def _stream_scope(self):
        """The context that makes the backend's stream CuPy's current one (none: CuPy's own)."""
        if self.stream_source is None:
            return contextlib.nullcontext()
        stream = self.stream_source()
        handle = stream.__cuda_stream__()[1]  # the protocol's (version, cudaStream_t)
        if self._stream_cache[0] != handle:  # torch hands out a new object for the same stream
            cuda = self._cp.cuda
            if hasattr(cuda.Stream, "from_external"):  # CuPy 14+
                wrapped = cuda.Stream.from_external(stream)
            else:  # CuPy 13
                wrapped = cuda.ExternalStream(handle)
            self._stream_cache = (handle, wrapped)
        return self._stream_cache[1]

    @staticmethod
    def _address(array) -> int:
        return array.data.ptr

    @_on_stream
    def reset(self, seed: int) -> None:
        self._prepare_reset(seed)
        self._call(self.reset_entry, self._reset_kernel, self._grid, self._block, (self._args_value,))

    @_on_stream
    def rollout(self, actions, num_steps: int, policy: int, seed: int, final_obs: bool = False) -> int:
        if actions is not None:
            actions = self._cp.asarray(actions, dtype=self._cp.int32)
        self._done.fill(0)
        self._launch(actions, num_steps, policy, seed, final_obs)
        return int(self._done.get()[0])  # waits for the kernel

    @_on_stream
    def step(self, actions, seed: int) -> None:
        """Queued, not waited for: the episodes it finishes go to a counter nobody reads (the next
        ``rollout`` zeroes it)."""
        self._launch(self._cp.asarray(actions, dtype=self._cp.int32), 1, native.POLICY_ACTIONS, seed, True)

    @_on_stream
    def restart(self, mask, seed: int) -> None:
        cp = self._cp
        mask = cp.ascontiguousarray(cp.asarray(mask, dtype=cp.bool_))  # a device bool array: no copy
        self._prepare_restart(mask, seed)
        self._call(self.restart_entry, self._restart_kernel, self._grid, self._block, (self._args_value,))

    @_on_stream
    def rollout_actions(self, next_actions, num_steps: int, seed: int) -> int:
        """``num_steps`` one-step launches, each with the actions ``next_actions()`` returns (a
        policy outside the kernel, e.g. CuPy); returns the episodes finished, waiting once."""
        cp = self._cp
        self._done.fill(0)
        for _ in range(num_steps):
            self._launch(cp.asarray(next_actions(), dtype=cp.int32), 1, native.POLICY_ACTIONS, seed, False)
        return int(self._done.get()[0])

    def _launch(self, actions, num_steps, policy, seed, final_obs) -> None:
        """One rollout launch; adds the episodes it finishes to the device counter."""
        if actions is not None:
            actions = self._cp.ascontiguousarray(actions)  # the caller gave int32 on the device
        self._prepare(actions, num_steps, policy, seed, final_obs)
        kernel = self._rollout_kernel if policy == native.POLICY_MLP else self._simulate_kernel
        self._call(self.rollout_entry, kernel, self._grid, self._block, (self._args_value,))

    @_on_stream
    def collect(self, num_steps: int, seed: int) -> CollectedSteps:
        """As CpuLibraryBackend.collect, one launch of ``fused_collect``; CuPy arrays on the GPU."""
        bufs, t = self._prepare_collect(num_steps, seed, self._cp)
        self._done.fill(0)
        traj_value = np.frombuffer(t, dtype=np.dtype(native.TrajectoryArgs))  # by value, as native.by_value
        self._call("fused_collect", self._collect_kernel, self._grid, self._block, (self._args_value, traj_value))
        return CollectedSteps(**bufs, episodes_finished=int(self._done.get()[0]))

    @_on_stream
    def obs(self) -> np.ndarray:
        return self._cp.asnumpy(self.state[:, :STATE_SIZE])

    @_on_stream
    def flags(self) -> np.ndarray:
        return self._cp.asnumpy(self.flags_out)

    @_on_stream
    def final_obs(self) -> np.ndarray:
        self.check_final_obs()
        return self._cp.asnumpy(self.final_obs_out)

    @_on_stream
    def set_state(self, states) -> None:
        self.state[...] = self._cp.asarray(states, dtype=self._cp.float32)

    @_on_stream
    def get_state(self) -> np.ndarray:
        return self._cp.asnumpy(self.state)

    @_on_stream
    def set_weights(self, weights: MLPWeights) -> None:
        self._check_mlp()
        self._weights.set(native.pack_weights(weights))  # in place: the struct keeps its address

    @_on_stream
    def mlp_logits(self, obs) -> np.ndarray:
        self._check_mlp()
        cp = self._cp
        obs = cp.ascontiguousarray(cp.asarray(obs, dtype=cp.float32))
        out = cp.empty((len(obs), 2), dtype=cp.float32)
        self._call("fused_mlp_logits", self._logits_kernel, (self._blocks(len(obs)),), self._block,
                   (obs, out, self._weights, np.int64(len(obs))))
        return cp.asnumpy(out)

    def synchronize(self) -> None:
        self._cp.cuda.runtime.deviceSynchronize()
