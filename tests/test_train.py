"""PPO training (studylib.train): it learns, the saved actor works on gymnasium's CartPole, runs are
deterministic per seed, the JSON contract holds, bad input is one line and exit 2, results resume.

Budgets are small (a few seconds per run on 2 cores); the time-to-solve comparisons are the
book's (book/training.md), never asserted here.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from studylib.errors import ConfigError
from studylib.train import PPOSettings, TrainRun, cli, train
from studylib.train.cartpole.collectors import FusedCollector, StepCollector, Trajectory, make_collector
from studylib.train.cartpole.ppo_torch import TorchPPO

RANDOM_GREEDY = 30  # an untrained actor's greedy return is ~10; random actions average ~22
SHORT = PPOSettings(num_envs=16, eval_every_samples=512, max_samples=4096)  # 16 updates, a check every 2


def _independent_gymnasium_return(path, episodes=20, seed=123):
    """The saved arrays, read with numpy only, on gymnasium's own CartPole-v1 (not studylib code)."""
    import gymnasium

    with np.load(path) as f:
        w = {k: f[k] for k in f.files}
    assert {k: w[k].shape for k in w} == {"W1": (4, 64), "b1": (64,), "W2": (64, 64), "b2": (64,), "W3": (64, 2), "b3": (2,)}
    env = gymnasium.make("CartPole-v1")
    total = 0.0
    for i in range(episodes):
        obs, _ = env.reset(seed=seed + i)
        done = False
        while not done:
            logits = np.tanh(np.tanh(obs @ w["W1"] + w["b1"]) @ w["W2"] + w["b2"]) @ w["W3"] + w["b3"]
            obs, r, term, trunc, _ = env.step(int(np.argmax(logits)))
            total += r
            done = term or trunc
    return total / episodes


@pytest.mark.parametrize("collector", ["cpp", "fused"])
def test_short_training_learns(collector):
    # A sample budget, not a time budget: what is learned does not depend on the machine's load.
    r = train(TrainRun(collector, 32, seed=0, settings=PPOSettings(max_samples=49152), max_seconds=60))
    greedy = [p[3] for p in r.curve]
    assert greedy, "no greedy check ran within the budget"
    assert max(greedy) > 5 * RANDOM_GREEDY and r.eval_return > 3 * RANDOM_GREEDY, (greedy, r.eval_return)
    assert r.samples > 0 and r.updates > 0 and r.wall_s > 0


def test_cli_json_contract_and_saved_actor(tmp_path, capsys):
    path = tmp_path / "policy.npz"
    rc = cli.main(["--collector", "torch", "--num-envs", "32", "--seed", "1", "--json", "--save", str(path),
                   "--max-seconds", "20"])
    assert rc == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    d = json.loads(line)
    for key, kind in [("collector", str), ("num_envs", int), ("seed", int), ("solved", bool), ("wall_s", float),
                      ("compile_s", float), ("samples", int), ("updates", int), ("eval_return", float), ("provenance", dict)]:
        assert isinstance(d[key], kind), (key, d[key])
    assert (d["collector"], d["num_envs"], d["seed"]) == ("torch", 32, 1)
    assert {"commit", "cpu_model", "packages", "machine_key"} <= set(d["provenance"])
    assert d["solved"] == (d["solved_in_training"] and d["eval_return"] >= 475)
    ours = _independent_gymnasium_return(path)
    assert ours > 3 * RANDOM_GREEDY, ours
    if d["eval_return"] >= 475:  # a solved actor is solved on gymnasium whoever evaluates it
        assert ours >= 400


@pytest.mark.parametrize("collector", ["fused", "jax"])
def test_same_seed_same_learning_curve(collector):
    runs = [train(TrainRun(collector, seed=seed, settings=SHORT)) for seed in (3, 3, 4)]
    curve = lambda r: [(p[1], p[2], p[3]) for p in r.curve]  # noqa: E731 (samples, updates, greedy)
    assert len(runs[0].curve) >= 4
    assert curve(runs[0]) == curve(runs[1])
    assert all(np.array_equal(runs[0].actor[k], runs[1].actor[k]) for k in runs[0].actor)
    assert not all(np.array_equal(runs[0].actor[k], runs[2].actor[k]) for k in runs[0].actor)


