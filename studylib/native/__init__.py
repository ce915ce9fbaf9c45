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
    ceiling (``studylib.harness.model.roofline``), independent of any CartPole code.

The package, by job: ``sources`` (where the kernel sources are, what each includes), ``abi`` (the
data layouts Python shares with every build, CPU and CUDA: ``RolloutArgs``, ``TrajectoryArgs``,
``sample_uniforms``, ``params_array``, ``pack_weights``, each library's C signatures), ``build``
(compiling, caching and loading), ``backends`` (the calls themselves, on the CPU and through CuPy:
``make_backend`` and the names of ``backend_base``, what both backends share, ``cpu_backend``,
ctypes on numpy, and ``cuda_backend``, CuPy on the GPU) and ``kernel_host`` (the CUDA kernels
executed on the CPU, for the tests). The public names of sources, abi and build are re-exported
here: ``studylib.native.library()``, ``studylib.native.RolloutArgs``, ...
"""

from .abi import (POLICY_ACTIONS, POLICY_HASH, POLICY_MLP, SAMPLE_SALT, RolloutArgs, TrajectoryArgs, by_value,
                  pack_weights, params_array, rollout_args_layout, sample_uniforms, trajectory_args_layout)
from .build import (CXXFLAGS, DEFAULT_LIBRARY, LIBRARIES, ROLLOUT_LIBRARIES, NativeBuildError, NativeLibrary,
                    build_info, library, library_layout, library_trajectory_layout, step_binding)
from .build import _compiler  # noqa: F401 (which compiler builds here: the tests skip without one)
from .sources import (CPU_ROLLOUT_HEADER, CPU_SOURCE, CUDA_SOURCE_DIR, FMA_PEAK_SOURCE, FUSED_CPU_SOURCE,
                      FUSED_KERNEL_SOURCE, GPU_ROLLOUT_HEADER, HEADER, HOST_SHIM_HEADER, KERNEL_SOURCE, MLP_HEADER,
                      ROLLOUT_ARGS_HEADER, STEP_BINDING_SOURCE, TRAJECTORY_ARGS_HEADER, included_files,
                      source_with_header_digest)
from ..sims.chain import native as _chain_native  # noqa: E402,F401  (registers the chain's libraries, chain_cpu and chain_kernel_host)

__all__ = [
    "CPU_ROLLOUT_HEADER", "CPU_SOURCE", "CUDA_SOURCE_DIR", "CXXFLAGS", "DEFAULT_LIBRARY", "FMA_PEAK_SOURCE",
    "FUSED_CPU_SOURCE", "FUSED_KERNEL_SOURCE", "GPU_ROLLOUT_HEADER", "HEADER", "HOST_SHIM_HEADER", "KERNEL_SOURCE",
    "LIBRARIES", "MLP_HEADER", "NativeBuildError", "NativeLibrary", "POLICY_ACTIONS", "POLICY_HASH", "POLICY_MLP",
    "ROLLOUT_ARGS_HEADER", "ROLLOUT_LIBRARIES", "RolloutArgs", "SAMPLE_SALT", "STEP_BINDING_SOURCE",
    "TRAJECTORY_ARGS_HEADER", "TrajectoryArgs", "build_info", "by_value", "included_files", "library",
    "library_layout", "library_trajectory_layout", "pack_weights", "params_array", "rollout_args_layout",
    "sample_uniforms", "source_with_header_digest", "step_binding", "trajectory_args_layout",
]
