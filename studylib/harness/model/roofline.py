"""Roofline: this machine's ceilings, measured here by code that is none of the implementations,
and each measurement placed against them.

Two ceilings, each measured by ``harness.timing`` (best timed region: a ceiling is what the
machine can do), and the work of one step, counted once in ``studylib.costs``:

``fma``     peak FP32 multiply-add throughput, flops/s: ``cuda/fma_peak.cpp`` (independent FMA
            chains on SIMD vectors, every core, no memory traffic; ``native.library("fma_peak")``).
``memory``  stream bandwidth, bytes/s (read + written): a numpy copy of arrays far larger than
            the caches.

A step's ceiling in steps/s (``bound_for``):
  compute  fma / ``costs.step_flops(S, C, policy)`` (the MLP's flops included with the MLP)
  memory   memory / ``costs.unfused_bytes(S)`` for an implementation that passes over its state
           in memory every step; K x that for one that passes over it once per K-step call and
           keeps it in cache in between (cpp/cuda/fused running K > 1 steps per call without a
           policy between them, and ``fused`` with K > 1): the paper's state factor S makes that
           pass 32*S + 16 bytes per environment, so fusion's gain is bounded by K and by the
           compute ceiling over the memory ceiling
and the binding one is the smaller. The flop count leaves out sin, cos and divisions (see
``studylib.costs``), so the compute ceiling is an upper bound no step reaches; how far below it a
measurement stays is what the chapters read.

``gemm`` (``gemm_steps_per_s``) is not a ceiling but a reference the Beyond chapter compares
inference with: the MLP's three GEMMs alone through PyTorch ``mm`` at the same shapes.

Saved rows: ``{"ceiling": "memory" | "fma" | "gemm", "value": ..., "num_envs" (gemm)}``, one data
file per machine (``harness.data.store``); ``ceiling_items`` names those a build needs,
``measure_ceiling`` measures one, ``from_rows`` turns rows into the dict ``bound_for`` reads.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ... import costs
from ...implspec import IMPLEMENTATIONS, spec
from ...policy import mlp_weights
from ..data.provenance import now_utc
from ..timing import time_regions

MIN_SECONDS = 0.02  # per timed region: long enough for the timer, short enough to repeat
CEILING_KEYS = ("ceiling", "state_factor", "compute_factor", "num_envs")
FMA_ITERATIONS = 2**20  # per call of fma_peak: ~10 ms at 100 GFLOP/s


def _best_rate(call, work_per_call: float, repeats: int) -> float:
    return max(time_regions(call, repeats=repeats, min_seconds=MIN_SECONDS).rates(work_per_call))


def memory_bandwidth(nbytes: int = 512 * 2**20) -> float:
    """Stream copy bandwidth in bytes/s (read + write), best of 5 timed regions."""
    src = np.ones(nbytes // 4, np.float32)
    dst = np.empty_like(src)
    return _best_rate(lambda: np.copyto(dst, src), 2 * nbytes, 5)


def fma_flops_per_s(iterations: int = FMA_ITERATIONS) -> float:
    """Peak FP32 flops/s of this CPU (``cuda/fma_peak.cpp``, all cores), best of 5 timed regions."""
    from ...native import library

    lib = library("fma_peak")

    def call():
        lib.fma_peak(iterations)  # its result only keeps the chains alive; nothing to count

    return _best_rate(call, lib.fma_peak_flops(iterations), 5)


CEILINGS_FILE = "beyond_roofline.json"  # where a machine folder keeps its ceilings


def saved_ceilings(folder) -> dict:
    """The ceilings a machine folder saved (``CEILINGS_FILE``, current rows only, as ``from_rows``
    reads them; None where it has none): measures nothing."""
    from ..data import store
    from ..data.semantics import staleness

    path = Path(folder) / CEILINGS_FILE
    rows = store.read(path)["rows"] if path.is_file() else []
    return from_rows([r for r in rows if not staleness(r, "ceiling")])


def fma_ceiling(data_dir=None) -> tuple[float, str]:
    """(flops/s, where from) of this machine's FMA ceiling for a report: ``fma_flops_per_s`` measured
    now, or the one this machine's data folder saved (``saved_ceilings``), whichever is larger. A
    ceiling is the best the machine does; measured while another process holds a core it reads
    low, and a share of it high. Under $STUDYLIB_NATIVE_ARCH (``native.build.native_arch``) the
    ceiling of that build, measured now: the saved ones are the native build's."""
    from ...native.build import native_arch

    live = fma_flops_per_s()
    if native_arch() != "native":  # the saved ceilings are the native build's: another ISA's is its own
        return live, f"measured now, built with -march={native_arch()}"
    return _larger_of_now_and_saved(live, "fma_flops_per_s", data_dir)


