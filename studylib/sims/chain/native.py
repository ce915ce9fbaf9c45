"""The n-link chain's C/CUDA builds (cuda/chain.cuh): ``studylib.sims.chain``'s dynamics and
episode step (``episode.advance``) in float32, stepped N environments at a time on the CPU
(library ``chain_cpu``: OpenMP across blocks of environments, SIMD lanes within one) and by the
CUDA kernels ``cuda/chain_kernel.cu`` (one thread per environment), whose host build (library
``chain_kernel_host``, cuda/cuda_host.h) runs them on the CPU for the tests. Every n from 1 to
MAX_LINKS (32): n = 1 .. 8 unrolled (``unrolled_links``), the others through the run-time-n build.

Importing this module (``studylib.native`` does) registers the two libraries in
``studylib.native.LIBRARIES`` (built and loaded like the others: ``studylib.native.library("chain_cpu")``)
and declares their ctypes signatures; it holds ``ChainArgs`` (the ctypes twin of
cuda/chain_args.h), ``params_array`` (the constants, computed here in float64 as dynamics.py folds
them and rounded once), ``hash_ctrl`` (the physics-only rollout's hashed controls, bit for bit) and
the calls:

* physics only: ``rollout`` (K environment steps), ``physics_step`` (mj_steps, the scalar path)
  and ``host_rollout`` (the kernel on the CPU), with ``call_rollout`` for a caller-filled ChainArgs;
* episodes: ``studylib.sims.chain.backend.ChainNativeBackend`` (reset, step, K-step rollouts with
  the hashed controls or the fused Gaussian MLP policy, restart, observations), on the CPU build
  or the kernels' host build.
"""

from __future__ import annotations

import ctypes
import math

import numpy as np

from ...errors import ConfigError, StudyError
from . import dynamics as sim
from .model import ChainParams, INVERTED_DOUBLE_PENDULUM
from ...native.abi import struct_layout
from ...native.build import LIBRARIES, NativeLibrary, library, reported_layout
from ...native.sources import (CHAIN_ARGS_HEADER, CHAIN_CPU_LANES_HEADER, CHAIN_CPU_SOURCE, CHAIN_EPISODE_HEADER, CHAIN_HEADER,
                               CHAIN_KERNEL_HOST_SOURCE, CHAIN_KERNEL_SOURCE, CHAIN_TRAJECTORY_HEADER, HEADER,
                               HOST_SHIM_HEADER, MLP_HEADER)

# Where an environment's controls come from: CH_POLICY_* of cuda/chain.cuh.
POLICY_CTRL, POLICY_MLP, POLICY_HASH = 0, 1, 2
CTRL_SALT = 0x6A09E667  # CH_CTRL_SALT (episode.CONTROL_SALT)
NUM_SCALAR_PARAMS = 18  # CH_NUM_SCALAR_PARAMS
THREADS_PER_BLOCK = 128  # the kernel's launch shape (host build and, later, CuPy)
HIDDEN = 64  # the policy MLP's hidden width (cuda/mlp.cuh MLP_HIDDEN)


class ChainArgs(ctypes.Structure):
    """``struct ChainArgs`` of cuda/chain_args.h, field for field (``chain_args_layout`` in the
    CPU library reports the C++ layout; the tests compare)."""

    _fields_ = [
        ("state", ctypes.c_void_p),
        ("ctrl", ctypes.c_void_p),
        ("params", ctypes.c_void_p),
        ("n", ctypes.c_longlong),
        ("elapsed", ctypes.c_void_p),
        ("episode", ctypes.c_void_p),
        ("flags_out", ctypes.c_void_p),
        ("reward_out", ctypes.c_void_p),
        ("final_obs", ctypes.c_void_p),
        ("weights", ctypes.c_void_p),
        ("reset_mask", ctypes.c_void_p),
        ("obs_out", ctypes.c_void_p),
        ("links", ctypes.c_int32),
        ("num_steps", ctypes.c_int32),
        ("seed", ctypes.c_uint32),
        ("first_step", ctypes.c_uint32),
        ("policy", ctypes.c_int32),
        ("action_std", ctypes.c_float),
        ("generic", ctypes.c_int32),
        ("reserved", ctypes.c_int32),
    ]


