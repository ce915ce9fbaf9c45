"""The paper's comparisons in words, as the chapters and the introduction state them: a comparison
judged over what a chapter measured it on (``Labelled`` records: the chain's n, the engines' models)
with each verdict and what got it (``tally``, ``comparisons_text``), and the paper's Fig 2 claim
against the engines' measurements with its gap taken apart (``fig2_text``, ``split_text``). The
introduction (``overview``) tabulates them; the chain's and the engines' pages open with them. Every
number is read from the records and frames; nothing is typed here but the words around them.

    comparisons.tally(group)                  # "reproduced: n = 1; not reproduced here: n = 2, 4"
    comparisons.comparisons_text(records)     # each comparison in one clause, ours beside the paper's
    comparisons.fig2_text(gap, split)         # the paper's Fig 2 claim against the engines' measurements
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..harness.presets import repo_root
from .claims.analysis import SIZE_FACTOR, VERDICTS
from .claims.base import Finding
from .claims.paper import PAPER
from .format import fmt_x

# the studies the introduction's table covers, in its order: CartPole's chapters (every chapter with
# ``findings``), then the chain's and the engines' chapters, whose records their own modules judge
CARTPOLE, CHAIN, ENGINES = "CartPole", "the chain", "MuJoCo's engines"
STUDY_OF = {"chain": CHAIN, "engines": ENGINES}


@dataclass(frozen=True)
class Labelled:
    """One finding with the chapter that judged it and what, within the chapter, it was measured on."""

    chapter: str  # book/<chapter>.md
    label: str  # "n = 2", "n = 2, MLP", "hopper + MLP"; "" for CartPole's (one row per comparison)
    finding: Finding
    policy: str = "none"  # the policy it was measured under (the chain's and the engines' findings)
    links: int | None = None  # the chain's n (None: not one n)

    @property
    def study(self) -> str:
        return STUDY_OF.get(self.chapter, CARTPOLE)


def chapter_title(name: str) -> str:
    """The chapter's title (the first heading of book/<name>.md), or its name without the book."""
    path = repo_root() / "book" / f"{name}.md"
    if path.is_file():
        found = re.search(r"^# (.+)$", path.read_text(), flags=re.MULTILINE)
        if found:
            return found.group(1).strip()
    return name


def chapter_link(name: str) -> str:
    """A Markdown link to the chapter, as the book's pages link each other (``name.md``)."""
    return f"[{chapter_title(name)}]({name}.md)"


def labels_text(labels: list[str]) -> str:
    """"n = 1", "n = 3" -> "n = 1, 3"; other labels listed ("; " between labels that hold a comma,
    as the chain's "n = 2, MLP")."""
    if any(", " in lab for lab in labels):
        return "; ".join(labels)
    if labels and all(lab.startswith("n = ") for lab in labels):
        return "n = " + ", ".join(lab[4:] for lab in labels)
    return ", ".join(labels)


def _tally_parts(group: list[Labelled]) -> list[tuple[str, str]]:
    """(verdict, what got it) in ``VERDICTS``' order: the labels, or their count where more than three."""
    parts = []
    for v in VERDICTS:
        labels = [x.label for x in group if x.finding.verdict == v]
        if labels:
            what = (labels_text(labels) if len(labels) <= 3 else f"all {len(labels)}" if len(labels) == len(group) else
                    f"{len(labels)} of {len(group)}")
            parts.append((v, what))
    return parts


def _borderline(group: list[Labelled], fmt: str = " ({} borderline)") -> str:
    count = sum(bool(x.finding.borderline) for x in group)
    return fmt.format(count) if count else ""


def tally(group: list[Labelled]) -> str:
    """The verdicts of one comparison over what a chapter measured it on, in ``VERDICTS``' order:
    each verdict with what got it (its count where more than three did), borderline ones counted."""
    return "; ".join(f"{v}: {what}" for v, what in _tally_parts(group)) + _borderline(group)


def comparisons_text(records) -> str:
    """Each comparison of the paper's that ``records`` judge as one clause of a sentence (a
    chapter's first paragraph): the finding, the paper's claim with its value, ours over what it
    was measured on (``_ours``) and each verdict with what got it in brackets; "; " between them."""
    groups: dict[str, list[Labelled]] = {}
    for x in records:
        groups.setdefault(x.finding.key, []).append(x)
    return "; ".join(
        f"{g[0].finding.finding}, {_paper_says(g[0].finding)}: **{ours_text(g)}**, "
        + ", ".join(f"{v} ({what})" for v, what in _tally_parts(g)) + _borderline(g, ", {} borderline")
        for g in groups.values())


