"""What cpp, cuda and fused share: stepping, resetting and restarting through ``self.backend``
(studylib/native/backends.py), and the arrays they hand out.

With ``arrays="numpy"`` the observations, flags and final observations are numpy copies of the
backend's buffers. With ``arrays="native"`` they are torch tensors over those very buffers, made
once (``torch.from_numpy`` on the CPU, ``torch.from_dlpack`` of the CuPy arrays on a GPU): a
step writes the state, flags and final observations in place, and the observations it returns
are a view of the state (the CartPole columns 0..3 of each row) and ``final_obs()`` a view of the final-observation
buffer: no copy, the same storage every step. Actions and restart masks cross the other way
without a copy when they already have the kernels' dtypes (int32 actions, bool masks). On a GPU
the kernels are launched on torch's current stream (CudaModuleBackend.stream_source), the stream
on which torch then reads those views.
"""

from __future__ import annotations

import numpy as np
import torch

from . import footprint
from ..arrays import TorchKind
from .base import VectorCartPole, VectorEnv
from ..errors import StudyError
from ..policy import GAUSSIAN_LOG_STD, gaussian_actions
from ..sims.cartpole import STATE_SIZE


class BackendCartPole(VectorCartPole):
    """A VectorCartPole whose subclass sets ``self.backend`` with ``_init_backend``."""

    def _native_kind(self):
        if self.device == "cpu":
            return TorchKind("cpu")
        import cupy as cp

        return TorchKind(f"cuda:{cp.cuda.Device().id}")  # where the CuPy buffers are allocated

    @property
    def seed(self) -> int:
        return self._seed

    @seed.setter
    def seed(self, value: int) -> None:
        """Also the backend's: the thin ``step`` reads it from the argument struct, not per call."""
        self._seed = value
        backend = getattr(self, "backend", None)
        if backend is not None:
            backend._args.seed = value

    def _init_backend(self, backend) -> None:
        self.backend = backend
        self.backend._args.seed = self.seed
        stepper = getattr(backend, "stepper", None)
        if stepper is not None and not self._native:
            # The thin path (cuda/step_binding.cpp): numpy actions of shape (N,) go straight to the
            # C++ step; anything else (and every call while a profiling hook is set) to the
            # checked Python path, so errors and behaviour stay those of VectorCartPole.step.
            stepper.set_fallbacks(VectorCartPole.step.__get__(self), None)
            self.step = stepper.step
        if not self._native:
            return
        on_cpu = self.device == "cpu"
        view = torch.from_numpy if on_cpu else torch.from_dlpack
        self._state_view = view(backend.state)
        self._obs_view = self._state_view[:, :STATE_SIZE]
        self._flags_view = view(backend.flags_out)
        self._final_obs_view = view(backend.final_obs_out)
        if on_cpu:
            self._to_backend = lambda t: t.numpy()
        else:
            import cupy as cp

            self._to_backend = cp.from_dlpack
            # The kernels run on torch's current stream, where torch reads these views: ordered
            # without an event, whatever stream torch is on (a side stream, per-thread defaults).
            device = self._state_view.device
            backend.stream_source = lambda: torch.cuda.current_stream(device)

    def _obs(self):
        return self._obs_view if self._native else self.backend.obs()

    def _reset(self):
        self.backend.reset(self.seed)
        return self._obs()

    def _step(self, actions):
        if self._native:
            actions = self._to_backend(actions.to(torch.int32).contiguous())  # no copy if int32 already
        self.backend.step(actions, self.seed)
        if self._native:
            flags = self._flags_view
            ones = torch.ones(self.num_envs, dtype=torch.float32, device=flags.device)
            return self._obs_view, ones, (flags & 1) != 0, (flags & 2) != 0
        flags = self.backend.flags()
        return self.backend.obs(), np.ones(self.num_envs, np.float32), (flags & 1).astype(bool), (flags & 2).astype(bool)

    def _restart(self, mask):
        self.backend.restart(self._to_backend(mask.contiguous()) if self._native else mask, self.seed)
        return self._obs()

    def final_obs(self):
        """Observations (N, 4) at the end of the last ``step``, before its same-step resets: a
        finished env's terminal observation; the others' equal what ``step`` returned (numpy, or
        with arrays="native" a view of the backend's buffer). StudyError if a reset or rollout
        came after that step."""
        if self._native:
            self.backend.check_final_obs()
            return self._final_obs_view
        return self.backend.final_obs()

    def _set_state(self, states):
        self.backend.set_state(states)

    def get_state(self):
        return self.backend.get_state()

    def synchronize(self):
        self.backend.synchronize()


