"""Measure data-collection throughput (samples/s), one point or a sweep, with provenance.

One entry point, used by the CLI (``python -m studylib bench|sweep``), by sweeps and by the book:

    from studylib import bench
    row = bench.measure("jax", 4096, 100, policy="mlp")     # one dict, the same as --json prints
    df = bench.sweep("fig4", {"impl": ["cpp", "jax"], "num_envs": [2**k for k in range(8, 15)],
                              "steps": [1, 100]})
    df = bench.load("fig4")                                  # every machine's rows, column `machine`

What is measured (paper section 3.3): the throughput of data collection, samples/s =
N * K * calls / seconds, where one call is ``env.rollout(K, policy)``: K steps of all N
environments, policy inference included unless ``policy="none"``.

Methodology
  * One-time costs are excluded from the timing and reported separately: ``setup_s`` (creating
    the environments), ``compile_s`` (ahead-of-time compile via ``env.compile`` where the
    implementation has one: XLA for jax and the gymnax peer, inductor for torch-compile; the C++ build
    for cpp when this call triggered it, 0 when cached; the NVRTC build of the kernel for cuda is
    part of ``setup_s``; 0 for gym/torch, which compile nothing) and ``warmup_s`` (the first call).
  * Adaptive timed regions: the number of calls per timed region (``calls_per_repeat``) is
    doubled (or extrapolated) until one region lasts at least ``min_seconds``, so the timer's
    resolution and per-region noise are negligible. Calibration calls double as warm-up.
  * Every timed region ends with ``env.synchronize()`` (``torch.cuda.synchronize``,
    ``jax.block_until_ready``, ``cudaDeviceSynchronize``); each rollout also returns the number of
    finished episodes as a host integer, which waits for the device anyway.
  * ``repeats`` timed regions; ``samples_per_s`` is their median, ``samples_per_s_min/max`` the
    spread, ``samples_per_s_all`` every value.
  * The same environments keep running across warm-up, calibration and repeats: episodes end and
    environments reset during the measurement (``episodes_finished`` counts them), so the state
    never sits at a fixed point (a pole that has fallen over, a constant state...).

Sweeps write ``<data_dir>/<machine_key>/<name>.json``: one JSON document holding the provenance of
every run that contributed (``runs``: machine_info(), the grid, repeats, min_seconds), the tidy
``rows`` (one per measured point, the dict of ``measure``) and the ``skipped`` points with the
reason. The file is rewritten after every point through a temporary file and ``os.replace``, so a
killed sweep leaves the previous complete file; rerunning the same sweep skips points already
measured with identical parameters. ``<data_dir>/<machine_key>/machine.json`` repeats the latest
machine_info for browsing.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import re
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from . import IMPLEMENTATIONS, POLICIES, implementation_class, make
from .peers import PEERS, make_peer
from .errors import (ConfigError, DeviceUnavailableError, InsufficientMemoryError, StudyError,
                     check_fits_in_memory, positive_int)
from .provenance import cpu_model, gpu_name, machine_info, machine_key, now_utc

FILE_FORMAT = "studylib-sweep/1"
GRID_KEYS = ("impl", "num_envs", "steps", "state_factor", "compute_factor", "policy", "device")
GRID_DEFAULTS = {"state_factor": 1, "compute_factor": 1, "policy": "mlp", "device": None}
DEVICES = (None, "cpu", "cuda")
# The parameters that identify a measured point: a rerun skips a point whose key is present.
POINT_KEYS = GRID_KEYS + ("repeats", "min_seconds", "seed")
MAX_CALLS_PER_REPEAT = 1_000_000


class DataDirError(StudyError, OSError):
    """The data folder cannot be created or written, or holds a file that is not a sweep file."""


# ---- argument checking ------------------------------------------------------------------------

def check_impl(impl) -> str:
    if impl not in IMPLEMENTATIONS and impl not in PEERS:
        raise ConfigError(f"unknown implementation {impl!r}; valid: {', '.join(IMPLEMENTATIONS)}"
                          f" (peers: {', '.join(PEERS)})")
    return impl


def check_policy_name(policy) -> str:
    if policy not in POLICIES:
        raise ConfigError(f"unknown policy {policy!r}; valid: {', '.join(POLICIES)}")
    return policy


def check_device_name(device):
    if device not in DEVICES:
        raise ConfigError(f"unknown device {device!r}; valid: cpu, cuda (or None for the implementation's default)")
    return device


def check_min_seconds(min_seconds) -> float:
    if isinstance(min_seconds, bool) or not isinstance(min_seconds, (int, float)) \
            or not math.isfinite(min_seconds) or min_seconds <= 0:
        raise ConfigError(f"min_seconds must be a positive number, got {min_seconds!r}")
    return float(min_seconds)


def check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= 2**32 - 1:
        raise ConfigError(f"seed must be an integer in [0, 2**32 - 1], got {seed!r}")
    return seed


def check_point(impl, num_envs, steps, state_factor=1, compute_factor=1, policy="mlp", device=None) -> dict:
    """Validate one point's parameters (types, ranges, names); return them normalised."""
    return {
        "impl": check_impl(impl),
        "num_envs": positive_int("num_envs", num_envs),
        "steps": positive_int("steps", steps),
        "state_factor": positive_int("state_factor", state_factor),
        "compute_factor": positive_int("compute_factor", compute_factor),
        "policy": check_policy_name(policy),
        "device": check_device_name(device),
    }


