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
"""

from __future__ import annotations

import time

import numpy as np

from .provenance import cpu_model

FUSED_IMPLEMENTATIONS = ("cpp", "cuda", "fused")


def _best_of(fn, repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def memory_bandwidth(nbytes: int = 512 * 2**20) -> float:
    """Stream copy bandwidth in bytes/s (read + write), best of 5."""
    src = np.ones(nbytes // 4, np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)  # first touch
    return 2 * nbytes / _best_of(lambda: np.copyto(dst, src))


def physics_steps_per_s(state_factor: int = 1, compute_factor: int = 1, steps: int = 1000) -> float:
    """Steps/s of the cpp kernel on a cache-resident set of environments (see module doc)."""
    from . import make

    num_envs = max(32, 4096 // state_factor)  # 16 * S * N bytes of state: 64 KiB
    env = make("cpp", num_envs, state_factor=state_factor, compute_factor=compute_factor)
    env.rollout(steps, policy="none")  # warm
    return num_envs * steps / _best_of(lambda: env.rollout(steps, policy="none"), 3)


def gemm_steps_per_s(num_envs: int, chunk: int = 4096) -> float:
    """Observations per second through the MLP's three GEMMs alone (PyTorch ``mm`` into
    preallocated outputs, in cache-sized chunks of at most ``chunk`` rows): what a library GEMM
    sustains at the policy's shapes, with no bias, tanh or argmax and no trip to memory."""
    import torch

    from .policy import mlp_weights

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

    run()
    return reps * rows / _best_of(run)


def bytes_per_step(state_factor: int) -> int:
    return 2 * (16 * state_factor + 8)  # state + two 4-byte counters, read and written


def ceilings(num_envs_list=(2**12, 2**16)) -> dict:
    """Measure the machine's ceilings once; GEMM at each N of interest."""
    return {
        "cpu_model": cpu_model(),
        "memory_bytes_per_s": memory_bandwidth(),
        "physics_steps_per_s": {(1, 1): physics_steps_per_s()},
        "gemm_steps_per_s": {int(n): gemm_steps_per_s(int(n)) for n in num_envs_list},
    }


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
