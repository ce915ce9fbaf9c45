"""The Atari chapter's rules (studylib/book/pages/atari.py) on rows made up for the purpose: each can
come out either way."""

from __future__ import annotations

import pandas as pd
import pytest

from studylib.book.pages import atari as ab


def _rows(vector_fps=4000.0, single_fps=1000.0, cnn_fps=500.0):
    rows = [("gym", 1, "none", single_fps), ("gym", 1, "cnn", 100.0), ("ale-vector", 4, "none", vector_fps / 2),
            ("ale-vector", 16, "none", vector_fps), ("ale-vector", 16, "cnn", cnn_fps),
            ("envpool", 16, "none", vector_fps / 4)]
    return pd.DataFrame([{"game": "pong", "impl": i, "num_envs": n, "policy": p, "frames_per_s": f}
                         for i, n, p, f in rows])


def test_threads_speedup_picks_the_best_vector_env_over_the_single_one():
    s = ab.threads_speedup(_rows(), "pong")
    assert (s["vector_impl"], s["vector_n"], s["speedup"]) == ("ale-vector", 16, 4.0)
    assert ab.threads_speedup(_rows(vector_fps=500.0), "pong")["speedup"] == 0.5  # slower than one env: said so
    assert ab.threads_speedup(_rows(), "breakout") is None  # not measured


def test_cnn_cost_is_none_over_cnn_where_both_were_measured():
    c = ab.cnn_cost(_rows())
    assert set(zip(c["impl"], c["num_envs"])) == {("gym", 1), ("ale-vector", 16)}
    assert c.set_index("impl")["slowdown"].to_dict() == pytest.approx({"gym": 10.0, "ale-vector": 8.0})


def _breakdown(inference_s):
    return pd.DataFrame([{"game": "pong", "loop": "python-loop", "num_envs": 16, "emulation_s": 0.02,
                          "preprocessing_s": 0.01, "env_step_s": 0.03, "host_copies_s": 0.005,
                          "inference_s": inference_s},
                         {"game": "pong", "loop": "ale-vector", "num_envs": 16, "emulation_s": None,
                          "preprocessing_s": None, "env_step_s": 0.01, "host_copies_s": 0.005,
                          "inference_s": inference_s}])


def test_cnn_bounds_only_where_inference_is_the_largest_phase():
    assert list(ab.cnn_bounds(_breakdown(0.02))["cnn_bound"]) == [False, True]
    assert list(ab.cnn_bounds(_breakdown(0.001))["limiting"]) == ["env step", "env step"]
    long = ab.shares_long(_breakdown(0.02))
    assert long.groupby("loop")["share"].sum().to_dict() == pytest.approx({"python-loop": 1.0, "ale-vector": 1.0})
    assert set(long[long["loop"] == "ale-vector"]["phase"]) == {"emulation + preprocessing", "host copies",
                                                                "inference (CNN)"}


def test_cule_figures_are_labelled_as_published_gpu_measurements():
    assert all("GPU measurement" in c["kind"] for c in ab.CULE)
    assert ab.CULE[0]["frames_per_s"] == pytest.approx(155e6 / 3600)


def test_what_binds_follows_the_largest_phase_and_the_one_thread_check_can_disagree():
    bd = _breakdown(0.05).assign(inference_one_thread_s=0.001)
    b = ab.cnn_bounds(bd)
    assert ab.what_binds(b) == "the CNN's inference"  # 0.05 s inference > 0.03 and 0.01 s env steps
    assert list(b["cnn_bound_one_thread"]) == [False, False]
    assert ab.what_binds(b.assign(limiting=b["limiting_one_thread"])) == "the emulator (stepping and preprocessing)"


def test_summary_states_the_pages_numbers_and_its_rules_can_go_either_way():
    df = _rows(vector_fps=4000.0, single_fps=1000.0, cnn_fps=500.0)
    bd = _breakdown(0.05).assign(inference_one_thread_s=[0.001, 0.04])
    s = ab.summary(df, bd, ["pong", "breakout"], cores=2)
    assert [x["game"] for x in s.speedups] == ["pong"]  # breakout not measured: left out
    assert s.fastest["speedup"] == 4.0 and s.beyond_cores  # 4× on 2 cores: more than threads alone
    assert not ab.summary(df, bd, ["pong"], cores=8).beyond_cores
    assert (s.slowdown_min, s.slowdown_max) == pytest.approx((8.0, 10.0))
    assert (s.worst["impl"], s.worst["none"], s.worst["cnn"]) == ("gym", 1000.0, 100.0)
    assert s.best_cnn["frames_per_s"] == 500.0
    assert s.cule_over_best_cnn == pytest.approx(155e6 / 3600 / 500.0)
    assert (s.breakdowns, s.cnn_bound, s.cnn_bound_one_thread) == (2, 2, 1)
    assert s.binds == "the CNN's inference"
    assert s.waiting_ratio == pytest.approx(50.0) and s.threads_waited
    calm = ab.summary(df, _breakdown(0.05).assign(inference_one_thread_s=0.04), ["pong"], cores=2)
    assert calm.waiting_ratio == pytest.approx(1.25) and not calm.threads_waited
    assert calm.binds_one_thread == calm.binds and calm.binds_one_thread_count == 2
    bare = ab.summary(df.iloc[:0], bd.iloc[:0], ["pong"], cores=2)
    assert (bare.speedups, bare.worst, bare.best_cnn, bare.breakdowns) == ((), None, None, 0)
    assert ab.summary(df, _breakdown(0.05), ["pong"], cores=2).cnn_bound_one_thread is None  # not timed


def test_the_answer_states_the_summarys_numbers_and_cules_rate_as_published(tmp_path):
    from studylib import book

    P = book.params("atari", preset="tiny", data_dir=tmp_path)
    df = _rows(vector_fps=4000.0, single_fps=1000.0, cnn_fps=500.0)
    bd = _breakdown(0.05).assign(inference_one_thread_s=[0.001, 0.04])
    s = ab.summary(df, bd, ["pong"], cores=2)
    text = ab.answer(P, s)
    assert "the emulator alone reaches at most **4,000 frames/s** (pong, ale-vector, N = 16), 4× one environment" in text
    assert "With the Nature CNN the best is **500 frames/s** (pong, ale-vector, N = 16)" in text
    assert "in 2 of 2 timed breakdowns" in text and "is the CNN's inference**" in text
    assert "(43,056 frames/s, a GPU measurement) is 86× the best CNN-driven rate" in text  # 155e6 / 3600 / 500
    assert "not tested here (no GPU)" in text
    assert "up to 50× the same forward pass on one thread" in ab.contention(s)
    assert "the largest phase is emulator (stepping and preprocessing) in 1 of 2" in ab.contention(s)  # 0.001 s < 0.03 s
    calm = ab.summary(df, _breakdown(0.05).assign(inference_one_thread_s=0.04), ["pong"], cores=2)
    assert "at most 1.2× the same forward pass" in ab.contention(calm)
    assert "not timed on one thread" in ab.contention(ab.summary(df, _breakdown(0.05), ["pong"], cores=2))
    bare = ab.answer(P, ab.summary(df.iloc[:0], bd.iloc[:0], ["pong"], cores=2))
    assert bare.startswith("Not enough was measured here") and "the breakdowns" in bare
