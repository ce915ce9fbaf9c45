"""studylib as a gymnasium vector environment: autoreset modes, seeding, bad input."""

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_reset_return_type, check_reset_seed_determinism
from gymnasium.vector import AutoresetMode

import studylib
from studylib.sims.cartpole import CARTPOLE_V1, RESET_HIGH, RESET_LOW, is_terminated, reference_step
from tests.gym_cases import GYM_IMPLS, inner, make_ours, make_theirs

MODES = [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED]


def _in_reset_bounds(obs):
    return np.all((obs >= RESET_LOW) & (obs <= RESET_HIGH), axis=-1)


@pytest.mark.parametrize("impl", GYM_IMPLS)
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
def test_gymnasium_checks_and_spaces(impl, mode):
    envs = make_ours(impl, 8, autoreset_mode=mode)
    assert isinstance(envs.unwrapped, gymnasium.vector.VectorEnv)
    assert envs.metadata["autoreset_mode"] == envs.unwrapped.autoreset_mode == mode
    assert envs.num_envs == 8 and envs.single_action_space == gymnasium.spaces.Discrete(2)
    assert envs.action_space.shape == (8,)
    assert envs.single_observation_space == gymnasium.make("CartPole-v1").observation_space
    assert envs.observation_space.shape == (8, 4) and envs.observation_space.dtype == np.float32
    check_reset_return_type(envs)
    check_reset_seed_determinism(envs)
    envs.step(envs.action_space.sample())


def test_default_mode_is_next_step_as_gymnasium():
    ours, theirs = make_ours("gym", 2), gymnasium.make_vec("CartPole-v1", num_envs=2)
    assert ours.metadata["autoreset_mode"] == theirs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    assert AutoresetMode.NEXT_STEP == type(ours.unwrapped).metadata["autoreset_mode"]


@pytest.mark.parametrize("impl", GYM_IMPLS)
def test_same_step_returns_final_obs_and_final_info(impl):
    n = 16
    envs = make_ours(impl, n, autoreset_mode=AutoresetMode.SAME_STEP)
    obs, info = envs.reset(seed=3)
    assert info == {} and envs.observation_space.contains(obs)
    envs.action_space.seed(3)
    episodes, lengths, steps = 0, np.zeros(n, int), []
    for _ in range(300):
        obs, reward, terminated, truncated, info = envs.step(envs.action_space.sample())
        assert obs.dtype == np.float32 and reward.dtype == np.float32 and terminated.dtype == bool
        assert np.all(reward == 1)  # every step is a real transition
        lengths += 1
        done = terminated | truncated
        if not done.any():
            assert info == {}
            continue
        assert set(info) == {"final_obs", "_final_obs", "final_info", "_final_info"}
        np.testing.assert_array_equal(info["_final_obs"], done)
        np.testing.assert_array_equal(info["_final_info"], done)
        assert info["final_info"] == {} and info["final_obs"].dtype == object
        assert all(o is None for o in info["final_obs"][~done])
        final = np.stack(list(info["final_obs"][done]))
        assert final.dtype == np.float32 and final.shape == (done.sum(), 4)
        np.testing.assert_array_equal(is_terminated(final), terminated[done])  # terminal states
        assert np.all(_in_reset_bounds(obs[done]))  # ... and the next episode already started
        steps.extend(lengths[done])
        lengths[done] = 0
        episodes += done.sum()
    assert episodes > 100 and 15 < np.mean(steps) < 30  # random actions: ~22 steps per episode


@pytest.mark.parametrize("impl", GYM_IMPLS)
def test_next_step_ends_then_restarts_one_call_late(impl):
    n = 16
    envs = make_ours(impl, n)
    envs.reset(seed=4)
    envs.action_space.seed(4)
    restarting, episodes = np.zeros(n, bool), 0
    for _ in range(300):
        obs, reward, terminated, truncated, info = envs.step(envs.action_space.sample())
        assert info == {}
        # the call after an ending: the next episode's first observation, reward 0, no flags
        assert np.all(_in_reset_bounds(obs[restarting])) and np.all(reward[restarting] == 0)
        assert not np.any((terminated | truncated)[restarting])
        assert np.all(reward[~restarting] == 1)
        np.testing.assert_array_equal(is_terminated(obs), terminated)  # the terminal observation itself
        restarting = terminated | truncated
        episodes += restarting.sum()
    assert episodes > 100


