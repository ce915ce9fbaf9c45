"""The native backends: calls into one pair of the CUDA kernel sources, on the CPU or the GPU.

A kernel pair is a CPU build and a CUDA kernel of the same logic:

``"cartpole"``
    cuda/cartpole_cpu.cpp and cuda/cartpole_kernel.cu (the ``cpp`` and ``cuda`` implementations).
``"fused"``
    cuda/fused_cpu.cpp and cuda/fused_kernel.cu (``fused``: the MLP and the simulation in one call).

Two sibling backends run either pair, with the same methods:

``CpuLibraryBackend``
    The CPU build through ctypes (studylib/native/build.py builds it). Arrays are numpy, written in
    place; ``state`` can be shared without a copy (``torch.from_numpy``).
``CudaModuleBackend``
    The kernel through CuPy (NVRTC). Arrays are CuPy arrays on the GPU.

Every entry point takes one ``RolloutArgs`` (cuda/rollout_args.h, studylib.native.RolloutArgs):
a backend keeps one, filled once with its arrays and knobs, and sets the few per-call fields
(actions, steps, policy, seed, final_obs) before each call.

Methods: ``reset(seed)``; ``rollout(actions | None, num_steps, policy, seed, final_obs=False)``
-> episodes finished (``policy``: native.POLICY_*); ``step(actions, seed)``: one step with the
caller's actions, final observations recorded, nothing counted (so no wait on the GPU);
``rollout_actions(next_actions, num_steps, seed)``: one-step calls with a policy outside the
native code, counted with one wait;
``restart(mask, seed)``: the next episode for the envs of a bool mask (N,), step counters to 0,
their final observations their new first ones;
``obs()``, ``flags()``, ``final_obs()``, ``get_state()`` (numpy copies); ``set_state(states)``;
``set_weights(MLPWeights)`` and ``mlp_logits(obs)`` (fused pair); ``collect(num_steps, seed)`` ->
``CollectedSteps`` (fused pair: T steps with actions sampled in the kernel, the whole trajectory in
one call); ``synchronize()``.

Buffers the native code writes in place, at fixed addresses for the backend's life (an env with
``arrays="native"`` hands out zero-copy views of them): ``state`` (N, 4S), ``flags_out`` (N,)
(bit 0 terminated, bit 1 truncated, of the last step) and ``final_obs_out`` (N, 4) (valid after
``check_final_obs()``).

Profiling: ``call_hook`` is None or a callable ``hook(name, fn, *args)`` that must return
``fn(*args)``; every native call goes through it, ``name`` being the entry point
(``rollout_entry`` for a rollout: one kernel launch on the GPU, one CPU "launch" over all
environments; ``reset_entry``; ``restart_entry``; ``fused_mlp_logits``; ``fused_collect``). ``api``
says what ``fn`` is ("ctypes" or "cupy.RawKernel").
"""

from __future__ import annotations

import abc
import contextlib
import ctypes
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .. import native
from ..dynamics import STATE_SIZE, CartPoleParams
from ..errors import ConfigError, StudyError
from ..policy import MLPWeights


@dataclass(frozen=True)
class KernelPair:
    """One CPU build and the CUDA kernel of the same logic."""

    name: str  # prefix of the entry points: {name}_rollout, {name}_reset
    library: str  # native.LIBRARIES key of the CPU build
    kernel_source: Path
    threads_per_block: int  # CUDA launch shape
    has_mlp: bool  # runs POLICY_MLP and has {name}_mlp_logits


PAIRS = {
    "cartpole": KernelPair("cartpole", "cartpole_cpu", native.KERNEL_SOURCE, 256, False),
    # 128 threads: the fused kernel's 18 KiB of shared weights are loaded once per block.
    "fused": KernelPair("fused", "fused_cpu", native.FUSED_KERNEL_SOURCE, 128, True),
}


# What CudaModuleBackend passes to CuPy's RawModule besides the source; CuPy adds "-ftz=true",
# "-arch=sm_XX" (the device's), "--device-as-default-execution-space" (tests/test_nvrtc.py
# compiles with all of them).
KERNEL_OPTIONS = (f"-I{native.CUDA_SOURCE_DIR}", "--std=c++17")


