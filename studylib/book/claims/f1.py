"""F.1 (§3.3), vectorization over gym: "Both DL framework (PyTorch) and ML compiler (XLA) GPU
vectorization approaches can provide up to a 1024× speedup in data collection over OpenAI gym."
and "Using multiple CPU cores with C++ only accounts for at most a 4× speedup over the single-core
OpenAI implementation."  Both are claims about the largest speedup: our summary is the largest
over N (``vectorization_rows``).
"""

from __future__ import annotations

import pandas as pd

from .analysis import LARGEST, best_rates_by_n, ratio_by_n
from .base import Finding, ratio_reason, row
from ..format import fmt_x, pow2_label
from .paper import PAPER
from ..presets import ChapterParams, machine_facts


def vectorization_rows(P: ChapterParams, v: pd.DataFrame) -> list[Finding]:
    """F.1: the best vectorized implementation, and cpp, over gym at each N (each at its best K);
    the paper's "up to" and "at most" are the largest over N, so ours is too."""
    best = v.groupby(["impl", "num_envs"])["samples_per_s"].max().unstack(0)
    if "gym" not in best:
        return []
    facts, rows = machine_facts(P), []
    gym = best_rates_by_n(v[v["impl"] == "gym"])
    vec = [i for i in ("torch", "jax") if i in best]  # the paper's F.1: PyTorch and XLA (CUDA is F.3's)
    if vec:
        fastest = best_rates_by_n(v[v["impl"].isin(vec)])
        ratios = ratio_by_n(fastest, gym)
        sp = ratios["value"]
        n = sp.idxmax() if len(sp) else None
        top = best.loc[n, vec].idxmax() if n is not None else None
        steps = ratio_reason(fastest, gym, ratios, top, "gym", LARGEST) + ", inference included" if n is not None else ""
        paper = fmt_x(PAPER["f1_gpu_over_gym"].value)
        if n is None:
            reason = ""
        elif facts.get("gpu"):
            reason = (f"{steps}; gym is measured up to N = {pow2_label(best['gym'].dropna().index.max())} (its work "
                      f"cap), the paper's {paper} is at N up to {pow2_label(PAPER['plateau_torch'].value)}")
        else:
            reason = (f"{top} runs on the same {facts.get('cores', '?')} CPU cores as gym's one: vectorizing removes "
                      f"gym's per-environment Python calls ({steps}) but adds no parallel hardware; the paper's "
                      f"{paper} is a GPU's")
        rows.append(row("F.1", "speedup", "best vectorized (torch/jax) over gym, largest over N",
                        "f1_gpu_over_gym", ratios, reason, summary=LARGEST))
    if "cpp" in best:
        cpp = best_rates_by_n(v[v["impl"] == "cpp"])
        ratios = ratio_by_n(cpp, gym)
        sp = ratios["value"]
        n = sp.idxmax() if len(sp) else None
        ours = sp.max() if len(sp) else None
        if ours is not None and ours <= 1.05:
            reason = f"cpp is not faster than gym at any N measured (at best {fmt_x(ours)})"
        else:
            reason = (ratio_reason(cpp, gym, ratios, "cpp", "gym", LARGEST) + ", the MLP in PyTorch for both: our cpp "
                      "steps all N environments in one native call per step, in SIMD lanes on every core (gym: one "
                      "Python call per environment); the paper's C++ used threads over shared memory and is not "
                      "described as vectorized") if n is not None else ""
        rows.append(row("F.1", "at most", "cpp (multi-core C++) over gym, largest over N",
                        "f1_cpp_over_gym", ratios, reason, summary=LARGEST))
    return rows
