"""Presets and the typed parameters of each chapter run.

Presets (``PRESETS``), chosen with ``preset=`` or the environment variable ``STUDYLIB_PRESET``:
  tiny     seconds per chapter; what the tests build (no conclusion is meaningful at this size)
  default  what ``jupyter-book build book/`` runs: a cold build in a few minutes on 2 CPU cores
  paper    the paper's ranges (N up to 2^26, K up to 10^3, S up to 2^11, C up to 2^10); hours on a CPU,
           and memory-limited points are skipped with the reason
The data folder is ``data_dir=``, else ``$STUDYLIB_DATA_DIR``, else ``<repo>/data``.
``machine=`` (a machine folder: ``machine_folders``) plots another machine's snapshot, read only.

Each chapter's ``parameters`` cell (papermill overrides it) goes through ``params``, which
returns a frozen ``ChapterParams``: explicit values > the preset's > defaults.
"""

from __future__ import annotations

import ast
import math
import os
from dataclasses import dataclass, field, fields
from pathlib import Path

from ..errors import ConfigError
from ..implspec import spec, specs
from .format import fmt_list, pow2_label



def paper_impls() -> list[str]:
    """The paper's implementations (records with ``in_paper``), in the book's order."""
    return [s.name for s in sorted(specs(), key=lambda s: s.order) if s.in_paper]


IMPL_ORDER = paper_impls()  # the paper's five, as the chapters list them


def _pow2(lo, hi, step=1):
    return [2**k for k in range(lo, hi + 1, step)]


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
                       "cap": {"*": 2**14}, "memory_steps": [1, 4], "memory_cache_multiple": 1 / 16,
                       "memory_max_bytes": 2**20},
        "beyond": {"num_envs": [16, 64], "steps": [1, 4], "peer_num_envs": [16], "peer_steps": 4,
                   "cap": {"*": 2**12}, "rollout_steps": 8},
        "atari": {"games": ["pong"], "num_envs": [2], "steps": [1], "async_num_envs": [1],
                  "breakdown_num_envs": [2], "breakdown_seconds": 0.05},
        "model": {"num_envs": [2**10, 2**20], "steps": [1, 1000], "gpu_flops_per_s": None, "gpu_bytes_per_s": None},
    },
    "default": {
        "_timing": {"repeats": 3, "min_seconds": 0.1},
        "cartpole": {"num_envs": _pow2(4, 16, 3), "steps": [100], "brax_envs": ["ant", "humanoid"],
                     "brax_num_envs": [2**10], "brax_steps": 10, "conformance_envs": 1024},
        "vectorization": {"num_envs": _pow2(0, 15, 3), "steps": [1, 100],
                          "cap": {"gym": 2**12, "*": 2**21}},
        "overheads": {"num_envs": _pow2(4, 12, 4), "steps": [1, 10, 100, 1000],
                      "cap": {"torch": 2**20, "*": 2**22}, "profile_num_envs": 2**10,
                      "profile_steps": [1, 10, 100, 1000], "profile_cap": {"torch": 2**17, "*": 2**20}},
        "fusion": {"num_envs": _pow2(6, 18, 4), "steps": [1, 10, 100, 1000],
                   "cap": {"cpp": 2**26, "cuda": 2**30, "jax": 2**24, "torch": 2**20}},
        "complexity": {"num_envs": [2**8, 2**14], "steps": [1, 10, 100, 1000], "state_factor": [1, 64, 1024],
                       "compute_factor": [1, 32, 1024], "cap": {"*": 2**26}, "memory_steps": [1, 1000],
                       "memory_cache_multiple": 8, "memory_max_bytes": 2**30},
        "beyond": {"num_envs": [2**10, 2**13, 2**16], "steps": [1, 100], "peer_num_envs": [2**12, 2**16],
                   "peer_steps": 100, "cap": {"torch": 2**20, "torch-compile": 2**20, "gym": 2**12, "envpool": 2**19,
                                             "*": 2**24}, "rollout_steps": 256},
        "atari": {"games": ["breakout", "pong"], "num_envs": [1, 4], "steps": [1], "async_num_envs": [1, 4],
                  "breakdown_num_envs": [16], "breakdown_seconds": 0.5},
        "model": {"num_envs": [2**10, 2**20], "steps": [1, 1000], "gpu_flops_per_s": None, "gpu_bytes_per_s": None},
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
                       "state_factor": _pow2(0, 10, 2) + [2**11], "compute_factor": _pow2(0, 10, 2), "cap": {"*": 2**38},
                       "memory_steps": [1, 10, 100, 1000], "memory_cache_multiple": 8},
        "beyond": {"num_envs": _pow2(10, 20, 2), "steps": [1, 1000], "peer_num_envs": _pow2(10, 20, 2),
                   "peer_steps": 1000, "cap": {"envpool": 2**26, "gym": 2**22, "*": 2**34}, "rollout_steps": 1000},
        "atari": {"games": ["breakout", "pong"], "num_envs": _pow2(0, 8, 1), "steps": [1],
                  "async_num_envs": _pow2(0, 5, 1), "breakdown_num_envs": [1, 16, 64, 256], "breakdown_seconds": 2.0},
        "model": {"num_envs": [2**10, 2**16, 2**20, 2**26], "steps": [1, 1000], "gpu_flops_per_s": None,
                  "gpu_bytes_per_s": None},
    },
}