class CollectedSteps(NamedTuple):
    """What ``collect`` returns: T steps of N environments, step-major (cuda/trajectory_args.h),
    numpy arrays on the CPU backend, CuPy arrays on the GPU one; fresh arrays every call."""

    obs: object  # (T, N, 4) float32, the CartPole before each step
    actions: object  # (T, N) int32, sampled from the MLP's softmax
    logp: object  # (T, N) float32, log-probability of each action
    flags: object  # (T, N) uint8, bit 0 terminated, bit 1 truncated
    final_obs: object  # (T, N, 4) float32, the CartPole before each step's same-step reset
    episodes_finished: int


def _trajectory_buffers(xp, num_steps: int, num_envs: int) -> dict:
    shape = (num_steps, num_envs)
    return {"obs": xp.empty((*shape, STATE_SIZE), dtype=np.float32), "actions": xp.empty(shape, dtype=np.int32),
            "logp": xp.empty(shape, dtype=np.float32), "flags": xp.empty(shape, dtype=np.uint8),
            "final_obs": xp.empty((*shape, STATE_SIZE), dtype=np.float32)}


class _NativeBackend(abc.ABC):
    """What both backends share: the arrays (numpy or CuPy, by ``xp``), the argument struct,
    the argument checks and the call hook."""

    api = ""

    def __init__(self, pair: str, num_envs: int, state_factor: int, compute_factor: int,
                 params: CartPoleParams, weights: MLPWeights | None, xp):
        self.pair = PAIRS[pair]
        self.num_envs = num_envs
        self.rollout_entry = f"{self.pair.name}_rollout"
        self.reset_entry = f"{self.pair.name}_reset"
        self.restart_entry = f"{self.pair.name}_restart"
        self.call_hook = None
        self.state = xp.zeros((num_envs, STATE_SIZE * state_factor), dtype=np.float32)
        self._elapsed = xp.zeros(num_envs, dtype=np.int32)
        self._episode = xp.zeros(num_envs, dtype=np.uint32)
        self.flags_out = xp.zeros(num_envs, dtype=np.uint8)
        self.final_obs_out = xp.zeros((num_envs, STATE_SIZE), dtype=np.float32)
        self._final_obs_recorded = False  # by the last rollout call, with no reset since
        self._params = xp.asarray(native.params_array(params))
        self._weights = None
        if self.pair.has_mlp:
            if weights is None:
                raise ConfigError(f"the {pair} kernels need the MLP's weights")
            self._weights = xp.asarray(native.pack_weights(weights))
        a = native.RolloutArgs()
        a.state, a.elapsed, a.episode = self._address(self.state), self._address(self._elapsed), self._address(self._episode)
        a.flags_out, a.params = self._address(self.flags_out), self._address(self._params)
        a.weights = None if self._weights is None else self._address(self._weights)
        a.n, a.max_episode_steps = num_envs, params.max_episode_steps
        a.state_factor, a.compute_factor = state_factor, compute_factor
        self._args = a

    @staticmethod
    @abc.abstractmethod
    def _address(array) -> int:
        """The address of an array's data, as the native code sees it (host or device)."""

    def _call(self, name, fn, *args):
        hook = self.call_hook
        return fn(*args) if hook is None else hook(name, fn, *args)

    def _prepare(self, actions, num_steps: int, policy: int, seed: int, final_obs: bool) -> None:
        """Set the per-call fields (the caller keeps ``actions`` alive until the call is made)."""
        if (policy == native.POLICY_ACTIONS) != (actions is not None):
            raise ConfigError("actions are given exactly when the policy is POLICY_ACTIONS")
        if policy == native.POLICY_MLP and not self.pair.has_mlp:
            raise ConfigError(f"the {self.pair.name} kernels have no MLP policy")
        a = self._args
        a.actions = None if actions is None else self._address(actions)
        a.final_obs = self._address(self.final_obs_out) if final_obs else None
        a.num_steps, a.policy, a.seed = num_steps, policy, seed
        self._final_obs_recorded = final_obs

    def _prepare_collect(self, num_steps: int, seed: int, xp) -> tuple[dict, native.TrajectoryArgs]:
        """The per-call fields and the trajectory's arrays and struct for ``collect``."""
        self._prepare(None, num_steps, native.POLICY_MLP, seed, False)  # ConfigError without an MLP
        bufs = _trajectory_buffers(xp, num_steps, self.num_envs)
        t = native.TrajectoryArgs()
        for name, array in bufs.items():
            setattr(t, name, self._address(array))
        return bufs, t

    def _prepare_reset(self, seed: int) -> None:
        self._args.seed = seed
        self._final_obs_recorded = False

    def _prepare_restart(self, mask, seed: int) -> None:
        """The restart's fields (the caller keeps ``mask`` alive until the call is made). The
        restarted envs' final observations become their new first observations."""
        a = self._args
        a.reset_mask, a.seed, a.final_obs = self._address(mask), seed, self._address(self.final_obs_out)

    def check_final_obs(self) -> None:
        """StudyError unless ``final_obs_out`` holds the last rollout call's final observations."""
        if not self._final_obs_recorded:
            raise StudyError("final_obs() needs a step first: none since the last reset or rollout")

    def _check_mlp(self) -> None:
        if not self.pair.has_mlp:
            raise ConfigError(f"the {self.pair.name} kernels have no MLP")


