"""The robot chapter (book/robot.md, studylib.train.chain.chapter): its table and verdict from
hand-made rows (the rule can say both), runs saved one by one and read back instead of trained,
its parameters checked where they are made."""

from __future__ import annotations

import math

import pytest

from studylib.errors import ConfigError
from studylib.harness import sweep
from studylib.harness.presets import PRESETS
from studylib.train import stats
from studylib.train.chain import chapter, results
from studylib.train.chain.settings import CHAIN_TRAINERS


def _row(collector, seed, *, wall, samples, collect, solved=True, links=2, budget=60.0):
    """A run's row as the trainers save it, with only what the chapter reads made up."""
    learn = wall - collect - 0.01 * wall
    return {"collector": collector, "links": links, "seed": seed, "solved": solved, "wall_s": wall, "samples": samples,
            "collect_s": collect, "learn_s": learn, "eval_s": 0.01 * wall, "budget_s": budget, "compile_s": 1.0,
            "eval_return": 9300.0 if solved else 500.0, "stopped": "solved" if solved else "max_seconds",
            "curve": [[wall / 2, samples // 2, 4, 3000.0, 200.0], [wall, samples, 8, 9300.0, 900.0]],
            "settings": {"links": links}}


def _table(rows):
    return chapter.table(chapter.frame(rows))


def test_the_fastest_collector_trains_fastest_when_its_median_is_the_smallest():
    rows = [_row("jax", k, wall=w, samples=100_000, collect=0.2 * w) for k, w in enumerate([2.0, 1.5, 3.0])]
    rows += [_row("gym", k, wall=w, samples=120_000, collect=0.5 * w) for k, w in enumerate([20.0, 30.0])]
    T = _table(rows)
    jax = T.set_index("collector").loc["jax"]
    assert (jax.time_median, jax.time_min, jax.time_max, jax.runs, jax.solved) == (2.0, 1.5, 3.0, 3, 3)
    assert jax.collect_share == pytest.approx(0.2)
    v = chapter.verdict(T, 2)
    assert (v.fastest_collector, v.fastest_trainer, v.holds) == ("jax", "jax", True)
    text = chapter.answer(T)
    assert "**also trains fastest**" in text and "collection 20% of its wall-clock" in text
    assert "collection 50% of its wall-clock" in text


def test_the_rule_fails_when_a_slower_collector_trains_faster():
    # fused collects fastest per sample but needs many more samples: gym solves first
    rows = [_row("fused", k, wall=40.0, samples=1_000_000, collect=4.0) for k in range(2)]
    rows += [_row("gym", k, wall=w, samples=50_000, collect=0.6 * w) for k, w in enumerate([10.0, 12.0])]
    T = _table(rows)
    v = chapter.verdict(T, 2)
    assert (v.fastest_collector, v.fastest_trainer, v.holds) == ("fused", "gym", False)
    assert "**does not train fastest**" in chapter.answer(T)


def test_a_win_beyond_amdahls_bound_names_the_samples_or_the_time_per_sample():
    """Collection's share bounds the win at equal samples only: gym collects 30% of its 10 s here
    (bound 1.4x). fused's 2x win at a third of the samples is beyond it through the samples; a 2x
    win at the same samples is beyond it per sample; a 1.25x win is within it and says nothing more."""
    def amdahl(fused_wall, fused_samples):
        rows = [_row("gym", k, wall=10.0, samples=60_000, collect=3.0) for k in range(2)]
        rows += [_row("fused", k, wall=fused_wall, samples=fused_samples, collect=0.01) for k in range(2)]
        text = chapter.answer(_table(rows))
        return text[text.index("An infinitely fast collector"):]

    assert amdahl(8.0, 60_000) == ("An infinitely fast collector can cut PyTorch PPO + gym (MuJoCo)'s time to solve at "
                                   "equal samples at most 1.43× (collection is 30% of it); `fused` cuts it 1.25× "
                                   "(median 8 s against 10 s).")
    by_samples = amdahl(5.0, 20_000)
    assert by_samples.endswith("cuts it 2× (median 5 s against 10 s), beyond the bound: it also solved in 3× fewer "
                               "samples (median 20,000 samples to solve against 60,000), which collection speed does "
                               "not shorten.")
    same = amdahl(5.0, 60_000)
    assert "at no fewer samples (median 60,000 samples to solve against 60,000): more than its collection" in same
    both = amdahl(2.0, 30_000)  # 5x: 2x fewer samples and 2.5x per sample, each beyond the 1.4x bound
    assert both.endswith("beyond the bound: it solved in 2× fewer samples (median 30,000 samples to solve against "
                         "60,000) and ran 2.5× as fast per sample, beyond the bound as well: more than its collection "
                         "took less time per sample.")


def test_a_peer_is_not_among_the_pytorch_ppo_collectors():
    """A peer trains with its own learner: the comparison among the collectors feeding the same
    PyTorch PPO, and Amdahl's bound on it, leave it out, however slow it is (here the slowest)."""
    rows = [_row("jax", k, wall=2.0, samples=100_000, collect=0.2) for k in range(2)]
    rows += [_row("fused", k, wall=12.0, samples=100_000, collect=0.1) for k in range(2)]
    rows += [_row("gym", k, wall=15.0, samples=100_000, collect=6.0) for k in range(2)]
    rows += [_row("sb3-defaults", k, wall=100.0, samples=100_000, collect=56.0) for k in range(2)]
    text = chapter.answer(_table(rows))
    among = text[text.index("Among the collectors feeding the same PyTorch PPO"):]
    assert "Stable-Baselines3" not in among and "against 15 s for the next, PyTorch PPO + gym (MuJoCo)" in among
    assert "cut PyTorch PPO + gym (MuJoCo)'s time to solve at equal samples at most 1.67×" in among


def test_a_verdict_from_one_seed_of_a_trainer_says_it_is_a_single_draw():
    """The default preset trains one seed per trainer: its verdict compares two draws, and says so;
    with two seeds each it does not, nor where there is nothing to compare."""
    caveat = "(A single draw: a trainer compared here has one seed, so no interval.)"
    one = [_row("jax", 0, wall=2.5, samples=50_000, collect=0.2),
           _row("fused", 0, wall=77.0, samples=160_000, collect=0.3)]
    assert "**does not train fastest**" in chapter.answer(_table(one)) and caveat in chapter.answer(_table(one))
    two = one + [_row("jax", 1, wall=3.0, samples=50_000, collect=0.2),
                 _row("fused", 1, wall=70.0, samples=160_000, collect=0.3)]
    assert "**does not train fastest**" in chapter.answer(_table(two)) and caveat not in chapter.answer(_table(two))
    alone = [_row("jax", 0, wall=2.5, samples=50_000, collect=0.2)]
    text = chapter.answer(_table(alone))
    assert "is the only trainer here." in text and caveat not in text
    brax = dict(_row("brax", 0, wall=600.0, samples=10**6, collect=0.0, solved=False), collect_s=math.nan,
                learn_s=math.nan)  # one unsolved seed of a peer that times no collection apart: not compared
    text = chapter.answer(_table(two + [brax]))
    assert caveat not in text and "Brax PPO (its own settings) does not solve" in text
    assert "its collection not timed apart" in text and "nan%" not in text


def test_unsolved_runs_are_censored_and_leave_the_rule_undecided_when_nothing_solves():
    rows = [_row("jax", 0, wall=5.0, samples=10_000, collect=0.5, solved=False),
            _row("jax", 1, wall=5.0, samples=10_000, collect=0.5, solved=False),
            _row("jax", 2, wall=2.0, samples=9_000, collect=0.2),
            _row("fused", 0, wall=5.0, samples=8_000, collect=2.0, solved=False)]
    T = _table(rows).set_index("collector")
    assert math.isinf(T.loc["jax", "time_median"]) and T.loc["jax", "time_min"] == 2.0 and T.loc["jax", "solved"] == 1
    v = chapter.verdict(T.reset_index(), 2)
    assert v.holds is None and v.fastest_trainer is None
    assert "cannot be compared" in chapter.answer(T.reset_index())
    assert stats.fmt_range(math.inf, 2.0, math.inf, budget=5.0) == "not solved by half the seeds (budget 5 s)"
    assert stats.fmt_range(2.0, 1.5, math.inf) == "2 (1.5–unsolved)"


def test_each_n_gets_its_own_verdict():
    rows = [_row("jax", 0, wall=2.0, samples=1, collect=0.1, links=2), _row("gym", 0, wall=9.0, samples=1, collect=5.0, links=2),
            _row("jax", 0, wall=9.0, samples=1, collect=0.1, links=3), _row("gym", 0, wall=3.0, samples=1, collect=2.0, links=3)]
    assert [(v.links, v.holds) for v in chapter.verdicts(_table(rows))] == [(2, True), (3, False)]


def test_the_presets_size_the_plan():
    tiny = chapter.params(preset="tiny", data_dir="/tmp/unused")
    assert tiny.collectors == ("fused", "cpp") and tiny.links == (1,) and len(tiny.runs()) == 2
    default = chapter.params(preset="default", data_dir="/tmp/unused")
    assert default.links == (1,) and [(r.collector, r.seed) for r in default.runs()] == [("jax", 0), ("fused", 0)]
    assert all(r.settings.links == 1 and r.budget_seconds == default.budget_s for r in default.runs())
    assert set(PRESETS["paper"]["robot"]["collectors"]) == set(CHAIN_TRAINERS)
    paper = chapter.params(preset="paper", data_dir="/tmp/unused")
    planned = {(r.collector, r.settings.links) for r in paper.runs()}
    assert ("brax", 1) in planned and ("brax", 3) not in planned and ("sb3", 3) in planned  # brax: its two pendulums


@pytest.mark.parametrize("given, message", [
    ({"collectors": ["jax", "nope"]}, "unknown trainer 'nope'"),
    ({"seeds": {"gym": 2}, "collectors": ["jax"]}, "'seeds' names 'gym'"),
    ({"seeds": {"jax": 2}, "collectors": ["jax", "fused"]}, "no seed count for 'fused'"),
    ({"links": [0]}, "'links' must be a list of positive integers"),
])
def test_bad_parameters_are_refused_in_one_line(given, message):
    with pytest.raises(ConfigError, match=message) as e:
        chapter.params(preset="tiny", data_dir="/tmp/unused", **given)
    assert "\n" not in str(e.value)


def test_a_run_is_saved_as_it_finishes_and_read_back_instead_of_trained(tmp_path, monkeypatch):
    P = chapter.params(preset="tiny", data_dir=tmp_path, collectors=["fused"], seeds={"fused": 1})
    df = chapter.runs(P)  # trains one run (a tenth of a second, then the untimed final evaluation)
    assert len(df) == 1
    saved = results.load(tmp_path)
    assert len(saved) == 1 and results.path_for(tmp_path).name == "training_robot.json"
    row = saved[0]
    assert (row["collector"], row["links"], row["seed"], row["budget_s"]) == ("fused", 1, 0, 0.1)
    assert 0 < row["collect_share"] < 1 and row["call_s"] >= row["wall_s"] and row["curve"] is not None

    trained = []

    def fake_train(run):  # any run not saved: a made-up row of the same key
        trained.append(run.seed)
        return {**row, "seed": run.seed}

    monkeypatch.setattr(results, "train_row", fake_train)
    again = chapter.runs(P)
    same = ["collector", "links", "seed", "solved", "wall_s", "samples", "collect_share", "call_s"]
    assert trained == [] and again[same].equals(df[same])
    # a larger plan resumes: only the seeds not saved are trained, each saved at once
    bigger = chapter.params(preset="tiny", data_dir=tmp_path, collectors=["fused"], seeds={"fused": 3})
    assert len(chapter.runs(bigger)) == 3 and trained == [1, 2]
    assert sorted(r["seed"] for r in results.load(tmp_path)) == [0, 1, 2]
    # another budget is another run
    assert results.run_key(bigger.runs()[0]) != results.run_key(
        chapter.params(preset="tiny", data_dir=tmp_path, collectors=["fused"], budget_s=0.2).runs()[0])


def test_a_session_that_measures_nothing_trains_nothing_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "train_row", lambda run: pytest.fail("a read-only session trained"))
    told = {}
    with sweep.session(engine=sweep.READ_ONLY, report=lambda name, r: told.setdefault(name, []).extend(r.skipped)):
        df = chapter.runs(chapter.params(preset="tiny", data_dir=tmp_path))
    assert len(df) == 0 and [s["collector"] for s in told["training_robot"]] == ["fused", "cpp"]
    assert chapter.answer(chapter.table(df)).startswith("No run")
    assert not (tmp_path / "training_robot.json").exists() and list(tmp_path.iterdir()) == []


def test_the_full_study_is_shown_only_with_runs_beyond_the_pages_own(monkeypatch):
    """The default's runs are the paper study's seed 0: saved alone, they are no study of their
    own (the page would call one seed per trainer "the full study"); with one more paper run saved,
    the study holds them all."""
    default = chapter.params(preset="default", data_dir="/tmp/unused")

    def row(run):
        settings = {**run.settings.as_dict(), "num_envs": run.n}
        return {**_row(run.collector, run.seed, wall=5.0, samples=1000, collect=0.5, links=run.settings.links,
                       budget=run.budget_seconds), "settings": settings}

    own = [row(r) for r in default.runs()]
    monkeypatch.setattr(results, "load", lambda data_dir: own)
    SD, plan = chapter.study(default)
    assert plan.preset == "paper" and SD.empty
    paper_runs = [r for r in plan.runs() if r.settings.links == 1 and r.collector == "jax" and r.seed == 1]
    monkeypatch.setattr(results, "load", lambda data_dir: [*own, row(paper_runs[0])])
    SD, _ = chapter.study(default)
    assert sorted(zip(SD["collector"], SD["seed"])) == [("fused", 0), ("jax", 0), ("jax", 1)]


def test_the_table_discloses_the_screens_share_of_the_wall_clock():
    """The in-training screen is an instrument inside the clock: its share is shown beside collection's."""
    rows = [_row("sb3", k, wall=10.0, samples=60_000, collect=3.0) for k in range(2)]
    rows[0]["eval_s"], rows[0]["learn_s"] = 2.0, 5.0  # 3 + 5 + 2: a 20% screen
    rows[1]["eval_s"], rows[1]["learn_s"] = 4.0, 3.0  # 3 + 3 + 4: 40%
    shown = chapter.shown(_table(rows)).set_index("collector").loc["sb3"]
    assert (shown["share"], shown["screens"]) == ("30%", "30%")  # medians over the two seeds
    assert chapter.SHOWN_COLUMNS["screens"] == "in-training screens' share"


def test_a_collector_within_the_tie_margin_of_the_fastest_is_named_beside_it():
    """jax collects at 2.00 µs per sample and fused at 2.10 (5% apart): the verdict still names jax the
    fastest, and says fused is too close to tell apart; at 3.00 µs (50% apart) nothing is added."""
    def sentence(fused_collect):
        rows = [_row("jax", k, wall=2.0, samples=100_000, collect=0.2) for k in range(2)]
        rows += [_row("fused", k, wall=80.0, samples=100_000, collect=fused_collect) for k in range(2)]
        T = _table(rows)
        return chapter.verdict(T, 2).sentence(T)

    close = sentence(0.21)
    assert close.startswith("The fastest collector, `jax` (2 µs of collection per sample; `fused` 2.1, within 10%: "
                            "too close for these timings to tell apart), **also trains fastest**")
    assert sentence(0.3).startswith("The fastest collector, `jax` (2 µs of collection per sample), **also trains")
