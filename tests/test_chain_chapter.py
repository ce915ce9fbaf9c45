"""The chain chapter's package side (studylib/book/pages/chain/, claims_chain.py, harness/chain_study.py):
predictions saved before measurements and never rewritten, the comparison of the two, the fused
vs XLA table, and F.1–F.3 judged per n on synthetic rows whose verdicts are known."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from studylib import book
from studylib.book.claims import chain as claims_chain
from studylib.book.pages import chain
from studylib.book.pages.chain import model_check
from studylib.errors import ConfigError
from studylib.harness.data import provenance
from studylib.harness.model import costmodel
from studylib.harness.model.costmodel import Counts
from studylib.harness.robotics import chain_study
from tests.test_costmodel import SYNTH


@pytest.fixture
def tiny(tmp_path):
    return book.params("chain", preset="tiny", data_dir=tmp_path, impls=["cpp", "jax"], links=[1], num_envs=[4],
                       steps=[1, 4])


def _stored(tmp_path, name):
    return json.loads((tmp_path / provenance.machine_key() / f"{name}.json").read_text())["rows"]


def test_predictions_come_first_and_are_never_rewritten(tiny, tmp_path, monkeypatch):
    counts = Counts({**SYNTH.counts.table})
    machine = dataclasses.replace(SYNTH, counts=counts)
    monkeypatch.setattr("studylib.book.pages.model.model_machine", lambda P: machine)
    seen = []

    def measure_after_predicting(name, P, points, dropped=()):
        seen.append(len(_stored(tmp_path, chain_study.PREDICTIONS)))  # the predictions are on disk already
        return pd.DataFrame()

    monkeypatch.setattr(chain, "_measured", measure_after_predicting)
    predicted, _ = chain.chain_data(tiny)
    assert seen == [len(predicted)] == [4] and set(predicted["impl"]) == {"cpp", "jax"}
    first = _stored(tmp_path, chain_study.PREDICTIONS)
    faster = dataclasses.replace(machine, host=dataclasses.replace(machine.host, native_call_s=1e-12))
    monkeypatch.setattr("studylib.book.pages.model.model_machine", lambda P: faster)
    again = chain.chain_predictions(tiny)
    assert _stored(tmp_path, chain_study.PREDICTIONS) == first  # a saved prediction stands
    assert list(again["predicted_samples_per_s"]) == [r["predicted_samples_per_s"] for r in first]
    assert all(r["counts"]["calls_per_call"] >= 0 and r["flops_per_step"] == 740 for r in first)


def test_the_gym_rows_prediction_is_gymnasiums_python_and_mujocos_timer(monkeypatch):
    """A gym point of the chain (model version 2): its Python term is N × (gymnasium's MujocoEnv
    Python + frame_skip × MuJoCo's timer of one mj_step of the chain's MJCF), both in its row."""
    from studylib.harness.robotics.chain_study import predict_point, reference_step_seconds
    from studylib.settings import MeasurePoint
    from studylib.sims.chain import ChainParams, chain_mjcf

    machine = dataclasses.replace(SYNTH, host=dataclasses.replace(SYNTH.host, gym_mujoco_python_s=20e-6))
    p = ChainParams(links=1)
    row = predict_point(MeasurePoint.of("gym", 16, 1, policy="none", sim="chain", params=p), machine, {})
    step_s = reference_step_seconds(chain_mjcf(1, p), p.frame_skip)
    assert row["model_version"] == costmodel.VERSION >= 2 and row["reference_step_s"] == step_s
    assert 1e-6 < step_s / p.frame_skip < 1e-3  # one mj_step of a two-body chain: microseconds
    assert row["terms"]["python"] == pytest.approx(16 * (20e-6 + step_s))
    other = predict_point(MeasurePoint.of("cpp", 16, 1, policy="none", sim="chain", params=p), machine, {})
    assert other["reference_step_s"] is None  # MuJoCo's timer prices the gym row only
    # the physics priced is frame_skip x MuJoCo's timer of the given MJCF (a chain of n + 1 coordinates),
    # checked by its structure, not by timing two sizes against each other (a loaded machine reorders them)
    from studylib.harness.robotics import engines

    seen = []
    monkeypatch.setattr(engines, "reference_run", lambda m, *args: seen.append(m.nq) or (0.0, 1e-5))
    deeper = ChainParams(links=6)
    assert reference_step_seconds.__wrapped__(chain_mjcf(6, deeper), deeper.frame_skip) == pytest.approx(
        deeper.frame_skip * 1e-5)
    assert seen == [7]


def _rows(impl, links, rates, policy="none"):
    """Rows of one implementation: {(N, K): samples/s}, repeats ±1 %."""
    return [{"impl": impl, "policy": policy, "links": links, "num_envs": n, "steps": k, "samples_per_s": v, "state_factor": 1,
             "compute_factor": 1, "samples_per_s_min": 0.99 * v, "samples_per_s_max": 1.01 * v,
             "seconds_per_repeat": 0.1, "calls_per_repeat": max(1, int(0.1 * v / (n * k)))}
            for (n, k), v in rates.items()]


def test_prediction_errors_and_their_summary():
    predicted = pd.DataFrame([{"impl": "cpp", "policy": "none", "links": 2, "num_envs": 16, "steps": 1,
                               "predicted_samples_per_s": 4e6, "regime": "compute-bound"},
                              {"impl": "cpp", "policy": "none", "links": 2, "num_envs": 256, "steps": 1,
                               "predicted_samples_per_s": 1e6, "regime": "compute-bound"},
                              {"impl": "cpp", "policy": "mlp", "links": 2, "num_envs": 16, "steps": 1,
                               "predicted_samples_per_s": 1e9, "regime": "compute-bound"}])
    measured = pd.DataFrame(_rows("cpp", 2, {(16, 1): 1e6, (256, 1): 1e6}))
    e = chain.prediction_errors(predicted, measured)
    assert list(e["log2_error"]) == [2.0, 0.0]  # a prediction of another policy's point is not this one's
    e = model_check.version_errors(predicted, measured)  # saved before versions were recorded: version 1
    s = model_check.version_summary(e).iloc[0]
    assert (s["model_version"], s["impl"], s["points"], s["median"], s["within 2x"]) == (1, "cpp", 2, 1.0, 0.5)
    assert s["right"]  # |median| 1.0 is within the rule's bound


def test_the_model_versions_are_summarized_apart_and_the_check_can_fail():
    """Each prediction's version is its own row of the summary; the out-of-sample sentence reads
    one version's points only, and says "not within 2x" where |median| exceeds the bound."""
    rows = [{"impl": "gym", "policy": "none", "links": n, "num_envs": 16, "steps": 1, "regime": "Python-bound",
             "predicted_samples_per_s": p, "model_version": v}
            for n, p, v in ((1, 16e4, 1), (2, 16e4, 1), (3, 2e4, 2), (6, 0.5e4, 2))]
    predicted = pd.DataFrame(rows)
    measured = pd.DataFrame(_rows("gym", 1, {(16, 1): 1e4}) + _rows("gym", 2, {(16, 1): 1e4})
                            + _rows("gym", 3, {(16, 1): 1e4}) + _rows("gym", 6, {(16, 1): 1e4}))
    e = model_check.version_errors(predicted, measured)
    s = model_check.version_summary(e)
    assert s[["model_version", "points", "median"]].values.tolist() == [[1, 2, 4.0], [2, 2, 0.0]]
    assert s["right"].tolist() == [False, True]
    assert "within 2× for every implementation" in model_check.check_sentence(e, 2)
    assert "n = 3, 6" in model_check.check_sentence(e, 2)
    assert "not within 2× for `gym`" in model_check.check_sentence(e, 1)
    assert model_check.check_sentence(e, 3) == ""  # no point of that version


