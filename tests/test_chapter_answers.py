"""The paragraph that opens each CartPole chapter (``studylib.book.answers`` and the pages'
``answer``): it states the chapter's findings with our number beside the paper's and the verdict the
claims reach, from the same records the page renders below, and says what is missing when a run
has no record. Checked on small frames whose numbers are known, so a wrong number or verdict in the
answer fails here."""

from __future__ import annotations

import pandas as pd

from studylib import book
from studylib.book import answers
from studylib.book.claims import findings as claims
from studylib.book.claims.analysis import NOT_REPRODUCED, PARTLY, REPRODUCED
from studylib.book.claims.base import row
from studylib.book.pages import brax, cartpole, fusion, overheads, vectorization
from tests.snapshot_cases import GPU_SNAPSHOTS, ROOT, machine_json


def _rows(impl, n_rate: dict, steps=1, **cols):
    return [{"impl": impl, "num_envs": n, "steps": steps, "samples_per_s": r, "state_factor": 1, "compute_factor": 1,
             "policy": "none", **cols} for n, r in n_rate.items()]


def _params(chapter, tmp_path, **kw):
    return book.params(chapter, preset="tiny", data_dir=tmp_path, **kw)


def test_a_finding_reads_as_ours_beside_the_papers_with_its_verdict_and_why():
    short = row("F.2", "speedup", "jax over torch", "f2_xla_over_torch", 4.66, "why")  # paper 13.4×: 2–10× short
    assert answers.finding_sentence(short) == ("**F.2**, jax over torch: **4.66×** here against the paper's 13.4×: "
                                               f"*{PARTLY}* (faster, but 2–10× short of the paper's).")
    held = row("F.1", "at most", "cpp over gym", "f1_cpp_over_gym", 3.0, "")
    assert answers.finding_sentence(held, "C++") == f"**F.1**, C++: **3×** here against the paper's 4×: *{REPRODUCED}*."
    over_n = row("F.3", "speedup", "fusion", "f3_fusion", pd.Series({64: 33.2, 1024: 6.86, 16384: 2.84}), "why")
    assert "*partly reproduced* (within 2× of the paper's at the median, but not at N = 2^6, 2^14)" in \
        answers.finding_sentence(over_n)
    missing = row("F.3", "speedup", "fusion", "f3_fusion", None, "")
    assert "*not measured* here (this build has no measurement for it)" in answers.finding_sentence(missing)
    assert answers.counts_text([short, held, missing]) == "**1** reproduced, **1** partly reproduced, **1** not measured"
    assert answers.findings_answer([], "lead", "nothing here") == "nothing here"


def test_the_answer_names_the_machine_whose_numbers_it_states(tmp_path):
    assert answers.where(_params("vectorization", tmp_path)).startswith("this machine (")
    for key in GPU_SNAPSHOTS:  # another machine's snapshot: its own cores and GPU, read from its machine.json
        info = machine_json(key)
        P = book.params("chain", preset="default", data_dir=ROOT / "data", machine=key)  # both hold the chain
        assert answers.where(P) == f"machine `{key}` ({info['cores']} CPU cores and an {info['gpu']})"
    assert [answers.similar_verdict(w, 3) for w in (3, 1, 0)] == [REPRODUCED, PARTLY, NOT_REPRODUCED]


def test_the_vectorization_answer_states_f1s_ratios_and_the_n_of_the_largest(tmp_path):
    n = [1, 8, 64]
    df = pd.DataFrame(_rows("gym", dict(zip(n, [1e4] * 3))) + _rows("cpp", dict(zip(n, [2e4, 3e4, 3e5])))
                      + _rows("jax", dict(zip(n, [1e5, 2e5, 5e5]))))
    P = _params("vectorization", tmp_path)
    found = claims.vectorization_rows(P, df)
    text = vectorization.answer(P, found, df)
    assert "**50×** here against the paper's 1,024×" in text and f"*{NOT_REPRODUCED}*" in text  # 5e5 / 1e4, at N = 64
    assert "(at N = 2^6, the largest N where gym was measured)" in text
    assert "**30×** here against the paper's 4×" in text and "above the paper's bound" in text  # cpp: 3e5 / 1e4
    assert text.startswith("Measured on this machine (")
    empty = vectorization.answer(P, claims.vectorization_rows(P, df[df["impl"] != "gym"]), df[df["impl"] != "gym"])
    assert "F.1 needs `gym`" in empty and "`cpp`, `jax`" in empty


def _profile(impl, k, calls, kernels):
    return {"impl": impl, "steps": k, "backend_calls": calls, "kernel_launches": kernels,
            "backend_calls_per_step": calls / k, "kernel_launches_per_step": kernels / k}


def test_the_overheads_answer_states_f2_and_whether_fig6s_pattern_holds(tmp_path):
    n = [16, 256]
    df = pd.DataFrame(_rows("torch", dict(zip(n, [1e5, 1e5]))) + _rows("torch", dict(zip(n, [1e5, 1e5])), steps=100)
                      + _rows("jax", dict(zip(n, [1e5, 1e5]))) + _rows("jax", dict(zip(n, [1.3e6, 1.3e6])), steps=100))
    P = _params("overheads", tmp_path, num_envs=n, steps=[1, 100])
    found = claims.overheads_rows(P, df, pd.DataFrame())
    prof = pd.DataFrame([_profile("jax", 1, 2, 100), _profile("jax", 100, 2, 10000)])
    text = overheads.answer(P, found, prof)
    by = {f.key: f for f in found}
    assert by["f2_xla_over_torch"].ours_text == "13×" and "**13×** here against the paper's 13.4×" in text
    assert f"*{REPRODUCED}*" in text and "**13×** here against the paper's 53.8×" in text  # K = 1 → 100: 13×
    assert "holds here: from K = 1 to 100, `jax`'s backend calls go from 2 to 2 and its kernels from 100 to 10000" in text
    fused = pd.DataFrame([_profile("jax", 1, 2, 100), _profile("jax", 100, 2, 100)])  # kernels constant: fused
    assert "does **not** hold here" in overheads.answer(P, found, fused)
    assert "F.2 needs `jax` and `torch`" in overheads.answer(P, [], pd.DataFrame())


