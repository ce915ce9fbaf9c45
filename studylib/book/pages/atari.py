"""The Atari chapter's numbers, rules and charts: frames per second against N (``plans.atari_data``),
the time breakdown (``plans.atari_breakdown_data``), CuLE's published figures beside them.

Every rule here returns its numbers and a verdict that can come out either way (tests in
``tests/test_atari_book.py``). ``answer`` is the page's first paragraph and ``contention`` its
conclusion's caveat, both from ``summary``."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from .. import answers
from ..format import fmt_list
from ..presets import ChapterParams, display_path

IMPL_LABELS = {"gym": "gymnasium, one env (Python loop)", "gym-async": "gymnasium AsyncVectorEnv (a process per env)",
               "ale-vector": "ale-py AtariVectorEnv (C++ threads)", "envpool": "envpool (C++ threads)"}
VECTOR_IMPLS = ("ale-vector", "envpool")

# CuLE's published figures: GPU measurements, quoted, never measured here.
CULE_FRAMES_PER_HOUR = 155e6
CULE = [
    {"source": "Dalton & Frosio, NeurIPS 2020 (CuLE), abstract",
     "claim": "“CuLE generates up to 155M frames per hour on a single GPU”",
     "frames_per_s": CULE_FRAMES_PER_HOUR / 3600, "hardware": "one NVIDIA GPU (model not named in the abstract)",
     "kind": "GPU measurement (published)"},
    {"source": "Gleeson et al. 2022, §2 (related work), on CuLE",
     "claim": "“the observed speedup over CPU is at most 2.54× when training Atari Assault on a Titan V GPU”",
     "frames_per_s": None, "hardware": "NVIDIA Titan V", "kind": "GPU measurement (published, a ratio)"},
    {"source": "Dalton et al., GTC 2018 slides, slide 24",
     "claim": "“FRAMES PER SECOND Breakout, inference only (no training)” at 1, 1024, 4096 and 32768 environments, "
              "with GPU occupancy",
     "frames_per_s": None, "hardware": "a GPU (the slide's text does not name it)",
     "kind": "GPU measurement (published; the bars' values are not in the slide text available here)"},
]


def describe(P: ChapterParams) -> str:
    """The parameters of an Atari run, one paragraph (Markdown)."""
    from ...harness.atari.frames import FRAMESKIP, SCREEN, STACK, cores

    where = (f"the snapshot of machine **{P.machine}** (read, nothing measured)" if P.machine
             else f"`{display_path(P.data_dir)}`")
    return (f"preset **{P.preset}**; games: {', '.join(P.games)}; N = {fmt_list(P.num_envs)} (ale-py, envpool, "
            f"{cores()} threads = cores), N = {fmt_list(P.async_num_envs)} (gymnasium AsyncVectorEnv), N = 1 "
            f"(one gymnasium env); policies: none (random actions), Nature CNN (inference only); "
            f"{P.repeats} timed regions of ≥ {P.min_seconds:g} s per point (median); time breakdown at N = "
            f"{fmt_list(P.breakdown_num_envs)}, {P.breakdown_seconds:g} s each. Preprocessing: {SCREEN}×{SCREEN} "
            f"grey, frameskip {FRAMESKIP} (max of the last two frames), {STACK} stacked frames. Frames are "
            f"**emulator frames** ({FRAMESKIP} per agent step), as CuLE and envpool count them. Data: {where}.")


def best(df: pd.DataFrame, game: str, policy: str, impls) -> pd.Series | None:
    """The fastest row of ``game`` with ``policy`` among ``impls`` (None when none was measured)."""
    rows = df[(df["game"] == game) & (df["policy"] == policy) & df["impl"].isin(impls)]
    return rows.loc[rows["frames_per_s"].idxmax()] if len(rows) else None


def threads_speedup(df: pd.DataFrame, game: str) -> dict | None:
    """F.1 for Atari: the best threaded vector environment (ale-py or envpool, any N, random
    actions) over the single gymnasium environment (N = 1), both emulator frames per second."""
    single = best(df, game, "none", ("gym",))
    vector = best(df, game, "none", VECTOR_IMPLS)
    if single is None or vector is None:
        return None
    return {"game": game, "single_fps": single["frames_per_s"], "vector_fps": vector["frames_per_s"],
            "vector_impl": vector["impl"], "vector_n": int(vector["num_envs"]),
            "speedup": vector["frames_per_s"] / single["frames_per_s"]}


def cnn_cost(df: pd.DataFrame) -> pd.DataFrame:
    """Per (game, impl, N): frames/s without and with the CNN and their ratio (how many times the
    policy slows collection)."""
    wide = df.pivot_table(index=["game", "impl", "num_envs"], columns="policy", values="frames_per_s").reset_index()
    wide = wide.dropna(subset=[c for c in ("none", "cnn") if c in wide.columns])
    if not {"none", "cnn"} <= set(wide.columns):
        return pd.DataFrame(columns=["game", "impl", "num_envs", "none", "cnn", "slowdown"])
    wide["slowdown"] = wide["none"] / wide["cnn"]
    return wide


def cnn_bounds(breakdown: pd.DataFrame) -> pd.DataFrame:
    """Per breakdown row: the phase with the largest share (``atari.limiting_phase``) and whether it
    is the CNN ("inference"), i.e. whether the CNN, not the emulator, bounds throughput there; the
    same with the inference time of one thread (``limiting_one_thread``, ``cnn_bound_one_thread``),
    which differs where torch's threads waited for one another on a busy machine."""
    from ...harness.atari.frames import limiting_phase

    out = breakdown[["game", "loop", "num_envs"]].copy()
    rows = breakdown.to_dict("records")
    out["limiting"] = [limiting_phase(r) for r in rows]
    out["cnn_bound"] = out["limiting"] == "inference"
    if "inference_one_thread_s" in breakdown.columns:
        out["limiting_one_thread"] = [limiting_phase(r, "inference_one_thread_s") for r in rows]
        out["cnn_bound_one_thread"] = out["limiting_one_thread"] == "inference"
    return out


