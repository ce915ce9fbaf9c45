"""The one file format of the study's measurements: sweeps, profiles, Brax timings, ceilings.

Every measured item is saved in ``<data_dir>/<machine_key>/<name>.json`` (one folder per machine,
so folders from several machines merge by copying), one JSON document:

    {"format": "studylib-sweep/1", "sweep": name, "machine": machine_key,
     "machine_info": machine_info() of the latest run that changed the file,
     "runs":    [{"run_id", "started", "provenance": machine_info(), "parameters": {...}}, ...],
     "rows":    [one dict per measured item, with the run_id that measured it],
     "skipped": [items that could not run here, with "reason", "error", "run_id", "date"]}

Items are identified by a key computed from a row (``row_key``: for throughput points
``settings.point_key``), so a rerun resumes: what is saved is read, not measured again.
Writes are atomic (a temporary file, then ``os.replace``: a killed run leaves the previous complete
file) and one process at a time holds a file's lock. A run is recorded (and
``<machine>/machine.json`` refreshed) only when it changes the file, so a rebuild that finds
everything saved leaves the data folder untouched. A file may be written for another machine
than the one writing it (a Ray driver saving what a cluster node measured): each change then
carries that node's ``machine_info()``, and a run is recorded per distinct provenance, so every
row's ``run_id`` names the machine and code that measured it.

Files written before this format (``studylib-profile/1``, ``studylib-brax/1``,
``studylib-roofline/1``) are read transparently and rewritten in it when next changed.

**Stale rows.** A ``DataFile`` holds rows of one kind (``harness.data.semantics``); a saved row counts
(``rows``) only when its stamp is today's for that kind, and the others are listed in ``stale``
with the reason: a run measures their points again, replacing them.

**Committed snapshots are not rewritten.** Where git tracks a machine's folder (a snapshot
committed with the study), the first change to it copies the folder to ``<data_dir>/.local/<key>/``
(ignored by git) and writes there; from then on that machine's files are read from the copy
(``machine_folder``), so a build never leaves a checkout dirty, and the pages say which folder
they show. Delete ``.local/<key>`` to go back to the committed snapshot.

**A row timed at least as carefully serves.** Where an item's key holds its timing (``timing``: the
positions of ``repeats`` and ``min_seconds`` in the key), a saved row of the same item with at least
as many timed regions, each at least as long, answers it (``serving``): it measured the same
quantity at least as precisely, so a snapshot measured at the ``paper`` preset's timing serves a
point the ``default`` preset asks for, and a cheaper default timing leaves no snapshot stale.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from functools import lru_cache
from pathlib import Path

from ...errors import ConfigError, StudyError
from .provenance import machine_info, machine_key, now_utc
from .semantics import FIELD, stamp, staleness

FORMAT = "studylib-sweep/1"
LOCAL = ".local"  # <data_dir>/.local/<key>/: this machine's rows measured over its committed snapshot
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class DataDirError(StudyError, OSError):
    """The data folder cannot be created or written, or holds a file that is not a data file."""


def check_name(name) -> str:
    if not isinstance(name, str) or not _NAME_RE.match(name) or name.endswith(".json"):
        raise ConfigError(f"sweep name must be letters, digits, '.', '_' or '-' (no path), got {name!r}")
    return name


@lru_cache(maxsize=64)
def is_tracked(folder: Path) -> bool:
    """Whether git tracks any file of ``folder`` (a committed snapshot); False without git."""
    folder = Path(folder)
    if not folder.is_dir():
        return False
    try:
        r = subprocess.run(["git", "-C", str(folder), "ls-files", "--", "."], capture_output=True, text=True,
                           timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return r.returncode == 0 and bool(r.stdout.strip())


def machine_folder(data_dir, machine: str) -> Path:
    """The folder ``machine``'s files are read from under ``data_dir``: its local copy
    (``<data_dir>/.local/<machine>``) where a build has measured over a committed snapshot, else
    ``<data_dir>/<machine>``."""
    local = Path(data_dir) / LOCAL / machine
    return local if (local / "machine.json").is_file() else Path(data_dir) / machine


def is_local_copy(folder: Path) -> bool:
    """Whether ``folder`` is a local copy of a committed snapshot (``machine_folder``)."""
    return Path(folder).parent.name == LOCAL


def _local_copy(committed: Path) -> Path:
    """Copy the committed folder's data files to its local folder (once; atomically, so that a
    second writer finds the copy whole) and return the local folder."""
    local = committed.parent / LOCAL / committed.name
    if (local / "machine.json").is_file():
        return local
    local.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=local.parent, prefix=f".{committed.name}.", suffix=".tmp"))
    try:
        for path in committed.glob("*.json"):
            shutil.copy2(path, tmp / path.name)
        os.chmod(tmp, 0o777 & ~_umask())
        os.rename(tmp, local)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if not (local / "machine.json").is_file():
            raise
    return local


def _umask() -> int:
    old = os.umask(0o022)
    os.umask(old)
    return old


def atomic_write_json(path: Path, obj) -> None:
    """Write JSON to ``path`` so that readers see the old or the new file, never a partial one."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; data files are for sharing
        with os.fdopen(fd, "w") as f:
            json.dump(obj, f, indent=1, default=str)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _upgrade(doc: dict, path: Path) -> dict:
    """A document of an earlier per-purpose format, in this one (rows unchanged)."""
    fmt = doc.get("format")
    base = {"format": FORMAT, "sweep": path.stem, "machine": path.parent.name, "skipped": []}
    if fmt in ("studylib-profile/1", "studylib-brax/1"):  # the same rows and runs, no skipped
        return {**base, "runs": doc.get("runs", []), "rows": doc.get("rows", [])}
    if fmt == "studylib-roofline/1":  # one object of ceilings -> one row per ceiling
        info = doc.get("machine") or {}
        rows = [{"ceiling": "memory", "value": doc["memory_bytes_per_s"]}]
        rows += [{"ceiling": "physics", "state_factor": r["state_factor"], "compute_factor": r["compute_factor"],
                  "value": r["steps_per_s"]} for r in doc["physics_steps_per_s"]]
        rows += [{"ceiling": "gemm", "num_envs": r["num_envs"], "value": r["steps_per_s"]}
                 for r in doc["gemm_steps_per_s"]]
        return {**base, "machine_info": info, "runs": [{"provenance": info}], "rows": rows}
    raise DataDirError(f"{path} is not a studylib data file (format {FORMAT})")


