"""What the Jupyter Book's chapters share: the paper's values, presets, measurement plans, charts.

Each chapter (``book/*.md``) has a ``parameters`` cell (papermill overrides it) and then calls

    P = book.params("vectorization", preset=preset, num_envs=num_envs, ...)
    df = book.vectorization_data(P)          # bench.sweep into <data_dir>/<machine>/fig4.json

so a rerun on the same machine resumes from the saved points, and the introduction's findings
table can compute the same numbers from the same files (``book.findings``).

Presets (``PRESETS``), chosen with ``preset=`` or the environment variable ``STUDYLIB_PRESET``:
  tiny     seconds per chapter; what the tests build (no conclusion is meaningful at this size)
  default  what ``jupyter-book build book/`` runs: a cold build in a few minutes on 2 CPU cores
  paper    the paper's ranges (N up to 2^26, K up to 10^3, S and C up to 2^10); hours on a CPU,
           and memory-limited points are skipped with the reason
The data folder is ``data_dir=``, else ``$STUDYLIB_DATA_DIR``, else ``<repo>/data``.
"""

from __future__ import annotations

import ast
import json
import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

try:  # tqdm.auto warns in kernels without ipywidgets; the book shows no progress bars anyway
    import warnings as _warnings

    from tqdm import TqdmWarning as _TqdmWarning

    _warnings.filterwarnings("ignore", category=_TqdmWarning)
except ImportError:  # pragma: no cover
    pass


def _configure_altair() -> None:
    """SVG charts (crisp, searchable, checked by the tests) through the default HTML renderer,
    which finds vega already loaded by the book's _static/vega-offline.js (no CDN)."""
    try:
        import altair as alt
    except ImportError:  # pragma: no cover
        return
    alt.renderers.set_embed_options(renderer="svg", actions={"export": True, "source": False, "compiled": False,
                                                             "editor": False})


_configure_altair()

# ---- the paper's reported values -----------------------------------------------------------------


@dataclass(frozen=True)
class PaperValue:
    """One number as Gleeson et al. (2022) report it (GPU: NVIDIA 2080Ti, CPU: AMD EPYC 7371)."""

    value: float
    unit: str  # "x" (speedup), "N" (environments), "%" ...
    where: str  # section / figure of the paper
    claim: str  # what the paper says, in a few words


PAPER = {
    # F.1 / Fig 4 (section 3.3)
    "f1_gpu_over_gym": PaperValue(1024, "x", "§3.3, Fig 4, F.1", "PyTorch/XLA on a GPU over gym, up to"),
    "f1_cpp_over_gym": PaperValue(4, "x", "§3.3, Fig 4", "multi-core C++ over single-core gym, at most"),
    "plateau_gym": PaperValue(2**16, "N", "§3.3, Fig 4", "gym throughput plateaus at"),
    "plateau_cpp": PaperValue(2**18, "N", "§3.3, Fig 4", "C++ throughput plateaus at"),
    "plateau_torch": PaperValue(2**26, "N", "§3.3, Fig 4", "PyTorch (GPU) throughput plateaus at"),
    "plateau_jax": PaperValue(2**26, "N", "§3.3, Fig 4", "XLA (GPU) throughput plateaus at"),
    # F.2 / Fig 4, 5, 6 (sections 3.3, 3.4)
    "f2_xla_over_torch": PaperValue(13.391258389034308, "x", "§3.3, Fig 4, F.2",
                                    "XLA over PyTorch at N ≤ 2^13 (K = 10^3)"),
    "f2_xla_k1_to_k1000": PaperValue(53.757822636636035, "x", "§3.3, Fig 4",
                                     "XLA from K = 1 to 10^3 (with inference), mean over N ≤ 2^13"),
    "f2_cpu_share_k1": PaperValue(87, "%", "§3.4, Fig 5", "CPU-bound share of XLA time at K = 1 (N = 2^16)"),
    "f2_python_share_k1": PaperValue(57, "%", "§3.4, Fig 5", "Python share of XLA time at K = 1"),
    "f2_backend_share_k1": PaperValue(30, "%", "§3.4, Fig 5", "backend C++ share of XLA time at K = 1"),
    # F.3 / Fig 8 (section 4.1)
    "f3_fusion": PaperValue(11.305685226074862, "x", "§4.1, Fig 8, F.3", "CUDA fused K = 10^3 over K = 1"),
    "f3_xla_k1_to_k1000": PaperValue(83.34774829937089, "x", "§4.1, Fig 8",
                                     "XLA from K = 1 to 10^3 (simulation only)"),
    "f3_fused_over_xla": PaperValue(112.76804635714576, "x", "§4.1, Fig 8", "CUDA over XLA at K = 10^3"),
    # F.4 / Fig 9 (section 4.2)
    "f4_speedup_s_low": PaperValue(2**4, "x", "§4.2, Fig 9", "fusion speedup at K = 10^3, smallest S"),
    "f4_speedup_s_high": PaperValue(2**10, "x", "§4.2, Fig 9", "fusion speedup at K = 10^3, S ≥ 2^11"),
    "f4_speedup_k10_max": PaperValue(2**3, "x", "§4.2, Fig 9", "fusion speedup at K = 10, at most"),
    "f4_speedup_c_max": PaperValue(1, "x", "§4.2, Fig 9", "fusion speedup at C = 2^10, S = 1 (no gain)"),
    # Fig 2 (section 2.2)
    "fig2_cartpole_scale": PaperValue(2**19, "N", "§2.2, Fig 2", "cartpole (XLA, GPU) scales up to"),
    "fig2_brax_scale": PaperValue(2**12, "N", "§2.2, Fig 2", "Brax environments scale up to"),
}

IMPL_LABELS = {
    "gym": "gym (gymnasium objects, 1 core)",
    "cpp": "cpp (C++ multi-core; K steps per call)",
    "torch": "torch (PyTorch eager)",
    "jax": "jax (XLA, K steps per call)",
    "cuda": "cuda (hand-written kernel, fused)",
}
IMPL_ORDER = ["gym", "cpp", "torch", "jax", "cuda"]

