"""The recipe for a new simulator (studylib/sims/__init__.py), held to: a third simulator, a cart
sliding on a rail, defined in this file alone (its parameters, three array functions and its
record), registered, and run by every implementation that serves simulators of its language
(the generic array implementations: their records' ``rules_factory``) with no other code: the
settings, ``make``, the rollouts with episodes and the policy, the harness's measurement, the
cost model and the command line all take it from its record."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest

from studylib import make, sims
from studylib.devices import runs_here
from studylib.errors import ConfigError
from studylib.harness.model import costmodel
from studylib.harness.measure import measure
from studylib.implspec import specs
from studylib.settings import MeasurePoint
from studylib.sims.rules import EpisodeRules, reset_uniforms


@dataclass(frozen=True)
class SlideParams:
    dt: float = 0.2  # s per environment step
    limit: float = 0.3  # m: the episode ends beyond it
    max_episode_steps: int = 40


def reset_states(seed, env, episode, p, xp=np, wrap=None):
    """(x, v) uniform in ±0.1, from the counter hash (seed, env, episode, component)."""
    return 0.1 * (2.0 * reset_uniforms(0x1234567, seed, env, episode, 2, xp, wrap) - 1.0)


def observation(state, p, xp=np):
    return state * 1.0


def env_step(state, ctrl, p, xp=np):
    v = state[:, 1] + p.dt * xp.clip(ctrl, -1.0, 1.0)
    x = state[:, 0] + p.dt * v
    new = xp.stack((x, v), axis=1)
    return new, observation(new, p, xp), 1.0 - x * x, xp.abs(x) > p.limit


SLIDE = sims.SimSpec(
    name="slide", title="a cart on a rail (a test's toy)", state_size=2, observation_size=2, num_actions=0,
    params_type=SlideParams, default_params=SlideParams(), reward="1 - x^2", termination="|x| > 0.3",
    reference="this file", dynamics={"python": __name__}, episode=EpisodeRules(reset_states, observation, env_step),
    knobs=(), physics_flops=lambda p, c: 5, transcendentals=lambda p, c: 0, unfused_bytes=lambda p, s: 32)


@pytest.fixture
def slide():
    sims.register(SLIDE)
    yield SLIDE
    sims.unregister(SLIDE.name)


def test_every_python_implementation_serves_it_and_no_other_does(slide):
    serving = {r.name for r in specs() if r.implements("slide")}
    assert serving == {r.name for r in specs() if r.rules_factory is not None} >= {"torch", "jax", "torch-compile"}
    with pytest.raises(ConfigError, match="'cpp' does not implement simulator 'slide'"):
        make("cpp", 4, sim="slide")


@pytest.mark.parametrize("impl", ["torch", "jax"])
def test_it_steps_as_its_numpy_rules_and_rolls_out_with_episodes(slide, impl):
    if not runs_here(impl):
        pytest.skip(f"{impl} does not run here")
    env = make(impl, 32, sim="slide", seed=1)
    states = np.random.default_rng(0).uniform(-0.6, 0.6, (32, 2))
    env.set_state(states)
    ctrl = np.linspace(-1, 1, 32).astype(np.float32)
    obs, reward, terminated, truncated = env.step(ctrl)
    zero = np.zeros(32, np.int64)
    ref = SLIDE.episode.step_with_reset(states, zero, zero, ctrl.astype(np.float64), 1,
                                       np.arange(32, dtype=np.uint32), SlideParams())
    assert terminated.any() and (terminated == ref.terminated).all()
    assert np.abs(reward - ref.reward).max() < 1e-5 and np.abs(obs - ref.observation).max() < 1e-6
    assert np.abs(env.final_obs() - ref.final_obs).max() < 1e-6
    for policy in ("none", "mlp"):
        assert env.rollout(50, policy).episodes_finished > 0
    row = measure(MeasurePoint.of(impl, 16, 5, sim="slide", policy="mlp", repeats=1, min_seconds=0.01))
    assert row["sim"] == "slide" and row["samples_per_s"] > 0 and row["episodes_finished"] > 0


def test_its_torch_rules_keep_every_tensor_on_the_environments_device(slide):
    """The toy's reset, step and policy on PyTorch's meta device, which refuses a CPU tensor beside
    its own as CUDA does (tests/device_cases.py): a GPU run of this test once found the reset
    draws' component index made on the CPU."""
    import torch

    from studylib.envs.torch_env import _mask32
    from tests.device_cases import on_meta

    env = on_meta(make("torch", 8, sim="slide", device="cpu"))
    for policy in ("none", "mlp"):
        actions = env.rules.controls(policy, env._obs_now, env.seed, env._env_index, env.episode, env.elapsed,
                                     env._layers, env.log_std, torch, _mask32)
        out = env._advance(actions)
        fresh = env.rules.reset_states(env.seed, env._env_index, env.episode, env.params, torch, _mask32)
        for tensor in (actions, out.state, out.observation, out.reward, out.done, fresh):
            assert tensor.device.type == "meta"


def test_torch_compile_runs_it(slide):
    if not runs_here("torch-compile"):
        pytest.skip("torch-compile does not run here")
    assert make("torch-compile", 8, sim="slide").rollout(20, "none").episodes_finished > 0


def test_the_cost_model_and_the_command_line_read_its_record(slide, capsys):
    from studylib.__main__ import main

    m = costmodel.synthetic_machine() if hasattr(costmodel, "synthetic_machine") else None
    if m is not None:
        p = costmodel.predict("jax", m, num_envs=1024, steps=10, policy="none", sim="slide")
        assert p.samples_per_s > 0
    assert main(["bench", "--impl", "torch", "--sim", "slide", "--num-envs", "8", "--steps", "2", "--policy", "none",
                 "--repeats", "1", "--min-seconds", "0.01", "--json"]) == 0
    row = json.loads(capsys.readouterr().out.splitlines()[0])
    assert (row["sim"], row["impl"]) == ("slide", "torch") and row["episodes_finished"] >= 0
