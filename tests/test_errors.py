"""Bad input raises one clear error, before anything big is allocated."""

import numpy as np
import pytest

import studylib
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