class NativeChainEnv(VectorEnv):
    """What cpp, cuda and fused share for the n-link chain: on the device the record resolves, the C
    build of cuda/chain.cuh with v5's episode rules (``studylib.sims.chain.backend.ChainNativeBackend``:
    OpenMP across blocks of environments, SIMD lanes within one, the state in L1 across the K steps
    of a call) or, on a GPU, the same rules in cuda/chain_kernel.cu (``ChainCudaBackend``). A policy
    in the record's ``fused_policies`` runs K steps in ONE native call ("none": the hashed
    controls; fused's "mlp": the Gaussian MLP inside the same kernel); any other policy runs
    between one-step native calls, in PyTorch on the batch (cpp's "mlp": the paper's C++ row).
    With ``arrays="native"``: torch tensors over the backend's buffers (state, final observations)."""

    @classmethod
    def estimate_bytes(cls, num_envs, state_factor, params=None):
        return footprint.native_chain(num_envs, state_factor, params)

    def _native_kind(self):
        return TorchKind("cpu")  # on the GPU too: the arrays handed out are host copies, made once per call

    def __init__(self, settings):
        super().__init__(settings)
        from ..implspec import spec
        from ..sims.chain.episode import policy_noise
        from ..sims.chain.backend import ChainNativeBackend

        self._fused = spec(self.name).fused_policies
        self._noise = policy_noise
        self.log_std = GAUSSIAN_LOG_STD
        self.backend = self._make_backend(ChainNativeBackend)
        self._layers = [(torch.from_numpy(w), torch.from_numpy(b)) for w, b in self.policy_weights.layers()]
        self._env_index = np.arange(self.num_envs, dtype=np.uint32)
        self._reset()

    def _make_backend(self, cpu_backend):
        """The backend on ``self.device``: the C build, or on a GPU cuda/chain_kernel.cu through CuPy
        (``ChainCudaBackend``: the same rules, the fused MLP included, K steps per launch)."""
        if self.device == "cuda":
            from ..sims.chain.cuda_backend import ChainCudaBackend

            return ChainCudaBackend(self.num_envs, self.params, self.policy_weights, self.log_std)
        return cpu_backend(self.num_envs, self.params, self.policy_weights, self.log_std)

    def _out(self, array):
        return torch.from_numpy(array) if self._native else array

    def _reset(self):
        self.backend.reset(self.seed)
        self._stepped = False
        return self._out(self.backend.obs())

    def _step(self, actions):
        controls = actions.numpy() if self._native else actions
        self.backend.step(controls, self.seed)
        self._stepped = True
        flags = self.backend.flags_out
        obs, reward = self.backend.obs(), self.backend.reward_out.copy()
        if self._native:
            flags = torch.from_numpy(flags.copy())
            return torch.from_numpy(obs), torch.from_numpy(reward), (flags & 1) != 0, (flags & 2) != 0
        return obs, reward, (flags & 1).astype(bool), (flags & 2).astype(bool)

    def final_obs(self):
        if not self._stepped:
            raise StudyError("final_obs() needs a step first: none since the last reset or rollout")
        return self._out(self.backend.final_obs_out.copy())

    def _restart(self, mask):
        self.backend.restart(mask.numpy() if self._native else mask, self.seed)
        return self._out(self.backend.obs())

    def _set_state(self, states):
        self.backend.set_state(states)

    def get_state(self):
        return self.backend.get_state()

    def policy_actions(self) -> np.ndarray:
        """The Gaussian MLP's controls at the current observations, in PyTorch on the batch (the
        policy of cpp's "mlp" rows: outside the native code, as the paper's C++ row)."""
        b = self.backend
        with torch.inference_mode():
            noise = torch.from_numpy(self._noise(self.seed, self._env_index, b.episode, b.elapsed))
            return gaussian_actions(self._layers, torch.from_numpy(b.obs()), noise, self.log_std, torch).numpy()

    def _rollout(self, num_steps, policy):
        self._stepped = False
        if policy in self._fused:
            return self.backend.rollout(num_steps, policy, self.seed)  # all K steps in one native call
        return sum(self.backend.step(self.policy_actions(), self.seed) for _ in range(num_steps))
