"""The book's chapters, one frozen record each (``CHAPTERS``, in the table of contents' order): the
one list that the plans (``python -m studylib measure``), the data files each page names, the
findings, the presets table (book/methodology.md) and ``python -m studylib.book rerun`` read.

    ch = CHAPTERS["complexity"]
    P = ch.params(preset="tiny", state_factor="[1, 64]")   # its frozen ComplexityParams, checked when made
    ch.plans                                                # (complexity_data,): what a build measures
    ch.files                                                # ("fig9",): the data files it reads
    ch.findings(P)                                          # its F.4 records (book.claims)
    ch.presets                                              # {preset: its values} (harness.presets.PRESETS)
    book.params("complexity", preset="tiny")                # the same as ch.params(...)
    book.findings(preset="default")                         # every chapter's findings, one table
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pandas as pd

from ..errors import ConfigError
from ..harness.presets import PRESETS
from ..train.chain.params import RobotParams
from ..train.params import TrainingParams
from .pages.brax import brax_data
from .claims.findings import (Finding, complexity_findings, findings_frame, fusion_findings, overheads_findings,
                              vectorization_findings)
from .pages.model import model_calibration
from .plans import (atari_breakdown_data, atari_data, beyond_data, cartpole_fig2_data, complexity_data, fusion_data,
                    overheads_data, profile_data, roofline_data, vectorization_data)
from .presets import (AtariParams, BeyondParams, CartpoleParams, ChainParams, ComplexityParams, EnginesParams,
                      FusionParams, ModelParams, OverheadsParams, PageParams, VectorizationParams)


@dataclass(frozen=True)
class Chapter:
    """One page of the book (``book/<name>.md``)."""

    name: str
    params_type: type  # its frozen parameters; ``params_type.resolve(name, **given)`` makes them
    plans: tuple[Callable, ...] = ()  # P -> its measurements (measure or read); the first is its main sweep
    files: tuple[str, ...] = ()  # the data files its plans write (<data_dir>/<machine>/<file>.json)
    findings: Callable[..., list[Finding]] | None = None  # P -> its rows of F.1–F.4 (book.claims)

    @property
    def presets(self) -> dict[str, dict]:
        """{preset: this chapter's values} ({} for a page the presets do not size)."""
        return {name: dict(table[self.name]) for name, table in PRESETS.items() if self.name in table}

    def params(self, **given):
        """Its parameters at the preset given (``$STUDYLIB_PRESET``), the values given overriding
        the preset's; ConfigError (one line) for an unknown name or a value of the wrong type."""
        return self.params_type.resolve(self.name, **given)


def _training_runs(P: TrainingParams):
    """The training chapter's runs, trained or read (imported when called: ``train.chapter`` loads
    SciPy, which no other chapter needs)."""
    from ..train import chapter

    return chapter.solve_runs(P), chapter.population_runs(P), chapter.sweep_runs(P)


def _robot_runs(P: RobotParams):
    """The robot chapter's runs, trained or read (train.chain.chapter)."""
    from ..train.chain import chapter

    return chapter.runs(P)


def _chain_data(P: ChainParams):
    """The chain chapter's predictions, then its measurements (book.pages.chain)."""
    from .pages.chain import chain_data

    return chain_data(P)


def _chain_engine_data(P: ChainParams):
    """MuJoCo's engines on the chain at every n (book.pages.chain)."""
    from .pages.chain import chain_engine_data

    return chain_engine_data(P)


def _chain_formulation_data(P: ChainParams):
    """XLA's formulations of the chain (book.pages.chain)."""
    from .pages.chain import formulation_data

    return formulation_data(P)


def _engine_data(P: EnginesParams):
    """The robotics engines' rows (book.pages.engines)."""
    from .pages.engines import engine_data

    return engine_data(P)


# The sweep a GPU machine adds past the default preset's N (``machines.gpu_scale`` reads it):
#   python -m studylib sweep gpu_scale --impl cuda,jax,torch,fused --num-envs 2^16,2^20,2^22,2^24 --steps 1,1000 --policy mlp
GPU_SCALE = "gpu_scale"

CHAPTERS: dict[str, Chapter] = {ch.name: ch for ch in (
    Chapter("intro", PageParams),
    Chapter("cartpole", CartpoleParams, (cartpole_fig2_data, brax_data), ("fig2_cartpole", "fig2_brax")),
    Chapter("vectorization", VectorizationParams, (vectorization_data,), ("fig4",), vectorization_findings),
    Chapter("overheads", OverheadsParams, (overheads_data, profile_data), ("fig4_k", "fig56_profile"),
            overheads_findings),
    Chapter("fusion", FusionParams, (fusion_data,), ("fig8",), fusion_findings),
    Chapter("complexity", ComplexityParams, (complexity_data, roofline_data), ("fig9", "beyond_roofline"),
            complexity_findings),
    Chapter("beyond", BeyondParams, (beyond_data, roofline_data), ("beyond", "beyond_roofline")),
    Chapter("chain", ChainParams, (_chain_data, _chain_engine_data, _chain_formulation_data),
            ("chain_predictions", "chain", "chain_engines", "chain_formulations")),
    Chapter("engines", EnginesParams, (_engine_data,), ("engine_predictions", "engines")),
    Chapter("atari", AtariParams, (atari_data, atari_breakdown_data), ("atari", "atari_breakdown")),
    Chapter("model", ModelParams, (model_calibration,), ("costmodel_calibration", "beyond_roofline")),
    Chapter("training", TrainingParams, (_training_runs,), ("training",)),
    Chapter("robot", RobotParams, (_robot_runs,), ("training_robot",)),
    Chapter("machines", PageParams, (), (GPU_SCALE,)),  # reads every machine folder; measures nothing
    Chapter("methodology", PageParams),
)}


# The book's pages that are not chapters: plain MyST Markdown (no kernel, no parameters), executed
# and measured by nothing; the table of contents places them among the chapters. "Using studylib"
# is the library's reference (its snippets run in tests/test_using_page.py).
REFERENCE_PAGES: tuple[str, ...] = ("using",)


def chapter(name: str) -> Chapter:
    if name not in CHAPTERS:
        raise ConfigError(f"unknown chapter {name!r}; chapters: {', '.join(CHAPTERS)}")
    return CHAPTERS[name]


def params(name: str, **given):
    """Chapter ``name``'s parameters (``Chapter.params``) as its page asks for them: another machine's
    snapshot that holds none of the chapter's files is refused in one line (the page would have
    nothing to plot; a GPU machine's snapshot holds the sweeps its lease fitted, not a whole build)."""
    from .presets import machine_folders

    ch = chapter(name)
    P = ch.params(**given)
    # its own files: a file another chapter writes too (beyond_roofline.json) does not make the chapter
    own = [f for f in ch.files if not any(f in other.files for other in CHAPTERS.values() if other is not ch)]
    folder = machine_folders(P.data_dir).get(P.machine) if own and P.machine is not None else None
    if folder is not None and not any((folder / f"{f}.json").exists() for f in own):
        raise ConfigError(f"machine {P.machine!r} holds none of the {name} chapter's files "
                          f"({', '.join(f + '.json' for f in own)}): its snapshot did not measure this chapter "
                          "(\"Across machines\" lists what each snapshot holds)")
    return P


def measured_chapters() -> list[Chapter]:
    """The chapters that measure (or train) something: what a book build runs."""
    return [ch for ch in CHAPTERS.values() if ch.plans]


def finding_records(preset=None, data_dir=None, machine=None) -> list[Finding]:
    """F.1–F.4 of one machine (``machine``: a folder under the data folder; None: this one, whose
    missing points are measured, resuming), as records: every chapter's ``findings``, in order."""
    from ..harness.data.provenance import machine_key

    kw = {} if machine in (None, machine_key()) else {"machine": machine}
    return [r for ch in CHAPTERS.values() if ch.findings
            for r in ch.findings(ch.params(preset=preset, data_dir=data_dir, **kw))]


def findings(preset=None, data_dir=None, machine=None) -> pd.DataFrame:
    """F.1–F.4 of one machine as a frame of ``claims.COLUMNS`` (``finding_records``, tabulated)."""
    return findings_frame(finding_records(preset=preset, data_dir=data_dir, machine=machine))
