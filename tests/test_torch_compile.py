"""torch-compile: the eager torch implementation's semantics, compiled (conformance runs it too)."""

import numpy as np

import studylib
from studylib.envs import torch_compile_env


def test_same_trajectory_as_eager_torch():
    """Reset draws come from the same torch.Generator stream, outside the compiled region, so
    the compiled rollout takes the eager one's trajectory (up to float32 rounding of fused
    kernels) and finishes the same episodes."""
    n, k = 64, 40
    a = studylib.make("torch-compile", n, seed=11, device="cpu")
    b = studylib.make("torch", n, seed=11, device="cpu")
    np.testing.assert_array_equal(a.get_state(), b.get_state())
    for policy in ("mlp", "none"):
        assert a.rollout(k, policy).episodes_finished == b.rollout(k, policy).episodes_finished > 0
        np.testing.assert_allclose(a.get_state(), b.get_state(), rtol=1e-4, atol=1e-5)


def test_compile_does_not_advance_the_environments():
    env = studylib.make("torch-compile", 16, seed=12, device="cpu")
    before = env.get_state()
    seconds = env.compile(5, "mlp")
    assert seconds >= 0
    np.testing.assert_array_equal(env.get_state(), before)
    fresh = studylib.make("torch-compile", 16, seed=12, device="cpu")
    assert env.rollout(30).episodes_finished == fresh.rollout(30).episodes_finished
    np.testing.assert_array_equal(env.get_state(), fresh.get_state())


def test_compiled_code_is_shared_across_instances_and_sizes():
    key = (1, 1, "mlp", torch_compile_env.STEPS_PER_CALL, "cpu", studylib.CARTPOLE_V1)
    for n in (8, 24):
        studylib.make("torch-compile", n, device="cpu").rollout(2)
    assert key in torch_compile_env._COMPILED
    fn = torch_compile_env._COMPILED[key]
    studylib.make("torch-compile", 40, device="cpu").rollout(1)
    assert torch_compile_env._COMPILED[key] is fn  # one compiled function for every N
