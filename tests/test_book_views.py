"""The numbers the chapters state, computed once in ``studylib.book`` (the pages only format them),
checked on frames made up for the purpose: each rule can come out either way."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from studylib.book.pages import model


def _validation(errors, copies=()):
    """``model_validation``-shaped rows: one per signed log2 error, F.1 then F.4."""
    rows = [{"finding": f, "impl": "cpp", "num_envs": 1, "steps": 1, "state_factor": 1, "compute_factor": 1,
             "policy": "none", "measured": 1.0, "predicted": 2.0 ** e, "log2_error": e, "dominant": "compute",
             "arithmetic_grows_with_s": i in copies} for i, (f, e) in enumerate(errors)]
    return pd.DataFrame(rows)


def test_validation_summary_is_the_error_tables_median_and_its_2x_rule_can_fail():
    v = _validation([("F.1", 0.5), ("F.1", -3.0), ("F.4", 0.25), ("F.4", 2.0), ("F.4", -0.75)], copies=(3, 4))
    s = model.validation_summary(v)
    assert s.points == 5 and s.median_error == pytest.approx(0.75) and s.within_2x
    assert s.per_finding == (("F.1", 1.75, 3.0), ("F.4", 0.75, 2.0))
    assert s.copies == 2 and s.copies_median == pytest.approx(0.625)
    far = model.validation_summary(_validation([("F.2", 1.5), ("F.2", -2.0), ("F.3", 0.1)]))
    assert far.median_error == pytest.approx(1.5) and not far.within_2x
    assert far.copies == 0 and far.copies_median is None


def test_paper_agreement_splits_at_2x():
    paper = pd.DataFrame({"quantity": ["a", "b", "c"], "|log2 ratio|": [0.2, 1.0, 1.01]})
    ok, far = model.paper_agreement(paper)
    assert list(ok["quantity"]) == ["a", "b"] and list(far["quantity"]) == ["c"]


def _conformance(error=1e-7, obs=True, carried=True):
    from studylib.book.pages.cartpole import FLOAT32_EPS

    rows = [("gym", 1, 1, 1e-16, 1e-15, "—"), ("cpp", 1, 1, 3e-8, 4 * FLOAT32_EPS, "—"),
            ("jax", 4, 8, error, 2e-7, carried)]
    return pd.DataFrame([{"impl": i, "S": s, "C": c, "N": 8, "max |error|": e, "max relative error": r,
                          "carried floats exact": ca, "observations match": obs, "reward": 1.0}
                         for i, s, c, e, r, ca in rows])


def test_conformance_summary_names_the_worst_and_each_check_can_fail():
    from studylib.book.pages import cartpole

    s = cartpole.conformance_summary(_conformance())
    assert s.checks == 3 and s.agree
    assert s.worst == {"impl": "jax", "S": 4, "C": 8, "error": 1e-7}
    assert (s.worst_relative["impl"], s.roundings) == ("cpp", pytest.approx(4.0))
    assert not cartpole.conformance_summary(_conformance(error=2e-5)).agree  # beyond float32 precision
    assert not cartpole.conformance_summary(_conformance(obs=False)).agree
    assert not cartpole.conformance_summary(_conformance(carried=False)).agree


def test_conformance_of_gymnasium_itself_is_exact():
    from studylib.book.pages import cartpole

    conf = cartpole.conformance(["gym"], 4)
    assert list(zip(conf["S"], conf["C"])) == list(cartpole.KNOBS)
    assert cartpole.conformance_summary(conf).agree


def _gap(slower, more_work):
    from studylib.book.pages import brax

    sims = [brax.CARTPOLE] + [f"env{i}" for i in range(len(slower))]
    slower, more_work = [1.0, *slower], [1.0, *more_work]
    return pd.DataFrame({"simulator": sims, "N": "2^10", "K": 10, "samples_per_s": [1e6 / s for s in slower],
                         "slower": slower, "more_work": more_work,
                         "time_per_flop": [s / w for s, w in zip(slower, more_work)]})


@pytest.mark.parametrize("slower, work, share, explained", [
    ([100.0, 10.0], [100.0, 20.0], 1.0, "all"),  # env0: log 100 / log 100; env1 more than covered
    ([100.0], [10.0], 0.5, "most"),
    ([1000.0], [10.0], 1 / 3, "little"),
])
def test_brax_gap_summary_states_the_share_the_work_explains(slower, work, share, explained):
    from studylib.book.pages import brax

    g = brax.brax_gap_summary(_gap(slower, work))
    assert g.work_share == pytest.approx(share) and g.explained == explained
    assert g.slower == (min(slower), max(slower)) and (g.num_envs, g.steps) == ("2^10", 10)


def test_brax_gap_summary_without_counted_work_or_brax_rows():
    from studylib.book.pages import brax

    g = brax.brax_gap_summary(_gap([4.0], [np.nan]))
    assert g.more_work is None and g.work_share is None and g.explained is None and g.slower == (4.0, 4.0)
    assert brax.brax_gap_summary(_gap([], [])) is None


def test_ratios_to_paper_divides_ours_by_the_papers_and_drops_the_unmeasured():
    from studylib.book.pages import machines

    F = pd.DataFrame({"machine": ["a", "a", "b", "b"], "preset": "default", "finding": ["F.2", "F.1", "F.1", "F.1"],
                      "paper source": ["§3.4", "§3.3", "§3.3", "§3.3"], "paper": ["13×", "1024×", "1024×", "4×"],
                      "ours_value": [26.0, 64.0, np.nan, 0.0], "paper_value": [13.0, 1024.0, 1024.0, 4.0]})
    r = machines.ratios_to_paper(F)
    assert list(r["ratio"]) == [2.0, 1 / 16]  # b's rows: not measured, and no positive ratio
    assert list(r["who"]) == ["a (default)", "a (default)"]
    assert r.attrs["claims"] == ["F.1 · §3.3 · paper 1024×", "F.2 · §3.4 · paper 13×"]
    assert machines.ratios_to_paper(F.iloc[:0]).empty


def _fig4():
    """gym at N = 1, 16; cpp and jax at two K each; jax's best K differs per N."""
    rows = [("gym", 1, 1, 100.0), ("gym", 16, 1, 200.0), ("cpp", 1, 1, 50.0), ("cpp", 16, 1, 800.0),
            ("cpp", 256, 1, 880.0), ("jax", 1, 1, 10.0), ("jax", 1, 100, 400.0), ("jax", 16, 1, 2000.0),
            ("jax", 16, 100, 1000.0), ("jax", 256, 100, 4000.0)]
    return pd.DataFrame([{"impl": i, "num_envs": n, "steps": k, "samples_per_s": r, "samples_per_s_min": r * 0.9,
                          "samples_per_s_max": r * 1.1} for i, n, k, r in rows])


