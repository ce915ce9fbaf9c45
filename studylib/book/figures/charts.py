"""Altair helpers shared by the chapters' figures: log-2 axes, the implementations' colours,
the paper's values as dashed rules, titles. Charts render as SVG (crisp, searchable, checked by
the tests) through the default HTML renderer, which finds vega already loaded by the book's
_static/vega-offline.js (no CDN). Altair is imported (and configured) by the first helper that
draws, so ``studylib.book`` loads without it (``python -m studylib measure`` on a node without
the book's toolchain)."""

from __future__ import annotations

from functools import lru_cache

import pandas as pd

from ...implspec import specs
from ..presets import paper_impls


@lru_cache(maxsize=1)
def _altair():
    import altair as alt

    alt.renderers.set_embed_options(renderer="svg", actions={"export": True, "source": False, "compiled": False,
                                                             "editor": False})
    return alt


# Axis labels 2^k at integer k only (log-2 axes otherwise label fractional ticks as duplicates).
POW2_LABEL = ("abs(log(datum.value) / log(2) - round(log(datum.value) / log(2))) < 0.01 ? "
              "'2^' + format(round(log(datum.value) / log(2)), 'd') : ''")


def x_n(title="parallel environments N", field_="num_envs", domain=None):
    alt = _altair()

    scale = alt.Scale(type="log", base=2, domain=domain) if domain else alt.Scale(type="log", base=2)
    return alt.X(f"{field_}:Q", scale=scale, axis=alt.Axis(title=title, labelExpr=POW2_LABEL, tickCount=8))


def y_rate(title="throughput (samples/s, log scale)", field_="samples_per_s"):
    alt = _altair()

    return alt.Y(f"{field_}:Q", scale=alt.Scale(type="log"), axis=alt.Axis(title=title, format="~s"))


# The one palette of the book: every chart that colours by implementation takes its colour from
# here, so an implementation keeps its colour from one figure to the next. Our implementations'
# colours are their records' (studylib.implspec); these are the other names the book charts: the
# training chapter's ``fused-step`` and the peers.
PEER_COLORS = {"fused-step": "#c49c94", "gymnasium-vector": "#e377c2", "gymnax": "#17becf", "envpool": "#bcbd22"}
# For names outside the palette (e.g. the training chapter's peer trainers), in order of appearance.
OTHER_COLORS = ("#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#444444")


def impl_colors() -> dict[str, str]:
    """Name -> colour: every registered implementation's (its record's), then ``PEER_COLORS``."""
    return {**{s.name: s.color for s in specs()}, **PEER_COLORS}


IMPL_COLORS = impl_colors()  # as registered at import; impl_scale reads the records live


def impl_scale(domain=None):
    """An Altair scale mapping each implementation of ``domain`` to its colour in ``impl_colors()``
    (other names take ``OTHER_COLORS`` in turn)."""
    alt = _altair()

    domain = list(domain or paper_impls())
    colors = impl_colors()
    others = iter(OTHER_COLORS * (1 + len(domain) // len(OTHER_COLORS)))
    return alt.Scale(domain=domain, range=[colors.get(d) or next(others) for d in domain])


def legend_labels(domain) -> str | None:
    """A Vega label expression naming each implementation of ``domain`` by its record's ``label``
    where that differs from its name (None where none does: the legend shows the names)."""
    import json

    labels = {s.name: s.label for s in specs() if s.label != s.name and s.name in domain}
    expr = "datum.label"
    for name, label in labels.items():
        expr = f"datum.label == {json.dumps(name)} ? {json.dumps(label)} : ({expr})"
    return expr if labels else None


def impl_color(domain=None, field_="impl", title="implementation"):
    """Colour by implementation (``field_`` holds the implementation's name), from the one palette;
    the legend shows the records' labels."""
    alt = _altair()

    scale = impl_scale(domain)
    expr = legend_labels(scale.domain)
    legend = alt.Legend(orient="bottom", columns=2, **({"labelExpr": expr} if expr else {}))
    return alt.Color(f"{field_}:N", title=title, scale=scale, legend=legend)


def tooltip(*extra):
    alt = _altair()

    base = [alt.Tooltip("impl:N", title="impl"), alt.Tooltip("num_envs:Q", title="N", format=","),
            alt.Tooltip("steps:Q", title="K"), alt.Tooltip("samples_per_s:Q", title="samples/s", format=".3s"),
            alt.Tooltip("samples_per_s_min:Q", title="min", format=".3s"),
            alt.Tooltip("samples_per_s_max:Q", title="max", format=".3s")]
    return base + [alt.Tooltip(e) if isinstance(e, str) else e for e in extra]


def paper_rules(values: list[dict], axis="y"):
    """Dashed rules with a text label for the paper's values: [{"value": v, "label": "..."}]."""
    alt = _altair()

    d = pd.DataFrame(values)
    enc = alt.Y("value:Q") if axis == "y" else alt.X("value:Q")
    rule = alt.Chart(d).mark_rule(strokeDash=[6, 4], color="#555", strokeWidth=1.2).encode(
        enc, tooltip=[alt.Tooltip("label:N", title="paper")])
    if axis == "y":
        text = alt.Chart(d).mark_text(align="left", baseline="bottom", dx=4, dy=-3, fontSize=11, color="#333")
        text = text.encode(enc, x=alt.value(4), text="label:N")
    else:  # vertical label reading upwards, inside the plot, left of the rule
        text = alt.Chart(d).mark_text(align="right", baseline="bottom", angle=270, dx=-4, dy=-3, fontSize=11, color="#333")
        text = text.encode(enc, y=alt.value(4), text="label:N")
    return rule + text


def line_points(base):
    """Lines plus filled points. The points ignore strokeDash, so a strokeDash legend shows dashes
    (with ``mark_line(point=True)`` its symbols come out blank)."""
    alt = _altair()

    return base.mark_line() + base.mark_point(filled=True, size=30, opacity=1).encode(strokeDash=alt.value([1, 0]))


def finish(chart, title: str, subtitle: str | list[str] | None = None):
    alt = _altair()

    if isinstance(subtitle, (list, tuple)):  # several lines; empty ones dropped
        subtitle = [line for line in subtitle if line] or None
    t = alt.TitleParams(title, subtitle=subtitle or "", anchor="start", fontSize=14, subtitleFontSize=11)
    return chart.properties(title=t).configure_axis(labelFontSize=11, titleFontSize=12, gridOpacity=0.4).configure_legend(
        labelFontSize=11, titleFontSize=12, labelLimit=320, orient="bottom", direction="vertical")