class CpuLibraryBackend(_NativeBackend):
    """A kernel pair's CPU build through ctypes; numpy arrays, written in place."""

    api = "ctypes"

    def __init__(self, pair: str, num_envs: int, state_factor: int, compute_factor: int,
                 params: CartPoleParams, weights: MLPWeights | None = None):
        self._lib = native.library(PAIRS[pair].library)  # built on first use (cached)
        self._status = np.zeros(2, np.uint8)  # [0] final obs recorded, [1] a next_step since reset
        super().__init__(pair, num_envs, state_factor, compute_factor, params, weights, np)
        self._args_ref = ctypes.pointer(self._args)  # what the hook sees: .contents is the struct
        self._rollout_fn = getattr(self._lib, self.rollout_entry)
        self._reset_fn = getattr(self._lib, self.reset_entry)
        self._restart_fn = getattr(self._lib, self.restart_entry)
        self._make_stepper()
        self.stepper.enabled = self._call_hook is None

    def _make_stepper(self) -> None:
        """The thin per-call path (cuda/step_binding.cpp) over this backend's struct and buffers.
        Its outputs are preallocated once here: ``step_views`` (obs, reward, terminated, truncated),
        views the fast ``step`` rewrites in place each call, and ``next_obs`` (the final
        observations, of which NEXT_STEP returns a copy)."""
        n = self.num_envs
        self._fast_actions = np.zeros(n, np.int32)
        self.reward_out = np.ones(n, np.float32)
        self.terminated_out = np.zeros(n, bool)
        self.truncated_out = np.zeros(n, bool)
        self.finished = np.zeros(n, bool)  # NEXT_STEP's envs that finished on the last step
        self._mask = np.zeros(n, bool)
        self.step_views = (self.state[:, :STATE_SIZE], self.reward_out, self.terminated_out, self.truncated_out)
        self.next_obs = self.final_obs_out
        buffers = (self._fast_actions, self.final_obs_out, self.flags_out, self.reward_out, self.terminated_out,
                   self.truncated_out, self.finished, self._mask, self._status)
        address = lambda f: ctypes.cast(f, ctypes.c_void_p).value  # noqa: E731
        self.stepper = native.step_binding().Stepper(
            ctypes.addressof(self._args), address(self._rollout_fn), address(self._restart_fn), n,
            tuple(b.ctypes.data for b in buffers), self.step_views,
            (self.final_obs_out.copy, self.reward_out.copy, self.terminated_out.copy, self.truncated_out.copy),
            np.ndarray,
            (self._args, self._lib, self.state, self._elapsed, self._episode, self._params, self._weights, *buffers))

    @property
    def _final_obs_recorded(self) -> bool:  # written by the stepper too
        return bool(self._status[0])

    @_final_obs_recorded.setter
    def _final_obs_recorded(self, value: bool) -> None:
        self._status[0] = value

    @property
    def call_hook(self):
        return self._call_hook

    @call_hook.setter
    def call_hook(self, hook) -> None:
        """A hook sees every native call: the stepper's fast path steps aside while one is set."""
        self._call_hook = hook
        if hasattr(self, "stepper"):
            self.stepper.enabled = hook is None

    @staticmethod
    def _address(array) -> int:
        return array.ctypes.data

    def reset(self, seed: int) -> None:
        self._prepare_reset(seed)
        self._status[1] = 0
        self._call(self.reset_entry, self._reset_fn, self._args_ref)

    def rollout(self, actions, num_steps: int, policy: int, seed: int, final_obs: bool = False) -> int:
        if actions is not None:
            actions = np.ascontiguousarray(actions, dtype=np.int32)
        self._prepare(actions, num_steps, policy, seed, final_obs)
        if self._call_hook is None:  # the stepper: no ctypes conversion per call
            return self.stepper.rollout(actions, num_steps, policy, final_obs)
        return self._call(self.rollout_entry, self._rollout_fn, self._args_ref)

    def step(self, actions, seed: int) -> None:
        self.rollout(actions, 1, native.POLICY_ACTIONS, seed, final_obs=True)

    def restart(self, mask, seed: int) -> None:
        mask = np.ascontiguousarray(mask, dtype=bool)  # a view of a bool array already contiguous
        self._prepare_restart(mask, seed)
        if self._call_hook is None:
            return self.stepper.restart(mask)
        self._call(self.restart_entry, self._restart_fn, self._args_ref)

    def rollout_actions(self, next_actions, num_steps: int, seed: int) -> int:
        """``num_steps`` one-step calls, each with the actions ``next_actions()`` returns (a
        policy outside the native code); returns the episodes finished."""
        return sum(self.rollout(next_actions(), 1, native.POLICY_ACTIONS, seed) for _ in range(num_steps))

    def collect(self, num_steps: int, seed: int) -> CollectedSteps:
        """``num_steps`` steps of every environment in ONE call (``fused_collect``), each action
        sampled from the softmax of the MLP on the current weights (``set_weights``), the draws
        keyed by (seed, env, episode, step in episode): cuda/mlp.cuh's mlp_sample_uniform."""
        bufs, t = self._prepare_collect(num_steps, seed, np)
        done = self._call("fused_collect", self._lib.fused_collect, self._args_ref, ctypes.pointer(t))
        return CollectedSteps(**bufs, episodes_finished=done)

    def obs(self) -> np.ndarray:
        return self.state[:, :STATE_SIZE].copy()

    def flags(self) -> np.ndarray:
        return self.flags_out.copy()

    def final_obs(self) -> np.ndarray:
        self.check_final_obs()
        return self.final_obs_out.copy()

    def set_state(self, states) -> None:
        self.state[...] = states

    def get_state(self) -> np.ndarray:
        return self.state.copy()

    def set_weights(self, weights: MLPWeights) -> None:
        self._check_mlp()
        self._weights[...] = native.pack_weights(weights)  # in place: the struct keeps its address

    def mlp_logits(self, obs) -> np.ndarray:
        self._check_mlp()
        obs = np.ascontiguousarray(obs, dtype=np.float32)
        out = np.empty((len(obs), 2), dtype=np.float32)
        self._call("fused_mlp_logits", self._lib.fused_mlp_logits, obs.ctypes.data, out.ctypes.data,
                   self._weights.ctypes.data, len(obs))
        return out

    def synchronize(self) -> None:
        """Nothing to wait for: every call returns when its work is done."""


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


def make_backend(device: str, pair: str, num_envs: int, state_factor: int, compute_factor: int,
                 params: CartPoleParams, weights: MLPWeights | None = None):
    """The backend of kernel pair ``pair`` for ``device`` ('cpu' or 'cuda')."""
    cls = CudaModuleBackend if device == "cuda" else CpuLibraryBackend
    return cls(pair, num_envs, state_factor, compute_factor, params, weights)