def test_speedup_over_gym_is_each_best_over_gyms_at_the_same_n():
    from studylib.book.pages import vectorization

    sp = vectorization.speedup_over_gym(_fig4()).set_index(["impl", "num_envs"])
    assert sp["speedup"].to_dict() == pytest.approx({("cpp", 1): 0.5, ("cpp", 16): 4.0, ("jax", 1): 4.0,
                                                     ("jax", 16): 10.0})  # N = 256: gym not measured there
    assert sp.loc[("jax", 16), "low"] == pytest.approx(10 * 0.9 / 1.1)
    assert vectorization.speedup_over_gym(_fig4()).attrs["gym_largest_n"] == 16
    assert vectorization.speedup_over_gym(_fig4().query("impl != 'gym'")).empty


def test_plateaus_are_the_smallest_n_within_90_percent_of_the_best():
    from studylib.book.pages import vectorization

    plat = vectorization.plateaus(_fig4(), ["gym", "cpp", "jax", "torch"]).set_index("impl")
    assert list(plat.index) == ["gym", "cpp", "jax"]  # torch not measured
    assert plat.loc["cpp", "best samples/s"] == 880.0 and plat.loc["cpp", "at N"] == "2^8"
    assert plat.loc["cpp", "plateau from N (90 %)"] == "2^4"  # 800 >= 0.9 * 880
    assert plat.loc["jax", "plateau from N (90 %)"] == "2^8"  # 2000 < 0.9 * 4000
    assert plat.loc["gym", "paper's plateau (GPU for torch/jax)"] == "2^16"


