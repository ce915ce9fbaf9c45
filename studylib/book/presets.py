"""Each chapter's typed parameters: one frozen dataclass per chapter, parsed from its annotations
(``harness.params``) when made, from the preset's values (``harness.presets.PRESETS``) and what the
caller gives: explicit values > the preset's > defaults. ``book.chapters`` lists the chapters and
which type each one has; ``book.params(chapter, ...)`` resolves one.

``machine=`` (a machine folder: ``machine_folders``) plots another machine's snapshot, read only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigError
from ..harness.params import Caps, Names, PositiveFloat, PositiveInt, Sizes, TypedParams, parse
from ..harness.presets import (PRESET_NAMES, PRESETS, display_path, preset_values, repo_root, resolve_data_dir,
                               resolve_preset)
from ..implspec import spec, specs
from .format import fmt_list, pow2_label

__all__ = ["PRESETS", "PRESET_NAMES", "display_path", "repo_root", "resolve_data_dir", "resolve_preset"]


def paper_impls() -> list[str]:
    """The paper's implementations (records with ``in_paper``), in the book's order."""
    return [s.name for s in sorted(specs(), key=lambda s: s.order) if s.in_paper]


IMPL_ORDER = paper_impls()  # the paper's five, as the chapters list them


def _check_impls(impls):
    from ..implspec import IMPLEMENTATIONS

    unknown = [i for i in impls if i not in IMPLEMENTATIONS]
    if unknown:
        raise ConfigError(f"unknown implementation {unknown[0]!r}; valid: {', '.join(IMPLEMENTATIONS)}")
    return impls


@dataclass(frozen=True, kw_only=True)
class PageParams(TypedParams):
    """A page that measures nothing itself (the introduction, "Across machines", the methodology)."""

    chapter: str = field(default="", metadata={"given": False})
    preset: str
    data_dir: Path
    machine: str | None = None

    @classmethod
    def resolve(cls, chapter: str, *, preset=None, data_dir=None, machine=None, **extra):
        if extra:
            raise ConfigError(f"chapter {chapter!r} has no parameter {sorted(extra)[0]!r}")
        return cls(chapter=chapter, preset=resolve_preset(preset), data_dir=resolve_data_dir(data_dir), machine=machine)


@dataclass(frozen=True, kw_only=True)
class ChapterParams(TypedParams):
    """What every measuring chapter's parameters have (printed at the top of the chapter); each
    chapter's own type adds its knobs."""

    chapter: str = field(default="", metadata={"given": False})
    preset: str
    data_dir: Path
    impls: Names  # implementations to measure (cuda only where a CUDA device works)
    num_envs: Sizes  # N
    steps: Sizes  # K
    repeats: PositiveInt  # timed regions per point (median reported)
    min_seconds: PositiveFloat  # minimum length of one timed region
    cap: Caps = field(default_factory=dict)  # impl (or "*") -> max samples (N*K*S*C) per rollout call
    machine: str | None = None  # another machine's folder under data_dir: read its snapshot, measure nothing

    def check(self) -> None:
        _check_impls(self.impls)

    def cap_for(self, impl, cap=None):
        cap = self.cap if cap is None else cap
        return cap.get(impl, cap.get("*", math.inf))

    def described(self) -> list[str]:
        """The chapter's own parameters, for ``describe`` (a subclass's)."""
        return []

    def describe(self) -> str:
        parts = [f"preset **{self.preset}**", f"N = {fmt_list(self.num_envs)}", f"K = {fmt_list(self.steps)}",
                 f"implementations: {', '.join(self.impls)}", f"{self.repeats} timed repeats of ≥ {self.min_seconds:g} s",
                 *self.described()]
        caps = ", ".join(f"{k if k != '*' else 'others'} ≤ {pow2_label(v)}" for k, v in self.cap.items()
                         if k == "*" or k in self.impls)
        if caps:
            parts.append(f"work cap per call (N·K·S·C): {caps}")
        if self.machine:
            return "; ".join(parts) + (f". Data: the snapshot of machine **{self.machine}** in "
                                       f"`{display_path(self.data_dir / self.machine)}` (read, nothing measured).")
        return "; ".join(parts) + f". Data: `{display_path(self.data_dir)}`."

    @property
    def data_machine(self) -> str:
        """The machine folder whose files the chapter reads: ``machine`` (another machine's
        snapshot) where given, else this machine's key."""
        from ..harness.data.provenance import machine_key

        return self.machine or machine_key()

    @classmethod
    def resolve(cls, chapter: str, *, preset=None, data_dir=None, impls=None, repeats=None, min_seconds=None,
                machine=None, **given):
        """Resolve ``chapter``'s parameters: explicit values > the preset's > defaults. ``machine``:
        another machine's folder (``machine_folders``), whose snapshot the chapter then reads with
        the implementations that machine runs (cuda where it has a GPU)."""
        name = resolve_preset(preset)
        base = preset_values(name, chapter)
        timing = PRESETS[name]["_timing"]
        unknown = set(given) - set(cls.parameters())
        if unknown:
            raise ConfigError(f"chapter {chapter!r} has no parameter {sorted(unknown)[0]!r}")
        machine, machine_root, machine_impls = _another_machine(machine, data_dir)
        here = machine_impls or available_impls()
        if impls is not None:
            asked = _check_impls(parse("impls", Names, impls))
            here = [i for i in asked if i in here]
        values = {**base, **{k: v for k, v in given.items() if v is not None}}
        return cls(chapter=chapter, preset=name, data_dir=machine_root or resolve_data_dir(data_dir), impls=tuple(here),
                   repeats=timing["repeats"] if repeats is None else repeats,
                   min_seconds=timing["min_seconds"] if min_seconds is None else min_seconds, machine=machine, **values)