class ChainTrajectoryArgs(ctypes.Structure):
    """``struct ChainTrajectoryArgs`` of cuda/chain_trajectory.h: where ``chain_collect`` writes a
    trajectory of T steps (step-major arrays) and the normalization the policy sees
    (``chain_trajectory_layout`` reports the C++ layout; the tests compare)."""

    _fields_ = [
        ("obs", ctypes.c_void_p),
        ("actions", ctypes.c_void_p),
        ("logp", ctypes.c_void_p),
        ("reward", ctypes.c_void_p),
        ("flags", ctypes.c_void_p),
        ("final_obs", ctypes.c_void_p),
        ("obs_shift", ctypes.c_void_p),
        ("obs_scale", ctypes.c_void_p),
        ("obs_clip", ctypes.c_float),
        ("log_std", ctypes.c_float),
    ]


def chain_args_layout() -> list[int]:
    return struct_layout(ChainArgs)


def trajectory_args_layout() -> list[int]:
    return struct_layout(ChainTrajectoryArgs)


def _declare_chain_cpu(lib: ctypes.CDLL) -> None:
    args = ctypes.POINTER(ChainArgs)
    for name in ("chain_rollout", "chain_reset", "chain_restart", "chain_observe", "chain_mlp_actions"):
        getattr(lib, name).restype = ctypes.c_int
        getattr(lib, name).argtypes = [args]
    lib.chain_episodes.restype = ctypes.c_longlong  # episodes finished, or -(error code)
    lib.chain_episodes.argtypes = [args]
    lib.chain_collect.restype = ctypes.c_longlong  # episodes finished, or -(error code)
    lib.chain_collect.argtypes = [args, ctypes.POINTER(ChainTrajectoryArgs)]
    lib.chain_physics_step.restype = ctypes.c_int
    lib.chain_physics_step.argtypes = [args, ctypes.c_int]  # mj_steps
    lib.chain_links.restype = ctypes.c_int
    lib.chain_links.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    lib.chain_max_links.restype = ctypes.c_int
    lib.chain_max_links.argtypes = []
    lib.chain_num_param_floats.restype = ctypes.c_int
    lib.chain_num_param_floats.argtypes = [ctypes.c_int]
    u = ctypes.c_uint
    lib.chain_hash_ctrl.restype = ctypes.c_float
    lib.chain_hash_ctrl.argtypes = [u, u, u, u]  # seed, env, episode, elapsed
    lib.chain_uniform.restype = ctypes.c_float
    lib.chain_uniform.argtypes = [u, u, u, u, u]  # salt, seed, env, episode, component
    lib.chain_policy_noise.restype = ctypes.c_float
    lib.chain_policy_noise.argtypes = [u, u, u, u]
    lib.chain_error_message.restype = ctypes.c_char_p
    lib.chain_error_message.argtypes = [ctypes.c_int]
    for name in ("chain_args_layout", "chain_trajectory_layout"):
        getattr(lib, name).restype = ctypes.c_int
        getattr(lib, name).argtypes = [ctypes.POINTER(ctypes.c_longlong), ctypes.c_int]


def _declare_chain_kernel_host(lib: ctypes.CDLL) -> None:
    args = ctypes.POINTER(ChainArgs)
    lib.host_chain_rollout.restype = ctypes.c_char_p
    lib.host_chain_rollout.argtypes = [ctypes.c_uint, ctypes.c_uint, args]
    lib.host_chain_episodes.restype = ctypes.c_char_p  # null, or why the launch failed
    lib.host_chain_episodes.argtypes = [ctypes.c_uint, ctypes.c_uint, args, ctypes.POINTER(ctypes.c_ulonglong)]
    lib.host_chain_reset.restype = ctypes.c_char_p  # chain_reset_envs: reset (mask null) or restart
    lib.host_chain_reset.argtypes = [ctypes.c_uint, ctypes.c_uint, args]
    lib.host_chain_collect.restype = ctypes.c_char_p
    lib.host_chain_collect.argtypes = [ctypes.c_uint, ctypes.c_uint, args, ctypes.POINTER(ChainTrajectoryArgs),
                                       ctypes.POINTER(ctypes.c_ulonglong)]