def test_the_fusion_answer_names_the_fused_implementation_and_states_f3(tmp_path):
    n = [64, 1024]
    df = pd.DataFrame(_rows("cpp", dict(zip(n, [1e7, 1e7]))) + _rows("cpp", dict(zip(n, [1e8, 1e8])), steps=1000)
                      + _rows("jax", dict(zip(n, [1e6, 1e6]))) + _rows("jax", dict(zip(n, [2e6, 2e6])), steps=1000))
    P = _params("fusion", tmp_path, num_envs=n, steps=[1, 1000])
    found = claims.fusion_rows(P, df)
    text = fusion.answer(P, found, "cpp")
    assert "with `cpp` (the CUDA kernel's source compiled for this CPU)" in text
    assert "**10×** here against the paper's 11.3×" in text and f"*{REPRODUCED}*" in text  # 1e8 / 1e7
    assert "**2×** here against the paper's 83.3×" in text  # jax: 2e6 / 1e6, more than 10× short
    assert "**50×** here against the paper's 113×" in text and f"*{PARTLY}*" in text  # 1e8 / 2e6
    assert "F.3 needs `cuda` and `jax`" in fusion.answer(P, [], "cuda")


def _complexity(speedups_by_s: dict, n_mem=2**14, llc=2**20):
    """A Fig 9 frame whose memory regime (N = n_mem, C = 1) has the K = 100 fusion speedup x at S,
    and a grid N = {4, 64} at S = 1 whose K = 100 speedup is 2× and 8× (not flat in N)."""
    rows = []
    for s, x in speedups_by_s.items():
        rows += _rows("cpp", {n_mem: 1e7 / s}, state_factor=s) + _rows("cpp", {n_mem: x * 1e7 / s}, steps=100,
                                                                          state_factor=s)
    for n, x in {4: 2.0, 64: 8.0}.items():
        rows += _rows("cpp", {n: 1e6}) + _rows("cpp", {n: x * 1e6}, steps=100)
    df = pd.DataFrame(rows)
    df.attrs["memory"] = {"num_envs": n_mem, "state_factor": tuple(speedups_by_s), "steps": (1, 100), "llc_bytes": llc,
                          "llc_measured": True, "working_set": {s: n_mem * (16 * s + 8) for s in speedups_by_s}}
    return df


def test_the_complexity_answer_states_f4s_growth_and_spread(tmp_path):
    P = _params("complexity", tmp_path, state_factor=[1, 64], compute_factor=[1])
    ceil = {"memory_bytes_per_s": 2e10, "fma_flops_per_s": 2e11, "gemm_steps_per_s": {}}
    rows = claims.complexity_rows(P, _complexity({1: 4.0, 64: 256.0}), ceil)
    text = fusion.complexity_answer(P, rows, "cpp")
    assert "the fusion speedup of `cpp`" in text
    assert "**4× → 256× (grows, ×64)** here against the paper's 2^4 → 2^10" in text and f"*{REPRODUCED}*" in text
    assert "**4×** here against the paper's ≈ 1× (flat in N): *not reproduced here* (varies with N)" in text  # 8 / 2
    assert "F.4 needs `cpp`" in fusion.complexity_answer(P, [], "cpp")


def _conformance(error):
    return pd.DataFrame([{"impl": i, "S": 1, "C": 1, "max |error|": error, "max relative error": error * 10,
                          "carried floats exact": "—", "observations match": True} for i in ("cpp", "jax")])


def test_the_cartpole_answer_states_fig2s_gap_and_the_conformance(tmp_path):
    P = _params("cartpole", tmp_path)
    bx = pd.DataFrame([{"env": e, "num_envs": 1024, "steps": 10, "samples_per_s": r, "flops_per_step": f}
                       for e, r, f in ((brax.CARTPOLE, 4e6, 100.0), ("ant", 1e4, 10000.0))])
    cs = cartpole.conformance_summary(_conformance(1e-7))
    text = cartpole.answer(P, brax.brax_gap(bx), pd.DataFrame(), cs)
    assert "a step of Brax's robotics simulators takes **400×** CartPole's time" in text  # 4e6 / 1e4
    assert "none within 2×" in text and f"*{NOT_REPRODUCED}*" in text
    assert "XLA counts **100×** CartPole's flops" in text and "at least 77% of the gap" in text  # log 100 / log 400
    assert "Over 2 one-step checks, every implementation agrees" in text and "1.00e-06" in text
    near = brax.brax_gap(bx.assign(samples_per_s=[4e6, 3e6]))
    assert f"as similar as the paper's Fig 2 (XLA on a GPU) shows them: *{REPRODUCED}*" in cartpole.answer(P, near, bx, cs)
    three = pd.concat([bx, bx.iloc[[1]].assign(env="hopper", samples_per_s=3e6)], ignore_index=True)
    assert f"1 of 2 within 2×, where the paper's Fig 2 (XLA on a GPU) shows them similar: *{PARTLY}*" in \
        cartpole.answer(P, brax.brax_gap(three), bx, cs)
    alone = cartpole.answer(P, pd.DataFrame(), pd.DataFrame({"samples_per_s": [2e6, 5e6]}),
                            cartpole.conformance_summary(_conformance(1)))
    assert "no Brax environment was measured" in alone and "**5e+06 samples/s**" in alone
    assert "**some implementation disagrees" in alone