def test_next_step_time_limit_and_the_ignored_action():
    envs = make_ours("torch", 3, max_episode_steps=5)
    envs.reset(seed=0)
    upright = np.zeros((3, 4))
    for t in range(5):
        inner(envs).set_state(upright)  # never terminates
        obs, reward, terminated, truncated, _ = envs.step(np.ones(3, int))
        assert not terminated.any() and truncated.all() == (t == 4)
    np.testing.assert_allclose(obs, reference_step(upright, np.ones(3, int))[1], rtol=1e-6)  # the last state
    restarted, reward, terminated, truncated, _ = envs.step(np.ones(3, int))  # action ignored
    assert np.all(reward == 0) and not (terminated | truncated).any() and np.all(_in_reset_bounds(restarted))
    np.testing.assert_array_equal(inner(envs).get_state(), restarted)  # the state the next step starts from
    for t in range(5):  # the new episode has its full 5 steps again
        truncated = envs.step(np.zeros(3, int))[3]
    assert truncated.all()


def test_disabled_waits_for_a_masked_reset():
    envs = make_ours("jax", 4, autoreset_mode=AutoresetMode.DISABLED)
    envs.reset(seed=1)
    edge = np.zeros((4, 4))
    edge[1, 0] = 2.399  # env 1 crosses x = 2.4 when pushed right
    edge[1, 1] = 1.0
    inner(envs).set_state(edge)
    obs, reward, terminated, truncated, info = envs.step(np.ones(4, int))
    np.testing.assert_array_equal(terminated, [False, True, False, False])
    assert obs[1, 0] > CARTPOLE_V1.x_threshold and info == {}
    before = inner(envs).get_state()
    with pytest.raises(studylib.ConfigError, match=r"envs \[1\].*reset_mask"):
        envs.step(np.ones(4, int))
    np.testing.assert_array_equal(inner(envs).get_state(), before)  # nothing stepped
    mask = np.array([False, True, False, False])
    obs2, _ = envs.reset(options={"reset_mask": mask})
    np.testing.assert_array_equal(obs2[~mask], obs[~mask])  # the others keep their observations
    assert _in_reset_bounds(obs2[1])
    obs3, reward, *_ = envs.step(np.zeros(4, int))
    assert np.all(reward == 1) and not np.allclose(obs3[1], obs2[1])


@pytest.mark.parametrize("impl", GYM_IMPLS)
def test_a_seed_list_starts_where_gymnasium_starts(impl):
    ours, theirs = make_ours(impl, 5), make_theirs(5)
    seeds = [11, 12, 13, 14, 15]
    np.testing.assert_array_equal(ours.reset(seed=seeds)[0], theirs.reset(seed=seeds)[0])
    assert not np.array_equal(ours.reset(seed=7)[0], theirs.reset(seed=7)[0])  # an int seeds the implementation's draw
    np.testing.assert_array_equal(ours.reset(seed=seeds)[0], theirs.reset(seed=11)[0])  # gymnasium: int s = [s, s+1, ...]


def test_seeding_follows_gymnasium():
    envs = make_ours("torch", 8)
    first, _ = envs.reset(seed=5)
    np.testing.assert_array_equal(envs.reset(seed=5)[0], first)
    unseeded = [envs.reset()[0] for _ in range(2)]  # new episodes, drawn from np_random
    assert not np.array_equal(unseeded[0], first) and not np.array_equal(unseeded[0], unseeded[1])
    envs.reset(seed=5)
    again = [envs.reset()[0] for _ in range(2)]
    np.testing.assert_array_equal(again[0], unseeded[0])  # reproducible from the first seed
    assert not np.array_equal(make_ours("torch", 8).reset(seed=6)[0], first)


def test_restarts_are_reproducible_from_the_seed():
    runs = []
    for _ in range(2):
        envs = make_ours("gym", 8)
        envs.reset(seed=[1, 2, 3, 4, 5, 6, 7, 8])
        envs.action_space.seed(0)
        runs.append([envs.step(envs.action_space.sample())[0] for _ in range(80)])
    np.testing.assert_array_equal(np.array(runs[0]), np.array(runs[1]))


