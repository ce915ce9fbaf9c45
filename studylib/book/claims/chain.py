"""F.1–F.4 measured on the n-link chain (book/chain.md), by the rules CartPole's are judged by
(``claims_base.row``, ``analysis.RULES``), one set of rows per policy and n. Without a policy (the
paper's "no policy" configuration of Figs 8-9: hashed controls) a comparison is of the simulation and
its episode rules; with the Gaussian MLP ("mlp") the policy's inference runs between the steps, as
in the paper's F.1 and F.2 (Figs 4-6), and inside the kernel of the native implementation. The
quantity and the label say which.

Per n, each the paper's comparison on the chain's rows of that n:
  F.1  the best vectorized implementation (torch, jax) over gym's loop, largest over N; cpp over gym
  F.2  jax at the largest K over torch at its best K, median over N
  F.3  cpp K = 1 → the largest K (fusion alone), jax K = 1 → the largest K, cpp over jax at that K

F.4 is judged on the chain's own axis: the paper's F.4 varies the bytes a step moves (S) at fixed
arithmetic and the arithmetic (C) at fixed bytes; the chain varies the arithmetic per byte with n,
so the paper's "the more compute-bound the workload is, the less speedup that comes from fusion"
(§4.2) is its rule here (``compute_bound_row``).
"""

from __future__ import annotations

import functools

import pandas as pd

from ...implspec import book_order, spec
from ..format import fmt_x
from ..presets import ChainParams
from .analysis import (
    LARGEST,
    at_knobs,
    best_rates_by_n,
    k_speedup_spread,
    rates_by_n,
    ratio_by_n,
)
from .base import Finding, on_gpu, ratio_reason, reason_then, row
from .paper import PAPER

VECTORIZED = ("torch", "jax")  # the paper's F.1 "DL framework (PyTorch) and ML compiler (XLA)" rows


PAPER_K = 1000  # the paper's F.2 and F.3 comparisons are at K = 10^3


def _against_papers_k(kmax: int) -> str:
    """Said in a quantity measured at another K than the paper's: the verdict compares unlike K."""
    return "" if kmax == PAPER_K else f" (against the paper's at K = {PAPER_K})"


def _where(d: pd.DataFrame, a: str, b: str) -> str:
    """Where the two ran: the same GPU, or the same CPU cores (the paper's figures are a GPU's)."""
    if on_gpu(d, a) and on_gpu(d, b):
        return "both on the same GPU"
    return "both on the same CPU cores (the paper's figure is a GPU's)"


POLICY_TAGS = {"none": "no policy", "mlp": "MLP policy"}  # in each quantity: which configuration it compares
SIM = "chain"


def fused_impl(policy: str) -> str | None:
    """The chain's manual fusion under ``policy``, from the records: the first implementation (book
    order) that steps it in a native call of K steps with that policy inside (dispatch "native",
    ``policy`` in its fused_policies): cpp without a policy, fused with the MLP (cpp runs the MLP in
    PyTorch between one-step calls, as the paper's C++ implementation)."""
    return next((n for n in book_order() if spec(n).implements(SIM) and spec(n).dispatch == "native"
                 and policy in spec(n).fused_policies), None)


def xla_impl() -> str | None:
    """The chain's XLA implementation (dispatch "compiled"), from the records."""
    return next((n for n in book_order() if spec(n).implements(SIM) and spec(n).dispatch == "compiled"), None)


class ChainLabel(str):
    """A finding's label on the chain's pages, "n = 2" without a policy, "n = 2, MLP" with the MLP,
    "across n = 1…4" for F.4: the text itself, which also keeps what it names, so that no reader
    parses it: ``links`` (its n; None across n), ``where`` (the text without the policy) and
    ``policy``."""

    links: int | None
    where: str
    policy: str

    def __new__(cls, where: str, policy: str = "none", links: int | None = None):
        text = super().__new__(cls, where + ("" if policy == "none" else f", {policy.upper()}"))
        text.where, text.policy, text.links = where, policy, links
        return text

    def __reduce__(self):  # pickled (a notebook's outputs, a Ray result) with its fields
        return ChainLabel, (self.where, self.policy, self.links)


def label(n: int, policy: str) -> ChainLabel:
    """The label of n's findings under ``policy``: "n = 2" without a policy, "n = 2, MLP" with the MLP."""
    return ChainLabel(f"n = {n}", policy, n)


