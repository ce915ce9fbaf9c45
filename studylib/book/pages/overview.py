"""The introduction's answer (book/intro.md): every verdict the book reaches on the paper's
comparisons — CartPole's F.1–F.4, the same comparisons on the chain and on MuJoCo's engines — as one
table whose rows link their chapters, and the paper's Fig 2 claim set against what the engines
chapter measures (both worded in ``comparisons``). Every number is read from the chapters' records
and frames; nothing is typed here but the words around them.

    S = overview.study(preset=preset)   # every chapter's records, Fig 2's gap and its split, read once
    T = overview.overview(S.records)    # one row per (chapter, comparison of the paper's)
    overview.overview_md(T)             # that table in Markdown, each row linking its chapter
    overview.counts_md(S.records)       # each study's verdicts, one sentence each
    overview.fig2_text(S.gap, S.split)  # the paper's Fig 2 claim against the engines' measurements
    overview.machines_text(folders)     # the other machines' snapshots, the GPU's F.1 and F.3
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from .. import answers
from ..claims.analysis import VERDICTS
from ..claims.base import verdict_text
from ..claims.paper import PAPER
# the comparisons in words (their own module: the chain's and the engines' pages state them too);
# re-exported here, where the introduction and its tests have always read them
from ..comparisons import (CARTPOLE, CHAIN, ENGINES, STUDY_OF, Fig2, Labelled, chapter_link, chapter_title,  # noqa: F401
                          claim_text, comparisons_text, fig2_numbers, fig2_text, labels_text, ours_text, split_text,
                          tally)

COLUMNS = ["study", "chapter", "finding", "key", "claim", "paper", "ours", "verdict", "records", "verdicts",
           "borderline"]


@dataclass(frozen=True)
class Study:
    """What the introduction shows, read once (``study``)."""

    records: tuple[Labelled, ...]
    gap: pd.DataFrame = field(default_factory=pd.DataFrame)  # engines.gap_table of Fig 2 redrawn
    split: pd.DataFrame = field(default_factory=pd.DataFrame)  # engines.gap_split
    fusion: str = ""  # the chain chapter's answer to §7 (chain.fusion_conclusion), its first paragraph


def study(preset=None, data_dir=None, machine=None) -> Study:
    """Every chapter's findings (CartPole's chapters through ``CHAPTERS``, then the chain's and the
    engines'), Fig 2's gap (``engines.gap_table``) and its split (``engines.gap_split``), from the
    same plans the chapters run: this machine's missing points measured (resuming), another
    machine's snapshot (``machine``) read only."""
    from ...harness.data.provenance import machine_key
    from ..claims import chain as claims_chain, engines as claims_engines
    from . import engines
    from .brax import brax_available, brax_data
    from . import chain
    from ..chapters import CHAPTERS, params
    from ..plans import cartpole_fig2_data, fusion_data

    kw = dict(preset=preset, data_dir=data_dir, **({} if machine in (None, machine_key()) else {"machine": machine}))
    records = [Labelled(ch.name, "", r) for ch in CHAPTERS.values() if ch.findings for r in ch.findings(ch.params(**kw))]
    P = params("chain", **kw)
    chain_rows = chain.chain_data(P)[1]
    records += [Labelled("chain", label, r, label.policy, label.links)
                for label, r in claims_chain.labelled_findings(P, chain_rows)]
    fusion = chain.fusion_answer(P, chain_rows)[2]
    P = params("engines", **kw)
    engine_rows = engines.engine_data(P)
    records += [Labelled("engines", model + (" + MLP" if policy == "mlp" else ""), r, policy)
                for (model, policy), r in claims_engines.labelled_findings(P, engine_rows)]
    cartpole_P = params("cartpole", **kw)
    fig2 = cartpole_fig2_data(cartpole_P)
    brax = brax_data(cartpole_P) if brax_available()[0] else pd.DataFrame()
    gap = engines.gap_table(engines.fig2_frame(engine_rows, fig2, chain_rows, brax))
    frames = [f for f in (fig2, fusion_data(params("fusion", **kw))) if len(f)]  # CartPole without a policy
    cartpole = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return Study(tuple(records), gap, engines.gap_split(engine_rows, cartpole, chain_rows), fusion)


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
                     "ours": ours_text(group), "verdict": tally(group) if group[0].label else verdict_text(f),
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
    return answers.counts_text([x.finding for x in group])


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
    named = [x for x in chain if x.links is not None]  # not F.4's "across n"
    links = list(dict.fromkeys(f"n = {x.links}" for x in named))
    how = ("without a policy and with the MLP policy" if any(x.policy != "none" for x in named) else "simulation only")
    parts.append(f"**An articulated robot**, the chain of {chapter_link('chain')}"
                 + (f" at {labels_text(links)} links: {len(chain)} comparisons ({_findings_text(chain)}, {how}), "
                    f"{_count_text(chain)}." if chain else ": not measured."))
    models = list(dict.fromkeys(x.label.split(" + ")[0] for x in eng))
    parts.append(f"**Real robotics engines**, {chapter_link('engines')}"
                 + (f" on {len(models)} MuJoCo models ({', '.join(models)}): {len(eng)} comparisons "
                    f"({_findings_text(eng)}), {_count_text(eng)}." if eng else ": not measured."))
    return " ".join(parts)


def machines_text(folders: dict, this: str | None = None) -> str:
    """How many machines' snapshots the data hold (the "Across machines" page sets their F.1–F.4
    beside the paper) and, for each one with a GPU other than ``this``, its F.1 and F.3 verdicts and,
    where it holds the chain on its GPU, our kernel's rate over XLA's there (``machines.chain_gpu_summary``)."""
    from .machines import chain_gpu_summary, chain_on_gpu, findings_by_machine
    from ..presets import machine_info_of

    text = (f"The data hold **{len(folders)}** machines' measurements; {chapter_link('machines')} sets each "
            "one's F.1–F.4 beside the paper's.")
    gpus = {k: machine_info_of(f).get("gpu") for k, f in folders.items() if k != this and machine_info_of(f).get("gpu")}
    if not gpus:
        return text
    F = findings_by_machine({k: folders[k] for k in gpus})
    robot = chain_gpu_summary(chain_on_gpu({k: folders[k] for k in gpus}))  # the chain on each GPU
    for key, gpu in gpus.items():
        rows = F[(F["machine"] == key) & F["finding"].isin(["F.1", "F.3"])] if len(F) else F
        if not len(rows):
            text += f" The snapshot measured on an {gpu} (`{key}`) holds no F.1 or F.3 sweep of CartPole."
        else:
            text += (f" On the machine with an **{gpu}** (`{key}`): " + "; ".join(
                f"{r['finding']} ({claim_text(r['key'], r['paper'])} in the paper) **{r['ours']}**, *{verdict_text(r)}*"
                for r in rows.to_dict("records")) + ".")
        if key in robot:
            text += (" The robot on that GPU, our kernel against XLA's program (its formulation per n chosen "
                     f"on a CPU), at {robot[key]}")
    return text
