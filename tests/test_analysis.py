"""The book's analysis on small synthetic frames: every rule gives each of its verdicts, the helpers
(trend, spread, plateau, speedups) compute what they say, and each findings row carries a reason
whenever it is not "reproduced"."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from studylib import book, costs
from studylib.book.claims import analysis, findings as claims
from studylib.book.claims.analysis import NOT_MEASURED, NOT_REPRODUCED, PARTLY, REPRODUCED
from tests.snapshot_cases import FINDINGS_SNAPSHOTS, ROOT  # the snapshots holding F.1–F.4's sweeps

# (rule, ours, paper) -> verdict: every verdict each rule can give
CASES = [
    ("speedup", 20.0, 13.4, REPRODUCED), ("speedup", 7.0, 13.4, REPRODUCED), ("speedup", 6.0, 53.8, PARTLY),
    ("speedup", 3.46, 53.8, NOT_REPRODUCED),  # the paper's direction, but more than 10x below its size
    ("speedup", 60.0, 11.3, PARTLY), ("speedup", 300.0, 11.3, NOT_REPRODUCED),
    ("speedup", 1.02, 11.3, NOT_REPRODUCED), ("speedup", 0.5, 11.3, NOT_REPRODUCED),
    ("speedup", None, 11.3, NOT_MEASURED), ("speedup", np.nan, 11.3, NOT_MEASURED),
    ("at most", 3.0, 4, REPRODUCED), ("at most", 4.1, 4, REPRODUCED), ("at most", 4.3, 4, NOT_REPRODUCED),
    ("at most", 27.6, 4, NOT_REPRODUCED),
    ("at most", 0.8, 4, NOT_REPRODUCED),  # slower than gym: the bound holds, the speedup does not
    ("majority share", 80, 87, REPRODUCED), ("majority share", 58, 87, PARTLY), ("majority share", 40, 87, NOT_REPRODUCED),
    ("grows", 64.0, 64, REPRODUCED), ("grows", 40.0, 64, REPRODUCED), ("grows", 10.0, 64, PARTLY),
    ("grows", 4.0, 64, NOT_REPRODUCED),
    ("grows", 1.1, 64, NOT_REPRODUCED), ("grows", 0.5, 64, NOT_REPRODUCED), ("grows", None, 64, NOT_MEASURED),
    ("flat", 1.3, 1, REPRODUCED), ("flat", 6.77, 1, NOT_REPRODUCED),
    ("vanishes", 1.2, 1, REPRODUCED), ("vanishes", 0.7, 1, REPRODUCED), ("vanishes", 5.0, 1, NOT_REPRODUCED),
    ("falls", 0.43, 1, REPRODUCED), ("falls", 1 / 1.5, 1, REPRODUCED), ("falls", 0.7, 1, NOT_REPRODUCED),
    ("falls", 1.3, 1, NOT_REPRODUCED),
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
    assert bool(r["reason"]) == (expected != REPRODUCED) and r["summary"] == analysis.LARGEST
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


@pytest.mark.parametrize("speedups, expected", [({1: 4.0, 64: 256.0}, REPRODUCED), ({1: 4.0, 64: 40.0}, PARTLY),
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


def test_the_complexity_page_renders_numbers_computed_once(tmp_path):
    """The F.4 records carry the numbers the page states beside them (the memory regime's speedups at
    the smallest and largest S, the direction the rule read); the grid table's K = max, C = 1
    spread across N is the "flat" row's value."""
    P = _params("complexity", tmp_path, state_factor=[1, 64], compute_factor=[1])
    df = _complexity({1: 4.0, 64: 40.0}, grid_speedup={4: 13.7, 64: 2.0})
    rows = claims.complexity_rows(P, df, CEIL)
    t = claims.memory_regime_table(df, CEIL)
    g = rows[0].numbers
    assert (g["speedup_low"], g["speedup_high"]) == pytest.approx((t["speedup"].iloc[0], t["speedup"].iloc[-1]))
    assert g["growth"] == pytest.approx(rows[0].value) and g["direction"] == analysis.trend_direction(rows[0].value)
    grid = claims.fusion_grid(df, P)
    at = grid[(grid["K"] == grid["K"].max()) & (grid["C"] == 1)].iloc[0]
    flat = next(r for r in rows if r.rule == "flat")
    assert at["max/min across N"] == pytest.approx(flat.value)
    assert at["smallest S"] == at["largest S"] == 1 and at["direction"] == ""  # one S in this grid: no trend stated
    llc = df.attrs["memory"]["llc_bytes"]
    assert grid.attrs["largest_cache_multiple"] == pytest.approx(grid.attrs["largest_working_set"] / llc)
    assert claims.cache_multiple({"llc_bytes": 2**20}, 3 * 2**20) == 3.0
    two_s = claims.fusion_grid(pd.concat([df, df.assign(state_factor=64, samples_per_s=df["samples_per_s"] / 2)
                                          .assign(samples_per_s=lambda d: d["samples_per_s"] * d["steps"].map({1: 1, 100: 8}))]), P)
    r = two_s[two_s["K"] == 100].iloc[0]
    assert r["direction"] == analysis.trend_direction(r["speedup at largest S"] / r["speedup at smallest S"]) == "grows"


