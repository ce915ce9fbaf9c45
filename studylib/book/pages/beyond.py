"""The "Beyond the paper" page's results (book/beyond.md), computed here once; the page renders them.

    gap = beyond.compile_gap(mlp, kmax)          # per N: jax / torch, torch-compile / torch, share of the gap closed
    fj = beyond.ratio_with_spread(d, "fused", "jax")  # per N: a / b with the range the repeats allow
    top = beyond.largest_n(ratios, "peer")       # each peer's ratio at the largest N measured with it
    roof = beyond.against_ceilings(df, ceil)     # each row against the ceiling that binds it
    b = beyond.fusion_bound(ceil, PAPER_GPU)     # balances, intensities, the bound on fusion's gain
    m = beyond.mlp_port_bound(roof, isa)         # the MLP's operation bound on this ISA, the fused kernel's best
    ratios = beyond.peer_ratios(sim)             # per (peer, N): cpp over the peer
    beyond.answer(P, gap, fj, ratios, roof, kmax)  # the page's first paragraph: the four questions answered

Each ratio is the ratio of medians (``analysis.rates_by_n``), with ``low`` / ``high`` the ratios the
repeats allow (a's slowest over b's fastest, a's fastest over b's slowest: ``analysis.ratio_by_n``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ... import costs
from .. import answers
from ..claims.analysis import rates_by_n, ratio_by_n
from ..format import fmt_x, pow2_label

SMALL_N = 2**13  # the paper's F.2 comparisons are over N <= 2^13; so is the gap's summary here
COMPILE_THREE = ("torch", "torch-compile", "jax")
FUSED_FOUR = ("fused", "jax", "cpp", "torch")  # section 2: the fused kernel beside the others, same MLP
PEERS = ("gymnasium-vector", "gymnax", "envpool")  # section 3: the CartPole libraries readers use


def ratio_with_spread(frame: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    """Per N measured for both: ``ratio`` of a's median to b's, ``low`` and ``high`` (the repeats'
    range), and ``b_spread``, b's own spread (max − min) / median."""
    ra, rb = rates_by_n(frame[frame["impl"] == a]), rates_by_n(frame[frame["impl"] == b])
    r = ratio_by_n(ra, rb)
    out = pd.DataFrame({"num_envs": r.index.astype(int), "ratio": r["value"].to_numpy(), "low": r["low"].to_numpy(),
                        "high": r["high"].to_numpy(),
                        "b_spread": ((rb["high"] - rb["low"]) / rb["value"]).reindex(r.index).to_numpy()})
    return out


def compile_gap_text(gap: pd.DataFrame) -> str:
    """``compile_gap``'s summary in words whose verb follows the sign: a positive share closes part
    of the jax–torch gap, a negative one (torch-compile slower than torch) widens it."""
    small = gap.attrs["small"]

    def verb(share):
        return f"closes **{share:.0%}** of" if share >= 0 else f"widens, by **{-share:.0%}** of its size,"

    if not small["count"]:
        return "No N ≤ 2¹³ has torch, torch-compile and jax all measured."
    best = gap.attrs["best"]
    return (f"At N ≤ 2¹³, compiling {verb(small['median'])} the jax–torch gap (median over {small['count']} N; "
            f"shares {small['min']:.0%} to {small['max']:.0%}"
            + (", a negative share: slower than eager torch" if small["min"] < 0 else "") + "); "
            + (f"at its best N, {pow2_label(gap.attrs['best_n'])}, it closes {best:.0%}." if best >= 0 else
               f"it closes none of it at any N (at best {best:.0%}, at N = {pow2_label(gap.attrs['best_n'])})."))


def compile_gap(d: pd.DataFrame) -> pd.DataFrame:
    """Per N where torch, torch-compile and jax were all measured (one K): jax / torch, torch-compile
    / torch, and the share of the jax–torch gap that compiling closes, (compiled − torch) / (jax −
    torch). ``attrs``: ``small`` (the shares at N ≤ ``SMALL_N``: median, min, max, count) and
    ``best_n`` / ``best`` (the N where the share is largest); empty where one of the three is missing."""
    w = d.pivot_table(index="num_envs", columns="impl", values="samples_per_s")
    if not set(COMPILE_THREE) <= set(w.columns):
        return pd.DataFrame()
    w = w[list(COMPILE_THREE)].dropna()  # torch is capped at large N·K
    if not len(w):
        return pd.DataFrame()
    closed = (w["torch-compile"] - w["torch"]) / (w["jax"] - w["torch"])
    out = pd.DataFrame({"num_envs": w.index.astype(int), "jax / torch": (w["jax"] / w["torch"]).to_numpy(),
                        "torch-compile / torch": (w["torch-compile"] / w["torch"]).to_numpy(),
                        "share of the gap closed": closed.to_numpy()})
    small = closed[closed.index <= SMALL_N].dropna()
    out.attrs["small"] = {"median": float(small.median()) if len(small) else np.nan,
                          "min": float(small.min()) if len(small) else np.nan,
                          "max": float(small.max()) if len(small) else np.nan, "count": int(len(small))}
    out.attrs["best_n"] = int(closed.idxmax()) if closed.notna().any() else None
    out.attrs["best"] = float(closed.max()) if closed.notna().any() else np.nan
    return out


