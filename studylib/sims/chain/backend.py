"""The chain's episodes in the C builds, as Python calls them: ``ChainNativeBackend`` (numpy buffers the
native code writes in place; reset, step, K-step rollouts with the hashed controls or the fused
Gaussian MLP policy, restart, observations) over ``native.py``'s libraries and ``ChainArgs``, and
``pack_policy`` (the policy's weights as the kernels read them). The ``cpp`` and ``fused``
implementations (studylib.envs.backend_env.NativeChainEnv) step the chain through it.
"""

from __future__ import annotations

import ctypes
import math
from typing import NamedTuple

import numpy as np

from ...errors import ConfigError, StudyError
from ...native.build import library
from .model import ChainParams, INVERTED_DOUBLE_PENDULUM
from .native import (HIDDEN, POLICY_CTRL, POLICY_HASH, POLICY_MLP, THREADS_PER_BLOCK, ChainArgs, ChainTrajectoryArgs,
                     _grid, _raise_for, check_links, params_array)


def pack_policy(weights, p: ChainParams) -> np.ndarray:
    """The Gaussian policy's MLP (``studylib.policy.MLPWeights`` of sizes (3n+3, 64, 64, 1)) as the
    C builds read it (cuda/mlp.cuh's layout, for any input width): w1 (3n+3, 64), b1 (64), w2
    (64, 64), b2 (64), w3 (64, 1), b3 (1), each row-major (x @ w + b), one float32 array."""
    shapes = ((p.observation_size, HIDDEN), (HIDDEN,), (HIDDEN, HIDDEN), (HIDDEN,), (HIDDEN, 1), (1,))
    arrays = [np.asarray(a, dtype=np.float32) for layer in weights.layers() for a in layer]
    for a, shape in zip(arrays, shapes):
        if a.shape != shape:
            raise ConfigError(f"the chain's policy (n = {p.links}) has layers of shapes {shapes}, got "
                              f"{tuple(b.shape for b in arrays)}")
    return np.ascontiguousarray(np.concatenate([a.ravel() for a in arrays]), dtype=np.float32)


def _check_steps(num_steps) -> None:
    """A K-step call's step count: an integer in [0, 2^31) (ChainArgs.num_steps is an int32)."""
    if isinstance(num_steps, bool) or not isinstance(num_steps, (int, np.integer)) or not 0 <= num_steps < 2**31:
        raise ConfigError(f"num_steps must be an integer >= 0, got {num_steps!r}")


class ChainTrajectory(NamedTuple):
    """T steps of N environments as ``ChainNativeBackend.collect`` writes them (cuda/chain_trajectory.h):
    obs (T, N, 3n+3) raw, before each step; actions (T, N) the unclipped samples; logp (T, N);
    reward (T, N); flags (T, N) uint8, bit 0 terminated, bit 1 truncated; final_obs (T, N, 3n+3)
    after each step's physics, before its same-step reset. Fresh arrays, the caller's to keep."""

    obs: np.ndarray
    actions: np.ndarray
    logp: np.ndarray
    reward: np.ndarray
    flags: np.ndarray
    final_obs: np.ndarray


