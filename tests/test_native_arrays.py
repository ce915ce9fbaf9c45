"""arrays="native": the implementations' own arrays, with no host copy; env.restart(mask)."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode
from torch.profiler import ProfilerActivity, profile

import studylib
from studylib.envs.base import restart_rows
from studylib.sims.cartpole import CARTPOLE_V1, RESET_HIGH, RESET_LOW
from studylib.episodes import reset_values_numpy
from studylib.settings import EnvSettings
from tests.conftest import IMPL_PARAMS
from tests.gym_cases import make_ours

NATIVE = ["cpp", "fused", "torch", "torch-compile", "jax"]  # on the CPU; cuda and fused on a GPU: DLPack
ZERO_COPY = ["cpp", "fused"]  # views of the C++ code's own buffers


def _make(impl, n, arrays, **kwargs):
    return studylib.make(impl, n, device="cpu", arrays=arrays, **kwargs)


def _native_array(impl, values):
    """``values`` (numpy) as the native array type of ``impl`` on the CPU."""
    return jax.device_put(values, jax.devices("cpu")[0]) if impl == "jax" else torch.as_tensor(values)


def _copies_in(fn, min_elements):
    """The copy ops (name, shape) that running ``fn`` makes of tensors of at least ``min_elements``."""
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        fn()
    copies = []
    for event in prof.events():
        shape = event.input_shapes[0] if event.input_shapes else []
        if event.name in ("aten::copy_", "aten::_to_copy", "aten::clone") and int(np.prod(shape or [0])) >= min_elements:
            copies.append((event.name, shape))
    return copies


@pytest.mark.parametrize("impl", ZERO_COPY)
def test_cpp_and_fused_step_returns_views_of_the_native_buffers(impl):
    """The observations are a view of the state the C++ code writes in place, final_obs() a view of
    its final-observation buffer: the same storage every step, and a step copies no tensor at all."""
    n = 64
    env = _make(impl, n, "native", seed=1)
    state_address, final_address = env.backend.state.ctypes.data, env.backend.final_obs_out.ctypes.data
    obs = env.reset()
    assert isinstance(obs, torch.Tensor) and obs.device.type == "cpu" and obs.shape == (n, 4)
    actions = torch.randint(0, 2, (200, n), generator=torch.Generator().manual_seed(0), dtype=torch.int32)
    finished = 0
    for t in range(200):
        obs, reward, terminated, truncated = env.step(actions[t])
        assert obs.untyped_storage().data_ptr() == state_address  # a view: no copy of the state
        assert env.final_obs().untyped_storage().data_ptr() == final_address
        assert terminated.dtype == truncated.dtype == torch.bool and reward.dtype == torch.float32
        finished += int(terminated.sum())
    np.testing.assert_array_equal(obs.numpy(), env.get_state()[:, :4])
    assert finished > 100  # random actions: ~22 steps per episode, and the views followed them
    assert _copies_in(lambda: (env.step(actions[0]), env.final_obs()), min_elements=1) == []


def test_torch_step_makes_a_new_state_on_the_device_and_copies_no_observation():
    """torch: each step makes a new state tensor on the env's device (episodes.advance is pure) and
    returns a view of it; nothing of the state's size is copied (the only copies are N-element dtype
    promotions inside episodes.advance) and nothing is converted to numpy."""
    n = 64
    env = _make("torch", n, "native", seed=2)
    env.reset()
    actions = torch.ones(n, dtype=torch.int64)
    before = env.state
    obs, *_ = env.step(actions)
    assert env.state is not before  # a new tensor per step ...
    assert obs.device == env.state.device and obs.untyped_storage().data_ptr() == env.state.untyped_storage().data_ptr()
    assert _copies_in(lambda: env.step(actions), min_elements=n * 4) == []  # ... and no copy of it


@pytest.mark.parametrize("impl", NATIVE)
def test_native_and_numpy_give_the_same_transitions(impl):
    """Same seed, same actions, same restarts: the native arrays hold exactly the numpy values."""
    n, steps = 32, 60
    ours = {arrays: _make(impl, n, arrays, seed=5) for arrays in ("numpy", "native")}
    rng = np.random.default_rng(5)
    native_type = jax.Array if impl == "jax" else torch.Tensor
    assert isinstance(ours["numpy"].reset(), np.ndarray) and isinstance(ours["native"].reset(), native_type)
    for t in range(steps):
        actions = rng.integers(0, 2, n)
        a = ours["numpy"].step(actions)
        b = ours["native"].step(_native_array(impl, actions))
        assert all(isinstance(x, native_type) for x in b)
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, np.asarray(y))
        np.testing.assert_array_equal(ours["numpy"].final_obs(), np.asarray(ours["native"].final_obs()))
        if t % 10 == 9:
            mask = rng.random(n) < 0.3
            restarted = ours["native"].restart(_native_array(impl, mask))
            np.testing.assert_array_equal(ours["numpy"].restart(mask), np.asarray(restarted))
            np.testing.assert_array_equal(ours["numpy"].get_state(), ours["native"].get_state())
            np.testing.assert_array_equal(ours["numpy"].final_obs(), np.asarray(ours["native"].final_obs()))


@pytest.mark.parametrize("impl", IMPL_PARAMS)
def test_restart_starts_new_episodes_in_the_masked_envs_only(impl):
    """A restart after 3 of 5 steps: fresh states in the masked envs, their final_obs() the new first
    observations and their step counters at 0 (they are truncated 5 steps after it); the others
    untouched (truncated at step 5)."""
    n = 6
    env = studylib.make(impl, n, seed=3, params=dataclasses.replace(CARTPOLE_V1, max_episode_steps=5))
    env.reset()
    upright = np.zeros((n, 4))  # never terminates: only the time limit ends an episode
    mask = np.array([True, False, True, False, False, True])
    truncated_at = {i: [] for i in range(n)}
    for t in range(1, 9):
        if t == 4:
            before, final_before = env.get_state(), env.final_obs()
            obs = env.restart(mask)
            state, final = env.get_state(), env.final_obs()
            np.testing.assert_array_equal(final[mask], obs[mask])  # the new episodes' first observations
            np.testing.assert_array_equal(final[~mask], final_before[~mask])
            assert np.all((state[mask] >= RESET_LOW) & (state[mask] <= RESET_HIGH))
            assert np.all(state[mask] != before[mask])
            np.testing.assert_array_equal(state[~mask], before[~mask])  # untouched
            np.testing.assert_array_equal(obs, state[:, :4].astype(np.float32))
        env.set_state(upright)
        truncated = env.step(np.zeros(n, int))[3]
        for i in np.flatnonzero(truncated):
            truncated_at[i].append(t)
    assert truncated_at == {i: [8] if mask[i] else [5] for i in range(n)}


def test_restart_rows_is_one_rule_for_numpy_torch_and_jax():
    """The array family's restart (torch on a GPU, jax): masked rows take the fresh CartPole (their
    carried floats of S = 2 stay), step counter 0, episode + 1, final observation the fresh
    CartPole; the others keep everything."""
    rng = np.random.default_rng(8)
    n = 7
    arrays = (rng.random((n, 8), np.float32), rng.integers(1, 9, n), rng.integers(0, 3, n),
              rng.random((n, 4), np.float32), rng.random(n) < 0.5, rng.random((n, 4), np.float32))
    state, elapsed, episode, final, mask, fresh = arrays
    expected = (np.concatenate((np.where(mask[:, None], fresh, state[:, :4]), state[:, 4:]), axis=1),
                np.where(mask, 0, elapsed), episode + mask, np.where(mask[:, None], fresh, final))
    for xp, convert in ((np, np.asarray), (torch, torch.from_numpy), (jnp, jnp.asarray)):
        out = restart_rows(*(convert(a) for a in arrays[:4]), convert(mask), convert(fresh), xp)
        for got, want in zip(out, expected):
            np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("impl", ["cpp", "fused", "jax"])
def test_restart_draws_the_next_episode_from_the_counter_hash(impl):
    """cpp, fused (and cuda) and jax restart env i into episode e + 1 with cuda/cartpole.cuh's reset
    draws (the same states in each), so each restart differs from every earlier episode's start."""
    n, seed = 10, 4
    env = _make(impl, n, "numpy", seed=seed, state_factor=2)
    env.set_state(np.zeros((n, 8)))
    index = np.arange(n)
    mask = index % 3 == 0
    for episode in (1, 2):
        env.restart(mask)
        cartpole = np.where(mask[:, None], reset_values_numpy(seed, index, np.full(n, episode), 4), 0)
        np.testing.assert_array_equal(env.get_state(), np.concatenate((cartpole, np.zeros((n, 4))), axis=1))  # carried stay