def ours_text(group: list[Labelled]) -> str:
    if len(group) == 1:
        label = group[0].label
        return group[0].finding.ours_text + ((" " if label.startswith("across") else " on ") + label if label else "")
    values = [x.finding.value for x in group if x.finding.value is not None and np.isfinite(x.finding.value)]
    if not values:
        return "n/a"
    unit = group[0].finding.unit
    text = (f"{min(values):.0f}–{max(values):.0f} %" if unit == "%" else
            fmt_x(values[0]) if fmt_x(min(values)) == fmt_x(max(values)) else f"{fmt_x(min(values))} to {fmt_x(max(values))}")
    policies = any(x.policy != "none" for x in group)
    what = ("(n, policy)" if policies else "n") if group[0].chapter == "chain" else "(model, policy)"
    return f"{text} over {len(group)} {what}"


@dataclass(frozen=True)
class Fig2:
    """The numbers ``fig2_text`` states, computed from the engines chapter's frames."""

    cartpole_runs_on: str | None  # what runs the CartPole line of Fig 2 redrawn
    models: tuple[str, ...]  # the robotics models set against it
    low: float | None  # CartPole's fastest rate over each model's fastest: the smallest and largest
    high: float | None
    within: int  # models within SIZE_FACTOR× of CartPole's rate (the paper's "similar")
    impl: str | None  # our fastest implementation of the twin model: where the split is measured
    mujoco_engine: str | None
    engine: float | None  # the twin model in ``impl`` over it in MuJoCo's fastest engine
    model: float | None  # CartPole in ``impl`` over the twin model in ``impl``
    gap: float | None  # engine × model
    engine_share: float | None  # log(engine) / log(gap)
    others: tuple[tuple[str, float, float], ...] = ()  # (impl, engine, model) of our other implementations


def fig2_numbers(gap: pd.DataFrame, split: pd.DataFrame) -> Fig2:
    """``gap``: engines.gap_table (every system's fastest rate, CartPole's over it); ``split``:
    engines.gap_split (its first row: our fastest implementation of the twin model)."""
    others = gap[~gap["system"].str.contains("(ours)", regex=False)] if len(gap) else pd.DataFrame()
    others = others[others["cartpole_over"].notna()] if len(others) else others
    cart = gap[gap["system"] == "CartPole (ours)"] if len(gap) else pd.DataFrame()
    ratios = others["cartpole_over"] if len(others) else pd.Series(dtype=float)
    within = int(((ratios <= SIZE_FACTOR) & (ratios >= 1 / SIZE_FACTOR)).sum())
    base = {"cartpole_runs_on": cart["runs_on"].iloc[0] if len(cart) else None,
            "models": tuple(others["system"]) if len(others) else (),
            "low": float(ratios.min()) if len(ratios) else None, "high": float(ratios.max()) if len(ratios) else None,
            "within": within}
    if split.empty:
        return Fig2(**base, impl=None, mujoco_engine=None, engine=None, model=None, gap=None, engine_share=None)
    top = split.iloc[0]
    return Fig2(**base, impl=top["impl"], mujoco_engine=top["mujoco_engine"], engine=float(top["engine"]),
                model=float(top["model"]), gap=float(top["gap"]), engine_share=float(top["engine_share"]),
                others=tuple((r["impl"], float(r["engine"]), float(r["model"])) for r in split.iloc[1:].to_dict("records")))


def _pct(share: float) -> str:
    return f"{share * 100:.0f} %"


def _part(engine: float, model: float) -> str:
    """The engine's part of engine × model on a log scale, where both are gains; "all" or "none" else."""
    if engine > 1 and model > 1:
        return _pct(np.log(engine) / np.log(engine * model))
    return "all" if engine > 1 else "none"


def _side(engine: float, model: float, impl: str) -> str:
    """Which factor is the larger part of CartPole's lead over the twin model (engine × model), by
    a rule that can go either way."""
    lead = "CartPole's lead over that model"
    if engine <= 1 and model <= 1:
        return f"CartPole has no lead over that model in `{impl}` to take apart"
    if model <= 1:
        return f"all of {lead} is the engine: in `{impl}` the chain runs at least as fast as CartPole"
    if engine <= 1:
        return f"none of {lead} is the engine: in `{impl}` the chain runs no faster than in MuJoCo"
    if engine > model:
        return (f"most of {lead} is the engine (MuJoCo's general-purpose step against code written for one model), "
                "not the model's cost")
    if model > engine:
        return f"most of {lead} is the model's cost, not the engine's generality"
    return f"the engine and the model take equal parts of {lead}"


