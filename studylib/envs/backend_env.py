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

from ..arrays import TorchKind
from .base import VectorCartPole
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