CHAPTERS = ("cartpole", "vectorization", "overheads", "fusion", "complexity")


@dataclass(frozen=True)
class ChapterParams:
    """The resolved parameters of one chapter run (printed at the top of every chapter). The
    chapter-specific ones are None in chapters that have none."""

    chapter: str
    preset: str
    data_dir: Path
    impls: tuple[str, ...]  # implementations to measure (cuda only where a CUDA device works)
    num_envs: tuple[int, ...]  # N
    steps: tuple[int, ...]  # K
    repeats: int  # timed regions per point (median reported)
    min_seconds: float  # minimum length of one timed region
    cap: dict = field(default_factory=dict)  # impl (or "*") -> max samples (N*K*S*C) per rollout call
    machine: str | None = None  # another machine's folder under data_dir: read its snapshot, measure nothing
    # complexity
    state_factor: tuple[int, ...] | None = None  # S
    compute_factor: tuple[int, ...] | None = None  # C
    # the memory regime: at the largest S, N environments whose unfused working set (state and
    # counters) is at least this multiple of the last-level cache (but at most memory_max_bytes,
    # where given: a preset's time budget), each S, C = 1, K in memory_steps, one timed repeat
    # (exempt from the work cap: these calls are long by design)
    memory_steps: tuple[int, ...] | None = None
    memory_cache_multiple: float | None = None
    memory_max_bytes: int | None = None
    # cartpole
    brax_envs: tuple[str, ...] | None = None
    brax_num_envs: tuple[int, ...] | None = None
    brax_steps: int | None = None
    conformance_envs: int | None = None
    # overheads
    profile_num_envs: int | None = None
    profile_steps: tuple[int, ...] | None = None
    profile_cap: dict | None = None  # as cap, for the profiled collections (default: cap)
    # beyond
    peer_num_envs: tuple[int, ...] | None = None
    peer_steps: int | None = None
    rollout_steps: int | None = None
    # atari (K is 1: one agent step of all N environments per call)
    games: tuple[str, ...] | None = None  # ALE game ids
    async_num_envs: tuple[int, ...] | None = None  # N of gymnasium's AsyncVectorEnv (one process each)
    breakdown_num_envs: tuple[int, ...] | None = None  # N of the time breakdown (CNN policy)
    breakdown_seconds: float | None = None  # length of each breakdown's timed region
    # model: the reader's GPU for the cost model's projection (published figures; None: none entered)
    gpu_flops_per_s: float | None = None  # peak FP32, flops/s
    gpu_bytes_per_s: float | None = None  # memory bandwidth, bytes/s

    def cap_for(self, impl, cap=None):
        cap = self.cap if cap is None else cap
        return cap.get(impl, cap.get("*", math.inf))

    def describe(self) -> str:
        parts = [f"preset **{self.preset}**", f"N = {fmt_list(self.num_envs)}", f"K = {fmt_list(self.steps)}",
                 f"implementations: {', '.join(self.impls)}", f"{self.repeats} timed repeats of ≥ {self.min_seconds:g} s"]
        if self.state_factor is not None:
            parts.append(f"S = {fmt_list(self.state_factor)}")
        if self.compute_factor is not None:
            parts.append(f"C = {fmt_list(self.compute_factor)}")
        if self.memory_steps is not None:
            most = f" (at most {self.memory_max_bytes / 2**20:g} MiB)" if self.memory_max_bytes else ""
            parts.append(f"memory regime: working set ≥ {self.memory_cache_multiple:g}× the last-level cache{most} at "
                         f"S = {max(self.state_factor)}, K = {fmt_list(self.memory_steps)}, C = 1, one timed repeat; "
                         f"compute regime: N = {pow2_label(min(self.num_envs))}, S = {min(self.state_factor)}, each C, "
                         f"K = 1 and {max(self.steps)}, one timed repeat")
        caps = ", ".join(f"{k if k != '*' else 'others'} ≤ {pow2_label(v)}" for k, v in self.cap.items()
                         if k == "*" or k in self.impls)
        if caps:
            parts.append(f"work cap per call (N·K·S·C): {caps}")
        if self.machine:
            return "; ".join(parts) + (f". Data: the snapshot of machine **{self.machine}** in "
                                       f"`{display_path(self.data_dir / self.machine)}` (read, nothing measured).")
        return "; ".join(parts) + f". Data: `{display_path(self.data_dir)}`."


