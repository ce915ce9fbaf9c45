"""The chain as RL code uses it: the snippet of "Using studylib" (book/using.md) run as written, gymnasium's ids with their
spaces, checks and wrappers, Stable-Baselines3 making the id as typed, and the gymnax-shaped
functions inside jit and vmap."""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.wrappers.vector import ClipAction, NormalizeObservation, RecordEpisodeStatistics

import studylib
import studylib.gym_vector  # noqa: F401  (registers the ids)
import studylib.adapters.jax_chain as jax_chain
from studylib.errors import ConfigError
from tests.conftest import IMPL_PARAMS
from tests.test_chain_conformance import v5_off_limit_inputs

USING = Path(__file__).resolve().parents[1] / "book" / "using.md"


def test_the_using_pages_chain_snippet_runs_as_written():
    text = USING.read_text()
    start = text.index("The n-link chain (`studylib/sims/chain/`")
    block = re.search(r"```python\n(.*?)```", text[start:], re.S).group(1)
    namespace = {"np": np, "studylib": studylib}
    exec(compile(block, "book/using.md (the chain)", "exec"), namespace)
    assert namespace["envs"].num_envs == 1024 and namespace["envs"].single_observation_space.shape == (27,)
    assert namespace["obs"].shape == (9,)  # the last block's: the gymnax-shaped chain at n = 2


@pytest.mark.parametrize("impl", ["cpp", "fused", "jax", "gym"])
def test_the_single_env_passes_gymnasiums_checker(impl):
    env = gymnasium.make("studylib/Chain-v0", impl=impl, links=3, disable_env_checker=True)
    check_env(env.unwrapped, skip_render_check=True)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (12,) and env.observation_space.contains(obs)
    for bad in (np.array([np.nan], np.float32), np.zeros(2, np.float32), "push"):
        with pytest.raises(ConfigError, match=r"one finite float"):
            env.step(bad)


@pytest.mark.parametrize("impl", [p for p in IMPL_PARAMS if p.values[0] != "torch-compile"])
def test_controls_beyond_the_box_act_as_its_bound_as_in_v5(impl):
    """gymnasium's InvertedDoublePendulum-v5 takes any finite control: its motor's ctrlrange clamps
    it (ctrllimited), and code written for v5 may step unclipped Gaussian samples. The id takes them
    too, single and vector, and gives v5's transition for them: that of the control clamped to ±1."""
    v5 = gymnasium.make("InvertedDoublePendulum-v5").unwrapped
    ours = gymnasium.make("studylib/InvertedDoublePendulum-v5", impl=impl).unwrapped
    v5.reset(seed=1), ours.reset(seed=1)
    qpos, qvel, _ = v5_off_limit_inputs(6)
    for i, control in enumerate((1.7, -3.0, 250.0, -1.0001, 1.0, -1.0)):
        out = []
        for env, c in ((v5, control), (ours, control), (ours, float(np.clip(control, -1, 1)))):
            env.set_state(qpos[i], qvel[i])
            out.append(env.step(np.array([c], np.float32))[:2])
        (o_v5, r_v5), (o, r), (o_clipped, r_clipped) = out
        np.testing.assert_allclose(o, o_v5, rtol=2e-5, atol=2e-5)
        assert r == pytest.approx(r_v5, rel=5e-6, abs=5e-6)
        np.testing.assert_array_equal(o, o_clipped)
        assert r == r_clipped
    envs = gymnasium.make_vec("studylib/InvertedDoublePendulum-v5", num_envs=2, impl=impl)
    envs.reset(seed=0)
    obs = envs.step(np.array([[4.0], [-0.5]], np.float32))[0]
    assert obs.shape == (2, 9) and np.isfinite(obs).all()
    with pytest.raises(ConfigError, match="finite"):
        envs.step(np.array([[np.inf], [0.0]], np.float32))
    v5.close(), ours.close(), envs.close()


def test_the_n2_id_is_v5s_shape_and_threshold():
    ours = gymnasium.make("studylib/InvertedDoublePendulum-v5", impl="cpp")
    theirs = gymnasium.make("InvertedDoublePendulum-v5")
    assert ours.spec.max_episode_steps == theirs.spec.max_episode_steps == 1000
    assert ours.spec.reward_threshold == theirs.spec.reward_threshold
    assert ours.observation_space.shape == theirs.observation_space.shape == (9,)
    assert ours.action_space.shape == theirs.action_space.shape == (1,)
    assert np.all(ours.action_space.low == theirs.action_space.low)


