"""The chain's episode step (numpy float64: ``episode.advance`` over ``dynamics.env_step``) against
``ChainMujocoEnv`` (studylib/sims/chain/mujoco_env.py), gymnasium's ``MujocoEnv`` on
``chain_mjcf(n)`` stepped by MuJoCo's own ``mj_step``: one environment step from 1000 random states
per n, n in {1, 2, 4, 8, 16, 32} (next state, observation, reward, termination); the env passes
gymnasium's ``check_env``; at n = 2 it is gymnasium's own InvertedDoublePendulum-v5 away from the
slider limit; and the timestep rule (``model.stable_timestep``) keeps MuJoCo's RK4 stable for
1000 environment steps from v5's reset distribution under random controls."""

from __future__ import annotations

import functools
import warnings

import gymnasium
import mujoco
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from studylib.sims.chain import episode
from studylib.sims.chain.model import ChainParams
from studylib.sims.chain.mujoco_env import ChainMujocoEnv

LINKS = (1, 2, 4, 8, 16, 32)
STATES = 1000


def relative_error(a, b):
    """|a − b| / max(|b|, 1): relative where |b| > 1, absolute near zero."""
    return np.abs(np.asarray(a, np.float64) - b) / np.maximum(np.abs(b), 1.0)


def random_inputs(n, count, seed=0):
    """States the chain meets in an episode and past its end: cart x in ±0.9, the first hinge in
    ±0.8 rad and the others in ±0.3 (so that some chains terminate at every n), qvel in ±1.5;
    controls in ±1.2 (the actuator clips beyond ±1, as MuJoCo's ctrlrange does)."""
    rng = np.random.default_rng(seed + 100 * n)
    qpos = np.concatenate((rng.uniform(-0.9, 0.9, (count, 1)), rng.uniform(-0.8, 0.8, (count, 1)),
                           rng.uniform(-0.3, 0.3, (count, n - 1))), axis=1)
    return np.concatenate((qpos, rng.uniform(-1.5, 1.5, (count, n + 1))), axis=1), rng.uniform(-1.2, 1.2, count)


@functools.lru_cache(maxsize=None)
def mujoco_steps(n):
    """ChainMujocoEnv.step after set_state, from each random state: (states, ctrl, next states,
    observations, rewards, terminated, tip heights)."""
    states, ctrl = random_inputs(n, STATES)
    env = ChainMujocoEnv(links=n)
    env.reset(seed=0)
    out = {k: [] for k in ("state", "obs", "reward", "terminated", "y")}
    for s, u in zip(states, ctrl):
        env.set_state(s[:n + 1], s[n + 1:])
        obs, reward, terminated, truncated, info = env.step(np.array([u]))
        assert not truncated and set(info) == {"reward_survive", "distance_penalty", "velocity_penalty"}
        out["state"].append(env.state_vector())
        out["obs"].append(obs), out["reward"].append(reward), out["terminated"].append(terminated)
        out["y"].append(env.data.site_xpos[0][2])
    return states, ctrl, *(np.array(out[k]) for k in ("state", "obs", "reward", "terminated", "y"))


# One environment step (frame_skip mj_steps) in float64 agrees with MuJoCo to rounding amplified by
# the mass matrix's conditioning (it grows with n: MuJoCo factors M by its own sparse LDLᵀ in the
# joint coordinates, ours by Cholesky in absolute angles) and by frame_skip steps (25 at n = 32)
# of a chaotic chain. Measured worst relative errors over the 1000 states (next state and
# observation), n = 1, 2, 4, 8, 16, 32: 1.4e-15, 3.2e-15, 5.0e-14, 4.9e-13, 2.7e-11, 1.9e-9 (reward
# 6e-16 ... 5e-11); each bound is 50x or more above its measurement. float32 arithmetic of the
# same step is off by 1e-6 (n = 2) to 2e-3 (n = 32): these are float64 agreements.
STATE_BOUND = {1: 1e-10, 2: 1e-10, 4: 1e-10, 8: 1e-10, 16: 1e-9, 32: 1e-7}


@pytest.mark.parametrize("n", LINKS)
def test_an_episode_step_in_float64_is_chain_mujoco_envs(n):
    states, ctrl, mj_state, mj_obs, mj_reward, mj_terminated, mj_y = mujoco_steps(n)
    p = ChainParams(links=n)
    fresh = np.zeros_like(states)  # where the episode ended, advance resets to this
    out = episode.advance(states, np.zeros(STATES, np.int64), np.zeros(STATES, np.int64), ctrl, fresh, p)
    # termination: v5's y <= 1 generalized (y <= n L / 1.2): exactly MuJoCo's, except a tip within
    # rounding (1e-9 m) of the threshold, where either answer is right (none met here)
    near = np.abs(mj_y - p.length / 1.2) < 1e-9
    np.testing.assert_array_equal(out.terminated[~near], mj_terminated[~near])
    assert 0 < mj_terminated.sum() < STATES  # both outcomes met
    assert not out.truncated.any()
    np.testing.assert_array_equal(out.state[out.done], fresh[out.done])
    bound = STATE_BOUND[n]
    assert relative_error(out.state[~out.done], mj_state[~out.done]).max() < bound
    # the observation at the end of the step (of every env, the finished ones' too): qpos[:1], sin,
    # cos, clipped qvel (each within the state's error) and qfrc_constraint[:1], 0 on both sides
    # (no slider limit)
    assert out.final_obs.shape == mj_obs.shape == (STATES, 3 * n + 3)
    assert relative_error(out.final_obs, mj_obs).max() < bound
    assert not mj_obs[:, -1].any() and not out.final_obs[:, -1].any()
    # the reward: 10 − 0.01 x² − (y − target)² − ..., x and y the tip's at MuJoCo's last RK4 stage,
    # within the state's error times n L: the same relative bound holds on max(|r|, 1)
    assert relative_error(out.reward, mj_reward).max() < bound


