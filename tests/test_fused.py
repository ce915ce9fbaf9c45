"""The fused kernel (MLP inference + simulation in one call): its source, its MLP, its rollout."""

import numpy as np
import pytest

import studylib
import studylib.sims.cartpole  # studylib.sims.cartpole.reference_step below: a submodule the package does not import
from studylib import native
from studylib.episodes import reset_values_numpy
from studylib.policy import mlp_logits, mlp_weights, reference_actions
from tests.conftest import compile_ptx, random_states


def test_nvcc_compiles_the_fused_kernel_to_ptx(tmp_path):
    ptx = compile_ptx(native.FUSED_KERNEL_SOURCE, tmp_path)
    for entry in ("fused_rollout", "fused_reset", "fused_mlp_logits"):
        assert f".entry {entry}" in ptx
    assert ".shared" in ptx and "fma.rn.f32" in ptx  # weights in shared memory, the MLP's FMAs
    assert "div.rn.f32" in ptx and str(0x7FEB352D) in ptx  # the physics and the counter hash


def _code(src: str) -> str:
    """C/C++ source without its comments: a check must find the code, not a comment naming it."""
    import re

    return re.sub(r"//[^\n]*|/\*.*?\*/", "", src, flags=re.S)


def test_both_builds_share_the_headers():
    cpu, kernel = (_code(p.read_text()) for p in (native.FUSED_CPU_SOURCE, native.FUSED_KERNEL_SOURCE))
    for src in (cpu, kernel):
        assert '#include "cartpole.cuh"' in src and '#include "mlp.cuh"' in src
        assert '#include "rollout_args.h"' in src  # the one argument struct
        assert "mlp_greedy_action" in src
    assert "mlp_forward<" in kernel  # the GPU kernel runs mlp.cuh's forward pass as written
    # the CPU build register-blocks layer 2 for its ISA, from mlp.cuh's activation and weight layout
    for piece in ("mlp_tanh(", "MLP_OFF_W1", "MLP_OFF_W2", "MLP_OFF_B2", "MLP_OFF_W3"):
        assert piece in cpu, piece
    assert '#include "cpu_rollout.h"' in cpu  # the block loop shared with cpp
    cpu += native.CPU_ROLLOUT_HEADER.read_text()
    for piece in ("cp_physics", "cp_env_finish", "cp_reset_cartpole", "cp_carry", "cp_hash_action"):
        assert piece in cpu
    info = native.build_info("fused_cpu")
    assert info["path"].endswith(".so") and "fused_cpu" in info["path"]
    assert native.build_info()["name"] == "cartpole_cpu"  # the default library is unchanged


def test_packed_weights_follow_the_header_layout():
    w = mlp_weights(3)
    packed = native.pack_weights(w)
    assert packed.dtype == np.float32 and packed.size == 4 * 64 + 64 + 64 * 64 + 64 + 64 * 2 + 2
    np.testing.assert_array_equal(packed[320:320 + 4096].reshape(64, 64), w.w2)
    np.testing.assert_array_equal(packed[-2:], w.b3)


def test_kernel_mlp_matches_the_float64_reference():
    env = studylib.make("fused", 4, device="cpu", policy_seed=5)
    rng = np.random.default_rng(60)
    obs = (random_states(rng, 20000) * [1.0, 1.5, 1.0, 1.5]).astype(np.float32)
    obs[:8] = [[100, -100, 5, -5]] * 8  # far outside the tanh approximation's range: clamped
    logits = env.mlp_logits(obs)
    layers = [(w.astype(np.float64), b.astype(np.float64)) for w, b in env.policy_weights.layers()]
    ref = mlp_logits(layers, obs.astype(np.float64))
    np.testing.assert_allclose(logits, ref, rtol=0, atol=2e-6)
    actions, margin = reference_actions(env.policy_weights, obs)
    sure = margin > 1e-4
    assert sure.mean() > 0.99
    np.testing.assert_array_equal(np.argmax(logits, axis=1)[sure], actions[sure])


def _tanh_probe():
    """Weights whose logit 0 is one tanh of the first layer's (x) and logit 1 one of the second's
    (1000 x / 1000 through a near-linear tanh), each to ~1e-7: the kernel's mlp_tanh on its own."""
    w = mlp_weights(0)
    for arr in (w.w1, w.b1, w.w2, w.b2, w.w3, w.b3):
        arr[...] = 0
    w.w1[0, 0] = 1.0  # h1[0] = tanh(x)
    w.w2[0, 0] = 1e-3  # h2[0] = tanh(1e-3 tanh(x)), ~linear
    w.w3[0, 0] = 1e3
    w.w1[0, 1] = 1e-3  # h1[1] = tanh(1e-3 x), ~linear
    w.w2[1, 1] = 1e3  # h2[1] = tanh(1e3 tanh(1e-3 x)) ~ tanh(x)
    w.w3[1, 1] = 1.0
    return w


