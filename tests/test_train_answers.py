"""The training chapter's conclusions (studylib.train.answers) on synthetic runs: each number the
page states is computed here once, and each rule can come out either way."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from studylib.train import answers, chapter


def _runs(collector, walls, solved=None, *, samples=None, n=64, trainer="torch-ppo", collect=None, learn=None,
          population=1):
    k = len(walls)
    solved = [True] * k if solved is None else solved
    samples = samples or [10_000 * (i + 1) for i in range(k)]
    collect = collect or [0.3 * w for w in walls]
    learn = learn or [0.6 * w for w in walls]
    return pd.DataFrame({
        "collector": collector, "num_envs": n, "seed": range(k), "wall_s": walls, "solved": solved,
        "samples": samples, "updates": [s // 1024 for s in samples], "compile_s": [2.0] + [0.0] * (k - 1),
        "collect_s": collect, "learn_s": learn, "eval_s": [0.1 * w for w in walls],
        "samples_per_s": 1e4, "updates_per_s": 10.0, "budget_s": 15.0, "eval_return": 500.0,
        "solved_in_training": solved, "unconfirmed_checks": 0, "stopped": "solved", "trainer": trainer,
        "population": population, "bootstraps_truncation": True, "curve": [[] for _ in range(k)]})


def test_population_rates_share_the_clock_and_sum_single_runs():
    solve = _runs("torch", [2.0, 3.0, 4.0, 5.0])
    pop = _runs("torch", [1.0, 2.0, 6.0, 3.0], trainer="torch-ppo-population", population=4)
    rates = answers.population_rates(solve, pop)
    by = {r.how: r for r in rates}
    assert by["population"].wall_s == 6.0  # the population ends with its last seed
    assert by["one at a time"].wall_s == 14.0  # single runs add up
    assert by["population"].seeds_per_minute == pytest.approx(60 * 4 / 6.0)
    assert by["population"].cost_per_seed_s == pytest.approx(1.5)
    assert answers.population_gain(rates, "torch") == pytest.approx((60 * 4 / 6) / (60 * 4 / 14))
    # a population slower than the single runs gives a gain below 1: the rule is not one-sided
    slow = _runs("torch", [20.0] * 4, trainer="torch-ppo-population", population=4)
    assert answers.population_gain(answers.population_rates(solve, slow), "torch") < 1
    assert math.isnan(answers.population_gain(answers.population_rates(solve.iloc[0:0], pop), "torch"))


def test_samples_population_vs_single_detects_a_difference_and_its_absence():
    solve = _runs("jax", [1.0] * 12, samples=[10_000 + 100 * i for i in range(12)], trainer="jax-ppo")
    same = _runs("jax", [1.0] * 12, samples=[10_050 + 100 * i for i in range(12)], trainer="jax-ppo-population")
    worse = _runs("jax", [1.0] * 12, samples=[40_000 + 100 * i for i in range(12)], trainer="jax-ppo-population")
    c_same = answers.samples_population_vs_single(solve, same, "jax")
    c_worse = answers.samples_population_vs_single(solve, worse, "jax")
    assert c_same["ratio_lo"] < 1 < c_same["ratio_hi"]
    assert c_worse["ratio_hi"] < 1  # the population needs more samples: its ratio's interval lies below 1
    assert answers.samples_population_vs_single(solve, worse.iloc[0:0], "jax") is None


def test_sweep_optimum_and_its_ties():
    runs = []
    for n, base in ((8, 4.0), (64, 1.0), (512, 1.05)):
        runs.append(_runs("jax", [base * (1 + 0.08 * i) * 5 for i in range(6)], n=n, population=5))
    W = answers.sweep_table(pd.concat(runs, ignore_index=True))
    assert set(W["measure"]) == {m for m, _ in answers.SWEEP_MEASURES}
    o = answers.sweep_optimum(W)
    assert o.num_envs == 64 and o.iqm == pytest.approx(1.2, rel=0.05)
    assert 512 in o.tied and 8 not in o.tied  # 512 overlaps the best; 8 is four times dearer


def test_sweep_optimum_none_when_no_n_solved():
    W = answers.sweep_table(_runs("jax", [15.0] * 4, solved=[False] * 4, population=4))
    assert answers.sweep_optimum(W) is None


def test_collection_bound_is_amdahls():
    S = pd.DataFrame({"collect_share": [0.5, 0.1], "learn_share": [0.4, 0.8], "collect_ms_per_update": [10.0, 1.0]},
                     index=["gym", "fused"])
    B = answers.collection_bound(S, ["gym", "fused"])
    assert B.bound == pytest.approx(2.0) and B.largest_share_collector == "gym"
    assert B.collect_share == (0.1, 0.5) and B.learn_share == (0.4, 0.8)
    assert answers.torch_collectors(S, ["gym", "fused", "jax"]) == ["fused", "gym"]  # fastest collection first


def _consistent(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs with samples/s as the clock computes it (samples over wall-clock)."""
    return runs.assign(samples_per_s=runs["samples"] / runs["wall_s"])