_INT_LISTS = {"num_envs", "steps", "state_factor", "compute_factor", "brax_num_envs", "profile_steps", "peer_num_envs",
              "memory_steps", "async_num_envs", "breakdown_num_envs"}
_STR_LISTS = {"brax_envs", "games"}
_INTS = {"brax_steps", "conformance_envs", "profile_num_envs", "peer_steps", "rollout_steps", "memory_max_bytes"}
_FLOATS = {"memory_cache_multiple", "breakdown_seconds", "gpu_flops_per_s", "gpu_bytes_per_s"}
_CHAPTER_FIELDS = {f.name for f in fields(ChapterParams)} - {"chapter", "preset", "data_dir", "impls", "repeats",
                                                               "min_seconds", "cap", "machine"}


def _parse(value) -> list:
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


def _positive_int(v) -> int:
    if isinstance(v, bool) or not (isinstance(v, int) or (isinstance(v, str) and v.strip().isdigit())):
        raise ValueError(v)
    if int(v) < 1:
        raise ValueError(v)
    return int(v)


_KINDS = {**dict.fromkeys(_INT_LISTS, "a list of positive integers"), **dict.fromkeys(_STR_LISTS, "a list of names"),
          **dict.fromkeys(_INTS, "a positive integer"), **dict.fromkeys(_FLOATS, "a positive number"),
          "profile_cap": "a dict of implementation -> integer"}


def _typed(name: str, value):
    """``value`` as parameter ``name``'s type; ConfigError (one line) when it is not one."""
    try:
        if name in _INT_LISTS:
            out = tuple(_positive_int(v) for v in _parse(value))
            if not out:
                raise ValueError(value)
            return out
        if name in _STR_LISTS:
            return tuple(str(v) for v in _parse(value))
        if name in _INTS:
            return _positive_int(value)
        if name in _FLOATS:
            if isinstance(value, bool) or float(value) <= 0:
                raise ValueError(value)
            return float(value)
        return {str(k): int(v) for k, v in dict(value).items()}  # profile_cap
    except (TypeError, ValueError, SyntaxError):
        raise ConfigError(f"parameter {name!r} must be {_KINDS.get(name, 'a literal')}, got {value!r}") from None


def repo_root() -> Path:
    """The folder holding ``_config.yml`` (searched upwards from the working directory)."""
    here = Path.cwd().resolve()
    for d in (here, *here.parents):
        if (d / "_config.yml").exists() and (d / "studylib").is_dir():
            return d
    return Path(__file__).resolve().parents[2]


def resolve_data_dir(data_dir=None) -> Path:
    if data_dir:
        return Path(data_dir).expanduser().resolve()
    env = os.environ.get("STUDYLIB_DATA_DIR")
    if env:
        return Path(env).expanduser().resolve()
    return repo_root() / "data"


def machine_folders(data_dir=None) -> dict[str, Path]:
    """Every machine's folder (key -> path) in the data folder (``resolve_data_dir``) and in the
    repository's ``data/`` (the committed snapshots), the data folder's first where both have one:
    the machines a chapter can plot and the "Across machines" page shows."""
    found = {}
    for root in dict.fromkeys((resolve_data_dir(data_dir), repo_root() / "data")):
        for folder in sorted(root.glob("*/")) if root.is_dir() else ():
            if folder.name not in found and (folder / "machine.json").is_file():
                found[folder.name] = folder
    return found


