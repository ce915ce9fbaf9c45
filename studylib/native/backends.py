"""The native backends: calls into one pair of the CUDA kernel sources, on the CPU or the GPU.

A kernel pair is a CPU build and a CUDA kernel of the same logic:

``"cartpole"``
    cuda/cartpole_cpu.cpp and cuda/cartpole_kernel.cu (the ``cpp`` and ``cuda`` implementations).
``"fused"``
    cuda/fused_cpu.cpp and cuda/fused_kernel.cu (``fused``: the MLP and the simulation in one call).

Two sibling backends run either pair, with the same methods (each in its module; this one
re-exports them and picks one by device, ``make_backend``):

``CpuLibraryBackend``
    The CPU build through ctypes (studylib/native/build.py builds it; cpu_backend.py). Arrays are
    numpy, written in place; ``state`` can be shared without a copy (``torch.from_numpy``).
``CudaModuleBackend``
    The kernel through CuPy (NVRTC). Arrays are CuPy arrays on the GPU (cuda_backend.py).

What they share, the kernel pairs (``PAIRS``) and ``CollectedSteps``: backend_base.py.

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

from ..sims.cartpole import CartPoleParams
from ..policy import MLPWeights
from .backend_base import PAIRS, CollectedSteps, KernelPair
from .cpu_backend import CpuLibraryBackend
from .cuda_backend import KERNEL_OPTIONS, CudaModuleBackend

__all__ = ["KERNEL_OPTIONS", "PAIRS", "CollectedSteps", "CpuLibraryBackend", "CudaModuleBackend", "KernelPair",
           "make_backend"]


def make_backend(device: str, pair: str, num_envs: int, state_factor: int, compute_factor: int,
                 params: CartPoleParams, weights: MLPWeights | None = None):
    """The backend of kernel pair ``pair`` for ``device`` ('cpu' or 'cuda')."""
    cls = CudaModuleBackend if device == "cuda" else CpuLibraryBackend
    return cls(pair, num_envs, state_factor, compute_factor, params, weights)
