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

``machine=`` names another machine's folder to read instead: nothing is measured, and the items
its snapshot lacks are listed as skipped ("not measured on ..."). A process posing as another host
(``$STUDYLIB_CPUINFO``) reads that host's folder the same way. ``with session(engine=...)``
runs every sweep inside the block on an engine (``harness.ray_engine.RayEngine``: a Ray cluster;
``READ_ONLY``: measure nothing), with the command line's choice of progress bars and log.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import itertools
import re
import sys
from dataclasses import dataclass, field
from typing import Callable

from .. import sims
from ..errors import (ConfigError, DeviceUnavailableError, InstrumentUnavailableError, InsufficientMemoryError,
                      PackageUnavailableError)
from ..settings import POINT_KEYS, MeasurePoint, point_key
from .measure import ROW_KEYS, measure
from ..native.build import check_measuring_native
from .data.provenance import machine_key, posed_cpuinfo
from .data.semantics import stamp
from .data.store import DataFile

GRID_KEYS = ("impl", "num_envs", "steps", "state_factor", "compute_factor", "policy", "device", "sim", "params")
# params: the simulator's constants (e.g. ChainParams(links=8)); None, its reference ones
GRID_DEFAULTS = {"state_factor": 1, "compute_factor": 1, "policy": "mlp", "device": None, "sim": sims.DEFAULT,
                 "params": None}
SKIP_ERRORS = (InsufficientMemoryError, DeviceUnavailableError, ConfigError, PackageUnavailableError,
               InstrumentUnavailableError)


@dataclass(frozen=True)
class Keying:
    """How a data file names its items: ``columns(item)`` are the item's identifying values (saved
    with a skipped item), ``row_key(row)`` the key of a saved row or of those columns; ``kind``:
    what its rows measure (``harness.data.semantics``), which decides whether a saved row is reused;
    ``timing``: where a key holds its repeats and min_seconds (``timing_in``), so that a row timed at
    least as carefully serves (``DataFile.serving``); None where keys hold no timing."""

    columns: Callable[[object], dict]
    row_key: Callable[[dict], tuple]
    describe: Callable[[object], str]
    kind: str
    timing: tuple[int, int] | None = None

    def data_file(self, data_dir, name: str, machine: str | None = None) -> DataFile:
        """The data file ``name`` of ``machine`` (None: this one), keyed as this keying keys."""
        return DataFile(data_dir, name, self.row_key, kind=self.kind, machine=machine, timing=self.timing)

    def saved_keys(self, f: DataFile, items) -> list[tuple]:
        """The key in ``f`` that answers each item: its own, or a row's timed at least as carefully."""
        return [f.serving(self.row_key(self.columns(it))) for it in items]

    def __post_init__(self):
        stamp(self.kind)  # an unknown kind fails where the keying is made, naming the known ones


def timing_in(names) -> tuple[int, int]:
    """The positions of ``repeats`` and ``min_seconds`` in a key of the columns ``names``."""
    return names.index("repeats"), names.index("min_seconds")


POINTS = Keying(MeasurePoint.flat, point_key, MeasurePoint.describe, "throughput", timing=timing_in(POINT_KEYS))


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
        single = isinstance(values, (str, int, float)) or values is None or dataclasses.is_dataclass(values)
        values = [values] if single else list(values)
        if not values:
            raise ConfigError(f"grid[{key!r}] is empty")
        axes.append(values)
    points = (MeasurePoint.of(impl, n, k, state_factor=s, compute_factor=c, policy=pol, device=dev, seed=seed,
                              repeats=repeats, min_seconds=min_seconds, sim=sim, params=params)
              for impl, n, k, s, c, pol, dev, sim, params in itertools.product(*axes))
    return list(dict.fromkeys(points))


@dataclass
class Result:
    rows: list  # the saved rows of the items asked for, in their order
    skipped: list  # the items asked for that could not run here (or are not in a snapshot read), with the reason
    path: str  # the file (of the first machine, when several measured)
    machines: list  # the machine folder of each row
    measured: int = 0  # rows added by this call
    lost: list = field(default_factory=list)  # items whose worker or node died (Ray): the next run measures them
    reused: int = 0  # rows read from the file as saved (measured by code of today's semantics)
    stale: list = field(default_factory=list)  # why each stale row asked for was not reused (re-measured, or left out of a read)

    def reuse_line(self, name: str) -> str:
        """One line: how many rows were reused and how many measured, and why any were re-measured."""
        text = f"{name}: {self.reused} row{'s' if self.reused != 1 else ''} reused, {self.measured} measured"
        if self.stale:
            reasons = "; ".join(dict.fromkeys(self.stale))
            text += f" ({len(self.stale)} stale: {reasons})"
        return text


