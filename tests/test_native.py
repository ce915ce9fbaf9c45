"""The native backends (studylib/native/backends.py) and the argument struct they share with C++ and CUDA."""

import ctypes

import numpy as np
import pytest

import studylib
from studylib import native
from studylib.native.backends import PAIRS, CpuLibraryBackend
from studylib.sims.cartpole import CARTPOLE_V1, RESET_HIGH, RESET_LOW, reference_step
from studylib.errors import ConfigError, StudyError
from studylib.policy import mlp_logits, mlp_weights
from tests.conftest import IMPL_PARAMS, compile_ptx, random_states

# The implementations built on the native backends (cuda is skipped without a device).
NATIVE_PARAMS = [p for p in IMPL_PARAMS if p.values[0] in ("cpp", "cuda", "fused")]


@pytest.mark.parametrize("library", native.ROLLOUT_LIBRARIES)
def test_ctypes_struct_has_the_cpp_layout(library):
    """sizeof and every field's offset, as g++ laid out struct RolloutArgs, equal the ctypes twin."""
    layout = native.library_layout(library)
    assert layout == native.rollout_args_layout()
    assert len(layout) == 1 + len(native.RolloutArgs._fields_)


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_kernels_take_the_struct_by_value(pair, tmp_path):
    """Each CUDA entry point of the pair has exactly one parameter: RolloutArgs, of the ctypes size."""
    ptx = compile_ptx(PAIRS[pair].kernel_source, tmp_path)
    for entry in (f"{pair}_rollout", f"{pair}_reset", f"{pair}_restart"):
        params = ptx.split(f".entry {entry}(")[1].split(")")[0]
        assert params.count(".param") == 1
        assert f"{entry}_param_0[{ctypes.sizeof(native.RolloutArgs)}]" in params


def test_the_by_value_view_is_the_struct_itself():
    """CuPy sends a size-one numpy array's bytes as the kernel parameter: the view must be one
    element of the struct's size over the struct's own memory, so later field writes are seen."""
    args = native.RolloutArgs()
    view = native.by_value(args)
    assert view.size == 1 and view.nbytes == ctypes.sizeof(args)
    assert view.__array_interface__["data"][0] == ctypes.addressof(args)
    args.num_steps, args.seed, args.state = 1000, 0xFFFFFFFF, 0x1234
    assert view["num_steps"][0] == 1000 and view["seed"][0] == 0xFFFFFFFF and view["state"][0] == 0x1234


def _states_at_thresholds(rng, n_per_side=6):
    """Half the envs step just past a threshold (terminate), half just short of it."""
    p = CARTPOLE_V1
    rows = []
    for sign in (1, -1):
        for delta in np.linspace(-0.02, 0.02, n_per_side):
            s = random_states(rng, 1)[0] * 0.3
            s[0] = sign * (p.x_threshold + delta) - p.tau * s[1]  # x_next = x + tau * x_dot
            rows.append(s.copy())
            s = random_states(rng, 1)[0] * 0.3
            s[3] = (sign * (p.theta_threshold_radians + delta) - s[2]) / p.tau
            rows.append(s.copy())
    return np.array(rows)


@pytest.mark.parametrize("impl", NATIVE_PARAMS)
def test_final_obs_is_the_terminal_observation(impl):
    rng = np.random.default_rng(30)
    states = _states_at_thresholds(rng)
    actions = rng.integers(0, 2, len(states))
    _, ref_obs, ref_term = reference_step(states, actions)
    env = studylib.make(impl, len(states), seed=2)
    env.set_state(states)
    obs, _, terminated, truncated = env.step(actions)
    final = env.final_obs()
    assert final.shape == (len(states), 4) and final.dtype == np.float32
    assert terminated.sum() >= 8 and (~terminated).sum() >= 8 and not truncated.any()
    np.testing.assert_array_equal(terminated, ref_term)  # no state within float32 rounding of one
    np.testing.assert_allclose(final, ref_obs, rtol=1e-5, atol=1e-6)  # every env: the pre-reset obs
    np.testing.assert_array_equal(final[~terminated], obs[~terminated])  # live envs: what step returned
    done = obs[terminated]  # finished envs: step returned the next episode's first observation
    assert np.all((done >= RESET_LOW) & (done <= RESET_HIGH))
    assert not np.allclose(final[terminated], done)


@pytest.mark.parametrize("impl", NATIVE_PARAMS)
def test_final_obs_at_truncation(impl):
    p = CARTPOLE_V1
    env = studylib.make(impl, 3, seed=1)
    still = np.zeros((3, 4))
    for _ in range(p.max_episode_steps):
        env.set_state(still)  # upright and still: only the time limit ends the episode
        obs, _, terminated, truncated = env.step(np.zeros(3, int))
    assert truncated.all() and not terminated.any()
    expected = reference_step(still, np.zeros(3, int))[1]
    np.testing.assert_allclose(env.final_obs(), expected, rtol=1e-6)
    assert not np.allclose(obs, expected)  # step itself returned the reset draws


@pytest.mark.parametrize("impl", NATIVE_PARAMS)
def test_final_obs_needs_a_step_since_the_last_reset(impl):
    env = studylib.make(impl, 4)
    with pytest.raises(StudyError, match="needs a step"):
        env.final_obs()
    env.step(np.zeros(4, int))
    env.final_obs()
    env.rollout(3, policy="none")  # not recorded: the step's observations are stale now
    with pytest.raises(StudyError, match="needs a step"):
        env.final_obs()


