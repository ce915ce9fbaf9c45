"""The robot chapter's runs and what the page says of them (book/robot.md).

    P = chapter.params(preset=None, data_dir=None)   # the preset's plan ($STUDYLIB_PRESET)
    df = chapter.runs(P)                             # every run, trained or read (results), one row each
    T = chapter.table(df)                            # per n and trainer: medians over seeds, ranges
    v = chapter.verdicts(T)                          # per n: does the fastest collector train fastest?
    chapter.answer(T)                                # the page's first paragraph

Time to solve is censored: a run that did not solve took "more than its budget" and enters as infinite, so a
median is finite only while at least half the seeds solved. The verdict is a rule that can fail: the trainer
whose collection takes the least time per sample (median over its seeds) is compared with the trainer with the
smallest median time to solve; they are the same trainer or not (a single draw where a trainer has one seed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...harness.data.store import run_time
from . import results
from .. import stats
from ..settings import collector_spec
from .params import RobotParams
from .settings import CHAIN_PEERS

Params = RobotParams
TRAINER_LABELS = {"jax": "JAX PPO (fully jitted)", "sb3": "Stable-Baselines3 PPO (rl-zoo settings)",
                  "sb3-defaults": "Stable-Baselines3 PPO (its defaults)",
                  "brax": "Brax PPO (its own settings)"}


def label(collector: str) -> str:
    """A trainer's name on the page: the fully jitted JAX PPO, a peer, or the PyTorch PPO on a collector."""
    return TRAINER_LABELS.get(collector, f"PyTorch PPO + {collector}" + (" (MuJoCo)" if collector == "gym" else ""))


def task_of(row: dict) -> str:
    """The environment a run was trained and judged on: a peer's own task, else the chain's MujocoEnv."""
    peer = row.get("peer")
    if isinstance(peer, dict) and peer.get("env"):
        return f"{peer['env']} (threshold {peer['threshold']:,.0f})"
    return f"ChainMujocoEnv(links={int(row['links'])}) (threshold 9,100)"


def params(preset=None, data_dir=None, collectors=None, links=None, seeds=None, budget_s=None, **given) -> RobotParams:
    """The chapter's parameters at ``preset`` (``$STUDYLIB_PRESET``), those given overriding it;
    ConfigError (one line) for a value of the wrong type."""
    return RobotParams.resolve("robot", preset=preset, data_dir=data_dir, collectors=collectors, links=links,
                               seeds=seeds, budget_s=budget_s, **given)


def runs(P: RobotParams) -> pd.DataFrame:
    """Every run of the plan, read where saved, else trained and saved at once (``results``)."""
    saved = {results.key_of(r): r for r in results.load(P.data_dir)}
    rows = []
    for run in P.runs():
        row = results.run_or_load(run, P.data_dir, saved)
        if row is not None:  # None: left untrained by a session that measures nothing
            rows.append(row)
    return frame(rows)


def frame(rows) -> pd.DataFrame:
    """The rows as a frame with the measures the table uses (time and samples censored)."""
    df = pd.DataFrame(list(rows))
    if not len(df):
        return df
    if "links" not in df:
        df["links"] = [s["links"] for s in df["settings"]]
    solved = df["solved"].astype(bool)
    df["time"] = np.where(solved, df["wall_s"], np.inf)  # censored: unsolved -> "more than its budget"
    df["samples_to_solve"] = np.where(solved, df["samples"].astype(float), np.inf)
    parts = df["collect_s"] + df["learn_s"] + df["eval_s"]
    df["collect_share"], df["screen_share"] = (df[c] / parts.where(parts > 0) for c in ("collect_s", "eval_s"))
    df["collect_us_per_sample"] = 1e6 * df["collect_s"] / df["samples"].where(df["samples"] > 0)
    df["trainer"] = df["collector"].map(label)
    df["task"] = [task_of(r) for r in df.to_dict("records")]
    df["transfer_return"] = df.get("transfer_return", math.nan)  # (absent from rows without the check)
    return df


def _median(values) -> float:
    return float(np.median(np.asarray(values, dtype=float))) if len(values) else math.nan  # an infinite middle stays infinite


