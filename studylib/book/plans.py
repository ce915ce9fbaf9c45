"""What each chapter measures: its MeasurePoints (or profile points, or ceilings), measured into
this machine's data files through ``harness.sweep``, which reads what is saved and measures the
rest, so a rebuild on the same machine resumes and a complete one measures nothing.

    P = book.params("vectorization", preset=preset)
    df = book.vectorization_data(P)          # rows of <data_dir>/<machine>/fig4.json

Each frame's ``attrs["dropped"]`` lists the points above the preset's work cap (not measured),
``attrs["skipped"]`` the points that cannot run here, with the reason. With ``P.machine`` set to
another machine's folder, every plan reads that machine's snapshot and measures nothing.
``book.chapters`` lists each chapter's plans (what ``python -m studylib measure`` runs) and the data
files they write.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import sys
import tempfile

import pandas as pd

from .. import costs
from ..errors import ConfigError
from ..harness.sweep import Keying, keyed_by, run, sweep
from ..implspec import IMPLEMENTATIONS, book_order, spec
from ..settings import PEERS, EnvSettings, MeasurePoint
from .presets import BeyondParams, ChapterParams
# F.2 is the paper's claim about XLA against PyTorch (section 4.2, Fig 4-6): these two by name.
F2_IMPLS = ("torch", "jax")
PROFILE_KEYS = ("impl", "num_envs", "steps", "state_factor", "compute_factor", "policy")


def _quiet(msg: str) -> None:
    """The chapters list skipped points themselves; the sweep's log lines would land in the book."""


def capped_points(P: ChapterParams, impls, policy, state_factors=(1,), compute_factors=(1,), *, sim=None,
                  params=(None,)):
    """(points, dropped): the grid's MeasurePoints whose work per call N*K*S*C is within the
    implementation's cap, and the (impl, N, K, S, C) of those that are not (once, whatever the
    ``params``). ``sim``/``params``: another simulator and each of its parameter sets (the chain's
    links), its constants where None."""
    points, dropped = [], []
    for impl in impls:
        for sim_params in params:
            for s in state_factors:
                for c in compute_factors:
                    for k in P.steps:
                        for n in P.num_envs:
                            if n * k * s * c > P.cap_for(impl):
                                if (impl, n, k, s, c) not in dropped:
                                    dropped.append((impl, n, k, s, c))
                                continue
                            points.append(MeasurePoint.of(impl, n, k, state_factor=s, compute_factor=c, policy=policy,
                                                          repeats=P.repeats, min_seconds=P.min_seconds,
                                                          sim=sim or "cartpole", params=sim_params))
    return points, dropped


def _measured(name: str, P: ChapterParams, points, dropped=()) -> pd.DataFrame:
    df = sweep(name, points, data_dir=P.data_dir, progress=False, log=_quiet, machine=P.machine)
    df.attrs["dropped"] = list(dropped)
    return df


def _chapter_sweep(name: str, P: ChapterParams, impls, policy, **knobs) -> pd.DataFrame:
    return _measured(name, P, *capped_points(P, impls, policy, **knobs))


def vectorization_data(P: ChapterParams) -> pd.DataFrame:
    """Fig 4: samples/s vs N, data collection with MLP inference, every implementation."""
    return _chapter_sweep("fig4", P, P.impls, "mlp")


def overheads_data(P: ChapterParams) -> pd.DataFrame:
    """Fig 4 (K dimension) for F.2: jax and torch with inference, K = 1 ... 10^3."""
    return _chapter_sweep("fig4_k", P, [i for i in P.impls if i in F2_IMPLS], "mlp")


def fusion_data(P: ChapterParams) -> pd.DataFrame:
    """Fig 8: simulation only (policy "none"), fused (cpp/cuda) vs jax vs torch, K = 1 ... 10^3: the
    chapter's implementations that step arrays (every family but gymnasium's Python objects)."""
    return _chapter_sweep("fig8", P, [i for i in P.impls if spec(i).family != "python"], "none")


def fusion_impl(P: ChapterParams) -> str:
    """The implementation that shows the paper's kernel fusion (F.3): of the chapter's paper
    implementations whose simulation-only call runs K steps in one kernel, the GPU one where it
    runs here (cuda), else the CPU build of the same kernel (cpp)."""
    fused = [i for i in P.impls if spec(i).in_paper and "none" in spec(i).fused_policies]
    if not fused:
        raise ConfigError(f"no implementation among {', '.join(P.impls)} fuses K steps into one kernel")
    return max(fused, key=lambda i: "cuda" in spec(i).devices)


ASSUMED_LLC_BYTES = 32 * 2**20  # where neither sysfs nor the snapshot's provenance gives the cache size


