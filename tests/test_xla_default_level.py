"""The suite compiles JAX at XLA's backend optimization level 0 (tests/conftest.py: 25-40% faster
compiles; LLVM's code generation changes, XLA's HLO passes do not, so results may move by float32
rounding). Users run the default level: two conformance tests run again at it, in a pytest of
their own, with jax among the implementations they check: CartPole-v1 in lockstep with gymnasium
for 1500 steps, and the chain's environment step from a thousand states at n = 8."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AT_DEFAULT = ["tests/test_conformance.py::test_long_run_lockstep_with_gymnasium[jax]",
              "tests/test_chain_envs.py::test_a_thousand_states_step_as_the_reference_at_every_n[8]"]


def without_level(flags: str) -> str:
    return re.sub(r"--xla_backend_optimization_level=\S+", "", flags).strip()


def test_without_level_drops_only_the_level():
    assert without_level("--a=1 --xla_backend_optimization_level=0 --b") == "--a=1  --b"
    assert without_level("") == ""


def test_conformance_at_xlas_default_level():
    assert "xla_backend_optimization_level=0" in os.environ["XLA_FLAGS"]  # this session's level (conftest)
    env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    env["XLA_FLAGS"] = without_level(env["XLA_FLAGS"])
    env["STUDYLIB_TESTS_XLA_DEFAULT_LEVEL"] = "1"
    r = subprocess.run([sys.executable, "-m", "pytest", "-o", "addopts=", "-p", "no:cacheprovider", "-q", *AT_DEFAULT],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0 and f"{len(AT_DEFAULT)} passed" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]