def links_rows(n: int, d: pd.DataFrame, kmax: int, policy: str = "none") -> list[Finding]:
    """The F.1–F.3 rows of the chain with ``n`` links under ``policy`` (``d``: its measured rows);
    each reason gives the per-step times at the N that make its headline (``claims_base.ratio_reason``)."""
    rows, impls, tag = [], set(d["impl"]), f"chain n = {n}, {POLICY_TAGS[policy]}"
    gym = best_rates_by_n(d[d["impl"] == "gym"])
    vec = [i for i in VECTORIZED if i in impls]
    if "gym" in impls and vec:
        best = best_rates_by_n(d[d["impl"].isin(vec)])
        r = ratio_by_n(best, gym)
        rows.append(row("F.1", "speedup", f"{tag}: best of torch/jax over gym, largest over N", "f1_gpu_over_gym",
                        r, reason_then(ratio_reason(best, gym, r, "the faster of torch and jax", "gym", LARGEST),
                                       _where(d, vec[0], vec[-1])), summary=LARGEST))
    if {"gym", "cpp"} <= impls:
        cpp = best_rates_by_n(d[d["impl"] == "cpp"])
        r = ratio_by_n(cpp, gym)
        rows.append(row("F.1", "at most", f"{tag}: cpp over gym, largest over N", "f1_cpp_over_gym", r,
                        reason_then(ratio_reason(cpp, gym, r, "cpp", "gym", LARGEST), "cpp steps the environments in "
                                    "SIMD lanes on every core, gym one at a time in Python", ": "), summary=LARGEST))
    if {"jax", "torch"} <= impls and kmax > 1:
        jax = rates_by_n(d[(d["impl"] == "jax") & (d["steps"] == kmax)])
        torch = best_rates_by_n(d[d["impl"] == "torch"])
        r = ratio_by_n(jax, torch)
        rows.append(row("F.2", "speedup", f"{tag}: jax (K = {kmax}) over torch (its best K), median over N{_against_papers_k(kmax)}",
                        "f2_xla_over_torch", r, reason_then(ratio_reason(jax, torch, r, f"jax (K = {kmax})", "torch (its best K)"),
                                    _where(d, "jax", "torch"))))
    fused, xla = fused_impl(policy), xla_impl()
    for impl, key in ((fused, "f3_fusion"), (xla, "f3_xla_k1_to_k1000")):
        if impl in impls and kmax > 1:
            what = "fusion alone" if impl == fused else "XLA's scan"
            at = at_knobs(d[d["impl"] == impl], 1, 1)
            hi, lo = rates_by_n(at[at["steps"] == kmax]), rates_by_n(at[at["steps"] == 1])
            r = ratio_by_n(hi, lo)
            rows.append(row("F.3", "speedup", f"{tag}: {what}, {impl} K = 1 → {kmax}, median over N{_against_papers_k(kmax)}",
                            key, r,
                            ratio_reason(hi, lo, r, f"{impl} at K = {kmax}", f"{impl} at K = 1")))
    if {fused, xla} <= impls and kmax > 1:
        at = d[d["steps"] == kmax]
        hi, lo = rates_by_n(at[at["impl"] == fused]), rates_by_n(at[at["impl"] == xla])
        r = ratio_by_n(hi, lo)
        rows.append(row("F.3", "speedup", f"{tag}: {fused} over {xla} at K = {kmax}, median over N{_against_papers_k(kmax)}",
                        "f3_fused_over_xla",
                        r, reason_then(ratio_reason(hi, lo, r, f"{fused} (K = {kmax})", f"{xla} (K = {kmax})"),
                                       _where(d, fused, xla).replace("the paper's figure is a GPU's", "the paper's "
                                                                     "figure sets a CUDA kernel against XLA's GPU kernels"))))
    return rows


@functools.cache
def _work(links: int) -> tuple[dict, tuple[int, ...]]:
    """The chain's record's counted work per environment step at n = ``links`` (its
    ``chain_study.work``: flops, bytes) and the MLP policy's layer sizes there (once per n: every
    F.4 row and table cell asks)."""
    from ... import sims
    from ...harness.robotics import chain_study

    record = sims.sim(chain_study.SIM)
    params = record.params_of({"links": links})
    return chain_study.work(params), record.policy_sizes(params)


def work_per_step(links: int) -> dict:
    """The chain's counted work per environment step at n = ``links`` (its record's, with the
    timestep rule's frame_skip): flops_per_step, transcendentals_per_step, bytes_per_step."""
    return dict(_work(links)[0])


def flops_per_step(links: int, policy: str = "none") -> float:
    """The chain's counted flops per environment step at n = ``links`` (its record's, with the
    timestep rule's frame_skip); under the MLP policy its forward pass's too (``costs.mlp_flops`` of
    the record's ``policy_sizes``: (3n+3) -> 64 -> 64 -> 1)."""
    from ...costs import mlp_flops

    work, policy_sizes = _work(links)
    return work["flops_per_step"] + (mlp_flops(policy_sizes) if policy == "mlp" else 0)


def flops_per_byte(links: int, policy: str = "none") -> float:
    """``flops_per_step`` over the bytes an unfused step moves (the chain's state, whatever the policy)."""
    return flops_per_step(links, policy) / work_per_step(links)["bytes_per_step"]


def _halves_growth(gain: pd.Series) -> float:
    """Median speedup of the upper half of the n (by flops per byte) over the lower half's (the
    middle n of an odd count in neither): a trend that no single end point decides."""
    half = len(gain) // 2
    return float(gain.iloc[-half:].median() / gain.iloc[:half].median())


