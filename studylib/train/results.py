"""Training results on disk: ``data/<machine_key>/training.json``, resumable, written atomically.

The one module that knows where training results live and what identifies one (so it can move
onto the harness's common store in one place). A row is a ``TrainResult.as_dict()``; its key is
(collector, num_envs, seed, the PPO settings but the budget, the time budget): a rerun with the
same key reads the saved row instead of training again, and an interrupted sweep resumes.

File format ``studylib-training/1``: {"format", "machine", "machine_info", "rows": [...]}.
Writes go to a temporary file in the same folder, then ``os.replace``: a reader never sees a
half-written file, and a crash leaves the previous file intact.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from ..provenance import machine_info, machine_key  # the one import of provenance in studylib.train

FORMAT = "studylib-training/1"
FILE_NAME = "training.json"


def provenance() -> dict:
    """Machine, software versions, commit (+ dirty flag) and date of a run."""
    return machine_info()


def path_for(data_dir) -> Path:
    return Path(data_dir) / machine_key() / FILE_NAME


def row_key(collector: str, num_envs: int, seed: int, settings: dict, budget_s: float) -> str:
    """A row's identity as a string (JSON of the parts, budget fields of the settings left out)."""
    from .settings import BUDGET_FIELDS

    kept = {k: settings[k] for k in sorted(settings) if k not in BUDGET_FIELDS}
    return json.dumps([collector, int(num_envs), int(seed), kept, float(budget_s)], sort_keys=True)


def key_of(row: dict) -> str:
    return row_key(row["collector"], row["num_envs"], row["seed"], row["settings"], row["budget_s"])


def load(data_dir) -> list[dict]:
    """The rows saved for this machine (none if the file does not exist)."""
    path = path_for(data_dir)
    if not path.exists():
        return []
    doc = json.loads(path.read_text())
    if doc.get("format") != FORMAT:
        raise ValueError(f"{path} is not a {FORMAT} file")
    return doc["rows"]


def save_row(data_dir, row: dict) -> Path:
    """Add (or replace, by key) one row and rewrite the file atomically."""
    path = path_for(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [r for r in load(data_dir) if key_of(r) != key_of(row)] + [row]
    doc = {"format": FORMAT, "machine": machine_key(), "machine_info": machine_info(), "rows": rows}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, indent=1, default=float)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def find(rows: list[dict], key: str) -> dict | None:
    return next((r for r in rows if key_of(r) == key), None)
