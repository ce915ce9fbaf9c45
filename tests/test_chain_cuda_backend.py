"""The chain's ``cuda`` launcher (studylib/sims/chain/cuda_backend.py) without a GPU: CuPy is stood
in for by numpy buffers and a RawModule whose kernels are the host build of the same
chain_kernel.cu (cuda/chain_kernel_host.cpp). A kernel name the source does not define fails, and
a kernel given arguments it does not take does nothing, as on the GPU (``ch_kernel_takes``), so a
launcher that picks the wrong kernel, packs the struct wrongly or forgets a copy back disagrees
with the CPU build. On a GPU the conformance tests run the real one (``make("cuda", sim="chain")``)."""

from __future__ import annotations

import ctypes
import re
import types

import numpy as np
import pytest

from studylib.native.build import library
from studylib.native.sources import CHAIN_KERNEL_SOURCE
from studylib.policy import mlp_weights
from studylib.sims.chain import native as nc
from studylib.sims.chain.backend import ChainNativeBackend
from studylib.sims.chain.cuda_backend import ChainCudaBackend, kernel_build
from studylib.sims.chain.model import ChainParams


class _DeviceArray(np.ndarray):
    """A numpy array with CuPy's ``.data.ptr``."""

    @property
    def data(self):
        return types.SimpleNamespace(ptr=self.ctypes.data)


def _device(a, dtype=None):
    return np.array(a, dtype=dtype, copy=True).view(_DeviceArray)


def _kernel_names() -> set[str]:
    """Every kernel chain_kernel.cu defines: CH_KERNELS per unrolled n (CH_FOR_EACH_LINKS, as the
    library reports them) and the run-time-n build, and chain_reset_generic."""
    text = CHAIN_KERNEL_SOURCE.read_text()
    kinds = re.findall(r'extern "C" __global__ void (chain_\w+?)_##NAME', text)
    builds = [*map(str, nc.unrolled_links()), "generic"]
    return {f"{k}_{b}" for k in kinds for b in builds} | {"chain_reset_generic"}


class _HostKernel:
    def __init__(self, name: str, launches: list):
        self.name, self.launches = name, launches

    def __call__(self, grid, block, args):
        a = nc.ChainArgs.from_buffer_copy(args[0].tobytes())
        self.launches.append((self.name, grid, block))
        build = self.name.rsplit("_", 1)[1]
        takes = (1 <= a.links <= nc.max_links()) if build == "generic" else (int(build) == a.links and not a.generic)
        if not takes:  # chain_kernel.cu's ch_kernel_takes: the kernel returns untouched
            return
        lib, count = library("chain_kernel_host"), ctypes.c_ulonglong(0)
        g, b = grid[0], block[0]
        if self.name == "chain_reset_generic":
            error = lib.host_chain_reset(g, b, ctypes.byref(a))
        elif self.name.startswith("chain_episodes_mlp_"):
            t = nc.ChainTrajectoryArgs.from_buffer_copy(args[1].tobytes())
            error = (lib.host_chain_collect(g, b, ctypes.byref(a), ctypes.byref(t), ctypes.byref(count)) if t.obs
                     else lib.host_chain_episodes(g, b, ctypes.byref(a), ctypes.byref(count)))
        else:
            error = lib.host_chain_episodes(g, b, ctypes.byref(a), ctypes.byref(count))
        assert error is None, error
        if len(args) > 1:
            args[-1][0] += count.value  # the kernel's atomicAdd on the episode counter


def fake_cupy(launches: list, copies: list | None = None):
    """The stand-in; ``copies`` (if given) records the shape of every device-to-host copy."""
    names = _kernel_names()

    def asnumpy(a):
        if copies is not None:
            copies.append(np.shape(a))
        return np.array(a, copy=True)

    class RawModule:
        def __init__(self, code, options):
            assert "chain_reset_generic" in code and any(o.startswith("-I") for o in options)

        def get_function(self, name):
            assert name in names, f"chain_kernel.cu has no kernel {name}"
            return _HostKernel(name, launches)

    return types.SimpleNamespace(
        asarray=_device, asnumpy=asnumpy,
        zeros=lambda shape, dtype: np.zeros(shape, dtype).view(_DeviceArray),
        empty=lambda shape, dtype: np.zeros(shape, dtype).view(_DeviceArray),
        uint64=np.uint64, RawModule=RawModule)


def _pair(n: int, num_envs: int = 37, generic: bool = False):
    p = ChainParams(links=n)
    weights = mlp_weights(3, sizes=(p.observation_size, 64, 64, 1))
    launches = []
    cuda = ChainCudaBackend(num_envs, p, weights, -0.5, generic=generic, cupy=fake_cupy(launches))
    cpu = ChainNativeBackend(num_envs, p, weights, -0.5)
    return cuda, cpu, launches


def _close(a, b):
    np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("n, generic", [(2, False), (5, False), (3, True)])