@pytest.mark.parametrize("ended_at_s, stopped", [(5.0, "max_samples"), (61.0, "max_seconds")])
def test_a_trainer_that_ends_on_its_own_stopped_at_its_sample_budget(ended_at_s, stopped):
    """A peer whose own loop ends (Stable-Baselines3 at its total_timesteps) before any budget check
    stopped it: its sample budget, unless its time budget had run out too."""
    from studylib.train.progress import Clock

    now = [0.0]
    clock = Clock(TrainRun("cpp", 8, seed=0, max_seconds=60.0), num_envs=8, batch_size=64, now=lambda: now[0])
    clock.final_return = lambda actor: 0.0  # the judge is not what this checks
    clock.start(compile_s=0.0, device="cpu")
    clock.add_update(64, bootstraps_truncation=False)
    now[0] = ended_at_s
    assert clock.finish({}, trainer="peer").stopped == stopped


def test_max_seconds_reached_is_a_result_not_an_error(capsys):
    rc = cli.main(["--collector", "cpp", "--num-envs", "16", "--json", "--max-seconds", "0.05"])
    d = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert rc == 0 and d["solved"] is False and d["stopped"] == "max_seconds"


@pytest.mark.parametrize("argv, message", [
    (["--collector", "nope"], "unknown collector 'nope'"),
    (["--collector", "cpp", "--num-envs", "0"], "num_envs must be a positive integer"),
    (["--collector", "cpp", "--num-envs", "-3"], "num_envs must be a positive integer"),
    (["--collector", "cpp", "--max-seconds", "0"], "max_seconds must be"),
    (["--collector", "cpp", "--num-envs", "four"], "invalid int value"),
])
def test_bad_input_one_line_exit_2(argv, message, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err


def test_gpu_collector_without_gpu(capsys):
    from studylib.devices import cuda_status

    if cuda_status()[0]:
        pytest.skip("this machine has a GPU")
    assert cli.main(["--collector", "cuda"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no CUDA device" in err


def test_unwritable_save_path_writes_nothing(tmp_path, capsys):
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    for target in (tmp_path / "missing" / "p.npz", tmp_path / "p.txt", tmp_path, a_file / "p.npz"):
        assert cli.main(["--collector", "cpp", "--save", str(target), "--max-seconds", "0.05"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4 and all(line.startswith("error: ") for line in err), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]  # nothing trained, nothing written


def test_settings_are_checked_where_made():
    with pytest.raises(ConfigError):
        PPOSettings(num_steps=0)
    with pytest.raises(ConfigError):
        PPOSettings(gamma=1.5)
    with pytest.raises(ConfigError):
        TrainRun("cpp", seed=-1)
    with pytest.raises(ConfigError):
        TrainRun("gym", 2.5)
    s = PPOSettings()
    with pytest.raises(Exception):
        s.num_steps = 3  # frozen


def _gae_reference(rewards, values, next_values, ends_return, episode_ends, gamma, lam):
    t_, n = rewards.shape
    adv = np.zeros((t_, n))
    last = np.zeros(n)
    for t in reversed(range(t_)):
        delta = rewards[t] + gamma * next_values[t] * (1 - ends_return[t]) - values[t]
        last = delta + gamma * lam * (1 - episode_ends[t]) * last
        adv[t] = last
    return adv


@pytest.mark.parametrize("with_final_obs", [True, False])
def test_gae_bootstraps_truncation_only_with_final_obs(with_final_obs):
    torch.manual_seed(0)
    t_, n = 5, 3
    learner = TorchPPO(PPOSettings(gamma=0.9, gae_lambda=0.8), seed=0)
    obs, next_obs, final_obs = torch.randn(t_, n, 4), torch.randn(n, 4), torch.randn(t_, n, 4)
    term = torch.zeros(t_, n, dtype=torch.bool)
    trunc = torch.zeros(t_, n, dtype=torch.bool)
    term[1, 0] = True
    trunc[2, 1] = True
    traj = Trajectory(obs, torch.zeros(t_, n, dtype=torch.int64), torch.zeros(t_, n), torch.ones(t_, n), term, trunc,
                      next_obs=next_obs, final_obs=final_obs if with_final_obs else None)
    adv, returns = learner.advantages(traj)
    with torch.no_grad():
        v = learner.model.value(obs).numpy()
        nv = np.concatenate([v[1:], learner.model.value(next_obs).numpy()[None]])
        if with_final_obs:
            nv[2, 1] = learner.model.value(final_obs[2, 1]).item()
    ends_return = (term | trunc).numpy() if not with_final_obs else term.numpy()
    ref = _gae_reference(np.ones((t_, n)), v, nv, ends_return.astype(float), (term | trunc).numpy().astype(float), 0.9, 0.8)
    np.testing.assert_allclose(adv.numpy(), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(returns.numpy(), ref + v, rtol=1e-5, atol=1e-5)


def test_next_step_collector_marks_reset_steps_invalid():
    from studylib.train.peers import GymnasiumVectorCollector

    c = GymnasiumVectorCollector(4, seed=0)
    c.warm_up()
    learner = TorchPPO(PPOSettings(), seed=0)
    traj = c.collect(learner.model, 200)
    done = (traj.terminated | traj.truncated) & traj.valid
    assert done.any()
    # the step after an episode's end only resets that env (NEXT_STEP): not a transition
    assert torch.equal(~traj.valid[1:], done[:-1])
    assert len(traj.episode_returns) == int(done.sum())


def test_results_resume_without_training(tmp_path, monkeypatch):
    from studylib.train import chapter

    run = TrainRun("cpp", 16, seed=0, max_seconds=0.05)
    row = chapter.run_or_load(run, tmp_path)
    monkeypatch.setattr(chapter, "train", lambda run: pytest.fail("a saved run was trained again"))
    again = chapter.run_or_load(run, tmp_path)
    assert again["wall_s"] == row["wall_s"] and again["samples"] == row["samples"]
    other = TrainRun("cpp", 16, seed=1, max_seconds=0.05)
    with pytest.raises(pytest.fail.Exception):
        chapter.run_or_load(other, tmp_path)


def _model_logp(model, traj):
    with torch.no_grad():
        return torch.distributions.Categorical(logits=model.logits(traj.obs)).log_prob(traj.actions)


def test_fused_collects_in_the_kernel_with_the_models_current_actor():
    """--collector fused: one native call per trajectory; its log-probabilities are the PyTorch
    actor's (the weights reached the kernel), also after an update changed them (no rebuild)."""
    from studylib import native

    collector = make_collector("fused", 32, seed=0, device="cpu")  # compared on the CPU, learner beside it
    assert isinstance(collector, FusedCollector) and collector.name == "fused" and collector.device == "cpu"
    collector.warm_up()
    calls = []
    collector.env.backend.call_hook = lambda name, fn, *args: calls.append(name) or fn(*args)
    learner = TorchPPO(PPOSettings(num_envs=32), seed=0, device=collector.device)
    traj = collector.collect(learner.model, 64)
    assert calls == ["fused_collect"]
    assert traj.obs.shape == (64, 32, 4) and traj.actions.dtype == torch.int64 and traj.final_obs.shape == (64, 32, 4)
    torch.testing.assert_close(traj.logp, _model_logp(learner.model, traj), rtol=0, atol=1e-5)
    builds = native.build_info.cache_info().misses
    before = [p.detach().clone() for p in learner.model.actor.parameters()]
    for _ in range(3):
        learner.update(traj)
    assert any(not torch.equal(a, b) for a, b in zip(before, learner.model.actor.parameters()))
    traj = collector.collect(learner.model, 64)
    torch.testing.assert_close(traj.logp, _model_logp(learner.model, traj), rtol=0, atol=1e-5)
    assert native.build_info.cache_info().misses == builds  # the new weights needed no build
    # the episode returns are the lengths of the episodes that ended (CartPole: reward 1 per step)
    done = traj.terminated | traj.truncated
    assert len(traj.episode_returns) == int(done.sum()) > 0 and np.all(traj.episode_returns >= 1)
    assert torch.equal(traj.rewards, torch.ones(64, 32, device=collector.device))


def test_fused_step_is_the_same_kernel_stepped_with_torch_sampling():
    collector = make_collector("fused-step", 8, seed=0, device="cpu")
    assert isinstance(collector, StepCollector) and collector.name == "fused-step"
    assert collector.env.name == "fused"
    assert TrainRun("fused-step").collector == "fused-step"


def test_fused_collector_episode_returns_match_a_step_by_step_count():
    """The returns come from the recorded flags, counted across calls: the same as counting the
    steps of every episode over the concatenated trajectory."""
    collector = make_collector("fused", 16, seed=4, device="cpu")
    learner = TorchPPO(PPOSettings(num_envs=16), seed=4, device=collector.device)
    trajs = [collector.collect(learner.model, 50) for _ in range(4)]
    done = torch.cat([t.terminated | t.truncated for t in trajs]).cpu().numpy()
    expected, length = [], np.zeros(16)
    for row in done:
        length += 1
        expected.extend(length[row])
        length[row] = 0
    np.testing.assert_array_equal(np.sort(np.concatenate([t.episode_returns for t in trajs])), np.sort(expected))


def test_a_solve_needs_a_second_independent_check():
    from studylib.train.progress import Clock

    clock = Clock(TrainRun("cpp", 16, seed=0), num_envs=16, batch_size=256)
    clock.start(compile_s=0.0, device="cpu")
    assert not clock.record_check(480.0, 300.0) and clock.unconfirmed == 1  # lucky once: not solved
    assert not clock.record_check(200.0, None) and clock.unconfirmed == 1
    assert clock.record_check(490.0, 476.0) and clock.stopped == "solved"
    assert [p[3] for p in clock.curve] == [480.0, 200.0, 490.0]


@pytest.mark.parametrize("name", ["torch", "fused"])  # a stepped collector and the fused one
def test_collector_and_learner_share_one_device(name):
    """A trajectory lives where its collector says, and the learner is put there: nothing is
    compared across devices by accident (the CPU here, on any machine)."""
    collector = make_collector(name, 8, seed=0, device="cpu")
    learner = TorchPPO(PPOSettings(num_envs=8), seed=0, device=collector.device)
    traj = collector.collect(learner.model, 4)
    tensors = [traj.obs, traj.actions, traj.logp, traj.rewards, traj.terminated, traj.truncated, traj.next_obs, traj.final_obs]
    assert {str(t.device) for t in tensors} == {learner.device} == {"cpu"}
    learner.update(traj)


def test_fused_trajectory_and_gae_stay_on_a_fake_accelerator():
    """What a GPU run does, on torch's ``meta`` device (shapes and devices, no data): the fused
    collector's trajectory lands wholly on the collector's device, and the learner's GAE on that
    device runs without meeting a CPU tensor (meta refuses mixed devices as CUDA does)."""
    collector = make_collector("fused", 8, seed=0, device="cpu")
    weights = TorchPPO(PPOSettings(num_envs=8), seed=0).model  # the kernel reads weights on the host
    collector.device = "meta"  # as if the kernel's arrays were on an accelerator
    traj = collector.collect(weights, 4)
    tensors = [traj.obs, traj.actions, traj.logp, traj.rewards, traj.terminated, traj.truncated, traj.next_obs, traj.final_obs]
    assert {t.device.type for t in tensors} == {"meta"}
    learner = TorchPPO(PPOSettings(num_envs=8), seed=0)
    learner.model.to("meta")
    adv, returns = learner.advantages(traj)
    assert adv.device.type == returns.device.type == "meta" and adv.shape == (4, 8)
    with pytest.raises(RuntimeError, match="device"):  # the check has teeth: a CPU learner refuses it
        TorchPPO(PPOSettings(num_envs=8), seed=0).advantages(traj)


def test_an_interrupted_population_resumes_with_the_unfinished_seeds(tmp_path, monkeypatch):
    """Each seed of a population is saved as it finishes; a rerun trains only the others."""
    from studylib.train import chapter
    from studylib.train.cartpole import ppo_jax
    from studylib.train.results import POPULATION_TRAINER

    runs = [TrainRun("jax", 16, seed=k, settings=SHORT, max_seconds=5) for k in range(4)]
    asked = []

    class Done:
        def __init__(self, run):
            self.seed = run.seed
            self.row = {"collector": "jax", "num_envs": 16, "seed": run.seed, "budget_s": 5.0, "trainer": POPULATION_TRAINER,
                        "settings": {**SHORT.as_dict(), "num_envs": 16}, "solved": True, "samples": 512 * (run.seed + 1)}

        def as_dict(self):
            return dict(self.row)

    def population(todo, *, log=None, on_result):
        asked.append([r.seed for r in todo])
        for r in todo[:2]:
            on_result(Done(r))
        if len(todo) == 4:
            raise KeyboardInterrupt  # interrupted after two seeds finished
        for r in todo[2:]:
            on_result(Done(r))

    monkeypatch.setattr(ppo_jax, "train_population", population)
    with pytest.raises(KeyboardInterrupt):
        chapter.population_or_load(runs, tmp_path)
    rows = chapter.population_or_load(runs, tmp_path)
    assert asked == [[0, 1, 2, 3], [2, 3]] and [r["samples"] for r in rows] == [512, 1024, 1536, 2048]
    again = chapter.population_or_load(runs, tmp_path)  # all saved: nothing trained
    assert [r["samples"] for r in again] == [512, 1024, 1536, 2048] and len(asked) == 2
    single = TrainRun("jax", 16, seed=0, settings=SHORT, max_seconds=5)
    monkeypatch.setattr(chapter, "train", lambda run: pytest.fail("trained"))
    with pytest.raises(pytest.fail.Exception):  # a population's row is not a single run's
        chapter.run_or_load(single, tmp_path)