def test_memory_traffic_agrees_only_within_its_factor():
    mem = pd.DataFrame({"state_factor": [1, 64], "cache_multiple": [0.5, 4.0], "measured_bytes": [100.0, 3000.0],
                        "counted_bytes": [48, 2064], "bytes_ratio": [100 / 48, 3000 / 2064]})
    t = claims.memory_traffic(mem)
    assert t["state_factor"] == 64 and t["agrees"]  # the largest S out of the cache
    assert not claims.memory_traffic(mem.assign(bytes_ratio=[1.0, claims.BYTES_FACTOR * 1.01]))["agrees"]
    assert not claims.memory_traffic(mem.assign(bytes_ratio=[1.0, 0.99 / claims.BYTES_FACTOR]))["agrees"]
    assert claims.memory_traffic(mem[mem["cache_multiple"] < 1]) == {}  # nothing out of the cache: nothing said


def test_fig6_pattern_matches_only_constant_calls_and_kernels_linear_in_k():
    """Paper Fig 6: "Python→XLA API calls (Backend) remain constant ... GPU kernel launches (CUDA)
    increase linearly"."""
    def prof(calls, launches):
        return pd.DataFrame({"impl": "jax", "steps": [1, 100], "backend_calls": calls, "kernel_launches": launches,
                             "backend_calls_per_step": [calls[0], calls[1] / 100],
                             "kernel_launches_per_step": [launches[0], launches[1] / 100]})

    assert claims.fig6_pattern(prof([2, 2], [50, 5000]))["matches"]
    assert not claims.fig6_pattern(prof([2, 200], [50, 5000]))["matches"]  # calls grow with K
    assert not claims.fig6_pattern(prof([2, 2], [50, 60]))["matches"]  # kernels fused across steps
    eager = claims.fig6_pattern(prof([60, 6000], [50, 5000]).assign(impl="torch"), "torch")
    assert eager["calls_linear"] and not eager["matches"]
    assert claims.fig6_pattern(pd.DataFrame()) == {}


def test_beyond_ratios_and_the_share_of_the_gap_closed():
    from studylib.book.pages import beyond

    d = pd.DataFrame(_rows("torch", {4: 1e4, 2**14: 2e4}, samples_per_s_min=0.5e4, samples_per_s_max=2e4)
                     + _rows("torch-compile", {4: 3e4, 2**14: 2e4}) + _rows("jax", {4: 5e4, 2**14: 4e4}))
    gap = beyond.compile_gap(d).set_index("num_envs")
    assert gap["share of the gap closed"].to_dict() == pytest.approx({4: 0.5, 2**14: 0.0})  # (3 - 1) / (5 - 1)
    assert gap.attrs["small"]["count"] == 1 and gap.attrs["best_n"] == 4
    r = beyond.ratio_with_spread(d, "jax", "torch").set_index("num_envs")
    assert r.loc[4, "ratio"] == pytest.approx(5) and r.loc[4, "low"] == pytest.approx(2.5)  # jax over torch's fastest
    assert r.loc[4, "high"] == pytest.approx(10) and r.loc[4, "b_spread"] == pytest.approx(1.5)
    assert beyond.compile_gap(d[d["impl"] != "jax"]).empty
    assert beyond.against_gemm(d, {2**14: 8e4}, "jax")["over_gemm"] == pytest.approx(0.5)