def test_the_cuda_launcher_steps_as_the_cpu_build(n, generic):
    cuda, cpu, launches = _pair(n, generic=generic)
    build = "generic" if generic or n not in nc.unrolled_links() else str(n)
    assert kernel_build(cuda.params, generic) == build
    for b in (cuda, cpu):
        b.reset(seed=7)
    _close(cuda.obs(), cpu.obs())
    ctrl = np.linspace(-1, 1, 37, dtype=np.float32)
    assert cuda.step(ctrl, 7) == cpu.step(ctrl, 7)
    done = [(cuda.rollout(40, policy, 7), cpu.rollout(40, policy, 7)) for policy in ("none", "mlp")]
    assert [c for c, _ in done] == [c for _, c in done] and sum(c for c, _ in done) > 0  # episodes ended
    _close(cuda.get_state(), cpu.get_state())
    for name in ("elapsed", "episode", "flags_out"):
        np.testing.assert_array_equal(getattr(cuda, name), getattr(cpu, name), err_msg=name)
    _close(cuda.reward_out, cpu.reward_out)
    _close(cuda.final_obs_out, cpu.final_obs_out)
    _close(cuda.policy_actions(7), cpu.policy_actions(7))
    mask = np.arange(37) % 3 == 0
    cuda.restart(mask, 7), cpu.restart(mask, 7)
    _close(cuda.obs(), cpu.obs())
    traj_cuda, done_cuda = cuda.collect(16, 9)
    traj_cpu, done_cpu = cpu.collect(16, 9)
    assert done_cuda == done_cpu
    for field, x, y in zip(traj_cpu._fields, traj_cuda, traj_cpu):
        _close(x, y) if x.dtype != np.uint8 else np.testing.assert_array_equal(x, y, err_msg=field)
    kernels = {name for name, _, _ in launches}
    assert kernels == {"chain_reset_generic", f"chain_episodes_{build}", f"chain_episodes_mlp_{build}"}
    assert all(grid == (1,) and block == (nc.THREADS_PER_BLOCK,) for _, grid, block in launches)  # 37 envs: one block


def test_a_wrong_kernel_would_do_nothing():
    """The stand-in is strict as the GPU: n = 2's arguments given to the n = 4 kernel leave the
    state as it was (so the test above can fail)."""
    cuda, _, _ = _pair(2)
    cuda.reset(seed=1)
    before = cuda.get_state()
    cuda._build = "4"
    cuda.rollout(5, "none", 1)
    np.testing.assert_array_equal(cuda.get_state(), before)


def test_cuda_on_the_chain_without_a_gpu_is_one_line():
    from studylib import make
    from studylib.devices import runs_here
    from studylib.errors import DeviceUnavailableError

    if runs_here("cuda"):
        pytest.skip("a CUDA device is here: the conformance tests step the chain's cuda")
    with pytest.raises(DeviceUnavailableError, match="no CUDA device"):
        make("cuda", 16, sim="chain", params=ChainParams(links=2))


def test_fused_on_a_gpu_runs_simulation_and_policy_in_one_launch_per_call(monkeypatch):
    """``make("fused", sim="chain", device="cuda")`` steps the chain's kernels (here the stand-in
    for CuPy above), its Gaussian MLP inside the kernel: one launch per K-step rollout, the same
    episodes, states and flags as ``fused`` on the CPU. (Before, the chain's ``fused`` ran on the
    CPU even where its record names the GPU first.)"""
    import sys

    from studylib import make
    from studylib.envs import base

    launches = []
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(launches))
    monkeypatch.setattr(base, "check_gpu_for", lambda impl, device: None)  # a GPU is "here"
    p = ChainParams(links=3)
    gpu, cpu = (make("fused", 37, sim="chain", params=p, seed=5, device=d) for d in ("cuda", "cpu"))
    assert (gpu.device, cpu.device, type(gpu.backend).__name__) == ("cuda", "cpu", "ChainCudaBackend")
    _close(gpu.reset(), cpu.reset())
    del launches[:]
    done = [(gpu.rollout(40, "mlp").episodes_finished, cpu.rollout(40, "mlp").episodes_finished) for _ in range(2)]
    assert all(g == c for g, c in done) and sum(g for g, _ in done) > 0
    assert [name for name, _, _ in launches] == ["chain_episodes_mlp_3"] * 2  # K steps and the policy: one launch
    _close(gpu.get_state(), cpu.get_state())
    np.testing.assert_array_equal(gpu.backend.flags_out, cpu.backend.flags_out)
    obs, reward, terminated, truncated = gpu.step(np.zeros(37, np.float32))
    ref = cpu.step(np.zeros(37, np.float32))
    _close(obs, ref[0]), _close(reward, ref[1])
    assert (terminated == ref[2]).all() and (truncated == ref[3]).all()


def test_a_rollout_copies_only_its_episode_count_back_and_a_read_copies_the_rest():
    """The per-environment results of a launch stay on the device until read: a K-step rollout makes
    one device-to-host copy (its episode count), and the first read of a result after it copies
    that result once (a copy of every result per call held cuda at K = 1 below jax on a GPU)."""
    p = ChainParams(links=2)
    copies = []
    cuda = ChainCudaBackend(37, p, None, 0.0, cupy=fake_cupy([], copies))
    cpu = ChainNativeBackend(37, p, None, 0.0)
    for b in (cuda, cpu):
        b.reset(seed=3)
    del copies[:]
    assert cuda.rollout(30, "none", 3) == cpu.rollout(30, "none", 3)
    assert copies == [(1,)]  # the episode counter alone
    np.testing.assert_array_equal(cuda.flags_out, cpu.flags_out)
    np.testing.assert_array_equal(cuda.flags_out, cpu.flags_out)  # read twice, copied once
    np.testing.assert_array_equal(cuda.elapsed, cpu.elapsed)
    _close(cuda.final_obs_out, cpu.final_obs_out)
    assert copies == [(1,), (37,), (37,), (37, p.observation_size)]
    ctrl = np.linspace(-1, 1, 37, dtype=np.float32)
    assert cuda.step(ctrl, 3) == cpu.step(ctrl, 3)
    _close(cuda.reward_out, cpu.reward_out), _close(cuda.obs(), cpu.obs())