def table(df: pd.DataFrame) -> pd.DataFrame:
    """Per n and trainer (in the order run): runs, solved, the median time and samples to solve
    with their range over seeds, the median collection and screen shares and collection time per
    sample, the compile time (the first seed's; not counted)."""
    out = []
    if not len(df):
        return pd.DataFrame(out)
    for (links, collector), g in df.groupby(["links", "collector"], sort=False):
        first = g.loc[g["seed"].idxmin()]
        out.append({
            "links": int(links), "collector": collector, "trainer": label(collector), "runs": len(g),
            "solved": int(g["solved"].sum()), "budget_s": float(g["budget_s"].max()),
            "time_median": _median(g["time"]), "time_min": float(g["time"].min()), "time_max": float(g["time"].max()),
            "samples_median": _median(g["samples_to_solve"]), "samples_min": float(g["samples_to_solve"].min()),
            "samples_max": float(g["samples_to_solve"].max()), "collect_share": float(g["collect_share"].median()),
            "screen_share": float(g["screen_share"].median()),
            "collect_us_per_sample": float(g["collect_us_per_sample"].median()),
            "compile_s": float(first["compile_s"]), "eval_return": float(g["eval_return"].median()),
        })
    return pd.DataFrame(out)


def _a_median(runs: int) -> str:
    """The words before a time to solve: "a median " over several seeds, none for one seed's."""
    return "a median " if runs > 1 else ""


# A collector within this of the fastest's collection per sample is named beside it, too close to tell apart.
# A floor, not a test: one trainer's seeds spread it by 1% to 51% (interquartile range over the median) in
# the committed studies, so where a compared trainer has one seed the verdict also says it is a single draw.
TIED_COLLECTION = 0.10


@dataclass(frozen=True)
class Verdict:
    """Does the fastest collector train fastest, at one n?"""

    links: int
    fastest_collector: str  # least collection time per sample (median over its seeds)
    fastest_trainer: str | None  # smallest median time to solve (None: no trainer's median is finite)
    holds: bool | None  # None: nothing to compare (no trainer solved, or one trainer only)

    def sentence(self, T: pd.DataFrame) -> str:
        t = T[T["links"] == self.links]
        compared = t[t["collector"].isin([self.fastest_collector, self.fastest_trainer])]
        one = (" (A single draw: a trainer compared here has one seed, so no interval.)"
               if self.holds is not None and compared["runs"].min() < 2 else "")
        return self._sentence(t.set_index("collector")) + one

    def _sentence(self, t: pd.DataFrame) -> str:
        c = t.loc[self.fastest_collector]
        near = t[t["collect_us_per_sample"] <= (1 + TIED_COLLECTION) * c.collect_us_per_sample].drop(index=self.fastest_collector)
        fast = (f"The fastest collector, `{self.fastest_collector}` ({c.collect_us_per_sample:.3g} µs of collection per sample"
                + "".join(f"; `{k}` {u:.3g}" for k, u in near["collect_us_per_sample"].items())
                + (f", within {TIED_COLLECTION:.0%}: too close for these timings to tell apart)" if len(near) else ")"))
        if self.holds is None:
            return (fast + (", is the only trainer here." if len(t) < 2 else
                            ", cannot be compared: no trainer solved in at least half its seeds."))
        if self.holds:
            others = t.drop(index=self.fastest_collector)
            runner = others["time_median"].idxmin()
            next_ = (f"against {others.loc[runner, 'time_median']:.3g} s for the next, {label(runner)}"
                     if math.isfinite(others.loc[runner, "time_median"]) else
                     "while no other trainer solved in half its seeds")
            return fast + f", **also trains fastest**: {_a_median(c.runs)}{c.time_median:.3g} s to solve, {next_}."
        w = t.loc[self.fastest_trainer]
        return (fast + f", **does not train fastest**: {label(self.fastest_trainer)} solves in {_a_median(w.runs)}"
                f"{w.time_median:.3g} s (collection {w.collect_us_per_sample:.3g} µs per sample), against "
                f"{_fmt_time(c.time_median, c.budget_s)}.")


def verdict(T: pd.DataFrame, links: int, collectors=None) -> Verdict:
    """The rule at ``links`` among ``collectors`` (None: every trainer of that n)."""
    t = T[T["links"] == links]
    if collectors is not None:
        t = t[t["collector"].isin(list(collectors))]
    if not len(t):
        raise ValueError(f"no trainer at n = {links}")
    fastest_collector = t.loc[t["collect_us_per_sample"].idxmin(), "collector"]
    finite = t[np.isfinite(t["time_median"])]
    fastest_trainer = finite.loc[finite["time_median"].idxmin(), "collector"] if len(finite) else None
    holds = None if fastest_trainer is None or len(t) < 2 else fastest_trainer == fastest_collector
    return Verdict(int(links), fastest_collector, fastest_trainer, holds)


