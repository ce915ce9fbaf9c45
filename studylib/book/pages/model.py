"""The cost model's chapter: this machine calibrated (``harness.model.calibrate``), its measured F.1–F.4
points predicted (``validation``), the paper's machine from published figures (``paper_table``),
projections for other GPUs (``projection_table``), and the predicted-vs-measured chart.

    P = book.params("model")
    ours = book.model_machine(P)                  # measures the microbenchmarks once per machine
    v = book.model_validation(P, ours)            # one row per measured point, with |log2 error|
    model.answer(P, ours, why_not, vs, paper)     # the page's first paragraph: the two checks' outcomes
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...errors import ConfigError
from ...harness.model import costmodel
from ...implspec import spec
from .. import answers
from ..claims.paper import PAPER
from ..presets import ChapterParams

FINDING_SWEEPS = {"F.1": "fig4", "F.2": "fig4_k", "F.3": "fig8", "F.4": "fig9"}
SMALL_N = [2**k for k in range(0, 14, 2)]  # the paper's Fig 4 grid (powers of 4) at N <= 2^13
BIG_N = 2**40  # "N -> infinity": per-call and per-step host costs vanish per environment


def model_calibration(P: ChapterParams) -> tuple[list, list]:
    """(calibration rows, ceiling rows) of the machine P reads: measured here once, then read."""
    from ...harness.model import calibrate

    return calibrate.calibration_rows(P.data_dir, P.machine), calibrate.ceiling_rows(P.data_dir, P.machine)


def host_facts(P: ChapterParams, calibration_rows) -> tuple[float, int]:
    """(clock in Hz, cores) of the machine whose calibration P reads."""
    from ..presets import machine_facts

    hz = next((r["value"] for r in calibration_rows if r.get("quantity") == "host_clock_hz"), None)
    if not hz:
        raise ConfigError("the calibration has no host clock; the paper's machine cannot be scaled from it")
    cores = machine_facts(P).get("cores")
    return float(hz), int(cores or 1)


def model_machine(P: ChapterParams) -> costmodel.Machine:
    cal, ceil = model_calibration(P)
    return costmodel.machine_from_calibration(cal, ceil, name=f"this machine ({P.data_machine})")


def model_machine_or_reason(P: ChapterParams) -> tuple[costmodel.Machine | None, str]:
    """(the machine, "") or (None, why not): a snapshot of another machine may lack a calibration."""
    try:
        return model_machine(P), ""
    except ConfigError as e:
        if P.machine and not model_calibration(P)[0]:
            return None, f"the snapshot of {P.machine} has no cost-model calibration (costmodel_calibration.json)"
        return None, str(e)


def _load(P: ChapterParams, sweep: str) -> pd.DataFrame:
    from ...harness.data import store

    try:
        return store.load(sweep, data_dir=P.data_dir, machine=P.data_machine)
    except ConfigError:
        return pd.DataFrame()


def model_validation(P: ChapterParams, machine: costmodel.Machine) -> pd.DataFrame:
    """Every measured point of F.1–F.4 (the chapters' sweeps, whatever they hold) with the model's
    prediction: columns finding, impl, num_envs, steps, state_factor, compute_factor, policy,
    measured, predicted, log2_error (signed: log2(predicted / measured)), dominant. Points on a
    device the model has no figures for (a GPU row on a machine without one) are left out."""
    out = []
    for finding, sweep in FINDING_SWEEPS.items():
        df = _load(P, sweep)
        for r in df.to_dict("records"):
            if str(r.get("device", "cpu")).startswith("cuda") and machine.gpu is None:
                continue
            if spec(r["impl"]).dispatch is None:  # its record gives the model nothing to price
                continue
            p = costmodel.predict(r["impl"], machine, num_envs=r["num_envs"], steps=r["steps"],
                                  state_factor=r["state_factor"], compute_factor=r["compute_factor"], policy=r["policy"])
            out.append({"finding": finding, "impl": r["impl"], "num_envs": int(r["num_envs"]), "steps": int(r["steps"]),
                        "state_factor": int(r["state_factor"]), "compute_factor": int(r["compute_factor"]),
                        "policy": r["policy"], "measured": r["samples_per_s"], "predicted": p.samples_per_s,
                        "log2_error": float(np.log2(p.samples_per_s / r["samples_per_s"])), "dominant": p.regime,
                        "arithmetic_grows_with_s": _arithmetic_grows_with_s(r)})
    return pd.DataFrame(out)


def _arithmetic_grows_with_s(row: dict) -> bool:
    """True for a row measured with S > 1 before S was the paper's (S copies of CartPole stepped: no
    ``state_layout`` of ``settings.STATE_LAYOUT``), whose arithmetic grew S×, which the model, with
    the paper's S (memory only), does not assume."""
    from ...settings import STATE_LAYOUT

    return int(row["state_factor"]) != 1 and row.get("state_layout") != STATE_LAYOUT