def test_check_env_passes():
    for n in (1, 2, 5):
        env = ChainMujocoEnv(links=n)
        with warnings.catch_warnings():
            # v5's own observation space is Box(-inf, inf): check_env warns about it, as it does on v5
            warnings.filterwarnings("ignore", message=".*Box observation space m.*infinity.*")
            check_env(env)
        assert env.observation_space.shape == (3 * n + 3,) and env.action_space.shape == (1,)
        assert env.dt == pytest.approx(0.05) and env.metadata["render_fps"] == 20
        env.close()


@pytest.mark.parametrize("n", [1, 8, 16, 32])
def test_timestep_and_frame_skip_are_the_rules(n):
    p, env = ChainParams(links=n), ChainMujocoEnv(links=n)
    assert (env.model.opt.timestep, env.frame_skip) == (p.timestep, p.frame_skip)
    assert env.model.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4 and env.model.nq == n + 1


def v5_off_limit_inputs(count: int, seed: int = 3):
    """(qpos, qvel, ctrl) of ``count`` transitions of the two-link chain that keep the cart off v5's
    slider limit: x in ±0.3, the hinges in ±0.6, qvel in ±1, controls in ±1."""
    rng = np.random.default_rng(seed)
    qpos = np.stack((rng.uniform(-0.3, 0.3, count), rng.uniform(-0.6, 0.6, count), rng.uniform(-0.6, 0.6, count)), 1)
    return qpos, rng.uniform(-1, 1, (count, 3)), rng.uniform(-1, 1, count)


def test_at_two_links_the_step_is_gymnasiums_inverted_double_pendulum_v5():
    """gymnasium's own InvertedDoublePendulum-v5 (its file, its slider limit in) and ChainMujocoEnv(2)
    from the same states, the cart kept off the limit (|x| < 0.3 and its next |x| < 0.99, so v5's
    constraint stays inactive and its qfrc_constraint 0): the same model but for that limit, the
    same mj_step, hence the same numbers to the last bit, and the same reward and termination."""
    v5 = gymnasium.make("InvertedDoublePendulum-v5").unwrapped
    ours = ChainMujocoEnv(links=2)
    v5.reset(seed=1), ours.reset(seed=1)
    count = 300
    qpos, qvel, ctrl = v5_off_limit_inputs(count)
    terminated = 0
    for i in range(count):
        results = []
        for env in (v5, ours):
            env.set_state(qpos[i], qvel[i])
            results.append((*env.step(ctrl[i:i + 1]), env.state_vector()))
        (o1, r1, t1, tr1, info1, s1), (o2, r2, t2, tr2, info2, s2) = results
        assert abs(s1[0]) < 0.99 and o1[-1] == 0
        np.testing.assert_allclose(s2, s1, rtol=1e-12, atol=1e-12)  # measured: equal
        np.testing.assert_allclose(o2, o1, rtol=1e-12, atol=1e-12)
        assert (t1, tr1, tr2) == (t2, False, False) and r2 == pytest.approx(r1, rel=1e-12, abs=1e-12)
        assert info1.keys() == info2.keys()
        terminated += t1
    assert 0 < terminated < count
    # reset: v5's draws from the same seed
    np.testing.assert_array_equal(v5.reset(seed=7)[0], ours.reset(seed=7)[0])
    v5.close(), ours.close()


@pytest.mark.parametrize("n", [8, 16, 32])
def test_the_timestep_rule_keeps_mujoco_stable_for_1000_steps(n):
    """From v5's reset distribution, uniform random controls, 1000 environment steps (the episode
    length, termination ignored: the chain falls and swings, the stiffest motion it meets) of
    2 episodes: MuJoCo raises no bad-acceleration warning (mjWARN_BADQACC, which it raises when
    qacc is not finite or exceeds 1e10 and answers by resetting the state) and the state stays
    finite. Without the rule (0.01 s at every n), n = 16 warned in 9 of 10 such episodes
    (model.TIMESTEP_RULE's note)."""
    env = ChainMujocoEnv(links=n)
    rng = np.random.default_rng(n)
    for seed in range(2):
        env.reset(seed=seed)
        for _ in range(1000):
            env.step(rng.uniform(-1, 1, 1))
        assert env.data.warning[mujoco.mjtWarning.mjWARN_BADQACC].number == 0
        assert np.isfinite(env.state_vector()).all()
    env.close()
