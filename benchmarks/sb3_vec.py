"""Stepping the chain through Stable-Baselines3's VecEnv API: SB3's own ``make_vec_env`` (a
``DummyVecEnv`` of N single envs, a Python loop over them) against ``studylib.adapters.sb3_vec``
(one call of the batched implementation for all N), in one run.

    python benchmarks/sb3_vec.py                          # N = 16, 256; impls cpp, fused, jax
    python benchmarks/sb3_vec.py --num-envs 64 --links 4 --impls fused

Zero actions (the step's cost, no policy), 200 steps after 20 of warm-up, the best of 3 repeats;
printed: µs per sample (per env step) of each, and DummyVecEnv's over the adapter's. Figures only:
nothing is saved, nothing here is a test.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from stable_baselines3.common.env_util import make_vec_env

from studylib.adapters import sb3_vec


def us_per_sample(venv, num_envs: int, steps: int = 200, repeats: int = 3) -> float:
    venv.reset()
    actions = np.zeros((num_envs, 1), np.float32)
    for _ in range(20):
        venv.step(actions)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            venv.step(actions)
        best = min(best, (time.perf_counter() - start) / (steps * num_envs))
    venv.close()
    return best * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--num-envs", type=int, nargs="+", default=[16, 256])
    ap.add_argument("--links", type=int, default=2)
    ap.add_argument("--impls", nargs="+", default=["cpp", "fused", "jax"])
    args = ap.parse_args()
    for n in args.num_envs:
        dummy = us_per_sample(make_vec_env("studylib/Chain-v0", n_envs=n,
                                           env_kwargs={"impl": "cpp", "links": args.links}), n)
        print(f"N = {n}, n = {args.links}: DummyVecEnv of single cpp envs {dummy:.2f} µs/sample")
        for impl in args.impls:
            ours = us_per_sample(sb3_vec.make("studylib/Chain-v0", n, impl=impl, links=args.links), n)
            print(f"  sb3_vec {impl:6s} {ours:8.2f} µs/sample   DummyVecEnv / this: {dummy / ours:6.1f}×")


if __name__ == "__main__":
    main()
