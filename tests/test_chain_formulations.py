"""XLA's formulations of the chain, measured (harness.robotics.chain_formulations) and judged on
the chain page (book.pages.chain.formulation_sentence)."""

from __future__ import annotations

import pandas as pd
import pytest

from studylib.book.pages import chain
from studylib.errors import ConfigError
from studylib.harness.robotics import chain_formulations as cf

pytest.importorskip("jax")


def test_a_formulation_row_counts_what_xla_compiled():
    """The columns' program is one loop (the scan over K): XLA counts its whole environment step,
    more flops than the study counts (it has copied producers into consumers); the articulated-body
    formulation has loops over the links inside it, which XLA counts once, so no count is given."""
    columns = cf.measure_formulation(cf.FormulationItem("columns", 1, 8, 2, repeats=1, min_seconds=0.001))
    aba = cf.measure_formulation(cf.FormulationItem("aba", 1, 8, 2, repeats=1, min_seconds=0.001))
    assert columns["whole_program"] and columns["xla_loops"] == 1
    assert columns["xla_flops"] > columns["counted_flops"] == 740 and columns["xla_transcendentals"] > 0
    assert not aba["whole_program"] and aba["xla_loops"] > 1 and aba["xla_flops"] is None
    assert columns["env_steps_per_s"] > 0 and aba["env_steps_per_s"] > 0 and columns["compile_s"] > 0


def test_the_items_leave_out_the_columns_past_their_compile_budget():
    items = cf.formulation_items(["columns", "aba"], [4, 16], 256, 100)
    assert [(i.formulation, i.links) for i in items] == [("columns", 4), ("aba", 4), ("aba", 16)]
    with pytest.raises(ConfigError, match="unknown formulation 'scan'"):
        cf.formulation_items(["scan"], [2], 256, 100)


def _rows(chosen_rate, chosen_spread, best_rate=2.0e6, best_spread=0.05):
    row = lambda f, r, s, ch: {"links": 2, "formulation": f, "env_steps_per_s": r, "env_steps_per_s_min": r * (1 - s),
                               "env_steps_per_s_max": r * (1 + s), "chosen": ch, "whole_program": f == "columns",
                               "xla_flops": 7376.0 if f == "columns" else None, "counted_flops": 1760,
                               "xla_transcendentals": 731.0 if f == "columns" else None, "counted_transcendentals": 120}
    return pd.DataFrame([row("aba_flat", best_rate, best_spread, False), row("aba_unrolled", chosen_rate, chosen_spread, True),
                         row("columns", 2.5e5, 0.05, False)]).assign(xla_over_counted=lambda d: d["xla_flops"] / d["counted_flops"])


def test_the_verdict_on_xlas_best_can_fail():
    """Slower than the fastest beyond the spread of both's timed regions: a miss, with its factor;
    within it: as fast; XLA's counts of the columns' program beside the counted ones."""
    miss = chain.formulation_sentence(_rows(1.0e6, 0.05))
    assert "do not run the fastest formulation measured here at n = 2" in miss and "2.00× the jax" in miss
    tie = chain.formulation_sentence(_rows(1.9e6, 0.05))
    assert "as fast within the spread" in tie and "at every n" in tie
    close = chain.formulation_sentence(_rows(1.95e6, 0.001, best_spread=0.001))  # outside a tiny spread, within 10%
    assert "as fast within the spread" in close and "do not run" not in close
    assert "4.2× the counted flops and 6.1× the sines" in tie
    assert chain.formulation_sentence(pd.DataFrame()).startswith("No formulation")


def test_formulations_beyond_the_plan_are_read_where_saved_never_measured(tmp_path, monkeypatch):
    """formulation_data measures the plan's n and reads the other n a snapshot may hold
    (SNAPSHOT_LINKS) where saved: a saved n = 8 row is shown; n = 16 and 32, unsaved, are not measured."""
    import dataclasses

    from studylib import book
    from studylib.harness import sweep
    from studylib.harness.data.provenance import machine_key

    fake = lambda it: {**cf.FormulationItem.columns(it), "env_steps_per_s": 1e6, "xla_flops": None,
                       "counted_flops": 100, "chosen": False, "whole_program": False}
    P = dataclasses.replace(book.params("chain", preset="tiny", data_dir=tmp_path), formulations=("aba",),
                            formulation_links=(2,))
    saved = cf.formulation_items(["aba"], [8], P.formulation_num_envs, P.formulation_steps, repeats=P.repeats,
                                 min_seconds=P.min_seconds)
    sweep.run(cf.FILE, saved, fake, cf.KEYING, data_dir=tmp_path, progress=False, log=lambda m: None)
    measured = []
    monkeypatch.setattr(cf, "measure_formulation", lambda it: measured.append(it.links) or fake(it))
    df = chain.formulation_data(P)
    assert measured == [2] and sorted(df["links"]) == [2, 8]  # the plan measured, n = 8 read, 16 and 32 absent
    assert P.data_machine == machine_key()


def test_the_section_seven_answer_holds_fusion_against_xlas_fastest_formulation():
    """fused_over_best_formulation: the fused rate over the fastest formulation at the same (n, N, K),
    not over the jax implementation; fusion_conclusion says where manual fusion wins and where not,
    and the columns' duplication factor range."""
    fx = pd.DataFrame([{"policy": p, "links": n, "num_envs": 256, "steps": 100, "fused_impl": "cpp", "fused": f,
                        "xla": 1e5, "fused_over_xla": f / 1e5} for p, n, f in
                       (("none", 2, 4e6), ("none", 16, 5e4), ("mlp", 2, 9e9), ("none", 4, 1e6))])
    forms = pd.DataFrame([{"links": n, "num_envs": 256, "steps": 100, "formulation": f, "env_steps_per_s": r,
                           "whole_program": f == "columns", "xla_over_counted": x} for n, f, r, x in
                          ((2, "aba", 1e6, None), (2, "columns", 2e5, 4.2), (16, "aba", 1e5, None), (8, "columns", 1e4, 13.8))])
    table = chain.fused_over_best_formulation(fx, forms)
    assert table[["links", "formulation", "fused_over_best"]].values.tolist() == [[2, "aba", 4.0], [16, "aba", 0.5]]
    text = chain.fusion_conclusion(table, forms)
    assert "n = 2: **4×** (`aba`), n = 16: **0.5×** (`aba`)" in text
    assert "beats XLA's best program at n = 2 and not at n = 16." in text and "4.2× to 13.8× the flops" in text
    assert chain.fusion_conclusion(chain.fused_over_best_formulation(fx, forms.iloc[:0]), forms).startswith("The fused")
