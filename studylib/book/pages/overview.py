"""The introduction's answer (book/intro.md): every verdict the book reaches on the paper's
comparisons — CartPole's F.1–F.4, the same comparisons on the chain and on MuJoCo's engines — as one
table whose rows link their chapters, and the paper's Fig 2 claim set against what the engines
chapter measures. Every number is read from the chapters' records and frames; nothing is typed here
but the words around them.

    S = overview.study(preset=preset)   # every chapter's records, Fig 2's gap and its split, read once
    T = overview.overview(S.records)    # one row per (chapter, comparison of the paper's)
    overview.overview_md(T)             # that table in Markdown, each row linking its chapter
    overview.counts_md(S.records)       # each study's verdicts, one sentence each
    overview.fig2_text(S.gap, S.split)  # the paper's Fig 2 claim against the engines' measurements
    overview.machines_text(folders)     # the other machines' snapshots, the GPU's F.1 and F.3
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...harness.presets import repo_root
from ..claims.analysis import SIZE_FACTOR, VERDICTS
from ..claims.base import Finding, verdict_text
from ..format import fmt_x
from ..claims.paper import PAPER

# the studies the table covers, in its order: CartPole's chapters (every chapter with ``findings``),
# then the chain's and the engines' chapters, whose records their own modules judge
CARTPOLE, CHAIN, ENGINES = "CartPole", "the chain", "MuJoCo's engines"
STUDY_OF = {"chain": CHAIN, "engines": ENGINES}
COLUMNS = ["study", "chapter", "finding", "key", "claim", "paper", "ours", "verdict", "records", "verdicts",
           "borderline"]


@dataclass(frozen=True)
class Labelled:
    """One finding with the chapter that judged it and what, within the chapter, it was measured on."""

    chapter: str  # book/<chapter>.md
    label: str  # "n = 2", "hopper + MLP"; "" for CartPole's (one row per comparison)
    finding: Finding

    @property
    def study(self) -> str:
        return STUDY_OF.get(self.chapter, CARTPOLE)


@dataclass(frozen=True)
class Study:
    """What the introduction shows, read once (``study``)."""

    records: tuple[Labelled, ...]
    gap: pd.DataFrame = field(default_factory=pd.DataFrame)  # engines.gap_table of Fig 2 redrawn
    split: pd.DataFrame = field(default_factory=pd.DataFrame)  # engines.gap_split


def study(preset=None, data_dir=None, machine=None) -> Study:
    """Every chapter's findings (CartPole's chapters through ``CHAPTERS``, then the chain's and the
    engines'), Fig 2's gap (``engines.gap_table``) and its split (``engines.gap_split``), from the
    same plans the chapters run: this machine's missing points measured (resuming), another
    machine's snapshot (``machine``) read only."""
    from ...harness.data.provenance import machine_key
    from ..claims import chain as claims_chain, engines as claims_engines
    from . import engines
    from .brax import brax_available, brax_data
    from .chain import chain_data
    from ..chapters import CHAPTERS, params
    from ..plans import cartpole_fig2_data, fusion_data

    kw = dict(preset=preset, data_dir=data_dir, **({} if machine in (None, machine_key()) else {"machine": machine}))
    records = [Labelled(ch.name, "", r) for ch in CHAPTERS.values() if ch.findings for r in ch.findings(ch.params(**kw))]
    P = params("chain", **kw)
    chain_rows = chain_data(P)[1]
    records += [Labelled("chain", label, r) for label, r in claims_chain.labelled_findings(P, chain_rows)]
    P = params("engines", **kw)
    engine_rows = engines.engine_data(P)
    records += [Labelled("engines", model + (" + MLP" if policy == "mlp" else ""), r)
                for (model, policy), r in claims_engines.labelled_findings(P, engine_rows)]
    cartpole_P = params("cartpole", **kw)
    fig2 = cartpole_fig2_data(cartpole_P)
    brax = brax_data(cartpole_P) if brax_available()[0] else pd.DataFrame()
    gap = engines.gap_table(engines.fig2_frame(engine_rows, fig2, chain_rows, brax))
    frames = [f for f in (fig2, fusion_data(params("fusion", **kw))) if len(f)]  # CartPole without a policy
    cartpole = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return Study(tuple(records), gap, engines.gap_split(engine_rows, cartpole, chain_rows))


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


def _labels(labels: list[str]) -> str:
    """"n = 1", "n = 3" -> "n = 1, 3"; other labels listed."""
    if labels and all(lab.startswith("n = ") for lab in labels):
        return "n = " + ", ".join(lab[4:] for lab in labels)
    return ", ".join(labels)


def _tally_parts(group: list[Labelled]) -> list[tuple[str, str]]:
    """(verdict, what got it) in ``VERDICTS``' order: the labels, or their count where more than three."""
    parts = []
    for v in VERDICTS:
        labels = [x.label for x in group if x.finding.verdict == v]
        if labels:
            what = (_labels(labels) if len(labels) <= 3 else f"all {len(labels)}" if len(labels) == len(group) else
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
        f"{g[0].finding.finding}, {_paper_says(g[0].finding)}: **{_ours(g)}**, "
        + ", ".join(f"{v} ({what})" for v, what in _tally_parts(g)) + _borderline(g, ", {} borderline")
        for g in groups.values())


def _ours(group: list[Labelled]) -> str:
    if len(group) == 1:
        label = group[0].label
        return group[0].finding.ours_text + ((" " if label.startswith("across") else " on ") + label if label else "")
    values = [x.finding.value for x in group if x.finding.value is not None and np.isfinite(x.finding.value)]
    if not values:
        return "n/a"
    unit = group[0].finding.unit
    text = (f"{min(values):.0f}–{max(values):.0f} %" if unit == "%" else
            fmt_x(values[0]) if fmt_x(min(values)) == fmt_x(max(values)) else f"{fmt_x(min(values))} to {fmt_x(max(values))}")
    what = "n" if group[0].chapter == "chain" else "(model, policy)"
    return f"{text} over {len(group)} {what}"