def _recording_hook(calls):
    def hook(name, fn, *args):
        calls.append(name)
        return fn(*args)
    return hook


def test_call_hook_sees_every_native_call_and_passes_results_through():
    env = studylib.make("cpp", 40, seed=6)
    reference = studylib.make("cpp", 40, seed=6)
    calls = []
    env.backend.call_hook = _recording_hook(calls)
    assert env.backend.rollout_entry == "cartpole_rollout" and env.backend.api == "ctypes"
    done = env.rollout(200, policy="none").episodes_finished
    assert calls == ["cartpole_rollout"]  # K steps fused: one call
    assert done == reference.rollout(200, policy="none").episodes_finished > 0
    calls.clear()
    env.rollout(7, policy="mlp")
    assert calls == ["cartpole_rollout"] * 7  # unfused: one call per step, inference in torch
    env.reset()
    assert calls[-1] == "cartpole_reset"
    env.backend.call_hook = None
    calls.clear()
    env.rollout(5, policy="none")
    assert calls == []


def test_fused_rollout_is_one_call_whatever_the_policy():
    env = studylib.make("fused", 20, device="cpu")
    calls = []
    env.backend.call_hook = _recording_hook(calls)
    env.rollout(50, policy="mlp")
    env.rollout(50, policy="none")
    assert calls == ["fused_rollout", "fused_rollout"]


def test_weights_update_without_a_rebuild():
    env = studylib.make("fused", 64, device="cpu", policy_seed=0)
    lib = native.library("fused_cpu")
    obs = random_states(np.random.default_rng(4), 64).astype(np.float32)
    before = env.mlp_logits(obs)
    new = mlp_weights(9)
    env.set_policy_weights(new)
    after = env.mlp_logits(obs)
    assert native.library("fused_cpu") is lib  # the same loaded library
    assert not np.allclose(before, after)
    layers = [(w.astype(np.float64), b.astype(np.float64)) for w, b in new.layers()]
    np.testing.assert_allclose(after, mlp_logits(layers, obs.astype(np.float64)), atol=2e-6)
    # and the rollout uses them: same trajectory as an env made with those weights
    fresh = studylib.make("fused", 64, device="cpu", policy_seed=9)
    env.reset()
    assert env.rollout(100).episodes_finished == fresh.rollout(100).episodes_finished
    np.testing.assert_array_equal(env.get_state(), fresh.get_state())


def test_backend_refuses_what_its_kernels_cannot_do():
    cartpole = CpuLibraryBackend("cartpole", 8, 1, 1, CARTPOLE_V1)
    with pytest.raises(ConfigError, match="no MLP"):
        cartpole.rollout(None, 1, native.POLICY_MLP, 0)
    with pytest.raises(ConfigError, match="no MLP"):
        cartpole.set_weights(mlp_weights(0))
    with pytest.raises(ConfigError, match="actions"):
        cartpole.rollout(None, 1, native.POLICY_ACTIONS, 0)
    with pytest.raises(ConfigError, match="actions"):
        cartpole.rollout(np.zeros(8, np.int32), 1, native.POLICY_HASH, 0)
    with pytest.raises(ConfigError, match="weights"):
        CpuLibraryBackend("fused", 8, 1, 1, CARTPOLE_V1)


def test_cpu_state_is_shared_with_torch_without_a_copy():
    env = studylib.make("cpp", 16, seed=0)
    assert env.state.data_ptr() == env.backend.state.ctypes.data
    env.rollout(3, policy="none")
    np.testing.assert_array_equal(env.state.numpy(), env.get_state())


def test_every_library_declares_each_header_its_source_includes():
    """A library's cache key hashes its files (build.NativeLibrary.key_files): a header left out of
    its declaration once let an edit of cuda/chain_cpu_lanes.h load the chain library built from the
    old text. Every file the source includes, directly or through another, is declared, and the
    key hashes it."""
    import studylib.sims.chain.native  # noqa: F401 (registers the chain's libraries)

    assert "chain_cpu" in native.LIBRARIES
    for name, spec in native.LIBRARIES.items():
        included = set(native.included_files(spec.source))
        assert included <= set(spec.files), f"{name}: undeclared {sorted(p.name for p in included - set(spec.files))}"
        assert set(spec.key_files) == set(spec.files) | included


def test_a_header_edit_changes_the_libraries_cache_key(tmp_path, monkeypatch):
    """The key of the chain's CPU library changes when any header its source pulls in changes,
    declared or not (a copy of cuda/ edited header by header), and comes back with the text."""
    import dataclasses
    import shutil

    import studylib.sims.chain.native  # noqa: F401
    from studylib.native import build

    cuda = tmp_path / "cuda"
    shutil.copytree(native.CUDA_SOURCE_DIR, cuda)
    spec = native.LIBRARIES["chain_cpu"]
    copy = dataclasses.replace(spec, source=cuda / spec.source.name, headers=())  # nothing declared
    def key():
        return build._build_key("g++", copy.key_files, copy.extra_flags)

    before = key()
    headers = {p.name for p in native.included_files(copy.source)}
    assert {"chain_cpu_lanes.h", "chain.cuh", "mlp.cuh", "cartpole.cuh"} <= headers
    for header in sorted(headers):
        path = cuda / header
        original = path.read_text()
        path.write_text(original + "\n// edited\n")
        assert key() != before, header
        path.write_text(original)
    assert key() == before