def test_unknown_or_impossible_arrays_are_one_clear_error():
    with pytest.raises(studylib.ConfigError, match="unknown arrays 'cupy'; valid: 'numpy', 'native'"):
        studylib.make("cpp", 4, arrays="cupy")
    with pytest.raises(studylib.ConfigError, match="arrays='native' needs device arrays; 'gym' steps Python objects"):
        studylib.make("gym", 4, arrays="native")
    with pytest.raises(studylib.ConfigError, match="peer 'gymnax'"):
        EnvSettings("gymnax", 4, arrays="native")
    assert EnvSettings("cpp", 4).arrays == "numpy"


def _bad_actions(impl, n):
    """(actions, message) pairs a native env of ``impl`` on the CPU must refuse."""
    wrong_type = torch.zeros(n, dtype=torch.int32) if impl == "jax" else jnp.zeros(n, jnp.int32)
    kind = "a jax array" if impl == "jax" else "a torch tensor"
    cases = [
        (np.zeros(n, np.int32), f"actions must be {kind} \\(integer\\) on cpu(:0)?, got numpy.ndarray"),
        (wrong_type, f"actions must be {kind}"),
        (_native_array(impl, np.full(n, 0.0)), "integers 0 or 1, got dtype .*float"),
        (_native_array(impl, np.zeros(n + 1, np.int32)), "shape"),
        (_native_array(impl, np.full(n, 2, np.int32)), "0 \\(push left\\) or 1"),
    ]
    if impl != "jax":  # another device: a meta tensor stands in for a CUDA tensor here
        cases.append((torch.zeros(n, dtype=torch.int32, device="meta"), "must be on this env's device cpu"))
    return cases


