"""The robot chapter's Stable-Baselines3 peer (studylib.train.chain.peers.sb3) and the full study's
statistics (chapter.study_table, study_comparisons, study_answer, curve_bands) from hand-made rows."""

from __future__ import annotations

import math

import numpy as np
import pytest

from studylib.errors import ConfigError
from studylib.train.chain import chapter
from studylib.train.chain.evaluate import array_policy
from studylib.train.chain.peers import sb3


def test_the_peer_trains_the_published_task_at_each_n():
    assert sb3.peer_task(1) == {"env_id": "InvertedPendulum-v5", "zoo": "InvertedPendulum-v3", "threshold": 950.0}
    assert sb3.peer_task(2)["env_id"] == "InvertedDoublePendulum-v5" and sb3.peer_task(2)["threshold"] == 9100.0
    assert sb3.peer_task(3)["env_id"] is None and sb3.task_env(3).unwrapped.params.links == 3
    with pytest.raises(ConfigError):
        sb3.peer_task(0)
    # the zoo's values as published (hyperparams/ppo.yml): a typo would change the peer
    z = sb3.RL_ZOO["InvertedDoublePendulum-v3"]
    assert (z["n_steps"], z["batch_size"], z["gamma"], z["gae_lambda"], z["clip_range"]) == (128, 512, 0.98, 0.8, 0.4)


def test_sb3s_actor_as_arrays_acts_as_sb3_predicts():
    """The arrays the transfer check plays are SB3's deterministic policy: same actions as
    ``model.predict(venv.normalize_obs(obs), deterministic=True)`` on random observations."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    venv = VecNormalize(make_vec_env(lambda: sb3.task_env(2), n_envs=1, seed=3))
    model = PPO("MlpPolicy", venv, n_steps=64, batch_size=64, seed=3, device="cpu")
    rng = np.random.default_rng(0)
    venv.obs_rms.mean = rng.normal(size=9)  # statistics far from (0, 1), so a dropped normalization shows
    venv.obs_rms.var = rng.uniform(0.1, 4.0, size=9)
    with np.errstate(all="ignore"):
        for p in model.policy.action_net.parameters():
            p.data.normal_(0, 3.0)  # an actor whose actions leave [-1, 1] too, so the clip shows
    obs = rng.normal(size=(64, 9)) * 2
    want = model.predict(venv.normalize_obs(obs.astype(np.float32)), deterministic=True)[0]
    got = array_policy(sb3.sb3_policy_arrays(model, venv))(obs)
    assert np.abs(want).max() == 1.0  # some actions were clipped
    np.testing.assert_allclose(got, want, atol=1e-5)
    # SB3's defaults normalize nothing: the arrays then pass the observation through
    plain = PPO("MlpPolicy", venv.venv, n_steps=64, batch_size=64, seed=4, device="cpu")
    np.testing.assert_allclose(array_policy(sb3.sb3_policy_arrays(plain))(obs), plain.predict(obs, deterministic=True)[0],
                               atol=1e-5)
    assert sb3.settings_for(2, "defaults")[1]["n_steps"] == 2048 and not sb3.settings_for(2, "defaults")[1]["normalize"]
    with pytest.raises(ConfigError):
        sb3.settings_for(2, "tuned")
    venv.close()


def test_sb3_learns_without_leaving_a_log_folder(tmp_path, monkeypatch):
    """SB3's default logger makes an empty ``SB3-<date>`` folder in the temporary directory at each
    ``learn`` (verbose 0 included); the peers' models log nowhere (peers.without_log_folder)."""
    import tempfile

    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    from studylib.train.peers import without_log_folder

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    venv = make_vec_env(lambda: sb3.task_env(1), n_envs=1, seed=3)
    for i, quiet in enumerate((False, True)):
        model = PPO("MlpPolicy", venv, n_steps=32, batch_size=32, n_epochs=1, seed=3, device="cpu", verbose=0)
        (without_log_folder(model) if quiet else model).learn(32)
        assert len(list(tmp_path.glob("SB3-*"))) == 1, i  # SB3's own default made one; the quiet model none
    venv.close()