def test_the_model_check_points_are_outside_the_default_grid_and_the_snapshots():
    """Each version's out-of-sample n are neither in the default preset's chain grid nor among the n
    a snapshot's wider run holds, nor in an earlier version's check: the default chapter never
    measures them (the paper preset measures version 2's, its predictions saved first as for
    every point), and no version is judged on points an earlier one saw measured."""
    from studylib.book.presets import CHAIN_SNAPSHOT_LINKS
    from studylib.harness.model import costmodel
    from studylib.harness.presets import PRESETS

    assert costmodel.VERSION in model_check.MODEL_CHECK_LINKS  # the current version has its check
    seen = set()
    for version, links in sorted(model_check.MODEL_CHECK_LINKS.items()):
        for grid in (PRESETS["default"]["chain"]["links"], PRESETS["tiny"]["chain"]["links"], CHAIN_SNAPSHOT_LINKS, seen):
            assert not set(links) & set(grid), (version, links)
        seen |= set(links)
    assert model_check.model_check_params(__import__("studylib").book.params("chain", preset="tiny"), 3).links == (5, 7)


def test_fused_over_xla_at_the_largest_common_k():
    measured = pd.DataFrame(_rows("cpp", 2, {(16, 1): 1e6, (16, 100): 2e7}) + _rows("jax", 2, {(16, 1): 1e5, (16, 100): 4e5}))
    table = chain.fused_over_xla(measured)
    fx = table.iloc[0]
    assert (table.attrs["fused"], table.attrs["xla"]) == ("cpp", "jax")  # from the records' dispatch
    assert (fx["steps"], fx["fused_over_xla"]) == (100, 50.0)
    assert fx["fused_gflop_per_s"] == pytest.approx(2e7 * 1760 / 1e9) and np.isnan(fx["fma_share"])
    measured = pd.concat([measured, pd.DataFrame(_rows("fused", 2, {(16, 1): 1e5, (16, 100): 1e6}, "mlp")
                                                 + _rows("jax", 2, {(16, 100): 2e5}, "mlp"))])
    table = chain.fused_over_xla(measured, fma_flops_per_s=1e11)
    mlp = table[table["policy"] == "mlp"].iloc[0]
    flops = 1760 + 2 * 9 * 64 + 64 + 2 * 64 * 64 + 64 + 2 * 64 + 1  # the chain's and the MLP's per step at n = 2
    assert (mlp["fused_impl"], mlp["fused_over_xla"]) == ("fused", 5.0)
    assert mlp["fma_share"] == pytest.approx(1e6 * flops / 1e11)