def test_a_ratio_beyond_amdahls_bound_is_explained_by_its_measured_factors():
    """Time to solve = samples to solve x wall-clock per sample; the bound covers the second only.
    A measured ratio within the bound adds nothing; one beyond it names the factor that carries the
    excess: the samples (same speed per sample within the bound), or the speed per sample."""
    def text(fused_walls, fused_samples, gym_samples, gym_solved=None):
        gym = _consistent(_runs("gym", [10.0] * 6, gym_solved, samples=gym_samples, collect=[5.0] * 6, learn=[4.0] * 6))
        fused = _consistent(_runs("fused", fused_walls, samples=fused_samples,
                                  collect=[0.1 * w for w in fused_walls], learn=[0.8 * w for w in fused_walls]))
        solve = pd.concat([gym, fused], ignore_index=True)
        S = answers.summaries(solve, ["gym", "fused"])
        return answers.bound_sentence(chapter.collection_answer(solve, "gym", "fused")["solve"], S, ["fused", "gym"])

    same = [60_000] * 6
    within = text([6.0] * 6, same, same)  # 1.67x faster at the same samples: within the 2x bound
    assert "at most 2× (Amdahl's bound)." in within and "beyond" not in within
    by_samples = text([2.5] * 6, [20_000] * 6, same)  # 4x: 1.33x per sample, 3x fewer samples
    assert "The time-to-solve ratio measured above, 4.00×, is beyond this bound" in by_samples
    assert "`fused`'s runs solved in 20,000 samples (IQM) and `gym`'s in 60,000 (3.00× as many)" in by_samples
    assert "per sample `fused` ran 1.33× as fast as `gym`" in by_samples and "the rest is in the samples" in by_samples
    by_speed = text([2.5] * 6, same, same)  # 4x at the same samples: faster per sample than the bound allows
    assert "(1.00× as many)" in by_speed and "ran 4.00× as fast" in by_speed and "beyond the bound as well" in by_speed
    assert "is beyond this bound: time to solve" in by_samples  # identical seeds: the whole interval is beyond it
    spread = text([1.5, 2.0, 3.0, 4.5, 8.0, 12.0], [20_000] * 6, same)  # IQM beyond 2x, its interval not wholly
    assert "is beyond this bound as a point estimate only (its 95% interval, " in spread and "reaches below it)" in spread
    censored = text([2.5] * 6, [20_000] * 6, same, gym_solved=[True] * 2 + [False] * 4)  # no finite ratio to explain
    assert censored.endswith("(Amdahl's bound).") and "beyond" not in censored


def test_ranked_comparisons_put_the_fastest_first_and_unsolved_last():
    solve = pd.concat([_runs("gym", [4.0 + 0.1 * i for i in range(8)]), _runs("fused", [1.0 + 0.1 * i for i in range(8)]),
                       _runs("torch", [15.0] * 8, solved=[False] * 8)], ignore_index=True)
    S = answers.summaries(solve, ["gym", "fused", "torch"])
    got = answers.ranked_comparisons(solve, S)
    assert [(b, o) for b, o, _ in got] == [("fused", "gym"), ("fused", "torch")]
    assert got[0][2]["ratio_lo"] > 1  # fused faster than gym, with its interval excluding parity
    assert answers.fastest(S, ["gym", "torch"]) == "gym"


def test_confirmations_count_first_passes_and_gymnasium_rejections():
    solve = _runs("gym", [1.0, 2.0, 3.0])
    solve.loc[0, "unconfirmed_checks"] = 2
    solve.loc[1, "solved"] = False  # confirmed in training, rejected by gymnasium's judge
    K = answers.confirmations(solve, solve.iloc[0:0])
    assert (K.unconfirmed_single, K.first_passes_single, K.rejected_by_gymnasium) == (2, 5, 1)
    assert (K.unconfirmed_population, K.first_passes_population) == (0, 0)
    assert np.isfinite(K.first_passes_single)


def test_the_default_preset_has_the_seeds_its_statistics_need():
    """The book's default training preset: at least 8 single-seed runs per trainer (wall-clock to
    solve), populations of at least 16 seeds (samples to solve, solve rate), at least 5 seeds per N
    of the sweep, and one budget for every trainer."""
    from studylib.harness.presets import preset_values

    d = preset_values("default", "training")
    assert len(d["seeds"]) >= 8 and len(d["population_seeds"]) >= 16 and len(d["sweep_seeds"]) >= 5
    assert d["population_collectors"] and d["peers"]
    assert d["budget_s"] == d["population_budget_s"] == d["sweep_budget_s"]


