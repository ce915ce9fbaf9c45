"""Measure a list of items into one data file, resuming: what is saved is read, not measured again.

    from studylib.harness import sweep
    points = sweep.grid_points({"impl": ["cpp", "jax"], "num_envs": [2**k for k in range(8, 15)],
                                "steps": [1, 100]}, repeats=3)
    df = sweep.sweep("fig4", points, data_dir="data")    # one row per measured point

``sweep`` measures MeasurePoints with ``harness.measure``; ``run`` is the same loop for any item
(the book's profiles, Brax timings and ceilings), given how to measure one and how to key it.
Items that cannot run here (too big for memory, no CUDA device, an impl/device mismatch) are not
attempted beyond the check that refuses them: they are saved under ``skipped`` with the reason,
reported through ``log`` (stderr by default) and tried again by a later run.
"""

from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass
from typing import Callable

from ..errors import ConfigError, DeviceUnavailableError, InsufficientMemoryError
from ..settings import MeasurePoint, point_key
from .measure import measure
from .store import DataFile

GRID_KEYS = ("impl", "num_envs", "steps", "state_factor", "compute_factor", "policy", "device")
GRID_DEFAULTS = {"state_factor": 1, "compute_factor": 1, "policy": "mlp", "device": None}
SKIP_ERRORS = (InsufficientMemoryError, DeviceUnavailableError, ConfigError)


@dataclass(frozen=True)
class Keying:
    """How a data file names its items: ``columns(item)`` are the item's identifying values (saved
    with a skipped item), ``row_key(row)`` the key of a saved row or of those columns."""

    columns: Callable[[object], dict]
    row_key: Callable[[dict], tuple]
    describe: Callable[[object], str]


POINTS = Keying(MeasurePoint.flat, point_key, MeasurePoint.describe)


def keyed_by(*names: str) -> Callable[[dict], tuple]:
    """A ``row_key`` of the named columns (absent columns count as None)."""
    return lambda row: tuple(row.get(n) for n in names)


def grid_points(grid: dict, *, repeats=5, min_seconds=0.2, seed=0) -> list[MeasurePoint]:
    """The MeasurePoints of a grid ({key: list of values}, keys GRID_KEYS; impl, num_envs and
    steps required, the others default to GRID_DEFAULTS), in a stable order, without repeats."""
    if not isinstance(grid, dict):
        raise ConfigError(f"grid must be a dict of lists, got {type(grid).__name__}")
    unknown = set(grid) - set(GRID_KEYS)
    if unknown:
        raise ConfigError(f"unknown grid key(s) {', '.join(sorted(map(str, unknown)))}; valid: {', '.join(GRID_KEYS)}")
    missing = [k for k in ("impl", "num_envs", "steps") if k not in grid]
    if missing:
        raise ConfigError(f"grid needs {missing[0]!r} (a list of values)")
    axes = []
    for key in GRID_KEYS:
        values = grid.get(key, [GRID_DEFAULTS.get(key)])
        values = [values] if isinstance(values, (str, int, float)) or values is None else list(values)
        if not values:
            raise ConfigError(f"grid[{key!r}] is empty")
        axes.append(values)
    points = (MeasurePoint.of(impl, n, k, state_factor=s, compute_factor=c, policy=pol, device=dev, seed=seed,
                              repeats=repeats, min_seconds=min_seconds)
              for impl, n, k, s, c, pol, dev in itertools.product(*axes))
    return list(dict.fromkeys(points))


@dataclass
class Result:
    rows: list  # the saved rows of the items asked for, in their order
    skipped: list  # the items asked for that could not run here, with the reason
    path: str
    machine: str  # the machine folder


def _stderr_log(msg: str) -> None:
    from tqdm.auto import tqdm

    tqdm.write(msg, file=sys.stderr)


def _progress_bar(total: int, name: str, progress: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=f"sweep {name}", unit="pt", disable=not (progress and sys.stderr.isatty()),
                file=sys.stderr, dynamic_ncols=True)


def run(name: str, items, measure_one, keying: Keying, *, data_dir="data", progress=True, log=None) -> Result:
    """Measure each item not yet saved in this machine's file ``name`` with ``measure_one(item)``
    (-> row dict); SKIP_ERRORS it raises mark the item skipped. The file is written only when
    something new is measured or skipped (see ``harness.store``)."""
    items = list(items)
    log = _stderr_log if log is None else log
    f = DataFile(data_dir, name, keying.row_key)
    keys = [keying.row_key(keying.columns(it)) for it in items]
    if any(k not in f.rows for k in keys):
        columns = [keying.columns(it) for it in items]
        parameters = {"grid": {c: [cols.get(c) for cols in columns] for c in dict.fromkeys(itertools.chain(*columns))},
                      "points": len(items)}
        bar = _progress_bar(len(items), name, progress)
        try:
            with f.locked(parameters):
                for item, key in zip(items, keys):
                    if key not in f.rows:
                        bar.set_postfix_str(keying.describe(item), refresh=True)
                        _measure_or_skip(f, item, key, measure_one, keying, log)
                    bar.update(1)
        finally:
            bar.close()
    return Result(rows=[f.rows[k] for k in keys if k in f.rows],
                  skipped=[f.skipped[k] for k in keys if k not in f.rows and k in f.skipped], path=str(f.path),
                  machine=f.folder.name)


def _measure_or_skip(f: DataFile, item, key, measure_one, keying: Keying, log) -> None:
    try:
        row = measure_one(item)
    except SKIP_ERRORS as e:
        old = f.skipped.get(key)
        if old is None or old.get("reason") != str(e):  # the same refusal again changes nothing
            f.add_skipped(key, {**keying.columns(item), "reason": str(e), "error": type(e).__name__})
        log(f"skipped {keying.describe(item)}: {e}")
    else:
        f.add_row(key, row)


def sweep(name: str, points, *, data_dir="data", progress=True, log=None):
    """Measure the MeasurePoints ``points`` into ``<data_dir>/<machine_key>/<name>.json``; return a
    DataFrame of their rows on this machine (column ``machine`` added; ``df.attrs["skipped"]``:
    the points that could not run here, with reasons; ``df.attrs["path"]``: the file)."""
    import pandas as pd

    result = run(name, points, measure, POINTS, data_dir=data_dir, progress=progress, log=log)
    df = pd.DataFrame(result.rows)
    df["machine"] = result.machine
    df.attrs["skipped"] = result.skipped
    df.attrs["path"] = result.path
    return df