def what_binds(bounds: pd.DataFrame) -> str:
    """Which part bounds a CNN-driven step in most breakdowns, "the CNN's inference" or "the
    emulator (stepping and preprocessing)" (or host copies where they are the largest phase most
    often), by the loop's own inference time."""
    counts = bounds["limiting"].value_counts()
    top = counts.idxmax() if len(counts) else None
    return {"inference": "the CNN's inference", "env step": "the emulator (stepping and preprocessing)",
            "host copies": "the host copies"}.get(top, "not measured")


WAITING_FACTOR = 2  # the loop's inference this many times the one-thread forward pass: threads waited


@dataclass(frozen=True)
class AtariSummary:
    """The numbers the chapter's F.1 section and conclusion state, computed once from the frame rates
    (``df``) and the time breakdowns (``bd``); the page only formats them."""

    cores: int  # threads of the vector environments (= cores)
    speedups: tuple = ()  # ``threads_speedup`` per game measured
    fastest: dict | None = None  # the speedup whose vector environment is fastest (any game)
    beyond_cores: bool = False  # that speedup exceeds the cores: not from threads alone
    slowdown_min: float | None = None  # random actions over the CNN, the least over (game, impl, N)
    slowdown_max: float | None = None  # ... the most
    worst: dict | None = None  # the (game, impl, N) of the largest slowdown, with its two rates
    best_cnn: dict | None = None  # the fastest CNN-driven row: game, impl, num_envs, frames_per_s
    cule_frames_per_s: float = CULE_FRAMES_PER_HOUR / 3600  # published (GPU), not measured here
    cule_over_best_cnn: float | None = None  # CuLE's published rate over the best CNN-driven rate here
    bounds: pd.DataFrame = field(default_factory=pd.DataFrame, compare=False)  # ``cnn_bounds`` of the breakdowns
    cnn_bound: int = 0  # breakdowns whose largest phase is inference
    cnn_bound_one_thread: int | None = None  # the same with the one-thread forward pass (None: not timed)
    binds: str = "not measured"  # ``what_binds`` by the loop's own inference time
    binds_one_thread: str | None = None  # ``what_binds`` by the one-thread forward pass
    binds_one_thread_count: int = 0  # breakdowns where that phase is the largest
    waiting_ratio: float | None = None  # largest loop inference / one-thread forward pass (threads waiting)

    @property
    def breakdowns(self) -> int:
        return len(self.bounds)

    @property
    def threads_waited(self) -> bool:
        """Whether the loop's inference took more than ``WAITING_FACTOR`` × the one-thread pass somewhere."""
        return self.waiting_ratio is not None and self.waiting_ratio > WAITING_FACTOR


