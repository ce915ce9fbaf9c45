"""What the Jupyter Book's chapters share, one module per job, in three rooms:

``chapters``  the chapters, one record each (``CHAPTERS``): parameters, plans, data files, findings;
              ``params(chapter, ...)`` -> that chapter's frozen parameters
``presets``   each chapter's typed parameters (``ChapterParams`` and one subclass per chapter); the
              presets' values are ``harness.presets.PRESETS``
``plans``     what each chapter measures, through ``harness.sweep`` into data/<machine>/
``format``    numbers, Markdown and HTML tables;  ``notes``: the admonitions atop each chapter
``answers``   each chapter's first paragraph: a finding's number beside the paper's, with its verdict
``rerun``     ``python -m studylib.book rerun <chapter> -p NAME VALUE`` (papermill, then rebuild)

``claims/``   the findings: the paper's values (``paper``), the rules that give a verdict against
              them (``analysis``), F.1–F.4 as records (``base``: ``Finding``; ``f1`` to ``f4``), the
              chain's and the engines' (``chain``, ``engines``), and the findings table (``findings``)
``pages/``    each chapter's data, tables and sentences: ``overview`` (the introduction's answer: every
              chapter's verdicts in one table, the paper's Fig 2 claim against the engines'
              measurements), ``comparisons`` (those verdicts and that claim in words), ``cartpole``,
              ``brax``, ``vectorization``, ``overheads``, ``fusion``, ``complexity``, ``beyond``, ``chain``,
              ``engines``, ``atari``, ``model``, ``machines``
``figures/``  Altair helpers (``charts``) and side views of MuJoCo models drawn from their geoms
              (``model_pictures``: the chain's and the robotics models' pictures; no renderer)

Each chapter (``book/*.md``) has a ``parameters`` cell (papermill overrides it) and then calls

    P = book.params("vectorization", preset=preset, num_envs=num_envs, ...)
    df = book.vectorization_data(P)          # resumes from <data_dir>/<machine>/fig4.json

so a rerun on the same machine reads the saved points, and the introduction's findings table
computes the same numbers from the same files (``book.findings``).
"""

from __future__ import annotations

import atexit
import gc
import sys
import warnings


def _kernel_exits_without_collecting() -> None:
    """In a chapter's kernel (IPython), freeze the garbage collector's heap at exit: the final
    collections then skip every torch/jax/pandas object the chapter made (about 1.1 s of a training
    chapter's 1.3 s kernel shutdown on 2 cores). Nothing at a kernel's exit needs them collected:
    Python promises no finalizers then, and every data file is written and closed as its row is
    saved. A script that imports studylib.book outside IPython is left as it is."""
    ipython = sys.modules.get("IPython")
    if ipython is not None and ipython.get_ipython() is not None:
        atexit.register(gc.freeze)


_kernel_exits_without_collecting()

try:  # tqdm.auto warns in kernels without ipywidgets; the book shows no progress bars anyway
    from tqdm import TqdmWarning

    warnings.filterwarnings("ignore", category=TqdmWarning)
except ImportError:  # pragma: no cover
    pass

from .claims.analysis import (BORDERLINE, RULES, VERDICTS, fusion_speedups, judge, k_speedup, k_speedup_spread,
                              plateau_n, seconds_per_call, spread, trend, trend_direction, verdict)
from .pages.brax import CARTPOLE as BRAX_CARTPOLE, brax_available, brax_data, brax_gap
from .figures.charts import (IMPL_COLORS, POW2_LABEL, finish, impl_color, impl_scale, line_points, paper_rules,
                             tooltip, x_n, y_rate)
from .chapters import CHAPTERS, Chapter, finding_records, findings, params
from .claims.findings import (Finding, cache_multiple, complexity_rows, fig6_pattern, findings_frame, findings_md,
                              fusion_grid, fusion_rows, memory_traffic, memory_regime_table, on_gpu,
                              overheads_rows, vectorization_rows, verdict_counts, verdict_text)
from .format import fmt_bytes, fmt_list, fmt_rate, fmt_time, fmt_x, fmt_x_range, md, pow2_label, table
from .notes import coverage_note, machine_note, params_note, provenance_sentence
from .claims.paper import PAPER, PAPER_GPU, PaperValue
from .plans import (atari_breakdown_data, atari_data, beyond_data, cartpole_fig2_data, complexity_data, fusion_data,
                    fusion_impl, overheads_data, profile_data, roofline_data, vectorization_data)
from .presets import (IMPL_ORDER, PRESETS, ChapterParams, available_impls, display_path, machine_facts,
                      resolve_data_dir, resolve_preset)

__all__ = [
    "BORDERLINE", "BRAX_CARTPOLE", "CHAPTERS", "Chapter", "IMPL_COLORS", "IMPL_ORDER", "PAPER", "PAPER_GPU", "POW2_LABEL",
    "PRESETS", "RULES", "VERDICTS", "ChapterParams", "Finding", "PaperValue", "atari_breakdown_data", "atari_data",
    "available_impls", "beyond_data", "cache_multiple", "brax_available", "brax_data", "brax_gap", "cartpole_fig2_data",
    "machine_facts",
    "fig6_pattern", "finding_records", "findings_frame", "fusion_grid", "memory_traffic", "judge", "k_speedup_spread", "verdict_text",
    "complexity_data", "complexity_rows", "coverage_note", "display_path", "findings", "findings_md", "finish",
    "fmt_bytes", "fmt_list", "fmt_rate", "fmt_time", "fmt_x", "fmt_x_range", "fusion_data", "fusion_impl", "fusion_rows",
    "fusion_speedups", "impl_color", "impl_scale", "k_speedup", "line_points", "machine_note", "md", "memory_regime_table", "on_gpu",
    "overheads_data", "overheads_rows", "paper_rules", "params", "params_note", "plateau_n", "pow2_label",
    "profile_data", "provenance_sentence", "resolve_data_dir", "resolve_preset", "roofline_data", "seconds_per_call", "spread", "table",
    "tooltip", "trend", "trend_direction", "vectorization_data", "vectorization_rows", "verdict", "verdict_counts", "x_n", "y_rate",
]