def error_table(v: pd.DataFrame) -> pd.DataFrame:
    """Per finding: points, median and worst |log2(predicted / measured)|, the share predicted too
    fast, and the worst point."""
    rows = []
    for finding, d in v.groupby("finding"):
        err = d["log2_error"].abs()
        worst = d.loc[err.idxmax()]
        rows.append({"finding": finding, "points": len(d), "median |log2 error|": float(err.median()),
                     "worst |log2 error|": float(err.max()), "predicted too fast": f"{(d['log2_error'] > 0).mean():.0%}",
                     "worst point": f"{worst['impl']} N={worst['num_envs']} K={worst['steps']} S={worst['state_factor']} "
                                    f"C={worst['compute_factor']} {worst['policy']}"})
    if len(v):
        err = v["log2_error"].abs()
        rows.append({"finding": "all", "points": len(v), "median |log2 error|": float(err.median()),
                     "worst |log2 error|": float(err.max()), "predicted too fast": f"{(v['log2_error'] > 0).mean():.0%}",
                     "worst point": ""})
    return pd.DataFrame(rows)


WITHIN_LOG2 = 1.0  # |log2(model / measured)| at most this: the model is within 2×


@dataclass(frozen=True)
class ValidationSummary:
    """What the page says of the model against this machine's points (``error_table``'s numbers)."""

    points: int  # measured points predicted
    median_error: float  # median |log2(model / measured)| over all of them
    per_finding: tuple  # (finding, median |log2 error|, worst |log2 error|) per finding
    copies: int  # points measured with S copies of CartPole's arithmetic (``arithmetic_grows_with_s``)
    copies_median: float | None  # their median signed log2 error (None: no such point)

    @property
    def within_2x(self) -> bool:
        """The model is within 2× of the typical point: the median |log2 error| ≤ ``WITHIN_LOG2``."""
        return self.median_error <= WITHIN_LOG2


def validation_summary(v: pd.DataFrame) -> ValidationSummary:
    """``v`` (``model_validation``) summarized as the page states it: the median |log2 error| over
    all points and per finding (with each finding's worst), and the median signed error of the
    points measured with S copies of the arithmetic, which the model does not assume."""
    errors = error_table(v).set_index("finding")
    per = tuple((f, float(r["median |log2 error|"]), float(r["worst |log2 error|"]))
                for f, r in errors.iterrows() if f != "all")
    copies = v[v["arithmetic_grows_with_s"]] if len(v) else v
    return ValidationSummary(int(len(v)), float(errors.loc["all", "median |log2 error|"]) if len(v) else np.nan, per,
                             int(len(copies)), float(copies["log2_error"].median()) if len(copies) else None)


def misses(v: pd.DataFrame, threshold: float = WITHIN_LOG2) -> pd.DataFrame:
    """Where the model misses by more than 2^threshold: points grouped by (finding, impl, policy,
    dominant term), with the median signed error (positive: the model is too fast)."""
    d = v[v["log2_error"].abs() > threshold]
    if not len(d):
        return pd.DataFrame(columns=["finding", "impl", "policy", "dominant", "points", "median log2 error"])
    g = d.groupby(["finding", "impl", "policy", "dominant"])["log2_error"]
    return pd.DataFrame({"points": g.size(), "median log2 error": g.median()}).reset_index()


