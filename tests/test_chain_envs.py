"""The chain as an environment in every implementation whose record names it, made through the
records, against the float64 reference episode step (studylib.sims.chain.episode with numpy,
whose physics test_chain.py checks against MuJoCo's mj_step): observations, rewards, flags,
same-step resets and counters; the Gaussian policy; rollouts with episodes; bad actions; and a
chain point measured through the harness like a CartPole one."""

from __future__ import annotations

import numpy as np
import pytest

from studylib import make
from studylib.devices import runs_here
from studylib.envs.base import VectorEnv
from studylib.errors import ConfigError
from studylib.harness.measure import measure
from studylib.implspec import specs
from studylib.policy import gaussian_actions, mlp_weights
from studylib.settings import MeasurePoint, point_key
from studylib.sims.chain import dynamics, episode
from studylib.sims.chain.model import ChainParams
from tests.conftest import default_device

CHAIN_IMPLS = [r.name for r in specs() if r.implements("chain") and runs_here(r.name)]
# torch-compile compiles a graph per (N, n, policy) (15-30 s each on 2 cores): its own test below
STEPPED = [i for i in CHAIN_IMPLS if i != "torch-compile"]
N = 64
# float32 implementations after one environment step (frame_skip RK4 steps) from states near
# upright: observations within float32 rounding grown through ~5-25 mj_steps. Measured here at
# most 3e-6 (n = 1) to 6e-5 (n = 8); the bound leaves a factor of ~15 (gym steps MuJoCo in float64:
# its own rounding, ~1e-12).
OBS_TOL = 1e-3


def relative_error(a, b) -> np.ndarray:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.abs(a - b) / np.maximum(np.abs(b), 1.0)


def _states(rng, p, num=N, spread=0.6):
    """States around upright, wider than v5's reset draws so that some steps terminate."""
    n1 = p.links + 1
    return np.concatenate([rng.uniform(-spread, spread, (num, n1)), rng.normal(0.0, 1.0, (num, n1))], axis=1)


def _reference(states, ctrl, p, seed, episode_before, elapsed_before):
    """The float64 episode step (numpy) from ``states`` with the counters given."""
    env = np.arange(len(states), dtype=np.uint32)
    fresh = episode.reset_states(seed, env, (episode_before + 1).astype(np.uint32), p).astype(np.float64)
    return episode.advance(states, elapsed_before, episode_before, ctrl, fresh, p)


def test_every_implementation_names_the_chain_in_its_record():
    assert {"gym", "cpp", "torch", "jax", "torch-compile"} <= {r.name for r in specs() if r.implements("chain")}
    for impl in CHAIN_IMPLS:
        env = make(impl, 3, sim="chain", params=ChainParams(links=2))
        assert isinstance(env, VectorEnv) and env.get_state().shape == (3, 6)
        assert env.reset().shape == (3, 9) and env.observation_size == 9


@pytest.mark.parametrize("impl", STEPPED)
@pytest.mark.parametrize("n", (1, 2, 4))
def test_one_step_is_the_references(impl, n):
    """From the same states and controls: the observation the step returns (the new episode's
    first where one ended), its reward, flags and the final observation, against numpy float64."""
    p = ChainParams(links=n)
    rng = np.random.default_rng(n)
    states = _states(rng, p)
    ctrl = rng.uniform(-1, 1, N).astype(np.float32)
    env = make(impl, N, sim="chain", params=p, seed=3)
    env.reset()
    env.set_state(states)
    obs, reward, terminated, truncated = env.step(ctrl)
    zeros = np.zeros(N, np.int64)
    ref = _reference(states, ctrl.astype(np.float64), p, 3, zeros, zeros)
    agree = terminated == ref.terminated
    assert agree.mean() >= 0.95, "terminations differ beyond the threshold's float32 rounding"
    assert ref.terminated.any() and not ref.terminated.all()  # the states cover both outcomes
    assert not truncated.any()
    assert relative_error(env.final_obs()[agree], ref.final_obs[agree]).max() < OBS_TOL
    assert relative_error(reward[agree], ref.reward[agree]).max() < OBS_TOL
    assert relative_error(obs[agree], ref.observation[agree]).max() < OBS_TOL  # the resets: hashed draws
    assert reward.dtype == np.float32 and obs.dtype == np.float32 and terminated.dtype == bool


# float32 against float64 after one environment step grows with n (frame_skip 5, 10 and 25 mj_steps;
# pivots of an n + 1 Cholesky): measured here up to 6e-5 at n = 8, 2e-4 at 16 and 1.5e-3 at 32
TOL_BY_N = {1: 1e-3, 2: 1e-3, 4: 1e-3, 8: 1e-3, 16: 3e-3, 32: 1e-2}