# ---- presets ----------------------------------------------------------------------------------------


def _pow2(lo, hi, step=1):
    return [2**k for k in range(lo, hi + 1, step)]


# Per chapter: the grid axes, the timing budget, and a cap on the work of one call per
# implementation (samples = N*K*S*C per rollout call): points above the cap are not measured,
# so that one slow point (e.g. eager PyTorch at N = 2^16, K = 10^3) cannot dominate the build.
PRESETS: dict[str, dict[str, dict]] = {
    "tiny": {
        "_timing": {"repeats": 1, "min_seconds": 0.01},
        "cartpole": {"num_envs": [4, 64], "steps": [4], "brax_envs": ["inverted_pendulum"], "brax_num_envs": [4],
                     "brax_steps": 2, "conformance_envs": 32},
        "vectorization": {"num_envs": [1, 8], "steps": [1, 4], "cap": {"gym": 2**5, "*": 2**10}},
        "overheads": {"num_envs": [4, 16], "steps": [1, 4], "cap": {"*": 2**10}, "profile_num_envs": 16,
                      "profile_steps": [1, 4]},
        "fusion": {"num_envs": [4, 64], "steps": [1, 4], "cap": {"*": 2**12}},
        "complexity": {"num_envs": [4, 64], "steps": [1, 4], "state_factor": [1, 4], "compute_factor": [1, 4],
                       "cap": {"*": 2**14}},
        "beyond": {"num_envs": [16, 64], "steps": [1, 4], "peer_num_envs": [16], "peer_steps": 4,
                   "cap": {"*": 2**12}, "rollout_steps": 8},
    },
    "default": {
        "_timing": {"repeats": 3, "min_seconds": 0.1},
        "cartpole": {"num_envs": _pow2(4, 16, 3), "steps": [100], "brax_envs": ["ant", "humanoid"],
                     "brax_num_envs": [2**4, 2**10], "brax_steps": 10, "conformance_envs": 1024},
        "vectorization": {"num_envs": _pow2(0, 15, 3), "steps": [1, 100],
                          "cap": {"gym": 2**12, "*": 2**21}},
        "overheads": {"num_envs": _pow2(4, 12, 4), "steps": [1, 10, 100, 1000],
                      "cap": {"torch": 2**20, "*": 2**22}, "profile_num_envs": 2**10,
                      "profile_steps": [1, 10, 100, 1000], "profile_cap": {"torch": 2**17, "*": 2**20}},
        "fusion": {"num_envs": _pow2(6, 18, 4), "steps": [1, 10, 100, 1000],
                   "cap": {"cpp": 2**26, "cuda": 2**30, "jax": 2**24, "torch": 2**20}},
        "complexity": {"num_envs": [2**8, 2**14], "steps": [1, 10, 100, 1000], "state_factor": [1, 8, 64],
                       "compute_factor": [1, 8, 64], "cap": {"*": 2**26}},
        "beyond": {"num_envs": [2**10, 2**13, 2**16], "steps": [1, 100], "peer_num_envs": [2**12, 2**16],
                   "peer_steps": 100, "cap": {"torch": 2**20, "torch-compile": 2**20, "gym": 2**12, "envpool": 2**19,
                                             "*": 2**24}, "rollout_steps": 256},
    },
    "paper": {
        "_timing": {"repeats": 5, "min_seconds": 0.5},
        "cartpole": {"num_envs": _pow2(4, 22, 2), "steps": [1000],
                     "brax_envs": ["ant", "humanoid", "halfcheetah", "hopper", "walker2d", "inverted_pendulum"],
                     "brax_num_envs": _pow2(4, 14, 2), "brax_steps": 100, "conformance_envs": 65536},
        "vectorization": {"num_envs": _pow2(0, 26, 2), "steps": [1, 1000], "cap": {"gym": 2**22, "*": 2**34}},
        "overheads": {"num_envs": _pow2(0, 20, 2), "steps": [1, 10, 100, 1000], "cap": {"*": 2**34},
                      "profile_num_envs": 2**16, "profile_steps": [1, 10, 100, 1000], "profile_cap": {"*": 2**30}},
        "fusion": {"num_envs": _pow2(0, 26, 2), "steps": [1, 10, 100, 1000], "cap": {"*": 2**36}},
        "complexity": {"num_envs": _pow2(10, 20, 5), "steps": [1, 10, 100, 1000],
                       "state_factor": _pow2(0, 12, 2), "compute_factor": _pow2(0, 10, 2), "cap": {"*": 2**38}},
        "beyond": {"num_envs": _pow2(10, 20, 2), "steps": [1, 1000], "peer_num_envs": _pow2(10, 20, 2),
                   "peer_steps": 1000, "cap": {"envpool": 2**26, "gym": 2**22, "*": 2**34}, "rollout_steps": 1000},
    },
}
PRESET_NAMES = tuple(PRESETS)
CHAPTERS = ("cartpole", "vectorization", "overheads", "fusion", "complexity")
SWEEP_NAMES = {"cartpole": "fig2_cartpole", "vectorization": "fig4", "overheads": "fig4_k",
               "fusion": "fig8", "complexity": "fig9", "beyond": "beyond"}
BEYOND_IMPLS = ("torch", "torch-compile", "jax", "fused", "cpp")  # the "Beyond the paper" chapter