def overview(records) -> pd.DataFrame:
    """One row per (chapter, comparison of the paper's), in the records' order: the study, the
    chapter, F.x, the paper's claim and value, ours (a range over what the chapter measured it on,
    where more than one) and the verdict (a tally there); ``verdicts``: {verdict: count}."""
    groups: dict[tuple[str, str], list[Labelled]] = {}
    for x in records:
        groups.setdefault((x.chapter, x.finding.key), []).append(x)
    rows = []
    for (chapter, key), group in groups.items():
        f = group[0].finding
        counts = {v: sum(x.finding.verdict == v for x in group) for v in VERDICTS}
        rows.append({"study": group[0].study, "chapter": chapter, "finding": f.finding, "key": key,
                     "claim": PAPER[key].claim, "paper": f.paper_text,
                     "ours": _ours(group), "verdict": tally(group) if group[0].label else verdict_text(f),
                     "records": len(group), "verdicts": {v: c for v, c in counts.items() if c},
                     "borderline": sum(bool(x.finding.borderline) for x in group)})
    return pd.DataFrame(rows, columns=COLUMNS)


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def overview_md(T: pd.DataFrame) -> str:
    """The overview as a Markdown table (MyST renders it, links included): one row per comparison."""
    head = ["on", "finding", "the paper's claim", "paper", "measured here", "verdict", "chapter"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in T.to_dict("records"):
        lines.append("| " + " | ".join(_cell(c) for c in (
            r["study"], r["finding"], r["claim"], r["paper"], r["ours"], r["verdict"], chapter_link(r["chapter"]))) + " |")
    return "\n".join(lines)


def _count_text(group: list[Labelled]) -> str:
    counts = {v: sum(x.finding.verdict == v for x in group) for v in VERDICTS}
    return ", ".join(f"**{c}** {v}" for v, c in counts.items() if c)


def _findings_text(group: list[Labelled]) -> str:
    """"F.1–F.3", "F.1 and F.3": the findings a study's records judge."""
    names = sorted({x.finding.finding for x in group})
    nums = [int(f.split(".")[1]) for f in names]
    if len(names) >= 3 and nums == list(range(nums[0], nums[-1] + 1)):
        return f"{names[0]}–{names[-1]}"
    return " and ".join([", ".join(names[:-1]), names[-1]]) if len(names) > 1 else "".join(names)


def counts_md(records, where: str = "this machine") -> str:
    """Each study's verdicts in one sentence, with the chapters that judge them linked; a study
    without a record says it was not measured."""
    by: dict[str, list[Labelled]] = {CARTPOLE: [], CHAIN: [], ENGINES: []}
    for x in records:
        by[x.study].append(x)
    cart, chain, eng = by[CARTPOLE], by[CHAIN], by[ENGINES]
    chapters = list(dict.fromkeys(x.chapter for x in cart))
    parts = [f"On {where}, **CartPole** (" + ", ".join(chapter_link(c) for c in chapters) + "): "
             + (f"{len(cart)} comparisons ({_findings_text(cart)}), {_count_text(cart)}." if cart else "not measured.")]
    links = list(dict.fromkeys(x.label for x in chain if x.label.startswith("n = ")))  # not F.4's "across n"
    parts.append(f"**An articulated robot**, the chain of {chapter_link('chain')}"
                 + (f" at {_labels(links)} links: {len(chain)} comparisons ({_findings_text(chain)}, simulation only), "
                    f"{_count_text(chain)}." if chain else ": not measured."))
    models = list(dict.fromkeys(x.label.split(" + ")[0] for x in eng))
    parts.append(f"**Real robotics engines**, {chapter_link('engines')}"
                 + (f" on {len(models)} MuJoCo models ({', '.join(models)}): {len(eng)} comparisons "
                    f"({_findings_text(eng)}), {_count_text(eng)}." if eng else ": not measured."))
    return " ".join(parts)


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
    from ..answers import similar_verdict

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


def _claim(key: str, paper: str) -> str:
    """The paper's claim with its value: "…, up to 1,024×", "CUDA over XLA at K = 10^3: 113×"."""
    claim = PAPER[key].claim
    return f"{claim} {paper}" if claim.endswith((" up to", " at most", " at")) else f"{claim}: {paper}"


def machines_text(folders: dict, this: str | None = None) -> str:
    """How many machines' snapshots the data hold (the "Across machines" page sets their F.1–F.4
    beside the paper) and, for each one with a GPU other than ``this``, its F.1 and F.3 verdicts."""
    from .machines import findings_by_machine
    from ..presets import machine_info_of

    text = (f"The data hold **{len(folders)}** machines' measurements; {chapter_link('machines')} sets each "
            "one's F.1–F.4 beside the paper's.")
    gpus = {k: machine_info_of(f).get("gpu") for k, f in folders.items() if k != this and machine_info_of(f).get("gpu")}
    if not gpus:
        return text
    F = findings_by_machine({k: folders[k] for k in gpus})
    for key, gpu in gpus.items():
        rows = F[(F["machine"] == key) & F["finding"].isin(["F.1", "F.3"])] if len(F) else F
        if not len(rows):
            text += f" The snapshot measured on an {gpu} holds no F.1 or F.3 sweep."
            continue
        text += (f" On the machine with an **{gpu}** (`{key}`): " + "; ".join(
            f"{r['finding']} ({_claim(r['key'], r['paper'])} in the paper) **{r['ours']}**, *{verdict_text(r)}*"
            for r in rows.to_dict("records")) + ".")
    return text