def test_findings_per_n_follow_the_rules():
    P = book.params("chain", preset="tiny", steps=[1, 100])
    rates = {}
    for impl, base, gain in (("gym", 1e3, 1.0), ("torch", 1e5, 1.0), ("jax", 1e5, 50.0), ("cpp", 1e7, 20.0)):
        for n in (16, 256):
            rates[impl] = {**rates.get(impl, {}), (n, 1): base * n / 16}
            if impl != "gym":
                rates[impl][(n, 100)] = base * n / 16 * gain
    measured = pd.DataFrame([r for impl, r_ in rates.items() for r in _rows(impl, 3, r_)])
    rows = {r.key: r for r in claims_chain.chain_findings(P, measured)}
    assert set(rows) == {"f1_gpu_over_gym", "f1_cpp_over_gym", "f2_xla_over_torch", "f3_fusion",
                         "f3_xla_k1_to_k1000", "f3_fused_over_xla"}
    assert all("chain n = 3" in r.quantity for r in rows.values())
    assert rows["f3_fusion"].value == pytest.approx(20.0) and rows["f3_xla_k1_to_k1000"].value == pytest.approx(50.0)
    assert rows["f1_cpp_over_gym"].value == pytest.approx(2e5) and rows["f1_cpp_over_gym"].verdict == "not reproduced here"
    assert rows["f2_xla_over_torch"].value == pytest.approx(50.0)
    assert rows["f3_fused_over_xla"].value == pytest.approx(1e7 * 20 / (1e5 * 50))
    assert not claims_chain.chain_findings(P, pd.DataFrame())


