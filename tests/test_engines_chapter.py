"""The engines chapter's package side (harness/engine_study.py, book/engines.py, claims_engines.py):
which items a grid asks for, rows through the resumable sweep, Fig 2's frame in environment steps,
and F.1/F.3 judged per model on synthetic rows whose verdicts are known."""

from __future__ import annotations

import pandas as pd
import pytest

from studylib import book
from studylib.book import claims_engines
from studylib.book import engines as eng
from studylib.harness import engine_study, provenance


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


def test_rows_are_saved_resumed_and_an_unavailable_engine_is_skipped(tmp_path):
    P = book.params("engines", preset="tiny", data_dir=tmp_path, engines=["mujoco-python", "envpool"],
                    models=["chain2"], num_envs=[2], steps=[1])
    rows = eng.engine_data(P)
    assert list(rows["engine"]) == ["mujoco-python"] and rows["env_steps_per_s"].iloc[0] == pytest.approx(
        rows["samples_per_s"].iloc[0] / 5)  # the chain's frame skip
    assert rows.attrs["skipped"] == [{"engine": "envpool", "model": "chain2",
                                      "reason": "chain2 has no envpool or gymnasium task"}]
    lock = tmp_path / provenance.machine_key() / ".engines.lock"
    lock.unlink()
    again = eng.engine_data(P)
    assert not lock.exists()  # nothing left to try: the file is not even locked
    assert again.attrs["measured"] == 0 and list(again["samples_per_s"]) == list(rows["samples_per_s"])
    assert list(eng.models_table(rows)["nv"]) == [3]
    capped = eng.engine_data(book.params("engines", preset="tiny", data_dir=tmp_path, engines=["mujoco-rollout"],
                                         models=["chain2"], num_envs=[2, 64], steps=[1], cap={"*": 8}))
    assert capped.attrs["dropped"] == [("mujoco-rollout", 64, 1, 1, 1)]
    assert "1 point above this preset's work cap" in book.coverage_note(capped)  # the page's first sentence


def _rows(engine, paper_row, rates, model="hopper", frame_skip=4):
    return [{"engine": engine, "paper_row": paper_row, "model": model, "num_envs": n, "steps": k, "samples_per_s": v,
             "samples_per_s_min": v, "samples_per_s_max": v, "frame_skip": frame_skip, "env_steps_per_s": v / frame_skip,
             "compile_s": None, "state_factor": 1, "compute_factor": 1}
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
    assert set(f["system"]) == {"hopper", "CartPole (ours)", "chain n = 2 (ours)"}
    assert f[f["system"] == "hopper"]["env_steps_per_s"].max() == 2e4  # 8e4 mj_steps / frame skip 4
    gap = eng.gap_table(f).set_index("system")
    assert gap.loc["hopper", "cartpole_over"] == pytest.approx(1000.0) and gap.loc["CartPole (ours)", "cartpole_over"] == 1
