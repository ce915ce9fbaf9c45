"""The functional JAX env (studylib/adapters/jax_functional.py): gymnax's shape, pure, and the jax
implementation's transitions under jit + vmap + scan."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import studylib
import studylib.adapters.jax_functional as fenv
from studylib.sims.cartpole import CARTPOLE_V1, RESET_HIGH, RESET_LOW, CartPoleParams
from tests.conftest import AT_XLA_DEFAULTS


def _scan_rollout(params, num_envs, actions, seed):
    """T steps of N envs: jit(vmap(step)) inside lax.scan, the whole loop jitted once."""
    step_n = jax.jit(jax.vmap(fenv.step, in_axes=(0, 0, 0, None)))

    @jax.jit
    def run(key, states, actions):
        def body(carry, a):
            states, key = carry
            key, sub = jax.random.split(key)
            obs, states, reward, terminated, truncated, info = step_n(jax.random.split(sub, num_envs), states, a, params)
            return (states, key), (obs, states.cartpole, reward, terminated, truncated, info["final_observation"])

        return jax.lax.scan(body, (states, key), actions)[1]

    key, sub = jax.random.split(jax.random.key(seed))
    obs0, states0 = jax.vmap(fenv.reset, in_axes=(0, None))(jax.random.split(sub, num_envs), params)
    return states0, [np.asarray(x) for x in run(key, states0, jnp.asarray(actions))]


@pytest.mark.skipif(not AT_XLA_DEFAULTS, reason="bit for bit between two XLA programs: checked at XLA's defaults, what "
                    "users run (tests/test_xla_default_level.py); the suite's compile options round them apart")
@pytest.mark.parametrize("state_factor,compute_factor", [(1, 1), (2, 2)])
def test_matches_the_jax_implementation_step_for_step(state_factor, compute_factor):
    """Same start, same actions: every transition, flag and final observation of the functional
    env equals the jax implementation's. Reset draws differ (one key per env here, one per batch
    there), so after each step the implementation is given the functional env's state; episode
    counters are left to each (set_state keeps them), so truncation is checked independently."""
    n, steps, limit = 48, 160, 30  # a short time limit: truncations as well as terminations
    p = dataclasses.replace(CARTPOLE_V1, max_episode_steps=limit)
    params = fenv.EnvParams.from_cartpole(p, state_factor=state_factor, compute_factor=compute_factor)
    actions = np.random.default_rng(7).integers(0, 2, (steps, n)).astype(np.int32)
    states0, (obs, cartpole, reward, terminated, truncated, final_obs) = _scan_rollout(params, n, actions, seed=3)

    impl = studylib.make("jax", n, state_factor=state_factor, compute_factor=compute_factor, params=p)
    impl.reset()
    impl.set_state(np.asarray(states0.cartpole))
    for t in range(steps):
        i_obs, i_reward, i_term, i_trunc = impl.step(actions[t])
        np.testing.assert_array_equal(i_term, terminated[t])
        np.testing.assert_array_equal(i_trunc, truncated[t])
        np.testing.assert_array_equal(impl.final_obs(), final_obs[t])
        np.testing.assert_array_equal(i_reward, reward[t])
        going = ~(i_term | i_trunc)
        np.testing.assert_array_equal(impl.get_state()[going], cartpole[t][going])  # all 4S floats
        np.testing.assert_array_equal(i_obs[going], obs[t][going])
        impl.set_state(cartpole[t])
    done = terminated | truncated
    assert terminated.sum() > 50 and (truncated & ~terminated).sum() > 5
    # A finished env's observation is its next episode's first: within CartPole-v1's reset bounds.
    assert np.all((obs[done] >= RESET_LOW) & (obs[done] <= RESET_HIGH))
    np.testing.assert_array_equal(obs[~done], final_obs[~done])
    assert np.all(reward == 1)


def test_gymnax_shape_and_purity():
    gymnax_cartpole = pytest.importorskip("gymnax.environments.classic_control.cartpole")
    key = jax.random.key(0)
    obs, state = fenv.reset(key, fenv.default_params)
    assert obs.shape == (4,) and obs.dtype == jnp.float32 and fenv.observation_space().contains(np.asarray(obs))
    assert int(state.time) == 0
    out = fenv.step(key, state, 1, fenv.default_params)
    again = fenv.step(key, state, 1, fenv.default_params)  # pure: same inputs, same outputs
    for a, b in zip(jax.tree.leaves(out), jax.tree.leaves(again)):
        np.testing.assert_array_equal(a, b)
    obs1, state1, reward, terminated, truncated, info = out
    assert int(state1.time) == 1 and int(state.time) == 0  # the input state is untouched
    assert reward.dtype == jnp.float32 and terminated.dtype == jnp.bool_ and truncated.dtype == jnp.bool_

    # gymnax's CartPole from the same observation: the same info keys and the same transition.
    genv = gymnax_cartpole.CartPole()
    gparams = genv.default_params
    gstate = gymnax_cartpole.EnvState(time=0, **{name: obs[i] for i, name in enumerate(("x", "x_dot", "theta", "theta_dot"))})
    gobs, _, greward, gterm, gtrunc, ginfo = genv.step(key, gstate, 1, gparams)
    assert set(info) == set(ginfo)
    np.testing.assert_allclose(obs1, gobs, rtol=1e-6, atol=1e-7)
    assert fenv.action_space(fenv.default_params).n == genv.action_space(gparams).n == fenv.num_actions
    assert fenv.observation_space(fenv.default_params).shape == genv.observation_space(gparams).shape


def test_terminal_step_resets_and_reports_the_final_observation():
    key = jax.random.key(1)
    _, state = fenv.reset(key)
    edge = state.replace(cartpole=jnp.array([2.39, 1.0, 0.0, 0.0], jnp.float32))  # x crosses 2.4
    obs, nxt, reward, terminated, truncated, info = fenv.step(key, edge, 1)
    assert bool(terminated) and not bool(truncated) and float(info["discount"]) == 0.0
    assert float(info["final_observation"][0]) > CARTPOLE_V1.x_threshold
    assert np.all((np.asarray(obs) >= RESET_LOW) & (np.asarray(obs) <= RESET_HIGH)) and int(nxt.time) == 0
    assert float(reward) == 1.0


def test_params_are_cartpole_params_as_a_pytree():
    names = set(CartPoleParams.__dataclass_fields__)
    assert names <= set(fenv.EnvParams.__dataclass_fields__)
    for name in names:
        assert getattr(fenv.default_params, name) == getattr(CARTPOLE_V1, name)
    assert fenv.default_params.total_mass == CARTPOLE_V1.total_mass
    assert fenv.default_params.polemass_length == CARTPOLE_V1.polemass_length
    heavy = fenv.EnvParams.from_cartpole(dataclasses.replace(CARTPOLE_V1, masspole=0.5), state_factor=3)
    assert heavy.total_mass == pytest.approx(1.5) and heavy.polemass_length == pytest.approx(0.25)
    assert fenv.reset(jax.random.key(0), heavy)[1].cartpole.shape == (12,)
    # Physical constants are leaves: one jitted step runs a batch of gravities (vmap over params).
    pair = jax.tree.map(lambda leaf: jnp.stack([leaf, leaf]), fenv.default_params)
    gravities = pair.replace(gravity=jnp.array([9.8, 1.6], jnp.float32))
    _, state = fenv.reset(jax.random.key(0))
    state = state.replace(cartpole=jnp.array([0.0, 0.0, 0.1, 0.0], jnp.float32))
    batched = jax.vmap(fenv.step, in_axes=(None, None, None, 0))
    obs, *_ = batched(jax.random.key(0), state, 0, gravities)
    assert obs.shape == (2, 4) and float(obs[0, 3]) > float(obs[1, 3]) > 0  # stronger gravity, faster fall
