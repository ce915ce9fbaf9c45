"""How the chapters write numbers and small tables: 2^k labels, speedups, rates, Markdown, HTML."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..harness.table import fmt_bytes  # noqa: F401  (the command line's, re-exported for the chapters)


def pow2_label(n) -> str:
    n = float(n)
    if n > 0 and math.isfinite(n):
        k = math.log2(n)
        if abs(k - round(k)) < 1e-9:
            return f"2^{int(round(k))}"
    return f"{n:g}"


def fmt_list(values) -> str:
    values = list(values)
    labels = [pow2_label(v) if v >= 16 else f"{v:g}" for v in values]
    return "{" + ", ".join(labels) + "}"


def fmt_x(v) -> str:
    """A speedup: 3 significant digits and ×."""
    if v is None or not np.isfinite(v):
        return "n/a"
    return f"{v:.3g}×" if v < 1000 else f"{v:,.0f}×"


def fmt_x_range(values) -> str:
    """Speedups as a range "a–b", or one value where they agree to 3 digits (e.g. a single one)."""
    lo, hi = fmt_x(min(values)), fmt_x(max(values))
    return lo if lo == hi else f"{lo}–{hi}"


def fmt_time(seconds) -> str:
    """A duration with its unit: ns, µs, ms or s, 3 significant digits."""
    if seconds is None or not np.isfinite(seconds):
        return "n/a"
    for unit, scale in (("s", 1), ("ms", 1e-3), ("µs", 1e-6)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def fmt_rate(v) -> str:
    if v is None or not np.isfinite(v):
        return "n/a"
    return f"{v:.3g} samples/s"


def md(text: str):
    from IPython.display import Markdown

    return Markdown(text)


def table(df: pd.DataFrame, cols: dict, floatfmt=None):
    """A small HTML table: ``cols`` maps column -> header; numbers formatted readably."""
    from IPython.display import HTML

    d = df[list(cols)].rename(columns=cols).copy()
    for c in d.columns:
        if pd.api.types.is_float_dtype(d[c]):
            d[c] = d[c].map(lambda v: "" if pd.isna(v) else (floatfmt or "{:.3g}").format(v))
    # A wide table scrolls sideways inside its own box instead of being cut off at the page's edge.
    return HTML('<div style="overflow-x:auto;max-width:100%">'
                + d.to_html(index=False, border=0, classes="table", escape=True) + "</div>")