def test_against_ceilings_divides_by_the_smaller_ceiling_and_fusion_bound_is_balance_over_intensity():
    from studylib import costs
    from studylib.book.pages import beyond

    ceil = {"fma_flops_per_s": 1e11, "memory_bytes_per_s": 1e10, "gemm_steps_per_s": {}}
    memory = 1e10 / costs.unfused_bytes(1)  # an unfused step's memory ceiling (steps/s)
    d = pd.DataFrame([{"impl": i, "policy": "none", "num_envs": 1024, "steps": k, "state_factor": 1,
                       "compute_factor": 1, "samples_per_s": r}
                      for i, k, r in [("torch", 1, memory / 4), ("cpp", 1, memory / 2), ("fused", 100, memory)]])
    roof = beyond.against_ceilings(d, ceil).set_index("impl")
    assert roof.loc["torch", "bound"] == "memory" and roof.loc["torch", "fraction"] == pytest.approx(0.25)
    assert roof.loc["fused", "in_cache"] and roof.loc["fused", "bound"] == "compute"  # K steps on a block in cache
    assert roof.loc["fused", "fraction"] == pytest.approx(memory / (1e11 / costs.step_flops(1, 1)))
    assert list(beyond.closest_to_ceiling(roof.reset_index())["impl"]) == ["cpp", "torch", "fused"]
    assert beyond.best_in_cache(roof) == pytest.approx(roof.loc["fused", "fraction"])
    assert beyond.best_in_cache(roof[~roof["in_cache"]]) is None
    b = beyond.fusion_bound(ceil, {"fp32_flops_per_s": 8e12, "memory_bytes_per_s": 4e11})
    assert (b.here_balance, b.gpu_balance) == pytest.approx((10.0, 20.0))
    assert b.here == pytest.approx(10.0 / costs.arithmetic_intensity(1, 1, "none")) and b.gpu == pytest.approx(2 * b.here)
    assert beyond.longest_compile(pd.DataFrame({"impl": ["torch-compile", "torch-compile", "jax"],
                                                "compile_s": [1.5, 4.0, 9.0]})) == 4.0


def test_mlp_port_bound_sets_the_best_fused_cpu_row_with_the_mlp_beside_its_isas_cap():
    """Only rows that run the MLP in a kernel holding their block in cache on the CPU count: not the
    unfused ones, not the fused kernel without the MLP, not a GPU's."""
    from studylib import costs
    from studylib.book.pages import beyond

    ceil = {"fma_flops_per_s": 1e11, "memory_bytes_per_s": 1e10, "gemm_steps_per_s": {}}
    compute = 1e11 / costs.step_flops(1, 1, "mlp")  # the compute ceiling of a step with the MLP (steps/s)
    d = pd.DataFrame([{"impl": i, "policy": pol, "device": dev, "num_envs": 2**16, "steps": k, "state_factor": 1,
                       "compute_factor": 1, "samples_per_s": f * compute}
                      for i, pol, dev, k, f in [("fused", "mlp", "cpu", 100, 0.5), ("fused", "mlp", "cpu", 1000, 0.6),
                                                ("fused", "none", "cpu", 100, 0.9), ("jax", "mlp", "cpu", 100, 0.7),
                                                ("fused", "mlp", "cuda", 100, 0.8)]])
    roof = beyond.against_ceilings(d, ceil)
    m = beyond.mlp_port_bound(roof, "avx512")
    assert (m.operations, m.bound) == (13, pytest.approx(costs.fma_port_bound(13)))
    assert m.best == pytest.approx(0.6) and m.share_of_bound == pytest.approx(0.6 / costs.fma_port_bound(13))
    assert m.tanh.label == "AVX-512"
    unknown = beyond.mlp_port_bound(roof, None)
    assert unknown.tanh is None and unknown.operations == costs.MLP_TANH_OPERATIONS
    unfused = beyond.mlp_port_bound(roof[roof["impl"] == "jax"], "avx2")
    assert unfused.best is None and unfused.share_of_bound is None and unfused.operations == 12


def _profile(impl="jax", total=2.0, unprofiled=1.0, python=0.8, backend=0.4, device=0.8):
    return {"impl": impl, "steps": 1, "total_s": total, "total_s_unprofiled": unprofiled, "python_s": python,
            "backend_s": backend, "device_s": device}