@dataclass
class Params:
    """The resolved parameters of one chapter run (printed at the top of every chapter)."""

    chapter: str
    preset: str
    data_dir: Path
    impls: list  # implementations to measure (cuda only where a CUDA device works)
    num_envs: list  # N
    steps: list  # K
    repeats: int  # timed regions per point (median reported)
    min_seconds: float  # minimum length of one timed region
    cap: dict = field(default_factory=dict)  # impl -> max samples (N*K*S*C) per rollout call
    extra: dict = field(default_factory=dict)  # chapter-specific (state_factor, brax_envs, ...)

    def __getattr__(self, name):
        extra = self.__dict__.get("extra", {})
        if name in extra:
            return extra[name]
        raise AttributeError(name)

    def cap_for(self, impl):
        return self.cap.get(impl, self.cap.get("*", math.inf))

    def describe(self) -> str:
        parts = [f"preset **{self.preset}**", f"N = {fmt_list(self.num_envs)}", f"K = {fmt_list(self.steps)}",
                 f"implementations: {', '.join(self.impls)}", f"{self.repeats} timed repeats of ≥ {self.min_seconds:g} s"]
        for k, v in self.extra.items():
            if k in ("state_factor", "compute_factor"):
                parts.append(f"{'S' if k == 'state_factor' else 'C'} = {fmt_list(v)}")
        caps = ", ".join(f"{k if k != '*' else 'others'} ≤ {pow2_label(v)}" for k, v in self.cap.items()
                         if k == "*" or k in self.impls)
        if caps:
            parts.append(f"work cap per call (N·K·S·C): {caps}")
        return "; ".join(parts) + f". Data: `{display_path(self.data_dir)}`."


def _parse(value):
    """papermill ``-p`` passes lists as strings; accept "[1, 2]" and "1,2" too."""
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            value = [v.strip() for v in value.split(",") if v.strip()]
            value = [int(v) if v.isdigit() else v for v in value]
    if isinstance(value, (int, float, str)):
        value = [value]
    return list(value)


def repo_root() -> Path:
    """The folder holding ``_config.yml`` (searched upwards from the working directory)."""
    here = Path.cwd().resolve()
    for d in (here, *here.parents):
        if (d / "_config.yml").exists() and (d / "studylib").is_dir():
            return d
    return Path(__file__).resolve().parent.parent


def resolve_data_dir(data_dir=None) -> Path:
    if data_dir:
        return Path(data_dir).expanduser().resolve()
    env = os.environ.get("STUDYLIB_DATA_DIR")
    if env:
        return Path(env).expanduser().resolve()
    return repo_root() / "data"


def display_path(p: Path) -> str:
    try:
        return str(Path(p).resolve().relative_to(repo_root()))
    except ValueError:
        return str(p)


def resolve_preset(preset=None) -> str:
    preset = preset or os.environ.get("STUDYLIB_PRESET") or "default"
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; valid: {', '.join(PRESETS)}")
    return preset


def available_impls() -> list[str]:
    """All five, less ``cuda`` where no CUDA device works (then cpp stands in for fusion)."""
    return [i for i in IMPL_ORDER if i != "cuda" or cuda_ok()[0]]


def cuda_ok() -> tuple[bool, str]:
    try:
        from .devices import cuda_status

        return cuda_status()
    except Exception as e:  # pragma: no cover - import problems count as "no cuda"
        return False, f"cuda unavailable: {e}"


def params(chapter: str, *, preset=None, data_dir=None, impls=None, num_envs=None, steps=None,
           repeats=None, min_seconds=None, **extra) -> Params:
    """Resolve a chapter's parameters: explicit values > the preset's > defaults."""
    if chapter not in PRESETS["default"]:
        raise ValueError(f"unknown chapter {chapter!r}")
    name = resolve_preset(preset)
    base = dict(PRESETS[name][chapter])
    timing = PRESETS[name]["_timing"]
    cap = base.pop("cap", {})
    chosen_impls = available_impls()
    if impls is not None:
        wanted = _parse(impls)
        chosen_impls = [i for i in wanted if i in chosen_impls]
    ex = {k: v for k, v in base.items() if k not in ("num_envs", "steps")}
    for k, v in extra.items():
        if v is not None:
            ex[k] = _parse(v) if isinstance(ex.get(k), list) else v
    return Params(
        chapter=chapter, preset=name, data_dir=resolve_data_dir(data_dir), impls=chosen_impls,
        num_envs=sorted(int(n) for n in _parse(num_envs if num_envs is not None else base["num_envs"])),
        steps=sorted(int(k) for k in _parse(steps if steps is not None else base["steps"])),
        repeats=int(repeats or timing["repeats"]), min_seconds=float(min_seconds or timing["min_seconds"]),
        cap=cap, extra=ex,
    )


# ---- formatting ------------------------------------------------------------------------------------


def pow2_label(n) -> str:
    n = float(n)
    if n > 0 and math.isfinite(n):
        k = math.log2(n)
        if abs(k - round(k)) < 1e-9:
            return f"2^{int(round(k))}"
    return f"{n:g}"


def fmt_list(values) -> str:
    values = list(values)
    labels = [pow2_label(v) if v >= 16 else f"{v:g}" for v in values]
    return "{" + ", ".join(labels) + "}"


def fmt_x(v) -> str:
    """A speedup: 3 significant digits and ×."""
    if v is None or not np.isfinite(v):
        return "n/a"
    return f"{v:.3g}×" if v < 1000 else f"{v:,.0f}×"


def fmt_rate(v) -> str:
    if v is None or not np.isfinite(v):
        return "n/a"
    return f"{v:.3g} samples/s"


def md(text: str):
    from IPython.display import Markdown

    return Markdown(text)


# ---- the machine note ------------------------------------------------------------------------------


def machine_note(chapter_uses_fusion: bool = True):
    """The admonition every chapter shows: which machine built it and what stands in for what."""
    from .provenance import machine_info

    info = machine_info()
    ok, reason = cuda_ok()
    gpu = info.get("gpu") or "none"
    lines = [f"This page was computed on **{info['cpu_model']}, {info['cores']} cores, GPU: {gpu}** "
             f"(Python {info['python']}, torch {info['packages'].get('torch')}, jax {info['packages'].get('jax')}; "
             f"commit `{(info.get('commit') or 'unknown')[:10]}`{' + local changes' if info.get('dirty') else ''}). "
             "The paper used an NVIDIA 2080Ti GPU and an AMD EPYC 7371 CPU."]
    if not ok:
        reason = reason.removeprefix("no CUDA device: ")
        lines.append(f"No CUDA device here ({reason}): **the `cuda` rows are absent**, torch and jax run on "
                     "the CPU, and **`cpp` — the CPU build of the same kernel source, running K steps per "
                     "call — stands in for kernel fusion**." if chapter_uses_fusion else
                     f"No CUDA device here ({reason}): **the `cuda` rows are absent** and torch and jax run on the CPU.")
    body = "\n\n".join(lines)
    return md(f":::{{admonition}} Hardware of this build\n:class: {'warning' if not ok else 'note'}\n{body}\n:::\n")