def test_findings_frame_contract(tmp_path, monkeypatch):
    """``findings`` gathers every chapter's rows in the columns the other pages read (plans replaced by
    synthetic frames: nothing is measured), for this machine named or not."""
    from studylib.harness.data.provenance import machine_key

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


# ---- rules: the description is the code --------------------------------------------------------------

@pytest.mark.parametrize("name", list(analysis.RULES))
def test_each_rule_judges_as_its_description_says(name):
    """Every limit the description prints is where the code's verdict changes: just below a band's
    limit the value gets that band's verdict (or an earlier band's, if the band is empty there)."""
    rule = analysis.RULES[name]
    paper = 87.0 if name == "majority share" else 13.4
    text = rule.description
    limits = []
    for i, band in enumerate(rule.bands[:-1]):
        assert band.limit_text(rule.unit) in text and band.verdict in text and band.why in text
        lim = band.limit(paper)
        limits.append(lim)
        if any(lim <= prev for prev in limits[:-1]):
            continue  # an empty band for this paper value
        below, above = lim * (1 - 1e-6), lim * (1 + 1e-6)
        assert rule.level(below, paper) == band.verdict, (name, lim)
        at = rule.level(lim, paper)
        assert at == (band.verdict if band.inclusive else rule.level(above, paper)), (name, lim)
        nxt = next(b for b in rule.bands[i + 1:] if b.limit(paper) > lim)
        assert rule.level(above, paper) == nxt.verdict, (name, lim)


def test_at_most_says_its_noise_allowance():
    """The bound's allowance for timing noise is in the text as in the code (it once said "≤ the
    paper's bound" while accepting 1.05x of it)."""
    rule = analysis.RULES["at most"]
    assert f"≤ {analysis.NO_SPEEDUP:g} × the paper's" in rule.description
    assert analysis.verdict("at most", 4 * analysis.NO_SPEEDUP * 0.999, 4) == REPRODUCED
    assert analysis.verdict("at most", 4 * analysis.NO_SPEEDUP * 1.001, 4) == NOT_REPRODUCED


# ---- judging a quantity over N ---------------------------------------------------------------------------

def _n(*values):
    return pd.Series(values, index=[2**(4 * i + 4) for i in range(len(values))], dtype=float)


def test_one_outlying_n_cannot_make_a_finding_reproduced():
    paper = 13.39
    per_n = _n(1.6, 1.7, 1.8, 90.0)  # one N far above the rest: its mean, 23.8x, is within 2x of the paper's
    assert analysis.verdict("speedup", per_n.mean(), paper) == REPRODUCED  # what a mean would have said
    j = analysis.judge("speedup", paper, per_n)
    assert j.verdict == PARTLY and j.value == pytest.approx(1.75) and (j.low, j.high) == (1.6, 90.0)
    j = analysis.judge("speedup", paper, _n(1.2, 1.3, 90.0))  # the same with an odd count
    assert j.verdict == NOT_REPRODUCED and j.value == 1.3


def test_reproduced_needs_every_n():
    j = analysis.judge("speedup", 11.3, _n(10.0, 12.0, 14.0, 200.0))  # median 13 within 2x; 200x is not
    assert j.verdict == PARTLY and j.failing_n == (2**16,)
    r = claims.row("F.3", "speedup", "q", "f3_fusion", _n(10.0, 12.0, 14.0, 200.0), "because")
    assert r.verdict == PARTLY and "N = 2^16 (200×)" in r.reason and r.reason.endswith("because")
    assert analysis.judge("speedup", 11.3, _n(10.0, 12.0, 14.0, 20.0)).verdict == REPRODUCED
    j = analysis.judge("vanishes", 1, _n(1.1, 1.2, 3.0))  # no "partly" in this rule: not reproduced
    assert j.verdict == NOT_REPRODUCED and j.failing_n == (2**12,)