def verdicts(T: pd.DataFrame) -> list[Verdict]:
    """The rule at every n of the table, every trainer."""
    return [verdict(T, n) for n in sorted(T["links"].unique())] if len(T) else []


def _fmt_time(t: float, budget: float | None = None) -> str:
    if math.isfinite(t):
        return f"{t:.3g} s"
    return "no solve in half its seeds" + (f" within {budget:g} s" if budget else "")


def shown(T: pd.DataFrame) -> pd.DataFrame:
    """The page's table: one row per n and trainer, formatted."""
    d = T.copy()
    d["n"] = d["links"]
    d["solved"] = d["solved"].astype(str) + " / " + d["runs"].astype(str)
    d["time"] = [stats.fmt_range(r.time_median, r.time_min, r.time_max, budget=r.budget_s) for r in d.itertuples()]
    d["samples"] = [stats.fmt_range(r.samples_median, r.samples_min, r.samples_max, "{:,.0f}") for r in d.itertuples()]
    d["share"], d["screens"] = ([f"{s:.0%}" if math.isfinite(s) else "" for s in d[c]] for c in ("collect_share", "screen_share"))
    d["us"] = [f"{v:.3g}" for v in d["collect_us_per_sample"]]
    d["compile"] = [f"{v:.2g}" if v >= 0.01 else "< 0.01" for v in d["compile_s"]]
    return d


SHOWN_COLUMNS = {"n": "n", "trainer": "trainer", "solved": "solved", "time": "time to solve, s: median (range)",
                 "samples": "samples to solve: median (range)", "share": "collection share of the wall-clock",
                 "screens": "in-training screens' share",
                 "us": "collection, µs per sample", "compile": "compile, s (not counted)"}


def answer(T: pd.DataFrame) -> str:
    """The page's first paragraph: collection's share of each trainer's wall-clock, and whether the fastest
    collector gives the fastest training, at every n measured; then among the PyTorch PPO's collectors (their
    records': not the JAX PPO's, nor a peer's with its own learner), with Amdahl's bound."""
    if not len(T):
        return "No run was trained or saved for this preset on this machine."
    parts = []
    for v in verdicts(T):
        t = T[T["links"] == v.links]
        task = {1: "one pendulum on the cart", 2: "InvertedDoublePendulum-v5's model"}.get(v.links, f"{v.links} links")
        each = "; ".join(
            (f"{r.trainer} solves in {_a_median(r.runs)}{r.time_median:.3g} s"
             + (" (one seed)" if r.runs == 1 else "") if math.isfinite(r.time_median) else
             f"{r.trainer} does not solve in half its seeds within {r.budget_s:g} s")
            + ("" if r.solved == r.runs else f" (no seed of {r.runs} solved)" if r.solved == 0 else
               f" ({r.solved} of {r.runs} seeds solved)")
            + (f", collection {r.collect_share:.0%} of its wall-clock" if math.isfinite(r.collect_share) else
               ", its collection not timed apart") for r in t.itertuples())
        parts.append(f"**At n = {v.links}** ({task}): {each}. " + v.sentence(T))
        torch_side = [c for c in t["collector"] if c not in CHAIN_PEERS and collector_spec(c).trainer == "torch-ppo"]
        if "jax" in set(t["collector"]) and len(torch_side) >= 2:
            said = verdict(T, v.links, torch_side).sentence(t[t["collector"].isin(torch_side)])
            parts.append("Among the collectors feeding the same PyTorch PPO, the" + said.removeprefix("The"))
        parts.append(_amdahl(t[t["collector"].isin(torch_side)]))
    return " ".join(p for p in parts if p)