def params_note(P: Params):
    return md(f":::{{admonition}} Parameters of this run\n:class: tip\n{P.describe()}\n"
              f"Rerun with other values: see [Reproducing](methodology.md#rerun-one-chapter-with-new-parameters).\n:::\n")


# ---- measurement plans -----------------------------------------------------------------------------


def _capped_points(P: Params, impls, policy, state_factors=(1,), compute_factors=(1,)):
    """Grids (one per impl and K) whose points respect the per-impl work cap."""
    grids, dropped = [], []
    for impl in impls:
        for s in state_factors:
            for c in compute_factors:
                for k in P.steps:
                    ns = [n for n in P.num_envs if n * k * s * c <= P.cap_for(impl)]
                    dropped += [(impl, n, k, s, c) for n in P.num_envs if n * k * s * c > P.cap_for(impl)]
                    if ns:
                        grids.append({"impl": [impl], "num_envs": ns, "steps": [k], "state_factor": [s],
                                      "compute_factor": [c], "policy": [policy]})
    return grids, dropped


def _saved_points(name: str, P: Params):
    """(rows by point key, skipped by point key) already in this machine's sweep file."""
    from . import bench
    from .provenance import machine_key

    path = P.data_dir / machine_key() / f"{name}.json"
    if not path.exists():
        return {}, {}
    doc = bench.read_sweep_file(path)
    return ({bench.point_key(r): r for r in doc["rows"]}, {bench.point_key(r): r for r in doc.get("skipped", [])})


def run_grids(name: str, grids, P: Params) -> pd.DataFrame:
    """``bench.sweep`` each grid, except grids whose points are all saved already: those are read
    from the file without calling sweep, so re-executing a chapter neither measures nor appends a
    run record to the data file (a cached rebuild leaves data/ untouched)."""
    from . import bench
    from .provenance import machine_key

    P.data_dir.mkdir(parents=True, exist_ok=True)
    done, done_skipped = _saved_points(name, P)
    extra = {"repeats": P.repeats, "min_seconds": P.min_seconds, "seed": 0}
    frames, skipped = [], []
    for g in grids:
        keys = [bench.point_key({**p, **extra}) for p in bench.expand_grid(g)]
        if all(k in done or k in done_skipped for k in keys):
            rows = [done[k] for k in keys if k in done]
            skipped += [done_skipped[k] for k in keys if k in done_skipped and k not in done]
            frames.append(pd.DataFrame(rows).assign(machine=machine_key()) if rows else pd.DataFrame())
            continue
        df = bench.sweep(name, g, data_dir=P.data_dir, repeats=P.repeats, min_seconds=P.min_seconds,
                         progress=False, log=lambda msg: None)
        frames.append(df)
        skipped += df.attrs.get("skipped", [])
    df = pd.concat([f for f in frames if len(f)], ignore_index=True) if any(len(f) for f in frames) else pd.DataFrame()
    df.attrs["skipped"] = skipped
    return df


def _sweep(chapter, P, impls, policy, **kw):
    grids, dropped = _capped_points(P, impls, policy, **kw)
    df = run_grids(SWEEP_NAMES[chapter], grids, P)
    df.attrs["dropped"] = dropped
    return df


def vectorization_data(P: Params) -> pd.DataFrame:
    """Fig 4: samples/s vs N, data collection with MLP inference, every implementation."""
    return _sweep("vectorization", P, P.impls, "mlp")


def overheads_data(P: Params) -> pd.DataFrame:
    """Fig 4 (K dimension) for F.2: jax and torch with inference, K = 1 ... 10^3."""
    return _sweep("overheads", P, [i for i in P.impls if i in ("torch", "jax")], "mlp")


def fusion_data(P: Params) -> pd.DataFrame:
    """Fig 8: simulation only (policy "none"), fused (cpp/cuda) vs jax vs torch, K = 1 ... 10^3."""
    return _sweep("fusion", P, [i for i in P.impls if i in ("cpp", "cuda", "jax", "torch")], "none")


def fusion_impl(P: Params) -> str:
    """The implementation that shows kernel fusion: cuda with a GPU, else cpp (its CPU build)."""
    return "cuda" if "cuda" in P.impls else "cpp"


def complexity_data(P: Params) -> pd.DataFrame:
    """Fig 9: the fused implementation over N x K x S x C, simulation only."""
    return _sweep("complexity", P, [fusion_impl(P)], "none", state_factors=P.state_factor,
                  compute_factors=P.compute_factor)


def beyond_data(P: Params) -> pd.DataFrame:
    """Beyond the paper: torch-compile and fused against torch and jax with the MLP policy, and the
    peers against ours simulation only. One sweep file, ``beyond.json``."""
    from .peers import PEERS

    ours = [i for i in BEYOND_IMPLS if i in P.impls or i in ("torch-compile", "fused")]
    grids, dropped = _capped_points(P, ours, "mlp")
    peer_p = replace(P, num_envs=list(P.peer_num_envs), steps=[int(P.peer_steps)])
    for impl in ("cpp", "fused", "jax", *PEERS):
        g, d = _capped_points(peer_p, [impl], "none")
        grids += g
        dropped += d
    df = run_grids(SWEEP_NAMES["beyond"], grids, P)
    df.attrs["dropped"] = dropped
    return df


