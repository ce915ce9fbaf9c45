"""Roofline: this machine's ceilings, and each measurement as a fraction of the one that binds it.

Three ceilings, measured here (never typed in), each in CartPole steps (samples) per second:

``memory``   one pass over the state per step: the stream bandwidth (numpy copy of arrays far
             larger than the caches, bytes read + written per second) divided by the bytes a step
             must move when the state is not kept in cache between steps: the 4*S float32 state
             read and written, plus the int32/uint32 episode counters read and written
             (16*S + 16 bytes).
``physics``  the dynamics' math with no memory traffic: the cpp kernel itself (all cores, SIMD)
             on so few environments that their state never leaves L1/L2 (16*S*N bytes <= 64 KiB),
             K=1000 steps per call, hashed actions: the compute-bound corner of the same code.
``gemm``     the policy's GEMMs alone: PyTorch ``mm`` of the shapes (n,4)x(4,64), (n,64)x(64,64),
             (n,64)x(64,2), n = min(N, 4096) rows at a time so the activations stay in cache, no
             bias/tanh/argmax. An implementation that fuses the whole forward pass per environment
             (``fused``) is not bound by a library GEMM's call and blocking overheads and can pass it.

Which bound applies to a measurement (``bound_for``):
  * policy "mlp": min(gemm, physics). Inference is part of every sample (a lower bound on time:
    an unfused implementation also pays the memory passes, so this bound is optimistic).
  * policy "none", unfused (an implementation that passes over memory every step: torch, jax,
    gym, peers, and cpp/cuda/fused with K=1): min(memory, physics).
  * policy "none", fused (cpp/cuda/fused with K>1 per call: the state stays in cache): physics.
On a GPU these ceilings would be the GPU's; this module measures the CPU only and says so.
Each ceiling is the best timed region of ``harness.timing`` (a ceiling is what the machine can do).

Saved ceilings are rows ``{"ceiling": "memory" | "physics" | "gemm", "value": ..., and
state_factor, compute_factor (physics) or num_envs (gemm)}``, one data file per machine
(``harness.store``); ``ceiling_items`` names those a build needs, ``measure_ceiling`` measures one
and ``from_rows`` turns the rows into the dict ``bound_for`` reads.
"""

from __future__ import annotations

import numpy as np

from ..policy import mlp_weights
from ..registry import make
from .provenance import now_utc
from .timing import time_regions

FUSED_IMPLEMENTATIONS = ("cpp", "cuda", "fused")
MIN_SECONDS = 0.02  # per timed region: long enough for the timer, short enough to repeat
CEILING_KEYS = ("ceiling", "state_factor", "compute_factor", "num_envs")


def _best_rate(call, work_per_call: float, repeats: int) -> float:
    return max(time_regions(call, repeats=repeats, min_seconds=MIN_SECONDS).rates(work_per_call))


def memory_bandwidth(nbytes: int = 512 * 2**20) -> float:
    """Stream copy bandwidth in bytes/s (read + write), best of 5 timed regions."""
    src = np.ones(nbytes // 4, np.float32)
    dst = np.empty_like(src)
    return _best_rate(lambda: np.copyto(dst, src), 2 * nbytes, 5)


def physics_steps_per_s(state_factor: int = 1, compute_factor: int = 1, steps: int = 1000) -> float:
    """Steps/s of the cpp kernel on a cache-resident set of environments (see module doc)."""
    num_envs = max(32, 4096 // state_factor)  # 16 * S * N bytes of state: 64 KiB
    env = make("cpp", num_envs, state_factor=state_factor, compute_factor=compute_factor)
    return _best_rate(lambda: env.rollout(steps, policy="none").episodes_finished, num_envs * steps, 3)


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


def bytes_per_step(state_factor: int) -> int:
    return 2 * (16 * state_factor + 8)  # state + two 4-byte counters, read and written


def ceiling_items(num_envs_list) -> list[dict]:
    """The ceilings a build needs: memory, physics at S = C = 1, the GEMMs at each N of interest."""
    return ([{"ceiling": "memory"}, {"ceiling": "physics", "state_factor": 1, "compute_factor": 1}]
            + [{"ceiling": "gemm", "num_envs": int(n)} for n in sorted(set(num_envs_list))])


def measure_ceiling(item: dict) -> dict:
    """One saved row: ``item`` with its measured ``value`` (bytes/s for memory, else steps/s)."""
    if item["ceiling"] == "memory":
        value = memory_bandwidth()
    elif item["ceiling"] == "physics":
        value = physics_steps_per_s(item["state_factor"], item["compute_factor"])
    else:
        value = gemm_steps_per_s(item["num_envs"])
    return {**item, "value": value, "date": now_utc()}


def from_rows(rows) -> dict:
    """The ceilings of saved rows, as ``bound_for`` reads them."""
    ceil = {"memory_bytes_per_s": None, "physics_steps_per_s": {}, "gemm_steps_per_s": {}}
    for r in rows:
        if r["ceiling"] == "memory":
            ceil["memory_bytes_per_s"] = r["value"]
        elif r["ceiling"] == "physics":
            ceil["physics_steps_per_s"][(r["state_factor"], r["compute_factor"])] = r["value"]
        else:
            ceil["gemm_steps_per_s"][int(r["num_envs"])] = r["value"]
    return ceil


def bound_for(row: dict, ceil: dict) -> tuple[str, float]:
    """(name, steps/s) of the ceiling that applies to one measurement row (see module doc)."""
    s, c = int(row["state_factor"]), int(row["compute_factor"])
    physics_by_knobs = ceil["physics_steps_per_s"]
    if (s, c) not in physics_by_knobs:  # measured on first use for these knobs
        physics_by_knobs[(s, c)] = physics_steps_per_s(s, c)
    physics = physics_by_knobs[(s, c)]
    if row["policy"] == "mlp":
        gemms = ceil["gemm_steps_per_s"]
        n = min(gemms, key=lambda k: abs(np.log2(k) - np.log2(row["num_envs"])))
        return ("gemm", gemms[n]) if gemms[n] < physics else ("physics", physics)
    fused = row["impl"] in FUSED_IMPLEMENTATIONS and int(row["steps"]) > 1
    memory = ceil["memory_bytes_per_s"] / bytes_per_step(s)
    if fused or physics < memory:
        return "physics", physics
    return "memory", memory
