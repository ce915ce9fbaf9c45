"""The committed machine snapshots under data/, read as data: the tests that use them never measure
and never depend on which machine runs them (they pose as the snapshot's machine, or as another)."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = sorted(p.parent.name for p in (ROOT / "data").glob("*/machine.json"))


def machine_json(key: str) -> dict:
    return json.loads((ROOT / "data" / key / "machine.json").read_text())


# the newest committed snapshot: measured by a cold default-preset build of one clean commit
SNAPSHOT = max(SNAPSHOTS, key=lambda k: machine_json(k).get("date") or "") if SNAPSHOTS else None


def identity_of(key: str) -> dict:
    """The hardware identity a snapshot's machine recorded (what its plans read of it)."""
    from studylib.harness.identity import IDENTITY_FIELDS

    info = machine_json(key)
    return {f: info.get(f) for f in IDENTITY_FIELDS}