def roofline_data(P: Params) -> dict:
    """This machine's ceilings (studylib.roofline), measured once per machine and saved with its
    provenance as ``beyond_roofline.json``; later builds read the file."""
    from . import bench, roofline
    from .provenance import machine_info, machine_key

    path = P.data_dir / machine_key() / "beyond_roofline.json"
    if path.exists():
        doc = json.loads(path.read_text())
    else:
        ceil = roofline.ceilings(num_envs_list=sorted(set(P.num_envs) | set(P.peer_num_envs)))
        doc = {"format": "studylib-roofline/1", "machine": machine_info(),
               "memory_bytes_per_s": ceil["memory_bytes_per_s"],
               "physics_steps_per_s": [{"state_factor": s, "compute_factor": c, "steps_per_s": v}
                                       for (s, c), v in ceil["physics_steps_per_s"].items()],
               "gemm_steps_per_s": [{"num_envs": n, "steps_per_s": v} for n, v in ceil["gemm_steps_per_s"].items()]}
        path.parent.mkdir(parents=True, exist_ok=True)
        bench.atomic_write_json(path, doc)
    return {"memory_bytes_per_s": doc["memory_bytes_per_s"],
            "physics_steps_per_s": {(r["state_factor"], r["compute_factor"]): r["steps_per_s"]
                                    for r in doc["physics_steps_per_s"]},
            "gemm_steps_per_s": {int(r["num_envs"]): r["steps_per_s"] for r in doc["gemm_steps_per_s"]},
            "date": doc["machine"].get("date")}


def _quiet_native_stderr():
    """Silence file-descriptor-level stderr (the PyTorch profiler's C++ Kineto log lines) around a
    block, so they do not land in the book as a cell's stderr output."""
    import contextlib
    import sys
    import tempfile

    @contextlib.contextmanager
    def cm():
        sys.stderr.flush()
        saved = os.dup(2)
        with tempfile.TemporaryFile() as sink:
            os.dup2(sink.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(saved, 2)
                os.close(saved)

    return cm()


def profile_data(P: Params) -> pd.DataFrame:
    """Fig 5/6: studylib.profiler for jax and torch at one N over K; cached in data/ like sweeps."""
    from . import profiler
    from .bench import atomic_write_json
    from .provenance import machine_info

    info = machine_info()
    folder = P.data_dir / info["machine_key"]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "fig56_profile.json"
    doc = json.loads(path.read_text()) if path.exists() else {"format": "studylib-profile/1", "rows": [], "runs": []}
    have = {(r["impl"], r["num_envs"], r["steps"]) for r in doc["rows"]}
    caps = P.extra.get("profile_cap", P.cap)
    n = int(P.profile_num_envs)
    rows_out, todo = [], {}
    for impl in [i for i in P.impls if i in ("jax", "torch")]:
        ks = [int(k) for k in P.profile_steps if n * k <= caps.get(impl, caps.get("*", math.inf))]
        missing = [k for k in ks if (impl, n, k) not in have]
        if missing:
            todo[impl] = missing
    if todo:
        doc["runs"].append({"provenance": info, "todo": todo})
        for impl, ks in todo.items():
            with _quiet_native_stderr():
                df = profiler.profile_sweep(impl, n, ks, policy="mlp")
            for r in df.to_dict("records"):
                r["machine"] = info["machine_key"]
                r["date"] = info["date"]
                doc["rows"].append(r)
            atomic_write_json(path, doc)
        atomic_write_json(path, doc)
    for r in doc["rows"]:
        if r["num_envs"] == n and r["impl"] in P.impls and r["steps"] in P.profile_steps:
            rows_out.append(r)
    df = pd.DataFrame(rows_out)
    if len(df):
        df = df.drop_duplicates(["impl", "num_envs", "steps"], keep="last").sort_values(["impl", "steps"])
    return df.reset_index(drop=True)


# ---- Fig 2: cartpole vs Brax -------------------------------------------------------------------------


def brax_available() -> tuple[bool, str]:
    try:
        import importlib.util

        if importlib.util.find_spec("brax") is None:
            return False, "brax is not installed (`pip install brax`)"
        return True, ""
    except Exception as e:  # pragma: no cover
        return False, str(e)


def _brax_throughput(env_name: str, n: int, k: int, repeats: int, min_seconds: float) -> dict:
    import logging
    import time
    import warnings

    import jax
    import jax.numpy as jnp

    logging.getLogger("absl").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import contextlib
        import io

        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            from brax import envs

            env = envs.get_environment(env_name, backend="spring" if env_name != "inverted_pendulum" else "positional")
    step = jax.vmap(env.step)

    @jax.jit
    def rollout(state):
        def body(s, _):
            return step(s, jnp.zeros((n, env.action_size))), None

        return jax.lax.scan(body, state, None, length=k)[0]

    t0 = time.perf_counter()
    state = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.PRNGKey(0), n))
    state = rollout(state)
    jax.block_until_ready(state.obs)
    compile_s = time.perf_counter() - t0
    rates = []
    for _ in range(repeats):
        calls, t0 = 0, time.perf_counter()
        while True:
            state = rollout(state)
            jax.block_until_ready(state.obs)
            calls += 1
            dt = time.perf_counter() - t0
            if dt >= min_seconds:
                break
        rates.append(n * k * calls / dt)
    return {"env": env_name, "num_envs": n, "steps": k, "samples_per_s": float(np.median(rates)),
            "samples_per_s_min": float(min(rates)), "samples_per_s_max": float(max(rates)),
            "repeats": repeats, "min_seconds": min_seconds, "compile_s": compile_s,
            "backend": "spring" if env_name != "inverted_pendulum" else "positional", "policy": "zero actions"}


def brax_data(P: Params) -> pd.DataFrame:
    """Fig 2: Brax environments (XLA, jit+vmap+scan of K steps, zero actions) on this machine."""
    ok, _ = brax_available()
    if not ok:
        return pd.DataFrame()
    from .bench import atomic_write_json
    from .provenance import machine_info

    info = machine_info()
    folder = P.data_dir / info["machine_key"]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "fig2_brax.json"
    doc = json.loads(path.read_text()) if path.exists() else {"format": "studylib-brax/1", "rows": [], "runs": []}
    key = lambda r: (r["env"], r["num_envs"], r["steps"], r["repeats"], r["min_seconds"])  # noqa: E731
    have = {key(r): r for r in doc["rows"]}
    out, ran = [], False
    for e in P.brax_envs:
        for n in P.brax_num_envs:
            kk = (e, n, P.brax_steps, P.repeats, P.min_seconds)
            if kk not in have:
                if not ran:
                    doc["runs"].append({"provenance": info})
                    ran = True
                r = _brax_throughput(e, n, P.brax_steps, P.repeats, P.min_seconds)
                r.update(machine=info["machine_key"], date=info["date"],
                         brax=info["packages"].get("brax") or _version("brax"))
                doc["rows"].append(r)
                have[kk] = r
                atomic_write_json(path, doc)
            out.append(have[kk])
    return pd.DataFrame(out)