def summary(df: pd.DataFrame, bd: pd.DataFrame, games, cores: int) -> AtariSummary:
    """The chapter's conclusions in numbers: F.1 for Atari per game (``threads_speedup``), what the
    CNN costs (``cnn_cost``), which phase bounds each breakdown (``cnn_bounds``, ``what_binds``) by
    the loop's inference time and by the one-thread pass, and CuLE's published rate over ours."""
    speedups = tuple(s for s in (threads_speedup(df, g) for g in games) if s)
    out = {"cores": int(cores), "speedups": speedups}
    if speedups:
        fastest = max(speedups, key=lambda s: s["vector_fps"])
        out.update(fastest=fastest, beyond_cores=bool(fastest["speedup"] > cores))
    cost = cnn_cost(df)
    if len(cost):
        w = cost.loc[cost["slowdown"].idxmax()]
        out.update(slowdown_min=float(cost["slowdown"].min()), slowdown_max=float(cost["slowdown"].max()),
                   worst={"game": w["game"], "impl": w["impl"], "num_envs": int(w["num_envs"]),
                          "none": float(w["none"]), "cnn": float(w["cnn"])})
    cnn_rows = df[df["policy"] == "cnn"] if len(df) else df
    if len(cnn_rows):
        b = cnn_rows.loc[cnn_rows["frames_per_s"].idxmax()]
        out.update(best_cnn={"game": b["game"], "impl": b["impl"], "num_envs": int(b["num_envs"]),
                             "frames_per_s": float(b["frames_per_s"])},
                   cule_over_best_cnn=CULE_FRAMES_PER_HOUR / 3600 / float(b["frames_per_s"]))
    if len(bd):
        bounds = cnn_bounds(bd)
        out.update(bounds=bounds, cnn_bound=int(bounds["cnn_bound"].sum()), binds=what_binds(bounds))
        if "limiting_one_thread" in bounds:
            one = bounds.assign(limiting=bounds["limiting_one_thread"])
            out.update(cnn_bound_one_thread=int(bounds["cnn_bound_one_thread"].sum()), binds_one_thread=what_binds(one),
                       binds_one_thread_count=int(bounds["limiting_one_thread"].value_counts().max()),
                       waiting_ratio=float((bd["inference_s"] / bd["inference_one_thread_s"]).max()))
    return AtariSummary(**out)


def answer(P: ChapterParams, S: AtariSummary) -> str:
    """The chapter's first paragraph: what limits Atari collection on this machine, in the numbers
    of ``summary`` (the emulator's best rate, the CNN-driven best, which phase the breakdowns find
    largest), beside CuLE's published GPU rate, labelled as published; the GPU claim is not tested
    without a GPU. What is missing where a part was not measured."""
    if not (S.speedups and S.breakdowns and S.best_cnn):
        return ("Not enough was measured here to answer: the chapter needs the single gymnasium environment, a "
                "threaded vector environment, the Nature CNN and a time breakdown, and this run lacks "
                + ", ".join(what for what, have in (("the frame rates", S.speedups), ("the CNN-driven rates", S.best_cnn),
                                                    ("the breakdowns", S.breakdowns)) if not have) + ".")
    fastest, best_cnn = S.fastest, S.best_cnn
    beyond_cores = (f" — more than {S.cores} threads alone can give: part of the gain is the C++ loop and "
                    "preprocessing replacing gymnasium's Python wrappers" if S.beyond_cores else "")
    return (f"On {answers.where(P)}, the emulator alone reaches at most **{fastest['vector_fps']:,.0f} frames/s** "
            f"({fastest['game']}, {fastest['vector_impl']}, N = {fastest['vector_n']}), {fastest['speedup']:.2g}× one "
            f"environment{beyond_cores}. With the Nature CNN the best is **{best_cnn['frames_per_s']:,.0f} frames/s** "
            f"({best_cnn['game']}, {best_cnn['impl']}, N = {best_cnn['num_envs']}), and in {S.cnn_bound} of "
            f"{S.breakdowns} timed breakdowns the largest phase is inference: **what limits Atari collection here, as "
            f"measured, is {S.binds}**, on the same {S.cores} cores as the emulators. CuLE's published single-GPU rate "
            f"({S.cule_frames_per_s:,.0f} frames/s, a GPU measurement) is {S.cule_over_best_cnn:,.0f}× the best "
            "CNN-driven rate measured here; the slides' claim that a GPU emulator removes the CPU's limits is not "
            "tested here (no GPU), only the CPU side of it.")


def contention(S: AtariSummary) -> str:
    """The conclusion's caveat: whether torch's threads waited for one another in the inference
    phase (the loop's inference against the one-thread forward pass), and whether the part that binds
    then depends on how busy the machine is."""
    if S.waiting_ratio is None:
        return "The forward pass was not timed on one thread here, so contention for the cores is not measured."
    if not S.threads_waited:
        return (f"The step's inference on {S.cores} threads took at most {S.waiting_ratio:.2g}× the same forward pass "
                "on one thread: torch's threads did not wait for one another enough to change which part binds.")
    tail = (f". With the forward pass timed on one thread instead, the largest phase is "
            f"{S.binds_one_thread.removeprefix('the ')} in {S.binds_one_thread_count} of {S.breakdowns} breakdowns: "
            "which part binds here depends on how busy the machine is." if S.binds_one_thread != S.binds else
            ", and the verdict is the same with the forward pass timed on one thread.")
    return (f"On this shared machine the step's inference on {S.cores} threads took up to {S.waiting_ratio:.2g}× the "
            "same forward pass on one thread: part of the inference phase here is torch's threads waiting for one "
            "another, a cost of contention that a quiet machine would not show" + tail)