@pytest.mark.parametrize("n", sorted(TOL_BY_N))
def test_a_thousand_states_step_as_the_reference_at_every_n(n):
    """Every implementation's environment step from 1000 random states per n against the float64
    reference (whose physics test_chain.py and test_chain_conformance.py check against MuJoCo's
    mj_step and gymnasium's MujocoEnv): observations, rewards, terminations."""
    p = ChainParams(links=n)
    rng = np.random.default_rng(100 + n)
    num = 1000
    states = _states(rng, p, num)
    ctrl = rng.uniform(-1, 1, num).astype(np.float32)
    zeros = np.zeros(num, np.int64)
    ref = _reference(states, ctrl.astype(np.float64), p, 0, zeros, zeros)
    impls = [i for i in STEPPED if i != "gym" or n == 2]  # gym: MuJoCo's own step, ~5 ms an env to make (every n: test_chain_conformance)
    for impl in impls:
        env = make(impl, num, sim="chain", params=p)
        env.set_state(states)
        _, reward, terminated, _ = env.step(ctrl)
        agree = terminated == ref.terminated
        assert agree.mean() >= 0.99, (impl, agree.mean())
        assert relative_error(env.final_obs(), ref.final_obs).max() < TOL_BY_N[n], impl
        assert relative_error(reward[agree], ref.reward[agree]).max() < TOL_BY_N[n], impl


@pytest.mark.parametrize("impl", STEPPED)
def test_truncation_after_v5s_1000_steps_and_episode_counting(impl):
    """An episode that lasts is truncated at step 1000 (here a time limit of 3, the same rule)."""
    from dataclasses import replace

    p = replace(ChainParams(links=1), max_episode_steps=3)
    env = make(impl, 4, sim="chain", params=p)
    env.reset()
    flags = []
    for _ in range(3):
        env.set_state(np.zeros((4, 4)))  # upright at rest, no control: stays up
        flags.append(env.step(np.zeros(4, np.float32))[3])
    assert [f.all() for f in flags] == [False, False, True]


@pytest.mark.parametrize("impl", STEPPED)
@pytest.mark.parametrize("policy", ("mlp", "none"))
def test_rollouts_finish_episodes(impl, policy):
    env = make(impl, 16, sim="chain", params=ChainParams(links=2))
    result = env.rollout(30, policy=policy)
    assert result.samples == 16 * 30 and 0 < result.episodes_finished < 16 * 30


def test_torch_compile_steps_as_torch():
    """torch-compile's compiled step is torch's: from the same states, two steps of the MLP policy
    (the graph compiles the chain's dynamics, the episode step and the policy) end in the same
    states (to float32 rounding of inductor's fused kernels) with the same episodes. At n = 1: its
    graphs are inductor's largest of the suite (15-25 s each on 2 cores, half as much again at
    n = 2), so one is compiled here, the policy's; the step with given actions goes through the same
    compiled-call path as CartPole's (test_conformance), and the lines traced are torch's at every
    n, which the thousand-state test above checks at the six n."""
    if "torch-compile" not in CHAIN_IMPLS:
        pytest.skip("torch-compile does not run here")
    p = ChainParams(links=1)
    states = _states(np.random.default_rng(7), p)
    out = {}
    for impl in ("torch", "torch-compile"):
        env = make(impl, N, sim="chain", params=p, seed=2)
        env.set_state(states)
        episodes = env.rollout(2, "mlp").episodes_finished
        out[impl] = episodes, env.get_state(), env.final_obs()
    (e1, s1, f1), (e2, s2, f2) = out["torch"], out["torch-compile"]
    assert e1 == e2 > 0  # some of the wide states end an episode: the resets are compared too
    assert relative_error(s2, s1).max() < 1e-4 and relative_error(f2, f1).max() < 1e-4


def test_the_array_implementations_count_the_same_episodes():
    """torch, torch-compile and jax run the same float32 lines: the same rollouts to rounding."""
    counts = {impl: make(impl, 32, sim="chain", params=ChainParams(links=2), seed=4).rollout(20, "mlp")
              for impl in ("torch", "jax") if impl in CHAIN_IMPLS}
    assert len(set(counts.values())) == 1, counts


def test_the_gaussian_policy_in_torch_and_jax_is_numpys():
    import jax.numpy as jnp
    import torch

    p = ChainParams(links=3)
    weights = mlp_weights(0, (p.observation_size, 64, 64, 1))
    obs = dynamics.observation(_states(np.random.default_rng(0), p), p).astype(np.float32)
    noise = episode.policy_noise(0, np.arange(N, dtype=np.uint32), np.zeros(N, np.uint32), np.arange(N, dtype=np.uint32))
    layers64 = [(w.astype(np.float64), b.astype(np.float64)) for w, b in weights.layers()]
    ref = gaussian_actions(layers64, obs.astype(np.float64), noise.astype(np.float64))
    t = gaussian_actions([(torch.from_numpy(w), torch.from_numpy(b)) for w, b in weights.layers()],
                         torch.from_numpy(obs), torch.from_numpy(noise), xp=torch).numpy()
    j = np.asarray(gaussian_actions(list(weights.layers()), jnp.asarray(obs), jnp.asarray(noise), xp=jnp))
    assert np.abs(t - ref).max() < 1e-5 and np.abs(j - ref).max() < 1e-5
    assert (ref == 1).any() and (np.abs(ref) < 1).any() and ref.min() >= -1  # clipped to Box(-1, 1)