def _version(pkg):
    from importlib import metadata

    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


def cartpole_fig2_data(P: Params) -> pd.DataFrame:
    """Fig 2's cartpole line: jax (XLA), simulation only, K steps per call."""
    grids, dropped = _capped_points(replace(P, cap={}), ["jax"], "none")
    return run_grids(SWEEP_NAMES["cartpole"], grids, P)


# ---- analysis helpers ----------------------------------------------------------------------------------


def pivot(df: pd.DataFrame, index="num_envs", columns="impl", values="samples_per_s"):
    return df.pivot_table(index=index, columns=columns, values=values, aggfunc="median")


def plateau_n(df_impl: pd.DataFrame, frac=0.9):
    """Smallest N whose throughput reaches ``frac`` of the implementation's best (its plateau)."""
    s = df_impl.groupby("num_envs")["samples_per_s"].max().sort_index()
    if s.empty:
        return None
    return int(s[s >= frac * s.max()].index.min())


def k_speedup(df: pd.DataFrame, impl: str, k_lo: int, k_hi: int, *, max_n=None, extra_keys=()):
    """Per N (and extra keys): throughput at K = k_hi over K = k_lo for one implementation."""
    d = df[df["impl"] == impl]
    if max_n is not None:
        d = d[d["num_envs"] <= max_n]
    keys = ["num_envs", *extra_keys]
    lo = d[d["steps"] == k_lo].set_index(keys)["samples_per_s"]
    hi = d[d["steps"] == k_hi].set_index(keys)["samples_per_s"]
    r = (hi / lo).dropna()
    return r


# ---- findings (the introduction's table) -------------------------------------------------------------------


def verdict(ours, paper, *, kind="speedup") -> str:
    if ours is None or not np.isfinite(ours):
        return "not measured"
    if kind == "speedup":
        if ours <= 1.05:
            return "not reproduced (no speedup here)"
        r = ours / paper
        if 0.5 <= r <= 2:
            return "reproduced (within 2×)"
        return "same direction, smaller" if r < 0.5 else "same direction, larger"
    if kind == "share":
        return "reproduced (within 10 points)" if abs(ours - paper) <= 10 else (
            "CPU share smaller here" if ours < paper else "CPU share larger here")
    if kind == "ceiling":  # paper: "at most"
        return "consistent (≤ paper's bound)" if ours <= paper * 1.05 else "exceeds the paper's bound"
    if kind == "plateau":
        return "same order (within 4×)" if 0.25 <= ours / paper <= 4 else (
            "plateaus earlier here" if ours < paper else "plateaus later here")
    if kind == "flat":  # ours = max/min across N
        return "flat in N (within 2×)" if ours <= 2 else "varies with N here"
    if kind == "vanish":
        return "reproduced (≤ 2×)" if ours <= 2 else "fusion still helps here"
    return ""


def _geo_mean(s):
    s = pd.Series(s).dropna()
    return float(np.exp(np.log(s).mean())) if len(s) else float("nan")


