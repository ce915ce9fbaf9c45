"""studylib.native.backends.CudaModuleBackend, the GPU backend's Python side, run without a GPU: CuPy is
replaced by a stand-in whose arrays are numpy arrays and whose kernel launches run the kernels'
host build (cuda/cuda_host.h, studylib.native's *_kernel_host). So the struct passed by value,
the trajectory struct, the episode counter, the grid and the streams are checked end to end
against the CPU build; and what CuPy is handed to compile: the source with its headers' digest.
"""

import ctypes
import shutil
import sys
import types

import numpy as np
import pytest

from studylib import native
from studylib.native.backends import KERNEL_OPTIONS, PAIRS, CpuLibraryBackend
from studylib.sims.cartpole import CARTPOLE_V1
from studylib.policy import mlp_weights


class FakeArray(np.ndarray):
    """A CuPy array stand-in: host memory, ``.data.ptr`` its address."""

    @property
    def data(self):
        return types.SimpleNamespace(ptr=self.ctypes.data)

    def get(self):
        return np.array(self)

    def set(self, values):
        self[...] = values


class FakeStream:
    """What Stream.from_external returns: a context that makes it CuPy's current stream."""

    def __init__(self, cupy, handle):
        self.cupy, self.handle = cupy, handle

    def __enter__(self):
        self.cupy.current_streams.append(self.handle)
        return self

    def __exit__(self, *exc):
        self.cupy.current_streams.pop()


class TorchLikeStream:
    """A stream object with the CUDA stream protocol, as torch.cuda.Stream has."""

    def __init__(self, handle):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


def _fake_cupy():
    cp = types.ModuleType("cupy")
    cp.current_streams = [None]  # None: CuPy's own current stream
    cp.launches = []  # (entry, grid, block, stream)
    cp.modules = []  # (code, options) given to RawModule
    cp.uint64, cp.int32, cp.float32, cp.bool_ = np.uint64, np.int32, np.float32, np.bool_
    cp.zeros = lambda shape, dtype=float: np.zeros(shape, dtype).view(FakeArray)
    cp.empty = lambda shape, dtype=float: np.zeros(shape, dtype).view(FakeArray)
    cp.asarray = lambda a, dtype=None: np.array(a, dtype=dtype).view(FakeArray)
    cp.ascontiguousarray = lambda a: np.ascontiguousarray(a).view(FakeArray)
    cp.asnumpy = lambda a: np.array(a)

    def launch(name, host):
        def kernel(grid, block, args):
            cp.launches.append((name, grid, block, cp.current_streams[-1]))
            struct = lambda a, t: ctypes.cast(a.ctypes.data, ctypes.POINTER(t))  # noqa: E731
            fn = getattr(host, f"host_{name}")
            if name == "fused_mlp_logits":
                obs, out, weights, n = args
                error = fn(grid[0], block[0], obs.ctypes.data, out.ctypes.data, weights.ctypes.data, int(n))
            elif name == "fused_collect":
                error = fn(grid[0], block[0], struct(args[0], native.RolloutArgs), struct(args[1], native.TrajectoryArgs))
            else:
                (value,) = args
                assert value.dtype == np.dtype(native.RolloutArgs) and value.size == 1
                error = fn(grid[0], block[0], struct(value, native.RolloutArgs))
            assert error is None, error
        return kernel

    class RawModule:
        def __init__(self, code, options):
            cp.modules.append((code, options))
            self.host = native.library("fused_kernel_host" if "fused_collect" in code else "cartpole_kernel_host")

        def get_function(self, name):
            return launch(name, self.host)

    cp.RawModule = RawModule
    cp.cuda = types.SimpleNamespace(
        Stream=types.SimpleNamespace(from_external=lambda s: FakeStream(cp, s.__cuda_stream__()[1])),
        runtime=types.SimpleNamespace(deviceSynchronize=lambda: None))
    return cp


@pytest.fixture
def cupy(monkeypatch):
    try:
        native._compiler()
    except native.NativeBuildError as e:
        pytest.skip(str(e))
    cp = _fake_cupy()
    monkeypatch.setitem(sys.modules, "cupy", cp)
    return cp


def _backends(pair, n, state_factor=1):
    from studylib.native.backends import CudaModuleBackend

    weights = mlp_weights(1) if pair == "fused" else None
    gpu = CudaModuleBackend(pair, n, state_factor, 1, CARTPOLE_V1, weights)
    cpu = CpuLibraryBackend(pair, n, state_factor, 1, CARTPOLE_V1, weights)
    for b in (gpu, cpu):
        b.reset(3)
    return gpu, cpu