def shares_long(breakdown: pd.DataFrame) -> pd.DataFrame:
    """The breakdown as (game, loop, N, phase, seconds, share) rows for a stacked bar; the vector
    environment's step is one phase, "emulation + preprocessing", since both run inside one C++ call."""
    rows = []
    for r in breakdown.to_dict("records"):
        if r["loop"] == "python-loop":
            parts = {"emulation": r["emulation_s"], "preprocessing": r["preprocessing_s"]}
        else:
            parts = {"emulation + preprocessing": r["env_step_s"]}
        parts.update({"host copies": r["host_copies_s"], "inference (CNN)": r["inference_s"]})
        total = sum(parts.values())
        rows += [{"game": r["game"], "loop": r["loop"], "num_envs": r["num_envs"], "phase": k, "seconds": v,
                  "share": v / total} for k, v in parts.items()]
    return pd.DataFrame(rows)


def fps_chart(df: pd.DataFrame):
    """Frames per second against N, one panel per game, colour = implementation, dashes = policy,
    with CuLE's published single-GPU rate as a labelled rule."""
    from ..figures.charts import _altair, x_n

    alt = _altair()
    d = df.assign(implementation=df["impl"].map(IMPL_LABELS),
                  policy_label=df["policy"].map({"none": "no policy (random actions)", "cnn": "Nature CNN"}))
    base = alt.Chart(d).encode(
        x_n(), alt.Y("frames_per_s:Q", scale=alt.Scale(type="log"),
                     axis=alt.Axis(title="emulator frames per second (log)", format="~s")),
        alt.Color("implementation:N", legend=alt.Legend(orient="bottom", columns=1, labelLimit=400)),
        alt.StrokeDash("policy_label:N", title="policy"),
        tooltip=[alt.Tooltip("implementation:N"), alt.Tooltip("num_envs:Q", title="N"), alt.Tooltip("policy_label:N"),
                 alt.Tooltip("frames_per_s:Q", title="frames/s", format=".3s"),
                 alt.Tooltip("frames_per_s_min:Q", title="min", format=".3s"),
                 alt.Tooltip("frames_per_s_max:Q", title="max", format=".3s")])
    lines = base.mark_line() + base.mark_point(filled=True, size=30).encode(strokeDash=alt.value([1, 0]))
    rule_d = pd.DataFrame([{"value": CULE_FRAMES_PER_HOUR / 3600,
                            "label": "CuLE, one GPU: 155M frames/h (published GPU measurement)"}])
    rule = alt.Chart(rule_d).mark_rule(strokeDash=[6, 4], color="#555").encode(
        y="value:Q", tooltip=[alt.Tooltip("label:N", title="published")])
    text = alt.Chart(rule_d).mark_text(align="left", baseline="bottom", dx=4, dy=-3, fontSize=10, color="#333").encode(
        y="value:Q", x=alt.value(4), text="label:N")
    return (lines + rule + text).properties(width=300, height=260).facet(column=alt.Column("game:N", title=None))


def breakdown_chart(long: pd.DataFrame):
    """Stacked shares of one CNN-driven collection step, per game and loop."""
    from ..figures.charts import _altair

    alt = _altair()
    order = ["emulation", "preprocessing", "emulation + preprocessing", "host copies", "inference (CNN)"]
    colors = ["#1f77b4", "#aec7e8", "#6baed6", "#ff7f0e", "#d62728"]
    d = long.assign(row=long["game"] + " · " + long["loop"] + " · N=" + long["num_envs"].astype(str),
                    order=long["phase"].map(order.index))
    return alt.Chart(d).mark_bar().encode(
        alt.X("share:Q", stack="normalize", axis=alt.Axis(format="%", title="share of one collection step")),
        alt.Y("row:N", title=None),
        alt.Color("phase:N", scale=alt.Scale(domain=order, range=colors), legend=alt.Legend(orient="bottom", columns=3)),
        alt.Order("order:Q"),
        tooltip=["row:N", "phase:N", alt.Tooltip("share:Q", format=".1%"), alt.Tooltip("seconds:Q", format=".3s")],
    ).properties(width=520)