def _cuda_available_for(impl) -> tuple[bool, str]:
    if impl in ("torch", "gym"):
        import torch

        return torch.cuda.is_available(), "no CUDA device: PyTorch sees no GPU on this machine"
    if impl == "jax":
        import jax

        try:
            return bool(jax.devices("gpu")), ""
        except RuntimeError:
            return False, "no CUDA device: JAX sees no GPU on this machine"
    from .devices import cuda_status

    ok, reason = cuda_status()
    return ok, reason


def check_feasible(impl, num_envs, steps, state_factor=1, compute_factor=1, policy="mlp", device=None) -> dict:
    """Everything that can be checked before allocating: parameters, the device, the memory.

    Raises ConfigError (bad parameter, impl/device mismatch), DeviceUnavailableError (no CUDA
    device) or InsufficientMemoryError (``estimate_bytes`` exceeds the available memory).
    """
    p = check_point(impl, num_envs, steps, state_factor, compute_factor, policy, device)
    if p["impl"] == "cpp" and p["device"] == "cuda":
        raise ConfigError("cpp simulates and infers on the CPU; use --device cpu (or the cuda implementation)")
    if p["impl"] == "cuda" and p["device"] == "cpu":
        raise ConfigError("the cuda implementation runs on the GPU only; use --device cuda (or the cpp implementation)")
    if p["device"] == "cuda" or p["impl"] == "cuda":
        ok, reason = _cuda_available_for(p["impl"])
        if not ok:
            raise DeviceUnavailableError(f"{reason} (impl={p['impl']}, device=cuda)")
    if p["impl"] in PEERS:
        PEERS[p["impl"]].check(p["state_factor"], p["compute_factor"], p["policy"], p["device"])
    cls = PEERS[p["impl"]] if p["impl"] in PEERS else implementation_class(p["impl"])
    check_fits_in_memory(f"{p['impl']} with N={p['num_envs']}, S={p['state_factor']}",
                         cls.estimate_bytes(p["num_envs"], p["state_factor"]))
    return p


# ---- one measurement ---------------------------------------------------------------------------

def _device_name(device: str) -> str:
    if device.startswith("cuda"):
        return gpu_name() or "cuda"
    return cpu_model()