def test_a_verdict_carried_by_one_n_is_borderline():
    j = analysis.judge("speedup", 13.39, _n(3.0, 5.0, 5.5))  # median 5: partly, and without any one N
    assert j.verdict == PARTLY and not j.borderline and not j.unstable_n
    j = analysis.judge("speedup", 13.39, _n(1.0, 1.2, 2.0))  # median 1.2: over 10x below; without 2^4, 1.6: partly
    assert j.verdict == NOT_REPRODUCED and j.unstable_n == (2**4, 2**8)
    assert "without N = 2^4: partly reproduced" in j.borderline
    j = analysis.judge("speedup", 1024, _n(8.0, 120.0), summary=analysis.LARGEST)  # "up to": the largest N carries it
    assert j.verdict == PARTLY and j.unstable_n == (2**8,) and j.value == 120.0
    j = analysis.judge("vanishes", 1, _n(1.46))  # a quantity over N measured at one N: nothing backs it
    assert j.verdict == REPRODUCED and j.borderline == "measured at one N only (N = 2^4)"
    assert j.summary == analysis.ONE_N and j.num_n == 1


def test_a_summary_over_n_of_one_n_is_labelled_one_point():
    """A "median over N" that found one N says so: the quantity names the N, the table shows no
    min–max, and the summary column reads "one N only" (the paper's F.4 row at the largest C, where
    the work cap leaves one N)."""
    one = claims.row("F.4", "vanishes", "fusion speedup at K = 1000, largest C = 1024, S = 1, median over N",
                     "f4_speedup_c_max", _n(1.46), "")
    assert one.quantity == ("fusion speedup at K = 1000, largest C = 1024, S = 1 at N = 2^4 only "
                            "(one point: no spread over N)")
    assert "median" not in one.quantity and one.over_n == "" and one["summary"] == analysis.ONE_N
    small = claims.row("F.2", "speedup", "jax over torch, median over N ≤ 2^13", "f2_xla_over_torch", _n(3.0), "")
    assert small.quantity == "jax over torch at N = 2^4 only (one point: no spread over N)"
    two = claims.row("F.4", "vanishes", "q, median over N", "f4_speedup_c_max", _n(1.46, 1.5), "")
    assert two.quantity == "q, median over N" and two.over_n.endswith("over 2 N")


def test_a_value_within_its_repeats_of_a_limit_is_borderline():
    per_n = _n(6.5, 6.8, 7.0)  # median 6.8: within 2x of 13.39 (limit 6.695)
    low, high = per_n * 0.95, per_n * 1.05
    j = analysis.judge("speedup", 13.39, per_n, low=low, high=high)
    assert j.verdict == PARTLY  # 6.5 at the first N is more than 2x below
    j = analysis.judge("speedup", 13.39, _n(6.8, 6.9, 7.0), low=_n(6.5, 6.6, 6.6), high=_n(7.0, 7.1, 7.2))
    assert j.verdict == REPRODUCED and "low end of the repeats" in j.borderline
    j = analysis.judge("speedup", 13.39, _n(6.8, 6.9, 7.0), low=_n(6.75, 6.8, 6.9), high=_n(7.0, 7.1, 7.2))
    assert j.verdict == REPRODUCED and not j.borderline
    j = analysis.judge("majority share", 87, 44.0, margin=analysis.SINGLE_RUN_SHARE_MARGIN)  # one profiled run
    assert j.verdict == NOT_REPRODUCED and "partly reproduced" in j.borderline
    assert not analysis.judge("majority share", 87, 20.0, margin=analysis.SINGLE_RUN_SHARE_MARGIN).borderline