class ChainNativeBackend:
    """``num_envs`` chains of ``params`` with episodes (``episode.advance``: v5's observation,
    reward, termination, truncation after max_episode_steps, the same-step reset to the hashed
    draws), in float32 numpy buffers the native code writes in place:

        state (N, 2(n+1)), elapsed (N,) int32, episode (N,) uint32, flags_out (N,) uint8 (bit 0
        terminated, bit 1 truncated), reward_out (N,) float32, final_obs_out (N, 3n+3) float32

    (flags, rewards and final observations of the last step taken). ``device``: "cpu" (the CPU
    build, chain_cpu) or "host-kernel" (the CUDA kernels built for the CPU: a slow test instrument).
    ``weights`` (``studylib.policy.mlp_weights(seed, sizes=(3n+3, 64, 64, 1))``) and ``log_std``:
    the Gaussian policy of ``rollout(policy="mlp")``, action clip(mean + exp(log_std) z, -1, 1),
    z = episode.policy_noise. The observations come from the native code (chain_observe), and
    ``obs()`` is that of the current state (after a reset: the new episode's first)."""

    DEVICES = ("cpu", "host-kernel")
    api = "ctypes"

    def _native(self, name: str, fn, *args):
        hook = self.call_hook
        return fn(*args) if hook is None else hook(name, fn, *args)

    def __init__(self, num_envs: int, params: ChainParams = INVERTED_DOUBLE_PENDULUM, weights=None,
                 log_std: float = 0.0, device: str = "cpu", generic: bool = False):
        check_links(params)
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 0:
            raise ConfigError(f"num_envs must be an integer >= 0, got {num_envs!r}")
        if device not in ChainNativeBackend.DEVICES:  # a subclass's device (cuda) sets up these host buffers first
            raise ConfigError(f"device must be one of {ChainNativeBackend.DEVICES}, got {device!r}")
        self.params, self.num_envs, self.device = params, int(num_envs), device
        n, N = params.links, int(num_envs)
        self.state = np.zeros((N, params.state_size), np.float32)
        self.elapsed = np.zeros(N, np.int32)
        self.episode = np.zeros(N, np.uint32)
        self.flags_out = np.zeros(N, np.uint8)
        self.reward_out = np.zeros(N, np.float32)
        self.final_obs_out = np.zeros((N, params.observation_size), np.float32)
        self._params = params_array(params)
        self._weights = None
        self._args = ChainArgs(state=self.state.ctypes.data, params=self._params.ctypes.data, n=N, links=n,
                               elapsed=self.elapsed.ctypes.data, episode=self.episode.ctypes.data,
                               flags_out=self.flags_out.ctypes.data, reward_out=self.reward_out.ctypes.data,
                               generic=int(generic))
        self.seed = 0
        # Profiling (studylib.harness.profiler), as the CartPole backends: every native call goes
        # through ``hook(name, fn, *args)`` when one is set; a K-step call's name ends "_rollout".
        self.call_hook = None
        if weights is not None:
            self.set_weights(weights, log_std)
        else:
            self.log_std = float(log_std)

    # -- configuration --
    def _check_weights(self) -> None:
        if self._weights is None:
            raise ConfigError("the MLP policy needs weights (set_weights)")

    def set_weights(self, weights, log_std: float) -> None:
        """The Gaussian policy: its MLP (sizes (3n+3, 64, 64, 1)) and log standard deviation."""
        self._weights = pack_policy(weights, self.params)
        self.log_std = float(log_std)
        self._args.weights = self._weights.ctypes.data
        self._args.action_std = math.exp(self.log_std)

    def _call(self, seed: int, policy: int, num_steps: int, ctrl=None, final_obs: bool = False, obs_out=None,
              reset_mask=None):
        a = self._args
        a.seed, a.policy, a.num_steps = int(seed) & 0xFFFFFFFF, policy, num_steps
        a.ctrl = None if ctrl is None else ctrl.ctypes.data
        a.final_obs = self.final_obs_out.ctypes.data if final_obs else None
        a.obs_out = None if obs_out is None else obs_out.ctypes.data
        a.reset_mask = None if reset_mask is None else reset_mask.ctypes.data
        return a

    def _host(self, entry: str, *extra):
        lib = library("chain_kernel_host")
        blocks = _grid(self.num_envs, THREADS_PER_BLOCK)
        error = getattr(lib, entry)(blocks, THREADS_PER_BLOCK, ctypes.byref(self._args), *extra) if blocks else None
        if error is not None:
            raise StudyError(f"host launch of {entry} (n = {self.params.links}) failed: {error.decode()}")

    # -- episodes --
    def reset(self, seed: int) -> None:
        """Every environment to episode 0's first state (the draws of ``seed``), counters zero."""
        self.seed = int(seed)
        self._call(seed, POLICY_CTRL, 0)
        if self.device == "cpu":
            _raise_for(self._native("chain_reset", library("chain_cpu").chain_reset, ctypes.byref(self._args)), "chain_reset")
        else:
            self._host("host_chain_reset")

    def restart(self, mask, seed: int) -> None:
        """The environments where ``mask`` to their next episode (the draw of episode + 1, elapsed 0,
        episode + 1); their final_obs_out rows become their new first observations."""
        mask = np.ascontiguousarray(mask, dtype=np.uint8)
        if mask.shape != (self.num_envs,):
            raise ConfigError(f"mask must have shape ({self.num_envs},), got {mask.shape}")
        self._call(seed, POLICY_CTRL, 0, final_obs=True, reset_mask=mask)
        if self.device == "cpu":
            _raise_for(self._native("chain_restart", library("chain_cpu").chain_restart, ctypes.byref(self._args)),
                       "chain_restart")
        else:
            self._host("host_chain_reset")
        self._args.reset_mask = None

    def _episodes(self, seed: int, num_steps: int, policy: int, ctrl=None, final_obs: bool = True) -> int:
        self._call(seed, policy, num_steps, ctrl, final_obs)
        if self.device == "cpu":
            # one native call of num_steps steps: named as the CartPole backends' K-step entry points
            done = self._native("chain_episodes_rollout", library("chain_cpu").chain_episodes, ctypes.byref(self._args))
            if done < 0:
                _raise_for(-done, "chain_episodes")
            return int(done)
        out = ctypes.c_ulonglong(0)
        self._host("host_chain_episodes", ctypes.byref(out))
        return int(out.value)

    def step(self, ctrl, seed: int) -> int:
        """One environment step with the controls ``ctrl`` (N,) (clipped by the actuator), final_obs
        recorded; returns the number of episodes that ended."""
        controls = np.ascontiguousarray(ctrl, dtype=np.float32)
        if controls.shape != (self.num_envs,):
            raise ConfigError(f"ctrl must have shape ({self.num_envs},), got {controls.shape}")
        return self._episodes(seed, 1, POLICY_CTRL, controls)

    def rollout(self, num_steps: int, policy: str = "none", seed: int = 0, final_obs: bool = True) -> int:
        """``num_steps`` environment steps in ONE native call, the controls hashed (policy "none":
        episode.hash_controls) or drawn from the fused Gaussian MLP policy ("mlp"); returns the
        number of episodes that ended. The last step's flags, rewards and (``final_obs``) final
        observations are written."""
        _check_steps(num_steps)
        if policy not in ("none", "mlp"):
            raise ConfigError(f"policy must be 'none' or 'mlp', got {policy!r}")
        if policy == "mlp":
            self._check_weights()
        return self._episodes(seed, int(num_steps), POLICY_MLP if policy == "mlp" else POLICY_HASH,
                              final_obs=final_obs)

    def _trajectory(self, num_steps, normalization, xp, address):
        """What a ``collect`` of ``num_steps`` steps writes into: the ``ChainTrajectory`` arrays
        (``xp.empty``: numpy here, CuPy's on the GPU), the ``ChainTrajectoryArgs`` pointing at them
        (``address``: an array's), and the normalization's shift and scale as ``xp`` arrays (kept
        alive by the caller while the call runs; empty without a normalization)."""
        _check_steps(num_steps)
        self._check_weights()
        T, N, d = int(num_steps), self.num_envs, self.params.observation_size
        shapes = ((T, N, d), (T, N), (T, N), (T, N), (T, N), (T, N, d))
        dtypes = (np.float32, np.float32, np.float32, np.float32, np.uint8, np.float32)
        traj = ChainTrajectory(*(xp.empty(shape, dtype=dtype) for shape, dtype in zip(shapes, dtypes)))
        t = ChainTrajectoryArgs(*(address(a) for a in traj), log_std=self.log_std)
        kept = []
        if normalization is not None:
            shift, scale, clip = normalization
            shift, scale = (np.ascontiguousarray(a, dtype=np.float32) for a in (shift, scale))
            if shift.shape != (d,) or scale.shape != (d,):
                raise ConfigError(f"the normalization's shift and scale must have shape ({d},), got "
                                  f"{shift.shape} and {scale.shape}")
            kept = [xp.asarray(shift), xp.asarray(scale)]
            t.obs_shift, t.obs_scale, t.obs_clip = address(kept[0]), address(kept[1]), float(clip)
        return traj, t, kept

    def collect(self, num_steps: int, seed: int, normalization=None) -> tuple[ChainTrajectory, int]:
        """``num_steps`` steps of the fused Gaussian MLP policy in ONE native call, every step
        recorded (``ChainTrajectory``): the trajectory a PPO update learns from. ``normalization``:
        None, or (shift, scale, clip), the policy then seeing clip((obs − shift) · scale, ±clip)
        (float32 (3n+3,) arrays, fixed for the call). Returns (the trajectory, the number of
        episodes that ended)."""
        traj, t, _kept = self._trajectory(num_steps, normalization, np, lambda a: a.ctypes.data)
        self._call(seed, POLICY_MLP, len(traj.obs))
        if self.device == "cpu":
            done = self._native("chain_collect_rollout", library("chain_cpu").chain_collect, ctypes.byref(self._args),
                                ctypes.byref(t))
            if done < 0:
                _raise_for(-done, "chain_collect")
            return traj, int(done)
        out = ctypes.c_ulonglong(0)
        self._host("host_chain_collect", ctypes.byref(t), ctypes.byref(out))
        return traj, int(out.value)

    def obs(self) -> np.ndarray:
        """(N, 3n+3): the observation of every environment's current state (chain_observe)."""
        out = np.empty((self.num_envs, self.params.observation_size), np.float32)
        self._call(self.seed, POLICY_CTRL, 0, obs_out=out)
        _raise_for(self._native("chain_observe", library("chain_cpu").chain_observe, ctypes.byref(self._args)),
                   "chain_observe")
        self._args.obs_out = None
        return out

    def policy_actions(self, seed: int) -> np.ndarray:
        """(N,): the MLP policy's actions at the current states and counters, from the fused
        rollout's own block function (chain_mlp_actions; CPU build): what ``rollout(policy="mlp")``
        would apply next with ``seed``."""
        self._check_weights()
        out = np.empty(self.num_envs, np.float32)
        self._call(seed, POLICY_MLP, 0, obs_out=out)
        _raise_for(library("chain_cpu").chain_mlp_actions(ctypes.byref(self._args)), "chain_mlp_actions")
        self._args.obs_out = None
        return out

    def get_state(self) -> np.ndarray:
        return self.state.copy()

    def set_state(self, states) -> None:
        states = np.asarray(states, dtype=np.float32)
        if states.shape != self.state.shape:
            raise ConfigError(f"states must have shape {self.state.shape}, got {states.shape}")
        self.state[...] = states