def measure(impl, num_envs, steps, *, state_factor=1, compute_factor=1, policy="mlp", device=None,
            repeats=5, min_seconds=0.2, seed=0) -> dict:
    """Measure data-collection throughput of one configuration; return one row (a flat dict).

    Keys: impl, num_envs, steps, state_factor, compute_factor, policy, device (resolved),
    device_requested, device_name, samples_per_s (median over repeats), samples_per_s_min,
    samples_per_s_max, samples_per_s_all, rel_spread ((max-min)/median), repeats,
    calls_per_repeat, seconds_per_repeat (median), min_seconds, compile_s, setup_s, warmup_s,
    episodes_finished (during the timed repeats), seed, machine, date, timer.
    See the module docstring for the methodology.
    """
    p = check_feasible(impl, num_envs, steps, state_factor, compute_factor, policy, device)
    repeats = positive_int("repeats", repeats)
    min_seconds = check_min_seconds(min_seconds)
    seed = check_seed(seed)
    n, k, pol = p["num_envs"], p["steps"], p["policy"]

    build_s = 0.0
    native_cached = None
    if p["impl"] == "cpp":
        from . import native

        native_cached = native.build_info.cache_info().currsize > 0  # already built in this process
    t0 = time.perf_counter()
    if p["impl"] in PEERS:
        env = make_peer(p["impl"], n, seed=seed)
    else:
        env = make(p["impl"], n, seed=seed, device=p["device"], state_factor=p["state_factor"],
                   compute_factor=p["compute_factor"])
    setup_s = time.perf_counter() - t0
    if p["impl"] == "cpp" and not native_cached:
        from . import native

        build_s = float(native.build_info()["build_seconds"])  # 0 when the cached .so was loaded
        setup_s = max(0.0, setup_s - build_s)

    compile_s = build_s
    if hasattr(env, "compile"):  # jax, torch-compile, gymnax: ahead-of-time compile, timed apart
        t0 = time.perf_counter()
        env.compile(k, pol)
        compile_s = time.perf_counter() - t0

    def timed(calls: int) -> tuple[float, int]:
        episodes = 0
        start = time.perf_counter()
        for _ in range(calls):
            episodes += env.rollout(k, pol).episodes_finished
        env.synchronize()
        return time.perf_counter() - start, episodes

    warmup_s, _ = timed(1)

    # Calibrate: grow the calls per timed region until one region lasts >= min_seconds.
    calls = 1
    elapsed, _ = timed(calls)
    while elapsed < min_seconds and calls < MAX_CALLS_PER_REPEAT:
        guess = math.ceil(calls * 1.2 * min_seconds / max(elapsed, 1e-9))
        calls = min(MAX_CALLS_PER_REPEAT, max(calls * 2, min(guess, calls * 100)))
        elapsed, _ = timed(calls)

    seconds, episodes_total = [], 0
    for _ in range(repeats):
        dt, episodes = timed(calls)
        seconds.append(dt)
        episodes_total += episodes
    sps = [n * k * calls / dt for dt in seconds]
    median = statistics.median(sps)
    row = {
        **p,
        "device": env.device,
        "device_requested": p["device"],
        "device_name": _device_name(env.device),
        "samples_per_s": median,
        "samples_per_s_min": min(sps),
        "samples_per_s_max": max(sps),
        "samples_per_s_all": sps,
        "rel_spread": (max(sps) - min(sps)) / median,
        "repeats": repeats,
        "calls_per_repeat": calls,
        "seconds_per_repeat": statistics.median(seconds),
        "min_seconds": min_seconds,
        "compile_s": compile_s,
        "setup_s": setup_s,
        "warmup_s": warmup_s,
        "episodes_finished": episodes_total,
        "seed": seed,
        "machine": machine_key(),
        "date": now_utc(),
        "timer": "time.perf_counter",
    }
    del env
    return row


# ---- sweeps -------------------------------------------------------------------------------------

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def check_sweep_name(name) -> str:
    if not isinstance(name, str) or not _NAME_RE.match(name) or name.endswith(".json"):
        raise ConfigError(f"sweep name must be letters, digits, '.', '_' or '-' (no path), got {name!r}")
    return name


def expand_grid(grid: dict) -> list[dict]:
    """The points of a grid dict (missing keys take GRID_DEFAULTS), validated, in a stable order."""
    if not isinstance(grid, dict):
        raise ConfigError(f"grid must be a dict of lists, got {type(grid).__name__}")
    unknown = set(grid) - set(GRID_KEYS)
    if unknown:
        raise ConfigError(f"unknown grid key(s) {', '.join(sorted(map(str, unknown)))}; valid: {', '.join(GRID_KEYS)}")
    for key in ("impl", "num_envs", "steps"):
        if key not in grid:
            raise ConfigError(f"grid needs {key!r} (a list of values)")
    axes = []
    for key in GRID_KEYS:
        values = grid.get(key, [GRID_DEFAULTS.get(key)])
        if isinstance(values, (str, int, float)) or values is None:
            values = [values]
        values = list(values)
        if not values:
            raise ConfigError(f"grid[{key!r}] is empty")
        axes.append(values)
    points = []
    seen = set()
    for combo in itertools.product(*axes):
        p = check_point(*combo)
        key = tuple(p[k] for k in GRID_KEYS)
        if key not in seen:
            seen.add(key)
            points.append(p)
    return points


