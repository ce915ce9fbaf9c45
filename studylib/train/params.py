"""The training chapter's parameters (book/training.md): one frozen object, each field parsed from
its annotation when made (``harness.params``), from the preset's values (``harness.presets``,
chapter "training") and what the caller gives.

    P = TrainingParams.resolve("training", preset="tiny", seeds="[0, 1]")
    TrainingParams.resolve("training", seeds="abc")   # ConfigError, one line: nothing trains
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigError
from ..harness.params import Names, Ordered, PositiveFloat, PositiveInt, Seeds, TypedParams
from ..harness.presets import preset_values, resolve_data_dir, resolve_preset
from .settings import COLLECTORS, PEER_TRAINERS, PPOSettings, collector_spec


def _gpu_only_reason(collector: str) -> str | None:
    """Why ``collector`` cannot run here, or None: read from the record of the implementation it
    steps (``settings.collector_spec``; a GPU-only implementation needs a working CUDA device)."""
    from ..devices import cuda_available_for
    from ..implspec import spec

    impl = collector_spec(collector).impl
    if not spec(impl).gpu_only:
        return None
    ok, reason = cuda_available_for(impl)  # the record's own GPU probe
    return None if ok else reason


@dataclass(frozen=True, kw_only=True)
class TrainingParams(TypedParams):
    chapter: str = field(default="training", metadata={"given": False})
    preset: str
    data_dir: Path
    collectors: Names  # the PPO collectors run here (a GPU-only one only with a CUDA device)
    peers: Names
    seeds: Seeds  # single-seed runs (wall-clock to solve) of every trainer
    num_envs: PositiveInt  # N of the time-to-solve runs
    budget_s: PositiveFloat  # per run, the same for every trainer (peers included)
    population_collectors: Names  # trained as populations of the seeds below (those with one: jax, torch, ...)
    population_seeds: Seeds  # the seeds trained together in one program, per population collector
    population_budget_s: PositiveFloat  # a population's shared wall-clock budget
    sweep_num_envs: Ordered  # N of the bandwidth-vs-latency sweep, in the order run
    sweep_seeds: Seeds  # per N, one jax population
    sweep_budget_s: PositiveFloat
    settings: PPOSettings = field(default_factory=PPOSettings, metadata={"given": False})
    not_here: dict[str, str] = field(default_factory=dict, metadata={"given": False})  # collector -> why not here

    def check(self) -> None:
        for name, valid in (("collectors", COLLECTORS), ("peers", PEER_TRAINERS), ("population_collectors", COLLECTORS)):
            unknown = [c for c in getattr(self, name) if c not in valid]
            if unknown:
                raise ConfigError(f"parameter {name!r}: unknown trainer {unknown[0]!r}; valid: {', '.join(valid)}")
        if not self.seeds:
            raise ConfigError("parameter 'seeds' must name at least one seed")
        from . import has_population

        cannot = [c for c in self.population_collectors if not has_population(c)]
        if cannot:
            raise ConfigError(f"parameter 'population_collectors': {cannot[0]!r} cannot train seeds as one population "
                              "(its kernel draws every environment's streams from one seed per call)")

    def describe(self) -> str:
        from . import results

        s = self.settings
        return (f"preset **{self.preset}**; collectors {', '.join(self.collectors)}; peers {', '.join(self.peers)}; "
                f"{len(self.seeds)} single-seed runs each (seeds {self.seeds[0]}–{self.seeds[-1]}) at N = {self.num_envs}, "
                f"T = {s.num_steps}, budget {self.budget_s:g} s per run for every trainer; "
                + (f"a population of {len(self.population_seeds)} seeds in one program for each of "
                   f"{', '.join(f'`{c}`' for c in self.population_collectors)} (shared budget {self.population_budget_s:g} s); "
                   if self.population_seeds and self.population_collectors else "no population; ")
                + f"sweep N = {list(self.sweep_num_envs)}, {len(self.sweep_seeds)} `jax` seeds per N as one population "
                f"(shared budget {self.sweep_budget_s:g} s). Data: `{os.path.relpath(results.path_for(self.data_dir))}`.")

    @classmethod
    def resolve(cls, chapter: str = "training", *, preset=None, data_dir=None, **given) -> "TrainingParams":
        """The preset's values, overridden by those given (None: the preset's); a collector whose
        implementation cannot run here is dropped and listed in ``not_here`` with the reason."""
        unknown = set(given) - set(cls.parameters())
        if unknown:
            raise ConfigError(f"chapter {chapter!r} has no parameter {sorted(unknown)[0]!r}")
        name = resolve_preset(preset)
        settings = PPOSettings()
        values = {**preset_values(name, chapter), **{k: v for k, v in given.items() if v is not None}}
        values["num_envs"] = values.get("num_envs") or settings.num_envs
        P = cls(chapter=chapter, preset=name, data_dir=resolve_data_dir(data_dir), settings=settings, **values)
        not_here = {c: why for c in P.collectors if (why := _gpu_only_reason(c))}
        return cls(chapter=chapter, preset=name, data_dir=P.data_dir, settings=settings, not_here=not_here,
                   **{**values, "collectors": [c for c in P.collectors if c not in not_here]})
