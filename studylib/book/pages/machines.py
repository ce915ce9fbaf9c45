"""The "Across machines" page: every machine's snapshot, its provenance, and F.1–F.4 read from it.

    folders = book.presets.machine_folders()        # key -> folder: the data folder, then <repo>/data
    machines.provenance(folders)                     # one row per machine: hardware, versions, commits
    machines.findings_by_machine(folders)            # F.1–F.4 of each machine beside the paper's values
    machines.verdicts_by_machine(F)                  # each finding's verdict per machine, differences marked
    machines.chain_on_gpu(folders)                   # the chain's implementations on each GPU, side by side

Nothing here measures: every plan runs under ``sweep.READ_ONLY``. Each machine is read at the
preset its snapshot covers best (``best_preset``), so a folder measured with ``default`` and one
measured with ``paper`` are each shown with their own points.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...harness.data import identity, store
from ...harness.model import roofline
from ...harness.data.provenance import machine_key
from ...harness.data.semantics import staleness
from ...harness.sweep import READ_ONLY, session
from ...sims.chain.dynamics_xla import best_formulation
from ...sims.chain.model import ChainParams
from ..chapters import CHAPTERS, GPU_SCALE, findings
from ..claims.findings import verdict_text
from ..claims.paper import PAPER
from ..presets import PRESETS, machine_info_of
PRESET_ORDER = ("paper", "default", "tiny")  # largest first: a tie goes to the larger preset
DIFFERS, SAME, ONE_MACHINE = "differs", "same", "one machine only"  # verdicts_by_machine's ``differs``
PROVENANCE_COLUMNS = ["machine", "this build", "cpu", "vendor", "family/model", "isa", "cores", "llc", "gpu",
                      "fma ceiling", "memory ceiling", "os", "python", "torch", "jax", "cupy", "commits", "measured",
                      "points", "stale", "identity", "notes", "folder"]


def provenance(folders: dict) -> pd.DataFrame:
    """One row per machine folder: its hardware identity (``machine.json``, the latest run: vendor,
    family/model/stepping, ISA, cores, last-level cache, GPU), its measured ceilings, its software,
    the commits and dates of every run that measured its files, how many points it holds and how
    many of them are stale for today's code (``harness.data.semantics``: not shown by the chapters),
    whether its identity is whole (a folder named before it may merge different hardware), and the
    notes its runs carry (``provenance_note``: what was corrected or differs, said where it was)."""
    rows = []
    for key, folder in folders.items():
        info = machine_info_of(folder)
        runs, points, stale = [], 0, 0
        for path in sorted(folder.glob("*.json")):
            if path.name == "machine.json":
                continue
            doc = store.read(path)
            runs += [r.get("provenance") or {} for r in doc["runs"]]
            points += len(doc["rows"])
            stale += sum(bool(staleness(r)) for r in doc["rows"])
        commits = dict.fromkeys(f"{r['commit'][:10]}{' + local changes' if r.get('dirty') else ''}"
                                for r in runs if r.get("commit"))
        dates = sorted(r["date"][:10] for r in runs if r.get("date"))
        notes = dict.fromkeys(r["provenance_note"] for r in [*runs, info] if r.get("provenance_note"))
        packages = info.get("packages", {})
        whole = identity.is_complete(info)
        family = (f"{info['cpu_family']}/{info['cpu_model_number']} (stepping {info.get('cpu_stepping')})"
                  + (f", {info['cpu_microarchitecture']}" if info.get("cpu_microarchitecture") else "")
                  if whole else "not recorded")
        ceil = roofline.saved_ceilings(folder)
        rows.append([key, key == machine_key(), info.get("cpu_model"), info.get("cpu_vendor") or "not recorded", family,
                     info.get("isa") or "not recorded", info.get("cores"),
                     f"{info['llc_bytes'] / 2**20:.0f} MiB" if info.get("llc_bytes") else "unknown",
                     info.get("gpu") or "none",
                     f"{ceil['fma_flops_per_s'] / 1e9:.0f} GFLOP/s" if ceil["fma_flops_per_s"] else "not measured",
                     f"{ceil['memory_bytes_per_s'] / 1e9:.1f} GB/s" if ceil["memory_bytes_per_s"] else "not measured",
                     info.get("os"), info.get("python"), packages.get("torch"), packages.get("jax"),
                     packages.get("cupy"), ", ".join(commits) or "unknown",
                     f"{dates[0]} to {dates[-1]}" if dates else "unknown", points, stale,
                     "whole" if whole and identity.key(info) == key else
                     "incomplete: the folder may merge different hardware", " ".join(notes) or "none", str(folder)])
    return pd.DataFrame(rows, columns=PROVENANCE_COLUMNS)


def chapters_held(folder: Path) -> pd.DataFrame:
    """Which chapters' data files a machine folder holds: one row per chapter that reads files,
    with the files present and missing (a lent GPU measures what its lease allows)."""
    present = {p.stem for p in folder.glob("*.json")}
    rows = [[ch.name, [f for f in ch.files if f in present], [f for f in ch.files if f not in present]]
            for ch in CHAPTERS.values() if ch.files]
    return pd.DataFrame(rows, columns=["chapter", "present", "missing"])


def rows_per_file(folder: Path) -> dict[str, int]:
    """{data file: its saved rows} of one machine folder (machine.json apart)."""
    return {p.stem: len(store.read(p)["rows"]) for p in sorted(folder.glob("*.json")) if p.name != "machine.json"}


def coverage(key: str, folder: Path, preset: str) -> float:
    """The share of the F.1–F.4 sweeps' points at ``preset`` that the snapshot holds."""
    found = wanted = 0
    with session(engine=READ_ONLY):
        for ch in CHAPTERS.values():
            if not ch.findings:
                continue
            df = ch.plans[0](ch.params(preset=preset, data_dir=folder.parent, machine=key))  # the sweep F.x read
            found += len(df)
            wanted += len(df) + len(df.attrs.get("skipped", []))
    return found / wanted if wanted else 0.0