@pytest.mark.parametrize("pair", ["cartpole", "fused"])
def test_the_gpu_backend_drives_the_kernels_as_the_cpu_backend_drives_its_build(cupy, pair):
    n = 300
    gpu, cpu = _backends(pair, n, state_factor=2)
    np.testing.assert_array_equal(gpu.get_state(), cpu.get_state())
    assert gpu.rollout(None, 150, native.POLICY_HASH, 3) == cpu.rollout(None, 150, native.POLICY_HASH, 3) > n
    actions = np.random.default_rng(1).integers(0, 2, n)
    for b in (gpu, cpu):
        b.step(actions, 3)
    np.testing.assert_array_equal(gpu.flags(), cpu.flags())
    np.testing.assert_allclose(gpu.final_obs(), cpu.final_obs(), rtol=0, atol=1e-4)
    mask = np.arange(n) % 3 == 0
    for b in (gpu, cpu):
        b.restart(mask, 3)
    np.testing.assert_array_equal(gpu.get_state()[mask], cpu.get_state()[mask])
    np.testing.assert_allclose(gpu.get_state(), cpu.get_state(), rtol=0, atol=1e-4)
    block = PAIRS[pair].threads_per_block
    assert {(grid, blk) for _, grid, blk, _ in cupy.launches} == {(((n + block - 1) // block,), (block,))}
    if pair == "fused":
        assert gpu.rollout(None, 50, native.POLICY_MLP, 3) == cpu.rollout(None, 50, native.POLICY_MLP, 3)
        h, c = gpu.collect(40, 9), cpu.collect(40, 9)
        assert h.episodes_finished == c.episodes_finished
        np.testing.assert_array_equal(h.actions, c.actions)
        np.testing.assert_allclose(h.logp, c.logp, rtol=0, atol=1e-5)
        obs = np.random.default_rng(2).normal(size=(77, 4)).astype(np.float32)
        np.testing.assert_allclose(gpu.mlp_logits(obs), cpu.mlp_logits(obs), rtol=0, atol=1e-5)


def test_launches_go_to_the_stream_the_source_names(cupy):
    gpu, _ = _backends("fused", 40)
    assert {stream for *_, stream in cupy.launches} == {None}  # no source: CuPy's current stream
    handle = [0xA1]
    gpu.stream_source = lambda: TorchLikeStream(handle[0])  # a new object each time, as torch's
    cupy.launches.clear()
    gpu.rollout(None, 5, native.POLICY_HASH, 3)
    gpu.collect(3, 3)
    handle[0] = 0xB2  # torch switched streams: the next launch follows
    gpu.reset(3)
    assert [(name, stream) for name, _, _, stream in cupy.launches] == [
        ("fused_rollout_no_mlp", 0xA1), ("fused_collect", 0xA1), ("fused_reset", 0xB2)]
    assert cupy.current_streams == [None]  # restored after each call


def test_a_native_env_on_the_gpu_launches_on_torchs_current_stream(cupy, monkeypatch):
    """BackendCartPole wires torch's current stream of the views' device into the backend."""
    import torch

    from studylib.native.backends import CudaModuleBackend
    from studylib.envs.fused_env import FusedCartPole

    asked = []
    monkeypatch.setattr(torch, "from_dlpack", lambda a: torch.from_numpy(np.asarray(a)))
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: asked.append(device) or TorchLikeStream(7))
    cupy.from_dlpack = lambda t: t
    env = FusedCartPole.__new__(FusedCartPole)
    env.device, env._native, env._seed = "cuda", True, 0  # what VectorCartPole.__init__ sets
    backend = CudaModuleBackend("fused", 8, 1, 1, CARTPOLE_V1, mlp_weights(0))
    env._init_backend(backend)
    backend.reset(0)
    assert cupy.launches[-1][0] == "fused_reset" and cupy.launches[-1][3] == 7
    assert asked == [env._state_view.device]


def test_cupy_compiles_the_source_with_its_headers_digest(cupy):
    _backends("cartpole", 8)
    code, options = cupy.modules[-1]
    assert code == native.source_with_header_digest(native.KERNEL_SOURCE)
    assert code.startswith(native.KERNEL_SOURCE.read_text())
    assert options == KERNEL_OPTIONS


def test_a_header_edit_changes_the_source_cupy_keys_its_cache_on(tmp_path):
    """CuPy's kernel cache key is a hash of (arch, options, NVRTC version, source, CuPy version)
    (cupy/cuda/compiler.py, _compile_with_cache_cuda): the source string must change when any
    header it includes changes, and only then."""
    cuda = tmp_path / "cuda"
    shutil.copytree(native.CUDA_SOURCE_DIR, cuda)
    kernel = cuda / native.FUSED_KERNEL_SOURCE.name
    names = {p.name for p in native.included_files(kernel)}
    assert {"cartpole.cuh", "gpu_rollout.cuh", "mlp.cuh", "rollout_args.h", "trajectory_args.h"} <= names
    assert "cpu_rollout.h" not in names and "cuda_host.h" not in names
    before = native.source_with_header_digest(kernel)
    (cuda / "fma_peak.cpp").write_text("// not included by the kernel\n")
    assert native.source_with_header_digest(kernel) == before
    for header in sorted(names):  # each header, directly included or through another one
        path = cuda / header
        original = path.read_text()
        path.write_text(original.replace("#pragma once", "#pragma once\n#define CP_EDITED 1", 1))
        assert native.source_with_header_digest(kernel) != before, header
        path.write_text(original)
    assert native.source_with_header_digest(kernel) == before