def machine_info_of(folder: Path) -> dict:
    """A machine folder's ``machine.json`` (the provenance of its latest run)."""
    import json

    return json.loads((Path(folder) / "machine.json").read_text())


def display_path(p: Path) -> str:
    try:
        return str(Path(p).resolve().relative_to(repo_root()))
    except ValueError:
        return str(p)


def resolve_preset(preset=None) -> str:
    preset = preset or os.environ.get("STUDYLIB_PRESET") or "default"
    if preset not in PRESETS:
        raise ConfigError(f"unknown preset {preset!r}; valid: {', '.join(PRESETS)}")
    return preset


def cuda_ok() -> tuple[bool, str]:
    try:
        from ..devices import cuda_status

        return cuda_status()
    except Exception as e:  # pragma: no cover - import problems count as "no cuda"
        return False, f"cuda unavailable: {e}"


def available_impls() -> list[str]:
    """The paper's implementations (``paper_impls``) that have a device here: less a GPU-only one
    (``cuda``) where no CUDA device works (then the CPU build of its kernel stands in for fusion)."""
    from ..devices import runs_here

    return [i for i in paper_impls() if runs_here(i)]


def _another_machine(machine, data_dir) -> tuple[str | None, Path | None, list[str] | None]:
    """(machine, its data root, its implementations) for ``params(machine=...)``; (None, None,
    None) for this machine (None or its own key)."""
    from ..harness.provenance import machine_key

    if machine is None or machine == machine_key():
        return None, None, None
    folders = machine_folders(data_dir)
    if machine not in folders:
        raise ConfigError(f"no machine {machine!r} in the data folders; present: {', '.join(folders) or 'none'}")
    has_gpu = bool(machine_info_of(folders[machine]).get("gpu"))
    return machine, folders[machine].parent, [i for i in paper_impls() if has_gpu or not spec(i).gpu_only]


def params(chapter: str, *, preset=None, data_dir=None, impls=None, num_envs=None, steps=None,
           repeats=None, min_seconds=None, machine=None, **extra) -> ChapterParams:
    """Resolve a chapter's parameters: explicit values > the preset's > defaults. ``machine``:
    another machine's folder (``machine_folders``), whose snapshot the chapter then reads with
    the implementations that machine runs (cuda where it has a GPU)."""
    if chapter not in PRESETS["default"] or chapter.startswith("_"):
        raise ConfigError(f"unknown chapter {chapter!r}")
    name = resolve_preset(preset)
    base = dict(PRESETS[name][chapter])
    timing = PRESETS[name]["_timing"]
    machine, machine_root, machine_impls = _another_machine(machine, data_dir)
    chosen_impls = machine_impls or available_impls()
    if impls is not None:
        from ..settings import IMPLEMENTATIONS

        unknown_impls = [i for i in _parse(impls) if i not in IMPLEMENTATIONS]
        if unknown_impls:
            raise ConfigError(f"unknown implementation {unknown_impls[0]!r}; valid: {', '.join(IMPLEMENTATIONS)}")
        chosen_impls = [i for i in _parse(impls) if i in chosen_impls]
    unknown = set(extra) - (set(base) & _CHAPTER_FIELDS)
    if unknown:
        raise ConfigError(f"chapter {chapter!r} has no parameter {sorted(unknown)[0]!r}")
    chosen = {k: v for k, v in base.items() if k in _CHAPTER_FIELDS}
    chosen.update({k: v for k, v in extra.items() if v is not None})
    for k, v in (("num_envs", num_envs), ("steps", steps)):
        if v is not None:
            chosen[k] = v
    typed = {k: _typed(k, v) for k, v in chosen.items() if v is not None or k not in _FLOATS}
    typed["num_envs"], typed["steps"] = tuple(sorted(typed["num_envs"])), tuple(sorted(typed["steps"]))
    for k in ("steps", "memory_steps") if chapter == "complexity" else ():
        typed[k] = tuple(sorted({1, *typed[k]}))  # K = 1: the unfused baseline every fusion speedup divides by
    return ChapterParams(chapter=chapter, preset=name, data_dir=machine_root or resolve_data_dir(data_dir),
                         impls=tuple(chosen_impls), repeats=int(repeats or timing["repeats"]),
                         min_seconds=float(min_seconds or timing["min_seconds"]), cap=dict(base.get("cap", {})),
                         machine=machine, **typed)