@dataclass(frozen=True, kw_only=True)
class CartpoleParams(ChapterParams):
    brax_envs: Names  # Brax environments of Fig 2
    brax_num_envs: Sizes  # their N
    brax_steps: PositiveInt  # their K
    conformance_envs: PositiveInt  # N of the conformance check against gymnasium


@dataclass(frozen=True, kw_only=True)
class VectorizationParams(ChapterParams):
    pass


@dataclass(frozen=True, kw_only=True)
class OverheadsParams(ChapterParams):
    profile_num_envs: PositiveInt  # N of the profiled collections (Fig 5, 6)
    profile_steps: Sizes  # their K
    profile_cap: Caps | None = None  # as cap, for the profiled collections (default: cap)


@dataclass(frozen=True, kw_only=True)
class FusionParams(ChapterParams):
    pass


@dataclass(frozen=True, kw_only=True)
class ComplexityParams(ChapterParams):
    state_factor: Sizes  # S
    compute_factor: Sizes  # C
    # the memory regime: at the largest S, N environments whose unfused working set (state and
    # counters) is at least this multiple of the last-level cache (but at most memory_max_bytes,
    # where given: a preset's time budget), each S, C = 1, K in memory_steps, one timed repeat
    # (exempt from the work cap: these calls are long by design)
    memory_steps: Sizes
    memory_cache_multiple: PositiveFloat
    memory_max_bytes: PositiveInt | None = None

    def check(self) -> None:
        super().check()
        for k in ("steps", "memory_steps"):  # K = 1: the unfused baseline every fusion speedup divides by
            object.__setattr__(self, k, tuple(sorted({1, *getattr(self, k)})))

    def described(self) -> list[str]:
        most = f" (at most {self.memory_max_bytes / 2**20:g} MiB)" if self.memory_max_bytes else ""
        return [f"S = {fmt_list(self.state_factor)}", f"C = {fmt_list(self.compute_factor)}",
                f"memory regime: working set ≥ {self.memory_cache_multiple:g}× the last-level cache{most} at "
                f"S = {max(self.state_factor)}, K = {fmt_list(self.memory_steps)}, C = 1, one timed repeat; "
                f"compute regime: N = {pow2_label(min(self.num_envs))}, S = {min(self.state_factor)}, each C, "
                f"K = 1 and {max(self.steps)}, one timed repeat"]


@dataclass(frozen=True, kw_only=True)
class BeyondParams(ChapterParams):
    peer_num_envs: Sizes  # N of the simulation-only peer comparison
    peer_steps: PositiveInt  # its K
    rollout_steps: PositiveInt  # K of the rollout comparison


@dataclass(frozen=True, kw_only=True)
class ChainParams(ChapterParams):
    """The n-link chain (studylib.sims.chain): the implementations whose records implement it, under
    each of ``policies`` (measured); a policy's rows saved by another run are read besides."""

    links: Sizes  # n, the chain's links
    policies: Names = ("none",)  # "none": the hashed controls (the paper's Fig 8/9); "mlp": the Gaussian MLP
    engines: Names = ()  # MuJoCo's engines on the chain's MJCF at every n (harness.robotics.engines.ENGINES)
    formulations: Names = ()  # XLA's formulations of the physics compared (sims.chain.dynamics_xla.FORMULATIONS)
    formulation_links: Sizes = ()  # the n they are compared at
    formulation_num_envs: PositiveInt = 256  # their N
    formulation_steps: PositiveInt = 100  # their K (environment steps under lax.scan)

    def check(self) -> None:
        super().check()
        from ..harness.robotics.engines import engine_record
        from ..settings import check_policy
        from ..sims.chain.dynamics_xla import FORMULATIONS
        from ..sims.chain.model import check_links

        check_links("links", self.links)
        check_links("formulation_links", self.formulation_links)
        for name in self.engines:
            engine_record(name)
        for name in self.policies:
            check_policy(name)
        for name in self.formulations:
            if name not in FORMULATIONS:
                raise ConfigError(f"unknown formulation {name!r}; valid: {', '.join(FORMULATIONS)}")

    def described(self) -> list[str]:
        return ([f"links n = {fmt_list(self.links)}", f"policies: {', '.join(self.policies)}"]
                + ([f"engines: {', '.join(self.engines)}"] if self.engines else []))