def memory_ceiling(data_dir=None) -> tuple[float, str]:
    """(bytes/s, where from) of this machine's stream bandwidth for a report: ``memory_bandwidth``
    measured now, or the one its data folder saved, whichever is larger (as ``fma_ceiling``)."""
    return _larger_of_now_and_saved(memory_bandwidth(), "memory_bytes_per_s", data_dir)


def _larger_of_now_and_saved(live: float, key: str, data_dir) -> tuple[float, str]:
    from ..data import store
    from ..presets import resolve_data_dir
    from ..data.provenance import machine_key

    folder = store.machine_folder(resolve_data_dir(data_dir), machine_key())
    try:
        saved = saved_ceilings(folder)[key] or 0.0
    except store.DataDirError:  # not a data file: the measurement alone
        saved = 0.0
    return (live, "measured now") if live >= saved else (saved, f"saved in {folder / CEILINGS_FILE}")


def mlp_share(samples_per_s: float, fma_flops: float, layer_sizes=None) -> dict:
    """The MLP's arithmetic of a measurement at ``samples_per_s`` against the FMA ceiling
    ``fma_flops`` (flops/s, ``fma_flops_per_s``): flop per sample, achieved GFLOP/s, ceiling GFLOP/s
    and the share of it (the policy's flops only: the simulation's few dozen are left out; the
    activations and the argmax are not multiply-adds and are not counted, ``costs.mlp_flops``)."""
    flop = costs.mlp_flops(layer_sizes)
    achieved = samples_per_s * flop
    return {"mlp_flop_per_sample": flop, "mlp_gflop_per_s": achieved / 1e9, "fma_gflop_per_s": fma_flops / 1e9,
            "fma_share": achieved / fma_flops}