def ratio_summary(r: pd.DataFrame) -> dict:
    """Of ``ratio_with_spread``'s rows: the median, min and max ratio over N, and the row whose
    denominator spreads most over its repeats (``widest``)."""
    return {"median": float(r["ratio"].median()), "min": float(r["ratio"].min()), "max": float(r["ratio"].max()),
            "count": int(len(r)), "widest": r.loc[r["b_spread"].idxmax()].to_dict()}


def where_not_faster(r: pd.DataFrame, what: str = "fused", than: str = "jax") -> str:
    """The sentence that says at which N of ``ratio_with_spread``'s rows ``what`` is not faster
    than ``than`` (median ratio ≤ 1), and where only its repeats' range reaches 1× or below; or
    that it is faster at every N, even at the low end of the repeats."""
    from ..format import pow2_label

    slower = [pow2_label(n) for n, v in zip(r["num_envs"], r["ratio"]) if v <= 1]
    unsure = [pow2_label(n) for n, v, lo in zip(r["num_envs"], r["ratio"], r["low"]) if v > 1 and lo <= 1]
    if not slower and not unsure:
        return f"`{what}` is faster than `{than}` at every N measured, even at the low end of the repeats."
    parts = []
    if slower:
        parts.append(f"`{what}` is not faster than `{than}` at N = {', '.join(slower)}")
    if unsure:
        parts.append(f"at N = {', '.join(unsure)} its median ratio is above 1× but the repeats' range reaches 1× or below")
    return "; ".join(parts) + "."


def largest_n(ratios: pd.DataFrame, by: str) -> pd.DataFrame:
    """Each ``by`` group's row at the largest N measured with it (indexed by ``by``)."""
    return ratios.sort_values("num_envs").groupby(by).tail(1).set_index(by)


def against_gemm(d: pd.DataFrame, gemm_reference: dict, impl: str = "fused") -> dict:
    """``impl``'s rate at the largest N it was measured at, beside the MLP's GEMMs alone through
    PyTorch at that N (``harness.model.roofline``'s reference): ``over_gemm`` their ratio (None without a
    reference there)."""
    rows = d[d["impl"] == impl]
    if not len(rows):
        return {}
    n = int(rows["num_envs"].max())
    rate = float(rows[rows["num_envs"] == n]["samples_per_s"].median())
    g = gemm_reference.get(n)
    return {"num_envs": n, "rate": rate, "gemm": g, "over_gemm": rate / g if g else None}


def longest_compile(d: pd.DataFrame, impl: str = "torch-compile") -> float:
    """The longest compile (seconds) of ``impl``'s configurations (nan where none was measured)."""
    rows = d[d["impl"] == impl]
    return float(rows["compile_s"].max()) if len(rows) else np.nan


# ---- the roofline (section 4) -------------------------------------------------------------------------

def against_ceilings(d: pd.DataFrame, ceil: dict) -> pd.DataFrame:
    """Every measurement with the ceiling that binds it (``harness.model.roofline.bound_for``): ``bound``
    (its name), ``bound_per_s`` and ``fraction`` = measured / that ceiling; ``in_cache`` for the
    fused configurations (``roofline.keeps_state_in_cache``)."""
    from ...harness.model import roofline

    if not len(d):
        return d.assign(bound=[], bound_per_s=[], fraction=[], in_cache=[])
    bound = d.apply(lambda r: roofline.bound_for(r, ceil), axis=1)
    out = d.assign(bound=[b[0] for b in bound], bound_per_s=[b[1] for b in bound])
    return out.assign(fraction=out["samples_per_s"] / out["bound_per_s"],
                      in_cache=d.apply(roofline.keeps_state_in_cache, axis=1).astype(bool))


def closest_to_ceiling(roof: pd.DataFrame) -> pd.DataFrame:
    """Each implementation's configuration closest to its ceiling, the closest first."""
    return roof.sort_values("fraction", ascending=False).drop_duplicates("impl").reset_index(drop=True)


def best_in_cache(roof: pd.DataFrame) -> float | None:
    """The largest fraction of its ceiling a fused configuration (state held in cache) reaches
    (None where none was measured)."""
    rows = roof[roof["in_cache"]] if len(roof) else roof
    return float(rows["fraction"].max()) if len(rows) else None


@dataclass(frozen=True)
class MlpPortBound:
    """How close the MLP's counted flops can come to the FMA ceiling on a CPU (``costs.fma_port_bound``)
    and how close the fused kernel came: its best measurement with the MLP on the CPU, state in cache."""

    isa: str | None  # the machine's vector ISA (its provenance "isa": "avx512", "avx2", ...), None if not recorded
    best: float | None  # the fused kernel's largest fraction of its compute ceiling with the MLP

    @property
    def tanh(self) -> costs.TanhOnIsa | None:
        """How that ISA runs the tanh (None: not one ``costs.MLP_TANH_ON_ISA`` knows)."""
        return costs.MLP_TANH_ON_ISA.get(self.isa or "")

    @property
    def operations(self) -> int:
        """FMA-port operations per tanh on that ISA (``costs.tanh_port_operations``)."""
        return costs.tanh_port_operations(self.isa)

    @property
    def bound(self) -> float:
        """The share of the ceiling those operations allow, every port busy on them alone."""
        return costs.fma_port_bound(self.operations)

    @property
    def share_of_bound(self) -> float | None:
        """``best`` as a share of ``bound``: how much of what the operations allow the loop reaches."""
        return None if self.best is None else self.best / self.bound