def best_preset(key: str, folder: Path) -> tuple[str, float]:
    """(preset, coverage): the preset whose F.1–F.4 points the snapshot holds the largest share of."""
    scores = [(coverage(key, folder, p), -i, p) for i, p in enumerate(PRESET_ORDER) if p in PRESETS]
    share, _, preset = max(scores)
    return preset, share


def _findings_of(key: str, folder: Path, preset: str) -> pd.DataFrame:
    """``book.findings`` of one machine's snapshot, measuring nothing."""
    with session(engine=READ_ONLY):
        return findings(preset=preset, data_dir=folder.parent, machine=key)


def findings_by_machine(folders: dict) -> pd.DataFrame:
    """F.1–F.4 of every machine: ``book.findings``' columns plus ``machine``, ``preset`` (the one
    its snapshot covers best), ``coverage`` and the numeric ``paper_value`` / ``ours_value``."""
    frames = []
    for key, folder in folders.items():
        preset, share = best_preset(key, folder)
        if share == 0:
            continue  # a folder without the chapters' sweeps (a custom sweep, say)
        F = _findings_of(key, folder, preset).copy()
        F.insert(0, "machine", key)
        F.insert(1, "preset", preset)
        F.insert(2, "coverage", share)
        frames.append(F)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def verdicts_by_machine(F: pd.DataFrame) -> pd.DataFrame:
    """Every finding's verdict on each machine side by side: one row per comparison of the paper's
    (``key``), one column per machine (``verdict (ours)``, borderline verdicts marked, "—" where
    that machine's snapshot has no data for it), and ``differs``: ``DIFFERS`` where the machines
    that measured it give different verdicts (a machine-specific result), ``SAME`` where they agree,
    ``ONE_MACHINE`` where only one measured it."""
    if F.empty:
        return pd.DataFrame(columns=["finding", "key", "claim", "differs"])
    cells = F.assign(cell=[f"{verdict_text(r)}: {r['ours']}" for r in F.to_dict("records")])
    table = cells.pivot_table(index=["finding", "key"], columns="machine", values="cell", aggfunc="first")
    verdicts = F.pivot_table(index=["finding", "key"], columns="machine", values="verdict", aggfunc="first")
    order = list(dict.fromkeys(F["machine"]))
    table = table.reindex(columns=order).fillna("—")
    table.columns = list(table.columns)
    out = table.reset_index()
    out.insert(2, "claim", [f"{PAPER[k].claim} ({PAPER[k].where})" for k in out["key"]])
    measured = [v.dropna() for _, v in verdicts.reindex(columns=order).iterrows()]
    out["differs"] = [DIFFERS if v.nunique() > 1 else SAME if len(v) > 1 else ONE_MACHINE for v in measured]
    first = {k: i for i, k in enumerate(dict.fromkeys(F["key"]))}
    return out.sort_values("key", key=lambda s: s.map(first)).reset_index(drop=True)


