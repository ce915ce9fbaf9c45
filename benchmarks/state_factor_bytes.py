"""The paper's state factor S as memory traffic: bytes per unfused step, measured against counted.

    python benchmarks/state_factor_bytes.py                          # cpp, fused, jax, torch; S = 64, 1024
    python benchmarks/state_factor_bytes.py --impls cpp --state-bytes 268435456 --rounds 7

Paper §4.2: "The state factor S increases the cartpole state size by a factor of S×, resulting in
S× as many global memory loads and stores". An unfused step (K = 1 per call) of one environment
moves 32·S + 16 bytes (``studylib.costs.unfused_bytes``: its 4·S floats and two counters, read and
written). For each implementation and S, with N chosen so that the state is ``--state-bytes``
(default 256 MiB, far beyond a typical last-level cache), this times one K = 1 call and one stream
copy of an array of the same size (numpy, one core: the reference bandwidth), alternating them
round after round on a shared machine, and prints the medians:

  measured bytes/step = (seconds per environment-step) × (stream bandwidth)
  ratio               = measured / counted; ~1 when the step is bound by its bytes

and, for ``cpp`` (the fused kernel's CPU build), the fusion speedup of K = ``--fused-steps`` steps
per call over K = 1, which should approach K as S grows when the carried floats are real traffic
that a fused call moves once. Prints figures only: nothing here is a test, nothing is saved.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import studylib
from studylib import costs


def _seconds(fn, repeats: int = 1) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--impls", default="cpp,fused,jax,torch")
    ap.add_argument("--state-factors", default="64,1024")
    ap.add_argument("--state-bytes", type=int, default=2**28)
    ap.add_argument("--fused-steps", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    impls = args.impls.split(",")
    factors = [int(s) for s in args.state_factors.split(",")]
    src = np.ones(args.state_bytes // 4, np.float32)
    dst = np.empty_like(src)
    envs = {}
    for impl in impls:
        for s in factors:
            n = max(1, args.state_bytes // (16 * s))
            env = studylib.make(impl, n, state_factor=s)
            env.reset()
            if hasattr(env, "compile"):
                for k in {1, args.fused_steps}:
                    env.compile(k, "none")
            env.rollout(1, policy="none")  # warm
            envs[impl, s] = env
    samples = {key: [] for key in envs}
    fused = {s: [] for s in factors}
    for r in range(args.rounds):
        for (impl, s), env in envs.items():
            copy = _seconds(lambda: np.copyto(dst, src))
            step = _seconds(lambda: (env.rollout(1, policy="none"), env.synchronize()))
            bandwidth = 2 * src.nbytes / copy
            samples[impl, s].append((step / env.num_envs * bandwidth, bandwidth, step))
            if impl == "cpp":
                k = args.fused_steps
                call = _seconds(lambda: env.rollout(k, policy="none"))
                fused[s].append(step * k / call)
    print(f"state {args.state_bytes / 2**20:g} MiB per implementation and S; medians of {args.rounds} alternating rounds")
    print(f"{'impl':>14} {'S':>5} {'N':>8} {'counted B/step':>15} {'measured B/step':>16} {'ratio':>6} "
          f"{'stream GB/s':>12} {'K=1 call s':>11}")
    for (impl, s), rows in samples.items():
        measured = statistics.median(r[0] for r in rows)
        counted = costs.unfused_bytes(s)
        print(f"{impl:>14} {s:>5} {envs[impl, s].num_envs:>8} {counted:>15} {measured:>16.0f} {measured / counted:>6.2f} "
              f"{statistics.median(r[1] for r in rows) / 1e9:>12.3g} {statistics.median(r[2] for r in rows):>11.4f}")
    for s, values in fused.items():
        if values:
            print(f"cpp S = {s}: fusion speedup K = {args.fused_steps} over K = 1: median {statistics.median(values):.3g}x "
                  f"(min {min(values):.3g}x, max {max(values):.3g}x)")


if __name__ == "__main__":
    main()