def test_with_the_mlp_the_findings_are_labelled_and_fusion_is_the_fused_kernel():
    """Under the MLP, cpp steps one call per step with the policy in PyTorch between (the paper's C++
    row of F.1), and F.3's manual fusion is the implementation whose record fuses the MLP (fused);
    each finding is labelled with its policy, and F.4's flops per byte count the MLP's under it."""
    P = book.params("chain", preset="tiny", steps=[1, 100])
    none = (_rows("gym", 2, {(16, 1): 1e3}) + _rows("cpp", 2, {(16, 1): 1e6, (16, 100): 2e7})
            + _rows("jax", 2, {(16, 1): 1e5, (16, 100): 4e5}))
    mlp = (_rows("gym", 2, {(16, 1): 5e2}, "mlp") + _rows("cpp", 2, {(16, 1): 1e5, (16, 100): 1e5}, "mlp")
           + _rows("fused", 2, {(16, 1): 2e5, (16, 100): 8e6}, "mlp") + _rows("jax", 2, {(16, 1): 5e4, (16, 100): 2e5}, "mlp"))
    labelled = claims_chain.labelled_findings(P, pd.DataFrame(none + mlp))
    by = {(name, f.key): f for name, f in labelled}
    assert {name for name, _ in labelled} == {"n = 2", "n = 2, MLP"}
    assert by[("n = 2", "f3_fusion")].value == pytest.approx(20.0)  # cpp K = 1 -> 100
    assert by[("n = 2, MLP", "f3_fusion")].value == pytest.approx(40.0)  # fused, not cpp (1x)
    assert by[("n = 2, MLP", "f3_fused_over_xla")].value == pytest.approx(8e6 / 2e5)
    assert "fused over jax" in by[("n = 2, MLP", "f3_fused_over_xla")].quantity
    assert by[("n = 2, MLP", "f1_cpp_over_gym")].value == pytest.approx(1e5 / 5e2)
    assert all("MLP policy" in f.quantity for name, f in labelled if name.endswith("MLP"))
    mlp_flops = 2 * 9 * 64 + 64 + 2 * 64 * 64 + 64 + 2 * 64 + 1  # (3n+3 = 9) -> 64 -> 64 -> 1 at n = 2
    assert claims_chain.flops_per_byte(2, "mlp") == pytest.approx(
        claims_chain.flops_per_byte(2) + mlp_flops / chain.work_per_step(2)["bytes_per_step"])
    gains = chain.fusion_gains(pd.DataFrame(none + mlp), 100)
    assert list(zip(gains["policy"], gains["impl"], gains["gain"])) == [("none", "cpp", pytest.approx(20.0)),
                                                                        ("mlp", "fused", pytest.approx(40.0))]
    table = claims_chain.verdict_table(labelled)
    assert list(table.columns[:2]) == ["finding", "policy"] and set(table["policy"]) == {"none", "MLP"}
    assert "n = 2" in table.columns and "n = 2, MLP" not in table.columns
    answer = chain.answer(P, labelled)
    assert "over 2 (n, policy)" in answer and "with the Gaussian MLP policy (labelled MLP)" in answer
    assert "(n = 2; n = 2, MLP)" in answer  # the labels of one verdict, each whole
    P2 = book.params("chain", preset="tiny", policies=["none", "mlp"])
    points = chain.chain_points(P2)[0]
    assert {p.env.impl for p in points if p.policy == "mlp"} >= {"cpp", "fused"}
    assert "fused" not in {p.env.impl for p in points if p.policy == "none"}
    with pytest.raises(ConfigError, match="unknown policy"):
        book.params("chain", preset="tiny", policies=["random"])
    assert book.params("chain", preset="default").policies == ("none",)  # the cold build's plan
    assert book.params("chain", preset="paper").policies == ("none", "mlp")  # the paper's F.1-F.2 with inference too