def ratios_to_paper(F: pd.DataFrame) -> pd.DataFrame:
    """``findings_by_machine``'s rows as the chart draws them: ``ratio`` = our value over the paper's
    (1 = the paper's number), ``claim`` (finding · where · the paper's number) and ``who`` (machine
    and preset); rows without a positive ratio (not measured) are left out. ``attrs["claims"]``: the
    claims in the findings' order."""
    if F.empty:
        return pd.DataFrame(columns=[*F.columns, "claim", "ratio", "who"])
    out = F.assign(claim=F["finding"] + " · " + F["paper source"] + " · paper " + F["paper"],
                   ratio=F["ours_value"] / F["paper_value"], who=F["machine"] + " (" + F["preset"] + ")")
    out = out[out["ratio"].notna() & (out["ratio"] > 0)].reset_index(drop=True)
    out.attrs["claims"] = list(dict.fromkeys(out.sort_values("finding", kind="stable")["claim"]))
    return out


# The sweep a GPU machine adds past the default preset's N (``chapters.GPU_SCALE``, its command
# there): the default preset stops at N = 2^18 (sized for 2 CPU cores), where a GPU keeps gaining.
SCALE_COLUMNS = ["machine", "impl", "device", "num_envs", "steps", "policy", "samples_per_s", "rel_spread"]


def gpu_scale(folders: dict) -> pd.DataFrame:
    """Every machine's ``gpu_scale`` rows (``SCALE_COLUMNS``), sorted by machine, impl, N and K; empty
    when no folder holds the sweep."""
    rows = [{**{c: r.get(c) for c in SCALE_COLUMNS}, "machine": key}
            for key, folder in folders.items() if (folder / f"{GPU_SCALE}.json").exists()
            for r in store.read(folder / f"{GPU_SCALE}.json")["rows"]]
    frame = pd.DataFrame(rows, columns=SCALE_COLUMNS)
    return frame.sort_values(["machine", "impl", "num_envs", "steps"], kind="stable").reset_index(drop=True)


# The chain on a GPU: the paper's §7 question ("how manual kernel fusion compares to the kernels
# produced by XLA" on robotics simulators) on the device itself: cuda (chain_kernel.cu, K environment
# steps per launch, the state in registers) against jax (XLA's program, K steps under lax.scan) and
# eager torch, all three on the GPU, without a policy (the hashed controls: every step on the device);
# cuda's rows with the MLP (the Gaussian policy in PyTorch between one-step launches) beside them.
CHAIN_GPU_IMPLS = ("cuda", "jax", "torch")
CHAIN_GPU_COLUMNS = ["machine", "links", "num_envs", "steps", *CHAIN_GPU_IMPLS, "cuda with the MLP",
                     "cuda / jax", "cuda / torch", "cuda K gain", "jax formulation"]