STUDYLIB_IDS = sorted(env_id for env_id in gymnasium.registry if env_id.startswith("studylib/"))


def test_the_registered_ids_are_the_three_documented():
    assert STUDYLIB_IDS == ["studylib/CartPole-v1", "studylib/Chain-v0", "studylib/InvertedDoublePendulum-v5"]


@pytest.mark.parametrize("env_id", STUDYLIB_IDS)  # every id registered, a new simulator's too
def test_every_id_names_gymnasiums_class_among_its_direct_bases(env_id):
    """skrl's ``wrap_env`` (wrapper "auto") tells an env's API from its class's direct bases and
    its ``unwrapped``'s, and refuses the env where none is gymnasium's: each id's vector env and
    single env say gymnasium's among theirs."""
    envs, env = gymnasium.make_vec(env_id, num_envs=2), gymnasium.make(env_id)
    for cls in (type(envs), type(envs.unwrapped), type(env.unwrapped)):
        assert any(base.__module__.startswith("gymnasium.") for base in cls.__bases__), cls.__bases__
    envs.close()
    env.close()


@functools.cache
def v5_transitions(count=200):
    """gymnasium's own InvertedDoublePendulum-v5 from ``count`` states off the slider limit (the
    conformance test's ``v5_off_limit_inputs``): (qpos, qvel, ctrl, observations, rewards,
    terminated, next states, tip heights, info's three reward terms), each after set_state, as a
    comparison is written."""
    v5 = gymnasium.make("InvertedDoublePendulum-v5").unwrapped
    v5.reset(seed=1)
    qpos, qvel, ctrl = v5_off_limit_inputs(count)
    out = []
    for i in range(count):
        v5.set_state(qpos[i], qvel[i])
        obs, reward, terminated, _, info = v5.step(ctrl[i:i + 1])
        terms = [info[k] for k in ("reward_survive", "distance_penalty", "velocity_penalty")]
        out.append((obs, reward, terminated, v5.state_vector(), v5.data.site_xpos[0][2], terms))
    v5.close()
    return (qpos, qvel, ctrl, *(np.array(column) for column in zip(*out)))