# Registered beside build.py's own (same compiler, flags and cache; the key hashes every file listed).
# -mprefer-vector-width=512: GCC's -march=native on AVX-512 CPUs vectorizes with 256-bit vectors
# unless asked; the chain's lane loop (16 lanes, one zmm) then runs 16 % (n = 2) to 32 % (n = 8)
# faster, measured on this 2-core AVX-512 Xeon (median of 5 alternating rounds, N = 4096, K = 100).
# A CPU without AVX-512 ignores it. -O2 (after CXXFLAGS' -O3, so it wins): the library compiles in
# half the time (10 s at once in two parts, 22 s of CPU; 23 s and 45 s at -O3, g++ 12 on this
# 2-core AMD Zen 5) and runs nearly as fast (benchmarks/chain_opt_level.py: the two builds
# alternated in one process, N = 4096, median of 15 rounds, two runs): -O2 / -O3 0.98-1.00x without
# a policy at n = 1, 2, 4, 8; 0.97-1.01x with the MLP (fused), n = 4 the slowest at 0.97x in both
# runs; 1.27-1.28x for the run-time-n build (n = 12). The two parts: the builds dealt between them
# (cuda/chain_cpu.cpp).
LIBRARIES.setdefault("chain_cpu", NativeLibrary(
    "chain_cpu", CHAIN_CPU_SOURCE,
    (HEADER, CHAIN_HEADER, CHAIN_EPISODE_HEADER, CHAIN_ARGS_HEADER, CHAIN_TRAJECTORY_HEADER, MLP_HEADER,
     CHAIN_CPU_LANES_HEADER),
    _declare_chain_cpu,
    ("-mprefer-vector-width=512", "-O2"), parts=2))
LIBRARIES.setdefault("chain_kernel_host", NativeLibrary(
    "chain_kernel_host", CHAIN_KERNEL_HOST_SOURCE,
    (HOST_SHIM_HEADER, CHAIN_KERNEL_SOURCE, HEADER, CHAIN_HEADER, CHAIN_EPISODE_HEADER, CHAIN_ARGS_HEADER,
     CHAIN_TRAJECTORY_HEADER, MLP_HEADER),
    # -O0 (after CXXFLAGS' -O3, so it wins): this build only checks the kernels' logic, on a few
    # dozen environments, to the tests' float32 tolerances (no FMAs are formed at -O0), never their
    # speed. Its compile took 22 s of one core at -O3 (the tests' largest), 11 s at -O1, 2 s at -O0.
    _declare_chain_kernel_host, ("-O0",)))


def unrolled_links() -> tuple[int, ...]:
    """The n the builds unroll (CH_FOR_EACH_LINKS of cuda/chain.cuh), asked of the library; every
    other n up to ``max_links()`` runs the run-time-n build."""
    lib = library("chain_cpu")
    out = (ctypes.c_int * 64)()
    count = lib.chain_links(out, 64)
    return tuple(out[:min(count, 64)])


def max_links() -> int:
    """The longest chain the builds step (CH_MAX_LINKS: model.MAX_LINKS)."""
    return library("chain_cpu").chain_max_links()


def instantiated_links() -> tuple[int, ...]:
    """Every n the builds step: 1 .. ``max_links()`` (the unrolled ones and the run-time-n build's)."""
    return tuple(range(1, max_links() + 1))


def library_layout(entry: str = "chain_args_layout") -> list[int]:
    """The C++ layout a struct's layout entry reports (``chain_args_layout``, ``chain_trajectory_layout``)."""
    return reported_layout("chain_cpu", entry)


