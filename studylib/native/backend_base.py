"""What the native backends share (studylib/native/backends.py describes their interface): the
kernel pairs (``KernelPair``, ``PAIRS``), what ``collect`` returns (``CollectedSteps``), and the
base both backends derive from (``_NativeBackend``): the buffers the native code writes in place
(numpy or CuPy), the one ``RolloutArgs`` struct filled with them, the checks of a call's
arguments, and the call hook every native call goes through.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .. import native
from ..sims.cartpole import STATE_SIZE, CartPoleParams
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
