"""The CUDA kernel source: it compiles for the GPU (PTX), and its CPU build is the one in use."""

import pytest

from studylib import native
from tests.conftest import compile_ptx


def test_nvcc_compiles_the_kernel_to_ptx(tmp_path):
    ptx = compile_ptx(native.KERNEL_SOURCE, tmp_path)
    for entry in ("rollout", "reset", "restart"):
        assert f".entry cartpole_{entry}" in ptx
    assert "div.rn.f32" in ptx  # the physics (thetaacc's division) really is in the kernel
    assert str(0x7FEB352D) in ptx  # and so is the counter hash


def test_cpu_build_uses_the_shared_header():
    info = native.build_info()
    assert info["path"].endswith(".so")
    src = native.CPU_SOURCE.read_text()
    kernel = native.KERNEL_SOURCE.read_text()
    assert '#include "cartpole.cuh"' in src and '#include "cartpole.cuh"' in kernel
    assert '#include "cpu_rollout.h"' in src
    assert '#include "rollout_args.h"' in src and '#include "rollout_args.h"' in kernel
    src += native.CPU_ROLLOUT_HEADER.read_text()  # the CPU block loop the driver runs
    for piece in ("cp_physics", "cp_env_finish", "cp_reset_row", "cp_hash_action"):
        assert piece in native.HEADER.read_text()
    for piece in ("cp_physics", "cp_env_finish", "cp_reset_row", "cp_hash_action"):
        assert piece in src  # the CPU build calls the same pieces cp_env_step is made of


def test_missing_compiler_is_one_clear_line(monkeypatch):
    monkeypatch.setenv("CXX", "")
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(native.NativeBuildError, match="no C\\+\\+ compiler found") as e:
        native._compiler()
    assert "\n" not in str(e.value)


def test_nvcc_compiles_the_collect_kernel_to_ptx(tmp_path):
    """fused_collect (in-kernel sampling, the trajectory written) compiles for the GPU and takes
    its two structs by value, RolloutArgs then TrajectoryArgs, of their ctypes sizes."""
    import ctypes

    ptx = compile_ptx(native.FUSED_KERNEL_SOURCE, tmp_path)
    params = ptx.split(".entry fused_collect(")[1].split(")")[0]
    assert params.count(".param") == 2
    assert f"fused_collect_param_0[{ctypes.sizeof(native.RolloutArgs)}]" in params
    assert f"fused_collect_param_1[{ctypes.sizeof(native.TrajectoryArgs)}]" in params
    body = ptx.split(".entry fused_collect(")[1].split(".entry ")[0]
    assert "ex2.approx" in body  # the softmax sample's exp
    assert str(native.SAMPLE_SALT) in body and str(0x7FEB352D) in body  # the draws' key and hash
    assert "fma.rn.f32" in body and ".shared" in ptx  # the MLP, its weights in shared memory