def test_the_hashed_draws_agree_in_every_array_module():
    import jax.numpy as jnp
    import torch

    from studylib.episodes import MASK32

    p = ChainParams(links=5)
    env, ep = np.arange(100, dtype=np.uint32), np.arange(100, dtype=np.uint32) % 7
    a = episode.reset_states(11, env, ep, p)
    b = episode.reset_states(11, torch.from_numpy(env.astype(np.int64)), torch.from_numpy(ep.astype(np.int64)),
                             p, torch, lambda x: x & MASK32).numpy()
    c = np.asarray(episode.reset_states(11, jnp.asarray(env), jnp.asarray(ep), p, jnp))
    assert np.abs(a - b).max() < 1e-6 and np.abs(a - c).max() < 1e-6
    n1 = p.links + 1
    assert np.abs(a[:, :n1]).max() <= episode.RESET_NOISE  # v5: qpos + U(±0.1)
    big = episode.reset_states(0, np.arange(20000, dtype=np.uint32), np.zeros(20000, np.uint32), p)
    assert abs(big[:, n1:].std() - episode.RESET_NOISE) < 0.005 and abs(big[:, n1:].mean()) < 0.005


@pytest.mark.parametrize("impl", STEPPED)
def test_bad_actions_are_refused_and_nothing_steps(impl):
    env = make(impl, 4, sim="chain", params=ChainParams(links=1))
    env.reset()
    before = env.get_state()
    for bad, match in ((np.array([0.0, np.inf, 0.0, 0.0]), "finite"), (np.full(4, np.nan), "finite"),
                       (np.zeros(3), r"shape \(4,\)"), (np.array(["a"] * 4), "dtype")):
        with pytest.raises(ConfigError, match=match):
            env.step(bad)
    np.testing.assert_array_equal(env.get_state(), before)


@pytest.mark.parametrize("impl", STEPPED)
def test_controls_beyond_one_step_as_the_bound(impl):
    """A control outside [-1, 1] is taken and acts as ±1, the motor's ctrlrange (MuJoCo clamps it so
    in gymnasium's v5): the same step as the clamped control, from the same states."""
    p = ChainParams(links=2)
    states = _states(np.random.default_rng(7), p)[:4]
    wild = np.array([2.0, -7.5, 1.0, 1e6], np.float32)
    out = []
    for ctrl in (wild, np.clip(wild, -1, 1)):
        env = make(impl, 4, sim="chain", params=p, seed=3)
        env.reset()
        env.set_state(states)
        out.append((*env.step(ctrl), env.get_state()))
    for ours, clamped in zip(*out):
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(clamped))


def test_links_outside_one_to_32_are_refused():
    for links in (0, -1, 33, 10**6, 2.0, True):
        with pytest.raises(ConfigError, match="from 1 to 32"):
            ChainParams(links=links)


def test_the_timestep_rule_keeps_an_environment_step_at_v5s_005_s():
    for n, (h, fs) in ((1, (0.01, 5)), (8, (0.01, 5)), (9, (0.005, 10)), (16, (0.005, 10)), (17, (0.002, 25)),
                       (32, (0.002, 25))):
        p = ChainParams(links=n)
        assert (p.timestep, p.frame_skip) == (h, fs) and abs(p.timestep * p.frame_skip - 0.05) < 1e-12
    assert ChainParams(links=2).with_links(16).timestep == 0.005


def test_a_chain_point_is_measured_and_keyed_by_its_links():
    a = MeasurePoint.of("torch", 16, 2, sim="chain", policy="mlp", params=ChainParams(links=3), repeats=2,
                        min_seconds=0.01)
    b = MeasurePoint.of("torch", 16, 2, sim="chain", policy="mlp", params=ChainParams(links=4), repeats=2,
                        min_seconds=0.01)
    assert point_key(a.flat()) != point_key(b.flat()) and a.flat()["links"] == 3
    assert a.flat()["episode_rules"] == "v5"  # rows of the physics alone (no such column) never stand for these
    assert a.describe().startswith("chain links=3 episode_rules=v5 torch N=16")
    row = measure(a)
    # the device it ran on: a GPU where torch sees one (a GPU run of this test once expected "cpu")
    assert (row["sim"], row["links"], row["impl"], row["device"]) == ("chain", 3, "torch", default_device("torch"))
    assert row["samples_per_s"] > 0 and row["episodes_finished"] > 0
    assert point_key(row) == point_key(a.flat())
    with pytest.raises(ConfigError, match=r"takes no state_factor \(it has neither S nor C\)$"):
        MeasurePoint.of("torch", 8, 1, sim="chain", policy="none", state_factor=2)