def _amdahl(t: pd.DataFrame) -> str:
    """Collection's bound on what a faster collector wins at equal samples, beside what the fastest of the
    PyTorch-PPO collectors ``t`` won over the slowest (median time to solve) and, beyond it, the samples each needed."""
    side = t[np.isfinite(t["time_median"])]
    if len(side) < 2:
        return ""
    slow, fast = side.loc[side["time_median"].idxmax()], side.loc[side["time_median"].idxmin()]
    bound = 1 / (1 - slow.collect_share) if slow.collect_share < 1 else math.inf
    won, fewer = slow.time_median / fast.time_median, slow.samples_median / fast.samples_median
    samples = f"median {fast.samples_median:,.0f} samples to solve against {slow.samples_median:,.0f}"
    speed = "more than its collection took less time per sample"
    excess = stats.amdahl_excess(won, bound, fewer, won / fewer)
    if excess is None:
        beyond = ""
    elif excess == "samples":
        beyond = f", beyond the bound: it also solved in {fewer:.3g}× fewer samples ({samples}), which collection speed does not shorten"
    elif fewer <= 1:
        beyond = f", beyond the bound at no fewer samples ({samples}): {speed}"
    else:
        beyond = (f", beyond the bound: it solved in {fewer:.3g}× fewer samples ({samples}) and ran {won / fewer:.3g}× "
                  f"as fast per sample, beyond the bound as well: {speed}")
    return (f"An infinitely fast collector can cut {slow.trainer}'s time to solve at equal samples at most {bound:.3g}× "
            f"(collection is {slow.collect_share:.0%} of it); `{fast.collector}` cuts it {won:.3g}× "
            f"(median {fast.time_median:.3g} s against {slow.time_median:.3g} s){beyond}.")


def curves(df: pd.DataFrame) -> pd.DataFrame:
    """Learning curves, long form: one row per in-training screen of every run (wall-clock, samples,
    the screen's deterministic return)."""
    rows = []
    for r in df.itertuples():
        for wall, samples, updates, screen, train_mean in r.curve:
            rows.append({"links": r.links, "collector": r.collector, "trainer": r.trainer, "seed": r.seed,
                         "wall_s": wall, "samples": samples, "screen_return": screen, "train_return": train_mean})
    return pd.DataFrame(rows)


# ---- the full study: the paper preset's runs, whatever preset builds the page ---------------------

def study(P: RobotParams) -> tuple[pd.DataFrame, RobotParams]:
    """The ``paper`` preset's runs saved for this machine (never trained by another preset: hours on
    2 cores) and that plan; none where they are only ``P``'s own runs (the default's are seed 0's)."""
    paper = P if P.preset == "paper" else RobotParams.resolve("robot", preset="paper", data_dir=P.data_dir)
    saved = {results.key_of(r): r for r in results.load(P.data_dir)}
    keys = [k for k in map(results.run_key, paper.runs()) if k in saved]
    return frame([] if P.preset != "paper" and set(keys) <= set(map(results.run_key, P.runs()))
                 else [saved[k] for k in keys]), paper


def _times(df: pd.DataFrame, links: int, collector: str) -> np.ndarray:
    """The censored times to solve of ``collector``'s runs at n = ``links``."""
    return df[(df["links"] == links) & (df["collector"] == collector)]["time"].to_numpy()


def study_table(df: pd.DataFrame, plan: RobotParams, seed: int = 0) -> pd.DataFrame:
    """Per n and trainer (the plan's order): seeds planned and saved, solved, the IQM time and
    samples to solve with their 95% bootstrap intervals (rliable's IQM; unsolved runs censored),
    the median collection share, the median transfer return (n = 2), the task."""
    out = []
    for links in plan.links:
        for c in plan.collectors:
            g = df[(df["links"] == links) & (df["collector"] == c)] if len(df) else df
            if not len(g):
                continue
            t, t_lo, t_hi = stats.iqm_ci(g["time"].to_numpy(), seed)
            n, n_lo, n_hi = stats.iqm_ci(g["samples_to_solve"].to_numpy(), seed)
            out.append({"links": int(links), "collector": c, "trainer": label(c), "task": g["task"].iloc[0],
                        "planned": plan.seed_count(c), "runs": len(g), "solved": int(g["solved"].sum()),
                        "time_iqm": t, "time_lo": t_lo, "time_hi": t_hi, "samples_iqm": n, "samples_lo": n_lo,
                        "samples_hi": n_hi, "collect_share": float(g["collect_share"].median()),
                        "collect_us_per_sample": float(g["collect_us_per_sample"].median()),
                        "transfer_return": float(g["transfer_return"].median()), "budget_s": float(g["budget_s"].max()),
                        "trained": trained_span(g)})
    return pd.DataFrame(out)


def trained_span(g: pd.DataFrame) -> str:
    """When the runs of ``g`` were saved (each as it ended), first to last, UTC ("2026-11-28 10:29–11:20";
    both dates where they differ), from their ``run_id`` (``store.run_time``); "" where rows lack one."""
    if "run_id" not in g or not (saved := sorted(run_time(str(r))[:16].replace("T", " ") for r in g["run_id"].dropna())):
        return ""
    first, last = saved[0], saved[-1]
    return first if first == last else f"{first}–{last[11:] if last[:10] == first[:10] else last}"