def findings(preset=None, data_dir=None) -> pd.DataFrame:
    """F.1–F.4: the paper's value, ours (computed from the chapters' data), a verdict. Runs the
    chapters' sweeps (resuming: whatever a chapter already measured is read, not re-measured)."""
    rows = []

    def add(f, quantity, key, ours, kind, ours_text=None, paper_text=None):
        pv = PAPER[key]
        rows.append({
            "finding": f, "quantity": quantity,
            "paper": paper_text or (fmt_x(pv.value) if pv.unit == "x" else f"{pv.value:g}%" if pv.unit == "%" else pow2_label(pv.value)),
            "paper source": pv.where,
            "ours": ours_text or (fmt_x(ours) if pv.unit == "x" else f"{ours:.0f}%" if pv.unit == "%" else pow2_label(ours) if ours else "n/a"),
            "verdict": verdict(ours, pv.value, kind=kind),
        })

    # F.1
    P = params("vectorization", preset=preset, data_dir=data_dir)
    v = vectorization_data(P)
    best = v.groupby(["impl", "num_envs"])["samples_per_s"].max().unstack(0)
    vec = [i for i in ("torch", "jax", "cuda") if i in best]
    if "gym" in best and vec:
        sp = (best[vec].max(axis=1) / best["gym"]).dropna()
        add("F.1", "vectorized (torch/jax) over gym, best N", "f1_gpu_over_gym", sp.max() if len(sp) else None, "speedup")
    if "gym" in best and "cpp" in best:
        sp = (best["cpp"] / best["gym"]).dropna()
        add("F.1", "cpp (multi-core) over gym, best N", "f1_cpp_over_gym", sp.max() if len(sp) else None, "ceiling")
    # F.2
    P = params("overheads", preset=preset, data_dir=data_dir)
    o = overheads_data(P)
    kmax = max(P.steps)
    if {"jax", "torch"} <= set(o["impl"]) and kmax > 1:
        small = o[o["num_envs"] <= 2**13]
        j = small[(small["impl"] == "jax") & (small["steps"] == kmax)].set_index("num_envs")["samples_per_s"]
        t = small[small["impl"] == "torch"].groupby("num_envs")["samples_per_s"].max()
        add("F.2", f"jax (K={kmax}) over torch, mean over N ≤ 2^13", "f2_xla_over_torch", (j / t).dropna().mean(), "speedup")
        r = k_speedup(o, "jax", 1, kmax, max_n=2**13)
        add("F.2", f"jax K = 1 → {kmax} (with inference), mean over N ≤ 2^13", "f2_xla_k1_to_k1000", r.mean(), "speedup")
    prof = profile_data(P)
    if len(prof) and (prof["impl"] == "jax").any():
        r = prof[(prof["impl"] == "jax")].sort_values("steps").iloc[0]
        share = 100 * (r["python_s"] + r["backend_s"]) / r["total_s"]
        add("F.2", f"CPU-bound share of jax time at K = {int(r['steps'])} (N = {pow2_label(r['num_envs'])})",
            "f2_cpu_share_k1", share, "share")
    # F.3
    P = params("fusion", preset=preset, data_dir=data_dir)
    f = fusion_data(P)
    fi = fusion_impl(P)
    kmax = max(P.steps)
    if kmax > 1:
        r = k_speedup(f, fi, 1, kmax)
        add("F.3", f"fusion alone: {fi} K = 1 → {kmax}, mean over N", "f3_fusion", r.mean() if len(r) else None, "speedup")
        r = k_speedup(f, "jax", 1, kmax)
        add("F.3", f"jax K = 1 → {kmax} (simulation only), mean over N", "f3_xla_k1_to_k1000", r.mean() if len(r) else None, "speedup")
        a = f[(f["impl"] == fi) & (f["steps"] == kmax)].set_index("num_envs")["samples_per_s"]
        b = f[(f["impl"] == "jax") & (f["steps"] == kmax)].set_index("num_envs")["samples_per_s"]
        add("F.3", f"{fi} over jax at K = {kmax}, mean over N", "f3_fused_over_xla", (a / b).dropna().mean(), "speedup")
    # F.4
    P = params("complexity", preset=preset, data_dir=data_dir)
    c = complexity_data(P)
    sp = fusion_speedups(c)
    if len(sp):
        kmax = sp["steps"].max()
        at = sp[(sp["steps"] == kmax) & (sp["compute_factor"] == 1)]
        by_s = at.groupby("state_factor")["speedup"].median()
        lo, hi = by_s.iloc[0], by_s.max()
        rows.append({"finding": "F.4", "quantity": f"fusion speedup at K = {kmax}, C = 1: at S = {by_s.index[0]} → "
                     f"at the best S measured (S = {by_s.idxmax()}), median over N",
                     "paper": "2^4 → 2^10", "paper source": PAPER["f4_speedup_s_high"].where,
                     "ours": f"{fmt_x(lo)} → {fmt_x(hi)}",
                     "verdict": ("grows with S" if hi > 1.5 * lo else "does not grow with S here")
                     + (", smaller than the paper" if hi < PAPER["f4_speedup_s_high"].value / 2 else "")})
        flat = at.groupby("state_factor")["speedup"].agg(lambda s: s.max() / s.min()).max() if at["num_envs"].nunique() > 1 else None
        if flat is not None:
            rows.append({"finding": "F.4", "quantity": f"spread of the K = {kmax} speedup across N (max/min, worst S)",
                         "paper": "≈ 1× (flat in N)", "paper source": "§4.2, Fig 9", "ours": fmt_x(flat),
                         "verdict": verdict(flat, 1, kind="flat")})
        cmax = sp["compute_factor"].max()
        if cmax > 1:
            v_c = sp[(sp["steps"] == kmax) & (sp["compute_factor"] == cmax) & (sp["state_factor"] == sp["state_factor"].min())]["speedup"].median()
            add("F.4", f"fusion speedup at K = {kmax}, largest C = {cmax}, smallest S", "f4_speedup_c_max", v_c, "vanish")
    return pd.DataFrame(rows)


def fusion_speedups(df: pd.DataFrame) -> pd.DataFrame:
    """Throughput at each K over throughput at K = 1 with the same (impl, N, S, C): paper Fig 9's y."""
    if df.empty:
        return pd.DataFrame(columns=["impl", "num_envs", "state_factor", "compute_factor", "steps", "speedup"])
    keys = ["impl", "num_envs", "state_factor", "compute_factor"]
    base = df[df["steps"] == 1].set_index(keys)["samples_per_s"].rename("base")
    out = df.join(base, on=keys)
    out["speedup"] = out["samples_per_s"] / out["base"]
    return out.dropna(subset=["speedup"])


# ---- charts ---------------------------------------------------------------------------------------------------

# Axis labels 2^k at integer k only (log-2 axes otherwise label fractional ticks as duplicates).
POW2_LABEL = ("abs(log(datum.value) / log(2) - round(log(datum.value) / log(2))) < 0.01 ? "
              "'2^' + format(round(log(datum.value) / log(2)), 'd') : ''")
POW10_LABEL = "format(datum.value, '.0e')"


def x_n(title="parallel environments N", field_="num_envs", domain=None):
    import altair as alt

    scale = alt.Scale(type="log", base=2, domain=domain) if domain else alt.Scale(type="log", base=2)
    return alt.X(f"{field_}:Q", scale=scale, axis=alt.Axis(title=title, labelExpr=POW2_LABEL, tickCount=8))


def y_rate(title="throughput (samples/s, log scale)", field_="samples_per_s"):
    import altair as alt

    return alt.Y(f"{field_}:Q", scale=alt.Scale(type="log"), axis=alt.Axis(title=title, format="~s"))


def impl_color(domain=None):
    import altair as alt

    domain = domain or IMPL_ORDER
    palette = {"gym": "#7f7f7f", "cpp": "#d62728", "torch": "#ff7f0e", "jax": "#1f77b4", "cuda": "#2ca02c",
               "torch-compile": "#9467bd", "fused": "#8c564b", "gymnasium-vector": "#e377c2",
               "gymnax": "#17becf", "envpool": "#bcbd22"}
    return alt.Color("impl:N", title="implementation", scale=alt.Scale(domain=domain, range=[palette.get(d, "#444") for d in domain]),
                     legend=alt.Legend(orient="bottom", columns=2))