# ---- the paper's machine --------------------------------------------------------------------------

def _sps(impl, m, n, k, policy, s=1, c=1):
    return costmodel.predict(impl, m, num_envs=n, steps=k, state_factor=s, compute_factor=c, policy=policy)


def _fusion_speedup(impl, m, k, s=1, c=1, n=BIG_N) -> float:
    return _sps(impl, m, n, k, "none", s, c).samples_per_s / _sps(impl, m, n, 1, "none", s, c).samples_per_s


def paper_predictions(m: costmodel.Machine) -> list[dict]:
    """The paper's headline numbers as the model predicts them on ``m`` (the paper's machine):
    [{"key" (PAPER), "quantity", "where" (N, K the model uses), "predicted", "dominant"}]."""
    rows = []

    def add(key, quantity, where, value, dominant):
        rows.append({"key": key, "quantity": quantity, "where": where, "predicted": float(value), "dominant": dominant})

    n_gym, n_cpp, n_gpu = PAPER["plateau_gym"].value, PAPER["plateau_cpp"].value, PAPER["plateau_torch"].value
    gym = _sps("gym", m, n_gym, 1000, "mlp")
    best = max((_sps(i, m, n_gpu, 1000, "mlp") for i in ("torch", "jax")), key=lambda p: p.samples_per_s)
    add("f1_gpu_over_gym", "best of torch/jax (GPU) over gym, at each one's plateau N", f"N = 2^26 vs 2^16, K = 10^3",
        best.samples_per_s / gym.samples_per_s, f"{best.impl}: {best.regime}; gym: {gym.regime}")
    cpp = _sps("cpp", m, n_cpp, 1000, "mlp")
    add("f1_cpp_over_gym", "cpp over gym, at each one's plateau N", "N = 2^18 vs 2^16",
        cpp.samples_per_s / gym.samples_per_s, f"cpp: {cpp.regime}; gym: {gym.regime}")
    ratios = [_sps("jax", m, n, 1000, "mlp").samples_per_s / _sps("torch", m, n, 1000, "mlp").samples_per_s
              for n in SMALL_N]
    add("f2_xla_over_torch", "jax over torch, mean over N ≤ 2^13", "N = 2^0, 2^2, …, 2^12; K = 10^3",
        statistics.mean(ratios), f"jax: {_sps('jax', m, 2**12, 1000, 'mlp').regime}; "
                                 f"torch: {_sps('torch', m, 2**12, 1000, 'mlp').regime}")
    ks = [_sps("jax", m, n, 1000, "mlp").samples_per_s / _sps("jax", m, n, 1, "mlp").samples_per_s for n in SMALL_N]
    add("f2_xla_k1_to_k1000", "jax K = 1 → 10^3, mean over N ≤ 2^13", "N = 2^0, 2^2, …, 2^12",
        statistics.mean(ks), f"K = 1: {_sps('jax', m, 2**12, 1, 'mlp').regime}")
    n_prof = PAPER["f2_profile_num_envs"].value
    p = _sps("jax", m, n_prof, 1, "mlp")
    # The paper's CPU-bound time is Python plus backend C++ (RL-Scope), which issues the kernel
    # launches: the model's host terms, python + launch.
    add("f2_cpu_share_k1", "share of jax's time at K = 1 on the host: Python→XLA call and kernel launches (%)",
        "N = 2^16, K = 1", 100 * (p.terms["python"] + p.terms["launch"]) / p.seconds_per_call, p.regime)
    fused = _sps("cuda", m, BIG_N, 1, "none")
    add("f3_fusion", "cuda K = 1 → 10^3 (simulation only)", "N → ∞", _fusion_speedup("cuda", m, 1000),
        f"K = 1: {fused.regime}; K = 10^3: {_sps('cuda', m, BIG_N, 1000, 'none').regime}")
    add("f3_xla_k1_to_k1000", "jax K = 1 → 10^3 (simulation only)", "N → ∞", _fusion_speedup("jax", m, 1000),
        _sps("jax", m, BIG_N, 1, "none").regime)
    cx = _sps("cuda", m, BIG_N, 1000, "none").samples_per_s / _sps("jax", m, BIG_N, 1000, "none").samples_per_s
    add("f3_fused_over_xla", "cuda over jax at K = 10^3 (simulation only)", "N → ∞", cx,
        f"cuda: {_sps('cuda', m, BIG_N, 1000, 'none').regime}; jax: {_sps('jax', m, BIG_N, 1000, 'none').regime}")
    s_hi = 2**11
    add("f4_speedup_s_high", "cuda fusion speedup, K = 10^3, S = 2^11", "N → ∞, C = 1",
        _fusion_speedup("cuda", m, 1000, s=s_hi), f"K = 1: {_sps('cuda', m, BIG_N, 1, 'none', s_hi).regime}")
    add("f4_speedup_s_low", "cuda fusion speedup, K = 10^3, S = 1", "N → ∞, C = 1", _fusion_speedup("cuda", m, 1000),
        f"K = 10^3: {_sps('cuda', m, BIG_N, 1000, 'none').regime}")
    add("f4_speedup_c_max", "cuda fusion speedup, K = 10^3, C = 2^10, S = 1", "N → ∞",
        _fusion_speedup("cuda", m, 1000, c=2**10), _sps("cuda", m, BIG_N, 1, "none", 1, 2**10).regime)
    k10 = max(_fusion_speedup("cuda", m, 10, s=2**e) for e in range(0, 13))
    add("f4_speedup_k10_max", "cuda fusion speedup at K = 10, largest over S = 2^0 … 2^12", "N → ∞, C = 1", k10,
        f"S = 2^12, K = 1: {_sps('cuda', m, BIG_N, 1, 'none', 2**12).regime}")
    by_n = [_fusion_speedup("cuda", m, 1000, n=2**e) for e in range(10, 21, 5)]
    add("f4_flat_in_n", "cuda fusion speedup (K = 10^3, S = 1), largest over smallest across N", "N = 2^10, 2^15, 2^20",
        max(by_n) / min(by_n), f"N = 2^10, K = 1: {_sps('cuda', m, 2**10, 1, 'none').regime}")
    return rows