def test_the_chapter_is_registered_with_its_files():
    ch = book.CHAPTERS["chain"]
    assert ch.files == (chain_study.PREDICTIONS, chain_study.MEASUREMENTS, chain.ENGINES_FILE, "chain_formulations") and ch.findings is None  # not in the CartPole tally
    P = ch.params(preset="default")
    points, dropped = chain.chain_points(P)
    assert {p.env.impl for p in points} >= {"gym", "cpp", "torch", "jax"} and len(set(P.links)) >= 3
    assert all(p.policy == "none" and p.env.sim == "chain" for p in points)
    assert all(p.env.num_envs * p.steps <= P.cap_for(p.env.impl) for p in points)
    assert dropped and np.all([d[1] * d[2] > P.cap_for(d[0]) and d[3:] == (1, 1) for d in dropped])


def test_the_manual_fusion_table_is_f3s_comparison_at_one_k_per_n():
    """The §7 table's median per n is F.3's cpp-over-jax headline of that n: one K per n (a median
    mixing K = 100 at small N with K = 1 at large N gave the page two figures for one comparison)."""
    from studylib import book
    from studylib.book.claims.chain import chain_findings
    from studylib.book.pages import chain
    from studylib.harness.sweep import READ_ONLY, session
    from tests.snapshot_cases import ROOT, SNAPSHOT

    with session(engine=READ_ONLY):
        P = book.params("chain", preset="default", data_dir=ROOT / "data", machine=SNAPSHOT)
        _, measured = chain.chain_data(P)
    fx = chain.fused_over_xla(measured)
    assert len(fx) and (fx.groupby(["policy", "links"])["steps"].nunique() == 1).all()
    f3 = {(f.quantity.split(",")[0], "no policy" in f.quantity): f.value for f in chain_findings(P, measured)
          if f.key == "f3_fused_over_xla"}
    for (policy, n), median in fx.groupby(["policy", "links"])["fused_over_xla"].median().items():
        assert median == pytest.approx(f3[(f"chain n = {n}", policy == "none")], rel=1e-12)


def test_the_chains_f4_is_judged_by_a_rule_that_can_fail():
    """F.4 on the chain's axis: the fusion speedup where the flops per byte are high over where
    they are low, judged "falls" at most 1/1.5 (the paper's "the more compute-bound the workload
    is, the less speedup that comes from fusion"); a rising or flat speedup is "not reproduced"."""
    import pandas as pd

    from studylib.book.claims import chain as claims_chain
    from studylib.book.claims.analysis import NOT_REPRODUCED, REPRODUCED

    def rows(gain_by_n):
        return pd.DataFrame([{"impl": "cpp", "links": n, "num_envs": 16, "steps": k, "state_factor": 1,
                              "compute_factor": 1, "samples_per_s": 1e6 * (g if k == 100 else 1.0)}
                             for n, g in gain_by_n.items() for k in (1, 100)])

    falling = claims_chain.compute_bound_row(rows({1: 6.0, 2: 4.5, 3: 3.0, 4: 2.5, 6: 1.9}), 100)
    assert falling.judgement.verdict == REPRODUCED and falling.value == pytest.approx(((2.5 + 1.9) / 2) / 5.25)
    rising = claims_chain.compute_bound_row(rows({1: 2.0, 2: 2.0, 3: 2.5, 4: 3.0, 6: 3.5}), 100)
    assert rising.judgement.verdict == NOT_REPRODUCED and "without any one n" in rising.reason
    assert claims_chain.compute_bound_row(rows({1: 6.0, 2: 4.5}), 100) is None  # two n: no trend to judge


