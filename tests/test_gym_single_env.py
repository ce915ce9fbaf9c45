"""gymnasium.make("studylib/CartPole-v1"): one env of any implementation, checked by gymnasium's
own tools against gymnasium's CartPole-v1."""

import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.utils.env_match import check_environments_match

import studylib
from tests.gym_cases import GYM_IMPLS


def _make(impl, **kwargs):
    return gymnasium.make("studylib/CartPole-v1", impl=impl, **kwargs)


def _check_env_warnings(env, skip_render_check=False) -> set[str]:
    """check_env's soft failures (it reports them as warnings); a hard failure raises."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped, skip_render_check=skip_render_check)
    return {str(w.message) for w in caught if issubclass(w.category, UserWarning)}


@pytest.mark.parametrize("impl", GYM_IMPLS)
def test_check_env_passes(impl):
    """check_env passes with no warning that gymnasium's own CartPole-v1 does not also get (its
    observation space's unbounded velocities)."""
    env = _make(impl)
    assert env.spec.max_episode_steps == gymnasium.spec("CartPole-v1").max_episode_steps == 500
    ours = _check_env_warnings(env)  # render checks included
    theirs = _check_env_warnings(gymnasium.make("CartPole-v1"), skip_render_check=True)  # (pygame)
    assert ours <= theirs, ours - theirs


@pytest.mark.parametrize("impl", GYM_IMPLS)
def test_matches_gymnasium_cartpole(impl):
    """The same seeds give the same episodes: reset draws from np_random as gymnasium's
    CartPoleEnv does, and the physics is CartPole-v1's (float32 implementations agree within
    gymnasium's default tolerance of 1e-5). A thousand steps, through ~45 resets."""
    ours, theirs = _make(impl), gymnasium.make("CartPole-v1")
    check_environments_match(theirs, ours, num_steps=1000, seed=3)
    # the check tells other dynamics apart: two Euler sub-steps per step are not CartPole-v1
    with pytest.raises(AssertionError, match="stepping observation"):
        check_environments_match(theirs, _make(impl, compute_factor=2), num_steps=50, seed=3)


def test_time_limit_and_reset_options():
    env = _make("torch", max_episode_steps=4)
    obs, _ = env.reset(seed=0, options={"low": -0.01, "high": 0.01})  # CartPoleEnv's reset options
    assert np.all(np.abs(obs) <= 0.01)
    for t in range(4):
        env.unwrapped.env.set_state(np.zeros((1, 4)))  # upright: never terminates
        obs, reward, terminated, truncated, info = env.step(t % 2)
        assert reward == 1.0 and not terminated and truncated == (t == 3) and info == {}


def test_bad_input_steps_nothing():
    env = _make("jax", render_mode="rgb_array")
    with pytest.raises(studylib.ConfigError, match="reset\\(\\) was never called"):
        env.unwrapped.step(0)  # before any reset (gymnasium's OrderEnforcing also refuses)
    assert env.unwrapped.render() is None  # nothing to draw yet, as gymnasium's CartPole-v1
    env.reset(seed=0)
    state = env.unwrapped.env.get_state()
    for action in (2, 0.5, -1, np.array([0, 1]), "left"):
        with pytest.raises(studylib.ConfigError, match="action"):
            env.unwrapped.step(action)
    np.testing.assert_array_equal(env.unwrapped.env.get_state(), state)
    env.unwrapped.env.set_state(np.array([[2.399, 1.0, 0.0, 0.0]]))
    obs, reward, terminated, truncated, _ = env.step(1)
    assert terminated and obs[0] > 2.4 and reward == 1.0  # the terminal observation
    with pytest.raises(studylib.ConfigError, match=r"terminated .* call reset\(\) \(or set state\) before step"):
        env.step(1)  # the implementation already started its next episode: refused
    with pytest.raises(studylib.ConfigError, match="render_mode"):
        _make("jax", render_mode="ansi")  # rgb_array and human render (tests/test_clients.py)


