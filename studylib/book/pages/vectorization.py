"""The vectorization chapter's (Fig 4) tables, computed here once; the page renders them and F.1's
records (``claims.vectorization_rows``), which read the same ratios.

    plat = vectorization.plateaus(df, impls)      # per implementation: best rate, its N, the plateau's N
    sp = vectorization.speedup_over_gym(df)       # per (implementation, N): best rate over gym's
    vectorization.answer(P, found, df)            # the page's first paragraph: F.1's records in words
"""

from __future__ import annotations

import pandas as pd

from .. import answers
from ..claims.analysis import best_rates_by_n, plateau_n, ratio_by_n
from ..format import pow2_label
from ..claims.paper import PAPER


def scalar_baseline() -> str:
    """F.1's baseline, the paper's "single-core OpenAI implementation" (§3.3): the implementation
    whose record steps each environment by a Python call (dispatch "python-loop")."""
    from ...implspec import specs

    return next(r.name for r in specs() if r.dispatch == "python-loop")


PLATEAU_FRACTION = 0.9  # the plateau: the smallest N reaching this share of the implementation's best


def plateaus(df: pd.DataFrame, impls) -> pd.DataFrame:
    """Per implementation in ``impls`` (measured in ``df``): its best throughput over N and K, the N
    of it, the smallest N reaching ``PLATEAU_FRACTION`` of it (``analysis.plateau_n``), the largest
    N measured, and the paper's plateau where it reports one."""
    rows = []
    for impl in impls:
        d = df[df["impl"] == impl]
        if not len(d):
            continue
        paper = PAPER.get(f"plateau_{impl}")
        rows.append({"impl": impl, "best samples/s": float(d["samples_per_s"].max()),
                     "at N": pow2_label(d.loc[d["samples_per_s"].idxmax(), "num_envs"]),
                     "plateau from N (90 %)": pow2_label(plateau_n(d, PLATEAU_FRACTION)),
                     "largest N measured": pow2_label(d["num_envs"].max()),
                     "paper's plateau (GPU for torch/jax)": pow2_label(paper.value) if paper else "—"})
    return pd.DataFrame(rows)


def speedup_over_gym(df: pd.DataFrame) -> pd.DataFrame:
    """Per (implementation other than gym, N measured with gym): its best throughput over K divided
    by gym's best at the same N, as F.1 computes it (``analysis.best_rates_by_n``, ``ratio_by_n``),
    with the range the repeats allow (``low``, ``high``). Empty without gym. ``attrs["gym_largest_n"]``: the
    largest N gym was measured at (its work cap)."""
    cols = ["num_envs", "impl", "speedup", "low", "high"]
    base = scalar_baseline()
    if base not in set(df["impl"]):
        return pd.DataFrame(columns=cols)
    gym = best_rates_by_n(df[df["impl"] == base])
    frames = []
    for impl in dict.fromkeys(df["impl"]):
        if impl == base:
            continue
        out = ratio_by_n(best_rates_by_n(df[df["impl"] == impl]), gym)
        frames.append(out.rename(columns={"value": "speedup"}).rename_axis("num_envs").reset_index().assign(impl=impl))
    out = pd.concat(frames, ignore_index=True)[cols] if frames else pd.DataFrame(columns=cols)
    out["num_envs"] = out["num_envs"].astype(int)
    out.attrs["gym_largest_n"] = int(df[df["impl"] == base]["num_envs"].max())
    return out


def answer(P, found, df: pd.DataFrame) -> str:
    """The chapter's first paragraph: F.1's records (``claims.vectorization_rows``) in words, ours
    beside the paper's with their verdicts, the best ratio's N named as the conclusion names it, so
    the first screen and the conclusion state the same numbers; what is missing where F.1 has no
    record."""
    base = scalar_baseline()
    top = next((f for f in found if f.key == "f1_gpu_over_gym"), None)
    what = {}
    if top is not None and top.numbers.get("at_n") is not None:
        n = top.numbers["at_n"]
        largest = df.loc[df["impl"] == base, "num_envs"].max()
        what[top.key] = (f"{top.quantity} (at N = {pow2_label(n)}"
                         + (", the largest N where gym was measured)" if n == largest else ")"))
    measured = ", ".join(f"`{i}`" for i in dict.fromkeys(df["impl"])) if len(df) else "nothing"
    return answers.findings_answer(
        found, f"Measured on {answers.where(P)}, collecting with the full loop (simulation and the MLP's inference):",
        f"F.1 needs `{base}` measured beside a vectorized implementation; this run measured {measured}, so it is "
        "not answered here.", what)
