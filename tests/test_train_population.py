"""Many seeds in one program: a seed's run does not depend on the seeds beside it.

Seed 3 alone and as one member of a population of 16, for the batched PyTorch PPO
(studylib.train.cartpole.population_torch) and the vmapped JAX PPO (studylib.train.cartpole.ppo_jax): the same first
rollout and the same first update, to float tolerance. Also: a block of a population env draws
its seed's streams, gradient clipping is per seed, collectors are chosen by their records.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from studylib.train import PPOSettings, TrainRun
from studylib.train.cartpole.collectors import make_collector
from studylib.train.cartpole.ppo_torch import TorchPPO

SMALL = PPOSettings(num_envs=8, num_steps=8, num_minibatches=2, update_epochs=1)
NEIGHBOURS = [3, *range(100, 115)]  # seed 3 at index 0 of 16 (and 3 is not 0: its index is not its seed)


def _first_update(collector_name: str, seeds, n=8):
    from studylib.train.cartpole.population_torch import PopulationCollector, PopulationPPO

    collector = PopulationCollector(collector_name, n, seeds)
    learner = PopulationPPO(SMALL, seeds, n)
    traj = collector.collect(learner.model, SMALL.num_steps)
    learner.update(traj.steps)
    return traj, learner


@pytest.mark.parametrize("name", ["torch", "gym"])
def test_torch_population_seed_does_not_depend_on_its_neighbours(name):
    """Seed 3's first rollout (observations, actions, log-probabilities, flags, episode returns)
    and its weights after the first update: alone (a population of 1) and as member 0 of 16."""
    alone, alone_learner = _first_update(name, [3])
    among, among_learner = _first_update(name, NEIGHBOURS)
    block = slice(0, 8)  # seed 3's environments in the population of 16
    for field in ("obs", "actions", "logp", "rewards", "terminated", "truncated", "final_obs"):
        a, b = getattr(alone.steps, field), getattr(among.steps, field)[:, block]
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6, msg=field)
    np.testing.assert_allclose(alone.episode_returns[0], among.episode_returns[0])
    for p, q in zip(alone_learner.model.parameters(), among_learner.model.parameters()):
        torch.testing.assert_close(p[0], q[0], rtol=1e-5, atol=1e-6)
    assert not torch.allclose(among_learner.model.actor[0][0][0], among_learner.model.actor[0][0][1])  # seeds differ
    assert not torch.allclose(among.steps.obs[:, :8], among.steps.obs[:, 8:16])  # so do their environments


def test_torch_compile_population_draws_each_blocks_resets_from_its_seed():
    """torch-compile's compiled step takes its reset uniforms as an argument: block k's are those
    a single env of seed k draws (checked without compiling: the draws only)."""
    from studylib.settings import EnvSettings
    from studylib.envs.torch_compile_env import TorchCompileCartPole
    from studylib.train.cartpole.population_collectors import population_env

    pop = population_env("torch-compile", 8, [3, 7])
    pop.reset()
    u = pop._uniforms(2)
    for k, seed in enumerate((3, 7)):
        single = TorchCompileCartPole(EnvSettings("torch-compile", 8, seed=seed, device="cpu"))
        single.reset()
        torch.testing.assert_close(u[:, 8 * k:8 * (k + 1)], single._uniforms(2), rtol=0, atol=0)
        np.testing.assert_array_equal(pop.get_state()[8 * k:8 * (k + 1)], single.get_state())


def test_torch_population_block_is_the_single_run_of_its_seed():
    """Block 0 of a population [3, 100, ...] starts as the single-run PyTorch PPO of seed 3 (the
    ``torch`` collector, ``TorchPPO``): the same networks, the same first rollout."""
    from studylib.train.cartpole.population_torch import PopulationCollector, PopulationPPO

    single = make_collector("torch", 8, seed=3, device="cpu")
    learner = TorchPPO(SMALL, seed=3)
    pop_learner = PopulationPPO(SMALL, NEIGHBOURS, 8)
    for (w, b), (pw, pb) in zip([(m.weight.T, m.bias) for m in learner.model.actor if isinstance(m, torch.nn.Linear)],
                                pop_learner.model.actor):
        torch.testing.assert_close(w, pw[0].detach())
        torch.testing.assert_close(b, pb[0].detach())
    traj = single.collect(learner.model, 8)
    pop = PopulationCollector("torch", 8, NEIGHBOURS).collect(pop_learner.model, 8)
    torch.testing.assert_close(traj.obs, pop.steps.obs[:, :8], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(traj.actions, pop.steps.actions[:, :8])


def test_a_finished_seed_leaves_the_population_without_changing_the_others():
    """Population [100, 3, 101]: after one update seeds 100 and 101 leave (model, Adam, sampling);
    seed 3's second rollout and update are those of seed 3 alone."""
    from studylib.train.cartpole.population_torch import PopulationCollector, PopulationPPO

    def run(seeds, leave_after_first):
        collector, learner = PopulationCollector("torch", 8, seeds), PopulationPPO(SMALL, seeds, 8)
        for step in range(2):
            traj = collector.collect(learner.model, SMALL.num_steps)
            learner.update(traj.blocks(collector.active))
            if step == 0 and leave_after_first:
                learner.keep([1])
                collector.active = [1]
        return traj, learner

    alone, alone_learner = run([3], False)
    among, among_learner = run([100, 3, 101], True)
    torch.testing.assert_close(alone.steps.obs, among.steps.obs[:, 8:16], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(alone.steps.actions, among.steps.actions[:, 8:16])
    assert (among.steps.actions[:, :8] == 0).all()  # a finished block steps on, unused
    assert among_learner.size == 1
    for p, q in zip(alone_learner.model.parameters(), among_learner.model.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


def test_gradient_clipping_is_per_seed():
    """Each seed's gradient is clipped by its own norm, as clip_grad_norm_ does for a single run
    (a global norm over the population would shrink a small seed's gradient because of a big one)."""
    from studylib.train.cartpole.population_torch import clip_grad_norm_per_seed

    g = torch.Generator().manual_seed(0)
    params = [torch.zeros(3, 4, 5, requires_grad=True), torch.zeros(3, 5, requires_grad=True)]
    for p, scale in zip(params, (1.0, 2.0)):
        p.grad = torch.randn(p.shape, generator=g) * scale * torch.tensor([0.01, 1.0, 10.0]).view(3, *[1] * (p.dim() - 1))
    expected = []
    for k in range(3):
        single = [torch.zeros(p.shape[1:], requires_grad=True) for p in params]
        for s, p in zip(single, params):
            s.grad = p.grad[k].clone()
        torch.nn.utils.clip_grad_norm_(single, 0.5)
        expected.append([s.grad for s in single])
    clip_grad_norm_per_seed(params, 0.5)
    for k in range(3):
        for p, e in zip(params, expected[k]):
            torch.testing.assert_close(p.grad[k], e)
    assert torch.linalg.vector_norm(torch.cat([p.grad[0].flatten() for p in params])) < 0.5  # seed 0 left as it was


def test_population_env_without_per_seed_streams_is_refused():
    from studylib.errors import ConfigError
    from studylib.train.cartpole.population_collectors import population_env

    from studylib.train import has_population

    with pytest.raises(ConfigError, match="no population"):
        population_env("cpp", 8, [0, 1])
    assert [c for c in ("jax", "torch", "torch-compile", "gym", "cpp", "fused") if has_population(c)] == \
        ["jax", "torch", "torch-compile", "gym"]


def test_torch_population_trains_and_reports_each_seed_once():
    """Two seeds, a small budget: one result per seed through on_result, in the population's terms."""
    from studylib.train.cartpole.population_torch import train_population
    from studylib.train.results import TORCH_POPULATION_TRAINER

    runs = [TrainRun("torch", 8, seed=k, settings=SMALL.replace(eval_every_samples=64, eval_episodes=4), max_seconds=0.5)
            for k in (5, 2)]
    seen = []
    results = train_population(runs, on_result=seen.append)
    assert [r.seed for r in results] == [5, 2] and sorted(r.seed for r in seen) == [2, 5]
    for r in results:
        assert r.trainer == TORCH_POPULATION_TRAINER and r.population == 2 and r.updates >= 1
        assert r.samples == r.updates * 8 * SMALL.num_steps and r.curve
        assert r.stopped in ("solved", "max_seconds")


def test_jax_population_seed_alone_and_among_sixteen():
    """Seed 3 alone (the single run's program, not vmapped: what ``ppo_jax.train`` runs) and as
    member 0 of a vmapped population of 16 (initialized as ``train_population`` does, seed by seed:
    ``population_init``): the same init, first rollout and first update, to float tolerance."""
    import jax

    from studylib.train.cartpole.ppo_jax import make_program, population_init, population_keys

    init, update, _ = make_program(SMALL, 8)
    a, a_totals = jax.jit(lambda key: update(init(key)))(jax.random.key(3))  # init, first rollout, first update
    b, b_totals = jax.jit(jax.vmap(update))(population_init(init)(population_keys(NEIGHBOURS)))  # as train_population
    member = lambda tree, i: jax.tree.map(lambda x: x[i], tree)  # noqa: E731
    close = lambda x, y: jax.tree.map(lambda u, v: np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-6), x, y)  # noqa: E731
    close((a.obs, a.episode_return, a_totals, a.params), member((b.obs, b.episode_return, b_totals, b.params), 0))
    assert not np.allclose(np.asarray(b.params["actor"][0][0][0]), np.asarray(b.params["actor"][0][0][1]))


def test_collectors_are_chosen_by_their_records_not_their_names():
    """make_collector and train read the collector's record (studylib.implspec, or train's own
    record for the two collectors that are not an implementation as it ships)."""
    from studylib.errors import ConfigError
    from studylib.implspec import spec
    from studylib.train import COLLECTORS, collector_spec
    from studylib.train.cartpole.collectors import FusedCollector, StepCollector

    for name in COLLECTORS:
        record = collector_spec(name)
        assert record.devices == spec(record.impl).devices
        if record.trainer == "torch-ppo" and name not in ("fused-step",):
            assert record.samples_in_kernel == spec(name).samples_in_kernel
    assert collector_spec("cuda").gpu_only and not collector_spec("cpp").gpu_only
    stepped = make_collector("fused-step", 4, seed=0, device="cpu")
    assert isinstance(stepped, StepCollector) and stepped.name == "fused-step" and stepped.env.name == "fused"
    assert isinstance(make_collector("fused", 4, seed=0, device="cpu"), FusedCollector)
    with pytest.raises(ConfigError, match="jax-ppo"):
        make_collector("jax", 4, seed=0)
    with pytest.raises(ConfigError, match="unknown collector"):
        collector_spec("sb3")


def test_batched_greedy_checks_are_each_actors_own_check():
    """A population's greedy checks in one batched call (an actor dropped once all its episodes
    ended) give each actor the mean return its own check gives."""
    from studylib.train.evaluate import greedy_check, greedy_checks

    def actor(gain):  # action 1 when theta + theta_dot > 0 (gain > 0): balances for a while; 0: always left
        a = {"W1": np.zeros((4, 64)), "b1": np.zeros(64), "W2": np.zeros((64, 64)), "b2": np.zeros(64),
             "W3": np.zeros((64, 2)), "b3": np.zeros(2)}
        a["W1"][2:, 0], a["W2"][0, 0], a["W3"][0] = gain, 1.0, (-1.0, 1.0)
        return a

    actors, seeds = [actor(1.0), actor(0.0), actor(3.0)], [4, 5, 6]
    batched = greedy_checks(actors, 20, seeds)
    alone = [greedy_check(a, 20, s) for a, s in zip(actors, seeds)]
    np.testing.assert_array_equal(batched, alone)
    assert alone[1] < 20 < alone[0]  # the always-left actor falls at once, the other lasts
