"""The chain's implementations (studylib/envs/chain_envs.py), made through their records, against
the float64 reference (studylib.sims.chain, itself checked against MuJoCo in test_chain.py) with
the same hashed controls; and a chain point measured through the harness like a CartPole one."""

from __future__ import annotations

import numpy as np
import pytest

from studylib import make
from studylib.envs.chain_base import VectorChain, reference_states
from studylib.errors import ConfigError
from studylib.harness.measure import measure
from studylib.implspec import specs
from studylib.settings import MeasurePoint, point_key
from studylib.sims.chain_model import ChainParams
from tests.test_chain import relative_error

CHAIN_IMPLS = [r.name for r in specs() if "chain" in r.sims]
N, K = 40, 10


def test_four_implementations_name_the_chain_in_their_records():
    assert len(CHAIN_IMPLS) >= 4
    for impl in CHAIN_IMPLS:
        env = make(impl, 3, sim="chain", params=ChainParams(links=2))
        assert isinstance(env, VectorChain) and env.get_state().shape == (3, 6)


@pytest.mark.parametrize("impl", CHAIN_IMPLS)
@pytest.mark.parametrize("n", (1, 3))
def test_k_steps_in_two_calls_are_the_references(impl, n):
    """K = 10 steps as 4 + 6 (the control stream goes on from the first call's last step), within
    test_chain_native's float32 bound (its chaos argument: measured here 2e-6 to 8e-5 for n = 1 to
    8; the loop is the reference's own arithmetic in float64)."""
    env = make(impl, N, sim="chain", params=ChainParams(links=n), seed=5)
    env.rollout(4)
    env.rollout(K - 4)
    env.synchronize()
    error = relative_error(env.get_state(), reference_states(n, N, K, seed=5)).max()
    assert error <= (1e-12 if env.dtype == np.float64 else 1e-3), error


@pytest.mark.parametrize("impl", [i for i in CHAIN_IMPLS if i != "jax"])  # jax: n = 8 compiles for ~15 s
def test_eight_links(impl):
    env = make(impl, 8, sim="chain", params=ChainParams(links=8))
    env.rollout(3)
    assert relative_error(env.get_state(), reference_states(8, 8, 3)).max() < 1e-3


def test_reset_and_set_state_restart_the_same_stream():
    env = make("cpp", 6, sim="chain", params=ChainParams(links=2))
    first = env.rollout(3) and env.get_state()
    env.reset()
    env.rollout(3)
    np.testing.assert_array_equal(env.get_state(), first)
    with pytest.raises(ConfigError, match=r"states must have shape \(6, 6\)"):
        env.set_state(np.zeros((6, 4)))
    with pytest.raises(ConfigError, match="finite"):
        env.set_state(np.full((6, 6), np.nan))


def test_the_chain_runs_no_policy_and_no_cartpole_knob():
    with pytest.raises(ConfigError, match="runs policy none only"):
        MeasurePoint.of("cpp", 8, 1, sim="chain", policy="mlp")
    with pytest.raises(ConfigError, match="takes no state_factor"):
        MeasurePoint.of("cpp", 8, 1, sim="chain", policy="none", state_factor=2)
    with pytest.raises(ConfigError, match="does not implement simulator 'chain'"):
        MeasurePoint.of("fused", 8, 1, sim="chain", policy="none")
    with pytest.raises(ConfigError, match="policy 'none' only"):
        make("torch", 2, sim="chain").rollout(1, "mlp")
    with pytest.raises(ConfigError, match="no n = 5"):
        make("cpp", 2, sim="chain", params=ChainParams(links=5))


def test_a_chain_point_is_measured_and_keyed_by_its_links():
    a = MeasurePoint.of("cpp", 16, 2, sim="chain", policy="none", params=ChainParams(links=3), repeats=2,
                        min_seconds=0.01)
    b = MeasurePoint.of("cpp", 16, 2, sim="chain", policy="none", params=ChainParams(links=4), repeats=2,
                        min_seconds=0.01)
    assert point_key(a.flat()) != point_key(b.flat()) and a.flat()["links"] == 3
    assert a.describe().startswith("chain links=3 cpp N=16")
    row = measure(a)
    assert (row["sim"], row["links"], row["impl"], row["device"]) == ("chain", 3, "cpp", "cpu")
    assert row["samples_per_s"] > 0 and row["episodes_finished"] == 0
    assert point_key(row) == point_key(a.flat())


def test_a_second_jax_chain_of_a_seen_shape_compiles_nothing():
    from studylib.envs.chain_envs import JaxChain

    p = ChainParams(links=1)
    first = make("jax", 5, sim="chain", params=p, seed=9)
    first.rollout(2)
    count = len(JaxChain._PROGRAMS)
    second = make("jax", 5, sim="chain", params=p, seed=9)
    second.rollout(2)
    assert len(JaxChain._PROGRAMS) == count  # the same (params, N, K, seed, device): the same program
    np.testing.assert_array_equal(second.get_state(), first.get_state())
    make("jax", 5, sim="chain", params=p, seed=10).rollout(2)
    assert len(JaxChain._PROGRAMS) == count + 1  # the seed is baked into the program's controls
