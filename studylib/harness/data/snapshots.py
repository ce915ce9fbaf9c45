"""The machine snapshots under a data folder and whether today's code can reuse them.

    python -m studylib data check [--data-dir DIR]     # one line per snapshot (cli.data); exit 1 if one is stale

A snapshot (``<data_dir>/<key>/``) is *current* when its ``machine.json`` records the whole
identity (``harness.data.identity``: vendor, family/model, ISA, cores, cache, GPU) and its folder is
that identity's key, and every row of its data files was measured by code of today's semantics
(``harness.data.semantics``). A stale snapshot is not wrong data: it is data today's code would not
reuse, so a build on its machine measures those rows again, and the book does not show them.
Reads only; measures and writes nothing.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from . import identity
from .semantics import staleness
from .store import LOCAL, DataDirError, is_tracked, machine_folder, read


@dataclass(frozen=True)
class Snapshot:
    """One machine folder as ``data check`` reports it."""

    key: str  # the folder's name
    folder: Path  # <data_dir>/<key>: the snapshot itself (committed or not), never its local copy
    committed: bool  # git tracks the folder under its key
    local_copy: Path | None  # where a build measured over it (store.machine_folder), if one did
    info: dict  # machine.json
    rows: int  # rows in its data files
    stale: dict = field(default_factory=dict)  # file name -> {reason: rows}
    commits: tuple = ()  # commits (10 characters) of the runs that measured its rows
    dates: tuple = ()  # first and last date of those runs

    @property
    def identity_problem(self) -> str:
        """Why the folder's identity cannot be trusted ("" when it can)."""
        if not identity.is_complete(self.info):
            return ("identity incomplete (recorded before vendor, family/model and ISA were): the folder may merge "
                    "different hardware")
        expected = identity.key(self.info)
        return "" if expected == self.key else f"its identity's key is {expected}, not the folder's name"

    @property
    def stale_rows(self) -> int:
        return sum(sum(reasons.values()) for reasons in self.stale.values())

    @property
    def current(self) -> bool:
        return not self.identity_problem and not self.stale_rows

    def line(self) -> str:
        """One line: key, state, machine, commits and dates, and what is stale with why."""
        i = self.info
        cpu = ", ".join(str(x) for x in (
            i.get("cpu_model"), i.get("cpu_microarchitecture"),
            f"family {i['cpu_family']} model {i['cpu_model_number']} stepping {i.get('cpu_stepping')}"
            if identity.is_complete(i) else None, i.get("isa"), f"{i.get('cores')} cores",
            f"LLC {i['llc_bytes'] / 2**20:.0f} MiB" if i.get("llc_bytes") else None, f"GPU {i.get('gpu') or 'none'}")
            if x)
        where = ("committed" if self.committed else "not committed") + (
            f"; the builds here read its local copy {self.local_copy}, not checked" if self.local_copy else "")
        when = f"{self.dates[0]} to {self.dates[-1]}" if self.dates else "undated"
        head = (f"{self.key}: {'current' if self.current else 'STALE'} ({where}); {cpu}; commits "
                f"{', '.join(self.commits) or 'unknown'}; {when}; {self.rows} rows")
        problems = [self.identity_problem] if self.identity_problem else []
        if self.stale:
            reasons = Counter()
            for by_reason in self.stale.values():
                reasons.update(by_reason)
            problems.append(f"{self.stale_rows} of {self.rows} rows stale (" + "; ".join(
                f"{n}: {why}" for why, n in reasons.most_common()) + f") in {', '.join(sorted(self.stale))}")
        return head + ("; " + "; ".join(problems) if problems else "")


def snapshot(data_dir, key: str) -> Snapshot:
    """The state of machine ``key``'s folder under ``data_dir`` (the snapshot itself: a local copy a
    build wrote over a committed one is named, not checked, since it is not what is committed)."""
    folder = Path(data_dir) / key
    local = machine_folder(data_dir, key)
    info_path = folder / "machine.json"
    info = json.loads(info_path.read_text()) if info_path.is_file() else {}
    rows, stale, commits, dates = 0, {}, {}, []
    for path in sorted(folder.glob("*.json")):
        if path.name == "machine.json":
            continue
        try:
            doc = read(path)
        except DataDirError as e:
            stale[path.stem] = {f"unreadable: {e}": 1}
            continue
        runs = {r.get("run_id"): r.get("provenance") or {} for r in doc["runs"]}
        reasons = Counter(why for why in (staleness(r) for r in doc["rows"]) if why)
        if reasons:
            stale[path.stem] = dict(reasons)
        rows += len(doc["rows"])
        for r in doc["rows"]:
            prov = runs.get(r.get("run_id"), {})
            if prov.get("commit"):
                commits[prov["commit"][:10] + (" + local changes" if prov.get("dirty") else "")] = None
            if prov.get("date"):
                dates.append(prov["date"][:10])
    return Snapshot(key, folder, is_tracked(folder), local if local != folder else None, info, rows, stale,
                    tuple(commits), (min(dates), max(dates)) if dates else ())


def snapshots(data_dir) -> list[Snapshot]:
    """Every machine folder (one with a ``machine.json``) under ``data_dir``, by key."""
    root = Path(data_dir)
    keys = sorted(p.name for p in root.glob("*/") if p.name != LOCAL) if root.is_dir() else []
    return [snapshot(root, k) for k in keys if (root / k / "machine.json").is_file()]
