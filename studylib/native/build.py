"""Compile, cache and load the native libraries (``LIBRARIES``) with the host C++ compiler: each
built on first use and cached under ``$STUDYLIB_CACHE`` (default ``~/.cache/studylib``), keyed by a
hash of its sources, every header they include, the flags and the CPU."""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import re
import shutil
import subprocess
import sysconfig
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .abi import (_declare_cartpole, _declare_cartpole_kernel_host, _declare_fma_peak, _declare_fused,
                  _declare_fused_kernel_host)
from .sources import (CPU_ROLLOUT_HEADER, CPU_SOURCE, CUDA_SOURCE_DIR, FMA_PEAK_SOURCE, FUSED_CPU_SOURCE, GPU_ROLLOUT_HEADER, HEADER,
                      HOST_SHIM_HEADER, KERNEL_SOURCE, MLP_HEADER, ROLLOUT_ARGS_HEADER, STEP_BINDING_SOURCE,
                      TRAJECTORY_ARGS_HEADER, FUSED_KERNEL_SOURCE, included_files)


# -ffast-math lets glibc's vector sinf/cosf (libmvec) be used; -fno-builtin-{sin,cos}f stops GCC
# from merging sinf+cosf into sincosf, which has no vector form and would block SIMD.
CXXFLAGS = [
    "-O3", "-march=native", "-ffast-math", "-fno-builtin-sinf", "-fno-builtin-cosf",
    "-fopenmp", "-shared", "-fPIC", "-std=c++17",
]


class NativeBuildError(RuntimeError):
    """The C++ build of a cuda/*_cpu.cpp failed or no compiler was found."""


# The instruction set the libraries are built for: this CPU's own (-march=native) unless
# $STUDYLIB_NATIVE_ARCH names another -march value that this CPU runs, e.g. x86-64-v3 (AVX2 and
# FMA, 16 vector registers) on an AVX-512 host, to measure the AVX2 build of the kernels and its
# FMA ceiling there. A diagnostic for `bench`: rows are measured for the native build only
# (``check_measuring_native``). Read when a library is first built in a process.
ARCH_ENV = "STUDYLIB_NATIVE_ARCH"


def native_arch() -> str:
    """The -march value the libraries are built with ("native" unless $STUDYLIB_NATIVE_ARCH says)."""
    value = os.environ.get(ARCH_ENV, "").strip() or "native"
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]*", value):
        raise NativeBuildError(f"${ARCH_ENV}={value!r} is not a -march value (e.g. native, x86-64-v3, skylake-avx512)")
    return value


def cxxflags() -> list[str]:
    """CXXFLAGS with -march as ``native_arch`` says."""
    return [f"-march={native_arch()}" if f == "-march=native" else f for f in CXXFLAGS]


# Instruction families GCC emits from ordinary arithmetic code (vectorized loops, bit tricks): a
# build for a -march that enables one this CPU lacks dies of SIGILL on its first call. Features
# the kernels never use (PKU, SGX, ... that a VM may hide) are not checked.
_EMITTED_FEATURE = re.compile(r"__(SSE|AVX|FMA|F16C|BMI|LZCNT|POPCNT|MOVBE|ABM|TBM|XOP|ARM_FEATURE|ARM_NEON)\w*__")


