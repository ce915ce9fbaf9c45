"""Build and load the CPU build of the CUDA kernel source (``cuda/cartpole_cpu.cpp``).

The shared library is compiled on first use with the host C++ compiler and cached under
``$STUDYLIB_CACHE`` (default ``~/.cache/studylib``), keyed by a hash of the sources, the flags and
the CPU, so editing ``cuda/cartpole.cuh`` rebuilds it and a stale build is never loaded.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import time
from functools import lru_cache
from pathlib import Path

import numpy as np

from .dynamics import CARTPOLE_V1, CartPoleParams

CUDA_SOURCE_DIR = Path(__file__).resolve().parent.parent / "cuda"
HEADER = CUDA_SOURCE_DIR / "cartpole.cuh"
CPU_SOURCE = CUDA_SOURCE_DIR / "cartpole_cpu.cpp"
KERNEL_SOURCE = CUDA_SOURCE_DIR / "cartpole_kernel.cu"

# -ffast-math lets glibc's vector sinf/cosf (libmvec) be used; -fno-builtin-{sin,cos}f stops GCC
# from merging sinf+cosf into sincosf, which has no vector form and would block SIMD.
CXXFLAGS = [
    "-O3", "-march=native", "-ffast-math", "-fno-builtin-sinf", "-fno-builtin-cosf",
    "-fopenmp", "-shared", "-fPIC", "-std=c++17",
]


class NativeBuildError(RuntimeError):
    """The C++ build of cuda/cartpole_cpu.cpp failed or no compiler was found."""


def params_array(p: CartPoleParams = CARTPOLE_V1) -> np.ndarray:
    """The float fields of ``struct CartPoleParams`` in header order (cp_params_from_array)."""
    return np.array(
        [p.gravity, p.masscart, p.masspole, p.total_mass, p.length, p.polemass_length,
         p.force_mag, p.tau, p.x_threshold, p.theta_threshold_radians],
        dtype=np.float32,
    )


def _compiler() -> str:
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if not cxx:
        raise NativeBuildError(
            "no C++ compiler found: the 'cpp' implementation needs g++ (apt-get install g++) or $CXX"
        )
    return cxx


def _cache_dir() -> Path:
    return Path(os.environ.get("STUDYLIB_CACHE", Path.home() / ".cache" / "studylib"))


def _build_key(cxx: str) -> str:
    h = hashlib.sha256()
    for path in (HEADER, CPU_SOURCE):
        h.update(path.read_bytes())
    h.update(" ".join([cxx, *CXXFLAGS]).encode())
    h.update(platform.machine().encode() + platform.processor().encode())
    try:  # -march=native: a build is only valid on the same kind of CPU
        with open("/proc/cpuinfo") as f:
            h.update(next((ln for ln in f if ln.startswith("flags")), "").encode())
    except OSError:
        pass
    return h.hexdigest()[:16]


@lru_cache(maxsize=1)
def build_info() -> dict:
    """Compile if needed; return {'path', 'compiler', 'flags', 'build_seconds', 'cached'}."""
    if not CPU_SOURCE.exists():
        raise NativeBuildError(f"kernel source not found at {CPU_SOURCE} (install studylib editable)")
    cxx = _compiler()
    target = _cache_dir() / f"cartpole_cpu-{_build_key(cxx)}.so"
    if target.exists():
        return {"path": str(target), "compiler": cxx, "flags": CXXFLAGS, "build_seconds": 0.0, "cached": True}
    target.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    # Build into a temporary file and rename: a concurrent or interrupted build never leaves a
    # half-written library at the cached path.
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        out = Path(tmp) / target.name
        cmd = [cxx, *CXXFLAGS, f"-I{CUDA_SOURCE_DIR}", str(CPU_SOURCE), "-o", str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise NativeBuildError(f"building {CPU_SOURCE.name} failed:\n{' '.join(cmd)}\n{proc.stderr}")
        os.replace(out, target)
    return {"path": str(target), "compiler": cxx, "flags": CXXFLAGS,
            "build_seconds": time.perf_counter() - start, "cached": False}


@lru_cache(maxsize=1)
def library() -> ctypes.CDLL:
    lib = ctypes.CDLL(build_info()["path"])
    p = ctypes.c_void_p
    lib.cartpole_rollout.restype = ctypes.c_longlong
    lib.cartpole_rollout.argtypes = [
        p, p, p, p, p, p,  # state, elapsed, episode, actions (or None), flags_out, param_floats
        ctypes.c_int32, ctypes.c_longlong,  # max_episode_steps, n
        ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_uint32,  # S, C, K, seed
    ]
    lib.cartpole_reset.restype = None
    lib.cartpole_reset.argtypes = [p, p, p, ctypes.c_longlong, ctypes.c_int32, ctypes.c_uint32]
    return lib
