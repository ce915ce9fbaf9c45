"""Where the kernel sources are (``cuda/`` in a checkout, ``studylib/_cuda`` in a wheel), and what
each includes: the files whose text keys every build and CuPy's kernel cache."""

from __future__ import annotations

import hashlib
from pathlib import Path


def _kernel_source_dir() -> Path:
    """Where the kernel sources are: inside the installed package (``studylib/_cuda``, where
    pyproject.toml maps the repository's top-level ``cuda/`` when a wheel is built), else the
    repository's ``cuda/`` (a source checkout or an editable install)."""
    package = Path(__file__).resolve().parent.parent  # studylib/ (this file is studylib/native/sources.py)
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
# The n-link chain (studylib.sims.chain in C/CUDA; its libraries are registered by studylib.sims.chain.native)
CHAIN_HEADER = CUDA_SOURCE_DIR / "chain.cuh"  # the dynamics, host and device
CHAIN_EPISODE_HEADER = CUDA_SOURCE_DIR / "chain_episode.cuh"  # the episode step, host and device
CHAIN_ARGS_HEADER = CUDA_SOURCE_DIR / "chain_args.h"  # struct ChainArgs, every chain entry point's argument
CHAIN_TRAJECTORY_HEADER = CUDA_SOURCE_DIR / "chain_trajectory.h"  # struct ChainTrajectoryArgs, the in-kernel collection's output
CHAIN_CPU_SOURCE = CUDA_SOURCE_DIR / "chain_cpu.cpp"  # library "chain_cpu"
CHAIN_CPU_LANES_HEADER = CUDA_SOURCE_DIR / "chain_cpu_lanes.h"  # its block loops on SIMD lanes (host only)
CHAIN_KERNEL_SOURCE = CUDA_SOURCE_DIR / "chain_kernel.cu"  # the CUDA kernel (NVRTC, CuPy)
CHAIN_KERNEL_HOST_SOURCE = CUDA_SOURCE_DIR / "chain_kernel_host.cpp"  # library "chain_kernel_host" (tests)


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
