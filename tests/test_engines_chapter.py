"""The engines chapter's package side (harness/engine_study.py, book/engines.py, claims_engines.py):
which items a grid asks for, rows through the resumable sweep, Fig 2's frame in environment steps,
and F.1/F.3 judged per model on synthetic rows whose verdicts are known."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from studylib import book
from studylib.book.claims import engines as claims_engines
from studylib.book.pages import engines as eng
from studylib.harness.robotics import engine_study
from studylib.harness.data import provenance
from tests.conftest import copy_calibration


@pytest.fixture
def data_dir(tmp_path, calibrated):
    """An empty data folder but for the session's calibration files (conftest's ``calibrated``):
    every test below predicts before it measures."""
    return copy_calibration(calibrated, tmp_path)


def test_items_follow_the_engine_records():
    items, dropped, unsupported = engine_study.engine_items(
        ["mujoco-python", "mujoco-rollout", "mjx", "envpool"], ["inverted_pendulum", "hopper"], [4, 64], [1, 10],
        lambda e: 2**8, compiled_models=["inverted_pendulum"], compiled_num_envs=[64])
    by = {}
    for it in items:
        by.setdefault(it.engine, []).append((it.model, it.num_envs, it.steps))
    assert by["mujoco-python"] == [("inverted_pendulum", 1, 1), ("hopper", 1, 1)]  # N = 1, K = 1 by its record
    assert by["mjx"] == [("inverted_pendulum", 64, 1)]  # compiles: the listed models and N only (K = 10: capped)
    assert ("mujoco-rollout", 64, 10, 1, 1) in dropped and ("hopper", 64, 1) in by["mujoco-rollout"]
    assert {k for _, _, k in by["envpool"]} == {1}  # K steps would be K calls: measured at K = 1 only
    assert not unsupported
    _, _, unsupported = engine_study.engine_items(["envpool"], ["chain2"], [4], [1], lambda e: 2**8)
    assert unsupported == [("envpool", "chain2", "chain2 has no envpool or gymnasium task")]  # not planned
    items, _, unsupported = engine_study.engine_items(["mjx", "mjx-unfused"], ["chain4", "chain8"], [16], [1],
                                                      lambda e: 2**8)
    assert [(i.engine, i.model) for i in items] == [("mjx", "chain4"), ("mjx-unfused", "chain4"), ("mjx-unfused", "chain8")]
    assert [(e, m) for e, m, _ in unsupported] == [("mjx", "chain8")]  # its record's chain_links_max: 4
    assert "beyond n = 4" in unsupported[0][2]


def test_rows_are_saved_resumed_and_an_unavailable_engine_is_skipped(data_dir):
    P = book.params("engines", preset="tiny", data_dir=data_dir, engines=["mujoco-python", "envpool"],
                    models=["chain2"], num_envs=[2], steps=[1], policies=["none"])
    rows = eng.engine_data(P)
    assert list(rows["engine"]) == ["mujoco-python"] and rows["env_steps_per_s"].iloc[0] == pytest.approx(
        rows["samples_per_s"].iloc[0] / 5)  # the chain's frame skip
    assert rows.attrs["skipped"] == [{"engine": "envpool", "model": "chain2",
                                      "reason": "chain2 has no envpool or gymnasium task"}]
    lock = data_dir / provenance.machine_key() / ".engines.lock"
    lock.unlink()
    again = eng.engine_data(P)
    assert not lock.exists()  # nothing left to try: the file is not even locked
    assert again.attrs["measured"] == 0 and list(again["samples_per_s"]) == list(rows["samples_per_s"])
    assert list(eng.models_table(rows)["nv"]) == [3]
    capped = eng.engine_data(book.params("engines", preset="tiny", data_dir=data_dir, engines=["mujoco-rollout"],
                                         models=["chain2"], num_envs=[2, 64], steps=[1], cap={"*": 8},
                                         policies=["none"]))
    assert capped.attrs["dropped"] == [("mujoco-rollout", 64, 1, 1, 1)]
    assert "1 point above this preset's work cap" in book.coverage_note(capped)  # the page's first sentence


def _rows(engine, paper_row, rates, model="hopper", frame_skip=4):
    return [{"engine": engine, "paper_row": paper_row, "model": model, "num_envs": n, "steps": k, "samples_per_s": v,
             "samples_per_s_min": v, "samples_per_s_max": v, "frame_skip": frame_skip, "env_steps_per_s": v / frame_skip,
             "compile_s": None, "state_factor": 1, "compute_factor": 1, "policy": "none"}
            for (n, k), v in rates.items()]


def test_engine_findings_per_model():
    P = book.params("engines", preset="tiny", steps=[1, 10], models=["hopper"])
    rows = pd.DataFrame(_rows("mujoco-python", "gym", {(1, 1): 1e4})
                        + _rows("mujoco-rollout", "C++", {(16, 1): 2e4, (256, 1): 3e4, (16, 10): 4e4, (256, 10): 6e4})
                        + _rows("mjx", "XLA", {(16, 1): 1e3, (256, 1): 1e4, (16, 10): 1e4, (256, 10): 1e5}))
    found = {(r.key, r.quantity.split(": ")[1].split(",")[0]): r for r in claims_engines.engine_findings(P, rows)}
    cpp = found[("f1_cpp_over_gym", "best C++ engine over mj_step in a Python loop")]
    assert cpp.value == pytest.approx(6.0) and cpp.verdict == "not reproduced here"  # above the paper's "at most 4×"
    assert found[("f1_gpu_over_gym", "MJX (XLA) over mj_step in a Python loop")].value == pytest.approx(10.0)
    assert found[("f3_fusion", "mujoco-rollout")].value == pytest.approx(2.0)
    assert found[("f3_xla_k1_to_k1000", "mjx")].value == pytest.approx(10.0)
    assert not any(k[1].startswith("mujoco-python") for k in found)  # one step a call: no K gain to judge


def test_fig2_frame_counts_environment_steps_and_the_gap():
    engines = pd.DataFrame(_rows("mujoco-rollout", "C++", {(16, 10): 4e4, (256, 10): 8e4}))
    cartpole = pd.DataFrame([{"impl": "jax", "num_envs": 256, "steps": 100, "samples_per_s": 2e7}])
    chain_rows = pd.DataFrame([{"impl": "cpp", "links": 2, "num_envs": 256, "steps": 100, "samples_per_s": 1e7},
                               {"impl": "cpp", "links": 3, "num_envs": 256, "steps": 100, "samples_per_s": 5e6}])
    f = eng.fig2_frame(engines, cartpole, chain_rows)
    assert set(f["system"]) == {"hopper", "CartPole (ours)", "chain2 (ours)"}
    assert f[f["system"] == "hopper"]["env_steps_per_s"].max() == 2e4  # 8e4 mj_steps / frame skip 4
    gap = eng.gap_table(f).set_index("system")
    assert gap.loc["hopper", "cartpole_over"] == pytest.approx(1000.0) and gap.loc["CartPole (ours)", "cartpole_over"] == 1
    brax = pd.DataFrame([{"env": "ant", "backend": "generalized", "num_envs": 1024, "steps": 10, "samples_per_s": 4e4},
                         {"env": "cartpole", "backend": "ours", "num_envs": 1024, "steps": 10, "samples_per_s": 9e6}])
    with_brax = eng.fig2_frame(engines, cartpole, chain_rows, brax)
    assert set(with_brax["system"]) - set(f["system"]) == {"ant (Brax)"}  # Brax's harness on CartPole: not a model
    assert eng.gap_table(with_brax).set_index("system").loc["ant (Brax)", "cartpole_over"] == pytest.approx(500.0)


def test_with_the_mlp_only_an_engine_that_runs_it_inside_its_call_keeps_k():
    items, _, _ = engine_study.engine_items(
        ["mujoco-python", "mujoco-rollout", "mjx"], ["inverted_pendulum"], [4], [1, 10], lambda e: 2**8,
        compiled_models=["inverted_pendulum"], policies=("none", "mlp"))
    mlp = {(it.engine, it.num_envs, it.steps) for it in items if it.policy == "mlp"}
    assert mlp == {("mujoco-python", 1, 1), ("mujoco-rollout", 4, 1), ("mjx", 4, 10)}  # MJX: one compile, the largest K
    assert ("mujoco-rollout", 4, 10) in {(it.engine, it.num_envs, it.steps) for it in items if it.policy == "none"}
    items, _, _ = engine_study.engine_items(  # an engine that compiles under its own policies, others under all
        ["mujoco-rollout", "mjx"], ["inverted_pendulum"], [4], [1, 10], lambda e: 2**8,
        compiled_models=["inverted_pendulum"], compiled_policies=("none",), policies=("none", "mlp"))
    assert {(it.engine, it.steps) for it in items if it.policy == "mlp"} == {("mujoco-rollout", 1)}
    assert {(it.engine, it.steps) for it in items if it.engine == "mjx"} == {("mjx", 1), ("mjx", 10)}  # its F.3's ends
    old = {"engine": "mjx", "model": "hopper", "num_envs": 4, "steps": 10}  # saved before rows named a policy
    assert engine_study.KEYING.row_key(old) == engine_study.KEYING.row_key(
        engine_study.EngineItem("mjx", "hopper", 4, 10).columns())


def test_policy_cost_pairs_the_same_n_and_k():
    rows = pd.DataFrame(_rows("mujoco-rollout", "C++", {(16, 1): 2e4, (256, 1): 4e4, (256, 10): 9e4})).assign(policy="none")
    mlp = pd.DataFrame(_rows("mujoco-rollout", "C++", {(16, 1): 1e4, (256, 1): 3e4})).assign(
        policy="mlp", policy_obs_width=12, policy_flops_per_sample=10112)
    cost = eng.policy_cost(pd.concat([rows, mlp], ignore_index=True)).iloc[0]
    assert (cost["points"], cost["low"], cost["high"]) == (2, 0.5, 0.75)  # K = 10 has no MLP row: not paired
    assert cost["median"] == pytest.approx(0.625) and cost["mlp_share"] == pytest.approx(0.375)
    assert eng.policy_cost(rows).empty


def test_engine_findings_name_their_policy():
    P = book.params("engines", preset="tiny", steps=[1, 10], models=["hopper"], policies=["none", "mlp"])
    rows = pd.DataFrame(_rows("mujoco-python", "gym", {(1, 1): 1e4}) + _rows("mujoco-rollout", "C++", {(16, 1): 2e4}))
    rows = pd.concat([rows.assign(policy="none"), rows.assign(policy="mlp")], ignore_index=True)
    quantities = [r.quantity for r in claims_engines.engine_findings(P, rows)]
    assert any(q.startswith("hopper, simulation only") for q in quantities)
    assert any(q.startswith("hopper, with the MLP policy") for q in quantities)
    mjx = pd.DataFrame(_rows("mjx", "XLA", {(16, 10): 1e4})).assign(policy="mlp")  # the MLP at the largest K only
    with_mjx = claims_engines.engine_findings(P, pd.concat([rows, mjx], ignore_index=True))
    assert not [r for r in with_mjx if r.finding == "F.3" and "mjx" in r.quantity]  # no K = 1 row: no F.3, not "n/a"


def test_engine_predictions_compose_the_records_terms():
    from studylib.harness.model import costmodel
    from studylib.harness.robotics import engine_predict
    from studylib.harness.robotics.engine_study import EngineItem

    host = costmodel.HostCosts(torch_op_s=5e-6, jax_call_s=2e-5, native_call_s=1e-5, xla_kernel_s=5e-8, gym_env_step_s=4e-6)
    machine = costmodel.Machine("synthetic CPU", costmodel.Processor(1e11, 2.5e10), host, costmodel.Counts({}))
    step = 1e-5  # MuJoCo's timer, seconds per mj_step
    rollout = engine_predict.predict_item(EngineItem("mujoco-rollout", "hopper", 64, 10), machine, step, threads=2)
    assert rollout["terms"] == {"python": 1e-5, "physics": pytest.approx(64 * 10 * step / 2), "policy": 0.0}
    assert rollout["predicted_samples_per_s"] == pytest.approx(640 / (1e-5 + 64 * 10 * step / 2))
    loop = engine_predict.predict_item(EngineItem("mujoco-python", "hopper", 1, 1), machine, step, threads=2)
    assert loop["terms"]["python"] == 4e-6 and loop["threads"] == 1 and loop["dominant"] == "physics"
    pool = engine_predict.predict_item(EngineItem("envpool", "hopper", 64, 3), machine, step, threads=2)
    assert pool["terms"]["python"] == pytest.approx(3e-5)  # K calls of one step: no K-step call in its record
    mlp = engine_predict.predict_item(EngineItem("mujoco-rollout", "hopper", 64, 1, "mlp"), machine, step, threads=2)
    flops = 2 * (12 * 64 + 64 * 64 + 64 * 3)
    assert mlp["terms"]["policy"] == pytest.approx(engine_predict.POLICY_OPS * 5e-6 + 64 * flops / 1e11)
    mjx = engine_predict.predict_item(EngineItem("mjx", "hopper", 64, 10), machine, step, threads=2)
    assert mjx["predicted_samples_per_s"] is None and "XLA" in mjx["reason"]


def test_predictions_are_saved_before_the_rows_and_never_rewritten(data_dir):
    import json

    P = book.params("engines", preset="tiny", data_dir=data_dir, engines=["mujoco-python"], models=["chain2"],
                    num_envs=[2], steps=[1], policies=["none"])
    rows = eng.engine_data(P)
    folder = data_dir / provenance.machine_key()
    saved = json.loads((folder / "engine_predictions.json").read_text())
    (pred,) = saved["rows"]
    (meas,) = json.loads((folder / "engines.json").read_text())["rows"]
    from studylib.harness.data.store import run_time  # (its ISO time, to the second)

    assert run_time(pred["run_id"]) <= run_time(meas["run_id"]) and pred["run_id"] != meas["run_id"]  # predicted first
    assert pred["mj_step_s"] > 0 and pred["predicted_samples_per_s"] > 0
    again = eng.engine_predictions(P)
    assert list(again["run_id"]) == [pred["run_id"]]  # read, not predicted again
    errors = eng.prediction_errors(again, rows)
    assert len(errors) == 1 and errors["log2_error"].iloc[0] == pytest.approx(
        np.log2(pred["predicted_samples_per_s"] / rows["samples_per_s"].iloc[0]))


def test_rows_beyond_the_plan_are_read_not_measured(data_dir):
    small = book.params("engines", preset="tiny", data_dir=data_dir, engines=["mujoco-python"], models=["chain2"],
                        num_envs=[2], steps=[1], policies=["none"])
    assert eng.beyond_the_plan(small, pd.DataFrame()).empty  # no file yet: nothing, and nothing measured
    wider = book.params("engines", preset="tiny", data_dir=data_dir, engines=["mujoco-python", "mujoco-rollout"],
                        models=["chain2"], num_envs=[2], steps=[1], policies=["none"])
    eng.engine_data(wider)
    rows = eng.engine_data(small)
    more = eng.beyond_the_plan(small, rows)
    assert list(more["engine"]) == ["mujoco-rollout"] and list(more["num_envs"]) == [2]
