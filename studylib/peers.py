"""Peer CartPole implementations measured with the same clock as ours (simulation only).

``gymnasium-vector``: gymnasium's own numpy-vectorized ``CartPoleVectorEnv`` (NEXT_STEP autoreset,
its own semantics), driven by actions drawn once per rollout. Used by issue 2's performance check
(`python -m studylib.peers`) and, later, by ``bench`` as an extra name.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import studylib


def gymnasium_vector_steps_per_s(num_envs: int, num_steps: int, seed: int = 0) -> float:
    from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv

    env = CartPoleVectorEnv(num_envs=num_envs)
    env.reset(seed=seed)
    actions = np.random.default_rng(seed).integers(0, 2, (num_steps, num_envs))
    env.step(actions[0])  # warm-up
    start = time.perf_counter()
    for a in actions:
        env.step(a)
    return num_envs * num_steps / (time.perf_counter() - start)


def studylib_steps_per_s(impl: str, num_envs: int, num_steps: int, policy: str = "none") -> float:
    env = studylib.make(impl, num_envs)
    env.reset()
    env.rollout(min(num_steps, 10), policy=policy)  # warm-up: build/compile excluded
    env.synchronize()
    start = time.perf_counter()
    env.rollout(num_steps, policy=policy)
    env.synchronize()
    return num_envs * num_steps / (time.perf_counter() - start)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="cpp (K steps per call, no policy) vs gymnasium CartPoleVectorEnv")
    ap.add_argument("--log2-num-envs", type=int, default=20)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--peer-steps", type=int, default=50, help="steps for the (slow) peer")
    args = ap.parse_args(argv)
    n = 2 ** args.log2_num_envs
    ours = studylib_steps_per_s("cpp", n, args.steps)
    peer = gymnasium_vector_steps_per_s(n, args.peer_steps)
    print(f"N=2^{args.log2_num_envs} S=1 C=1 policy=none device=cpu")
    print(f"  cpp, K={args.steps} per call      {ours:12.3e} steps/s")
    print(f"  gymnasium CartPoleVectorEnv {peer:12.3e} steps/s")
    print(f"  ratio                       {ours / peer:12.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