def test_the_gymnasium_judge_steps_each_episode_on_its_own():
    """The judge steps its episodes in lockstep (the actor batched), each reset seed its own: an
    episode's return does not depend on which others share its batch."""
    from studylib.train import evaluate

    rng = np.random.default_rng(0)
    shapes = {"W1": (4, 64), "b1": (64,), "W2": (64, 64), "b2": (64,), "W3": (64, 2), "b3": (2,)}
    arrays = {k: rng.normal(0, 0.5, s).astype(np.float32) for k, s in shapes.items()}  # short, varied episodes
    alone = evaluate._episode_returns(arrays, np.arange(40), 7, 40)
    assert alone.std() > 0  # the episodes differ, so a shuffled or shifted split would show
    halves = np.concatenate([evaluate._episode_returns(arrays, np.arange(20), 7, 40),
                             evaluate._episode_returns(arrays, np.arange(20, 40), 7, 40)])
    np.testing.assert_array_equal(halves, alone)
    assert evaluate.gymnasium_return(arrays, 40, seed=7) == pytest.approx(float(alone.mean()))
    assert evaluate.gymnasium_return(arrays, 40, seed=8) != pytest.approx(float(alone.mean()))


def test_the_gymnasium_judge_gives_each_episode_gymnasium_makes_return_bit_for_bit():
    """The judge's episodes (CartPoleEnv's resets, CartPoleVectorEnv's steps) against each episode
    played alone on ``gymnasium.make("CartPole-v1")`` from the same reset seed: equal returns,
    for an untrained actor's varied short episodes and for a balancing one whose episodes mostly
    reach the time limit (pushing the cart under the pole: angle plus angular velocity)."""
    import gymnasium

    from studylib.train import evaluate

    rng = np.random.default_rng(1)
    shapes = {"W1": (4, 64), "b1": (64,), "W2": (64, 64), "b2": (64,), "W3": (64, 2), "b3": (2,)}
    varied = {k: rng.normal(0, 0.5, s).astype(np.float32) for k, s in shapes.items()}
    balancing = {k: np.zeros(s, np.float32) for k, s in shapes.items()}
    balancing["W1"][2:, 0] = 1.0  # h1 = tanh(theta + theta_dot): push the cart under the pole
    balancing["W2"][0, 0] = 1.0
    balancing["W3"][0, 1], balancing["W3"][0, 0] = 1.0, -1.0
    for arrays in (varied, balancing):
        ours = evaluate._episode_returns(arrays, np.arange(30), 3, 30)
        alone = []
        for i in range(30):
            env = gymnasium.make("CartPole-v1")
            obs, _ = env.reset(seed=3 * 30 + i + evaluate.EVAL_SEED_OFFSET)
            total, done = 0.0, False
            while not done:
                obs, r, term, trunc, _ = env.step(int(evaluate.greedy_actions(arrays, obs[None])[0]))
                total, done = total + r, term or trunc
            alone.append(total)
        np.testing.assert_array_equal(ours, alone)
    assert alone.count(500.0) >= 10 and min(alone) < 500  # truncated at the limit, and terminated
    assert len(set(evaluate._episode_returns(varied, np.arange(30), 3, 30))) > 3


def test_the_answer_states_collection_amdahl_and_the_learner_with_their_intervals():
    gym = _runs("gym", [10.0] * 6, collect=[5.0] * 6, learn=[4.0] * 6)  # collection 50 % of the wall-clock
    fused = _runs("fused", [2.0] * 6, collect=[0.1] * 6, learn=[1.7] * 6)  # 50× less collection per update
    jax = _runs("jax", [1.0, 1.5, 2.0, 2.5, 3.0, 3.5], trainer="jax-ppo")
    solve = pd.concat([gym, fused, jax], ignore_index=True)
    S = answers.summaries(solve, ["gym", "fused", "jax"])
    text = answers.answer(solve, S, ["gym", "fused", "jax"], "this machine (2 CPU cores, no GPU)")
    assert text.startswith("Measured on this machine (2 CPU cores, no GPU).")
    assert "`fused` collects fastest and `gym` slowest. Collection per update is 50.00× faster with `fused`" in text
    assert "`fused` spends 5%" in text and "`gym` 50%" in text
    assert "Time to solve: `fused` trains faster than `gym`: IQM ratio 5.00×" in text  # 10 s against 2 s, every seed
    assert "Collection is 5%–50% of these collectors' wall-clock" in text and "at most 2× (Amdahl's bound)" in text
    assert "The fully jitted JAX PPO against the fastest PyTorch one: `jax`" in text
    assert answers.collection_sentence(chapter.collection_answer(solve, "gym", "fused"), "gym", "fused") in text  # the sentence the page's fused section uses
    alone = answers.answer(jax, answers.summaries(jax, ["jax"]), ["jax"])
    assert alone.endswith("Too few trainers ran in this preset to compare collectors.")
    assert "No training run" in answers.answer(solve.iloc[:0], S.iloc[:0], ["gym"])