def params_array(p: ChainParams = INVERTED_DOUBLE_PENDULUM) -> np.ndarray:
    """struct ChainParams<n> as ch_params_from_array reads it: the primaries and the constants
    dynamics.py folds (``_constants``; 1 / sqrt(M_xx), cholesky_solve's; ½ h, h / 6, h / 3, _rk4's;
    n L / 1.2, is_terminated's; n L + TARGET_ABOVE_TIP, reward's), each computed in float64 exactly as
    dynamics.py computes it, then rounded once to float32."""
    fs = p.frame_skip
    if isinstance(fs, bool) or not isinstance(fs, int) or not 0 <= fs < 2**24:
        raise ConfigError(f"frame_skip must be an integer in [0, 2^24), got {fs!r}")
    steps = p.max_episode_steps
    if isinstance(steps, bool) or not isinstance(steps, int) or not 0 <= steps < 2**24:
        raise ConfigError(f"max_episode_steps must be an integer in [0, 2^24), got {steps!r}")
    beta, diag, m_total, gravity_x = sim._constants(p)
    h, L = p.timestep, p.link_length
    scalars = [L, p.damping, p.gear, h, p.gravity[0], p.gravity[2], m_total, gravity_x,
               1.0 / math.sqrt(m_total), 0.5 * h, h / 6, h / 3, float(fs), float(p.links),
               p.length / 1.2, p.length + sim.TARGET_ABOVE_TIP, p.healthy_reward, float(steps)]
    assert len(scalars) == NUM_SCALAR_PARAMS
    return np.array([*scalars, *beta, *diag, *(L * b for b in beta)], dtype=np.float32)


CTRL_UNIT = 1.0 / 8388608.0  # 2⁻²³: a 24-bit hash to [0, 2), then − 1


def ctrl_bits(seed, env, step, wrap=None):
    """The 24 hash bits of the physics-only rollout's control, hash4(seed ^ CTRL_SALT, env, 0, step)
    >> 8 (``episode.hash_controls`` at episode 0 with the step counter for elapsed), on uint32 arrays
    (numpy, jax; scalars broadcast) or, with a masking ``wrap``, int64 tensors (torch), as
    ``episodes.hash_actions`` takes them: the control is then bits · CTRL_UNIT − 1 in float32."""
    from ...episodes import MASK32, hash4

    salted = (seed ^ CTRL_SALT) & MASK32
    if wrap is None:  # arrays of env's shape: uint32 arrays wrap silently, numpy scalars would warn
        salted, zero, shift = np.full(np.shape(env), salted, np.uint32), np.zeros(np.shape(env), np.uint32), np.uint32(8)
    else:
        zero, shift = 0, 8
    return hash4(salted, env, zero, step, wrap) >> shift


def hash_ctrl(seed: int, env, step) -> np.ndarray:
    """The physics-only rollout's control of (seed, env, step), bit for bit: ch_hash_ctrl(seed, env,
    0, step), (hash4(seed ^ CTRL_SALT, env, 0, step) >> 8) · 2⁻²³ − 1, float32."""
    u32 = np.uint32
    env, step = np.broadcast_arrays(np.asarray(env).astype(u32), np.asarray(step).astype(u32))
    return ctrl_bits(seed, env, step).astype(np.float32) * np.float32(CTRL_UNIT) - np.float32(1.0)


def check_links(p: ChainParams) -> None:
    if not 1 <= p.links <= max_links():
        raise ConfigError(f"the chain's C/CUDA build steps n = 1 to {max_links()}, not n = {p.links}")


def _raise_for(code: int, what: str) -> None:
    if code:
        message = library("chain_cpu").chain_error_message(code).decode()
        raise StudyError(f"{what} failed (code {code}): {message}")


def call_rollout(args: ChainArgs) -> None:
    """chain_cpu's chain_rollout on a caller-filled ChainArgs; StudyError for any argument it refuses."""
    _raise_for(library("chain_cpu").chain_rollout(ctypes.byref(args)), "chain_rollout")


