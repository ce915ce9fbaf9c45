"""The library as its clients call it, each client's call pattern written here (its code is not
copied in): Stable-Baselines3 makes ``studylib/CartPole-v1`` as typed (it asks for
``render_mode="rgb_array"``), gymnax-shaped code (PureJaxRL's wrappers and jitted rollout) runs
``studylib.adapters.jax_functional`` in place of ``gymnax.make("CartPole-v1")[0]``, and no implementation
hands out a read-only array (torch warns on them, and a training loop writes into what it gets)."""

from __future__ import annotations

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import studylib
import studylib.adapters.gym_vector  # noqa: F401  (registers studylib/CartPole-v1)
import studylib.adapters.jax_functional as fenv
from tests.conftest import IMPL_PARAMS


def test_sb3_make_vec_env_and_ppo_as_typed():
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    envs = make_vec_env("studylib/CartPole-v1", n_envs=2, seed=0)  # render_mode="rgb_array" inside
    assert envs.render_mode == "rgb_array"
    obs = envs.reset()
    assert obs.shape == (2, 4) and obs.flags.writeable
    from studylib.train.peers import without_log_folder

    model = PPO("MlpPolicy", "studylib/CartPole-v1", n_steps=32, batch_size=32, n_epochs=1, seed=0, device="cpu")
    without_log_folder(model).learn(64)
    assert model.num_timesteps == 64
    action, _ = model.predict(obs[0], deterministic=True)
    assert action in (0, 1)


def test_rgb_array_frames_are_gymnasiums_own():
    pytest.importorskip("pygame")
    ours = gymnasium.make("studylib/CartPole-v1", render_mode="rgb_array")
    theirs = gymnasium.make("CartPole-v1", render_mode="rgb_array")
    ours.reset(seed=4), theirs.reset(seed=4)
    for action in (1, 1, 0):
        ours.step(action), theirs.step(action)
        frame = ours.render()
        assert frame.shape == (400, 600, 3) and frame.dtype == np.uint8
        # float32 against float64 physics: the same picture within a pixel's rounding
        assert np.mean(frame != theirs.render()) < 1e-3
    vector = gymnasium.make_vec("studylib/CartPole-v1", num_envs=2, render_mode="rgb_array")
    vector.reset(seed=0)
    assert [f.shape for f in vector.render()] == [(400, 600, 3)] * 2


# ---- gymnax-shaped code: the pieces of PureJaxRL's ppo.py that touch the env, written here --------

class _FlattenObservation:
    """PureJaxRL's FlattenObservationWrapper logic: needs a gymnax Box observation space."""

    def __init__(self, env):
        from gymnax.environments import spaces

        self._env = env
        space = env.observation_space(None)
        assert isinstance(space, spaces.Box), "Only Box spaces are supported"
        self.observation_space = lambda params: spaces.Box(space.low, space.high, (int(np.prod(space.shape)),),
                                                           space.dtype)

    def reset(self, key, params=None):
        obs, state = self._env.reset(key, params)
        return jnp.reshape(obs, (-1,)), state

    def step(self, key, state, action, params=None):
        obs, state, reward, terminated, truncated, info = self._env.step(key, state, action, params)
        return jnp.reshape(obs, (-1,)), state, reward, terminated, truncated, info


def _log_wrapper(env):
    """PureJaxRL's LogWrapper logic: episode returns and lengths carried in the state."""

    def reset(key, params=None):
        obs, env_state = env.reset(key, params)
        return obs, (env_state, 0.0, 0, 0.0)

    def step(key, state, action, params=None):
        env_state, ret, length, last_return = state
        obs, env_state, reward, terminated, truncated, info = env.step(key, env_state, action, params)
        done = jnp.logical_or(terminated, truncated)
        ret, length = ret + reward, length + 1
        info = {**info, "returned_episode_returns": jnp.where(done, ret, last_return)}
        return obs, (env_state, ret * (1 - done), length * (1 - done), jnp.where(done, ret, last_return)), reward, done, info

    return reset, step


