"""The paragraph that opens the pages beyond CartPole's findings (beyond, chain, engines, atari,
model): each states its question's answer in the numbers its sections show further down, with the
paper's values labelled as the paper's and its verdicts where the claims reach one, and says what is
missing when a run has nothing to answer with. Checked on small frames whose numbers are known."""

from __future__ import annotations

import pandas as pd

from studylib import book
from studylib.book.claims import chain as claims_chain
from studylib.book.claims.analysis import NOT_REPRODUCED, REPRODUCED
from studylib.book.claims.base import row
from studylib.book.pages import beyond, chain, engines, model


def _params(chapter, tmp_path, **kw):
    return book.params(chapter, preset="tiny", data_dir=tmp_path, **kw)


def _rates(impl, n_rate: dict, steps=100, policy="mlp"):
    return [{"impl": impl, "num_envs": n, "steps": steps, "policy": policy, "samples_per_s": r} for n, r in n_rate.items()]


def test_the_beyond_answer_answers_its_four_questions_in_the_sections_numbers(tmp_path):
    P = _params("beyond", tmp_path)
    mlp = pd.DataFrame(_rates("torch", {1024: 1e5}) + _rates("torch-compile", {1024: 2e5}) + _rates("jax", {1024: 4e5, 4096: 4e5})
                       + _rates("fused", {1024: 2e6, 4096: 1.2e6}))
    sim = pd.DataFrame(_rates("cpp", {4096: 1e8}, policy="none") + _rates("gymnax", {4096: 2e6}, policy="none"))
    roof = pd.DataFrame([{"impl": "fused", "policy": "mlp", "num_envs": 4096, "steps": 100, "fraction": 0.7,
                          "bound": "compute"}, {"impl": "jax", "policy": "mlp", "num_envs": 4096, "steps": 100,
                                                "fraction": 0.2, "bound": "compute"}])
    gap = beyond.compile_gap(mlp[mlp["impl"].isin(beyond.COMPILE_THREE)])
    fj = beyond.ratio_with_spread(mlp, "fused", "jax")
    text = beyond.answer(P, gap, fj, beyond.peer_ratios(sim), roof, 100)
    assert "compiling closes **33%** of the jax–torch gap" in text  # (2e5 − 1e5) / (4e5 − 1e5)
    assert "`fused` collects **4×** the samples per second of `jax` (median over 2 N, from 3× to 5×)" in text
    assert "collects **50×** gymnax's rate at N = 2^12" in text and "envpool" not in text  # 1e8 / 2e6; envpool unmeasured
    assert "`fused` (mlp, N = 2^12, K = 100) at **0.7** of the compute ceiling" in text
    empty = beyond.answer(P, pd.DataFrame(), fj.iloc[:0], beyond.peer_ratios(sim.iloc[:0]), roof.iloc[:0], 100)
    assert "Not all of torch, torch-compile and jax were measured here." in empty and "No peer was measured" in empty
    assert "`fused` and `jax` were not both measured" in empty and "Nothing was measured to set against" in empty


def _cpp_over_gym(value):
    return row("F.1", "at most", "cpp over gym", "f1_cpp_over_gym", value, "why")


def test_the_chain_answer_counts_the_verdicts_and_states_each_comparison_over_n(tmp_path):
    P = _params("chain", tmp_path)
    fusion = row("F.3", "speedup", "fusion", "f3_fusion", 12.0, "")
    n1, n2 = claims_chain.label(1, "none"), claims_chain.label(2, "none")
    labelled = [(n1, _cpp_over_gym(3.5)), (n1, fusion), (n2, _cpp_over_gym(40.0))]
    text = chain.answer(P, labelled)
    assert text.startswith("On the chain at n = 1, 2 links, measured on this machine (")
    assert f"give **2** {REPRODUCED}, **1** {NOT_REPRODUCED}." in text
    assert (f"F.1, multi-core C++ over single-core gym (the paper's at most 4×): **3.5× to 40× over 2 n**, "
            f"{REPRODUCED} (n = 1), {NOT_REPRODUCED} (n = 2)") in text
    assert f"F.3, CUDA fused K = 10^3 over K = 1 (the paper's 11.3×): **12× on n = 1**, {REPRODUCED} (n = 1)" in text
    assert "not measured" not in text and "The chain was not measured" in chain.answer(P, [])


def test_the_engines_answer_states_fig2s_gap_its_verdict_and_the_engines_verdicts(tmp_path):
    P = _params("engines", tmp_path)
    gap = pd.DataFrame({"system": ["CartPole (ours)", "chain2", "hopper"], "runs_on": ["jax", "mujoco-rollout", "envpool"],
                        "env_steps_per_s": [4e7, 5e4, 4e4], "cartpole_over": [1.0, 800.0, 1000.0]})
    split = pd.DataFrame([{"impl": "cpp", "mujoco_engine": "mujoco-rollout", "engine": 1000.0, "model": 10.0,
                           "gap": 1e4, "engine_share": 0.75}])
    labelled = [(("hopper", "none"), _cpp_over_gym(3.0)), (("hopper", "mlp"), _cpp_over_gym(9.0))]
    text = engines.answer(P, gap, split, labelled)
    assert "reaches **800×** to **1,000×** the environment-step rate of 2 robotics models" in text
    assert f"none within 2× of it, where the paper's Fig 2 (XLA throughputs on a GPU) shows them similar: *{NOT_REPRODUCED}*" in text
    assert "our `cpp` steps it at **1,000×** the rate of MuJoCo's fastest engine" in text and "**75 %**" in text
    assert f"give **1** {REPRODUCED}, **1** {NOT_REPRODUCED}" in text and "(engines.md)" not in text  # no link to itself
    near = gap.assign(cartpole_over=[1.0, 1.5, 3.0])
    assert "1 of 2 within 2× of it: *partly reproduced*" in engines.answer(P, near, split.iloc[:0], [])
    assert "F.1 and F.3 were not measured on the engines" in engines.answer(P, gap.iloc[:1], split, [])


def test_the_model_answer_states_its_error_here_and_the_papers_numbers_it_predicts(tmp_path):
    P = _params("model", tmp_path)
    vs = model.ValidationSummary(141, 0.86, (("F.1", 0.56, 2.78), ("F.2", 1.21, 2.52)), 0, None)
    paper = pd.DataFrame({"quantity": ["cpp over gym", "jax over torch", "cuda fusion"],
                          "|log2 ratio|": [8.4, 0.5, 1.0]})  # within 2×: |log2| ≤ 1
    text = model.answer(P, object(), "", vs, paper)
    assert "predicts the 141 points of F.1–F.4 measured here with a median |log₂(model / measured)| of **0.86**" in text
    assert "it is **within 2× of the typical point** (per finding: F.1 0.56; F.2 1.21)" in text
    assert "it predicts **2 of 3** of the paper's numbers within 2×: jax over torch; cuda fusion." in text
    far = model.ValidationSummary(10, 1.5, (), 0, None)
    assert "**not within 2× of the typical point**" in model.answer(P, object(), "", far, paper)
    assert "not checked against them" in model.answer(P, object(), "", None, paper.iloc[:0])
    assert model.answer(P, None, "no calibration", None, pd.DataFrame()).startswith("**No cost model for this data**: no calibration.")
