"""The introduction's answer (``studylib.book.pages.overview``, book/intro.md): one table of every chapter's
verdicts, the chain's and the engines' beside CartPole's, and the paper's Fig 2 claim against the
engines' measurements, its gap split into the engine's factor and the model's. Checked on made-up
records and rows (each rule can come out either way) and on the committed snapshot, read without
measuring."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from studylib.book.claims import chain as claims_chain, engines as claims_engines
from studylib.book.pages import engines, overview
from studylib.book.claims.base import row
from studylib.book.format import fmt_x
from studylib.harness import sweep
from tests.snapshot_cases import SNAPSHOT


def _record(chapter, label, key, rule, value):
    """A chapter's finding as the overview receives it: the chain's with its label's n and policy
    (``claims_chain.label``), the engines' with the policy its label names."""
    finding = row("F.1" if key.startswith("f1") else "F.3", rule, "q", key, value, "why")
    if chapter == "chain":
        n, _, mlp = label.removeprefix("n = ").partition(", ")
        name = claims_chain.label(int(n), "mlp" if mlp else "none")
        return overview.Labelled(chapter, name, finding, name.policy, name.links)
    return overview.Labelled(chapter, label, finding, "mlp" if label.endswith(" + MLP") else "none")


def test_one_row_per_chapter_and_comparison_with_the_packages_verdicts():
    records = [_record("vectorization", "", "f1_cpp_over_gym", "at most", 3.0),
               _record("chain", "n = 1", "f1_cpp_over_gym", "at most", 3.5),   # within the paper's "at most 4×"
               _record("chain", "n = 2", "f1_cpp_over_gym", "at most", 40.0),  # far above it
               _record("engines", "hopper", "f3_fusion", "speedup", 1.0),
               _record("engines", "hopper + MLP", "f3_fusion", "speedup", 11.0)]
    T = overview.overview(records).set_index(["chapter", "key"])
    assert list(T.index) == [("vectorization", "f1_cpp_over_gym"), ("chain", "f1_cpp_over_gym"), ("engines", "f3_fusion")]
    cart, chain, eng = T.iloc[0], T.iloc[1], T.iloc[2]
    assert (cart["study"], cart["verdict"], cart["ours"]) == (overview.CARTPOLE, "reproduced", "3×")
    assert chain["study"] == overview.CHAIN and chain["verdicts"] == {"reproduced": 1, "not reproduced here": 1}
    assert chain["verdict"] == "reproduced: n = 1; not reproduced here: n = 2"  # each verdict with what got it
    assert chain["ours"] == "3.5× to 40× over 2 n"
    assert eng["verdict"] == "reproduced: hopper + MLP; not reproduced here: hopper"
    md = overview.overview_md(overview.overview(records))
    assert "(chain.md) |" in md and "(engines.md) |" in md and "(vectorization.md) |" in md  # every row links its page
    counts = overview.counts_md(records)
    assert "[" in counts and "(chain.md)" in counts and "(engines.md)" in counts
    assert "**1** reproduced, **1** not reproduced here" in counts  # the chain's two verdicts, counted
    assert "not measured" in overview.counts_md(records[:1])  # no chain or engine record: said so
    assert "n = 1, 2 links" in counts and "simulation only" in counts
    with_mlp = records + [_record("chain", "n = 2, MLP", "f1_cpp_over_gym", "at most", 30.0)]
    counts = overview.counts_md(with_mlp)
    assert "n = 1, 2 links" in counts and "without a policy and with the MLP policy" in counts  # each n once

def _engines(rates, model="chain2", frame_skip=5):
    return pd.DataFrame([{"engine": e, "model": model, "policy": "none", "num_envs": n, "steps": k,
                          "samples_per_s": v, "env_steps_per_s": v / frame_skip} for (e, n, k), v in rates.items()])


def _ours(rates, **cols):
    return pd.DataFrame([{"impl": i, "num_envs": n, "steps": k, "samples_per_s": v, "policy": "none", **cols}
                         for (i, n, k), v in rates.items()])


