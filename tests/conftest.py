"""Shared fixtures: the implementations this machine can run, and a gymnasium reference."""

from __future__ import annotations

import os

# Each pytest-xdist worker gets its share of the cores for the thread pools of OpenMP (PyTorch's
# intra-op pool), BLAS and XLA's Eigen pool, set before any of them starts. With two workers on
# 2 cores, each worker's libraries otherwise start a pool as wide as the machine: 4 busy threads
# on 2 cores, and OpenMP's spinning waiters took CPU the other worker's compiler needed.
if os.environ.get("PYTEST_XDIST_WORKER"):
    _threads = str(max(1, (os.cpu_count() or 1) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))))
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_var, _threads)
    if _threads == "1" and "xla_cpu_multi_thread_eigen" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_cpu_multi_thread_eigen=false".strip()

# XLA's compile options for every JAX program the suite compiles, as the tiny book's build already
# used them: backend optimization level 0 (LLVM's codegen at -O0: the chain's step at n = 2, 8, 32
# compiled in 1.0-1.1 s instead of 1.3-1.8 s) and XLA:CPU's older elemental emitters instead of its
# fusion emitters (a further ~30% here: the chain's step at n = 4 and 2 and CartPole's rollout,
# 2.2 s -> 1.5 s together, three runs each; MJX's pendulum step 10-15%). The suite compiles some
# 700 programs; XLA's own passes (fusion, simplification) are the same, so results move by float32
# rounding at most. What users run is XLA's defaults: tests/test_xla_default_level.py runs
# conformance tests again without these options.
TEST_XLA_FLAGS = ("--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false")
AT_XLA_DEFAULTS = bool(os.environ.get("STUDYLIB_TESTS_XLA_DEFAULT_LEVEL"))
if not AT_XLA_DEFAULTS:
    _given = os.environ.get("XLA_FLAGS", "")
    _missing = [f for f in TEST_XLA_FLAGS if f.split("=")[0] not in _given]
    os.environ["XLA_FLAGS"] = " ".join([_given, *_missing]).strip()

def _session_folder(variable: str, prefix: str) -> str | None:
    """A temporary folder named by ``$variable`` for the whole session: made by the first process
    (pytest's controller, before its workers start; they inherit the variable) and returned to be
    removed by it at the end; None where the variable is already set (a worker, or the caller's)."""
    if variable in os.environ:
        return None
    import tempfile

    os.environ[variable] = tempfile.mkdtemp(prefix=prefix)
    return os.environ[variable]