def fig2_text(gap: pd.DataFrame, split: pd.DataFrame, where: str = "this machine", link: bool = True,
              others: bool = True, verdict: bool = False) -> str:
    """What the engines chapter measures of the paper's Fig 2 claim: CartPole's rate over each
    robotics model's, then that gap taken apart on the model measured both in MuJoCo and in our code
    (``engines.gap_split``): the engine's factor, the model's, and which is the larger. ``link``:
    name the engines chapter (not on its own page); ``others``: ``split_text``'s other
    implementations; ``verdict``: the "similar" as a verdict (``answers.similar_verdict``)."""
    from .answers import similar_verdict

    n = fig2_numbers(gap, split)
    at = f" ({chapter_link('engines')})" if link else ""
    if not n.models:
        return (f"No robotics model was measured{' for ' + chapter_link('engines') if link else ''} in this build: "
                "the paper's Fig 2 claim is not checked here.")
    similar = (f"all {len(n.models)} within {SIZE_FACTOR:g}× of it, as similar as Fig 2 shows them"
               if n.within == len(n.models) else
               f"none within {SIZE_FACTOR:g}× of it, where the paper's Fig 2 (XLA throughputs on a GPU) shows them similar"
               if n.within == 0 else
               f"{n.within} of {len(n.models)} within {SIZE_FACTOR:g}× of it")
    brax = sum(m.endswith("(Brax)") for m in n.models)
    whose = "MuJoCo's and Brax's" if 0 < brax < len(n.models) else "Brax's" if brax else "MuJoCo's"
    said = f": *{similar_verdict(n.within, len(n.models))}*" if verdict else ""
    text = (f"Measured on {where}{at}: our CartPole (`{n.cartpole_runs_on}`, "
            f"Fig 2's line) reaches **{fmt_x(n.low)}** to **{fmt_x(n.high)}** the environment-step rate of "
            f"{len(n.models)} robotics models ({whose}, each at its fastest engine and N): {similar}{said}.")
    return text + " " + split_text(gap, split, others)


def split_text(gap: pd.DataFrame, split: pd.DataFrame, others: bool = True) -> str:
    """Fig 2's gap taken apart (``engines.gap_split``) in words chosen by rules: the engine's
    factor on the one model measured both in MuJoCo and in our code, the model's factor in one
    engine of ours, which is the larger, and the same in our other implementations."""
    n = fig2_numbers(gap, split)
    if n.impl is None:
        return ("The gap is not taken apart here: that needs the chain at n = 2 measured both in MuJoCo "
                "and in our implementations.")
    share = (f" (**{fmt_x(n.gap)}** in `{n.impl}`; the engine is **{_pct(n.engine_share)}** of it on a log scale)"
             if n.engine > 1 and n.model > 1 else "")
    text = (f"On the one model measured both in MuJoCo and in our code, InvertedDoublePendulum's cart with two "
             f"links (without its rail limit: the chain of {chapter_link('chain')} at n = 2), our `{n.impl}` steps it at **{fmt_x(n.engine)}** "
             f"the rate of MuJoCo's fastest engine (`{n.mujoco_engine}`): the same model in another engine. In "
             f"`{n.impl}`, CartPole runs at **{fmt_x(n.model)}** the chain's rate: another model in the same engine. "
             f"So {_side(n.engine, n.model, n.impl)}{share}.")
    if n.others and others:
        flip = [i for i, e, m in n.others if (e > m) != (n.engine > n.model)]
        text += (" Measured the same way in " + ", ".join(f"`{i}`" for i, _, _ in n.others) + ", the engine's part is "
                 + ", ".join(_part(e, m) for _, e, m in n.others) + (" respectively" if len(n.others) > 1 else "")
                 + (f"; in {', '.join(f'`{i}`' for i in flip)} the "
                    + ("model's" if n.engine > n.model else "engine's") + " part is the larger." if flip else "."))
    return text


def _paper_says(f: Finding) -> str:
    """The paper's claim with its value labelled as the paper's ("… over gym (the paper's up to
    1,024×)"), or, where the paper states no number (the chain's F.4), where it says it."""
    claim = PAPER[f.key].claim
    if not (f.paper_text[:1].isdigit() or f.paper_text.startswith("≈")):
        return f"{claim} (the paper, {PAPER[f.key].where})"
    bound = next((b for b in (" up to", " at most") if claim.endswith(b)), "")
    return f"{claim.removesuffix(bound).rstrip(',')} (the paper's{bound} {f.paper_text})"


def claim_text(key: str, paper: str) -> str:
    """The paper's claim with its value: "…, up to 1,024×", "CUDA over XLA at K = 10^3: 113×"."""
    claim = PAPER[key].claim
    return f"{claim} {paper}" if claim.endswith((" up to", " at most", " at")) else f"{claim}: {paper}"