def test_the_chains_verdicts_read_as_one_table_a_row_per_comparison():
    """The page's verdict table: one row per comparison of the paper's, one column per n (and F.4's
    across n), each cell ours and its verdict, "—" where the comparison was not made."""
    from studylib import book
    from studylib.book.claims import chain as claims_chain
    from studylib.book.pages import chain
    from studylib.harness.sweep import READ_ONLY, session
    from tests.snapshot_cases import ROOT, SNAPSHOT

    with session(engine=READ_ONLY):
        P = book.params("chain", preset="default", data_dir=ROOT / "data", machine=SNAPSHOT)
        _, measured = chain.chain_data(P)
    labelled = claims_chain.labelled_findings(P, measured)
    table = claims_chain.verdict_table(labelled)
    policy_of = {"": "none", ", MLP": "MLP"}
    assert len(table) == len({(f.key, name.endswith("MLP")) for name, f in labelled})
    assert list(table.columns[4:]) == list(dict.fromkeys(name.removesuffix(", MLP") for name, _ in labelled))
    by = table.set_index(table["finding"] + "|" + table["policy"] + "|" + table["claim"])
    for name, f in labelled:
        from studylib.book.claims.paper import PAPER

        policy = policy_of[", MLP" if name.endswith(", MLP") else ""]
        cell = by.loc[f"{f.finding}|{policy}|{PAPER[f.key].claim}", name.removesuffix(", MLP")]
        assert cell.startswith(f.ours_text + ": ")


def test_mujocos_engine_runs_the_chain_in_environment_steps_and_resumes(tmp_path, monkeypatch):
    """The chain in mujoco.rollout at one (n, N, K): K counted in environment steps (K × frame_skip
    mj_steps per call), environment steps/s the mj_steps/s over the frame skip; a rerun reads the
    saved row instead of measuring."""
    from studylib import book
    from studylib.book.pages import chain
    from studylib.harness import sweep
    from studylib.sims.chain.model import ChainParams

    P = book.params("chain", preset="tiny", links=[2], num_envs=[4], steps=[3], engines=["mujoco-rollout"],
                    data_dir=tmp_path)
    df = chain.chain_engine_data(P)
    frame_skip = ChainParams(links=2).frame_skip
    assert len(df) == 1 and df["model"][0] == "chain2" and df["steps"][0] == 3 * frame_skip
    assert df["env_steps"][0] == 3 and df["env_steps_per_s"][0] == pytest.approx(df["samples_per_s"][0] / frame_skip)

    def no_measuring(*args, **kwargs):
        raise AssertionError("a rerun measured")

    monkeypatch.setattr(sweep, "_measure_or_skip", no_measuring)
    assert chain.chain_engine_data(P)["samples_per_s"][0] == df["samples_per_s"][0]
    measured = pd.DataFrame([{"impl": "cpp", "policy": "none", "links": 2, "num_envs": 4, "steps": 3, "samples_per_s": 1e6},
                             {"impl": "jax", "policy": "none", "links": 2, "num_envs": 4, "steps": 3, "samples_per_s": 1e5}])
    side = chain.engines_beside_ours(measured, df)
    assert side["fused_over_engine"][0] == pytest.approx(1e6 / df["env_steps_per_s"][0])


