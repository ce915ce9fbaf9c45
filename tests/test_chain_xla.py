"""The chain's jax formulations (studylib/sims/chain/dynamics_xla.py) against the float64 reference
(``dynamics.env_step`` on numpy, itself checked against MuJoCo's mj_step in tests/test_chain.py
and tests/test_chain_conformance.py): the articulated-body step in float64 (the same physics, to
rounding) and float32 (float32's tolerance), the polynomial sine and cosine's accuracy, and the
compiled program's size not growing with n."""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = jax.numpy

from studylib.sims.chain import dynamics, dynamics_xla  # noqa: E402
from studylib.sims.chain.model import ChainParams  # noqa: E402

LINKS = (1, 2, 4, 8, 16, 32)
COUNT = 256


def relative_error(a, b):
    """|a − b| / max(|b|, 1): relative where |b| > 1, absolute near zero."""
    return np.abs(np.asarray(a, np.float64) - b) / np.maximum(np.abs(b), 1.0)


def random_inputs(n, count, seed=0):
    """tests/test_chain.py's: cart x in ±1, hinge angles in ±0.5 rad, qvel in ±2, ctrl in ±1."""
    rng = np.random.default_rng(seed + n)
    qpos = np.concatenate((rng.uniform(-1, 1, (count, 1)), rng.uniform(-0.5, 0.5, (count, n))), axis=1)
    return np.concatenate((qpos, rng.uniform(-2, 2, (count, n + 1))), axis=1), rng.uniform(-1, 1, count)


def check_step(out, ref, p, bound):
    """(next_state, observation, reward) within ``bound``; terminated equal but where the reference's
    tip is within ``bound`` · n L of the threshold (either answer is right there)."""
    for ours, theirs in zip(out[:3], ref[:3]):
        assert ours.shape == theirs.shape
        assert relative_error(ours, theirs).max() < bound
    near = np.abs(ref[4] - p.length / 1.2) < bound * p.length
    np.testing.assert_array_equal(np.asarray(out[3])[~near], ref[3][~near])
    assert 0 < ref[3].sum() < len(ref[3]) or p.links == 1


@functools.lru_cache(maxsize=None)
def reference(n, count=COUNT):
    """(p, states, ctrl, (next_state, observation, reward, terminated, the tip's height y))."""
    p = ChainParams(links=n)
    states, ctrl = random_inputs(n, count)
    # env_step's lines, keeping the tip's height (the reference costs seconds at n = 32)
    next_state, seen = dynamics._steps(states, ctrl, p, np, p.frame_skip)
    x, y = dynamics.tip(seen, p)
    terminated = dynamics.is_terminated(y, p)
    out = (next_state, dynamics.observation(next_state, p),
           dynamics.reward(x, y, next_state[:, n + 1:], terminated, p), terminated)
    if n <= 4:
        for a, b in zip(out, dynamics.env_step(states, ctrl, p)):
            np.testing.assert_array_equal(a, b)
    return p, states, ctrl, (*out, y)


# The articulated-body algorithm in float64 solves the same M q̈ = τ − c as the reference's Cholesky;
# measured worst relative errors of one environment step (next state), n = 1, 2, 4, 8, 16, 32:
# 1e-15, 2e-15, 1.5e-14, 7e-14, 7e-13, 6e-12 (the mass matrix's conditioning grows with n);
# bound 1e-9, 150x the worst.
@pytest.mark.parametrize("n", LINKS)
def test_the_articulated_body_step_in_float64_is_the_references(n):
    p, states, ctrl, ref = reference(n)
    with jax.enable_x64(True):
        out = jax.jit(lambda s, c: dynamics_xla.aba_env_step(s, c, p))(jnp.asarray(states), jnp.asarray(ctrl))
        assert out[0].dtype == jnp.float64
        check_step([np.asarray(a) for a in out], ref, p, 1e-9)


# float32: the inputs' rounding (6e-8) through frame_skip RK4 steps of a stiff, chaotic chain.
# Measured worst relative errors (next state) of the articulated-body step, n = 1, 2, 4, 8, 16, 32:
# 7e-7, 8e-7, 1.3e-6, 6e-6, 4e-5, 2.5e-4; the reference's own lines run in float32 (numpy) are
# off by 1e-6, 1.4e-6, 4e-6, 9e-6, 1.2e-4, 2e-3: float32's rounding, which the bounds (about 10x the
# ABA's measurement, 1e-4 as tests/test_chain.py's up to n = 8) allow and no more.
FLOAT32_BOUND = {1: 1e-5, 2: 1e-5, 4: 3e-5, 8: 1e-4, 16: 5e-4, 32: 3e-3}


@pytest.mark.parametrize("n", LINKS)
def test_the_articulated_body_step_in_float32_is_the_references_to_float32(n):
    p, states, ctrl, ref = reference(n)
    out = jax.jit(lambda s, c: dynamics_xla.aba_env_step(s, c, p))(jnp.asarray(states, jnp.float32),
                                                                     jnp.asarray(ctrl, jnp.float32))
    assert out[0].dtype == out[1].dtype == out[2].dtype == jnp.float32 and out[3].dtype == jnp.bool_
    check_step([np.asarray(a) for a in out], ref, p, FLOAT32_BOUND[n])


