"""What every chapter states about its run: which machine built it, with which parameters, and
which points of its grid were not measured (above the work cap, or unable to run here)."""

from __future__ import annotations

from pathlib import Path

from .format import md
from .presets import ChapterParams, cuda_ok


def cuda_sentence(ok: bool, reason: str) -> str:
    """The CUDA status as one sentence for a reader (the raw driver error stays out of the page)."""
    if ok:
        return f"CUDA device: {reason}."
    reason = reason.lower()
    if "not importable" in reason or "not installed" in reason:
        why = "CuPy, through which the `cuda` implementation reaches a GPU, is not installed"
    elif "driver" in reason:
        why = "CuPy is installed but finds no NVIDIA driver able to run CUDA on this machine"
    elif "0 devices" in reason or "no device" in reason or "nodevice" in reason:
        why = "the CUDA runtime reports no GPU on this machine"
    else:
        why = "CuPy cannot reach a GPU on this machine"
    return f"No CUDA device here: {why}."


def machine_note(chapter_uses_fusion: bool = True):
    """The admonition every chapter shows: which machine built it and what stands in for what."""
    from ..harness.data.provenance import host_info

    info = host_info()
    ok, reason = cuda_ok()
    gpu = info.get("gpu") or "none"
    lines = [f"This page was built on **{info['cpu_model']}, {info['cores']} cores, GPU: {gpu}** "
             f"(Python {info['python']}, torch {info['packages'].get('torch')}, jax {info['packages'].get('jax')}) "
             f"by commit `{(info.get('commit') or 'unknown')[:10]}`{' + local changes' if info.get('dirty') else ''}. "
             "The paper used an NVIDIA 2080Ti GPU and an AMD EPYC 7371 CPU."]
    if not ok:
        lines.append(cuda_sentence(ok, reason) + (
            " **The `cuda` rows are absent**, torch and jax run on the CPU, and **`cpp` — the CPU build of the same "
            "kernel source, running K steps per call — stands in for kernel fusion**." if chapter_uses_fusion else
            " **The `cuda` rows are absent** and torch and jax run on the CPU."))
    body = "\n\n".join(lines)
    return md(f":::{{admonition}} Hardware of this build\n:class: {'warning' if not ok else 'note'}\n{body}\n:::\n")


def measured_by(folder: Path, names) -> dict[str, dict]:
    """Who measured the current rows (stale ones left out: ``harness.data.semantics``) of the data files
    ``names`` in machine folder ``folder``: commit (10 characters in backticks, "+ local changes"
    when dirty) -> {"rows": count, "dates": sorted dates, "files": names}, from each row's run and
    that run's ``provenance.commit``."""
    import json

    from ..harness.data.semantics import staleness

    found: dict[str, dict] = {}
    for name in names:
        path = Path(folder) / f"{name}.json"
        if not path.is_file():
            continue
        data = json.loads(path.read_text())
        runs = {r.get("run_id"): r.get("provenance", {}) for r in data.get("runs", [])}
        for row in data.get("rows", []):
            if staleness(row):
                continue
            prov = runs.get(row.get("run_id"), {})
            commit = f"`{(prov.get('commit') or 'unknown')[:10]}`" + (" + local changes" if prov.get("dirty") else "")
            entry = found.setdefault(commit, {"rows": 0, "dates": set(), "files": set()})
            entry["rows"] += 1
            entry["files"].add(name)
            if prov.get("date"):
                entry["dates"].add(prov["date"][:10])
    return {c: {**e, "dates": sorted(e["dates"]), "files": sorted(e["files"])} for c, e in found.items()}


def provenance_sentence(chapter: str, data_dir: Path, machine: str | None = None) -> str:
    """Which commit measured this page's data, beside the commit building it."""
    from ..harness.data.provenance import host_info, machine_key
    from ..harness.data.store import is_local_copy, machine_folder

    info = host_info()
    built = f"`{(info.get('commit') or 'unknown')[:10]}`" + (" + local changes" if info.get("dirty") else "")
    key = machine or machine_key()
    folder = machine_folder(data_dir, key)
    where = (f" The committed snapshot `{key}/` is left as committed: this page shows its local copy "
             f"`{folder}` (not tracked by git), where the points measured over it are saved."
             if is_local_copy(folder) else "")
    from .chapters import CHAPTERS

    names = CHAPTERS[chapter].files if chapter in CHAPTERS else ()
    found = measured_by(folder, names)
    files = ", ".join(f"`{n}.json`" for n in names)
    if not found:
        return (f"Data: none saved yet in {files}: this build (commit {built}) measures it." if not machine else
                f"Data: no saved rows in {files} of machine {machine}.") + where
    parts = [f"{c} ({e['rows']} point{'s' if e['rows'] != 1 else ''}, {', '.join(e['dates']) or 'undated'})"
             for c, e in sorted(found.items(), key=lambda kv: -kv[1]["rows"])]
    tail = "" if machine else " Points not saved there, or saved by code of other semantics, are measured by this build."
    return (f"Data measured by commit{'s' if len(parts) > 1 else ''} {'; '.join(parts)} (saved in {files}); "
            f"page built by commit {built}.{tail}{where}")


def params_note(P: ChapterParams):
    return md(f":::{{admonition}} Parameters of this run\n:class: tip\n{P.describe()}\n\n"
              f"{provenance_sentence(P.chapter, P.data_dir, P.machine)}\n\n"
              f"Rerun with other values: see [Reproducing](methodology.md#rerun-one-chapter-with-new-parameters).\n:::\n")


def reuse_sentence(*frames) -> str:
    """How this build got the frames' rows: read as saved, or measured now (and why a saved row was
    not reused: measured by code of other semantics, ``harness.data.semantics``); "" without the counts."""
    if not frames or not all("reused" in df.attrs for df in frames):
        return ""
    reused = sum(df.attrs["reused"] for df in frames)
    new = sum(df.attrs.get("measured", 0) for df in frames)
    stale = [why for df in frames for why in df.attrs.get("stale", [])]
    text = f"This build read {reused} of them as saved and measured {new}"
    if stale:
        text += (f"; {len(stale)} saved row{'s were' if len(stale) != 1 else ' was'} not reused, being stale "
                 f"({'; '.join(dict.fromkeys(stale))})")
    return text + "."


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
    reuse = reuse_sentence(*frames)
    if reuse:
        text.append(reuse)
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
