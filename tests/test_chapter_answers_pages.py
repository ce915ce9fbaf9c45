"""The paragraph that opens the pages beyond CartPole's findings (beyond, chain, engines, atari,
model): each states its question's answer in the numbers its sections show further down, with the
paper's values labelled as the paper's and its verdicts where the claims reach one, and says what is
missing when a run has nothing to answer with. Checked on small frames whose numbers are known."""

from __future__ import annotations

import pandas as pd

from studylib import book
from studylib.book.pages import beyond


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
