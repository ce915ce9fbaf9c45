"""The data layouts Python shares with every build, CPU and CUDA: ``RolloutArgs`` (the one argument
of every rollout, reset and restart entry point, a ctypes twin of cuda/rollout_args.h),
``TrajectoryArgs`` (where ``fused_collect`` writes its trajectory, cuda/trajectory_args.h),
``sample_uniforms`` (that entry point's action draws, reproduced), ``params_array`` (the physics
constants), ``pack_weights`` (the MLP), and each library's C signatures (``_declare_*``)."""

from __future__ import annotations

import ctypes

import numpy as np

from ..sims.cartpole import CARTPOLE_V1, CartPoleParams
from ..policy import MLPWeights


# Where a rollout's actions come from: CP_POLICY_* of cuda/rollout_args.h.
POLICY_ACTIONS, POLICY_MLP, POLICY_HASH = 0, 1, 2


class RolloutArgs(ctypes.Structure):
    """``struct RolloutArgs`` of cuda/rollout_args.h, field for field: the one argument of every
    rollout, reset and restart entry point (by pointer on the CPU, by value in the CUDA kernels).
    Pointers are addresses (host for the CPU builds, device for the kernels); None is a null pointer.
    ``rollout_args_layout`` in each CPU library reports the C++ layout; tests/test_native.py
    compares it with this one."""

    _fields_ = [
        ("state", ctypes.c_void_p),
        ("elapsed", ctypes.c_void_p),
        ("episode", ctypes.c_void_p),
        ("actions", ctypes.c_void_p),
        ("flags_out", ctypes.c_void_p),
        ("final_obs", ctypes.c_void_p),
        ("params", ctypes.c_void_p),
        ("weights", ctypes.c_void_p),
        ("episodes_done", ctypes.c_void_p),
        ("reset_mask", ctypes.c_void_p),
        ("n", ctypes.c_longlong),
        ("max_episode_steps", ctypes.c_int32),
        ("state_factor", ctypes.c_int32),
        ("compute_factor", ctypes.c_int32),
        ("num_steps", ctypes.c_int32),
        ("seed", ctypes.c_uint32),
        ("policy", ctypes.c_int32),
    ]


def struct_layout(struct) -> list[int]:
    """[sizeof, offset of each field in order] of a ctypes Structure: what a C++ ``*_layout``
    entry reports for its twin (every native struct's check: RolloutArgs, TrajectoryArgs, the chain's)."""
    return [ctypes.sizeof(struct), *(getattr(struct, name).offset for name, _ in struct._fields_)]


def rollout_args_layout() -> list[int]:
    """``struct_layout`` of this ctypes ``RolloutArgs``: what the C++ ``rollout_args_layout``
    reports for its struct."""
    return struct_layout(RolloutArgs)


class TrajectoryArgs(ctypes.Structure):
    """``struct TrajectoryArgs`` of cuda/trajectory_args.h, field for field: where ``fused_collect``
    writes a T-step trajectory (step-major (T, n) and (T, n, 4) arrays). ``trajectory_args_layout``
    in the fused library reports the C++ layout; tests/test_collect.py compares it with this one."""

    _fields_ = [
        ("obs", ctypes.c_void_p),
        ("actions", ctypes.c_void_p),
        ("logp", ctypes.c_void_p),
        ("flags", ctypes.c_void_p),
        ("final_obs", ctypes.c_void_p),
    ]


def trajectory_args_layout() -> list[int]:
    """``struct_layout`` of this ctypes ``TrajectoryArgs``."""
    return struct_layout(TrajectoryArgs)


SAMPLE_SALT = 0x3C6EF372  # MLP_SAMPLE_SALT of cuda/mlp.cuh: keys fused_collect's action draws


def sample_uniforms(seed: int, env: np.ndarray, episode: np.ndarray, elapsed: np.ndarray) -> np.ndarray:
    """The uniforms fused_collect draws its actions with (mlp_sample_uniform), bit for bit: float32
    in [0, 1) from hash4(seed ^ SAMPLE_SALT, env, episode, step in episode)."""
    from ..episodes import hash4

    u32 = np.uint32
    env, episode, elapsed = (np.asarray(a).astype(u32) for a in (env, episode, elapsed))
    seeds = np.full(env.shape, (seed ^ SAMPLE_SALT) & 0xFFFFFFFF, dtype=u32)
    return (hash4(seeds, env, episode, elapsed) >> u32(8)).astype(np.float32) * np.float32(1.0 / 16777216.0)


