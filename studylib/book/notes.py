"""What every chapter states about its run: which machine built it, with which parameters, and
which points of its grid were not measured (above the work cap, or unable to run here)."""

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


SHORT_REGION = 0.5  # a timed region shorter than this fraction of min_seconds: calibration was disturbed


def coverage_note(*frames) -> str:
    """One sentence per frame property: how many points were measured, how many the preset's work cap
    dropped (with examples) and how many could not run here (with the reasons). Every chapter
    that measures prints it under its data."""
    from .format import pow2_label

    measured = sum(len(df) for df in frames)
    dropped = [d for df in frames for d in df.attrs.get("dropped", [])]
    skipped = [s for df in frames for s in df.attrs.get("skipped", [])]

    def points(n):
        return f"{n} point{'s' if n != 1 else ''}"

    def point(i, n, k, s, c):
        return f"{i} N = {pow2_label(n)} K = {k}" + (f" S = {s}" if s > 1 else "") + (f" C = {c}" if c > 1 else "")

    text = [f"{points(measured)} measured."]
    if dropped:
        text.append(f"{points(len(dropped))} above this preset's work cap (N·K·S·C per call), not measured "
                    f"(e.g. {', '.join(point(*d) for d in dropped[:3])}).")
    else:
        text.append("No point was above the work cap.")
    if skipped:
        reasons = list(dict.fromkeys(s["reason"] for s in skipped))
        text.append(f"{points(len(skipped))} could not run here: {'; '.join(reasons[:3])}.")
    short = sum(int((df["seconds_per_repeat"] < SHORT_REGION * df["min_seconds"]).sum()) for df in frames
                if {"seconds_per_repeat", "min_seconds"} <= set(df.columns))
    if short:
        text.append(f"{points(short)} timed over regions shorter than {SHORT_REGION:.0%} of their minimum length "
                    "(a slow calibration region, as when the machine is busy, ends calibration early): "
                    "their throughput is less reliable.")
    return " ".join(text)