def test_profile_shares_bounds_and_fig5_bars():
    from studylib.book.pages import overheads

    prof = overheads.with_shares(pd.DataFrame([_profile(), _profile("torch", total=1.0, unprofiled=1.0, python=0.5,
                                                                     backend=0.25, device=0.25)]))
    jax, torch = prof.iloc[0], prof.iloc[1]
    assert (jax["slowdown"], jax["cpu_share"]) == pytest.approx((2.0, 0.6))
    assert (jax["cpu_share_low"], jax["cpu_share_high"]) == pytest.approx((0.2, 1.0))  # the profiler doubled the call
    assert torch["cpu_share_low"] == torch["cpu_share_high"] == pytest.approx(0.75)  # no slowdown: closed interval
    parts = overheads.fig5_parts(prof)
    ours = parts[parts["K"] == "1"].groupby("impl")["share"].sum()
    assert ours.to_dict() == pytest.approx({"jax": 1.0, "torch": 1.0})
    paper = parts[parts["K"] == "paper K=1"].set_index("part")["share"]
    assert paper["Python"] == pytest.approx(0.57) and paper.sum() == pytest.approx(1.0)  # §3.4: 57 % + 30 %
    assert "paper K=1" not in set(overheads.fig5_parts(prof[prof["impl"] == "torch"])["K"])  # no jax: no paper bar
    assert overheads.slowdown_range(prof).loc["jax"].tolist() == [2.0, 2.0]


def test_fusion_speedup_lines_read_f3s_records_and_compute_the_others():
    from studylib.book.claims import findings as claims
    from studylib.book.pages import fusion

    records = [claims.row("F.3", "speedup", "fused K 1→100", "f3_fusion", pd.Series({1: 2.0, 16: 8.0}), ""),
               claims.row("F.3", "speedup", "fused over jax", "f3_fused_over_xla", pd.Series({16: 3.0}), "")]
    df = pd.DataFrame([{"impl": "torch", "num_envs": n, "steps": k, "state_factor": 1, "compute_factor": 1,
                        "samples_per_s": r} for n, k, r in [(16, 1, 100.0), (16, 100, 150.0)]])
    sp = fusion.speedup_lines(df, records, ["fused", "torch", "jax"], "fused", 100)
    got = {(w, n): v for w, n, v in zip(sp["what"], sp["num_envs"], sp["speedup"])}
    assert got == pytest.approx({("fused K = 1 → 100", 1): 2.0, ("fused K = 1 → 100", 16): 8.0,
                                 ("torch K = 1 → 100", 16): 1.5, ("fused over jax at K = 100", 16): 3.0})
    assert set(sp["kind"]) == set(fusion.LINE_KINDS)  # jax: no record, no rows measured: no line


def test_verdict_counts_and_fig2s_best_rate():
    from studylib.book.pages import brax
    from studylib.book.claims import findings as claims

    from studylib.book.claims.analysis import NOT_REPRODUCED, PARTLY, REPRODUCED

    F = pd.DataFrame({"verdict": [REPRODUCED, NOT_REPRODUCED, REPRODUCED, PARTLY],
                      "borderline": ["", "one N", "", ""]})
    c = claims.verdict_counts(F)
    assert c == {REPRODUCED: 2, PARTLY: 1, NOT_REPRODUCED: 1, "borderline": 1}
    assert list(c)[:3] == [v for v in claims.VERDICTS if v in c]  # the verdicts' own order
    fig2 = pd.DataFrame({"env": ["a", "a", "b"], "samples_per_s": [1.0, 3.0, 5.0]})
    assert brax.best_rate(fig2, "a") == 3.0 and np.isnan(brax.best_rate(fig2, "c"))


def test_where_fused_is_not_faster_names_its_n():
    from studylib.book.pages import beyond

    r = pd.DataFrame({"num_envs": [2**10, 2**13, 2**16], "ratio": [0.9, 1.2, 2.0], "low": [0.8, 0.95, 1.5]})
    text = beyond.where_not_faster(r)
    assert "not faster than `jax` at N = 2^10" in text and "at N = 2^13 its median ratio is above 1×" in text
    assert "2^16" not in text
    assert "at every N measured" in beyond.where_not_faster(r.assign(ratio=[1.1, 1.2, 2.0], low=[1.05, 1.1, 1.5]))