# torch-compile's chain step is torch's (test_chain_envs.py compares them); compiling it costs 45-70 s here
@pytest.mark.parametrize("impl", [p for p in IMPL_PARAMS if p.values[0] != "torch-compile"])
def test_the_n2_id_steps_as_gymnasiums_v5_from_the_same_states(impl):
    """Code written for gymnasium's MujocoEnv (``unwrapped.set_state(qpos, qvel)``, ``step``,
    ``state_vector()``, ``dt``) runs on the id and gives v5's transitions: observation, reward and
    next state within float32 rounding (measured, 200 states: at most 1.7e-6 relative, the gym
    implementation 1.1e-7), the same terminations (40 of 200 here), and v5's info: its three reward
    terms, summing to the reward. After a terminating step ``state_vector()`` is the terminal state,
    as v5's is, and stepping on is refused."""
    qpos, qvel, ctrl, obs, reward, terminated, state, y, terms = v5_transitions()
    env = gymnasium.make("studylib/InvertedDoublePendulum-v5", impl=impl).unwrapped
    v5 = gymnasium.make("InvertedDoublePendulum-v5").unwrapped
    assert env.dt == pytest.approx(v5.dt) and env.frame_skip == v5.frame_skip
    for ours, theirs in ((env.init_qpos, v5.init_qpos), (env.init_qvel, v5.init_qvel)):
        np.testing.assert_array_equal(ours, theirs)
        assert ours.dtype == theirs.dtype
    v5.close()
    with pytest.raises(ConfigError, match=r"reset\(\) was never called: call reset\(\) before state_vector"):
        env.state_vector()
    for i in range(len(ctrl)):
        env.set_state(qpos[i], qvel[i])
        o, r, t, tr, info = env.step(np.array([ctrl[i]], np.float32))
        assert abs(y[i] - 1.0) < 1e-4 or t == terminated[i], (i, y[i])
        np.testing.assert_allclose(o, obs[i], rtol=2e-5, atol=2e-5)
        assert r == pytest.approx(reward[i], rel=5e-6, abs=5e-6) and not tr
        assert list(info) == ["reward_survive", "distance_penalty", "velocity_penalty"]
        assert sum(info.values()) == pytest.approx(r, abs=1e-9)
        if t == terminated[i]:
            np.testing.assert_allclose(list(info.values()), terms[i], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(env.state_vector(), state[i], rtol=2e-5, atol=2e-5)  # terminal ones too
        if t:
            with pytest.raises(ConfigError, match=r"terminated .* call reset\(\) or set_state\(\) before step"):
                env.step(np.array([ctrl[i]], np.float32))
    assert 0 < terminated.sum() < len(ctrl)
    with pytest.raises(ConfigError, match="3 finite floats each"):
        env.set_state(qpos[0], np.append(qvel[0], 0.0))
    with pytest.raises(ConfigError, match="finite"):
        env.set_state(np.full(3, np.nan), qvel[0])
    with pytest.raises(ConfigError, match="3 finite floats each"):
        env.set_state("upright", qvel[0])
    env.close()


def test_vector_wrappers_run_as_gymnasiums_do():
    """NEXT_STEP (the default) under gymnasium's observation and statistics wrappers; SAME_STEP's
    info carries the final observations as SyncVectorEnv's."""
    envs = gymnasium.make_vec("studylib/Chain-v0", num_envs=16, impl="torch", links=2)
    envs = RecordEpisodeStatistics(NormalizeObservation(ClipAction(envs)))
    envs.reset(seed=0)
    episodes = 0
    for _ in range(40):
        _, reward, terminated, truncated, info = envs.step(envs.action_space.sample() * 2.0)  # clipped
        episodes += int(info.get("_episode", np.zeros(16, bool)).sum())
    assert episodes > 0 and reward.shape == (16,)
    same = gymnasium.make_vec("studylib/Chain-v0", num_envs=16, impl="cpp", links=2, autoreset_mode="SameStep")
    same.reset(seed=1)
    for _ in range(40):
        _, _, terminated, truncated, info = same.step(same.action_space.sample())
        if (terminated | truncated).any():
            break
    assert "final_obs" in info and info["final_obs"][np.flatnonzero(terminated | truncated)[0]].shape == (9,)


@pytest.mark.parametrize("env_id", STUDYLIB_IDS)
def test_sb3s_env_checker_passes_every_id_without_a_warning(env_id):
    """Stable-Baselines3's own ``check_env`` (what its users run before training), warnings as
    errors: the spaces, dtypes, reset and step signatures SB3 expects, for every registered id."""
    import warnings

    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    env = gymnasium.make(env_id, impl="cpp")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sb3_check_env(env, warn=True, skip_render_check=True)
    env.close()


def test_sb3_makes_the_id_and_learns_a_few_steps():
    from stable_baselines3 import PPO

    from stable_baselines3.common.env_util import make_vec_env

    # as typed: make_vec_env asks every env for render_mode="rgb_array"
    envs = make_vec_env("studylib/InvertedDoublePendulum-v5", n_envs=2, seed=0, env_kwargs={"impl": "cpp"})
    assert envs.render_mode == "rgb_array"
    from studylib.train.peers import without_log_folder

    model = without_log_folder(PPO("MlpPolicy", envs, n_steps=32, batch_size=32, n_epochs=1, seed=0, device="cpu"))
    model.learn(64)
    assert model.num_timesteps == 64
    action, _ = model.predict(np.zeros(9, np.float32), deterministic=True)
    assert action.shape == (1,)


# Rendering runs in a child process: MuJoCo picks its OpenGL platform (MUJOCO_GL) when it is first
# imported, which this process has done without one.
FRAMES = """
import json, numpy as np, gymnasium, studylib.gym_vector
from gymnasium.envs.mujoco.inverted_double_pendulum_v5 import DEFAULT_CAMERA_CONFIG
ours = gymnasium.make("studylib/InvertedDoublePendulum-v5", impl="cpp", render_mode="rgb_array")
theirs = gymnasium.make("InvertedDoublePendulum-v5", render_mode="rgb_array", default_camera_config=DEFAULT_CAMERA_CONFIG)
initial_pose = ours.unwrapped.render()  # before any reset
theirs.reset(seed=4)
theirs.unwrapped.set_state(np.zeros(3), np.zeros(3))
before_reset = float(np.mean(initial_pose != theirs.unwrapped.render()))
ours.reset(seed=4), theirs.reset(seed=4)
differ, first = [], None
for action in (0.5, 0.5, -1.0):
    ours.step(np.array([action], np.float32)), theirs.step(np.array([action]))
    frame = ours.render()
    first = frame if first is None else first
    differ.append(float(np.mean(frame != theirs.render())))
theirs.close()  # another MuJoCo env closing must not leave ours drawing black frames
after = ours.render()
vector = gymnasium.make_vec("studylib/Chain-v0", num_envs=2, impl="jax", links=3, render_mode="rgb_array")
vector.reset(seed=0)
frames = vector.render()
print(json.dumps({"shape": list(first.shape), "dtype": str(first.dtype), "differ": differ, "before_reset": before_reset,
                  "same_after_close": float(np.mean(after != frame)), "moved": float(np.mean(first != frame)),
                  "vector": [list(f.shape) for f in frames], "vector_std": [float(f.std()) for f in frames]}))
"""


def _child(script: str, **env_vars) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM", "DISPLAY")}
    return subprocess.run([sys.executable, "-c", script], env={**env, **env_vars}, capture_output=True, text=True,
                          timeout=120, check=False)


def test_rgb_array_frames_are_mujocos_as_gymnasiums_v5_draws_them():
    """v5's own frames, through the same MujocoEnv renderer with the camera v5's module declares
    (its DEFAULT_CAMERA_CONFIG, which gymnasium's v5 defines and the chain passes): the same picture
    within the float32 physics' rounding (measured: under 0.03% of the values differ). Before the
    first reset (``env.unwrapped.render()``: ``make``'s OrderEnforcing refuses), ours draws the
    initial pose, v5's frame of ``set_state(init_qpos, init_qvel)``; v5's own frame there is black,
    its kinematics not yet computed."""
    r = _child(FRAMES, MUJOCO_GL="egl")
    if r.returncode != 0 and "egl" in r.stderr.lower():  # EGL missing, or no device to make a context on
        pytest.skip(f"no EGL OpenGL context on this machine: {r.stderr.strip().splitlines()[-1]}")
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["shape"] == [480, 480, 3] and got["dtype"] == "uint8"
    assert max(got["differ"]) < 2e-3 and got["before_reset"] == 0.0, got
    assert got["moved"] > 1e-3  # the frames show the chain moving, not one still picture
    assert got["same_after_close"] == 0.0
    assert got["vector"] == [[480, 480, 3]] * 2 and min(got["vector_std"]) > 1.0


def test_rendering_without_an_opengl_platform_says_which_variable_to_set():
    """Three frames, of two chains: each one a frame, or each one the same line (asking MuJoCo for
    an OpenGL context a second time aborts the process, as it does for gymnasium's own v5)."""
    script = ("import gymnasium, numpy, studylib.gym_vector\n"
              "envs = [gymnasium.make('studylib/Chain-v0', impl='cpp', links=n, render_mode='rgb_array') for n in (2, 3)]\n"
              "for env in (envs[0], envs[0], envs[1]):\n"
              "    env.reset(seed=0)\n"
              "    try:\n        print(env.render().shape)\n"
              "    except studylib.ConfigError as e:\n        print('ConfigError:', e)\n")
    r = _child(script)
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout.strip().splitlines()[-3:]
    assert out == ["(480, 480, 3)"] * 3 or all("ConfigError" in o and "MUJOCO_GL=egl" in o for o in out), out


def test_gymnax_shaped_functions_vmap_and_jit():
    env, params = jax_chain.make(links=2)
    keys = jax.random.split(jax.random.key(0), 32)
    obs, states = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    actions = jax.vmap(env.action_space(params).sample)(keys)
    done = 0
    for _ in range(30):
        obs, states, reward, terminated, truncated, info = step(keys, states, actions, params)
        done += int(jnp.sum(terminated))
    assert obs.shape == (32, 9) and done > 0
    assert bool(env.action_space(params).contains(jnp.array([0.5]))) and not bool(
        env.action_space(params).contains(jnp.array([1.5])))