def last_level_cache(P: ChapterParams) -> tuple[int, bool]:
    """(bytes, measured) of the last-level cache of the machine whose data the chapter shows: this
    machine's identity (sysfs) here, the snapshot's provenance for another machine; part of the
    machine's key, so one folder's plans ask for the same points; ``ASSUMED_LLC_BYTES`` (measured
    False) where neither says."""
    from .presets import machine_facts

    size = machine_facts(P).get("llc_bytes")
    return (int(size), True) if size else (ASSUMED_LLC_BYTES, False)


def memory_num_envs(state_factor: int, llc_bytes: int, multiple: float, max_bytes: int | None = None) -> int:
    """The smallest power-of-2 N whose unfused working set at ``state_factor`` (the state and the
    counters, ``costs.unfused_bytes / 2`` per environment) is at least ``multiple`` x the cache;
    halved while that working set exceeds ``max_bytes`` (where given)."""
    per_env = costs.unfused_bytes(state_factor) // 2
    n = 2 ** max(0, math.ceil(math.log2(multiple * llc_bytes / per_env)))
    while max_bytes and n > 1 and n * per_env > max_bytes:
        n //= 2
    return n


def memory_regime(P: ChapterParams) -> dict:
    """The complexity chapter's memory-bound configurations: {"num_envs", "state_factor" (all S),
    "steps", "llc_bytes", "llc_measured", "working_set" {S: bytes}}."""
    llc, measured = last_level_cache(P)
    n = memory_num_envs(max(P.state_factor), llc, P.memory_cache_multiple, P.memory_max_bytes)
    return {"num_envs": n, "state_factor": P.state_factor, "steps": P.memory_steps, "llc_bytes": llc,
            "llc_measured": measured, "working_set": {s: n * costs.unfused_bytes(s) // 2 for s in P.state_factor}}


def complexity_data(P: ChapterParams) -> pd.DataFrame:
    """Fig 9: the fused implementation over N x K x S x C, simulation only, plus two regimes exempt
    from the work cap, one timed repeat each: the memory regime (``memory_regime``: one N whose
    working set leaves the cache, each S, C = 1, K in memory_steps) and the compute regime (the
    smallest N and S, each C, K = 1 and the largest K: F.4's "vanishes" at the paper's C).
    ``df.attrs["memory"]``: the ``memory_regime`` dict."""
    impl = fusion_impl(P)
    points, dropped = capped_points(P, [impl], "none", state_factors=P.state_factor, compute_factors=P.compute_factor)
    regime = memory_regime(P)
    in_grid = {(p.env.num_envs, p.steps, p.env.state_factor, p.env.compute_factor) for p in points}
    extra = [(regime["num_envs"], k, s, 1) for s in P.state_factor for k in P.memory_steps]
    extra += [(min(P.num_envs), k, min(P.state_factor), c) for c in P.compute_factor for k in (1, max(P.steps))]
    points += [MeasurePoint.of(impl, n, k, state_factor=s, compute_factor=c, policy="none", repeats=1,
                               min_seconds=P.min_seconds)
               for n, k, s, c in dict.fromkeys(extra) if (n, k, s, c) not in in_grid]
    df = _measured("fig9", P, points, dropped)
    df.attrs["memory"] = regime
    return df


def cartpole_fig2_data(P: ChapterParams) -> pd.DataFrame:
    """Fig 2's cartpole line: jax (XLA), simulation only, K steps per call (no work cap)."""
    points, _ = capped_points(dataclasses.replace(P, cap={}), ["jax"], "none")
    return _measured("fig2_cartpole", P, points)


def beyond_impls(P: ChapterParams) -> list[str]:
    """The "Beyond the paper" chapter's implementations: those beyond the paper, and the paper's
    of the chapter's list, that step arrays on the CPU (not gymnasium's objects, not GPU-only)."""
    return book_order(i for i in IMPLEMENTATIONS if spec(i).family != "python" and "cpu" in spec(i).devices
                      and (not spec(i).in_paper or i in P.impls))


def beyond_data(P: ChapterParams) -> pd.DataFrame:
    """Beyond the paper: torch-compile and fused against torch and jax with the MLP policy, and the
    peers against ours simulation only. One sweep file, ``beyond.json``."""
    ours = beyond_impls(P)
    points, dropped = capped_points(P, ours, "mlp")
    peer_p = dataclasses.replace(P, num_envs=P.peer_num_envs, steps=(P.peer_steps,))
    one_call = [i for i in ours if spec(i).family == "xla" or "none" in spec(i).fused_policies]
    for impl in (*one_call, *PEERS):
        p, d = capped_points(peer_p, [impl], "none")
        points += p
        dropped += d
    return _measured("beyond", P, points, dropped)


def roofline_data(P: ChapterParams) -> dict:
    """This machine's ceilings (``harness.model.roofline``: memory bandwidth, peak FMA throughput, and
    in the Beyond chapter the GEMM reference at its N), measured once per machine into
    ``beyond_roofline.json``; later builds read the file."""
    from ..harness.model import roofline

    items = roofline.ceiling_items(set(P.num_envs) | set(P.peer_num_envs) if isinstance(P, BeyondParams) else ())
    keying = Keying(dict, keyed_by(*roofline.CEILING_KEYS), lambda i: f"ceiling {i}", "ceiling")
    result = run("beyond_roofline", items, roofline.measure_ceiling, keying, data_dir=P.data_dir, progress=False,
                 log=_quiet, machine=P.machine)
    return roofline.from_rows(result.rows)


@contextlib.contextmanager
def _quiet_native_stderr():
    """Silence file-descriptor-level stderr (the PyTorch profiler's C++ Kineto log lines) around a
    block, so they do not land in the book as a cell's stderr output."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _profile_row(point: MeasurePoint) -> dict:
    from ..harness import profiler
    from ..harness.data.provenance import machine_key, now_utc

    with _quiet_native_stderr():
        row = profiler.profile(point)
    return {**row, "machine": machine_key(), "date": now_utc()}


def profile_data(P: ChapterParams) -> pd.DataFrame:
    """Fig 5/6: ``harness.profiler`` for jax and torch at one N over K, saved in ``fig56_profile.json``."""
    cap = P.profile_cap if P.profile_cap is not None else P.cap
    n = P.profile_num_envs
    points = [MeasurePoint(EnvSettings(impl, n), k, "mlp") for impl in P.impls if impl in F2_IMPLS
              for k in P.profile_steps if n * k <= P.cap_for(impl, cap)]
    keying = Keying(lambda p: {k: p.flat()[k] for k in PROFILE_KEYS}, keyed_by(*PROFILE_KEYS), MeasurePoint.describe,
                    "profile")
    result = run("fig56_profile", points, _profile_row, keying, data_dir=P.data_dir, progress=False, log=_quiet,
                 machine=P.machine)
    df = pd.DataFrame(result.rows)
    return df.sort_values(["impl", "steps"]).reset_index(drop=True) if len(df) else df


ATARI_KEYING = Keying(lambda p: p.columns(), keyed_by("game", "impl", "num_envs", "policy"), lambda p: p.describe(),
                      "atari")
BREAKDOWN_KEYING = Keying(lambda p: p.columns(), keyed_by("game", "loop", "num_envs"), lambda p: p.describe(),
                          "atari-breakdown")


def atari_points(P: ChapterParams) -> list:
    """The Atari chapter's points, every one checked (game id, ROM, envpool task) before anything is
    measured: per game, the single gymnasium environment (N = 1), gymnasium's AsyncVectorEnv at
    ``async_num_envs``, ale-py's and envpool's threaded vector environments at ``num_envs``; each
    without and with the Nature CNN (the policy varies fastest, so both share one environment)."""
    from ..harness.atari import frames as atari

    def sizes(engine):  # one environment, a process per environment (fewer), or the threaded pool's N
        return (1,) if not engine.vectorized else P.async_num_envs if engine.process_per_env else P.num_envs

    return [atari.AtariPoint(game, impl, n, policy, repeats=P.repeats, min_seconds=P.min_seconds)
            for game in P.games for impl in atari.IMPLS for n in sizes(atari.ENGINES[impl]) for policy in atari.POLICIES]


def atari_sweep(name: str, points, data_dir, machine=None, measure_one=None, keying=ATARI_KEYING) -> pd.DataFrame:
    """Measure (or read) Atari points into ``<data_dir>/<machine>/<name>.json``; the open
    environment kept between points is closed at the end."""
    from ..harness.atari import frames as atari

    try:
        result = run(name, points, measure_one or atari.measure, keying, data_dir=data_dir, progress=False,
                     log=_quiet, machine=machine)
    finally:
        atari.close_open_env()
    df = pd.DataFrame(result.rows)
    df.attrs.update(skipped=result.skipped, path=result.path, measured=result.measured, dropped=[],
                    reused=result.reused, stale=result.stale)
    return df


def atari_data(P: ChapterParams) -> pd.DataFrame:
    """Atari frames per second against N (``atari_points``), saved in ``atari.json``."""
    return atari_sweep("atari", atari_points(P), P.data_dir, P.machine)


def atari_breakdown_data(P: ChapterParams) -> pd.DataFrame:
    """Where a CNN-driven Atari collection step spends its time (``atari.measure_breakdown``): the
    Python loop over single emulators and ale-py's vector environment, per game, at
    ``breakdown_num_envs``; saved in ``atari_breakdown.json``."""
    from ..harness.atari import frames as atari

    points = [atari.BreakdownPoint(game, loop, n, min_seconds=P.breakdown_seconds)
              for game in P.games for loop in atari.LOOPS for n in P.breakdown_num_envs]
    return atari_sweep("atari_breakdown", points, P.data_dir, P.machine, atari.measure_breakdown, BREAKDOWN_KEYING)
