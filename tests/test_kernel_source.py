"""The CUDA kernel source: it compiles for the GPU (PTX), and its CPU build is the one in use."""

import re

import pytest

from studylib import native
from tests.conftest import compile_ptx


def test_nvcc_compiles_the_kernel_to_ptx(tmp_path):
    ptx = compile_ptx(native.KERNEL_SOURCE, tmp_path)
    for entry in ("rollout", "reset", "restart"):
        assert f".entry cartpole_{entry}" in ptx
    assert "div.rn.f32" in ptx  # the physics (thetaacc's division) really is in the kernel
    assert str(0x7FEB352D) in ptx  # and so is the counter hash


PIECES = ("cp_physics", "cp_env_finish", "cp_reset_cartpole", "cp_hash_action")  # what cp_env_step calls


def _code(text: str) -> str:
    """C/C++ source without its comments: a name in a comment is not a use."""
    return re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)


def _calls(code: str, name: str) -> bool:
    return re.search(rf"\b{name}\s*\(", code) is not None


def _defines(code: str, name: str) -> bool:
    return re.search(rf"\b{name}\s*\([^;{{}}]*\)\s*\{{", code) is not None


def test_cpu_build_uses_the_shared_header():
    """The CPU build calls the pieces ``cp_env_step`` is made of and defines none of them: they
    are the shared header's (comments stripped, so a name only mentioned does not count)."""
    assert native.build_info()["path"].endswith(".so")
    header = _code(native.HEADER.read_text())
    src = _code(native.CPU_SOURCE.read_text())
    kernel = _code(native.KERNEL_SOURCE.read_text())
    for include in ('#include "cartpole.cuh"', '#include "rollout_args.h"'):
        assert include in src and include in kernel
    assert '#include "cpu_rollout.h"' in src
    cpu = src + _code(native.CPU_ROLLOUT_HEADER.read_text())  # the CPU block loop the driver runs
    for piece in PIECES:
        assert _defines(header, piece), f"{piece} is not defined in {native.HEADER.name}"
        assert _calls(cpu, piece) and not _defines(cpu, piece), f"the CPU build does not use the header's {piece}"
    # The check reads code: cpu_rollout.h names cp_env_step in a comment only.
    assert "cp_env_step" in native.CPU_ROLLOUT_HEADER.read_text() and not _calls(cpu, "cp_env_step")


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


_PARTS_SOURCE = r"""
#ifndef STUDYLIB_PARTS
#define STUDYLIB_PARTS 1
#define STUDYLIB_PART 0
#endif
extern "C" int second_half();
#if STUDYLIB_PART == 0
extern "C" int answer() { return 40 + second_half(); }
extern "C" int parts() { return STUDYLIB_PARTS; }
#endif
#if STUDYLIB_PART == STUDYLIB_PARTS - 1
extern "C" int second_half() { return 2; }
#endif
"""


def _toy_library(monkeypatch, tmp_path, source: str, parts: int):
    from studylib.native import build

    (tmp_path / "toy.cpp").write_text(source)
    monkeypatch.setenv("STUDYLIB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(build.os, "cpu_count", lambda: 2)
    monkeypatch.setitem(build.LIBRARIES, "toy", build.NativeLibrary("toy", tmp_path / "toy.cpp", (), None, parts=parts))
    return build.build_info.__wrapped__("toy")


@pytest.mark.parametrize("parts", [1, 2])
def test_a_library_in_parts_is_the_whole_library(monkeypatch, tmp_path, parts):
    """A library with ``parts`` compiles its source once per part (-DSTUDYLIB_PART=i, at once) and
    links them: the same functions as the source compiled whole."""
    import ctypes

    lib = ctypes.CDLL(_toy_library(monkeypatch, tmp_path, _PARTS_SOURCE, parts)["path"])
    assert lib.answer() == 42
    assert lib.parts() == parts


def test_a_part_that_does_not_compile_is_named(monkeypatch, tmp_path):
    broken = _PARTS_SOURCE.replace("return 2;", "return two;")  # only part 1 sees it
    with pytest.raises(native.NativeBuildError, match="-DSTUDYLIB_PART=1") as e:
        _toy_library(monkeypatch, tmp_path, broken, 2)
    assert "two" in str(e.value)


def test_a_library_needed_at_once_by_two_builders_compiles_once(monkeypatch, tmp_path):
    """Two builders wanting the same library at the same moment (two pytest-xdist workers, two of
    a book's kernels): the second waits on the first one's lock and loads its build."""
    import threading

    from studylib.native import build

    compiles = []
    real_run_all = build._run_all

    def counted(commands, spec):
        compiles.append(len(commands))
        real_run_all(commands, spec)

    monkeypatch.setattr(build, "_run_all", counted)
    (tmp_path / "toy.cpp").write_text(_PARTS_SOURCE)
    monkeypatch.setenv("STUDYLIB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(build.LIBRARIES, "toy", build.NativeLibrary("toy", tmp_path / "toy.cpp", (), None))
    results, start = [], threading.Barrier(2)

    def builder():
        start.wait()
        results.append(build.build_info.__wrapped__("toy"))

    threads = [threading.Thread(target=builder) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert compiles == [1], "the library was compiled more than once"
    assert sorted(r["cached"] for r in results) == [False, True]
    assert results[0]["path"] == results[1]["path"]
