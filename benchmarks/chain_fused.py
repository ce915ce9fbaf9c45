"""The chain as a robot-learning environment, fused: the ``fused`` kernel (simulation, v5's episode
step and the Gaussian MLP policy in one call of K steps) against this machine's FMA ceiling and
against MuJoCo C's own ``mujoco.rollout`` on the same XML, per ``mj_step``, in one run.

    python benchmarks/chain_fused.py                           # n = 8, N = 4096, K = 100, 3 rounds
    python benchmarks/chain_fused.py --links 2 --num-envs 65536 --rounds 5

Each round times, in an order that alternates from round to round (machine noise falls on all):

* ``fused``, policy mlp: ``env.rollout(K, "mlp")`` of ``studylib.make("fused", N, sim="chain")``;
* ``cpp``, policy none: the same C physics and episode rules, the hashed controls, no policy;
* ``mujoco.rollout``: MuJoCo C's multi-threaded rollout (one thread per core, one ``MjData`` per
  thread) of the same model (``chain_mjcf(n)``), N initial states from v5's reset draws, K x
  frame_skip ``mj_step``s of open-loop controls (no policy, no episode rules: physics alone).

Printed: samples/s (environment steps/s) of each; the GFLOP/s of fused on counted flops (the
chain's physics, ``sims.chain.chain_flops(n)`` with the timestep rule's frame_skip, plus the MLP's
``costs.mlp_flops((3n+3, 64, 64, 1))``; the hashed noise, observation, reward and resets not
counted) and its share of the FMA ceiling (``roofline.fma_ceiling``: measured now, or this
machine's saved one if larger); and the rate of fused over mujoco.rollout in ``mj_step``s per
second (an environment step is frame_skip of them in both). The median over rounds, with min-max.
Figures only: nothing is saved, nothing here is a test. MuJoCo steps a general engine (its
kinematics, sparse/dense mass matrix, constraint machinery with none active) in float64; the
kernel steps this one model in float32 with the policy on top: the ratio is of the two
programs, for the same physics to float32 rounding (tests/test_chain_native_episodes.py).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np


def _timed(fn, min_seconds: float) -> float:
    """Seconds per call of ``fn`` over at least ``min_seconds`` (after one warm-up call)."""
    fn()
    calls, start = 0, time.perf_counter()
    while True:
        fn()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return elapsed / calls


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--links", type=int, default=8)
    ap.add_argument("--num-envs", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=100, help="K: environment steps per call")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-seconds", type=float, default=1.0)
    args = ap.parse_args(argv)

    import mujoco
    from mujoco import rollout

    import studylib
    from studylib import costs
    from studylib.harness.model import roofline
    from studylib.sims.chain import ChainParams, chain_flops, chain_mjcf
    from studylib.sims.chain.episode import hash_controls, reset_states

    p = ChainParams(links=args.links)
    n, N, K = p.links, args.num_envs, args.steps
    counted = chain_flops(n, p.frame_skip) + costs.mlp_flops((p.observation_size, 64, 64, 1))
    fused = studylib.make("fused", N, sim="chain", params=p)
    cpp = studylib.make("cpp", N, sim="chain", params=p)

    m = mujoco.MjModel.from_xml_string(chain_mjcf(n, p))
    threads = os.cpu_count() or 1
    pool, datas = rollout.Rollout(nthread=threads), [mujoco.MjData(m) for _ in range(threads)]
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    env, zero = np.arange(N, dtype=np.uint32), np.zeros(N, np.uint32)
    start = reset_states(0, env, zero, p).astype(np.float64)
    x0 = np.empty((N, mujoco.mj_stateSize(m, spec)))
    d = datas[0]
    for i in range(N):
        d.qpos[:], d.qvel[:] = start[i, :n + 1], start[i, n + 1:]
        mujoco.mj_getState(m, d, x0[i], spec)
    mj_steps = K * p.frame_skip  # one call's mj_steps per environment, as the kernel's K steps
    ctrl = np.repeat(hash_controls(0, env, zero, zero).astype(np.float64)[:, None, None], mj_steps, axis=1)
    out = np.empty((N, mj_steps, x0.shape[1]))

    def mujoco_call():
        pool.rollout(m, datas, x0, ctrl, state=out)

    variants = {"fused mlp": lambda: fused.rollout(K, "mlp"), "cpp none": lambda: cpp.rollout(K, "none"),
                "mujoco.rollout": mujoco_call}
    rates = {name: [] for name in variants}
    ceiling, source = roofline.fma_ceiling()
    for r in range(args.rounds):
        order = list(variants) if r % 2 == 0 else list(reversed(variants))
        for name in order:
            rates[name].append(N * K / _timed(variants[name], args.min_seconds))  # environment steps/s
    ceiling = max(ceiling, roofline.fma_ceiling()[0])

    def fmt(values, scale=1.0, unit=""):
        v = [x * scale for x in values]
        return f"{statistics.median(v):.3g}{unit} ({min(v):.3g}-{max(v):.3g})"

    print(f"chain n = {n} (timestep {p.timestep} s x frame_skip {p.frame_skip}), N = {N}, K = {K}, "
          f"{args.rounds} rounds, {threads} threads; FMA ceiling {ceiling / 1e9:.0f} GFLOP/s ({source})")
    for name, values in rates.items():
        print(f"  {name:16s} {fmt(values)} environment steps/s  = {fmt(values, p.frame_skip)} mj_steps/s")
    shares = [r * counted / ceiling for r in rates["fused mlp"]]
    over = [f / mj for f, mj in zip(rates["fused mlp"], rates["mujoco.rollout"])]
    print(f"  fused mlp: {counted} counted flops per environment step ({chain_flops(n, p.frame_skip)} physics, "
          f"{counted - chain_flops(n, p.frame_skip)} MLP): {fmt(rates['fused mlp'], counted / 1e9)} GFLOP/s, "
          f"{fmt(shares, 100, '%')} of the FMA ceiling")
    print(f"  fused mlp over mujoco.rollout, per mj_step: {fmt(over, 1, 'x')} (the same round's)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