def read(path: Path) -> dict:
    """The document in ``path`` (earlier formats converted); DataDirError if it is not one."""
    path = Path(path)
    try:
        with open(path) as f:
            doc = json.load(f)
    except json.JSONDecodeError as e:
        raise DataDirError(f"{path} is not valid JSON ({e.msg} at line {e.lineno}); move it away and rerun") from None
    except OSError as e:
        raise DataDirError(f"cannot read {path}: {e.strerror or e}") from None
    if not isinstance(doc, dict):
        raise DataDirError(f"{path} is not a studylib data file (format {FORMAT})")
    return doc if doc.get("format") == FORMAT else _upgrade(doc, path)


def run_time(run_id: str) -> str:
    """The ISO UTC time a ``DataFile`` run id carries (its ids: ``<now_utc()>-<8 hex digits>``,
    made when that run saved its first row or skip)."""
    return run_id.rsplit("-", 1)[0]


class DataFile:
    """The file ``name`` of one machine (``machine``: its key; None: this machine) under
    ``data_dir``, holding rows of ``kind`` (``harness.data.semantics``): its current rows and skipped
    items by key, and its stale rows' keys with the reason (``stale``).

    Reading needs no lock and writes nothing. Changes happen inside ``with f.locked(parameters):``
    (``add_row``, ``add_skipped``), each written to disk at once."""

    def __init__(self, data_dir, name: str, row_key, *, kind: str, machine: str | None = None,
                 timing: tuple[int, int] | None = None):
        self.name = check_name(name)
        self.timing = timing
        self.stamp = stamp(kind)
        self.kind = kind
        self.committed = Path(data_dir) / (check_name(machine) if machine is not None else machine_key())
        self.row_key = row_key
        self._parameters = None  # set while locked: the parameters of the runs it records
        self._runs = {}  # provenance (less the date) -> run id, of the runs recorded while locked
        self._here = None  # this process's machine_info(), computed once per locked session
        self._locate(machine_folder(data_dir, self.committed.name))
        self.reload()

    def _locate(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / f"{self.name}.json"

    def reload(self) -> None:
        self.doc = read(self.path) if self.path.exists() else None
        doc = self.doc or {"rows": [], "skipped": []}
        self.rows, self.stale = {}, {}
        for r in doc["rows"]:
            why = staleness(r, self.kind)
            if why:
                self.stale[self.row_key(r)] = why
            else:
                self.rows[self.row_key(r)] = r
        self.skipped = {self.row_key(s): s for s in doc.get("skipped", [])}
        self._by_item = None

    def _untimed(self, key: tuple) -> tuple:
        return tuple(v for i, v in enumerate(key) if i not in self.timing)

    def _timed_keys(self) -> dict:
        """The current rows' keys by their item (the key less its timing), built when first asked
        after a change: ``serving`` looks up each unsaved key there, not in every row."""
        if self._by_item is None:
            self._by_item = {}
            for k in self.rows:
                if None not in (k[self.timing[0]], k[self.timing[1]]):
                    self._by_item.setdefault(self._untimed(k), []).append(k)
        return self._by_item

    def serving(self, key: tuple) -> tuple:
        """The key of the saved row that answers ``key``: ``key`` itself where it is saved (or where
        keys hold no timing); else the most carefully timed current row of the same item with at
        least the repeats and region length ``key`` asks for (see the module doc); else ``key``."""
        if key in self.rows or self.timing is None:
            return key
        repeats, seconds = (key[i] for i in self.timing)
        if repeats is None or seconds is None:
            return key
        careful = [(k[self.timing[1]], k[self.timing[0]], k) for k in self._timed_keys().get(self._untimed(key), [])
                   if k[self.timing[0]] >= repeats and k[self.timing[1]] >= seconds]
        return max(careful, key=lambda c: c[:2])[2] if careful else key

    def _ensure_writable(self) -> None:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=self.folder, prefix=".write-test-", delete=True):
                pass
        except OSError as e:
            raise DataDirError(f"data folder {str(self.folder)!r} is not writable: {e.strerror or e}") from None

    @contextlib.contextmanager
    def locked(self, parameters: dict):
        """One writer per file: a second concurrent writer fails clearly. The file is read again
        under the lock (another process may have added to it); ``parameters`` describe the run."""
        import fcntl

        if self.folder == self.committed and is_tracked(self.committed):  # never rewrite a committed snapshot
            self._locate(_local_copy(self.committed))
        self._ensure_writable()
        lock_path = self.folder / f".{self.name}.lock"
        try:
            f = open(lock_path, "a")
        except OSError as e:
            raise DataDirError(f"data folder {str(self.folder)!r} is not writable: {e.strerror or e}") from None
        with f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise StudyError(f"another process is writing {self.name!r} into {self.folder}; wait for it") from None
            try:
                self.reload()
                self._parameters, self._runs, self._here = parameters, {}, None
                yield self
            finally:
                self._parameters = None
                fcntl.flock(f, fcntl.LOCK_UN)

    def _change(self, info: dict | None) -> str:
        """The run id of the current change. A run is recorded on the first change of each distinct
        provenance ``info`` of the measuring machine (None: this process's), so nodes of one
        machine kind at different commits, say, get a run each."""
        if self._parameters is None:
            raise RuntimeError("DataFile changes need `with data_file.locked(...)`")
        if info is None:
            self._here = self._here or machine_info()
            info = self._here
        if info["machine_key"] != self.folder.name:
            raise RuntimeError(f"a row measured on {info['machine_key']} cannot go into {self.folder}")
        source = json.dumps({k: v for k, v in info.items() if k != "date"}, sort_keys=True, default=str)
        if source not in self._runs:
            if self.doc is None:
                self.doc = {"format": FORMAT, "sweep": self.name, "machine": info["machine_key"], "runs": [],
                            "rows": [], "skipped": []}
            self.doc["machine_info"] = info
            run = {"run_id": f"{now_utc()}-{uuid.uuid4().hex[:8]}", "started": now_utc(), "provenance": info,
                   "parameters": {**self._parameters, "argv": list(sys.argv)}}
            self.doc["runs"].append(run)
            self._runs[source] = run["run_id"]
            atomic_write_json(self.folder / "machine.json", info)
        return self._runs[source]

    def add_row(self, key, row: dict, info: dict | None = None) -> dict:
        """Save ``row`` under ``key`` (a saved row of the same key is replaced, never duplicated);
        ``info``: the measuring machine's provenance (None: here)."""
        row = {**row, FIELD: self.stamp, "run_id": self._change(info)}
        self.doc["rows"] = [r for r in self.doc["rows"] if self.row_key(r) != key] + [row]
        self.doc["skipped"] = [s for s in self.doc["skipped"] if self.row_key(s) != key]
        self.rows[key] = row
        self._by_item = None
        self.skipped.pop(key, None)
        self.stale.pop(key, None)
        atomic_write_json(self.path, self.doc)
        return row

    def add_skipped(self, key, entry: dict, info: dict | None = None) -> dict:
        entry = {**entry, "run_id": self._change(info), "date": now_utc()}
        self.doc["skipped"] = [s for s in self.doc["skipped"] if self.row_key(s) != key] + [entry]
        self.skipped[key] = entry
        atomic_write_json(self.path, self.doc)
        return entry