@lru_cache(maxsize=None)
def _feature_macros(cxx: str, arch: str) -> frozenset[str]:
    """The instruction-set macros the compiler defines for -march=arch (__AVX512F__, __SSE4A__, ...)."""
    proc = subprocess.run([cxx, f"-march={arch}", "-dM", "-E", "-x", "c++", "-"], input="", capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise NativeBuildError(f"{cxx} refuses -march={arch} (${ARCH_ENV}):\n{proc.stderr[-1500:]}")
    return frozenset(re.findall(r"^#define (__[A-Z0-9_]+__) ", proc.stdout, flags=re.M))


def foreign_features(cxx: str, arch: str) -> list[str]:
    """The instruction families -march=arch enables that this CPU (-march=native) lacks, of those the
    compiler emits from plain code: empty when the build for ``arch`` runs here."""
    if arch == "native":
        return []
    extra = _feature_macros(cxx, arch) - _feature_macros(cxx, "native")
    return sorted(m.strip("_") for m in extra if _EMITTED_FEATURE.fullmatch(m))


@lru_cache(maxsize=None)
def check_arch_runs_here(cxx: str, arch: str) -> None:
    """Refuse a build whose instructions this CPU cannot run (once per compiler and -march)."""
    missing = foreign_features(cxx, arch)
    if missing:
        raise NativeBuildError(f"${ARCH_ENV}={arch} enables instructions this CPU lacks ({', '.join(missing)}): "
                               "its kernels may use them and die of SIGILL; name a -march this CPU runs "
                               "(x86-64-v3 on an AVX-512 host, for the AVX2 build)")


def check_measuring_native() -> None:
    """Refuse to measure rows for a data file from a build for another instruction set than the CPU's
    own: a row's machine key names this CPU, whose kernels are the -march=native build."""
    if native_arch() != "native":
        raise NativeBuildError(f"${ARCH_ENV}={native_arch()} builds the kernels for another instruction set than "
                               "this CPU's: rows are measured with the native build only (unset it; `bench` prints "
                               "figures under it)")


@dataclass(frozen=True)
class NativeLibrary:
    """One CPU library: its source, every header it includes (hashed into the cache key) and the
    ctypes signatures of its functions."""

    name: str
    source: Path
    headers: tuple[Path, ...]
    declare: object  # (ctypes.CDLL) -> None
    extra_flags: tuple[str, ...] = ()  # after CXXFLAGS, for this library only
    # Translation units compiled at once (at most one per core), then linked: the source compiles
    # part i alone under -DSTUDYLIB_PARTS=p -DSTUDYLIB_PART=i (cuda/chain_cpu.cpp), the whole
    # library without them. The parts' split changes nothing the library computes.
    parts: int = 1

    @property
    def files(self) -> tuple[Path, ...]:
        return (*self.headers, self.source)

    @property
    def key_files(self) -> tuple[Path, ...]:
        """What the cache key hashes: ``files`` and every file the source includes, directly or
        through another (a header missing from ``headers`` still rebuilds the library when it
        changes, instead of loading the build of its old text)."""
        return tuple(dict.fromkeys((*self.files, *included_files(self.source))))


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
    h.update(" ".join([cxx, *cxxflags(), *extra_flags]).encode())
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
    check_arch_runs_here(cxx, native_arch())
    flags = [*cxxflags(), *spec.extra_flags]
    target = _cache_dir() / f"{spec.name}-{_build_key(cxx, spec.key_files, spec.extra_flags)}.so"
    info = {"name": spec.name, "path": str(target), "compiler": cxx, "flags": flags}
    if target.exists():
        return {**info, "build_seconds": 0.0, "cached": True}
    target.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with _build_lock(target):
        if target.exists():  # another process built it while this one waited
            return {**info, "build_seconds": 0.0, "cached": True, "waited_seconds": time.perf_counter() - start}
        _compile(spec, cxx, flags, target)
    return {**info, "build_seconds": time.perf_counter() - start, "cached": False}


@contextmanager
def _build_lock(target: Path):
    """Held while one process compiles ``target``: processes that need the same library at once
    (pytest-xdist workers, a book's kernels, Ray workers) wait for the first one's build instead
    of each compiling it (chain_cpu is ~22 s of CPU). Where fcntl is missing (Windows) each
    process builds its own, as the rename below keeps safe."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with open(target.with_name(target.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _compile(spec: NativeLibrary, cxx: str, flags: list[str], target: Path) -> None:
    # Build into a temporary file and rename: a concurrent or interrupted build never leaves a
    # half-written library at the cached path.
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        out = Path(tmp) / target.name
        compile_source = [cxx, *flags, f"-I{CUDA_SOURCE_DIR}", str(spec.source)]
        parts = min(spec.parts, os.cpu_count() or 1)
        if parts == 1:
            _run_all([[*compile_source, "-o", str(out)]], spec)
        else:
            objects = [str(Path(tmp) / f"part{i}.o") for i in range(parts)]
            _run_all([[*compile_source, "-c", f"-DSTUDYLIB_PARTS={parts}", f"-DSTUDYLIB_PART={i}", "-o", obj]
                      for i, obj in enumerate(objects)], spec)
            _run_all([[cxx, *flags, *objects, "-o", str(out)]], spec)
        os.replace(out, target)


def _run_all(commands: list[list[str]], spec: NativeLibrary) -> None:
    """Run the compiler commands at once; NativeBuildError naming the first that failed."""
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for cmd in commands]
    errors = [proc.communicate()[1] for proc in procs]  # waits for every one
    for cmd, proc, stderr in zip(commands, procs, errors):
        if proc.returncode != 0:
            raise NativeBuildError(f"building {spec.source.name} failed:\n{' '.join(cmd)}\n{stderr}")


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


def reported_layout(name: str, entry: str) -> list[int]:
    """[sizeof, offsets...] of a struct as library ``name``'s compiler laid it out: what its C++
    layout ``entry`` (``int entry(long long* out, int capacity)``) reports."""
    capacity = 64
    out = (ctypes.c_longlong * capacity)()
    count = getattr(library(name), entry)(out, capacity)
    return list(out[:min(count, capacity)])


def library_layout(name: str = DEFAULT_LIBRARY) -> list[int]:
    """[sizeof, offsets...] of ``struct RolloutArgs`` as library ``name``'s compiler laid it out."""
    return reported_layout(name, "rollout_args_layout")


def library_trajectory_layout() -> list[int]:
    """[sizeof, offsets...] of ``struct TrajectoryArgs`` as the fused library's compiler laid it out."""
    return reported_layout("fused_cpu", "trajectory_args_layout")
