"""Both kernel modules compiled by NVRTC as CuPy's RawModule compiles them on a GPU machine, for
sm_80 (A100) and sm_90 (H100), and ptxas's resource report of every kernel: no spills, and
registers within a stated budget.

The options are CudaModuleBackend's (studylib.native.backends.KERNEL_OPTIONS) plus those CuPy adds
(cupy/cuda/compiler.py, _compile_with_cache_cuda and _compile_using_nvrtc_no_warning: "-ftz=true",
"-arch=sm_XX" for the device, "--device-as-default-execution-space"; cupy/_core/core.pyx: its own
include directories), on the source CuPy is handed (native.source_with_header_digest), plus
"-Xptxas=-v" for the report, which changes no code. NVRTC is the library CuPy loads (the
nvidia-cuda-nvrtc wheel or the toolkit's); CuPy's own compile entry point asks the device for its
architecture, so where no driver is installed the test calls NVRTC through CuPy's binding itself.
Skipped where CuPy or libnvrtc is missing.
"""

from __future__ import annotations

import functools
import re

import pytest

from studylib import native
from studylib.native.backends import KERNEL_OPTIONS

ARCHS = ("80", "90")
MODULES = {"cartpole": native.KERNEL_SOURCE, "fused": native.FUSED_KERNEL_SOURCE}
ENTRIES = {
    "cartpole": ("cartpole_rollout", "cartpole_reset", "cartpole_restart"),
    "fused": ("fused_rollout", "fused_rollout_no_mlp", "fused_reset", "fused_restart", "fused_collect", "fused_mlp_logits"),
}
# Register budgets (per thread), each above what NVRTC 13.0 gives today (in brackets, sm_80 /
# sm_90), low enough that a regression such as fused_collect's former 255 registers with 1356 bytes
# of spill stores fails. Stack frames are allowed (32 bytes: sinf/cosf's slow path for large
# arguments, not spills). 65536 registers per SM: 128 registers x 128 threads a block is 4 blocks, 16 warps, an SM.
REGISTER_BUDGET = {
    "cartpole_rollout": 72,  # [66 / <= 64] since the paper's S: the carried floats stream through float4
    "cartpole_reset": 40,  # [24 / 24]
    "cartpole_restart": 40,  # [28 / 30]
    "fused_reset": 40,  # [24 / 24]
    "fused_restart": 40,  # [28 / 30]
    "fused_mlp_logits": 112,  # [96 / 96]
    "fused_rollout": 136,  # [130 / 131]
    "fused_rollout_no_mlp": 72,  # [66 / <= 64]: policy "none" and the caller's actions (carried floats as above)
    "fused_collect": 136,  # [128 / 132]
}


def _nvrtc():
    try:
        from cupy_backends.cuda.libs import nvrtc

        nvrtc.getVersion()
    except Exception as e:  # ImportError, or the library not found (RuntimeError, OSError)
        pytest.skip(f"NVRTC not available here: {type(e).__name__}: {e}")
    return nvrtc


def _cupy_include_options() -> tuple[str, ...]:
    """The include directories CuPy adds to every compile (its headers, its CCCL copy)."""
    from cupy._core import core

    return (f"-I{core._get_header_dir_path()}", *core._get_cccl_include_options())


def cupy_options(arch: str) -> tuple[str, ...]:
    return (*KERNEL_OPTIONS, *_cupy_include_options(), "-ftz=true", f"-arch=sm_{arch}",
            "--device-as-default-execution-space")


@functools.lru_cache(maxsize=None)
def _compile(module: str, arch: str) -> tuple[bool, str, bytes]:
    """(compiled, NVRTC's log with ptxas's report, cubin), once per session."""
    nvrtc = _nvrtc()
    source = MODULES[module]
    prog = nvrtc.createProgram(native.source_with_header_digest(source), source.name, (), ())
    try:
        nvrtc.compileProgram(prog, [*cupy_options(arch), "-Xptxas=-v"])
        return True, nvrtc.getProgramLog(prog), nvrtc.getCUBIN(prog)
    except nvrtc.NVRTCError:
        return False, nvrtc.getProgramLog(prog), b""
    finally:
        nvrtc.destroyProgram(prog)


def ptxas_report(log: str) -> dict[str, dict[str, int]]:
    """{kernel: {'registers', 'spill_stores', 'spill_loads', 'stack'}} from ptxas -v's lines."""
    report, current = {}, None
    for line in log.splitlines():
        if m := re.search(r"Compiling entry function '(\w+)'", line):
            current = report.setdefault(m.group(1), {})
        elif current is not None and (m := re.search(
                r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)):
            current.update(stack=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3)))
        elif current is not None and (m := re.search(r"Used (\d+) registers", line)):
            current["registers"] = int(m.group(1))
    return report


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("module", sorted(MODULES))
def test_nvrtc_compiles_the_module_with_cupys_options(module, arch):
    ok, log, cubin = _compile(module, arch)
    assert ok, log
    assert cubin[:4] == b"\x7fELF"  # a cubin for the architecture asked, not PTX
    for entry in ENTRIES[module]:
        assert entry.encode() in cubin


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_kernel_spills_or_exceeds_its_register_budget(module, arch):
    ok, log, _ = _compile(module, arch)
    assert ok, log
    report = ptxas_report(log)
    assert set(report) == set(ENTRIES[module]), log
    for entry, usage in report.items():
        assert usage["spill_stores"] == 0 and usage["spill_loads"] == 0, (entry, usage)
        assert usage["registers"] <= REGISTER_BUDGET[entry], (entry, usage)


def test_the_report_parser_reads_a_spilling_kernel():
    """The parser on ptxas's own words for fused_collect before its fix (NVRTC 13.0, sm_80)."""
    log = """ptxas info    : Compiling entry function 'fused_collect' for 'sm_80'
ptxas info    : Function properties for fused_collect
ptxas         .     720 bytes stack frame, 1356 bytes spill stores, 1380 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 720 bytes cumulative stack size, 18440 bytes smem"""
    assert ptxas_report(log) == {"fused_collect": {"stack": 720, "spill_stores": 1356, "spill_loads": 1380,
                                                   "registers": 255}}