def _row(collector, seed, *, wall, samples, solved=True, links=2, peer=None, transfer=math.nan):
    return {"collector": collector, "links": links, "seed": seed, "solved": solved, "wall_s": wall, "samples": samples,
            "collect_s": 0.3 * wall, "learn_s": 0.6 * wall, "eval_s": 0.1 * wall, "budget_s": 600.0, "compile_s": 1.0,
            "eval_return": 9200.0, "stopped": "solved" if solved else "max_seconds", "transfer_return": transfer,
            "curve": [[wall / 2, samples // 2, 4, 100.0 * seed, 0.0], [wall, samples, 8, 9200.0 + seed, 0.0]],
            "settings": {"links": links}, "peer": peer or {}}


PEER = {"env": "InvertedDoublePendulum-v5", "threshold": 9100.0}


def _study():
    rows = [_row("jax", k, wall=2.0 + 0.1 * k, samples=100_000, transfer=9300.0) for k in range(8)]
    rows += [_row("sb3", k, wall=70.0 + k, samples=180_000, peer=PEER) for k in range(7)]
    rows += [_row("sb3", 7, wall=600.0, samples=1_000_000, solved=False, peer=PEER)]
    df = chapter.frame(rows)
    plan = chapter.params(preset="paper", data_dir="/tmp/unused")
    return df, plan, chapter.study_table(df, plan)


def test_the_study_table_gives_iqm_with_intervals_and_counts_unsolved_seeds():
    _, plan, S = _study()
    s = S.set_index("collector")
    assert list(S["collector"]) == ["jax", "sb3"]  # the plan's order
    assert s.loc["jax", "time_iqm"] == pytest.approx(np.mean(2.0 + 0.1 * np.arange(2, 6)))
    assert s.loc["jax", "time_lo"] <= s.loc["jax", "time_iqm"] <= s.loc["jax", "time_hi"]
    assert (s.loc["sb3", "runs"], s.loc["sb3", "solved"], s.loc["sb3", "planned"]) == (8, 7, 16)
    assert math.isfinite(s.loc["sb3", "time_iqm"])  # one of eight unsolved: the IQM drops it
    assert s.loc["sb3", "task"].startswith("InvertedDoublePendulum-v5") and s.loc["jax", "task"].startswith("ChainMujocoEnv")
    missing = chapter.study_missing(chapter.frame([]), plan)
    assert "`brax` (n = 1, 2)" in missing and "`sb3` (n = 1, 2, 3)" in missing  # brax has no task at n = 3
    assert "`jax` (n = 1, 3)" in chapter.study_missing(_study()[0], plan)
    shown = chapter.study_shown(S).set_index("collector")
    assert shown.loc["sb3", "seeds"] == "7 / 8 (of 16 planned)" and shown.loc["jax", "transfer"] == "9,300"
    assert set(S["trained"]) == {""}  # these rows have no run_id


def test_the_study_says_when_each_trainer_was_trained():
    df, plan, _ = _study()
    stamp = {"jax": "2026-11-28T10:29:0{}+00:00-ab12cd34", "sb3": "2026-11-2{}T23:59:00+00:00-ef56ab78"}
    df["run_id"] = [stamp["jax"].format(s) if c == "jax" else stamp["sb3"].format(8 if s else 7)
                    for c, s in zip(df["collector"], df["seed"])]
    s = chapter.study_table(df, plan).set_index("collector")["trained"]
    assert s["jax"] == "2026-11-28 10:29"  # eight runs saved within that minute
    assert s["sb3"] == "2026-11-27 23:59–2026-11-28 23:59"  # over midnight: both dates
    one = chapter.study_table(df[df["seed"] == 0], plan).set_index("collector")["trained"]
    assert one["sb3"] == "2026-11-27 23:59"


def test_the_study_says_faster_only_where_the_interval_excludes_one():
    df, plan, S = _study()
    [line] = chapter.study_comparisons(df, S)
    assert line.startswith("n = 2: `jax` solves faster than `sb3`")
    text = chapter.study_answer(df, S)
    assert "Full study, n = 2" in text and "(rl-zoo settings) on InvertedDoublePendulum-v5 (threshold 9,100) solves 7 of 8 seeds in an IQM" in text
    assert "× JAX PPO" in text and "it is also the fastest collector" in text
    # a faster collector that trains slower: its own time to solve beside the best trainer's
    faster = chapter.frame(df.to_dict("records") + [_row("fused", k, wall=10.0, samples=1_000_000) for k in range(8)])
    text = chapter.study_answer(faster, chapter.study_table(faster, plan))
    assert "the fastest collector is `fused` (3 µs per sample), which solves in an IQM 10 s (10–10), collection 30% of it" in text
    # most seeds of the peer unsolved: no ratio of IQMs, the solved runs' range instead
    censored = [r if r["collector"] != "sb3" or r["seed"] < 2 else {**r, "solved": False} for r in df.to_dict("records")]
    dc = chapter.frame(censored)
    text = chapter.study_answer(dc, chapter.study_table(dc, plan))
    assert "solves 2 of 8 seeds; its IQM is censored" in text and "took 70–71 s" in text
    assert "score a median 9,300 on gymnasium's own InvertedDoublePendulum-v5" in text
    # two trainers drawn from one distribution: indistinguishable
    rows = [_row(c, k, wall=10.0 + (k * 7 % 5), samples=1) for c in ("jax", "fused") for k in range(8)]
    df2 = chapter.frame(rows)
    [line] = chapter.study_comparisons(df2, chapter.study_table(df2, plan))
    assert "indistinguishable" in line


def test_the_study_answer_sets_brax_against_the_fastest_trainer_on_its_own_task():
    """Brax is a peer of the answer as SB3 is: timed to its own task's threshold, censored where
    over a quarter of its seeds did not solve, in the run's budget (not the zoo's)."""
    df, plan, _ = _study()
    brax_peer = {"env": "inverted_double_pendulum (Brax)", "threshold": 9100.0}
    rows = df.to_dict("records") + [_row("brax", k, wall=40.0 + k, samples=800_000, peer=brax_peer) for k in range(8)]
    text = chapter.study_answer(chapter.frame(rows), chapter.study_table(chapter.frame(rows), plan))
    assert "Brax PPO (its own settings) on inverted_double_pendulum (Brax) (threshold 9,100) solves 8 of 8 seeds in an IQM" in text
    unsolved = rows[:-8] + [_row("brax", k, wall=600.0, samples=9_000_000, solved=k < 2, peer=brax_peer) for k in range(8)]
    dc = chapter.frame(unsolved)
    text = chapter.study_answer(dc, chapter.study_table(dc, plan))
    assert "solves 2 of 8 seeds; its IQM is censored (over a quarter unsolved: the rest stop at the 600 s budget)" in text


def test_the_budget_that_stopped_a_peer_comes_from_its_rows():
    """Stable-Baselines3 ends on its own at the zoo's n_timesteps, long before the wall budget (its
    rows were once labelled max_seconds): the clause names the samples its runs reached."""
    df, plan, _ = _study()
    rows = [r for r in df.to_dict("records") if r["collector"] != "sb3"]
    rows += [_row("sb3", k, wall=70.0 + k, samples=180_000, peer=PEER) for k in range(2)]
    rows += [_row("sb3", k, wall=400.0 + k, samples=999_936, solved=False, peer=PEER) for k in range(2, 8)]
    dc = chapter.frame(rows)
    text = chapter.study_answer(dc, chapter.study_table(dc, plan))
    assert "the rest stop at their sample budget, 999,936 samples in under 600 s)" in text


def test_one_seed_is_not_called_a_median():
    rows = [_row("jax", 0, wall=2.0, samples=100_000), _row("fused", 0, wall=9.0, samples=100_000),
            _row("fused", 1, wall=11.0, samples=100_000)]
    text = chapter.answer(chapter.table(chapter.frame(rows)))
    assert "solves in 2 s (one seed)" in text and "solves in a median 10 s" in text


def test_curve_bands_hold_each_runs_last_screen():
    df, _, _ = _study()
    B = chapter.curve_bands(df, "samples", points=8)
    jax = B[B["trainer"] == chapter.label("jax")]
    assert (jax["runs"] == 8).all() and jax["iqm"].iloc[-1] >= 9200.0  # every jax run ended at >= 9200
    assert (B["lo"] <= B["iqm"] + 1e-9).all() and (B["iqm"] <= B["hi"] + 1e-9).all()


def test_the_pages_reason_for_sb3s_defaults_is_the_snapshot_it_names():
    """The robot page runs SB3 at its defaults too because the zoo's entry left most seeds unsolved
    at n = 2 in a committed study: the count it gives is that file's."""
    import json
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    said = re.search(r"left (\d+) of its (\d+) seeds at\s+n = 2 .*?\(`(data/[^`]+)`\)",
                     (root / "book" / "robot.md").read_text(), re.S)
    assert said, "the page no longer names the study its reason comes from"
    rows = [r for r in json.loads((root / said[3]).read_text())["rows"] if r["collector"] == "sb3" and r["links"] == 2]
    assert (int(said[1]), int(said[2])) == (sum(not r["solved"] for r in rows), len(rows))
    assert all(r["samples"] >= 0.99e6 for r in rows if not r["solved"])  # short "within its own budget of 10⁶ steps"