def mlp_port_bound(roof: pd.DataFrame, isa: str | None) -> MlpPortBound:
    """The MLP's operation bound on ``isa`` beside the best CPU row that runs the MLP in a kernel
    holding its block in cache (``against_ceilings``' ``in_cache``, with ``policy == "mlp"``)."""
    rows = roof[roof["in_cache"] & (roof["policy"] == "mlp") & (roof["device"] == "cpu")] if len(roof) else roof
    return MlpPortBound(isa, float(rows["fraction"].max()) if len(rows) else None)


@dataclass(frozen=True)
class FusionBound:
    """How far fusion can lift an unfused step, on this machine and on the paper's GPU: the machine
    balance (flops per byte) over the step's arithmetic intensity (flops per byte it moves)."""

    here_balance: float  # this machine: FMA peak / stream bandwidth
    gpu_balance: float  # the paper's GPU, from its published figures
    intensity: float  # an unfused CartPole step (S = C = 1, no policy), flop per byte
    intensity_mlp: float  # the same with the MLP choosing the actions

    @property
    def here(self) -> float:
        """The compute ceiling over the memory ceiling of an unfused step here (S = 1)."""
        return self.here_balance / self.intensity

    @property
    def gpu(self) -> float:
        return self.gpu_balance / self.intensity


def fusion_bound(ceil: dict, gpu: dict) -> FusionBound:
    """``FusionBound`` from this machine's ceilings (``harness.model.roofline``) and a GPU's published
    peak and bandwidth (``paper.PAPER_GPU``)."""
    from ...harness.model import roofline

    return FusionBound(roofline.balance(ceil), gpu["fp32_flops_per_s"] / gpu["memory_bytes_per_s"],
                       costs.arithmetic_intensity(1, 1, "none"), costs.arithmetic_intensity(1, 1, "mlp"))


# ---- the page's first paragraph ------------------------------------------------------------------------

def peer_ratios(sim: pd.DataFrame) -> pd.DataFrame:
    """Section 3's ratios: per peer in ``PEERS`` and N measured with it, ``cpp`` over the peer
    (``ratio_with_spread``; simulation only), with a ``peer`` column."""
    return pd.concat([ratio_with_spread(sim, "cpp", peer).assign(peer=peer) for peer in PEERS], ignore_index=True)


def _fused_text(fj: pd.DataFrame, kmax: int) -> str:
    if not len(fj):
        return "`fused` and `jax` were not both measured with the MLP here."
    s = ratio_summary(fj)
    return (f"At K = {kmax}, `fused` collects **{fmt_x(s['median'])}** the samples per second of `jax` (median over "
            f"{s['count']} N, from {fmt_x(s['min'])} to {fmt_x(s['max'])}).")


def _peers_text(ratios: pd.DataFrame) -> str:
    if not len(ratios):
        return "No peer was measured here (none of gymnasium's vector env, gymnax and envpool is installed)."
    top = largest_n(ratios, "peer")
    return ("At the largest N measured with each peer, `cpp` (simulation only) collects " + ", ".join(
        f"**{fmt_x(r['ratio'])}** {k}'s rate at N = {pow2_label(r['num_envs'])}" for k, r in top.iterrows()) + ".")


def _roofline_text(roof: pd.DataFrame) -> str:
    if not len(roof):
        return "Nothing was measured to set against this machine's ceilings."
    best = closest_to_ceiling(roof).iloc[0]
    return (f"The closest to its ceiling is `{best['impl']}` ({best['policy']}, N = {pow2_label(best['num_envs'])}, "
            f"K = {best['steps']}) at **{best['fraction']:.2g}** of the {best['bound']} ceiling.")


def answer(P, gap: pd.DataFrame, fj: pd.DataFrame, ratios: pd.DataFrame, roof: pd.DataFrame, kmax: int) -> str:
    """The page's first paragraph: its four questions, each answered in one sentence from the
    numbers its section shows (``compile_gap_text``, ``ratio_summary``, ``largest_n``,
    ``closest_to_ceiling``); the paper has no number for them, so there is no verdict to state."""
    compiled = compile_gap_text(gap) if len(gap) else "Not all of torch, torch-compile and jax were measured here."
    return (f"Measured on {answers.where(P)}. **Does compiled PyTorch close the gap to XLA?** {compiled} "
            f"**What does one kernel running the MLP and the simulation buy over XLA?** {_fused_text(fj, kmax)} "
            f"**How do our implementations compare with the libraries readers use?** {_peers_text(ratios)} "
            f"**How close does anything get to this machine's limits?** {_roofline_text(roof)}")