# The n a committed snapshot of the chain chapter may hold beyond the preset's plan (the chapter
# reads them where saved, never measures them): 1 to 8 the unrolled C builds, 16 and 32 the
# run-time-n build and the shorter timesteps
CHAIN_SNAPSHOT_LINKS = (1, 2, 4, 8, 16, 32)


@dataclass(frozen=True, kw_only=True)
class EnginesParams(ChapterParams):
    """The robotics engines (harness.robotics.engines) on MuJoCo models (harness.robotics.engine_models); ``impls``
    are ours, whose CartPole and chain rows the page sets beside them."""

    engines: Names  # robotics engines (harness.robotics.engines.ENGINES)
    models: Names  # MuJoCo models (harness.robotics.engine_models.MODELS)
    compiled_models: Names  # the models an engine that compiles (MJX) runs: each (model, N, K) a compile
    compiled_num_envs: Sizes | None = None  # its N (None: num_envs)
    compiled_policies: Names | None = None  # the policies it runs (None: policies; the MLP at the largest K only)
    policies: Names = ("none",)  # "none": open-loop controls (simulation only); "mlp": the study's MLP on the batch

    def check(self) -> None:
        super().check()
        from ..harness.robotics.engine_models import model_record
        from ..harness.robotics.engines import check_policy, engine_record

        for name in self.engines:
            engine_record(name)
        for name in (*self.models, *self.compiled_models):
            model_record(name)
        for name in (*self.policies, *(self.compiled_policies or ())):
            check_policy(name)

    def described(self) -> list[str]:
        n = fmt_list(self.compiled_num_envs) if self.compiled_num_envs else "the same N"
        pol = ", ".join(self.compiled_policies) if self.compiled_policies is not None else "the same policies"
        return [f"engines: {', '.join(self.engines)}", f"models: {', '.join(self.models)}",
                f"MJX on: {', '.join(self.compiled_models) or 'none'} at N = {n}, policies: {pol}",
                f"policies: {', '.join(self.policies)}"]


@dataclass(frozen=True, kw_only=True)
class AtariParams(ChapterParams):
    """K is 1: one agent step of all N environments per call."""

    games: Names  # ALE game ids
    async_num_envs: Sizes  # N of gymnasium's AsyncVectorEnv (one process each)
    breakdown_num_envs: Sizes  # N of the time breakdown (CNN policy)
    breakdown_seconds: PositiveFloat  # length of each breakdown's timed region


@dataclass(frozen=True, kw_only=True)
class ModelParams(ChapterParams):
    """The reader's GPU for the cost model's projection (published figures; None: none entered)."""

    gpu_flops_per_s: PositiveFloat | None = None  # peak FP32, flops/s
    gpu_bytes_per_s: PositiveFloat | None = None  # memory bandwidth, bytes/s


def machine_folders(data_dir=None) -> dict[str, Path]:
    """Every machine's folder (key -> path) in the data folder (``resolve_data_dir``) and in the
    repository's ``data/`` (the committed snapshots), the data folder's first where both have one:
    the machines a chapter can plot and the "Across machines" page shows."""
    from ..harness.data.store import LOCAL, machine_folder

    found = {}
    for root in dict.fromkeys((resolve_data_dir(data_dir), repo_root() / "data")):
        for name in sorted(p.name for p in root.glob("*/") if p.name != LOCAL) if root.is_dir() else ():
            folder = machine_folder(root, name)
            if name not in found and (folder / "machine.json").is_file():
                found[name] = folder
    return found


def machine_info_of(folder: Path) -> dict:
    """A machine folder's ``machine.json`` (the provenance of its latest run)."""
    import json

    return json.loads((Path(folder) / "machine.json").read_text())


def machine_facts(P: ChapterParams) -> dict:
    """The hardware of the machine whose data ``P`` reads: its snapshot's ``machine.json`` (the
    local copy where a build measured over a committed one), or this machine's identity
    (``provenance.machine_identity``: cores, cache, GPU, CPU)."""
    if P.machine is not None:
        from ..harness.data.store import machine_folder

        path = machine_folder(P.data_dir, P.machine) / "machine.json"
        return machine_info_of(path.parent) if path.exists() else {}
    from ..harness.data.provenance import machine_identity

    return machine_identity()



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
    from ..harness.data.provenance import machine_key

    if machine is None or machine == machine_key():
        return None, None, None
    folders = machine_folders(data_dir)
    if machine not in folders:
        raise ConfigError(f"no machine {machine!r} in the data folders; present: {', '.join(folders) or 'none'}")
    has_gpu = bool(machine_info_of(folders[machine]).get("gpu"))
    return machine, folders[machine].parent, [i for i in paper_impls() if has_gpu or not spec(i).gpu_only]
