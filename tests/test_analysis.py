"""The book's analysis on small synthetic frames: every rule gives each of its verdicts, the helpers
(trend, spread, plateau, speedups) compute what they say, and each findings row carries a reason
whenever it is not "reproduced"."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from studylib import book, costs
from studylib.book import analysis, claims
from studylib.book.analysis import NOT_MEASURED, NOT_REPRODUCED, PARTLY, REPRODUCED

# (rule, ours, paper) -> verdict: every verdict each rule can give
CASES = [
    ("speedup", 20.0, 13.4, REPRODUCED), ("speedup", 7.0, 13.4, REPRODUCED), ("speedup", 4.35, 53.8, PARTLY),
    ("speedup", 300.0, 11.3, PARTLY), ("speedup", 1.02, 11.3, NOT_REPRODUCED), ("speedup", 0.5, 11.3, NOT_REPRODUCED),
    ("speedup", None, 11.3, NOT_MEASURED), ("speedup", np.nan, 11.3, NOT_MEASURED),
    ("at most", 3.0, 4, REPRODUCED), ("at most", 4.1, 4, REPRODUCED), ("at most", 27.6, 4, NOT_REPRODUCED),
    ("at most", 0.8, 4, NOT_REPRODUCED),  # slower than gym: the bound holds, the speedup does not
    ("majority share", 80, 87, REPRODUCED), ("majority share", 58, 87, PARTLY), ("majority share", 40, 87, NOT_REPRODUCED),
    ("grows", 64.0, 64, REPRODUCED), ("grows", 40.0, 64, REPRODUCED), ("grows", 4.0, 64, PARTLY),
    ("grows", 1.1, 64, NOT_REPRODUCED), ("grows", 0.5, 64, NOT_REPRODUCED), ("grows", None, 64, NOT_MEASURED),
    ("flat", 1.3, 1, REPRODUCED), ("flat", 6.77, 1, NOT_REPRODUCED),
    ("vanishes", 1.2, 1, REPRODUCED), ("vanishes", 0.7, 1, REPRODUCED), ("vanishes", 5.0, 1, NOT_REPRODUCED),
]


@pytest.mark.parametrize("rule, ours, paper, expected", CASES)
def test_rules(rule, ours, paper, expected):
    assert analysis.verdict(rule, ours, paper) == expected


def test_every_rule_can_say_reproduced_and_not():
    for rule in analysis.RULES:
        outcomes = {v for r, _, _, v in CASES if r == rule}
        assert {REPRODUCED, NOT_REPRODUCED} <= outcomes, rule
    with pytest.raises(ValueError, match="unknown rule"):
        analysis.verdict("nope", 1.0, 1.0)


def test_trend_and_spread():
    assert analysis.trend(pd.Series([4.0, 8.0, 64.0], index=[64, 1, 4096])) == pytest.approx(64 / 8)  # by index
    assert analysis.trend_direction(analysis.trend(pd.Series([10.6, 7.0, 5.23], index=[1, 8, 64]))) == "falls"
    assert analysis.trend_direction(1.2) == "flat" and analysis.trend_direction(1.6) == "grows"
    assert np.isnan(analysis.trend(pd.Series([3.0], index=[1])))
    assert analysis.spread(pd.Series([2.0, 6.0, 3.0])) == pytest.approx(3.0)
    assert np.isnan(analysis.spread(pd.Series([2.0])))


def _rows(impl, n_rate: dict, steps=1, **cols):
    return [{"impl": impl, "num_envs": n, "steps": steps, "samples_per_s": r, "state_factor": 1, "compute_factor": 1,
             "policy": "none", **cols} for n, r in n_rate.items()]


def test_plateau_and_speedups():
    df = pd.DataFrame(_rows("cpp", {1: 10.0, 8: 95.0, 64: 100.0}) + _rows("cpp", {1: 100.0, 8: 950.0, 64: 2000.0}, steps=10))
    assert book.plateau_n(df[df["steps"] == 1]) == 8  # first N within 90 % of the best
    assert book.k_speedup(df, "cpp", 1, 10).to_dict() == {1: 10.0, 8: 10.0, 64: 20.0}
    sp = book.fusion_speedups(df)
    assert sp[sp["steps"] == 10].set_index("num_envs")["speedup"].to_dict() == {1: 10.0, 8: 10.0, 64: 20.0}
    assert book.seconds_per_call(df.iloc[[0]]).iloc[0] == pytest.approx(0.1)


def _params(chapter, tmp_path, **kw):
    return book.params(chapter, preset="tiny", data_dir=tmp_path, **kw)


def _vectorization(gym, cpp, jax):
    n = [1, 8, 64]
    return pd.DataFrame(_rows("gym", dict(zip(n, gym))) + _rows("cpp", dict(zip(n, cpp))) + _rows("jax", dict(zip(n, jax))))


@pytest.mark.parametrize("cpp, expected", [([2e4, 3e4, 3e4], REPRODUCED), ([2e5, 3e5, 3e5], NOT_REPRODUCED),
                                           ([5e3, 6e3, 7e3], NOT_REPRODUCED)])
def test_cpp_over_gym_is_judged_against_the_bound_both_ways(cpp, expected, tmp_path):
    rows = claims.vectorization_rows(_params("vectorization", tmp_path), _vectorization([1e4] * 3, cpp, [1e5] * 3))
    r = next(r for r in rows if r["quantity"].startswith("cpp"))
    assert r["verdict"] == expected and r["ours_value"] == pytest.approx(max(c / 1e4 for c in cpp))
    assert bool(r["reason"]) == (expected != REPRODUCED)
    if cpp[0] < 1e4:
        assert "not faster than gym" in r["reason"]


def _complexity(speedups_by_s: dict, llc=2**20, n_mem=2**14, grid_speedup=None):
    """A Fig 9 frame: K = 1 at 1e7/S environment-steps/s for every S, K = 100 at speedup x that; the
    memory regime at N = n_mem, and a grid N = {4, 64} whose K = 100 speedup is grid_speedup[N]."""
    rows = []
    for s, x in speedups_by_s.items():
        for k, rate in ((1, 1e7 / s), (100, x * 1e7 / s)):
            rows += _rows("cpp", {n_mem: rate}, steps=k, state_factor=s)
    for n, x in (grid_speedup or {4: 2.0, 64: 2.2}).items():
        rows += _rows("cpp", {n: 1e6}, steps=1) + _rows("cpp", {n: x * 1e6}, steps=100)
    df = pd.DataFrame(rows)
    df.attrs["memory"] = {"num_envs": n_mem, "state_factor": tuple(speedups_by_s), "steps": (1, 100), "llc_bytes": llc,
                          "llc_measured": True,
                          "working_set": {s: n_mem * (16 * s + 8) for s in speedups_by_s}}
    return df


CEIL = {"memory_bytes_per_s": 2e10, "fma_flops_per_s": 2e11, "gemm_steps_per_s": {}}


@pytest.mark.parametrize("speedups, expected", [({1: 4.0, 64: 256.0}, REPRODUCED), ({1: 4.0, 64: 12.0}, PARTLY),
                                                ({1: 4.6, 64: 4.3}, NOT_REPRODUCED), ({1: 10.6, 64: 5.2}, NOT_REPRODUCED)])
def test_f4_trend_in_the_memory_regime(speedups, expected, tmp_path):
    P = _params("complexity", tmp_path, state_factor=[1, 64], compute_factor=[1])
    rows = claims.complexity_rows(P, _complexity(speedups), CEIL)
    trend_row = rows[0]
    assert trend_row["finding"] == "F.4" and trend_row["rule"].startswith("grows")
    assert trend_row["verdict"] == expected
    assert trend_row["ours_value"] == pytest.approx(speedups[64] / speedups[1])
    assert trend_row["paper_value"] == 64
    if expected == NOT_REPRODUCED:  # the reason names the regime and the ceilings, in this frame's numbers
        assert "the 1 MiB cache" in trend_row["reason"] and "the roofline bounds the speedup" in trend_row["reason"]


def test_memory_regime_counts_the_papers_state_factor_bytes():
    """Paper §4.2's S: "S× as many global memory loads and stores". An unfused step that streams
    exactly 32·S + 16 bytes at the measured bandwidth reads as 1× the count; fusing K = 100 steps
    lifts the bound on the speedup to K where the compute ceiling allows it."""
    bw = CEIL["memory_bytes_per_s"]
    rows = []
    for s in (1, 1024):
        unfused = bw / (32 * s + 16)
        rows += _rows("cpp", {2**14: unfused}, steps=1, state_factor=s) + _rows("cpp", {2**14: 50 * unfused}, steps=100,
                                                                               state_factor=s)
    df = pd.DataFrame(rows)
    df.attrs["memory"] = {"num_envs": 2**14, "state_factor": (1, 1024), "steps": (1, 100), "llc_bytes": 2**20,
                          "llc_measured": True, "working_set": {s: 2**14 * (16 * s + 8) for s in (1, 1024)}}
    t = claims.memory_regime_table(df, CEIL).set_index("state_factor")
    assert t["counted_bytes"].to_dict() == {1: 48, 1024: 32784}
    assert t["bytes_ratio"].to_numpy() == pytest.approx([1.0, 1.0])  # time x bandwidth = the count
    assert t["speedup"].to_numpy() == pytest.approx([50.0, 50.0])
    assert t.loc[1024, "speedup_bound"] == pytest.approx(100)  # K: the state moves once per call
    compute = CEIL["fma_flops_per_s"] / costs.physics_flops(1, 1)
    assert t.loc[1, "speedup_bound"] == pytest.approx(compute / t.loc[1, "memory_ceiling"])  # compute binds


def test_f4_trend_in_cache_is_not_measured(tmp_path):
    P = _params("complexity", tmp_path, state_factor=[1, 64], compute_factor=[1])
    rows = claims.complexity_rows(P, _complexity({1: 4.0, 64: 256.0}, llc=2**40), CEIL)
    assert rows[0]["verdict"] == NOT_MEASURED and "never leaves the cache" in rows[0]["reason"]


@pytest.mark.parametrize("grid, expected", [({4: 2.0, 64: 2.2}, REPRODUCED), ({4: 13.7, 64: 2.0}, NOT_REPRODUCED)])
def test_f4_flat_in_n(grid, expected, tmp_path):
    P = _params("complexity", tmp_path, state_factor=[1, 64], compute_factor=[1])
    rows = claims.complexity_rows(P, _complexity({1: 4.0, 64: 8.0}, grid_speedup=grid), CEIL)
    flat = next(r for r in rows if r["rule"].startswith("flat"))
    assert flat["verdict"] == expected and bool(flat["reason"]) == (expected != REPRODUCED)


def test_findings_frame_contract(tmp_path, monkeypatch):
    """``findings`` gathers every chapter's rows in the columns the other pages read (plans replaced by
    synthetic frames: nothing is measured), for this machine named or not."""
    from studylib.harness.provenance import machine_key

    vec = _vectorization([1e4] * 3, [2e5] * 3, [1e5] * 3)
    monkeypatch.setattr(claims, "vectorization_data", lambda P: vec)
    monkeypatch.setattr(claims, "overheads_data", lambda P: pd.DataFrame(columns=vec.columns))
    monkeypatch.setattr(claims, "profile_data", lambda P: pd.DataFrame())
    monkeypatch.setattr(claims, "fusion_data", lambda P: pd.DataFrame(columns=vec.columns))
    monkeypatch.setattr(claims, "complexity_data", lambda P: _complexity({1: 4.6, 4: 4.3}))
    monkeypatch.setattr(claims, "roofline_data", lambda P: CEIL)
    for machine in (None, machine_key()):
        F = book.findings(preset="tiny", data_dir=tmp_path, machine=machine)
        assert list(F.columns) == claims.COLUMNS
        assert {"F.1", "F.4"} <= set(F["finding"]) and set(F["verdict"]) <= set(analysis.VERDICTS)
        assert (F.loc[F["finding"] == "F.3", "verdict"] == NOT_MEASURED).all()  # no fusion data: said, not hidden
        assert F["paper_value"].dtype == float
        assert F["ours_value"].notna().sum() == (F["verdict"] != NOT_MEASURED).sum()
        assert (F.loc[F["verdict"] != REPRODUCED, "reason"].str.len() > 20).all()
        assert (F.loc[F["verdict"] == REPRODUCED, "reason"] == "").all()
    assert "F.4" in book.findings_md(F) and "not reproduced here" in book.findings_md(F)


def test_memory_regime_n_from_the_cache_within_the_presets_bytes():
    from studylib.book.plans import memory_num_envs

    per_env = costs.unfused_bytes(1024) // 2  # 16 KiB of state and 8 bytes of counters
    assert memory_num_envs(1024, 32 * 2**20, 8) == 2**14  # 8x a 32 MiB cache: 256 MiB of state
    assert memory_num_envs(1024, 260 * 2**20, 8) == 2**18
    assert memory_num_envs(1024, 260 * 2**20, 8, max_bytes=2**30) == 2**15  # halved to fit the bound
    assert 2**15 * per_env <= 2**30 < 2**16 * per_env
