"""The chain page's answer to the paper's §7 question and F.4 (book/chain.md): manual fusion
against XLA's kernels per policy and n (``fused_over_xla``, priced by the machine's saved FMA
ceiling), MuJoCo's engines beside our fused and XLA rows (``engines_beside_ours``), the fusion
gain along flops per byte (``fusion_gains``), XLA's formulations of the
dynamics (``formulation_data``, ``formulation_table``, ``formulation_sentence``) and the page's
first paragraph (``answer``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ... import answers
from ...claims.chain import work_per_step
from ...comparisons import Labelled, comparisons_text
from ...presets import CHAIN_SNAPSHOT_LINKS, ChainParams


def fused_and_xla(policy: str = "none") -> tuple[str | None, str | None]:
    """The chain's fused implementation under ``policy`` (a native call of K steps with the policy
    inside: cpp without one, fused with the MLP) and its XLA one, from their records
    (``claims_chain.fused_impl``, ``xla_impl``)."""
    from ...claims.chain import fused_impl, xla_impl

    return fused_impl(policy), xla_impl()


def no_policy(measured: pd.DataFrame) -> pd.DataFrame:
    """The rows without a policy (the hashed controls): the physics comparisons' (the §7 table,
    MuJoCo's engines, which run open-loop, F.4's fusion gain)."""
    return measured[measured["policy"] == "none"] if len(measured) else measured


def engines_beside_ours(measured: pd.DataFrame, engines: pd.DataFrame) -> pd.DataFrame:
    """Per (n, N, K) measured by both: each MuJoCo engine's environment steps/s on the chain beside
    our fused implementation's (cpp) and XLA's (jax), and cpp over the engine: the same model in a
    general engine and in code written for it."""
    fused, xla = fused_and_xla()
    measured = no_policy(measured)
    if engines.empty or measured.empty:
        return pd.DataFrame()
    ours = measured[measured["impl"].isin([fused, xla])].pivot_table(
        index=["links", "num_envs", "steps"], columns="impl", values="samples_per_s")
    out = engines.rename(columns={"env_steps": "k"}).merge(
        ours.reset_index().rename(columns={"steps": "k"}), on=["links", "num_envs", "k"])
    out["fused_over_engine"] = out[fused] / out["env_steps_per_s"] if fused in out else np.nan
    cols = ["links", "num_envs", "k", "engine", "env_steps_per_s", *[c for c in (fused, xla) if c in out],
            "fused_over_engine", "frame_skip", "compile_s"]
    return out[cols].sort_values(["links", "num_envs", "k", "engine"]).reset_index(drop=True)


def fusion_gains(measured: pd.DataFrame, kmax: int) -> pd.DataFrame:
    """F.4's numbers per policy and n: the policy's fused implementation (``fused_and_xla``), the
    counted flops per step (the MLP's with it) and bytes per unfused step, their ratio
    (``claims_chain.flops_per_byte``, F.4's axis) and the fused speedup K = 1 -> ``kmax``, median
    over N (``claims_chain.fusion_gain_by_n``, the values ``compute_bound_row`` judges)."""
    from ...claims.chain import (
        POLICY_TAGS,
        flops_per_byte,
        flops_per_step,
        fusion_gain_by_n,
    )

    rows = []
    for policy in POLICY_TAGS:  # without a policy first
        fused = fused_and_xla(policy)[0]
        d = measured[measured["policy"] == policy] if len(measured) else measured
        for n, gain in sorted(fusion_gain_by_n(d, kmax, policy).items()):
            rows.append({"policy": policy, "links": n, "impl": fused, "flops": flops_per_step(n, policy),
                         "bytes": work_per_step(n)["bytes_per_step"], "flops_per_byte": flops_per_byte(n, policy),
                         "steps": kmax, "gain": gain})
    return pd.DataFrame(rows)


def fused_over_xla(measured: pd.DataFrame, fma_flops_per_s: float | None = None) -> pd.DataFrame:
    """The paper's §7 question ("how manual kernel fusion compares to the kernels produced by
    XLA"), per policy and n: at the largest K both ran (one K per (policy, n), as F.3's "at K = max"
    row: a median mixing K would be another quantity), and per N measured for both at it, the
    policy's fused implementation (``fused_and_xla``: cpp, one C kernel fusing K steps, without a
    policy; fused, simulation and MLP in one kernel, with it) over the XLA one (jax: lax.scan over K
    steps), with the fused one's achieved GFLOP/s on counted flops (the chain's, the MLP's forward
    pass too under it) and, given the machine's ``fma_flops_per_s``, their share of that ceiling.
    Columns ``fused`` and ``xla`` hold the rates, ``fused_impl`` the name; ``attrs``: the names
    without a policy and the ceiling (``fma``)."""
    from ...claims.chain import flops_per_step

    rows = []
    for (policy, n), d in measured.groupby(["policy", "links"]) if len(measured) else []:
        fused, xla = fused_and_xla(policy)
        both = set(d[d["impl"] == fused]["steps"]) & set(d[d["impl"] == xla]["steps"])
        if not both:
            continue
        k, flops = max(both), flops_per_step(int(n), policy)
        for num, g in d[d["steps"] == k].groupby("num_envs"):
            at = g.groupby("impl")["samples_per_s"].median()
            if fused not in at or xla not in at:
                continue
            rows.append({"policy": policy, "links": int(n), "num_envs": int(num), "steps": int(k), "fused_impl": fused,
                         "fused": at[fused], "xla": at[xla], "fused_over_xla": at[fused] / at[xla],
                         "fused_gflop_per_s": at[fused] * flops / 1e9,
                         "fma_share": at[fused] * flops / fma_flops_per_s if fma_flops_per_s else np.nan})
    out = pd.DataFrame(rows)
    if len(out):
        out = out.sort_values(["policy", "links", "num_envs"], key=lambda c: c.map({"none": 0, "mlp": 1})
                              if c.name == "policy" else c, ignore_index=True)
    out.attrs.update(zip(("fused", "xla"), fused_and_xla("none")), fma=fma_flops_per_s)
    return out


def saved_fma_ceiling(P: ChainParams) -> float | None:
    """The FMA ceiling (flops/s) the machine's data folder saved (the roofline's measurement; None
    where it has none): read, never measured, so that another machine's snapshot is priced by its
    own ceiling."""
    from ....harness.data import store
    from ....harness.model.roofline import saved_ceilings

    try:
        return saved_ceilings(store.machine_folder(P.data_dir, P.data_machine)).get("fma_flops_per_s")
    except store.DataDirError:
        return None


def formulation_data(P: ChainParams) -> pd.DataFrame:
    """XLA's formulations of the chain (``P.formulations`` at ``P.formulation_links``, N and K of
    the parameters: harness.robotics.chain_formulations), measured here once, then read; another
    machine's snapshot read only; at the other n a snapshot may hold (``CHAIN_SNAPSHOT_LINKS``), read
    where saved, never measured. Adds ``xla_over_counted`` (XLA's flops per environment step
    over the study's count, where XLA counted the whole program)."""
    from ....harness.robotics import chain_formulations as cf
    from ....harness.sweep import read_saved

    def items_at(links):
        return cf.formulation_items(P.formulations, links, P.formulation_num_envs, P.formulation_steps,
                                    repeats=P.repeats, min_seconds=P.min_seconds)

    result = cf.formulation_rows(items_at(P.formulation_links), data_dir=P.data_dir, machine=P.machine)
    wider = [n for n in CHAIN_SNAPSHOT_LINKS if n not in P.formulation_links]
    more = read_saved(cf.FILE, items_at(wider), cf.KEYING, data_dir=P.data_dir, machine=P.data_machine)
    df = pd.DataFrame(result.rows + more.rows)
    if len(df):
        df["xla_over_counted"] = df["xla_flops"].astype(float) / df["counted_flops"]
        df = df.sort_values(["links", "env_steps_per_s"], ascending=[True, False]).reset_index(drop=True)
    df.attrs.update(skipped=list(result.skipped), measured=result.measured, reused=result.reused)
    return df


def formulation_table(df: pd.DataFrame) -> pd.DataFrame:
    """The page's table: per n and formulation, env steps/s, its share of the fastest, compile
    seconds, XLA's flops and transcendentals per environment step beside the counted ones ("—"
    where the program has loops inside the scan: XLA counts a loop body once), whether the jax
    implementation runs it."""
    if df.empty:
        return df
    out = df.assign(of_best=df["env_steps_per_s"] / df.groupby("links")["env_steps_per_s"].transform("max"))
    return out[["links", "formulation", "env_steps_per_s", "of_best", "compile_s", "xla_loops", "xla_flops",
                "counted_flops", "xla_over_counted", "xla_transcendentals", "counted_transcendentals", "chosen"]]


MATERIAL = 1.1  # a formulation faster by less than this is as fast (two builds may order them either way)


def formulation_sentence(df: pd.DataFrame) -> str:
    """Whether the jax implementation's formulation is the fastest measured here at each n (a miss:
    the fastest's slowest timed region faster than the chosen one's fastest, and the fastest more
    than ``MATERIAL`` times the chosen's rate: runs on a shared machine differ by a few percent), and what XLA's program counts beyond the physics where it counted the
    whole program: a rule that can fail (the choice is made once, in ``dynamics_xla.BEST``; these
    rows measure it on this machine)."""
    if df.empty:
        return "No formulation of the chain was measured for these parameters."
    parts, misses = [], []
    for n, g in df.groupby("links"):
        best, chosen = g.loc[g["env_steps_per_s"].idxmax()], g[g["chosen"]]
        if chosen.empty:
            parts.append(f"n = {n}: the jax implementation's formulation was not measured")
            continue
        c = chosen.iloc[0]
        if c["formulation"] == best["formulation"]:
            parts.append(f"n = {n}: `{c['formulation']}` is the fastest ({best['env_steps_per_s']:.3g} env steps/s)")
        elif (best["env_steps_per_s_min"] <= c["env_steps_per_s_max"]
              or best["env_steps_per_s"] <= MATERIAL * c["env_steps_per_s"]):
            parts.append(f"n = {n}: `{best['formulation']}` ({best['env_steps_per_s']:.3g}) and the jax "
                         f"implementation's `{c['formulation']}` ({c['env_steps_per_s']:.3g}) are as fast within "
                         "the spread of their timed regions or 10%")
        else:
            misses.append(n)
            parts.append(f"n = {n}: `{best['formulation']}` is the fastest ({best['env_steps_per_s']:.3g}), "
                         f"{best['env_steps_per_s'] / c['env_steps_per_s']:.2f}× the jax implementation's "
                         f"`{c['formulation']}`")
    whole = df[df["whole_program"] & (df["formulation"] == "columns")]
    added = ("" if whole.empty else " In the reference's columns, XLA's compiled program counts "
             + ", ".join(f"{r.xla_over_counted:.1f}× the counted flops and {r.xla_transcendentals / r.counted_transcendentals:.1f}× "
                         f"the sines, cosines and roots at n = {r.links}" for r in whole.itertuples())
             + " (work its source does not hold, growing with n).")
    verdict = ("The jax rows run XLA's fastest formulation measured here, or one as fast within the spread, "
               "at every n." if not misses else
               f"The jax rows do not run the fastest formulation measured here at n = {', '.join(map(str, misses))}: "
               "their comparisons with XLA understate XLA there by the factor given.")
    return "; ".join(parts) + ". " + verdict + added


def fused_over_best_formulation(fx: pd.DataFrame, forms: pd.DataFrame) -> pd.DataFrame:
    """The §7 comparison held against XLA's best program: per n, at the formulation table's N and
    K, the fused implementation without a policy (``fused_over_xla``'s row: cpp) over the fastest
    formulation measured (``formulation_data``: the physics under lax.scan, no episode rules, so a
    rate the jax implementation can only approach), beside the ratio over the jax implementation.
    Empty where the two tables share no (n, N, K)."""
    if fx.empty or forms.empty:
        return pd.DataFrame()
    best = forms.loc[forms.groupby("links")["env_steps_per_s"].idxmax(),
                     ["links", "num_envs", "steps", "formulation", "env_steps_per_s"]]
    out = fx[fx["policy"] == "none"].merge(best, on=["links", "num_envs", "steps"])
    out["fused_over_best"] = out["fused"] / out["env_steps_per_s"]
    return out[["links", "num_envs", "steps", "fused_impl", "fused", "formulation", "env_steps_per_s",
                "fused_over_best", "fused_over_xla"]].reset_index(drop=True)


def fusion_conclusion(against_best: pd.DataFrame, forms: pd.DataFrame) -> str:
    """The chapter's answer to §7 with XLA at its best: per n the fused implementation over XLA's
    fastest formulation, where manual fusion still wins (> 1) and where it does not, and the work
    XLA's program for the reference's columns adds (its count over the counted flops)."""
    from ...format import fmt_x

    if against_best.empty:
        return "The fused implementation and XLA's formulations share no (n, N, K) here, so §7 is not answered on them."
    r = against_best.iloc[0]
    ratios = ", ".join(f"n = {row.links}: **{fmt_x(row.fused_over_best)}** (`{row.formulation}`)"
                       for row in against_best.itertuples())
    wins, loses = against_best[against_best["fused_over_best"] > 1], against_best[against_best["fused_over_best"] <= 1]
    held = (f"Manual fusion beats XLA's best program at n = {', '.join(map(str, wins['links']))}"
            + (f" and not at n = {', '.join(map(str, loses['links']))}." if len(loses) else ", every n measured."))
    whole = forms[forms["whole_program"] & (forms["formulation"] == "columns")] if len(forms) else forms
    duplication = ("" if whole.empty else
                   f" XLA's program for the reference's columns counts {fmt_x(whole['xla_over_counted'].min())} to "
                   f"{fmt_x(whole['xla_over_counted'].max())} the flops the physics holds (n = {whole['links'].min()} to "
                   f"{whole['links'].max()}): shared producers copied into every consumer fusion, which the "
                   "formulations that loop over the links avoid.")
    return (f"Manual fusion against XLA (the paper's §7 question), with XLA's fastest formulation measured here (N = "
            f"{int(r.num_envs)}, K = {int(r.steps)}, no policy): `{r.fused_impl}` over it at {ratios}. {held}{duplication}")


def fusion_answer(P: ChainParams, measured: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """The chapter's answer to §7, from its rows: (``fused_over_xla``'s rows, ``formulation_data``,
    ``fusion_conclusion``'s text), computed once for the page and the introduction alike."""
    fx = fused_over_xla(measured, saved_fma_ceiling(P))
    forms = formulation_data(P)
    return fx, forms, fusion_conclusion(fused_over_best_formulation(fx, forms), forms)


def answer(P: ChainParams, labelled) -> str:
    """The chapter's first paragraph: whether the paper's CartPole comparisons hold on the chain,
    from ``claims_chain.labelled_findings`` (the verdicts the page's table shows): their count per
    verdict, then each comparison with ours over the n beside the paper's (``comparisons.comparisons_text``)."""
    if not labelled:
        return "The chain was not measured in this build, so the paper's comparisons are not made on it here."
    links = ", ".join(dict.fromkeys(str(name.links) for name, _ in labelled if name.links is not None))
    with_mlp = any(name.policy == "mlp" for name, _ in labelled)
    found = [f for _, f in labelled]
    how = ("without a policy (the simulation and its episode rules) and with the Gaussian MLP policy (labelled MLP)"
           if with_mlp else "without a policy (the simulation and its episode rules)")
    return (f"On the chain at n = {links} links, measured on {answers.where(P)} {how}, K up to {max(P.steps)}, the "
            f"paper's comparisons, each judged by CartPole's rule once per n{' and policy' if with_mlp else ''} (F.4 "
            f"once across n), give {answers.counts_text(found)}. By comparison: "
            + comparisons_text([Labelled("chain", name, f, name.policy, name.links) for name, f in labelled]) + ".")