@dataclass(frozen=True)
class Session:
    """How the sweeps inside ``with session(...)`` run. Its choices win over the callers'
    arguments: the command line decides for the book's plans, which ask for quiet, local sweeps."""

    engine: object = None  # None: measure here, one item after another; else ``engine.run(...)``
    progress: bool | None = None  # None: the caller's choice
    log: Callable | None = None  # None: the caller's choice
    report: Callable | None = None  # called with (name, Result) after each file


_SESSION = contextvars.ContextVar("studylib_sweep_session", default=Session())


@contextlib.contextmanager
def session(engine=None, *, progress=None, log=None, report=None):
    token = _SESSION.set(Session(engine, progress, log, report))
    try:
        yield
    finally:
        _SESSION.reset(token)


class ReadOnly:
    """The engine that measures nothing: every sweep reads what this machine's file holds (a
    page that only reads, a check that a build would measure nothing)."""

    def run(self, name, items, measure_one, keying, *, data_dir, progress, log) -> Result:
        return read_saved(name, items, keying, data_dir=data_dir, machine=machine_key())


READ_ONLY = ReadOnly()


def posing() -> bool:
    """Whether this process poses as another host (``$STUDYLIB_CPUINFO``): it reads that host's
    snapshot and measures nothing, since what it measured would be this machine's numbers under
    that host's key. ``data check`` still says what a build on that host would measure."""
    return posed_cpuinfo() is not None


def read_only() -> bool:
    """Whether this session measures nothing (``READ_ONLY``, or posing as another host): what a
    plan that does not go through ``run`` (the training chapter's) asks before it trains."""
    return _SESSION.get().engine is READ_ONLY or posing()


def report_unmeasured(name: str, skipped: list) -> None:
    """Tell this session's ``report`` of items a read-only plan outside ``run`` left unmeasured
    (``skipped``: each item's columns and reason), as ``run`` tells it of every file."""
    report = _SESSION.get().report
    if report is not None and skipped:
        report(name, Result(rows=[], skipped=skipped, path="", machines=[]))


def session_log() -> Callable | None:
    """This session's log (one line per call; None where the session has none): what a plan that
    does not go through ``run`` (the robot chapter's) tells of each run it trains."""
    return _SESSION.get().log


def _stderr_log(msg: str) -> None:
    from tqdm.auto import tqdm

    tqdm.write(msg, file=sys.stderr)


def progress_bar(total: int, name: str, progress: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=f"sweep {name}", unit="pt", disable=not (progress and sys.stderr.isatty()),
                file=sys.stderr, dynamic_ncols=True)


def run(name: str, items, measure_one, keying: Keying, *, data_dir="data", progress=True, log=None,
        machine=None) -> Result:
    """Measure each item not yet saved in this machine's file ``name`` with ``measure_one(item)``
    (-> row dict); SKIP_ERRORS it raises mark the item skipped. The file is written only when
    something new is measured or skipped (see ``harness.data.store``). ``machine``: another machine's
    folder to read instead, measuring nothing."""
    items = list(items)
    current = _SESSION.get()
    progress = progress if current.progress is None else current.progress
    log = current.log or log or _stderr_log
    if machine is not None and machine != machine_key():
        result = read_saved(name, items, keying, data_dir=data_dir, machine=machine)
    elif posing():  # this machine's numbers filed under another host's key would be wrong numbers
        result = read_saved(name, items, keying, data_dir=data_dir, machine=machine_key())
    elif current.engine is not None:
        result = current.engine.run(name, items, measure_one, keying, data_dir=data_dir, progress=progress, log=log)
    else:
        result = _run_here(name, items, measure_one, keying, data_dir=data_dir, progress=progress, log=log)
    if current.report is not None:
        current.report(name, result)
    return result


def run_parameters(items, keying: Keying) -> dict:
    """What a data file records of the run that measures ``items``: their grid and number."""
    columns = [keying.columns(it) for it in items]
    return {"grid": {c: [cols.get(c) for cols in columns] for c in dict.fromkeys(itertools.chain(*columns))},
            "points": len(items)}


