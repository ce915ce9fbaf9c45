"""What the Jupyter Book's chapters share, one module per job:

``paper``     the paper's reported values (``PAPER``)
``presets``   presets and each chapter's typed parameters (``params`` -> ``ChapterParams``)
``plans``     what each chapter measures, through ``harness.sweep`` into data/<machine>/
``brax``      Fig 2's Brax timings
``analysis``  plateaus, speedups, verdicts and the introduction's findings table
``charts``    Altair helpers
``format``    numbers, Markdown and HTML tables;  ``notes``: the admonitions atop each chapter
``rerun``     ``python -m studylib.book rerun <chapter> -p NAME VALUE`` (papermill, then rebuild)

Each chapter (``book/*.md``) has a ``parameters`` cell (papermill overrides it) and then calls

    P = book.params("vectorization", preset=preset, num_envs=num_envs, ...)
    df = book.vectorization_data(P)          # resumes from <data_dir>/<machine>/fig4.json

so a rerun on the same machine reads the saved points, and the introduction's findings table
computes the same numbers from the same files (``book.findings``).
"""

from __future__ import annotations

import warnings

try:  # tqdm.auto warns in kernels without ipywidgets; the book shows no progress bars anyway
    from tqdm import TqdmWarning

    warnings.filterwarnings("ignore", category=TqdmWarning)
except ImportError:  # pragma: no cover
    pass

from .analysis import findings, fusion_speedups, k_speedup, plateau_n, verdict
from .brax import brax_available, brax_data
from .charts import POW2_LABEL, finish, impl_color, line_points, paper_rules, tooltip, x_n, y_rate
from .format import fmt_list, fmt_rate, fmt_x, md, pow2_label, table
from .notes import machine_note, params_note
from .paper import PAPER, PaperValue
from .plans import (beyond_data, cartpole_fig2_data, complexity_data, fusion_data, fusion_impl, overheads_data,
                    profile_data, roofline_data, vectorization_data)
from .presets import (CHAPTERS, IMPL_ORDER, PRESETS, ChapterParams, available_impls, display_path, params,
                      resolve_data_dir, resolve_preset)

__all__ = [
    "CHAPTERS", "IMPL_ORDER", "PAPER", "POW2_LABEL", "PRESETS", "ChapterParams", "PaperValue", "available_impls",
    "beyond_data", "brax_available", "brax_data", "cartpole_fig2_data", "complexity_data", "display_path",
    "findings", "finish", "fmt_list", "fmt_rate", "fmt_x", "fusion_data", "fusion_impl", "fusion_speedups",
    "impl_color", "k_speedup", "line_points", "machine_note", "md", "overheads_data", "paper_rules", "params",
    "params_note", "plateau_n", "pow2_label", "profile_data", "resolve_data_dir", "resolve_preset",
    "roofline_data", "table", "tooltip", "vectorization_data", "verdict", "x_n", "y_rate",
]