def test_step_determinism_and_fresh_arrays():
    """gymnasium's check_step_determinism / check_returned_data_not_reused, for vectors."""
    envs = make_ours("jax", 8)
    envs.action_space.seed(1)
    actions = envs.action_space.sample()
    outs = []
    for _ in range(2):
        envs.reset(seed=1)
        outs.append(envs.step(actions))
    for a, b in zip(outs[0][:4], outs[1][:4]):
        np.testing.assert_array_equal(a, b)
    assert outs[0][0] is not outs[1][0]
    obs_a, _ = envs.reset(seed=1)
    obs_b, *_ = envs.step(actions)
    assert not np.shares_memory(obs_a, obs_b)


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
def test_bad_input_is_one_clear_error_and_steps_nothing(mode):
    envs = make_ours("torch", 4, autoreset_mode=mode)
    obs, _ = envs.reset(seed=2)
    state = inner(envs).get_state()
    bad_actions = [np.zeros(3, int), np.zeros((4, 1), int), np.full(4, 0.5), np.full(4, 2), "left"]
    for actions in bad_actions:
        with pytest.raises(studylib.ConfigError, match="actions"):
            envs.step(actions)
    for seed in ([1, 2, 3], [1, 2, 3, 4, 5], 1.5, -1, [1, 2, 3, "x"]):
        with pytest.raises(studylib.ConfigError, match="seed"):
            envs.reset(seed=seed)
    with pytest.raises(studylib.ConfigError, match="reset option"):
        envs.reset(options={"low": -0.1})
    with pytest.raises(studylib.ConfigError, match="reset_mask"):
        envs.reset(options={"reset_mask": np.ones(3, bool)})
    np.testing.assert_array_equal(inner(envs).get_state(), state)  # nothing stepped, nothing reset
    fresh = make_ours("torch", 4, autoreset_mode=mode)
    fresh.reset(seed=2)
    np.testing.assert_array_equal(envs.step(np.ones(4, int))[0], fresh.step(np.ones(4, int))[0])


def test_bad_arguments_at_construction():
    with pytest.raises(studylib.ConfigError, match="unknown autoreset_mode 'same'.*SAME_STEP"):
        make_ours("torch", 4, autoreset_mode="same")
    with pytest.raises(studylib.ConfigError, match="unknown implementation"):
        make_ours("numba", 4)
    with pytest.raises(studylib.ConfigError, match="max_episode_steps"):
        make_ours("torch", 4, max_episode_steps=0)
    with pytest.raises(studylib.ConfigError, match="unknown arrays 'torch'; valid: 'numpy', 'native'"):
        make_ours("torch", 4, arrays="torch")
    with pytest.raises(studylib.ConfigError, match="arrays='native' needs device arrays; 'gym'"):
        make_ours("gym", 4, arrays="native")
    assert CARTPOLE_V1.max_episode_steps == 500  # replacements do not leak


@pytest.mark.parametrize("impl", GYM_IMPLS)
@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP], ids=lambda m: m.name)
def test_a_masked_reset_restarts_the_episode_and_its_time_limit(impl, mode):
    """Env 0 is reset after 3 of its 5 steps: the others are truncated at step 5, env 0 at step 8."""
    envs = make_ours(impl, 4, autoreset_mode=mode.value, max_episode_steps=5)  # the enum's value works too
    obs, _ = envs.reset(seed=0)
    upright = np.zeros((4, 4))  # never terminates: only the time limit ends an episode
    mask = np.array([True, False, False, False])
    truncated_at = {i: [] for i in range(4)}
    for t in range(1, 9):
        if t == 4:
            restarted, _ = envs.reset(options={"reset_mask": mask})
            assert _in_reset_bounds(restarted[0]) and not np.array_equal(restarted[0], obs[0])
            np.testing.assert_array_equal(restarted[1:], obs[1:])  # the others keep their observations
        inner(envs).set_state(upright)
        obs, _, _, truncated, _ = envs.step(np.ones(4, int))
        for i in np.flatnonzero(truncated):
            truncated_at[i].append(t)
    assert truncated_at == {0: [8], 1: [5], 2: [5], 3: [5]}
