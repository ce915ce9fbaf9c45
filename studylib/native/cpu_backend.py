"""``CpuLibraryBackend``: a kernel pair's CPU build (cuda/*_cpu.cpp) called through ctypes on numpy
arrays written in place, with the thin per-call path of cuda/step_binding.cpp (``native.step_binding``)
for ``rollout``, ``step`` and ``restart`` while no call hook is set.
"""

from __future__ import annotations

import ctypes

import numpy as np

from .. import native
from ..sims.cartpole import STATE_SIZE, CartPoleParams
from ..policy import MLPWeights
from .backend_base import PAIRS, CollectedSteps, _NativeBackend


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