def gemm_steps_per_s(num_envs: int, chunk: int = 4096) -> float:
    """Observations per second through the MLP's three GEMMs alone (PyTorch ``mm`` into
    preallocated outputs, in cache-sized chunks of at most ``chunk`` rows): what a library GEMM
    sustains at the policy's shapes, with no bias, tanh or argmax and no trip to memory."""
    import torch

    w = mlp_weights(0)
    w1, w2, w3 = (torch.from_numpy(a) for a in (w.w1, w.w2, w.w3))
    rows = min(num_envs, chunk)
    x = torch.rand(rows, 4)
    h1, h2, out = torch.empty(rows, 64), torch.empty(rows, 64), torch.empty(rows, 2)
    reps = max(1, 2**16 // rows)

    def run():
        for _ in range(reps):
            torch.mm(x, w1, out=h1)
            torch.mm(h1, w2, out=h2)
            torch.mm(h2, w3, out=out)

    return _best_rate(run, reps * rows, 5)


def ceiling_items(gemm_num_envs=()) -> list[dict]:
    """The ceilings a build needs: memory, fma, and the GEMM reference at each N given."""
    return [{"ceiling": "memory"}, {"ceiling": "fma"}] + [{"ceiling": "gemm", "num_envs": int(n)}
                                                        for n in sorted(set(gemm_num_envs))]


def measure_ceiling(item: dict) -> dict:
    """One saved row: ``item`` with its measured ``value`` (bytes/s, flops/s or steps/s)."""
    measure = {"memory": memory_bandwidth, "fma": fma_flops_per_s}.get(item["ceiling"])
    value = measure() if measure else gemm_steps_per_s(item["num_envs"])
    return {**item, "value": value, "date": now_utc()}


def from_rows(rows) -> dict:
    """The ceilings of saved rows, as ``bound_for`` reads them. Rows of a ceiling this module no
    longer uses (``physics``: the cpp kernel itself, in files written before) are left out."""
    ceil = {"memory_bytes_per_s": None, "fma_flops_per_s": None, "gemm_steps_per_s": {}}
    for r in rows:
        if r["ceiling"] == "memory":
            ceil["memory_bytes_per_s"] = r["value"]
        elif r["ceiling"] == "fma":
            ceil["fma_flops_per_s"] = r["value"]
        elif r["ceiling"] == "gemm":
            ceil["gemm_steps_per_s"][int(r["num_envs"])] = r["value"]
    return ceil


def balance(ceil: dict) -> float:
    """The machine balance: flops it can do per byte it can move (fma / memory)."""
    return ceil["fma_flops_per_s"] / ceil["memory_bytes_per_s"]


def keeps_state_in_cache(row: dict) -> bool:
    """True for a measurement whose K steps per call run on a block of environments held in cache
    (the fused kernels); False for one that passes over memory every step."""
    fused = row["impl"] in IMPLEMENTATIONS and row["policy"] in spec(row["impl"]).fused_policies
    return fused and int(row["steps"]) > 1


def ceilings_for(row: dict, ceil: dict) -> dict:
    """Steps/s of each ceiling of one measurement row: {"compute": ..., "memory": ...}, the memory
    one for one pass over the state per step, or per K-step call where it stays in cache."""
    s, c = int(row["state_factor"]), int(row["compute_factor"])
    steps_per_pass = int(row["steps"]) if keeps_state_in_cache(row) else 1
    return {"compute": ceil["fma_flops_per_s"] / costs.step_flops(s, c, row["policy"]),
            "memory": ceil["memory_bytes_per_s"] * steps_per_pass / costs.unfused_bytes(s)}


def bound_for(row: dict, ceil: dict) -> tuple[str, float]:
    """(name, steps/s) of the ceiling that binds one measurement row: the smaller that applies."""
    name, value = min(ceilings_for(row, ceil).items(), key=lambda kv: kv[1])
    return name, value


def bound_share(row: dict, ceil: dict) -> dict:
    """A CartPole measurement row against the ceiling that binds it (``bound_for``): that ceiling's
    name and steps/s, the share of it the row's samples/s reach, and the bytes of state the row's
    N environments hold (a row above the memory ceiling is one whose state the caches serve)."""
    name, value = bound_for(row, ceil)
    state = int(row["num_envs"]) * costs.unfused_bytes(int(row["state_factor"]))
    return {"bound": name, "bound_steps_per_s": value, "bound_share": row["samples_per_s"] / value,
            "state_bytes": state}


class CeilingShares:
    """Measurement rows against this CPU's ceilings, for a report (``python -m studylib bench``): the
    ceilings (``fma_ceiling``, ``memory_ceiling``) measured once, at the first CartPole row on the
    CPU, and added to each such row with its shares of them: the row against the ceiling that
    binds it (``bound_share``) and, with the MLP, the MLP's flops against the FMA ceiling
    (``mlp_share``). The roofline counts CartPole's step: rows of other simulators, and rows on a
    GPU, are left as they are."""

    def __init__(self, data_dir=None):
        self.data_dir = data_dir
        self.ceil = None  # the ceilings as ``bound_for`` reads them
        self.columns = None  # the same in GFLOP/s and GB/s with where each is from, as every placed row carries them

    def add(self, row: dict) -> dict:
        if row["device"] != "cpu" or row.get("sim") != "cartpole":
            return row
        if self.ceil is None:
            (fma, fma_from), (memory, memory_from) = fma_ceiling(self.data_dir), memory_ceiling(self.data_dir)
            self.ceil = {"fma_flops_per_s": fma, "memory_bytes_per_s": memory}
            self.columns = {"fma_gflop_per_s": fma / 1e9, "fma_ceiling_from": fma_from,
                            "memory_gb_per_s": memory / 1e9, "memory_ceiling_from": memory_from}
        if row["policy"] == "mlp":
            row.update(mlp_share(row["samples_per_s"], self.ceil["fma_flops_per_s"]))
        row.update(bound_share(row, self.ceil), **self.columns)
        return row
