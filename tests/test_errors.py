"""Bad input raises one clear error, before anything big is allocated."""

import copy
import functools
import pickle

import gymnasium
import numpy as np
import pytest

import studylib
import studylib.gym_vector  # noqa: F401 (registers the ids)
from studylib.errors import ConfigError, DeviceUnavailableError, InsufficientMemoryError


@pytest.mark.parametrize("num_envs", [0, -3, 1.5, "8", True, None])
def test_bad_num_envs(num_envs):
    with pytest.raises(ConfigError, match="num_envs must be a positive integer"):
        studylib.make("cpp", num_envs)


def test_unknown_implementation_lists_the_valid_ones():
    with pytest.raises(ConfigError, match="gym, cpp, torch, jax, cuda"):
        studylib.make("numba", 4)


@pytest.mark.parametrize("knob", ["state_factor", "compute_factor"])
@pytest.mark.parametrize("value", [0, -1, 2.0])
def test_bad_knobs(knob, value):
    with pytest.raises(ConfigError, match=knob):
        studylib.make("torch", 4, **{knob: value})


@pytest.mark.parametrize("seed", [-1, 2**32, 1.0, "0"])
def test_bad_seed(seed):
    with pytest.raises(ConfigError, match="seed"):
        studylib.make("jax", 4, seed=seed)


@pytest.mark.parametrize("impl", ["gym", "cpp", "torch", "jax"])
def test_too_big_for_memory_is_refused_before_allocating(impl):
    with pytest.raises(InsufficientMemoryError, match="GiB"):
        studylib.make(impl, 2**36, state_factor=2**10)  # would be petabytes: fails instantly


def test_memory_message_is_one_line():
    with pytest.raises(InsufficientMemoryError) as e:
        studylib.make("torch", 2**40)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("actions,match", [
    (np.zeros(3, int), "shape"),
    (np.zeros((4, 1), int), "shape"),
    (np.array([0, 1, 2, 0]), "0 .push left. or 1"),
    (np.array([0, -1, 0, 0]), "0 .push left. or 1"),
    (np.array([0.0, 1.0, 0.0, 1.0]), "integers"),
])
def test_bad_actions(impl, actions, match):
    env = studylib.make(impl, 4)
    env.reset()
    with pytest.raises(ConfigError, match=match):
        env.step(actions)


def test_bool_actions_are_accepted():
    """True/False push right/left: the same step as actions 1/0 from the same reset."""
    by_bool, by_int = studylib.make("torch", 2), studylib.make("torch", 2)
    by_bool.reset(), by_int.reset()
    obs_bool = by_bool.step(np.array([True, False]))[0]
    obs_int = by_int.step(np.array([1, 0]))[0]
    np.testing.assert_array_equal(obs_bool, obs_int)
    assert obs_bool[0, 1] > obs_bool[1, 1]  # env 0 was pushed right, env 1 left: x_dot differs in sign


def test_bad_rollout_arguments():
    env = studylib.make("cpp", 4)
    with pytest.raises(ConfigError, match="num_steps"):
        env.rollout(0)
    with pytest.raises(ConfigError, match="mlp, none"):
        env.rollout(1, policy="random")


def test_bad_set_state():
    env = studylib.make("jax", 4, state_factor=2)
    with pytest.raises(ConfigError, match=r"\(4, 8\)"):
        env.set_state(np.zeros((4, 4)))
    with pytest.raises(ConfigError, match="finite"):
        env.set_state(np.full((4, 8), np.nan))


def test_cuda_without_a_device_says_so_in_one_line():
    from studylib.devices import cuda_status

    ok, reason = cuda_status()
    if ok:
        pytest.skip(f"a CUDA device exists here ({reason})")
    with pytest.raises(DeviceUnavailableError, match="no CUDA device") as e:
        studylib.make("cuda", 4)
    assert "\n" not in str(e.value)
    for impl in ("torch", "jax"):
        with pytest.raises(DeviceUnavailableError, match="no CUDA device"):
            studylib.make(impl, 4, device="cuda")


def test_cpp_is_cpu_only():
    with pytest.raises(ConfigError, match="cpu"):
        studylib.make("cpp", 4, device="cuda")


@pytest.mark.parametrize(("sim", "impl"), [("cartpole", "gym"), ("cartpole", "cpp"), ("cartpole", "jax"),
                                           ("chain", "torch"), ("chain", "fused")])  # VectorEnv's subclasses, one of each kind
def test_an_environment_is_not_pickled_or_copied_and_the_error_says_what_travels_instead(impl, sim):
    """Pickling (multiprocessing, Ray) and deepcopy of the environments, directly or inside
    gymnasium's vector envs, and copy.copy of them, raise pickle's TypeError with one sentence
    naming what to pass instead; that advice works: a pickled factory makes environments that
    step. (copy.copy of a wrapper is shallow: it shares the environments, as for any object. The
    single env of ``gymnasium.make`` copies and pickles: tests/test_gym_single_env.py.)"""
    env_id = "studylib/CartPole-v1" if sim == "cartpole" else "studylib/Chain-v0"
    made = [studylib.make(impl, 4, sim=sim), gymnasium.make_vec(env_id, num_envs=2, impl=impl)]
    for env, copier in [(env, copier) for env in made for copier in (pickle.dumps, copy.deepcopy)] + [(made[0], copy.copy)]:
        with pytest.raises(TypeError, match=f"studylib's {impl} environments cannot be pickled or copied .* "
                                            "pass what makes them instead"):
            copier(env)
    factory = pickle.loads(pickle.dumps(functools.partial(gymnasium.make, env_id, impl=impl)))
    env = factory()
    env.reset(seed=3)
    assert env.step(env.action_space.sample())[0].shape == env.observation_space.shape