def test_fig2_split_is_recomputed_from_the_rows_and_its_rule_can_go_either_way():
    eng = _engines({("mujoco-python", 1, 1): 2e4, ("mujoco-rollout", 256, 10): 5e4 * 5})  # 5e4 env steps/s at best
    chain = pd.concat([_ours({("cpp", 256, 100): 5e7, ("cpp", 16, 1): 1e7, ("jax", 256, 1): 1e6}, links=2),
                       _ours({("cpp", 256, 100): 9e9}, links=3)])  # another n: not the twin model
    cart = pd.concat([_ours({("cpp", 1024, 100): 5e8, ("jax", 1024, 100): 4e7}, state_factor=1, compute_factor=1),
                      _ours({("cpp", 1024, 100): 9e9}, state_factor=2, compute_factor=1),  # not the paper's CartPole
                      _ours({("jax", 1024, 100): 9e9}).assign(policy="mlp", state_factor=1, compute_factor=1)])
    full = engines.gap_split(eng, cart, chain)
    split = full.set_index("impl")
    assert list(split.index) == ["cpp", "jax"]  # our fastest implementation of the model first
    cpp = split.loc["cpp"]
    assert cpp["mujoco"] == pytest.approx(5e4) and cpp["mujoco_engine"] == "mujoco-rollout"
    assert cpp["engine"] == pytest.approx(1000.0) and cpp["model"] == pytest.approx(10.0)  # 5e7/5e4; 5e8/5e7
    assert cpp["gap"] == pytest.approx(1e4) and cpp["engine_share"] == pytest.approx(0.75)
    jax = split.loc["jax"]
    assert (jax["engine"], jax["model"]) == (pytest.approx(20.0), pytest.approx(40.0))
    gap = pd.DataFrame({"system": ["CartPole (ours)", "chain2", "hopper", "ant (Brax)"],
                        "runs_on": ["jax", "mujoco-rollout", "mujoco-rollout", "brax · spring"],
                        "env_steps_per_s": [4e7, 5e4, 4e4, 2e4], "cartpole_over": [1.0, 800.0, 1000.0, 2000.0]})
    text = overview.fig2_text(gap, full)
    assert "**800×** to **2,000×**" in text and "none within 2×" in text and "MuJoCo's and Brax's" in text
    assert "**1,000×** the rate of MuJoCo's fastest engine (`mujoco-rollout`)" in text and "**10×** the chain's" in text
    assert "most of CartPole's lead over that model is the engine" in text and "**75 %**" in text
    assert "in `jax` the model's part is the larger" in text  # 20× engine against 40× model there
    slow_chain = chain.assign(samples_per_s=chain["samples_per_s"] / 100)  # the chain 100× slower in our code
    text = overview.fig2_text(gap, engines.gap_split(eng, cart, slow_chain))
    assert "most of CartPole's lead over that model is the model's cost" in text  # engine 10×, model 1,000×
    similar = gap.assign(cartpole_over=[1.0, 1.5, 0.8, 1.9])
    assert "all 3 within 2× of it, as similar as Fig 2 shows them" in overview.fig2_text(similar, full.iloc[0:0])
    assert engines.gap_split(eng.iloc[0:0], cart, chain).empty  # no MuJoCo row of the model: no split
    assert "not checked here" in overview.fig2_text(gap.iloc[:1], full)  # CartPole alone: no model to compare


@pytest.fixture
def no_measuring(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the introduction measured")

    monkeypatch.setattr(sweep, "_measure_or_skip", refuse)


@pytest.mark.skipif(SNAPSHOT is None, reason="no committed CPU snapshot")
def test_the_snapshots_table_holds_the_chain_and_the_engines_and_fig2_from_their_rows(no_measuring):
    from studylib.book.pages import chain as chain_page
    from studylib.book import params
    from studylib.book.plans import cartpole_fig2_data, fusion_data

    kw = {"preset": "default", "machine": SNAPSHOT}
    with sweep.session(engine=sweep.READ_ONLY):
        S = overview.study(**kw)
        P = params("chain", **kw)
        chain_rows = chain_page.chain_data(P)[1]
        PE = params("engines", **kw)
        engine_rows = engines.engine_data(PE)
        cart = pd.concat([cartpole_fig2_data(params("cartpole", **kw)), fusion_data(params("fusion", **kw))])
    for chapter, expected in (("chain", claims_chain.chain_findings(P, chain_rows)),
                              ("engines", claims_engines.engine_findings(PE, engine_rows))):
        got = [x.finding for x in S.records if x.chapter == chapter]
        assert expected and [(f.key, f.verdict, f.value) for f in got] == [(f.key, f.verdict, f.value) for f in expected]
        T = overview.overview(S.records)
        rows = T[T["chapter"] == chapter]
        assert len(rows) and sum(sum(v.values()) for v in rows["verdicts"]) == len(expected)  # every verdict counted
    # the twin model's factors, recomputed here from the rows themselves
    mujoco = engine_rows[(engine_rows["model"] == "chain2") & (engine_rows["policy"] == "none")]["env_steps_per_s"].max()
    ours = chain_rows[chain_rows["links"] == 2].groupby("impl")["samples_per_s"].max()
    impl = ours.idxmax()
    plain = cart[(cart["policy"] == "none") & (cart["state_factor"] == 1) & (cart["compute_factor"] == 1)]
    engine, model = ours[impl] / mujoco, plain[plain["impl"] == impl]["samples_per_s"].max() / ours[impl]
    text = overview.fig2_text(S.gap, S.split)
    assert f"our `{impl}` steps it at **{fmt_x(engine)}** the rate" in text
    assert f"CartPole runs at **{fmt_x(model)}** the chain's rate" in text
    assert ("most of CartPole's lead over that model is the engine" in text) == (engine > model > 1)
    assert f"**{np.log(engine) / np.log(engine * model) * 100:.0f} %**" in text
    # the §7 answer the introduction gives is the chain page's, recomputed here from the rows: cpp
    # without a policy over XLA's fastest formulation at the formulations' N and K, per n
    with sweep.session(engine=sweep.READ_ONLY):
        forms = chain_page.formulation_data(P)
    best = forms.groupby(["links", "num_envs", "steps"])["env_steps_per_s"].max()
    cpp = chain_rows[(chain_rows["impl"] == "cpp") & (chain_rows["policy"] == "none")]
    shown = 0
    for (n, num, k), xla in best.items():
        ours = cpp[(cpp["links"] == n) & (cpp["num_envs"] == num) & (cpp["steps"] == k)]["samples_per_s"]
        if len(ours):
            assert f"n = {n}: **{fmt_x(ours.iloc[0] / xla)}**" in S.fusion, (n, S.fusion)
            shown += 1
    assert shown >= 4 and "§7" in S.fusion
    models = S.gap[~S.gap["system"].str.contains("(ours)", regex=False)]["cartpole_over"]
    assert f"**{fmt_x(models.min())}** to **{fmt_x(models.max())}**" in text