def study_missing(df: pd.DataFrame, plan: RobotParams) -> str:
    """The planned trainers with no saved run at an n, as "brax (n = 1, 2); ..." ("" if none)."""
    have = set(zip(df["collector"], df["links"])) if len(df) else set()
    missing: dict = {}
    for run in plan.runs():
        if (run.collector, run.settings.links) not in have:
            missing.setdefault(run.collector, set()).add(run.settings.links)
    return "; ".join(f"`{c}` (n = {', '.join(map(str, sorted(n)))})" for c, n in missing.items())


def study_shown(S: pd.DataFrame) -> pd.DataFrame:
    d = S.copy()
    d["n"] = d["links"]
    d["seeds"] = [f"{r.solved} / {r.runs}" + ("" if r.runs == r.planned else f" (of {r.planned} planned)") for r in d.itertuples()]
    d["time"] = [stats.fmt_iqm(r.time_iqm, r.time_lo, r.time_hi) for r in d.itertuples()]
    d["samples"] = [stats.fmt_iqm(r.samples_iqm, r.samples_lo, r.samples_hi, "{:,.0f}") for r in d.itertuples()]
    d["share"] = [f"{v:.0%}" if math.isfinite(v) else "" for v in d["collect_share"]]
    d["transfer"] = [f"{v:,.0f}" if math.isfinite(v) else "" for v in d["transfer_return"]]
    return d


STUDY_COLUMNS = {"n": "n", "trainer": "trainer", "task": "trained and judged on", "seeds": "solved / seeds",
                 "time": "time to solve, s: IQM (95% CI)", "samples": "samples to solve: IQM (95% CI)",
                 "share": "collection share", "transfer": "transfer return (n = 2)", "trained": "trained (UTC)"}


def study_comparisons(df: pd.DataFrame, S: pd.DataFrame, seed: int = 0) -> list[str]:
    """Per n: the trainer with the smallest IQM time against every other, by ``stats.compare``
    (faster only where the 95% interval of the IQM ratio excludes 1)."""
    out = []
    for links, s in S.groupby("links", sort=False):
        finite = s[np.isfinite(s["time_iqm"])]
        if not len(finite) or len(s) < 2:
            continue
        best = finite.loc[finite["time_iqm"].idxmin(), "collector"]
        x = _times(df, links, best)
        for other in (c for c in s["collector"] if c != best):
            out.append(f"n = {links}: " + stats.verdict(stats.compare(x, _times(df, links, other), seed), best, other,
                                                        "solves faster"))
    return out


def curve_bands(df: pd.DataFrame, x: str = "samples", points: int = 24, seed: int = 0) -> pd.DataFrame:
    """Learning curves with intervals: on a log grid of ``x`` (``samples`` or ``wall_s``), per n
    and trainer, the IQM over its runs of each run's last screen return at or before that x (a run
    that stopped holds its last screen), with the 95% bootstrap interval; a grid point counts only
    runs that had started screening by then."""
    C = curves(df)
    if not len(C):
        return C
    grid = np.geomspace(C[x][C[x] > 0].min(), C[x].max(), points)
    rows = []
    for (links, trainer), g in C.groupby(["links", "trainer"], sort=False):
        runs = [r.sort_values(x) for _, r in g.groupby("seed")]
        for v in grid:
            vals = [float(r[r[x] <= v]["screen_return"].iloc[-1]) for r in runs if (r[x] <= v).any()]
            if len(vals) < 2:
                continue
            m, a, b = stats.iqm_ci(np.asarray(vals), seed)
            rows.append({"links": links, "trainer": trainer, x: float(v), "iqm": m, "lo": a, "hi": b, "runs": len(vals)})
    return pd.DataFrame(rows)


SB3_PEERS = ("sb3", "sb3-defaults")  # the peers whose policies take the transfer check
ANSWER_PEERS = (*SB3_PEERS, "brax")  # the peers the answer sets against the fastest trainer