# One XLA compilation cache for the session, shared by both workers and the tiny book's chapter
# kernels (they inherit the environment): a program compiled once (the chain's step at a given
# (n, N), a CartPole rollout at the tiny preset's N and K) is read back, not compiled again, in
# the next test or chapter that builds it.
_JAX_CACHE_CREATED = _session_folder("JAX_COMPILATION_CACHE_DIR", "studylib-tests-xla-")
if _JAX_CACHE_CREATED:
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    os.environ["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"

# One cost-model calibration and ceilings (harness/model/calibrate.py) for the session, shared by
# both workers and the tiny book's build (the ``calibrated`` fixture): each measured them again in
# its own folder (about 10 s apiece here), and what they measure does not depend on the test.
_CALIBRATION_CREATED = _session_folder("STUDYLIB_TESTS_CALIBRATION_DIR", "studylib-tests-calibration-")

import functools
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest
from gymnasium.envs.classic_control.cartpole import CartPoleEnv

import studylib
from studylib import devices
from studylib.devices import cuda_available_for, runs_here
from studylib.settings import PEERS


def _impl_params():
    for impl in studylib.IMPLEMENTATIONS:
        marks = [] if runs_here(impl) else [pytest.mark.skip(reason=f"{impl}: {cuda_available_for(impl)[1]}")]
        yield pytest.param(impl, marks=marks, id=impl)


IMPL_PARAMS = list(_impl_params())


def default_device(impl: str) -> str:
    """The device ``impl`` runs on when none is asked for (its record's first device that works
    here: the GPU where its framework sees one), so that the tests hold on a GPU machine as on a
    CPU one. Peers run on the CPU."""
    return "cpu" if impl in PEERS else devices.default_device(impl)


@pytest.fixture(params=IMPL_PARAMS)
def impl(request):
    return request.param


def gym_reference_step(states, actions):
    """One gymnasium CartPoleEnv.step per row, from float64 states (N, 4): the ground truth."""
    env = CartPoleEnv()
    env.reset(seed=0)
    out_obs, out_state, out_term = [], [], []
    for state, action in zip(np.asarray(states, np.float64), actions):
        env.state = state.copy()
        env.steps_beyond_terminated = None
        obs, reward, terminated, truncated, _ = env.step(int(action))
        assert reward == 1.0 and not truncated
        out_obs.append(obs)
        out_state.append(np.array(env.state))
        out_term.append(terminated)
    return np.array(out_state), np.array(out_obs), np.array(out_term)


def random_states(rng, n, state_factor=1):
    """States spread over the region CartPole visits, including near the thresholds."""
    scale = np.array([2.4, 2.0, 0.21, 3.0] * state_factor)
    return rng.uniform(-1, 1, (n, 4 * state_factor)) * scale


def compile_ptx(source, tmp_path) -> str:
    """``nvcc -ptx`` one kernel source (include path cuda/); skip the test where nvcc is absent.
    Compiled once per session for a given text of the source and its headers (the fused kernel
    takes several seconds), into ``tmp_path``."""
    from studylib import native

    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip(f"nvcc not installed: {source.name}'s PTX compile is not checked here")
    ok, text = _nvcc_ptx(nvcc, str(source), native.source_with_header_digest(source))
    assert ok, text
    (tmp_path / f"{source.stem}.ptx").write_text(text)
    return text


@functools.lru_cache(maxsize=None)
def _nvcc_ptx(nvcc: str, source: str, text_with_digest: str) -> tuple[bool, str]:
    """(compiled, PTX or the error); the source's text with its headers' digest keys the cache."""
    from studylib import native

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "kernel.ptx"
        proc = subprocess.run([nvcc, "-ptx", "-arch=sm_80", f"-I{native.CUDA_SOURCE_DIR}", source, "-o", str(out)],
                              capture_output=True, text=True)
        return (True, out.read_text()) if proc.returncode == 0 else (False, proc.stderr)


@pytest.fixture(scope="module")
def native_compiler():
    """Skip a module of native tests, saying why, where no C++ compiler can build the libraries."""
    from studylib import native

    try:
        native._compiler()
    except native.NativeBuildError as e:
        pytest.skip(str(e))


def pytest_unconfigure(config):
    for created in (_JAX_CACHE_CREATED, _CALIBRATION_CREATED):
        if created:
            shutil.rmtree(created, ignore_errors=True)


@pytest.fixture(scope="session")
def calibrated() -> Path:
    """This machine's folder of the session's cost-model calibration and ceilings: measured by the
    first process that asks (the others wait on a lock), then read."""
    import fcntl

    from studylib.harness.data import provenance
    from studylib.harness.model import calibrate

    root = Path(os.environ["STUDYLIB_TESTS_CALIBRATION_DIR"])
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            calibrate.calibration_rows(root), calibrate.ceiling_rows(root)  # (read where saved)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return root / provenance.machine_key()


def copy_calibration(calibrated: Path, data_dir: Path) -> Path:
    """``data_dir`` with this machine's folder holding the session's calibration files only."""
    from studylib.harness.model import calibrate, roofline

    folder = Path(data_dir) / calibrated.name
    folder.mkdir(parents=True, exist_ok=True)
    for name in (f"{calibrate.NAME}.json", roofline.CEILINGS_FILE):
        shutil.copy(calibrated / name, folder / name)
    return Path(data_dir)


def pytest_collection_modifyitems(config, items):
    # The longest test files first, by their measured seconds, so that pytest-xdist's two workers
    # end together (tests/file_seconds.py).
    from tests.file_seconds import longest_files_first, seconds_by_file

    items[:] = longest_files_first(items, seconds_by_file())


@pytest.fixture(autouse=True)
def _torch_threads_unchanged():
    """A test leaves PyTorch's intra-op thread count as it found it: one worker runs many files,
    and a count left at 1 by one test changed what a later one measured (a Ray sweep's provenance
    against a local sweep's, after the files were reordered)."""
    import sys

    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    yield
    torch = sys.modules.get("torch")
    if before is not None and torch is not None and torch.get_num_threads() != before:
        after = torch.get_num_threads()
        torch.set_num_threads(before)
        pytest.fail(f"the test left torch's intra-op threads at {after} (was {before})")
