"""The paragraph that opens a chapter: its question answered in this machine's numbers beside the
paper's, with the verdicts the claims already reach (``claims.base.Finding``), so that a reader has
the answer on the first screen and the evidence below it. Each chapter's module (``book.pages.*``)
words its own question; this module words a finding the same way on every page, from the very
record the chapter's findings list renders further down.

    answers.finding_sentence(f)                  # "**F.1**, <quantity>: **ours** here against the paper's …: *verdict* …"
    answers.findings_answer(found, lead, none)   # the lead, then one sentence per finding (``none`` without any)
    answers.counts_text(found)                   # "2 reproduced, 1 not reproduced here"
    answers.where(P)                             # "this machine (2 CPU cores, no GPU)"
    answers.similar_verdict(within, count)       # Fig 2's "similar" judged as the introduction reads it
"""

from __future__ import annotations

import numpy as np

from .claims.analysis import NOT_MEASURED, NOT_REPRODUCED, PARTLY, REPRODUCED, RULES, VERDICTS
from .claims.base import Finding, verdict_text
from .format import pow2_label


def why(f: Finding) -> str:
    """Why a verdict fell short, in the words of the rule's band that decided it (and the N where a
    median that holds does not), so the answer says *how* it differs without the whole reason;
    "" where it is reproduced or not measured."""
    j = f.judgement
    if f.verdict in (REPRODUCED, NOT_MEASURED) or j.value is None or not np.isfinite(j.value):
        return ""
    band = RULES[f.rule].band(j.value, f.paper_value).why
    if j.failing_n:
        return f"{band} at the median, but not at N = " + ", ".join(pow2_label(n) for n in j.failing_n)
    return band


def finding_sentence(f: Finding, what: str | None = None) -> str:
    """One finding as a sentence: what is compared (``what``, else the finding's own quantity, as
    its row below names it), our number beside the paper's, the verdict and why."""
    head = f"**{f.finding}**, {what or f.quantity}"
    if f.verdict == NOT_MEASURED:
        return f"{head}: *not measured* here ({f.reason or 'this build has no measurement for it'})."
    reason = why(f)
    return (f"{head}: **{f.ours_text}** here against the paper's {f.paper_text}: *{verdict_text(f)}*"
            + (f" ({reason})." if reason else "."))


def findings_answer(found, lead: str, none: str, what: dict | None = None) -> str:
    """``lead``, then one ``finding_sentence`` per finding in ``found`` (``what``: the words for a
    key where its quantity is too long for a first paragraph); ``none`` where there is no finding,
    so an empty run says what is missing instead of saying nothing."""
    if not found:
        return none
    what = what or {}
    return " ".join([lead, *(finding_sentence(f, what.get(f.key)) for f in found)]).strip()


def counts_text(found) -> str:
    """How many findings got each verdict, in ``VERDICTS``' order ("3 reproduced, 1 not measured")."""
    counts = {v: sum(f.verdict == v for f in found) for v in VERDICTS}
    return ", ".join(f"**{c}** {v}" for v, c in counts.items() if c)


def where(P) -> str:
    """The machine whose numbers a page reads, with what matters beside the paper's GPU: its cores
    and its GPU or none (``presets.machine_facts``; this machine's for parameters that name no
    other, such as the training chapters')."""
    from ..harness.data.provenance import machine_identity
    from .presets import machine_facts

    machine = getattr(P, "machine", None)
    facts = machine_facts(P) if machine else machine_identity()
    hw = f"{facts['cores']} CPU cores" if facts.get("cores") else "its CPU"
    hw += f" and an {facts['gpu']}" if facts.get("gpu") else ", no GPU"
    return (f"machine `{machine}`" if machine else "this machine") + f" ({hw})"


def similar_verdict(within: int, count: int) -> str:
    """The paper's Fig 2 "similar" (CartPole's throughput beside robotics simulators') as a verdict:
    ``within`` of ``count`` simulators within ``SIZE_FACTOR``× of CartPole's rate, the factor the
    introduction calls similar (``overview.fig2_text``): all, some or none of them."""
    if not count:
        return NOT_MEASURED
    return REPRODUCED if within == count else NOT_REPRODUCED if within == 0 else PARTLY
