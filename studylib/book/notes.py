"""The admonitions at the top of every chapter: which machine built it, with which parameters."""

from __future__ import annotations

from .format import md
from .presets import ChapterParams, cuda_ok


def machine_note(chapter_uses_fusion: bool = True):
    """The admonition every chapter shows: which machine built it and what stands in for what."""
    from ..harness.provenance import machine_info

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


def params_note(P: ChapterParams):
    return md(f":::{{admonition}} Parameters of this run\n:class: tip\n{P.describe()}\n"
              f"Rerun with other values: see [Reproducing](methodology.md#rerun-one-chapter-with-new-parameters).\n:::\n")
