"""Microseconds per ``step`` call, ours beside gymnasium's own vectorized CartPole.

    python benchmarks/step_cost.py                     # N = 1, 4, 64, 4096, 65536; 7 rounds
    python benchmarks/step_cost.py --sizes 1 64 --rounds 11

Variants, all in this one process, each made once per N and reset before timing:

``gymnasium``      gymnasium's ``CartPoleVectorEnv`` (numpy, float64), ``step(actions)``
``<impl>``         ``studylib.make(impl, N).step(actions)`` for cpp, fused (on the CPU), torch, jax
``<impl> adapter`` ``gymnasium.make_vec("studylib/CartPole-v1", num_envs=N, impl=impl).step(actions)``
                   (the gymnasium adapter, NEXT_STEP autoreset, as a gymnasium user steps it)

Actions are random numpy int64 vectors made before timing, used in turn. Each round times one
block of calls of every variant, in an order that rotates from round to round, so no variant is
timed in a quieter stretch of a shared machine than the others; a block lasts about
``--block-ms``. The figures are the medians over the rounds (µs per call) and the ratio of
gymnasium's median to each variant's (how many times faster than gymnasium). Threads: each
library's defaults (cpp and fused use OpenMP above 8192 env-steps per call). Prints figures only:
nothing here is a test, nothing is saved.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import gymnasium
import numpy as np
from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv

import studylib
import studylib.adapters.gym_vector  # noqa: F401  (registers studylib/CartPole-v1)

IMPLS = ("cpp", "fused", "torch", "jax")
ACTION_ROWS = 8


def _variants(n: int) -> dict:
    """name -> step callable (taking actions), each env reset."""
    out = {}
    theirs = CartPoleVectorEnv(num_envs=n)
    theirs.reset(seed=0)
    out["gymnasium"] = theirs.step
    for impl in IMPLS:
        device = "cpu" if impl == "fused" else None
        env = studylib.make(impl, n, seed=0, device=device)
        env.reset()
        out[impl] = env.step
    for impl in IMPLS:
        device = "cpu" if impl == "fused" else None
        envs = gymnasium.make_vec("studylib/CartPole-v1", num_envs=n, impl=impl, device=device)
        envs.reset(seed=0)
        out[f"{impl} adapter"] = envs.step
    return out


def _time_block(step, actions, calls: int) -> float:
    """Seconds per call over ``calls`` calls."""
    rows = len(actions)
    start = time.perf_counter()
    for i in range(calls):
        step(actions[i % rows])
    return (time.perf_counter() - start) / calls


def measure(n: int, rounds: int, block_s: float, rng) -> dict:
    variants = _variants(n)
    actions = [rng.integers(0, 2, n) for _ in range(ACTION_ROWS)]
    calls = {}
    for name, step in variants.items():  # warm up (jit compiles, caches) and size each block
        _time_block(step, actions, 3)
        per_call = _time_block(step, actions, 10)
        calls[name] = max(3, min(20000, int(block_s / per_call)))
    names = list(variants)
    times = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            times[name].append(_time_block(variants[name], actions, calls[name]))
    return {name: statistics.median(t) * 1e6 for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 64, 4096, 65536])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--block-ms", type=float, default=20.0)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; medians of {args.rounds} "
          f"alternating rounds, µs per step call (× = gymnasium's time / this one's)")
    results = {n: measure(n, args.rounds, args.block_ms / 1e3, rng) for n in args.sizes}
    names = list(next(iter(results.values())))
    print("| variant | " + " | ".join(f"N = {n}" for n in args.sizes) + " |")
    print("|---|" + "---|" * len(args.sizes))
    for name in names:
        cells = []
        for n in args.sizes:
            us = results[n][name]
            ratio = results[n]["gymnasium"] / us
            cells.append(f"{us:.3g}" if name == "gymnasium" else f"{us:.3g} ({ratio:.3g}×)")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
