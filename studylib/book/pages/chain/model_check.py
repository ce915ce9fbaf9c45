"""The cost model's versions on the chain (book/chain.md, "Predicted before measured"): every saved
prediction against its measurement, per model version (``costmodel.VERSION``), and each changed
version's check out of sample.

Version 1 predicted the chapter's points before they were measured; its errors showed where it was
wrong (the gym row: gymnasium's MujocoEnv priced as CartPole's Python step, MuJoCo's physics left
out). Version 2 prices that row with MuJoCo's own timer; version 3 prices cpp's MLP points with the
timer of the policy the host runs between its steps (``harness.model.costmodel``'s doc). A changed
model can only be judged on points it had not seen: each version from 2 on predicted the chain at
its own ``MODEL_CHECK_LINKS`` (n neither the chapter's grid nor an earlier check holds), the
predictions were saved and committed, and only then were those points measured
(``benchmarks/chain_model_check.py``; git history shows the order). The chapter reads them where a
machine's data hold them and never measures them itself.

    predicted, measured = model_check(P)           # every version's own points, read
    errors = version_errors(predicted, measured)   # log2(predicted / measured), with the version
    version_summary(errors)                        # per version and implementation
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from ....harness.model.costmodel import VERSION as CURRENT_VERSION  # noqa: F401 (the page names it)
from ....implspec import book_order
from ...presets import ChainParams

# each version's out-of-sample n (in no chapter grid, nor in an earlier version's check)
MODEL_CHECK_LINKS = {2: (3, 6), 3: (5, 7)}
FIRST_VERSION = 1  # what a prediction saved before versions were recorded is
BOUND = 1.0  # |median log2 error| within which the model counts as right for an implementation (2x)


def model_check_params(P: ChainParams, version: int | None = None) -> ChainParams:
    """The chapter's parameters at ``version``'s ``MODEL_CHECK_LINKS`` (None: every version's) under
    every policy (its N, K, caps and implementations): the points predicted before measured."""
    from . import widened

    links = MODEL_CHECK_LINKS[version] if version is not None else sorted({n for v in MODEL_CHECK_LINKS.values() for n in v})
    return replace(widened(P), links=tuple(links), engines=())


def model_check(P: ChainParams) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(predictions, measurements) of every version's check points as saved in the machine's data
    files (``saved_rows``): read, never predicted or measured here
    (``benchmarks/chain_model_check.py`` does both, in that order)."""
    from . import chain_points, saved_rows

    return saved_rows(P, chain_points(model_check_params(P))[0])


def version_errors(predicted: pd.DataFrame, measured: pd.DataFrame) -> pd.DataFrame:
    """``prediction_errors`` with each prediction's ``model_version`` (those saved before versions
    were recorded: ``FIRST_VERSION``)."""
    from . import KEY, prediction_errors

    errors = prediction_errors(predicted, measured)
    if errors.empty:
        return errors.assign(model_version=pd.Series(dtype=int))
    version = (predicted["model_version"] if "model_version" in predicted else pd.Series(pd.NA, index=predicted.index))
    versions = predicted[KEY].assign(model_version=version.fillna(FIRST_VERSION).astype(int))
    return errors.merge(versions, on=KEY, how="left")


def version_summary(errors: pd.DataFrame) -> pd.DataFrame:
    """Per model version and implementation: points, the median and range of log2 errors, the share
    within 2x, and whether |median| ≤ ``BOUND`` (``right``)."""
    cols = ["model_version", "impl", "points", "median", "low", "high", "within 2x", "right"]
    if errors.empty:
        return pd.DataFrame(columns=cols)
    g = errors.groupby(["model_version", "impl"])["log2_error"]
    out = pd.DataFrame({"points": g.size(), "median": g.median(), "low": g.min(), "high": g.max(),
                        "within 2x": g.apply(lambda e: float((e.abs() <= 1).mean()))}).reset_index()
    out["right"] = out["median"].abs() <= BOUND
    order = {impl: i for i, impl in enumerate(book_order(out["impl"].unique()))}
    return out.sort_values(["model_version", "impl"], key=lambda s: s.map(order) if s.name == "impl" else s)[cols] \
        .reset_index(drop=True)


def check_sentence(errors: pd.DataFrame, version: int) -> str:
    """What ``version``'s predictions say against their measurements, by the rule |median log2
    error| ≤ ``BOUND`` per implementation ("" where none of its points is saved)."""
    e = errors[errors["model_version"] == version] if len(errors) else errors
    if e.empty:
        return ""
    v = version_summary(e)
    wrong = v[~v["right"]]
    medians = ", ".join(f"`{r.impl}` {r.median:+.1f}" for r in v.itertuples())
    verdict = ("within 2× for every implementation" if wrong.empty else
               f"not within 2× for {', '.join(f'`{i}`' for i in wrong['impl'])}")
    links = ", ".join(map(str, sorted(e["links"].unique())))
    return (f"Version {version}, on {len(e)} points (n = {links}) it predicted before they were measured: median "
            f"log₂ error {medians} — {verdict} (rule: |median| ≤ {BOUND:g}).")
