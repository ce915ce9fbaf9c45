"""The chain as RL code uses it: the snippet of "Using studylib" (book/using.md) run as written, gymnasium's ids with their
spaces, checks and wrappers, Stable-Baselines3 making the id as typed, and the gymnax-shaped
functions inside jit and vmap."""

from __future__ import annotations

import re
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
    with pytest.raises(ConfigError, match=r"one float in \[-1, 1\]"):
        env.step(np.array([1.5], np.float32))


def test_the_n2_id_is_v5s_shape_and_threshold():
    ours = gymnasium.make("studylib/InvertedDoublePendulum-v5", impl="cpp")
    theirs = gymnasium.make("InvertedDoublePendulum-v5")
    assert ours.spec.max_episode_steps == theirs.spec.max_episode_steps == 1000
    assert ours.spec.reward_threshold == theirs.spec.reward_threshold
    assert ours.observation_space.shape == theirs.observation_space.shape == (9,)
    assert ours.action_space.shape == theirs.action_space.shape == (1,)
    assert np.all(ours.action_space.low == theirs.action_space.low)


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


def test_sb3_makes_the_id_and_learns_a_few_steps():
    from stable_baselines3 import PPO

    from stable_baselines3.common.env_util import make_vec_env

    envs = make_vec_env("studylib/InvertedDoublePendulum-v5", n_envs=2, seed=0, env_kwargs={"impl": "cpp", "render_mode": None})  # no renderer
    from studylib.train.peers import without_log_folder

    model = without_log_folder(PPO("MlpPolicy", envs, n_steps=32, batch_size=32, n_epochs=1, seed=0, device="cpu"))
    model.learn(64)
    assert model.num_timesteps == 64
    action, _ = model.predict(np.zeros(9, np.float32), deterministic=True)
    assert action.shape == (1,)


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