@pytest.mark.parametrize("impl", ["gym", "cpp", "fused"])
def test_state_is_read_and_set_as_gymnasiums_cartpole_state(impl):
    """``env.unwrapped.state``, as people use gymnasium's CartPoleEnv's: set to the same states
    (one a hair inside the angle threshold, one outside the position one), both envs step the same
    actions to the same states (float32 rounding); read back after a terminating step, it is the
    terminal CartPole. Anything but four finite floats is refused, nothing set."""
    ours, theirs = _make(impl), gymnasium.make("CartPole-v1")
    assert ours.unwrapped.state is None and theirs.unwrapped.state is None  # before the first reset
    ours.reset(seed=1), theirs.reset(seed=1)
    np.testing.assert_allclose(ours.unwrapped.state, theirs.unwrapped.state, rtol=1e-6)
    ended = []
    for start in ([0.1, -0.2, 0.2094, 0.5], [-0.3, 1.5, -0.05, -0.8], [2.41, 0.0, 0.0, 0.0]):
        theirs.reset()  # (gymnasium counts steps past a termination until a reset)
        ours.unwrapped.state = np.array(start)
        theirs.unwrapped.state = np.array(start)
        for action in (1, 0, 0, 1):
            o, t = ours.step(action), theirs.step(action)
            np.testing.assert_allclose(o[0], t[0], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(ours.unwrapped.state, theirs.unwrapped.state, rtol=1e-5, atol=1e-6)
            assert o[1:3] == t[1:3]
            if t[2]:  # terminated: the state read back is the terminal one (what gymnasium's holds)
                break
        ended.append(t[2])
    assert ended == [True, False, True]
    assert ours.unwrapped.state.dtype == np.float64
    before = ours.unwrapped.env.get_state()
    for bad in ([0.0, 0.0, 0.0], [0.0, np.nan, 0.0, 0.0], "upright"):
        with pytest.raises(studylib.ConfigError, match="state must be 4 finite floats"):
            ours.unwrapped.state = bad
    np.testing.assert_array_equal(ours.unwrapped.env.get_state(), before)


@pytest.mark.parametrize("impl", ["gym", "jax"])
def test_gymnasiums_sync_vector_env_of_ours(impl):
    """vectorization_mode="sync" builds gymnasium's SyncVectorEnv of our single envs: seeded alike,
    it runs the same episodes as gymnasium's CartPole-v1 under the same SyncVectorEnv, resets
    included (our reset draws from np_random as CartPoleEnv does)."""
    ours = gymnasium.make_vec("studylib/CartPole-v1", num_envs=4, vectorization_mode="sync", impl=impl)
    theirs = gymnasium.make_vec("CartPole-v1", num_envs=4, vectorization_mode="sync")
    np.testing.assert_array_equal(ours.reset(seed=9)[0], theirs.reset(seed=9)[0])
    theirs.action_space.seed(9)
    episodes = 0
    for _ in range(300):
        actions = theirs.action_space.sample()
        o_obs, o_reward, o_term, o_trunc, _ = ours.step(actions)
        t_obs, t_reward, t_term, t_trunc, _ = theirs.step(actions)
        np.testing.assert_allclose(o_obs, t_obs, rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(o_reward, t_reward)
        np.testing.assert_array_equal(o_term, t_term)
        np.testing.assert_array_equal(o_trunc, t_trunc)
        episodes += o_term.sum()
    assert episodes > 30


@pytest.mark.parametrize("impl", ["cpp", "jax"])
@pytest.mark.parametrize("env_id", ["studylib/CartPole-v1", "studylib/InvertedDoublePendulum-v5"])
def test_a_single_env_copies_and_pickles_as_gymnasiums_do(env_id, impl):
    """Planning code copies an env and steps the copy (gymnasium's CartPoleEnv deep-copies): a
    deepcopy and a pickled one step on as the original does (the same transitions through a
    termination and the time limit's truncation, whose count the wrapper copies), each apart from
    the others, and draw the same next reset from the copied np_random."""
    import copy
    import pickle

    import studylib.adapters.gym_chain  # noqa: F401 (registers the chain's ids)

    fresh = copy.deepcopy(gymnasium.make(env_id, impl=impl))  # before any reset: nothing to step yet
    assert fresh.unwrapped.render() is None
    with pytest.raises(studylib.ConfigError, match="never called"):
        fresh.unwrapped.step(fresh.action_space.sample())
    env = gymnasium.make(env_id, impl=impl, max_episode_steps=25)
    env.reset(seed=4)
    env.action_space.seed(4)
    for _ in range(10):
        if any(env.step(env.action_space.sample())[2:4]):
            env.reset()
    copies = [copy.deepcopy(env), pickle.loads(pickle.dumps(env))]
    ends = 0
    for _ in range(40):
        before = [c.unwrapped.env.get_state().copy() for c in copies]
        action = env.action_space.sample()
        mine = env.step(action)
        for c, b in zip(copies, before):
            np.testing.assert_array_equal(c.unwrapped.env.get_state(), b)  # the original's step moved no copy
        theirs = [c.step(action) for c in copies]
        for t in theirs:
            np.testing.assert_array_equal(t[0], mine[0])
            assert t[1:4] == mine[1:4]
        if mine[2] or mine[3]:
            ends += 1
            starts = [e.reset()[0] for e in (env, *copies)]
            for s in starts[1:]:
                np.testing.assert_array_equal(s, starts[0])
    assert ends >= 1