def _stopping_budget(unsolved: pd.DataFrame) -> str:
    """Which budget ended the unsolved runs, from their own columns (a peer ending on its own, as SB3 at
    the zoo's n_timesteps, was once labelled ``max_seconds``): the wall budget, else the samples."""
    if not len(unsolved):
        return "their budget"
    if (unsolved["wall_s"] >= 0.99 * unsolved["budget_s"]).all():
        return f"the {unsolved['budget_s'].max():g} s budget"
    if (unsolved["wall_s"] < 0.99 * unsolved["budget_s"]).all():
        lo, hi = unsolved["samples"].min(), unsolved["samples"].max()
        reached = f"{lo:,.0f}" if lo == hi else f"{lo:,.0f}–{hi:,.0f}"
        return f"their sample budget, {reached} samples in under {unsolved['budget_s'].max():g} s"
    return "their budget (samples or seconds)"


def _peer_clause(df: pd.DataFrame, links: int, b, p, seed: int) -> str:
    """A peer (Stable-Baselines3, Brax) against the fastest trainer ``b``: the IQM ratio with its
    interval where the peer's IQM is finite, else its solved count and its solved runs' times
    against b's IQM."""

    head = f"{p.trainer} on {p.task} solves {p.solved} of {p.runs} seed{'' if p.runs == 1 else 's'}"
    times = _times(df, links, p.collector)
    if math.isfinite(p.time_iqm):
        x = _times(df, links, b.collector)
        c = stats.compare(x, times, seed)
        return (head + f" in an IQM {stats.fmt_iqm(p.time_iqm, p.time_lo, p.time_hi, unit=' s')}: {stats.fmt_x(c['ratio'])} "
                f"{b.trainer}'s (95% CI {stats.fmt_x(c['ratio_lo'])}–{stats.fmt_x(c['ratio_hi'])})")
    solved = np.sort(times[np.isfinite(times)])
    if not len(solved):
        return head + " (none within its budget): its IQM is censored"
    budget = _stopping_budget(df[(df["links"] == links) & (df["collector"] == p.collector) & ~df["solved"]])
    return (head + f"; its IQM is censored (over a quarter unsolved: the rest stop at {budget}); the "
            f"solved ones took {solved[0]:.3g}–{solved[-1]:.3g} s, {solved[0] / b.time_iqm:.0f}× to "
            f"{solved[-1] / b.time_iqm:.0f}× {b.trainer}'s IQM")


def study_answer(df: pd.DataFrame, S: pd.DataFrame, seed: int = 0) -> str:
    """The full study's sentence per n: the trainer with the smallest IQM time to solve, its interval
    and collection share, the fastest collector's own time to solve, each peer measured at that n
    against it (``_peer_clause``: Stable-Baselines3's two settings, Brax), the transfer at n = 2."""
    parts = []
    for links, s in S.groupby("links", sort=False):
        finite = s[np.isfinite(s["time_iqm"])]
        if not len(finite):
            parts.append(f"At n = {links} no trainer of the full study solved in three quarters of its seeds.")
            continue
        b = finite.loc[finite["time_iqm"].idxmin()]
        fastest = s.loc[s["collect_us_per_sample"].idxmin()]
        text = (f"**Full study, n = {links}** ({b.runs} seeds of {b.trainer}, {b.solved} solved): it solves in an IQM "
                f"{stats.fmt_iqm(b.time_iqm, b.time_lo, b.time_hi, unit=' s')}, collection {b.collect_share:.0%} of its wall-clock")
        text += ("; it is also the fastest collector" if fastest.collector == b.collector else
                 f"; the fastest collector is `{fastest.collector}` ({fastest.collect_us_per_sample:.3g} µs per sample), "
                 + (f"which solves in an IQM {stats.fmt_iqm(fastest.time_iqm, fastest.time_lo, fastest.time_hi, unit=' s')}, collection "
                    f"{fastest.collect_share:.0%} of it" if math.isfinite(fastest.time_iqm) else "whose IQM is censored"))
        for peer in (s[s["collector"] == c] for c in ANSWER_PEERS):
            if len(peer) and peer.iloc[0].collector != b.collector:
                text += ". " + _peer_clause(df, links, b, peer.iloc[0], seed)
        moved = s[np.isfinite(s["transfer_return"])]
        if len(moved) and b.collector in set(moved["collector"]):
            m = moved.set_index("collector")
            text += (f". Transfer (untimed, 100 episodes): {b.trainer}'s policies score a median "
                     f"{m.loc[b.collector, 'transfer_return']:,.0f} on gymnasium's own InvertedDoublePendulum-v5, "
                     "slider limit included")
            for c in (c for c in SB3_PEERS if c in m.index and c != b.collector):
                text += f"; {label(c)}'s score {m.loc[c, 'transfer_return']:,.0f} on the chain"
        parts.append(text + ".")
    return "\n\n".join(parts)