def test_rows_beyond_the_plan_are_read_never_measured(tmp_path, monkeypatch):
    """A wider run's rows (other n, the MLP) of the chapter's N and K grid are read beside the plan's,
    with their predictions; reading them measures and predicts nothing."""
    from studylib.harness import sweep
    from studylib.harness.robotics import engine_study
    from studylib.harness.sweep import POINTS, run

    P = book.params("chain", preset="tiny", data_dir=tmp_path)  # n = 2, no policy
    wide, extra = chain.beyond_plan(P)
    planned = {(p.env.impl, p.env.params.links, p.policy, p.env.num_envs, p.steps) for p in chain.chain_points(P)[0]}
    assert set(wide.links) == set(chain.SNAPSHOT_LINKS) and set(wide.policies) == {"none", "mlp"}
    assert set(wide.engines) == {*P.engines, "mjx", "mjx-unfused"}
    assert {p.env.params.links for p in extra} == set(chain.SNAPSHOT_LINKS) and {p.policy for p in extra} == {"none", "mlp"}
    assert not planned & {(p.env.impl, p.env.params.links, p.policy, p.env.num_envs, p.steps) for p in extra}
    saved = [p for p in extra if p.env.params.links == 8 and p.env.impl in ("cpp", "fused")]
    run(chain_study.MEASUREMENTS, saved, lambda p: {**p.flat(), "samples_per_s": 1e6}, POINTS, data_dir=tmp_path,
        progress=False, log=lambda m: None)
    run(chain_study.PREDICTIONS, saved, lambda p: {**chain_study._columns(p), "predicted_samples_per_s": 2e6, "regime": "compute-bound"},
        chain_study.KEYING, data_dir=tmp_path, progress=False, log=lambda m: None)
    item = next(i for i in chain.chain_engine_items(wide) if i.engine == "mjx-unfused" and i.model == "chain8")
    run(chain.ENGINES_FILE, [item], lambda i: {**dataclasses.asdict(i), "samples_per_s": 5e5, "frame_skip": 5},
        engine_study.KEYING, data_dir=tmp_path, progress=False, log=lambda m: None)

    def no_measuring(*args, **kwargs):
        raise AssertionError("a point beyond the plan was measured")

    monkeypatch.setattr(sweep, "_measure_or_skip", no_measuring)
    predicted, measured = chain.saved_beyond_plan(P)
    assert len(measured) == len(saved) == len(predicted) and set(measured["links"]) == {8}
    assert set(measured["policy"]) == {"none", "mlp"} and set(measured["impl"]) == {"cpp", "fused"}
    assert chain.prediction_errors(predicted, measured)["log2_error"].tolist() == [1.0] * len(saved)
    engines = chain.chain_engine_data(dataclasses.replace(P, engines=()))  # measures nothing: no engine planned
    assert list(engines["model"]) == ["chain8"] and engines["env_steps_per_s"][0] == 1e5
    text = chain.unsaved_engines_text(engines)
    missing = dict(part.split(" at n = ") for part in text.removeprefix(
        "Not in this machine's data (no row at the chapter's N and K): ").removesuffix(".").split("; "))
    assert missing == {"`mujoco-rollout`": "1, 2, 4, 8, 16, 32", "`mjx`": "1, 2, 4",  # mjx: to its chain_links_max
                       "`mjx-unfused`": "1, 2, 4, 16, 32"}


def test_mjx_programs_are_compared_where_both_were_measured():
    """mjx_programs_text: the median over N of mjx-unfused's rate over mjx's, per n, only at the
    (n, N, K) both hold; nothing where one of them is missing."""
    row = lambda engine, n, num, rate: {"engine": engine, "links": n, "num_envs": num, "env_steps": 100,
                                        "env_steps_per_s": rate}
    engines = pd.DataFrame([row("mjx", 4, 16, 100.0), row("mjx-unfused", 4, 16, 50.0), row("mjx", 4, 256, 100.0),
                            row("mjx-unfused", 4, 256, 70.0), row("mjx-unfused", 8, 16, 9.0),
                            row("mujoco-rollout", 8, 16, 1e5)])
    assert chain.mjx_programs_text(engines) == "`mjx-unfused` over `mjx` (median over N and K): n = 4: 0.6×."
    assert chain.mjx_programs_text(engines[engines["engine"] != "mjx"]) == ""
    assert chain.mjx_programs_text(pd.DataFrame()) == ""