def _paths(name, data_dir, machine) -> list[Path]:
    root = Path(data_dir)
    machines = [machine] if machine is not None else sorted(p.name for p in root.glob("*/") if p.name != LOCAL)
    paths = [machine_folder(root, m) / f"{check_name(name)}.json" for m in machines]
    return [p for p in paths if p.exists()]


def load(name, *, data_dir="data", machine=None):
    """The current rows of ``name`` (every machine folder under ``data_dir``, or just ``machine``;
    stale rows, ``harness.data.semantics``, left out), with columns ``machine`` (the folder), ``commit``
    and ``dirty`` (of the run that measured the row). Raises ConfigError when no machine has this file."""
    import pandas as pd

    paths = _paths(name, data_dir, machine)
    if not paths:
        where = f"machine {machine!r} in " if machine else ""
        raise ConfigError(f"no data for sweep {name!r} in {where}{str(data_dir)!r}")
    frames = []
    for path in paths:
        doc = read(path)
        runs = {r.get("run_id"): r.get("provenance", {}) for r in doc["runs"]}
        frames.append(pd.DataFrame([{**r, "machine": path.parent.name, "commit": runs.get(r.get("run_id"), {}).get("commit"),
                                     "dirty": runs.get(r.get("run_id"), {}).get("dirty")} for r in doc["rows"]
                                    if not staleness(r)]))
    return pd.concat(frames, ignore_index=True)


def load_skipped(name, *, data_dir="data", machine=None):
    """The skipped items of ``name`` with their reasons (column ``machine`` added)."""
    import pandas as pd

    return pd.DataFrame([{**s, "machine": path.parent.name} for path in _paths(name, data_dir, machine)
                         for s in read(path)["skipped"]])
