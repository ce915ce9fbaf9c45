"""studylib's vector envs under Stable-Baselines3's VecEnv API (studylib.adapters.sb3_vec), judged
against SB3's own DummyVecEnv: on gymnasium's envs step for step; on studylib's, each env's first
episode (later resets are the implementation's draws); and SB3's PPO and VecNormalize on top."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecNormalize

from studylib.adapters import sb3_vec
from studylib.errors import ConfigError


def _lockstep(env_id: str, kwargs: dict, steps: int, num_envs: int = 4, seed: int = 3):
    """SB3's DummyVecEnv of single envs and the adapter, seeded alike, fed the same random
    actions; per step: (reference, ours) as (obs, reward, dones, infos)."""
    ref = make_vec_env(env_id, n_envs=num_envs, env_kwargs=kwargs or None)
    ours = sb3_vec.make(env_id, num_envs, **kwargs)
    ref.seed(seed), ours.seed(seed)
    yield ref.reset(), ours.reset()
    rng = np.random.default_rng(0)
    for _ in range(steps):
        actions = np.stack([ref.action_space.sample() for _ in range(num_envs)]) if isinstance(
            ref.action_space, gymnasium.spaces.Box) else rng.integers(0, ref.action_space.n, num_envs)
        ref.step_async(actions), ours.step_async(actions)
        yield ref.step_wait(), ours.step_wait()


def _same_step(a, b) -> bool:
    (oa, ra, da, ia), (ob, rb, db, ib) = a, b
    same = np.allclose(oa, ob, atol=1e-5) and np.allclose(ra, rb, atol=1e-4) and np.array_equal(da, db)
    for i in np.flatnonzero(da):
        same = same and np.allclose(ia[i]["terminal_observation"], ib[i]["terminal_observation"], atol=1e-5)
        same = same and ia[i]["TimeLimit.truncated"] == ib[i]["TimeLimit.truncated"]
    return same and all(set(ib[i]) == {"TimeLimit.truncated"} for i in np.flatnonzero(~db))


def test_on_gymnasiums_own_envs_the_adapter_steps_as_dummyvecenv():
    """SyncVectorEnv's SAME_STEP under the adapter against SB3's DummyVecEnv: every transition,
    terminal observations and truncation flags included, over episode ends."""
    steps = _lockstep("CartPole-v1", {"max_episode_steps": 25}, 300)  # a short limit: truncations too
    first_ref, first_ours = next(steps)
    assert np.array_equal(first_ref, first_ours)
    truncated = terminated = 0
    for t, (ref, ours) in enumerate(steps):
        assert _same_step(ref, ours), f"step {t}"
        flags = [ref[3][i]["TimeLimit.truncated"] for i in np.flatnonzero(ref[2])]
        truncated, terminated = truncated + sum(flags), terminated + len(flags) - sum(flags)
    assert truncated > 5 and terminated > 5  # the check crossed episode ends of both kinds


@pytest.mark.parametrize(("env_id", "kwargs"), [("studylib/CartPole-v1", {"impl": "cpp"}),
                                                ("studylib/Chain-v0", {"impl": "fused", "links": 2})])
def test_on_studylibs_envs_each_first_episode_is_the_single_envs(env_id, kwargs):
    steps = _lockstep(env_id, kwargs, 400)
    first_ref, first_ours = next(steps)
    np.testing.assert_allclose(first_ours, first_ref, atol=1e-6)
    in_first = np.ones(4, bool)  # envs still in their first episode
    for t, ((oa, ra, da, ia), (ob, rb, db, ib)) in enumerate(steps):
        assert np.array_equal(da[in_first], db[in_first]), f"step {t}"
        np.testing.assert_allclose(rb[in_first], ra[in_first], rtol=1e-4, atol=1e-4)
        for i in np.flatnonzero(in_first & da):
            np.testing.assert_allclose(ib[i]["terminal_observation"], ia[i]["terminal_observation"], atol=1e-4)
            assert ib[i]["TimeLimit.truncated"] == ia[i]["TimeLimit.truncated"]
        still = in_first & ~da
        np.testing.assert_allclose(ob[still], oa[still], atol=1e-4)
        in_first = still
        if not in_first.any():
            break
    assert not in_first.any(), "an env's first episode outlived the check"


def test_sb3s_ppo_and_vecnormalize_run_on_the_adapter():
    from stable_baselines3 import PPO

    from studylib.train.peers import without_log_folder

    envs = VecNormalize(sb3_vec.make("studylib/Chain-v0", 16, impl="cpp", links=2))
    model = without_log_folder(PPO("MlpPolicy", envs, n_steps=32, batch_size=256, n_epochs=1, seed=0, device="cpu"))
    model.learn(1024)
    assert model.num_timesteps == 1024
    assert envs.obs_rms.count > 1000  # VecNormalize saw every step's observations


def test_a_vector_env_without_same_step_resets_is_refused():
    envs = gymnasium.make_vec("studylib/CartPole-v1", num_envs=2, impl="cpp")  # NEXT_STEP, gymnasium's default
    with pytest.raises(ConfigError, match="SAME_STEP"):
        sb3_vec.SB3VecEnv(envs)