def fusion_gain_by_n(measured: pd.DataFrame, kmax: int, policy: str = "none") -> dict[int, float]:
    """F.4's values from the rows measured under ``policy``: per n where both K were measured, the
    policy's manual fusion (``fused_impl``) K = 1 → ``kmax`` speedup, median over N
    (``compute_bound_row`` judges them, the chapter's table shows them)."""
    if measured.empty or kmax <= 1:
        return {}
    fused = fused_impl(policy)
    d = measured[measured["impl"] == fused]
    return {int(n): float(k_speedup_spread(g, fused, 1, kmax)["value"].median())
            for n, g in d.groupby("links") if {1, kmax} <= set(g["steps"])}


def compute_bound_row(measured: pd.DataFrame, kmax: int, policy: str = "none") -> Finding | None:
    """F.4 on the chain's axis. The paper (§4.2, Fig 9): "The more compute-bound the workload is,
    the less speedup that comes from fusion"; it varies C at fixed bytes, the chain varies n, whose
    flops per byte grow about as n². The fusion speedup (``fused`` K = 1 → ``kmax``, median over N)
    per n, ordered by flops per byte; judged by "falls" on the upper half's median over the lower
    half's, the reason giving every n and the value without each n in turn. None with fewer than
    three n. ``fused``: the policy's manual fusion (``fused_impl``)."""
    fused = fused_impl(policy)
    gains = fusion_gain_by_n(measured, kmax, policy)
    gain = pd.Series({flops_per_byte(n, policy): g for n, g in gains.items()}).dropna().sort_index()
    if len(gain) < 3 or kmax <= 1:
        return None
    by_n = ", ".join(f"n = {n}: {fmt_x(g)} at {flops_per_byte(n, policy):.0f} flops/byte" for n, g in sorted(gains.items()))
    without = [_halves_growth(gain.drop(x)) for x in gain.index]
    reason = (f"{fused} K = 1 → {kmax} per n ({by_n}); the upper half's median over the lower half's is "
              f"{fmt_x(_halves_growth(gain))}, {fmt_x(min(without))} to {fmt_x(max(without))} without any one n")
    return row("F.4", "falls", f"chain, {POLICY_TAGS[policy]}: fusion speedup ({fused} K = 1 → {kmax}, median over N) where the "
               "flops per byte are high over where they are low", "f4_less_when_compute_bound", _halves_growth(gain),
               reason, paper_text="smaller when more compute-bound (§4.2)")


def labelled_findings(P: ChainParams, measured: pd.DataFrame) -> list[tuple[ChainLabel, Finding]]:
    """Per policy measured (without one first): every n's rows, in the order of n, each labelled
    with its n and policy (``label``), then F.4 across n (labelled with the n it spans and the
    policy)."""
    if measured.empty:
        return []
    kmax, out = max(P.steps), []
    for policy in [p for p in POLICY_TAGS if (measured["policy"] == p).any()]:
        d = measured[measured["policy"] == policy]
        links = sorted(int(n) for n in d["links"].unique())
        out += [(label(n, policy), r) for n in links for r in links_rows(n, d[d["links"] == n], kmax, policy)]
        f4 = compute_bound_row(d, kmax, policy=policy)  # with the MLP, its flops on the axis too
        if f4 is not None:
            out.append((ChainLabel(f"across n = {links[0]}…{links[-1]}", policy), f4))
    return out


def chain_findings(P: ChainParams, measured: pd.DataFrame) -> list[Finding]:
    """Every n's rows, in the order of n, then F.4 across n."""
    return [r for _, r in labelled_findings(P, measured)]


def verdict_table(labelled: list[tuple[ChainLabel, Finding]]) -> pd.DataFrame:
    """The chain's verdicts as one table: a row per comparison of the paper's (finding, its claim,
    the paper's value) and policy, a column per n ("n = 1", …, F.4's "across n = 1…6") holding ours
    and the verdict there ("—" where that comparison was not made at it)."""
    from .analysis import PARTLY, REPRODUCED

    short = {REPRODUCED: "reproduced", PARTLY: "partly"}
    columns = list(dict.fromkeys(name.where for name, _ in labelled))
    rows: dict[tuple, dict] = {}
    for name, f in labelled:
        policy = "none" if name.policy == "none" else name.policy.upper()
        r = rows.setdefault((f.key, policy), {"finding": f.finding, "policy": policy, "claim": PAPER[f.key].claim,
                                              "paper": f.paper_text})
        verdict = short.get(f.judgement.verdict, "not reproduced" if f.judgement.verdict.startswith("not rep") else
                            f.judgement.verdict)
        r[name.where] = f"{f.ours_text}: {verdict}" + (" (borderline)" if f.borderline else "")
    out = pd.DataFrame(list(rows.values()))
    for column in columns:
        out[column] = out[column].fillna("—") if column in out else "—"
    return out[["finding", "policy", "claim", "paper", *columns]]
