"""The robot chapter's parameters (book/robot.md): one frozen object, each field parsed from its
annotation when made (``harness.params``), from the preset's values (``harness.presets``, chapter
"robot") and what the caller gives.

    P = RobotParams.resolve("robot", preset="tiny", seeds="{'jax': 2, '*': 1}")
    P.runs()                                  # every ChainRun of the plan, in the order trained
    RobotParams.resolve("robot", links="x")   # ConfigError, one line: nothing trains
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import ConfigError
from ...harness.params import Caps, Names, PositiveFloat, Sizes, TypedParams
from ...harness.presets import preset_values, resolve_data_dir, resolve_preset
from .settings import CHAIN_TRAINERS, ChainPPOSettings, ChainRun, trains


@dataclass(frozen=True, kw_only=True)
class RobotParams(TypedParams):
    chapter: str = field(default="robot", metadata={"given": False})
    preset: str
    data_dir: Path
    collectors: Names  # the chain's trainers: "jax" (fully jitted PPO) or the PyTorch PPO's collector
    links: Sizes  # n, the chain's links (2: InvertedDoublePendulum-v5's model)
    seeds: Caps  # collector (or "*": any other) -> how many seeds (0, 1, ...) it trains, one run each
    budget_s: PositiveFloat  # per run, the same for every trainer (compilation and the judge apart)
    settings: ChainPPOSettings = field(default_factory=ChainPPOSettings, metadata={"given": False})

    def check(self) -> None:
        from ...sims.chain.model import check_links

        check_links("links", self.links)
        unknown = [c for c in self.collectors if c not in CHAIN_TRAINERS]
        if unknown:
            raise ConfigError(f"parameter 'collectors': unknown trainer {unknown[0]!r}; valid: {', '.join(CHAIN_TRAINERS)}")
        if not self.collectors:
            raise ConfigError("parameter 'collectors' must name at least one trainer")
        stray = [c for c in self.seeds if c != "*" and c not in self.collectors]
        if stray:
            raise ConfigError(f"parameter 'seeds' names {stray[0]!r}, which is not among the collectors")
        missing = [c for c in self.collectors if self.seed_count(c) == 0]
        if missing:
            raise ConfigError(f"parameter 'seeds' gives no seed count for {missing[0]!r} (and no '*')")

    def seed_count(self, collector: str) -> int:
        return int(self.seeds.get(collector, self.seeds.get("*", 0)))

    def run_settings(self, links: int) -> ChainPPOSettings:
        return self.settings.replace(links=links, max_seconds=self.budget_s)

    def runs(self) -> list[ChainRun]:
        """The plan: for each n, each collector's seeds, one run each (n, then collector, then seed);
        a peer only at the n it has a task for."""
        return [ChainRun(c, seed=k, settings=self.run_settings(n), max_seconds=self.budget_s)
                for n in self.links for c in self.collectors if trains(c, n) for k in range(self.seed_count(c))]

    def describe(self) -> str:
        from . import results

        each = ", ".join(f"`{c}` × {self.seed_count(c)}" for c in self.collectors)
        return (f"preset **{self.preset}**; links n = {', '.join(map(str, self.links))}; seeds per trainer: {each}; "
                f"budget {self.budget_s:g} s per run for every trainer. "
                f"Data: `{os.path.relpath(results.path_for(self.data_dir))}`.")

    @classmethod
    def resolve(cls, chapter: str = "robot", *, preset=None, data_dir=None, **given) -> RobotParams:
        """The preset's values, overridden by those given (None: the preset's)."""
        unknown = set(given) - set(cls.parameters())
        if unknown:
            raise ConfigError(f"chapter {chapter!r} has no parameter {min(unknown)!r}")
        name = resolve_preset(preset)
        values = {**preset_values(name, chapter), **{k: v for k, v in given.items() if v is not None}}
        return cls(chapter=chapter, preset=name, data_dir=resolve_data_dir(data_dir), **values)