def by_value(args: RolloutArgs) -> np.ndarray:
    """``args`` as a CUDA kernel parameter passed by value: CuPy's RawKernel sends a numpy array
    of size one as the bytes of the parameter (its documented way to pass structs). The array is
    a view of ``args`` (no copy): fields set on ``args`` before a launch are what it sends."""
    return np.frombuffer(args, dtype=np.dtype(RolloutArgs))


def _declare_common(lib: ctypes.CDLL, prefix: str) -> None:
    args = ctypes.POINTER(RolloutArgs)
    getattr(lib, f"{prefix}_rollout").restype = ctypes.c_longlong
    getattr(lib, f"{prefix}_rollout").argtypes = [args]
    for entry in ("reset", "restart"):
        getattr(lib, f"{prefix}_{entry}").restype = None
        getattr(lib, f"{prefix}_{entry}").argtypes = [args]
    lib.rollout_args_layout.restype = ctypes.c_int
    lib.rollout_args_layout.argtypes = [ctypes.POINTER(ctypes.c_longlong), ctypes.c_int]


def _declare_cartpole(lib: ctypes.CDLL) -> None:
    _declare_common(lib, "cartpole")


def _declare_fused(lib: ctypes.CDLL) -> None:
    _declare_common(lib, "fused")
    p = ctypes.c_void_p
    lib.fused_mlp_logits.restype = None
    lib.fused_mlp_logits.argtypes = [p, p, p, ctypes.c_longlong]  # obs (n, 4), logits (n, 2), weights, n
    lib.fused_collect.restype = ctypes.c_longlong
    lib.fused_collect.argtypes = [ctypes.POINTER(RolloutArgs), ctypes.POINTER(TrajectoryArgs)]
    lib.trajectory_args_layout.restype = ctypes.c_int
    lib.trajectory_args_layout.argtypes = [ctypes.POINTER(ctypes.c_longlong), ctypes.c_int]


def _declare_kernel_host(lib: ctypes.CDLL, prefix: str, entries) -> None:
    """host_<entry>(grid, block, ...) -> null or the reason the launch failed (cuda_host.h)."""
    launch = [ctypes.c_uint, ctypes.c_uint]
    for entry in entries:
        fn = getattr(lib, f"host_{prefix}_{entry}")
        fn.restype = ctypes.c_char_p
        fn.argtypes = [*launch, ctypes.POINTER(RolloutArgs)]
    if prefix == "fused":
        lib.host_fused_collect.argtypes = [*launch, ctypes.POINTER(RolloutArgs), ctypes.POINTER(TrajectoryArgs)]
        lib.host_fused_mlp_logits.restype = ctypes.c_char_p
        lib.host_fused_mlp_logits.argtypes = [*launch, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                              ctypes.c_longlong]


def _declare_cartpole_kernel_host(lib: ctypes.CDLL) -> None:
    _declare_kernel_host(lib, "cartpole", ("rollout", "reset", "restart"))


def _declare_fused_kernel_host(lib: ctypes.CDLL) -> None:
    _declare_kernel_host(lib, "fused", ("rollout", "rollout_no_mlp", "reset", "restart", "collect"))


def _declare_fma_peak(lib: ctypes.CDLL) -> None:
    lib.fma_peak.restype = ctypes.c_float
    lib.fma_peak.argtypes = [ctypes.c_longlong]  # iterations
    lib.fma_peak_flops.restype = ctypes.c_double
    lib.fma_peak_flops.argtypes = [ctypes.c_longlong]  # iterations -> flops of one fma_peak call
    lib.fma_peak_accumulators.restype = ctypes.c_int
    lib.fma_peak_accumulators.argtypes = []  # independent FMA chains per thread (ACC)
    lib.fma_peak_width.restype = ctypes.c_int
    lib.fma_peak_width.argtypes = []  # floats per SIMD vector (W)



def params_array(p: CartPoleParams = CARTPOLE_V1) -> np.ndarray:
    """The float fields of ``struct CartPoleParams`` in header order (cp_params_from_array)."""
    return np.array(
        [p.gravity, p.masscart, p.masspole, p.total_mass, p.length, p.polemass_length,
         p.force_mag, p.tau, p.x_threshold, p.theta_threshold_radians],
        dtype=np.float32,
    )


def pack_weights(weights: MLPWeights) -> np.ndarray:
    """The MLP as one float32 array in cuda/mlp.cuh's layout: w1, b1, w2, b2, w3, b3, each
    row-major (w_i has shape (fan_in, fan_out), as in studylib.policy)."""
    return np.ascontiguousarray(np.concatenate([a.ravel() for layer in weights.layers() for a in layer]),
                                dtype=np.float32)

