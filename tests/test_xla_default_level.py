"""The suite compiles JAX with XLA's backend optimization level 0 and its older elemental emitters
(tests/conftest.py's TEST_XLA_FLAGS: faster compiles; LLVM's code generation changes, XLA's HLO
passes do not, so results may move by float32 rounding). Users run XLA's defaults: two
conformance tests run again at them, in a pytest of their own, with jax among the
implementations they check (CartPole-v1 in lockstep with gymnasium for 1500 steps, and the
chain's environment step from a thousand states at n = 8), and the functional env's bit-for-bit
match with the jax implementation, which the suite skips."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import TEST_XLA_FLAGS

ROOT = Path(__file__).resolve().parent.parent
AT_DEFAULT = ["tests/test_conformance.py::test_long_run_lockstep_with_gymnasium[jax]",
              "tests/test_chain_envs.py::test_a_thousand_states_step_as_the_reference_at_every_n[8]",
              # bit for bit with the jax implementation: at XLA's defaults only (skipped in the suite)
              *(f"tests/test_jax_functional.py::test_matches_the_jax_implementation_step_for_step[{ids}]"
                for ids in ("1-1", "2-2"))]


def without_test_flags(flags: str) -> str:
    """``flags`` without the suite's compile options (TEST_XLA_FLAGS, whatever their values)."""
    for name in (f.split("=")[0] for f in TEST_XLA_FLAGS):
        flags = re.sub(rf"{name}=\S+", "", flags)
    return flags.strip()


def test_without_test_flags_drops_only_them():
    assert without_test_flags("--a=1 --xla_backend_optimization_level=0 --b") == "--a=1  --b"
    assert without_test_flags("--xla_cpu_use_fusion_emitters=false --a=1") == "--a=1"
    assert without_test_flags("") == ""


def test_conformance_at_xlas_default_level():
    assert all(f in os.environ["XLA_FLAGS"] for f in TEST_XLA_FLAGS)  # this session's options (conftest)
    env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    env["XLA_FLAGS"] = without_test_flags(env["XLA_FLAGS"])
    env["STUDYLIB_TESTS_XLA_DEFAULT_LEVEL"] = "1"
    r = subprocess.run([sys.executable, "-m", "pytest", "-o", "addopts=", "-p", "no:cacheprovider", "-q", *AT_DEFAULT],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0 and f"{len(AT_DEFAULT)} passed" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]
