"""The library as its users install it: a wheel built from the sources, installed into a fresh
virtual environment (not editable), steps the native implementations from there.

The wheel is built from a copy of the tracked package files (a clean clone's), with no network
(``--no-index``, the build backend already installed); the virtual environment reuses this
environment's installed dependencies through a path file (not its site directory, whose editable
``studylib`` would shadow the wheel's) and runs outside the repository with no PYTHONPATH, so the
``studylib`` it imports is the wheel's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest
from setuptools import find_packages

ROOT = Path(__file__).resolve().parent.parent


# Without PYTHONPATH: the repository on it would be an installed studylib to pip and to Python.
CLEAN_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _run(cmd, **kwargs):
    proc = subprocess.run(cmd, capture_output=True, text=True, env=CLEAN_ENV, **kwargs)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))}\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="session")
def wheel_path(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("clone")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for folder in ("studylib", "cuda"):
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-index", "--no-build-isolation",
          "-q", "-w", str(out)])
    (wheel,) = out.glob("studylib-*.whl")
    return wheel


@pytest.fixture(scope="session")
def venv_python(wheel_path, tmp_path_factory) -> Path:
    venv = tmp_path_factory.mktemp("venv")
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q",
          str(wheel_path)])
    # the dependencies, after the install (pip would see the editable studylib there as installed)
    (site / "reuse_test_env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def test_the_wheel_carries_every_package_and_the_kernel_sources(wheel_path):
    names = set(zipfile.ZipFile(wheel_path).namelist())
    kernel_files = {f"studylib/_cuda/{p.name}" for p in (ROOT / "cuda").iterdir() if p.suffix in (".cuh", ".h", ".cpp", ".cu")}
    assert kernel_files and kernel_files <= names
    # pyproject.toml lists the packages by hand (for the cuda/ mapping): it must list them all
    for package in find_packages(ROOT, include=["studylib*"]):
        assert f"{package.replace('.', '/')}/__init__.py" in names, package


def test_cpp_and_fused_step_from_the_installed_wheel(venv_python, tmp_path):
    script = textwrap.dedent("""
        import json, numpy as np, studylib
        from studylib import native
        out = {"module": studylib.__file__, "sources": str(native.CUDA_SOURCE_DIR)}
        for impl in ("cpp", "fused"):
            env = studylib.make(impl, 16, seed=3, device="cpu")
            env.reset()
            obs, reward, terminated, truncated = env.step(np.ones(16, np.int64))
            out[impl] = [obs.tolist(), float(reward.sum()), env.rollout(50, policy="none").episodes_finished]
        print(json.dumps(out))
    """)
    got = json.loads(_run([str(venv_python), "-c", script], cwd=tmp_path).stdout)
    venv = str(venv_python.parent.parent)
    assert got["module"].startswith(venv) and got["sources"].startswith(venv), got  # the wheel's, not the repo's

    import numpy as np

    import studylib

    for impl in ("cpp", "fused"):  # the installed library steps as the repository's does
        env = studylib.make(impl, 16, seed=3, device="cpu")
        env.reset()
        obs, reward, _, _ = env.step(np.ones(16, np.int64))
        np.testing.assert_array_equal(np.array(got[impl][0], np.float32), obs)
        assert got[impl][1] == float(reward.sum()) == 16.0
        assert got[impl][2] == env.rollout(50, policy="none").episodes_finished
