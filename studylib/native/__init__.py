"""Build and load the CPU builds of the CUDA kernel sources (``cuda/*_cpu.cpp``).

The libraries below (``LIBRARIES``), each compiled on first use with the host C++ compiler and cached under
``$STUDYLIB_CACHE`` (default ``~/.cache/studylib``), keyed by a hash of its sources, the flags and
the CPU, so editing a header it includes rebuilds it and a stale build is never loaded:

``cartpole_cpu``
    ``cuda/cartpole_cpu.cpp`` (the ``cpp`` implementation): the CPU build of
    ``cuda/cartpole_kernel.cu``. ``build_info()`` and ``library()`` without a name are this one.
``fused_cpu``
    ``cuda/fused_cpu.cpp`` (the ``fused`` implementation): the CPU build of
    ``cuda/fused_kernel.cu``, MLP inference and simulation in one call; ``fused_collect``
    samples the actions in it and writes a whole trajectory (``TrajectoryArgs``).
``cartpole_kernel_host``, ``fused_kernel_host``
    ``cuda/cartpole_kernel.cu`` and ``cuda/fused_kernel.cu`` themselves, built by the host C++
    compiler through the shim ``cuda/cuda_host.h`` (``cuda/*_kernel_host.cpp``) and launched over
    their grid on the CPU: the GPU code executed without a GPU, for the tests
    (studylib/native/kernel_host.py).
``_step_binding``
    ``cuda/step_binding.cpp``: a CPython extension module (built against this Python's headers,
    loaded with importlib, not ctypes), the thin per-call path of ``step``, ``restart`` and
    ``rollout`` of the two libraries above (``step_binding()``; studylib.native.backends uses it).
``fma_peak``
    ``cuda/fma_peak.cpp``: this CPU's peak FP32 multiply-add throughput, the roofline's compute
    ceiling (``studylib.harness.roofline``), independent of any CartPole code.

And the data layouts Python shares with every build, CPU and CUDA: ``RolloutArgs`` (the one
argument of every rollout, reset and restart entry point, a ctypes twin of cuda/rollout_args.h),
``TrajectoryArgs`` (where ``fused_collect`` writes its trajectory, cuda/trajectory_args.h),
``sample_uniforms`` (that entry point's action draws, reproduced),
``params_array`` (the physics constants) and ``pack_weights`` (the MLP). The calls themselves are
made by studylib/native/backends.py.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..dynamics import CARTPOLE_V1, CartPoleParams
from ..policy import MLPWeights



def _kernel_source_dir() -> Path:
    """Where the kernel sources are: inside the installed package (``studylib/_cuda``, where
    pyproject.toml maps the repository's top-level ``cuda/`` when a wheel is built), else the
    repository's ``cuda/`` (a source checkout or an editable install)."""
    package = Path(__file__).resolve().parent.parent  # studylib/ (this file is studylib/native/__init__.py)
    packaged = package / "_cuda"
    return packaged if (packaged / "cartpole.cuh").exists() else package.parent / "cuda"


CUDA_SOURCE_DIR = _kernel_source_dir()
HEADER = CUDA_SOURCE_DIR / "cartpole.cuh"
CPU_SOURCE = CUDA_SOURCE_DIR / "cartpole_cpu.cpp"
KERNEL_SOURCE = CUDA_SOURCE_DIR / "cartpole_kernel.cu"
MLP_HEADER = CUDA_SOURCE_DIR / "mlp.cuh"
FUSED_CPU_SOURCE = CUDA_SOURCE_DIR / "fused_cpu.cpp"
CPU_ROLLOUT_HEADER = CUDA_SOURCE_DIR / "cpu_rollout.h"  # the block loop both CPU builds share
ROLLOUT_ARGS_HEADER = CUDA_SOURCE_DIR / "rollout_args.h"  # struct RolloutArgs, every entry point's argument
TRAJECTORY_ARGS_HEADER = CUDA_SOURCE_DIR / "trajectory_args.h"  # struct TrajectoryArgs, fused_collect's output
FUSED_KERNEL_SOURCE = CUDA_SOURCE_DIR / "fused_kernel.cu"
FMA_PEAK_SOURCE = CUDA_SOURCE_DIR / "fma_peak.cpp"
HOST_SHIM_HEADER = CUDA_SOURCE_DIR / "cuda_host.h"  # the CUDA execution model on the CPU (tests)
GPU_ROLLOUT_HEADER = CUDA_SOURCE_DIR / "gpu_rollout.cuh"  # the kernels' per-thread loop
STEP_BINDING_SOURCE = CUDA_SOURCE_DIR / "step_binding.cpp"  # the CPython extension of the hot path

# -ffast-math lets glibc's vector sinf/cosf (libmvec) be used; -fno-builtin-{sin,cos}f stops GCC
# from merging sinf+cosf into sincosf, which has no vector form and would block SIMD.
CXXFLAGS = [
    "-O3", "-march=native", "-ffast-math", "-fno-builtin-sinf", "-fno-builtin-cosf",
    "-fopenmp", "-shared", "-fPIC", "-std=c++17",
]


class NativeBuildError(RuntimeError):
    """The C++ build of a cuda/*_cpu.cpp failed or no compiler was found."""


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


def rollout_args_layout() -> list[int]:
    """[sizeof, offset of each field in order] of this ctypes ``RolloutArgs``: what the C++
    ``rollout_args_layout`` reports for its struct."""
    return [ctypes.sizeof(RolloutArgs), *(getattr(RolloutArgs, name).offset for name, _ in RolloutArgs._fields_)]


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
    """[sizeof, offset of each field in order] of this ctypes ``TrajectoryArgs``."""
    return [ctypes.sizeof(TrajectoryArgs), *(getattr(TrajectoryArgs, name).offset for name, _ in TrajectoryArgs._fields_)]


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


@dataclass(frozen=True)
class NativeLibrary:
    """One CPU library: its source, every header it includes (hashed into the cache key) and the
    ctypes signatures of its functions."""

    name: str
    source: Path
    headers: tuple[Path, ...]
    declare: object  # (ctypes.CDLL) -> None
    extra_flags: tuple[str, ...] = ()  # after CXXFLAGS, for this library only

    @property
    def files(self) -> tuple[Path, ...]:
        return (*self.headers, self.source)


LIBRARIES = {
    "cartpole_cpu": NativeLibrary("cartpole_cpu", CPU_SOURCE, (HEADER, ROLLOUT_ARGS_HEADER, CPU_ROLLOUT_HEADER),
                                  _declare_cartpole),
    # -fno-tree-reassoc: -ffast-math lets GCC re-associate the MLP's accumulation chains
    # acc += h[i] * w[i] into (h[i] * w[i] + h[i+1] * w[i+1]) + acc, a multiply, an FMA and an add
    # for two products instead of two FMAs, with spills: 10% slower. The chains are already
    # independent (JB accumulators), so nothing is gained by re-associating them.
    "fused_cpu": NativeLibrary("fused_cpu", FUSED_CPU_SOURCE,
                               (HEADER, ROLLOUT_ARGS_HEADER, CPU_ROLLOUT_HEADER, MLP_HEADER, TRAJECTORY_ARGS_HEADER),
                               _declare_fused,
                               ("-fno-tree-reassoc",)),
    "fma_peak": NativeLibrary("fma_peak", FMA_PEAK_SOURCE, (), _declare_fma_peak),
    # The .cu kernels on the host (tests), with the flags of their CPU twins so that the two
    # compute with the same float semantics.
    "cartpole_kernel_host": NativeLibrary(
        "cartpole_kernel_host", CUDA_SOURCE_DIR / "cartpole_kernel_host.cpp",
        (HOST_SHIM_HEADER, KERNEL_SOURCE, GPU_ROLLOUT_HEADER, HEADER, ROLLOUT_ARGS_HEADER),
        _declare_cartpole_kernel_host),
    "fused_kernel_host": NativeLibrary(
        "fused_kernel_host", CUDA_SOURCE_DIR / "fused_kernel_host.cpp",
        (HOST_SHIM_HEADER, FUSED_KERNEL_SOURCE, GPU_ROLLOUT_HEADER, HEADER, ROLLOUT_ARGS_HEADER, MLP_HEADER,
         TRAJECTORY_ARGS_HEADER),
        _declare_fused_kernel_host, ("-fno-tree-reassoc",)),
    # A CPython extension: the suffix and include directory of this interpreter are part of its
    # flags, hence of its cache key (a build for another Python is never loaded).
    "_step_binding": NativeLibrary("_step_binding", STEP_BINDING_SOURCE, (HEADER, ROLLOUT_ARGS_HEADER),
                                   None, (f"-I{sysconfig.get_paths()['include']}",
                                          f"-DSTUDYLIB_EXT_SUFFIX={sysconfig.get_config_var('EXT_SUFFIX')}")),
}
DEFAULT_LIBRARY = "cartpole_cpu"
ROLLOUT_LIBRARIES = ("cartpole_cpu", "fused_cpu")  # those taking struct RolloutArgs (fma_peak does not)


def _spec(name: str) -> NativeLibrary:
    if name not in LIBRARIES:
        raise NativeBuildError(f"unknown native library {name!r}; valid: {', '.join(LIBRARIES)}")
    return LIBRARIES[name]


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



def _compiler() -> str:
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if not cxx:
        raise NativeBuildError(
            "no C++ compiler found: the 'cpp' implementation needs g++ (apt-get install g++) or $CXX"
        )
    return cxx


def _cache_dir() -> Path:
    return Path(os.environ.get("STUDYLIB_CACHE", Path.home() / ".cache" / "studylib"))


def _build_key(cxx: str, files=(HEADER, CPU_SOURCE), extra_flags=()) -> str:
    h = hashlib.sha256()
    for path in files:
        h.update(path.read_bytes())
    h.update(" ".join([cxx, *CXXFLAGS, *extra_flags]).encode())
    h.update(platform.machine().encode() + platform.processor().encode())
    try:  # -march=native: a build is only valid on the same kind of CPU
        with open("/proc/cpuinfo") as f:
            h.update(next((ln for ln in f if ln.startswith("flags")), "").encode())
    except OSError:
        pass
    return h.hexdigest()[:16]


@lru_cache(maxsize=None)
def build_info(name: str = DEFAULT_LIBRARY) -> dict:
    """Compile library ``name`` if needed; return {'name', 'path', 'compiler', 'flags',
    'build_seconds', 'cached'} ('cached': an earlier build with the same key was loaded)."""
    spec = _spec(name)
    missing = [p for p in spec.files if not p.exists()]
    if missing:
        raise NativeBuildError(f"kernel source not found at {missing[0]}: the installed package lacks "
                               "its studylib/_cuda sources (reinstall studylib)")
    cxx = _compiler()
    flags = [*CXXFLAGS, *spec.extra_flags]
    target = _cache_dir() / f"{spec.name}-{_build_key(cxx, spec.files, spec.extra_flags)}.so"
    info = {"name": spec.name, "path": str(target), "compiler": cxx, "flags": flags}
    if target.exists():
        return {**info, "build_seconds": 0.0, "cached": True}
    target.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    # Build into a temporary file and rename: a concurrent or interrupted build never leaves a
    # half-written library at the cached path.
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        out = Path(tmp) / target.name
        cmd = [cxx, *flags, f"-I{CUDA_SOURCE_DIR}", str(spec.source), "-o", str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise NativeBuildError(f"building {spec.source.name} failed:\n{' '.join(cmd)}\n{proc.stderr}")
        os.replace(out, target)
    return {**info, "build_seconds": time.perf_counter() - start, "cached": False}


@lru_cache(maxsize=None)
def step_binding():
    """The ``_step_binding`` extension module (cuda/step_binding.cpp), built on first use (cached)."""
    import importlib.machinery
    import importlib.util

    path = build_info("_step_binding")["path"]
    loader = importlib.machinery.ExtensionFileLoader("_step_binding", path)
    spec = importlib.util.spec_from_file_location("_step_binding", path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@lru_cache(maxsize=None)
def library(name: str = DEFAULT_LIBRARY) -> ctypes.CDLL:
    """The loaded library ``name`` (built on first use), its functions' signatures declared."""
    lib = ctypes.CDLL(build_info(name)["path"])
    _spec(name).declare(lib)
    return lib


def library_layout(name: str = DEFAULT_LIBRARY) -> list[int]:
    """[sizeof, offsets...] of ``struct RolloutArgs`` as library ``name``'s compiler laid it out."""
    capacity = 64
    out = (ctypes.c_longlong * capacity)()
    count = library(name).rollout_args_layout(out, capacity)
    return list(out[:min(count, capacity)])


def library_trajectory_layout() -> list[int]:
    """[sizeof, offsets...] of ``struct TrajectoryArgs`` as the fused library's compiler laid it out."""
    capacity = 64
    out = (ctypes.c_longlong * capacity)()
    count = library("fused_cpu").trajectory_args_layout(out, capacity)
    return list(out[:min(count, capacity)])


def included_files(source: Path) -> tuple[Path, ...]:
    """Every file ``source`` includes with ``#include "..."``, directly or through another, found
    next to it (cuda/), in first-seen order. System headers (<...>) are not followed."""
    seen: dict[Path, None] = {}

    def visit(path: Path) -> None:
        for line in path.read_text().splitlines():
            text = line.strip()
            if not text.startswith("#include") or '"' not in text:
                continue
            name = text.split('"')[1]
            found = path.parent / name
            if found.exists() and found not in seen:
                seen[found] = None
                visit(found)

    visit(source)
    return tuple(seen)


def source_with_header_digest(source: Path) -> str:
    """The text of kernel ``source`` as handed to NVRTC (CuPy's RawModule), ending with a comment
    that carries the SHA-256 of every file it includes. CuPy keys its kernel cache on the source
    string (with the options and its own version), not on the headers it pulls in: without the
    digest, an edit of cartpole.cuh, mlp.cuh or rollout_args.h would load the old cubin."""
    h = hashlib.sha256()
    for path in included_files(source):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return source.read_text() + f"\n// included headers, sha256: {h.hexdigest()}\n"