def point_key(row: dict) -> tuple:
    """Identity of a measured point; ``device`` here is the device that was asked for."""
    values = []
    for k in POINT_KEYS:
        v = row.get("device_requested", row.get("device")) if k == "device" else row.get(k)
        values.append(float(v) if k == "min_seconds" and v is not None else v)
    return tuple(values)


def _machine_dir(data_dir, key: str) -> Path:
    return Path(data_dir) / key


def _ensure_writable(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-test-", delete=True):
            pass
    except OSError as e:
        raise DataDirError(f"data folder {str(folder)!r} is not writable: {e.strerror or e}") from None


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


def read_sweep_file(path: Path) -> dict:
    try:
        with open(path) as f:
            doc = json.load(f)
    except json.JSONDecodeError as e:
        raise DataDirError(f"{path} is not valid JSON ({e.msg} at line {e.lineno}); move it away and rerun") from None
    except OSError as e:
        raise DataDirError(f"cannot read {path}: {e.strerror or e}") from None
    if not isinstance(doc, dict) or doc.get("format") != FILE_FORMAT:
        raise DataDirError(f"{path} is not a studylib sweep file (format {FILE_FORMAT})")
    return doc


@contextlib.contextmanager
def _sweep_lock(folder: Path, name: str):
    """One writer per sweep file: a second concurrent sweep of the same name fails clearly."""
    import fcntl

    lock_path = folder / f".{name}.lock"
    try:
        f = open(lock_path, "a")
    except OSError as e:
        raise DataDirError(f"data folder {str(folder)!r} is not writable: {e.strerror or e}") from None
    with f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise StudyError(f"another process is running sweep {name!r} into {folder}; wait for it") from None
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _describe(p: dict) -> str:
    return (f"{p['impl']} N={p['num_envs']} K={p['steps']} S={p['state_factor']} C={p['compute_factor']} "
            f"policy={p['policy']} device={p['device'] or 'default'}")


def _progress_bar(total: int, name: str, progress: bool):
    from tqdm.auto import tqdm

    enabled = bool(progress) and sys.stderr.isatty()
    return tqdm(total=total, desc=f"sweep {name}", unit="pt", disable=not enabled, file=sys.stderr,
                dynamic_ncols=True)


def _to_frame(rows: list[dict], machine: str | None = None):
    import pandas as pd

    df = pd.DataFrame(rows)
    if machine is not None:
        df["machine"] = machine
    return df


def sweep(name, grid, *, data_dir="data", repeats=3, min_seconds=0.2, progress=True, seed=0, log=None):
    """Measure every point of ``grid`` on this machine, appending rows to the sweep's data file.

    ``grid``: {"impl": [...], "num_envs": [...], "steps": [...], "state_factor": [1],
    "compute_factor": [1], "policy": ["mlp"], "device": [None]} (missing keys take the defaults).
    Points already in ``<data_dir>/<machine_key>/<name>.json`` with identical parameters
    (incl. repeats, min_seconds, seed) are skipped, so a killed sweep resumes where it stopped.
    Points that cannot run here (too big for memory by ``estimate_bytes``, no CUDA device, an
    impl/device mismatch) are not attempted; they are recorded under ``skipped`` with the reason
    and reported through ``log`` (stderr by default). Returns a DataFrame of this grid's rows on
    this machine (``df.attrs["skipped"]`` lists the skipped points with reasons).
    """
    name = check_sweep_name(name)
    points = expand_grid(grid)
    repeats = positive_int("repeats", repeats)
    min_seconds = check_min_seconds(min_seconds)
    seed = check_seed(seed)
    info = machine_info()
    key = info["machine_key"]
    folder = _machine_dir(data_dir, key)
    _ensure_writable(folder)
    path = folder / f"{name}.json"
    if log is None:
        def log(msg):
            from tqdm.auto import tqdm

            tqdm.write(msg, file=sys.stderr)

    with _sweep_lock(folder, name):
        doc = read_sweep_file(path) if path.exists() else {
            "format": FILE_FORMAT, "sweep": name, "machine": key, "runs": [], "rows": [], "skipped": [],
        }
        run_id = f"{now_utc()}-{uuid.uuid4().hex[:8]}"
        doc["machine_info"] = info
        doc["runs"].append({
            "run_id": run_id, "started": now_utc(), "provenance": info,
            "parameters": {"grid": {k: [p[k] for p in points] for k in GRID_KEYS},
                           "points": len(points), "repeats": repeats, "min_seconds": min_seconds,
                           "seed": seed, "argv": list(sys.argv)},
        })
        atomic_write_json(path, doc)
        atomic_write_json(folder / "machine.json", info)

        done = {point_key(r): r for r in doc["rows"]}
        extra = {"repeats": repeats, "min_seconds": min_seconds, "seed": seed}
        wanted, skipped_now = [], []
        bar = _progress_bar(len(points), name, progress)
        try:
            for p in points:
                pk = point_key({**p, **extra})
                if pk in done:
                    wanted.append(done[pk])
                    bar.update(1)
                    continue
                bar.set_postfix_str(_describe(p), refresh=True)
                try:
                    row = measure(**p, repeats=repeats, min_seconds=min_seconds, seed=seed)
                except (InsufficientMemoryError, DeviceUnavailableError, ConfigError) as e:
                    entry = {**p, **extra, "reason": str(e), "error": type(e).__name__, "run_id": run_id,
                             "date": now_utc()}
                    doc["skipped"] = [s for s in doc["skipped"] if point_key(s) != pk] + [entry]
                    skipped_now.append(entry)
                    log(f"skipped {_describe(p)}: {e}")
                else:
                    row["run_id"] = run_id
                    doc["rows"].append(row)
                    doc["skipped"] = [s for s in doc["skipped"] if point_key(s) != pk]
                    done[pk] = row
                    wanted.append(row)
                atomic_write_json(path, doc)
                bar.update(1)
        finally:
            bar.close()
    df = _to_frame(wanted, key)
    df.attrs["skipped"] = skipped_now
    df.attrs["path"] = str(path)
    return df


def load(name, *, data_dir="data", machine=None):
    """All rows of sweep ``name`` (every machine folder under ``data_dir``, or just ``machine``).

    Adds columns ``machine`` (the folder), ``commit`` and ``dirty`` (from the run that measured
    the row). Raises ConfigError when no machine has this sweep.
    """
    import pandas as pd

    name = check_sweep_name(name)
    root = Path(data_dir)
    if machine is not None:
        paths = [root / machine / f"{name}.json"]
        paths = [p for p in paths if p.exists()]
    else:
        paths = sorted(root.glob(f"*/{name}.json"))
    if not paths:
        where = f"machine {machine!r} in " if machine else ""
        raise ConfigError(f"no data for sweep {name!r} in {where}{str(root)!r}")
    frames = []
    for path in paths:
        doc = read_sweep_file(path)
        runs = {r["run_id"]: r.get("provenance", {}) for r in doc.get("runs", [])}
        rows = []
        for r in doc["rows"]:
            prov = runs.get(r.get("run_id"), {})
            rows.append({**r, "machine": path.parent.name, "commit": prov.get("commit"),
                         "dirty": prov.get("dirty")})
        frames.append(pd.DataFrame(rows))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def load_skipped(name, *, data_dir="data", machine=None):
    """The skipped points of sweep ``name`` with their reasons (column ``machine`` added)."""
    import pandas as pd

    name = check_sweep_name(name)
    root = Path(data_dir)
    paths = [root / machine / f"{name}.json"] if machine else sorted(root.glob(f"*/{name}.json"))
    rows = []
    for path in paths:
        if path.exists():
            rows += [{**s, "machine": path.parent.name} for s in read_sweep_file(path).get("skipped", [])]
    return pd.DataFrame(rows)


# ---- presentation -------------------------------------------------------------------------------

def format_table(rows) -> str:
    """A human table of measure() rows."""
    header = ["impl", "N", "K", "S", "C", "policy", "device", "samples/s", "min..max", "calls", "compile_s", "episodes"]
    lines = []
    for r in rows:
        lines.append([
            r["impl"], str(r["num_envs"]), str(r["steps"]), str(r["state_factor"]), str(r["compute_factor"]),
            r["policy"], r["device"], f"{r['samples_per_s']:.3g}",
            f"{r['samples_per_s_min']:.3g}..{r['samples_per_s_max']:.3g}", str(r["calls_per_repeat"]),
            f"{r['compile_s']:.3f}", str(r["episodes_finished"]),
        ])
    widths = [max(len(h), *(len(l[i]) for l in lines)) if lines else len(h) for i, h in enumerate(header)]
    out = ["  ".join(h.rjust(w) for h, w in zip(header, widths))]
    out += ["  ".join(c.rjust(w) for c, w in zip(l, widths)) for l in lines]
    return "\n".join(out)