@pytest.mark.parametrize("name", ["aba_unrolled", "aba_barrier", "aba_jnp_sin"])  # aba_flat, columns_poly: 15-20 s compiles
def test_every_formulation_at_two_links_is_the_references_to_float32(name):
    p, states, ctrl, ref = reference(2)
    fn = dynamics_xla.FORMULATIONS[name]
    out = jax.jit(lambda s, c: fn(s, c, p, jnp))(jnp.asarray(states, jnp.float32), jnp.asarray(ctrl, jnp.float32))
    check_step([np.asarray(a) for a in out], ref, p, FLOAT32_BOUND[2])


@pytest.mark.parametrize("n", [1, 2, 3, 4, 8, 12, 16, 32])
def test_best_env_step_is_a_formulation_and_keeps_the_contract(n):
    p = ChainParams(links=n)
    fn = dynamics_xla.best_env_step(p)
    assert fn in dynamics_xla.FORMULATIONS.values()
    if n in (1, 3, 12):  # one of each kind, quickly
        _, states, ctrl, ref = reference(n, 64)
        out = jax.jit(lambda s, c: fn(s, c, p, jnp))(jnp.asarray(states, jnp.float32), jnp.asarray(ctrl, jnp.float32))
        check_step([np.asarray(a) for a in out], ref, p, 1e-4 if n < 12 else 5e-4)


# ---- the polynomial sine and cosine ----

def test_polynomial_sine_and_cosine_are_float32_accurate():
    """Against numpy's float64 sin/cos of the same float32 inputs: on [−π, π] (link angles) the
    error is float32's half ulp of a value ≤ 1 and the polynomials' (measured 9.1e-8 absolute;
    numpy's own float32 sin: 6.2e-8; bound 2.5e-7); up to |x| = 1000 (spinning links) the
    reduction's k · π/2 split stays exact (measured 8.9e-8, and 9.0e-8 up to 8000; bound 5e-7);
    sin² + cos² = 1 within 3e-7 (measured 1.5e-7)."""
    rng = np.random.default_rng(0)
    for width, bound in ((np.pi, 2.5e-7), (1000.0, 5e-7)):
        x = np.concatenate((rng.uniform(-width, width, 200_000), np.linspace(-width, width, 100_001))).astype(np.float32)
        s, c = jax.jit(dynamics_xla.sincos_poly)(jnp.asarray(x))
        s, c = np.asarray(s), np.asarray(c)
        assert s.dtype == np.float32
        x64 = x.astype(np.float64)
        assert np.abs(s - np.sin(x64)).max() < bound, width
        assert np.abs(c - np.cos(x64)).max() < bound, width
        assert np.abs(s.astype(np.float64) ** 2 + c.astype(np.float64) ** 2 - 1).max() < 3e-7
    # the quadrants' exact points and signs
    k = np.arange(-8, 9)
    x = (k * np.pi / 2).astype(np.float32)  # rounded: sin(float32(kπ/2)) is ~1e-7, not 0
    s, c = (np.asarray(a) for a in dynamics_xla.sincos_poly(jnp.asarray(x)))
    np.testing.assert_allclose(s, np.sin(x.astype(np.float64)), rtol=0, atol=1e-7)
    np.testing.assert_allclose(c, np.cos(x.astype(np.float64)), rtol=0, atol=1e-7)


def test_float64_takes_jnp_sine_and_cosine():
    with jax.enable_x64(True):
        x = jnp.linspace(-10, 10, 1001, dtype=jnp.float64)
        s, c = dynamics_xla.sincos(x)
        np.testing.assert_array_equal(np.asarray(s), np.asarray(jnp.sin(x)))
        np.testing.assert_array_equal(np.asarray(c), np.asarray(jnp.cos(x)))


# ---- the program's size ----

def hlo_ops(fn, n, count=8):
    """The number of operations in the StableHLO text jit lowers one environment step to."""
    p = ChainParams(links=n)
    s = jnp.zeros((count, p.state_size), jnp.float32)
    text = jax.jit(lambda st, c: fn(st, c, p, jnp)).lower(s, jnp.zeros(count, jnp.float32)).as_text()
    return len(re.findall(r"= (?:stablehlo|chlo|mhlo)\.", text))


def test_the_articulated_body_program_does_not_grow_with_n():
    """Loops over links and frames: the program barely changes from n = 8 to 32 (measured 1427,
    1483, 1595 operations: only the observation's and reward's per-hinge terms, linear in n, grow;
    a cubic program would be 64x), where the columns' grows like n³ (measured 3120 at n = 2, 7994
    at n = 4; n = 8 compiles in 30–100 s on 2 cores)."""
    aba = [hlo_ops(dynamics_xla.aba_env_step, n) for n in (8, 16, 32)]
    assert aba[2] - aba[1] < 3 * (aba[1] - aba[0]) and aba[2] < 1.25 * aba[0], aba  # linear at most
    columns = [hlo_ops(dynamics_xla.columns_env_step, n) for n in (2, 4)]
    assert columns[1] > 2 * columns[0] and aba[-1] < columns[1], (aba, columns)