def test_a_purejaxrl_shaped_jitted_rollout_with_gymnax_1_steps_runs_the_functional_env():
    """PureJaxRL's wrappers in their gymnax 1.0 form (six values from ``step``: the two-line change
    that book/using.md gives for its ``wrappers.py``, which unpacks gymnax 0.0.x's five at every
    commit), a jitted vmapped rollout, and gymnax 1.0's helper names on the module."""
    num_envs, steps = 8, 300
    env = _FlattenObservation(fenv)
    reset, step = _log_wrapper(env)
    action_space = fenv.action_space(None)  # params=None: the defaults, as gymnax

    @jax.jit
    def rollout(key):
        key, sub = jax.random.split(key)
        obs, state = jax.vmap(reset, in_axes=(0, None))(jax.random.split(sub, num_envs), None)

        def body(carry, _):
            state, obs, key = carry
            key, k_act, k_step = jax.random.split(key, 3)
            action = jax.vmap(action_space.sample)(jax.random.split(k_act, num_envs))
            obs, state, reward, done, info = jax.vmap(step, in_axes=(0, 0, 0, None))(
                jax.random.split(k_step, num_envs), state, action, None)
            inside = jax.vmap(fenv.observation_space(None).contains)(obs)
            return (state, obs, key), (reward, done, info["returned_episode_returns"], inside, action)

        return jax.lax.scan(body, (state, obs, key), None, length=steps)[1]

    reward, done, returns, inside, actions = rollout(jax.random.key(0))
    assert bool(jnp.all(inside))  # contains() is True inside jit for every observation
    assert set(np.unique(np.asarray(actions)).tolist()) == {0, 1}
    assert int(done.sum()) > 50  # random actions end an episode every ~20 steps
    finished = np.asarray(returns)[np.asarray(done)]
    assert 8 <= finished.mean() <= 40  # CartPole-v1 under random actions: ~22 steps


def test_the_gymnax_environment_api_beside_gymnax():
    import gymnax

    genv, gparams = gymnax.make("CartPole-v1")
    for attr in ("name", "obs_shape", "num_actions", "default_params", "reset", "step", "reset_env", "step_env",
                 "get_obs", "is_terminal", "discount", "action_space", "observation_space", "state_space"):
        assert hasattr(fenv, attr) and hasattr(genv, attr), attr
    assert fenv.name == genv.name == "CartPole-v1" and fenv.obs_shape == genv.obs_shape == (4,)
    key = jax.random.key(1)
    obs, state = fenv.reset(key, None)
    _, gstate = genv.reset(key, gparams)
    assert fenv.state_space(None).contains(state) and fenv.observation_space(None).contains(obs)
    assert type(fenv.action_space(None)) is type(genv.action_space(gparams))
    # step_env (no reset) from gymnax's state: the same transition, terminal flags and discount
    state = fenv.EnvState(jnp.array([gstate.x, gstate.x_dot, gstate.theta, gstate.theta_dot], jnp.float32),
                          jnp.int32(gstate.time))
    for action in [1] * 12:
        obs, state, reward, terminated, info = fenv.step_env(key, state, action, None)
        gobs, gstate, greward, gterminated, ginfo = genv.step_env(key, gstate, action, gparams)
        np.testing.assert_allclose(obs, gobs, rtol=1e-5, atol=1e-6)
        assert bool(terminated) == bool(gterminated) == bool(fenv.is_terminal(state, None))
        assert float(info["discount"]) == float(fenv.discount(state)) == (0.0 if bool(terminated) else 1.0)
        np.testing.assert_array_equal(fenv.get_obs(state), obs)
    assert bool(terminated)  # pushing right 12 times tips the pole over
    # step = step_env, then the reset where the episode ended (gymnax's composition)
    obs, after, *_ = fenv.step(key, state, 1)
    assert int(after.time) == 0 and bool(jnp.all(jnp.abs(obs) <= 0.05))


# gym's arrays are gymnasium's own and torch-compile's torch's (as torch): not re-checked here, a
# torch.compile costs ~10 s.
@pytest.mark.parametrize("impl", [p for p in IMPL_PARAMS if p.values[0] not in ("gym", "torch-compile")])
def test_every_implementation_hands_out_writable_numpy_arrays(impl):
    env = studylib.make(impl, 4, device="cpu" if impl in ("fused", "jax", "torch", "torch-compile") else None)
    arrays = [env.reset(), *env.step(np.ones(4, np.int64)), env.final_obs(), env.restart(np.ones(4, bool)),
              env.get_state()]
    for a in arrays:
        assert isinstance(a, np.ndarray) and a.flags.writeable, (impl, a)
    envs = gymnasium.make_vec("studylib/CartPole-v1", num_envs=4, impl=impl,
                              device="cpu" if impl in ("fused", "jax", "torch", "torch-compile") else None)
    obs, _ = envs.reset(seed=0)
    out = envs.step(np.ones(4, np.int64))
    for a in (obs, *out[:4]):
        assert a.flags.writeable, (impl, a)


def test_gymnax_1_helpers_take_a_state_and_the_observation_space_is_gymnaxs():
    import gymnax

    state = fenv.reset(jax.random.key(0))[1]
    assert bool(fenv.is_terminated(state, None)) == bool(fenv.is_terminal(state, None)) is False  # gymnax's signature
    space = fenv.observation_space(None)
    env, params = gymnax.make("CartPole-v1")
    theirs = env.observation_space(params)
    assert np.array_equal(np.asarray(space.high)[[1, 3]], np.asarray(theirs.high)[[1, 3]])  # float32's largest
    samples = jax.vmap(space.sample)(jax.random.split(jax.random.key(1), 64))
    assert not bool(jnp.any(jnp.isnan(samples)))  # gymnasium's infinite velocity bounds drew NaN
