"""``ChainCudaBackend``: the chain's CUDA kernels (cuda/chain_kernel.cu) compiled by CuPy (NVRTC,
the options of CartPole's kernels) and launched on device buffers, one thread per environment,
K environment steps per launch: the ``cuda`` implementation of the chain.

It has ``ChainNativeBackend``'s methods and host buffers (``state``, ``elapsed``, ``episode``,
``flags_out``, ``reward_out``, ``final_obs_out``): every launch works on the device copies, and
the per-environment results a caller reads after a call (flags, rewards, counters, final
observations) are copied back at their first read, so a K-step rollout costs one launch and one
copy of its episode count. Observations and the MLP's actions of the current states (``obs``,
``policy_actions``) are computed by the CPU build on the host copies (the same chain.cuh code):
they serve the step-at-a-time API, not the fused rollout. CuPy is imported when a backend is
made, never at import. The launch logic (which kernel, its arguments by value, the grid) is tested
through the host build of the same kernels (tests/test_chain_cuda_backend.py).
"""

from __future__ import annotations

import numpy as np

from ...errors import ConfigError
from ...native.sources import CHAIN_KERNEL_SOURCE, source_with_header_digest
from .backend import ChainNativeBackend, ChainTrajectory
from .model import INVERTED_DOUBLE_PENDULUM, ChainParams
from .native import (
    POLICY_CTRL,
    POLICY_MLP,
    THREADS_PER_BLOCK,
    ChainTrajectoryArgs,
    _grid,
    unrolled_links,
)


def _by_value(struct) -> np.ndarray:
    """A ctypes struct as a kernel parameter passed by value (CuPy sends a size-one numpy array of
    the struct's dtype as its bytes): a view, so fields set before the launch are what it sends."""
    return np.frombuffer(struct, dtype=np.dtype(type(struct)))


def kernel_build(p: ChainParams, generic: bool = False) -> str:
    """The suffix of the kernels that step ``p`` (chain_kernel.cu: an unrolled n, else the
    run-time-n build "generic"), as ch_build_of chooses on the host."""
    return str(p.links) if p.links in unrolled_links() and not generic else "generic"


# the per-environment results a launch writes on the device: copied back when first read, so a
# K-step rollout moves only its episode count to the host (a copy of every result per call held
# cuda at K = 1 below jax's rate at N = 2^16 on an H200)
RESULTS = ("elapsed", "episode", "flags_out", "reward_out", "final_obs_out")


def _copied_back_when_read(name: str) -> property:
    def get(self):
        if name in self._stale:
            self._pull(name)
        return self._host[name]

    def put(self, value):
        self._host[name] = value

    return property(get, put, doc=f"``{name}`` on the host, copied from the device at the first read after a launch")