def test_kernel_tanh_is_within_its_stated_error():
    """mlp.cuh's rational tanh: 4.9e-7 from float64 tanh, as its comment says, over [-12, 12] (the
    clamp included), in both layers; the probe's own float32 rounding adds ~1e-7, and logit 0 reads
    the second layer's tanh at ~1e-3 x 1000, so a slope at 0 off by 1e-6 fails it."""
    env = studylib.make("fused", 4, device="cpu")
    w = _tanh_probe()
    env.set_policy_weights(w)
    x = np.linspace(-12, 12, 200001).astype(np.float32)
    obs = np.zeros((x.size, 4), np.float32)
    obs[:, 0] = x
    logits = env.mlp_logits(obs).astype(np.float64)
    ref = mlp_logits([(a.astype(np.float64), b.astype(np.float64)) for a, b in w.layers()], obs.astype(np.float64))
    err = np.abs(logits - ref).max(axis=0)
    assert err.max() < 6e-7, err
    assert np.abs(ref[:, 0] - np.tanh(x.astype(np.float64))).max() < 1e-6  # the probe is tanh(x)


def test_ties_go_to_action_0():
    env = studylib.make("fused", 4, device="cpu")
    zero = mlp_weights(0)
    for arr in (zero.w3, zero.b3):
        arr[...] = 0  # both logits 0 for every observation (fresh arrays from mlp_weights)
    env.set_policy_weights(zero)
    env.reset()
    env.set_state(np.full((4, 4), 0.01))
    env.rollout(1, policy="mlp")
    expected = studylib.sims.cartpole.reference_step(np.full((4, 4), 0.01), np.zeros(4, int))[0]
    np.testing.assert_allclose(env.get_state(), expected, rtol=1e-6)


def test_rollout_of_k_steps_is_one_call_equal_to_k_single_steps():
    """K steps in one native call == K calls of one step, with resets, for the MLP policy:
    no state is lost or duplicated between the kernel's steps, lanes and blocks (N is not a
    multiple of the 16-lane block, so the last block is partial)."""
    n, k = 37, 60
    a = studylib.make("fused", n, seed=8, device="cpu", state_factor=2)
    b = studylib.make("fused", n, seed=8, device="cpu", state_factor=2)
    calls = []

    def spy(name, fn, args):
        calls.append((name, args.contents.num_steps, args.contents.policy))
        return fn(args)

    a.backend.call_hook = spy
    done_a = a.rollout(k, policy="mlp").episodes_finished
    assert calls == [("fused_rollout", k, native.POLICY_MLP)]  # one native call for all K steps
    done_b = sum(b.rollout(1, policy="mlp").episodes_finished for _ in range(k))
    assert done_a == done_b > 0
    np.testing.assert_array_equal(a.get_state(), b.get_state())


def test_resets_draw_what_cpp_draws():
    n, s = 50, 2
    env = studylib.make("fused", n, seed=99, device="cpu", state_factor=s)
    np.testing.assert_array_equal(env.get_state(), reset_values_numpy(99, np.arange(n), np.zeros(n), 4 * s))


def test_no_policy_rollout_equals_cpp():
    """policy="none": the same hashed actions and reset draws as cpp, so the same trajectory."""
    n = 40
    envs = [studylib.make(impl, n, seed=6, device="cpu") for impl in ("fused", "cpp")]
    done = [e.rollout(200, policy="none").episodes_finished for e in envs]
    assert done[0] == done[1] > 0
    np.testing.assert_allclose(envs[0].get_state(), envs[1].get_state(), rtol=1e-4, atol=1e-5)


def test_device_choice():
    from studylib.devices import cuda_status

    assert studylib.make("fused", 2, device="cpu").device == "cpu"
    with pytest.raises(studylib.ConfigError, match="device"):
        studylib.make("fused", 2, device="tpu")
    if not cuda_status()[0]:
        assert studylib.make("fused", 2).device == "cpu"
        with pytest.raises(studylib.DeviceUnavailableError, match="no CUDA device"):
            studylib.make("fused", 2, device="cuda")