def _prepare(states, p: ChainParams, ctrl, num_steps: int, seed: int, first_step: int, generic: bool = False):
    """(state copy (N, 2(n+1)) float32, ctrl (K, N) float32 or None, params, ChainArgs)."""
    check_links(p)
    if isinstance(num_steps, bool) or not isinstance(num_steps, (int, np.integer)) or num_steps < 0:
        raise ConfigError(f"num_steps must be an integer >= 0, got {num_steps!r}")
    state = np.array(states, dtype=np.float32, order="C", copy=True)
    if state.ndim != 2 or state.shape[1] != p.state_size:
        raise ConfigError(f"states must have shape (N, {p.state_size}) for n = {p.links}, got {state.shape}")
    n = len(state)
    params = params_array(p)
    args = ChainArgs(state=state.ctypes.data, params=params.ctypes.data, n=n, links=p.links,
                     num_steps=int(num_steps), seed=seed & 0xFFFFFFFF, first_step=first_step & 0xFFFFFFFF,
                     generic=int(generic))
    if ctrl is None:
        args.policy, controls = POLICY_HASH, None
    else:
        controls = np.ascontiguousarray(np.broadcast_to(np.asarray(ctrl, dtype=np.float32), (max(num_steps, 1), n)))
        args.policy, args.ctrl = POLICY_CTRL, controls.ctypes.data
    return state, controls, params, args


def rollout(states, num_steps: int, p: ChainParams = INVERTED_DOUBLE_PENDULUM, ctrl=None, seed: int = 0,
            first_step: int = 0, generic: bool = False) -> np.ndarray:
    """``num_steps`` environment steps (frame_skip mj_steps each) of every chain in ``states``
    (N, 2(n+1)), float32 on the CPU build, physics only (no episodes); returns the new states.
    ``ctrl``: (N,) (every step) or (num_steps, N); None: policy "none", the hashed controls of
    (seed, env, first_step + k). ``generic``: the run-time-n build whatever n (tests)."""
    state, controls, params, args = _prepare(states, p, ctrl, num_steps, seed, first_step, generic)
    call_rollout(args)
    return state


def physics_step(states, ctrl, p: ChainParams = INVERTED_DOUBLE_PENDULUM, mj_steps: int = 1,
                 generic: bool = False) -> np.ndarray:
    """dynamics.physics_step(states, ctrl, p, steps=mj_steps) on the CPU build's scalar path (one
    environment at a time, no SIMD): the tests' one-step entry."""
    state, controls, params, args = _prepare(states, p, ctrl, 1, 0, 0, generic)
    if isinstance(mj_steps, bool) or not isinstance(mj_steps, (int, np.integer)) or mj_steps < 0:
        raise ConfigError(f"mj_steps must be an integer >= 0, got {mj_steps!r}")
    _raise_for(library("chain_cpu").chain_physics_step(ctypes.byref(args), int(mj_steps)), "chain_physics_step")
    return state


def _grid(count: int, threads_per_block: int) -> int:
    return (count + threads_per_block - 1) // threads_per_block


def host_rollout(states, num_steps: int, p: ChainParams = INVERTED_DOUBLE_PENDULUM, ctrl=None, seed: int = 0,
                 first_step: int = 0, threads_per_block: int = THREADS_PER_BLOCK, generic: bool = False) -> np.ndarray:
    """``rollout`` by the CUDA kernel (chain_rollout_<n>, or chain_rollout_generic) itself, built
    for and launched on the CPU (cuda/cuda_host.h) over the grid a GPU would run: serial and slow,
    a test instrument."""
    state, controls, params, args = _prepare(states, p, ctrl, num_steps, seed, first_step, generic)
    blocks = _grid(len(state), threads_per_block)
    if blocks:
        error = library("chain_kernel_host").host_chain_rollout(blocks, threads_per_block, ctypes.byref(args))
        if error is not None:
            raise StudyError(f"host launch of the chain's rollout kernel (n = {p.links}) failed: {error.decode()}")
    return state


# ---- episodes ----