class ChainCudaBackend(ChainNativeBackend):
    """The chain's kernels on the GPU through CuPy (``cupy``: the module, for the tests' stand-in;
    None: ``import cupy``). Callers check that a device exists first (studylib.devices)."""

    DEVICES = ("cuda",)
    api = "cupy.RawKernel"
    elapsed, episode, flags_out, reward_out, final_obs_out = (_copied_back_when_read(n) for n in RESULTS)

    def __init__(self, num_envs: int, params: ChainParams = INVERTED_DOUBLE_PENDULUM, weights=None,
                 log_std: float = 0.0, device: str = "cuda", generic: bool = False, cupy=None):
        if device != "cuda":
            raise ConfigError(f"device must be 'cuda', got {device!r}")
        if cupy is None:
            import cupy
        self._cp = cp = cupy
        self._dev = {}  # device copies of the host buffers, by name
        self._host, self._stale = {}, set()  # RESULTS' host buffers; those a launch has left behind the device's
        super().__init__(num_envs, params, weights=None, log_std=log_std, device="cpu", generic=generic)
        self.device = "cuda"
        for name in ("state", *RESULTS):
            self._dev[name] = cp.asarray(getattr(self, name))
        self._dev["params"] = cp.asarray(self._params)
        self._done = cp.zeros(1, dtype=cp.uint64)
        self._host_args = self._args  # the CPU build's (obs, policy_actions): host pointers
        self._args = type(self._args).from_buffer_copy(self._host_args)
        a = self._args
        a.state, a.params, a.elapsed, a.episode = (self._ptr(self._dev[k]) for k in ("state", "params", "elapsed", "episode"))
        a.flags_out, a.reward_out = self._ptr(self._dev["flags_out"]), self._ptr(self._dev["reward_out"])
        a.weights = None  # set_weights: the device copy
        self._module = cp.RawModule(code=source_with_header_digest(CHAIN_KERNEL_SOURCE),
                                    options=(f"-I{CHAIN_KERNEL_SOURCE.parent}", "--std=c++17"))
        self._build = kernel_build(params, generic)
        self._grid = (_grid(self.num_envs, THREADS_PER_BLOCK),)
        if weights is not None:
            self.set_weights(weights, log_std)

    @staticmethod
    def _ptr(array) -> int:
        return array.data.ptr

    def _launch(self, kernel: str, *extra) -> None:
        if self.num_envs:
            fn = self._module.get_function(kernel)
            self._native(kernel, fn, self._grid, (THREADS_PER_BLOCK,), (_by_value(self._args), *extra))

    def _pull(self, *names) -> None:
        """The device buffers ``names`` into their host copies, now."""
        for name in names:
            self._stale.discard(name)
            host = self._host[name] if name in self._host else getattr(self, name)
            host[...] = self._cp.asnumpy(self._dev[name])

    def _later(self, *names) -> None:
        """The device buffers ``names`` changed: their host copies follow at their next read."""
        self._stale.update(names)

    def _set_call(self, seed: int, policy: int, num_steps: int, final_obs: bool = False) -> None:
        a = self._args
        a.seed, a.policy, a.num_steps = int(seed) & 0xFFFFFFFF, policy, num_steps
        a.ctrl = a.obs_out = a.reset_mask = None
        a.final_obs = self._ptr(self._dev["final_obs_out"]) if final_obs else None

    # -- configuration --
    def set_weights(self, weights, log_std: float) -> None:
        self._on_host(super().set_weights, weights, log_std)  # the packed host copy, for policy_actions
        self._dev["weights"] = self._cp.asarray(self._weights)
        self._args.weights = self._ptr(self._dev["weights"])
        self._args.action_std = self._host_args.action_std

    def set_state(self, states) -> None:
        super().set_state(states)
        self._dev["state"][...] = self._cp.asarray(self.state)

    def get_state(self) -> np.ndarray:
        self._pull("state")
        return self.state.copy()

    # -- episodes --
    def reset(self, seed: int) -> None:
        self.seed = int(seed)
        self._set_call(seed, POLICY_CTRL, 0)
        self._launch("chain_reset_generic")
        self._later("elapsed", "episode")  # the state: when read (obs, get_state, policy_actions)

    def restart(self, mask, seed: int) -> None:
        mask = np.ascontiguousarray(mask, dtype=np.uint8)
        if mask.shape != (self.num_envs,):
            raise ConfigError(f"mask must have shape ({self.num_envs},), got {mask.shape}")
        device_mask = self._cp.asarray(mask)
        self._set_call(seed, POLICY_CTRL, 0, final_obs=True)
        self._args.reset_mask = self._ptr(device_mask)
        self._launch("chain_reset_generic")
        self._args.reset_mask = None
        self._later("elapsed", "episode", "final_obs_out")

    def _episodes(self, seed: int, num_steps: int, policy: int, ctrl=None, final_obs: bool = True) -> int:
        self._set_call(seed, policy, num_steps, final_obs)
        device_ctrl = None if ctrl is None else self._cp.asarray(ctrl)
        if device_ctrl is not None:
            self._args.ctrl = self._ptr(device_ctrl)
        self._done.fill(0)
        if policy == POLICY_MLP:
            self._launch(f"chain_episodes_mlp_{self._build}", _by_value(ChainTrajectoryArgs()), self._done)
        else:
            self._launch(f"chain_episodes_{self._build}", self._done)
        self._later("elapsed", "episode", "flags_out", "reward_out", *(("final_obs_out",) if final_obs else ()))
        return int(self._cp.asnumpy(self._done)[0])  # the one copy a call makes: its episode count

    def collect(self, num_steps: int, seed: int, normalization=None) -> tuple[ChainTrajectory, int]:
        cp = self._cp
        traj, t, _kept = self._trajectory(num_steps, normalization, cp, self._ptr)
        self._set_call(seed, POLICY_MLP, len(traj.obs))
        self._done.fill(0)
        self._launch(f"chain_episodes_mlp_{self._build}", _by_value(t), self._done)
        self._later("elapsed", "episode", "flags_out", "reward_out")
        return ChainTrajectory(*(cp.asnumpy(b) for b in traj)), int(cp.asnumpy(self._done)[0])

    def obs(self) -> np.ndarray:
        self._pull("state", "elapsed", "episode")
        return self._on_host(super().obs)

    def policy_actions(self, seed: int) -> np.ndarray:
        self._pull("state", "elapsed", "episode")
        return self._on_host(super().policy_actions, seed)

    def _on_host(self, method, *args):
        """A ChainNativeBackend method on the CPU build, over the host copies."""
        device_args, self._args = self._args, self._host_args
        try:
            return method(*args)
        finally:
            self._args = device_args

    def synchronize(self) -> None:
        self._cp.cuda.runtime.deviceSynchronize()


__all__ = ["ChainCudaBackend", "kernel_build"]
