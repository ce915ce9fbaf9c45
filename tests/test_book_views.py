"""The numbers the chapters state, computed once in ``studylib.book`` (the pages only format them),
checked on frames made up for the purpose: each rule can come out either way."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from studylib.book import model


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