def test_ratio_by_n_carries_the_repeats():
    a = pd.DataFrame({"value": [10.0, 20.0], "low": [9.0, 18.0], "high": [11.0, 21.0]}, index=[4, 64])
    b = pd.DataFrame({"value": [2.0], "low": [1.8], "high": [2.5]}, index=[4])
    r = analysis.ratio_by_n(a, b)
    assert r.index.tolist() == [4] and r.iloc[0].tolist() == pytest.approx([5.0, 9.0 / 2.5, 11.0 / 1.8])
    d = pd.DataFrame(_rows("cpp", {8: 10.0}) + _rows("cpp", {8: 12.0}))  # two rows of one N, no repeats columns
    assert analysis.rates_by_n(d).loc[8].tolist() == [11.0, 10.0, 12.0]


# ---- the committed snapshots: no verdict carried by one N, unmarked ---------------------------------------



@pytest.fixture(scope="module")
def snapshot_frames():
    """Each committed snapshot's chapter frames, read once without measuring."""
    from studylib.harness.sweep import READ_ONLY, session

    out = {}
    with session(engine=READ_ONLY):
        for key in FINDINGS_SNAPSHOTS:
            P = {ch: book.params(ch, preset="default", data_dir=ROOT / "data", machine=key)
                 for ch in ("vectorization", "overheads", "fusion", "complexity")}
            out[key] = (P, {"v": book.vectorization_data(P["vectorization"]), "o": book.overheads_data(P["overheads"]),
                            "prof": book.profile_data(P["overheads"]), "f": book.fusion_data(P["fusion"]),
                            "c": book.complexity_data(P["complexity"]), "ceil": book.roofline_data(P["complexity"])})
            for name in ("v", "o", "f", "c"):  # pandas deep-copies attrs on every selection: keep what claims reads
                df = out[key][1][name]
                df.attrs = {k: v for k, v in df.attrs.items() if k == "memory"}
    return out


CHAPTER_ROWS = {"v": lambda P, d, df: claims.vectorization_rows(P["vectorization"], df),
                "o": lambda P, d, df: claims.overheads_rows(P["overheads"], df, d["prof"]),
                "f": lambda P, d, df: claims.fusion_rows(P["fusion"], df),
                "c": lambda P, d, df: claims.complexity_rows(P["complexity"], df, d["ceil"])}


def _without(df, n):
    out = df[df["num_envs"] != n]
    out.attrs = df.attrs
    return out


@pytest.mark.parametrize("key", FINDINGS_SNAPSHOTS)
def test_dropping_one_n_changes_no_unmarked_verdict(key, snapshot_frames):
    """Leave each N out of the snapshot's data in turn and recompute every finding from the rest: a
    verdict that changes must be one the table marks borderline, naming that N."""
    P, d = snapshot_frames[key]
    full = {r.key: r for name, rows in CHAPTER_ROWS.items() for r in rows(P, d, d[name])}
    assert len(full) >= 10 and all(isinstance(r, claims.Finding) for r in full.values())
    checked = 0
    for name, rows in CHAPTER_ROWS.items():
        for n in sorted(set(d[name]["num_envs"])):
            for r in rows(P, d, _without(d[name], n)):
                checked += 1
                if r.verdict != full[r.key].verdict and r.verdict != NOT_MEASURED:
                    was = full[r.key].verdict
                    assert full[r.key].borderline, f"{key}: {r.key} is {was}, without N = {n} {r.verdict}"
                    assert n in full[r.key].judgement.unstable_n or full[r.key].judgement.summary in (
                        analysis.ONE_VALUE, analysis.ONE_N)
    assert checked > 20


def test_a_reason_opens_with_the_band_that_decided():
    r = claims.row("F.2", "speedup", "q", "f2_xla_k1_to_k1000", _n(2.0, 3.46, 5.0), "a step's compute dominates")
    assert r.verdict == NOT_REPRODUCED
    assert r.reason == "faster, but more than 10× short of the paper's: a step's compute dominates"
    assert r.over_n == "2×–5× over 3 N" and r.as_row()["ours"] == "3.46×" and r["verdict"] == r.verdict
    assert claims.row("F.2", "speedup", "q", "f2_xla_k1_to_k1000", _n(40.0, 50.0), "x").reason == ""