def paper_table(m: costmodel.Machine) -> pd.DataFrame:
    """The paper's value (labelled so), the model's prediction, their ratio and the dominant terms."""
    rows = []
    for r in paper_predictions(m):
        pv = PAPER[r["key"]]
        rows.append({"claim (paper)": f"{pv.claim} ({pv.where})", "quantity": r["quantity"], "at": r["where"],
                     "paper value": pv.value, "model": r["predicted"], "model / paper": r["predicted"] / pv.value,
                     "|log2 ratio|": abs(float(np.log2(r["predicted"] / pv.value))), "dominant term": r["dominant"]})
    return pd.DataFrame(rows)


def paper_agreement(paper: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``paper_table``'s rows split by the same 2× rule: (predicted within 2× of the paper's value,
    further than 2×)."""
    within = paper["|log2 ratio|"] <= WITHIN_LOG2
    return paper[within], paper[~within]


def answer(P: ChapterParams, ours, why_not: str, vs: ValidationSummary | None, paper: pd.DataFrame) -> str:
    """The chapter's first paragraph: does the model explain what can be checked? Its error over
    this machine's F.1–F.4 points (``validation_summary``: within 2× of the typical point or not)
    and how many of the paper's numbers it predicts within 2× from §3.1's published hardware
    (``paper_agreement``), the paper's labelled as the paper's; what is missing where it cannot."""
    if ours is None:
        return f"**No cost model for this data**: {why_not}. The rest of this page is empty."
    here = ("No F.1–F.4 measurements are saved for this machine yet, so the model is not checked against them."
            if vs is None else
            f"On {answers.where(P)}, the cost model predicts the {vs.points} points of F.1–F.4 measured here with a "
            f"median |log₂(model / measured)| of **{vs.median_error:.2f}**: it is **"
            + ("within" if vs.within_2x else "not within") + " 2× of the typical point** (per finding: "
            + "; ".join(f"{f} {median:.2f}" for f, median, _ in vs.per_finding) + ").")
    ok, _ = paper_agreement(paper)
    return (here + f" With the paper's machine (§3.1) from published figures, it predicts **{len(ok)} of {len(paper)}**"
            " of the paper's numbers within 2×" + (f": {'; '.join(ok['quantity'])}." if len(ok) else "."))


# ---- projections -----------------------------------------------------------------------------------

PROJECTED = "projection (model), not a measurement"


def projected(policy: str) -> list:
    """The records the projections show: the paper's implementations the model prices, less a
    GPU-only kernel whose policy would run between its steps (its calls are counted on a GPU only,
    and none measured them)."""
    from ...implspec import specs

    return [r for r in specs() if r.in_paper and r.dispatch is not None
            and not (r.gpu_only and policy not in r.fused_policies)]


def projection_table(m: costmodel.Machine, num_envs, steps) -> pd.DataFrame:
    """samples/s and regime of every family on ``m`` (a machine with a GPU that nothing measured),
    with the MLP policy and simulation only, each value labelled as a projection."""
    rows = []
    for policy in ("mlp", "none"):
        for r in projected(policy):
            for n in num_envs:
                for k in steps:
                    if r.max_envs is not None and n > r.max_envs:
                        continue
                    p = _sps(r.name, m, n, k, policy)
                    rows.append({"implementation": r.name, "policy": policy, "N": n, "K": k,
                                 "samples/s": p.samples_per_s, "regime": p.regime, "status": PROJECTED})
    return pd.DataFrame(rows)


# ---- chart ---------------------------------------------------------------------------------------------

def validation_chart(v: pd.DataFrame, title: str, subtitle: str):
    """Predicted against measured samples/s, log–log, one colour per finding, the identity line."""
    from ..figures.charts import _altair, finish

    alt = _altair()
    lo = float(min(v["measured"].min(), v["predicted"].min())) / 2
    hi = float(max(v["measured"].max(), v["predicted"].max())) * 2
    scale = alt.Scale(type="log", domain=[lo, hi])
    points = alt.Chart(v).mark_point(filled=True, size=40, opacity=0.8).encode(
        alt.X("measured:Q", scale=scale, axis=alt.Axis(title="measured (samples/s, log scale)", format="~s")),
        alt.Y("predicted:Q", scale=scale, axis=alt.Axis(title="model (samples/s, log scale)", format="~s")),
        alt.Color("finding:N", title="finding"), alt.Shape("impl:N", title="implementation"),
        tooltip=["finding", "impl", "policy", alt.Tooltip("num_envs:Q", title="N", format=","),
                 alt.Tooltip("steps:Q", title="K"), alt.Tooltip("state_factor:Q", title="S"),
                 alt.Tooltip("compute_factor:Q", title="C"), alt.Tooltip("measured:Q", format=".3s"),
                 alt.Tooltip("predicted:Q", title="model", format=".3s"),
                 alt.Tooltip("log2_error:Q", title="log2(model / measured)", format=".2f"),
                 alt.Tooltip("dominant:N", title="model's regime")])
    line = pd.DataFrame({"measured": [lo, hi], "predicted": [lo, hi]})
    ident = alt.Chart(line).mark_line(color="#555", strokeDash=[6, 4]).encode(x="measured:Q", y="predicted:Q")
    band = pd.DataFrame({"measured": [lo, hi], "lo": [lo / 2, hi / 2], "hi": [lo * 2, hi * 2]})
    within = alt.Chart(band).mark_area(opacity=0.12, color="#888").encode(x="measured:Q", y="lo:Q", y2="hi:Q")
    return finish((within + ident + points).properties(width=460, height=400).interactive(), title, subtitle)


# ---- what a miss says ----------------------------------------------------------------------------

# (the model's dominant term, the model too fast?) -> the term the model lacks there
MISSING_TERM = {
    ("python", True): "host work the counted operations leave out (numpy bookkeeping, device-to-host copies, "
                      "episode resets)",
    ("python", False): "nothing: its fixed or per-operation cost is larger in the microbenchmark than inside the "
                       "implementation (an OpenMP region costs more when the cores are busy with other processes; "
                       "a repeated call runs with warm caches)",
    ("launch", True): "a per-kernel cost: the microbenchmark's kernel (a tiny matrix-vector product) is cheaper "
                      "than a real step's kernels (loop-carried copies, random numbers, buffer handling)",
    ("launch", False): "nothing: fewer kernels run per step than counted, or they cost less than measured",
    ("compute", True): "the efficiency below peak: the FMA peak is an upper bound that sin/cos, divisions, "
                       "branches and partly filled SIMD lanes keep a step from reaching",
    ("compute", False): "nothing: the peak was measured below what the implementation reached (a busy machine), "
                        "or the flops are over-counted",
    ("memory", True): "intermediate traffic: the framework's kernels move more than one float per environment each",
    ("memory", False): "a cache term: the working set stays in cache, faster than the stream bandwidth",
}


def miss_reasons(v: pd.DataFrame, threshold: float = WITHIN_LOG2) -> pd.DataFrame:
    """``misses`` with the term the model lacks for each group."""
    m = misses(v, threshold)
    terms = {label: t for t, label in costmodel.REGIMES.items()}
    m["what the model lacks"] = [MISSING_TERM[(terms[d], e > 0)] for d, e in zip(m["dominant"], m["median log2 error"])]
    return m


def parameters_table(m: costmodel.Machine) -> pd.DataFrame:
    """Every parameter of ``m`` with its value and source."""
    from ..format import fmt_time

    h, cpu = m.host, m.cpu
    rows = [("Python→PyTorch op", fmt_time(h.torch_op_s), m.sources.get("torch_op_s", "")),
            ("Python→XLA call", fmt_time(h.jax_call_s), m.sources.get("jax_call_s", "")),
            ("native call (empty OpenMP region)", fmt_time(h.native_call_s), m.sources.get("native_call_s", "")),
            ("XLA:CPU kernel in a compiled loop", fmt_time(h.xla_kernel_s), m.sources.get("xla_kernel_s", "")),
            ("gymnasium CartPoleEnv.step, per environment", fmt_time(h.gym_env_step_s),
             m.sources.get("gym_env_step_s", "")),
            ("gymnasium MujocoEnv step's Python beyond mj_step, per environment (version 2)",
             "not calibrated" if h.gym_mujoco_python_s is None else fmt_time(h.gym_mujoco_python_s),
             m.sources.get("gym_mujoco_python_s", "")),
            *((f"{sim}'s host-run policy between native steps: fixed per call; its flops' rate (version 3)",
               f"{fmt_time(hp.fixed_s)}; {hp.flops_per_s / 1e9:.3g} GFLOP/s", m.sources.get("host_policy", ""))
              for sim, hp in sorted(m.host_policy.items())),
            ("CPU sin/cos/tanh (whole CPU)", fmt_time(cpu.transcendental_s), m.sources.get("transcendental_s", "")),
            ("CPU peak FP32", f"{cpu.flops_per_s / 1e9:.3g} GFLOP/s",
             m.sources.get("cpu", m.sources.get("cpu.flops_per_s", ""))),
            ("CPU bandwidth", f"{cpu.bytes_per_s / 1e9:.3g} GB/s",
             m.sources.get("cpu", m.sources.get("cpu.bytes_per_s", "")))]
    if m.gpu is not None:
        rows += [("GPU peak FP32", f"{m.gpu.flops_per_s / 1e12:.3g} TFLOP/s", m.sources.get("gpu", "")),
                 ("GPU bandwidth", f"{m.gpu.bytes_per_s / 1e9:.3g} GB/s", m.sources.get("gpu", "")),
                 ("kernel launch", fmt_time(m.gpu.launch_s), m.sources.get("launch_s", ""))]
    if "host costs" in m.sources:
        rows.append(("host costs carried over", "", m.sources["host costs"]))
    return pd.DataFrame(rows, columns=["parameter", "value", "source"])


def counts_table(m: costmodel.Machine) -> pd.DataFrame:
    rows = [{"implementation": impl, "policy": pol, **{k: float(v) for k, v in c.items()}}
            for (impl, pol), c in sorted(m.counts.table.items())]
    return pd.DataFrame(rows)