@pytest.mark.parametrize("impl", NATIVE)
def test_bad_native_actions_are_one_clear_error_and_step_nothing(impl):
    n = 8
    env = _make(impl, n, "native", seed=6)
    reference = _make(impl, n, "native", seed=6)
    for actions, message in _bad_actions(impl, n):
        with pytest.raises(studylib.ConfigError, match=message) as e:
            env.step(actions)
        assert "\n" not in str(e.value)
    bad_masks = [np.zeros(n, bool), _native_array(impl, np.zeros(n, np.int32)), _native_array(impl, np.zeros(n + 1, bool))]
    for mask in bad_masks:
        with pytest.raises(studylib.ConfigError, match="mask"):
            env.restart(mask)
    ones = _native_array(impl, np.ones(n, np.int32))
    np.testing.assert_array_equal(np.asarray(env.step(ones)[0]), np.asarray(reference.step(ones)[0]))  # nothing stepped


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU: a CUDA tensor for a CPU env")
def test_a_cuda_tensor_for_a_cpu_env_is_refused():
    env = _make("cpp", 4, "native")
    with pytest.raises(studylib.ConfigError, match="must be on this env's device cpu, got a tensor on cuda:0"):
        env.step(torch.zeros(4, dtype=torch.int32, device="cuda"))


@pytest.mark.parametrize("impl", ["cpp", "fused", "torch", "jax"])
@pytest.mark.parametrize("mode", list(AutoresetMode), ids=lambda m: m.name)
def test_the_adapter_in_native_arrays_matches_numpy(impl, mode):
    """make_vec(arrays="native"): the same values as arrays="numpy" in every autoreset mode, as the
    implementation's arrays (bookkeeping and restarts on them, nothing on the host)."""
    n = 16
    ours = {arrays: make_ours(impl, n, autoreset_mode=mode, arrays=arrays, device="cpu") for arrays in ("numpy", "native")}
    for envs in ours.values():
        envs.reset(seed=9)
    rng = np.random.default_rng(9)
    native_type = jax.Array if impl == "jax" else torch.Tensor
    endings = 0
    for _ in range(120):
        actions = rng.integers(0, 2, n)
        a = ours["numpy"].step(actions)
        b = ours["native"].step(_native_array(impl, actions))
        assert all(isinstance(x, native_type) for x in b[:4])
        for x, y in zip(a[:4], b[:4]):
            np.testing.assert_array_equal(x, np.asarray(y))
        done = a[2] | a[3]
        endings += done.sum()
        if mode == AutoresetMode.SAME_STEP:  # native: dense final_obs every step
            np.testing.assert_array_equal(np.asarray(b[4]["_final_obs"]), done)
            if done.any():
                np.testing.assert_array_equal(np.stack(a[4]["final_obs"][done]), np.asarray(b[4]["final_obs"])[done])
        if mode == AutoresetMode.DISABLED and done.any():
            for arrays, envs in ours.items():
                envs.reset(options={"reset_mask": done if arrays == "numpy" else _native_array(impl, done)})
    assert endings > 50