def _run_here(name, items, measure_one, keying: Keying, *, data_dir, progress, log) -> Result:
    f = keying.data_file(data_dir, name)
    keys = keying.saved_keys(f, items)
    reused = sum(k in f.rows for k in dict.fromkeys(keys))
    stale = [f.stale[k] for k in dict.fromkeys(keys) if k in f.stale]
    measured = 0
    if any(k not in f.rows for k in keys):
        check_measuring_native()  # rows are the native build's (a reused row needs no build)
        bar = progress_bar(len(items), name, progress)
        try:
            with f.locked(run_parameters(items, keying)):
                for item, key in zip(items, keys):
                    if key not in f.rows:
                        bar.set_postfix_str(keying.describe(item), refresh=True)
                        measured += _measure_or_skip(f, item, key, measure_one, keying, log)
                    bar.update(1)
        finally:
            bar.close()
    rows = [f.rows[k] for k in keys if k in f.rows]
    result = Result(rows=rows, skipped=[f.skipped[k] for k in keys if k not in f.rows and k in f.skipped],
                    path=str(f.path), machines=[f.folder.name] * len(rows), measured=measured, reused=reused,
                    stale=stale)
    if measured or stale:
        log(result.reuse_line(name))
    return result


def read_saved(name, items, keying: Keying, *, data_dir, machine) -> Result:
    """The saved rows of ``items`` in ``machine``'s file, measuring nothing; the items it lacks
    are listed as skipped, "not measured on <machine>" (or "stale on <machine>: why", for a row
    measured by code of other semantics)."""
    f = keying.data_file(data_dir, name, machine)
    keys = keying.saved_keys(f, items)
    rows = [f.rows[k] for k in keys if k in f.rows]

    def missing(it, k):
        if k in f.stale:
            return {**keying.columns(it), "reason": f"stale on {machine}: {f.stale[k]}", "error": "Stale"}
        return f.skipped.get(k) or {**keying.columns(it), "reason": f"not measured on {machine}", "error": "NotMeasured"}

    skipped = [missing(it, k) for it, k in zip(items, keys) if k not in f.rows]
    return Result(rows=rows, skipped=skipped, path=str(f.path), machines=[machine] * len(rows), reused=len(rows),
                  stale=[f.stale[k] for k in dict.fromkeys(keys) if k in f.stale])


def _measure_or_skip(f: DataFile, item, key, measure_one, keying: Keying, log) -> int:
    """Measure one item into ``f`` (1) or save why it cannot run here (0)."""
    try:
        row = measure_one(item)
    except SKIP_ERRORS as e:
        save_skipped(f, item, key, keying, str(e), type(e).__name__)
        log(f"skipped {keying.describe(item)}: {e}")
        return 0
    f.add_row(key, row)
    return 1


def same_refusal(a: str, b: str) -> bool:
    """Whether two skip reasons are one refusal: equal but for their figures (a memory refusal
    names the memory available at that moment, which moves between two checks)."""
    return re.sub(r"\d[\d.,]*", "#", a) == re.sub(r"\d[\d.,]*", "#", b)


def save_skipped(f: DataFile, item, key, keying: Keying, reason: str, error: str, info=None) -> None:
    old = f.skipped.get(key)
    if old is None or not same_refusal(old.get("reason", ""), reason):  # the same refusal again changes nothing
        f.add_skipped(key, {**keying.columns(item), "reason": reason, "error": error}, info=info)


def sweep(name: str, points, *, data_dir="data", progress=True, log=None, machine=None):
    """Measure the MeasurePoints ``points`` into ``<data_dir>/<machine_key>/<name>.json`` (or read
    ``machine``'s); return a DataFrame of their rows (column ``machine``: the folder of each;
    ``df.attrs["skipped"]``: the points that could not run, with reasons; ``df.attrs["path"]``:
    the file; ``df.attrs["measured"]``: rows added now; ``df.attrs["reused"]``: rows read as
    saved; ``df.attrs["stale"]``: why each stale row asked for was not reused; ``df.attrs["lost"]``:
    points whose Ray worker died, left for the next run)."""
    import pandas as pd

    result = run(name, points, measure, POINTS, data_dir=data_dir, progress=progress, log=log, machine=machine)
    # no row (a snapshot without this sweep): still the rows' columns, so readers select and group as usual
    df = pd.DataFrame(result.rows, columns=None if result.rows else list(ROW_KEYS))
    df["machine"] = result.machines
    df.attrs.update(skipped=result.skipped, path=result.path, measured=result.measured, lost=result.lost,
                    reused=result.reused, stale=result.stale)
    return df