def tooltip(*extra):
    import altair as alt

    base = [alt.Tooltip("impl:N", title="impl"), alt.Tooltip("num_envs:Q", title="N", format=","),
            alt.Tooltip("steps:Q", title="K"), alt.Tooltip("samples_per_s:Q", title="samples/s", format=".3s"),
            alt.Tooltip("samples_per_s_min:Q", title="min", format=".3s"),
            alt.Tooltip("samples_per_s_max:Q", title="max", format=".3s")]
    return base + [alt.Tooltip(e) if isinstance(e, str) else e for e in extra]


def paper_rules(values: list[dict], axis="y"):
    """Dashed rules with a text label for the paper's values: [{"value": v, "label": "..."}]."""
    import altair as alt

    d = pd.DataFrame(values)
    enc = alt.Y("value:Q") if axis == "y" else alt.X("value:Q")
    rule = alt.Chart(d).mark_rule(strokeDash=[6, 4], color="#555", strokeWidth=1.2).encode(
        enc, tooltip=[alt.Tooltip("label:N", title="paper")])
    if axis == "y":
        text = alt.Chart(d).mark_text(align="left", baseline="bottom", dx=4, dy=-3, fontSize=11, color="#333")
        text = text.encode(enc, x=alt.value(4), text="label:N")
    else:  # vertical label reading upwards, inside the plot, left of the rule
        text = alt.Chart(d).mark_text(align="right", baseline="bottom", angle=270, dx=-4, dy=-3, fontSize=11, color="#333")
        text = text.encode(enc, y=alt.value(4), text="label:N")
    return rule + text


def line_points(base):
    """Lines plus filled points. The points ignore strokeDash, so a strokeDash legend shows dashes
    (with ``mark_line(point=True)`` its symbols come out blank)."""
    import altair as alt

    return base.mark_line() + base.mark_point(filled=True, size=30, opacity=1).encode(strokeDash=alt.value([1, 0]))


def finish(chart, title: str, subtitle: str | None = None):
    import altair as alt

    t = alt.TitleParams(title, subtitle=subtitle or "", anchor="start", fontSize=14, subtitleFontSize=11)
    return chart.properties(title=t).configure_axis(labelFontSize=11, titleFontSize=12, gridOpacity=0.4).configure_legend(
        labelFontSize=11, titleFontSize=12, labelLimit=320, orient="bottom", direction="vertical")


def table(df: pd.DataFrame, cols: dict, floatfmt=None):
    """A small HTML table: ``cols`` maps column -> header; numbers formatted readably."""
    from IPython.display import HTML

    d = df[list(cols)].rename(columns=cols).copy()
    for c in d.columns:
        if pd.api.types.is_float_dtype(d[c]):
            d[c] = d[c].map(lambda v: "" if pd.isna(v) else (floatfmt or "{:.3g}").format(v))
    return HTML(d.to_html(index=False, border=0, classes="table", escape=True))


# ---- rerun one chapter with new parameters ---------------------------------------------------------------

INJECTED_TAG = "injected-parameters"


def _code_cell(tag: str, body: str) -> str:
    return f"```{{code-cell}} ipython3\n:tags: [{tag}]\n\n{body.rstrip()}\n```\n"


def inject_parameters(text: str, parameters: dict) -> str:
    """Return chapter source with one ``injected-parameters`` cell after the ``parameters`` cell
    (replacing an earlier one); with no parameters, just remove it."""
    import re

    text = re.sub(r"\n```\{code-cell\}[^\n]*\n:tags: \[" + INJECTED_TAG + r"\]\n.*?\n```\n", "", text, flags=re.S)
    if not parameters:
        return text
    m = re.search(r"```\{code-cell\}[^\n]*\n:tags: \[parameters\]\n.*?\n```\n", text, flags=re.S)
    if not m:
        raise ValueError("the chapter has no cell tagged 'parameters'")
    body = "# Injected by `python -m studylib.book rerun` (papermill); `--reset` removes this cell\n"
    body += "\n".join(f"{k} = {v!r}" for k, v in parameters.items())
    return text[: m.end()] + "\n" + _code_cell(INJECTED_TAG, body) + text[m.end():]


def rerun(chapter: str, parameters: dict, *, build: bool = True, reset: bool = False) -> Path:
    """Execute ``book/<chapter>.md`` with papermill and ``parameters`` (saving its measurements in
    data/), record the parameters in the chapter as an ``injected-parameters`` cell, and rebuild
    the book (only this chapter re-executes; it reads the points papermill just measured)."""
    import subprocess
    import sys

    import jupytext
    import papermill

    root = repo_root()
    src = root / "book" / f"{chapter}.md"
    if not src.exists():
        raise SystemExit(f"no chapter {src}")
    text = src.read_text()
    if reset:
        parameters = {}
    else:
        out = root / "_build" / "reruns" / f"{chapter}.ipynb"
        out.parent.mkdir(parents=True, exist_ok=True)
        nb = jupytext.reads(inject_parameters(text, {}), fmt="md:myst")
        papermill.execute_notebook(nb, str(out), parameters=parameters, cwd=str(root / "book"),
                                   kernel_name="python3", progress_bar=False)
        print(f"executed notebook: {out}")
    src.write_text(inject_parameters(text, parameters))
    if build:
        subprocess.run([str(Path(sys.executable).with_name("jupyter-book")), "build", "book/"], cwd=root, check=True)
        print(f"see {root / '_build' / 'html' / (chapter + '.html')}")
    return src


def _literal(v: str):
    try:
        return ast.literal_eval(v)
    except (ValueError, SyntaxError):
        return v


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m studylib.book",
                                 description="Rerun one chapter of the book with new parameters (papermill), then rebuild.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("rerun", help="papermill one chapter with parameters, keep them in the chapter, rebuild the book")
    r.add_argument("chapter", choices=[*CHAPTERS, "intro"])
    r.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                   help='e.g. -p num_envs "[1, 64, 4096]" -p preset paper (values are Python literals)')
    r.add_argument("--no-build", action="store_true", help="do not run jupyter-book build afterwards")
    r.add_argument("--reset", action="store_true", help="remove injected parameters (back to the preset) and rebuild")
    a = ap.parse_args(argv)
    rerun(a.chapter, {k: _literal(v) for k, v in a.parameter}, build=not a.no_build, reset=a.reset)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