def chain_on_gpu(folders: dict) -> pd.DataFrame:
    """One row per (machine, n, N, K) of the chain rows that ran on a GPU (``CHAIN_GPU_COLUMNS``):
    each implementation's samples/s without a policy (NaN where not measured), cuda's with the MLP,
    cuda's ratios over jax and torch at that point, and cuda's gain from K = 1 to this K at the same
    n and N (1 at K = 1). Empty when no folder holds such rows."""
    rows = [{"machine": key, "links": r["links"], "num_envs": r["num_envs"], "steps": r["steps"],
             "impl": r["impl"] if r["policy"] == "none" else f"{r['impl']} with the MLP",
             "samples_per_s": r["samples_per_s"]}
            for key, folder in folders.items() if (folder / "chain.json").exists()
            for r in store.read(folder / "chain.json")["rows"]
            if r.get("device") == "cuda" and r["impl"] in CHAIN_GPU_IMPLS and r["policy"] in ("none", "mlp")]
    if not rows:
        return pd.DataFrame(columns=CHAIN_GPU_COLUMNS)
    index = ["machine", "links", "num_envs", "steps"]
    wide = (pd.DataFrame(rows).pivot_table(index=index, columns="impl", values="samples_per_s", aggfunc="median")
            .reindex(columns=[*CHAIN_GPU_IMPLS, "cuda with the MLP"]).reset_index().rename_axis(columns=None))
    wide["cuda / jax"] = wide["cuda"] / wide["jax"]
    wide["cuda / torch"] = wide["cuda"] / wide["torch"]
    at_k1 = wide[wide["steps"] == 1].set_index(index[:3])["cuda"]
    wide["cuda K gain"] = [c / at_k1.get((m, n, e), float("nan"))
                           for m, n, e, c in zip(wide["machine"], wide["links"], wide["num_envs"], wide["cuda"])]
    # the formulation jax steps at each n (dynamics_xla.best_formulation: chosen on a CPU)
    wide["jax formulation"] = [best_formulation(ChainParams(links=int(n))) for n in wide["links"]]
    return wide[CHAIN_GPU_COLUMNS].sort_values(index, kind="stable").reset_index(drop=True)


def _each(rows: pd.DataFrame, column: str) -> str:
    """min–max of ``column`` over the rows' n, then each n's value: never one point alone."""
    each = ", ".join(f"n = {n}: {v:.3g}×" for n, v in zip(rows["links"], rows[column]))
    return f"{rows[column].min():.3g}× to {rows[column].max():.3g}× ({each})"


def chain_gpu_summary(frame: pd.DataFrame) -> dict[str, str]:
    """Per machine (key -> one sentence): cuda over jax at the largest K both measured, at the largest
    N where both have it for the most n, over n for each formulation jax ran; and cuda's K gain at
    that N over every n."""
    lines = {}
    for key, rows in frame.dropna(subset=["cuda", "jax"]).groupby("machine", sort=True):
        k = rows["steps"].max()
        at_k = rows[rows["steps"] == k]
        counts = at_k.groupby("num_envs")["links"].nunique()
        n_envs = counts[counts == counts.max()].index.max()
        pick = at_k[at_k["num_envs"] == n_envs].sort_values("links")
        by_form = "; ".join(f"against jax's `{f}` formulation, {_each(part, 'cuda / jax')}"
                            for f, part in pick.groupby("jax formulation", sort=False))
        gain = frame[(frame["machine"] == key) & (frame["num_envs"] == n_envs) & (frame["steps"] == k)]
        lines[key] = (f"N = {n_envs:,}, K = {k}: cuda runs the chain {by_form}. cuda's gain from K = 1 to "
                      f"K = {k} there: {_each(gain.dropna(subset=['cuda K gain']), 'cuda K gain')}.")
    return lines
