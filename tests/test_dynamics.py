"""The Python reference (studylib.sims.cartpole) against gymnasium itself, and the knobs S and C."""

import dataclasses

import numpy as np
import pytest

from studylib.sims.cartpole import CARTPOLE_V1, CartPoleParams, reference_step
from tests.conftest import gym_reference_step, random_states


def test_params_match_gymnasium_and_derive_constants():
    from gymnasium.envs.classic_control.cartpole import CartPoleEnv

    env = CartPoleEnv()
    for field in ("gravity", "masscart", "masspole", "length", "force_mag", "tau", "x_threshold",
                  "theta_threshold_radians", "total_mass", "polemass_length"):
        assert getattr(CARTPOLE_V1, field) == getattr(env, field), field
    heavier = dataclasses.replace(CARTPOLE_V1, masspole=0.3, length=2.0)
    assert heavier.total_mass == 1.3
    assert heavier.polemass_length == 0.6  # masspole * length, not masspole + length (peer bug)
    with pytest.raises(dataclasses.FrozenInstanceError):
        CARTPOLE_V1.tau = 0.01


def test_reference_equals_gymnasium_bit_for_bit():
    rng = np.random.default_rng(0)
    states = random_states(rng, 2000)
    actions = rng.integers(0, 2, 2000)
    ref_state, ref_obs, ref_term = gym_reference_step(states, actions)
    state, obs, term = reference_step(states, actions)
    np.testing.assert_array_equal(state, ref_state)
    np.testing.assert_array_equal(obs, ref_obs)
    np.testing.assert_array_equal(term, ref_term)
    assert 0 < term.sum() < len(term)  # both outcomes were exercised


def test_state_factor_carries_floats_and_leaves_the_cartpole_unchanged():
    """Paper §4.2: "The state factor S increases the cartpole state size by a factor of S×,
    resulting in S× as many global memory loads and stores": the CartPole's step is CartPole-v1's
    for every S, and the 4*(S-1) carried floats come back sign-flipped, exactly."""
    rng = np.random.default_rng(1)
    states = random_states(rng, 50, state_factor=3)
    actions = rng.integers(0, 2, 50)
    joint, obs, term = reference_step(states, actions)
    assert joint.shape == (50, 12)
    cartpole, obs0, term0 = gym_reference_step(states[:, :4], actions)  # gymnasium itself
    np.testing.assert_array_equal(joint[:, :4], cartpole)
    np.testing.assert_array_equal(obs, obs0)
    np.testing.assert_array_equal(term, term0)
    np.testing.assert_array_equal(joint[:, 4:], -states[:, 4:])
    np.testing.assert_array_equal(reference_step(joint, actions)[0][:, 4:], states[:, 4:])  # two flips


def test_compute_factor_one_is_cartpole_and_substeps_converge():
    rng = np.random.default_rng(2)
    states = random_states(rng, 200) * 0.5
    actions = rng.integers(0, 2, 200)
    np.testing.assert_array_equal(reference_step(states, actions, compute_factor=1)[0],
                                  reference_step(states, actions)[0])
    fine = reference_step(states, actions, compute_factor=4096)[0]
    errors = [np.abs(reference_step(states, actions, compute_factor=c)[0] - fine).max() for c in (1, 4, 16, 64)]
    assert all(later < earlier / 2 for earlier, later in zip(errors, errors[1:])), errors  # ~1/C (Euler)
    assert errors[0] > 1e-4  # C changes the result: the extra sub-steps are real work


def test_custom_params_change_the_dynamics():
    states = np.array([[0.0, 0.0, 0.1, 0.0]])
    moon = CartPoleParams(gravity=1.62)
    assert reference_step(states, [1], p=moon)[0][0, 3] != reference_step(states, [1])[0][0, 3]
