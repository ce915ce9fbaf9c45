"""Seeds solved per minute: the fully jitted JAX PPO as a population of seeds in one program
against the same seeds one at a time, and the fastest PyTorch-PPO collector one at a time.

    python benchmarks/train_population.py                      # 32 seeds, N = 64
    python benchmarks/train_population.py --seeds 64 --torch fused --torch-seeds 8

The population is ``studylib.train.ppo_jax.train_population`` (PureJaxRL's shape: the program
vmapped over the seeds' keys, compiled once); one at a time is ``studylib.train.train`` per seed in
this process (the compiled program is reused after the first seed). Both use the training chapter's
rule (progress.Clock: greedy check, a second check confirming it, gymnasium's CartPoleEnv as the
judge). Reported: compile seconds, wall-clock seconds (compile apart), seeds solved, and seeds
solved per minute with and without the compile. The PyTorch PPO has no population here: its seeds
run one after another. Prints figures only: nothing is saved, nothing here is a test.
"""

from __future__ import annotations

import argparse
import time

from studylib.train import PPOSettings, TrainRun, train
from studylib.train.ppo_jax import train_population


def _line(name: str, seeds: int, solved: int, compile_s: float, wall_s: float) -> str:
    per_min = 60 * solved / wall_s if wall_s > 0 else float("nan")
    with_compile = 60 * solved / (wall_s + compile_s)
    return (f"{name:<34} {solved:3d}/{seeds:<3d} solved  compile {compile_s:6.1f} s  wall {wall_s:7.1f} s  "
            f"{per_min:7.1f} seeds solved/min ({with_compile:6.1f} with compile)")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=32, help="JAX seeds (population size)")
    ap.add_argument("--num-envs", type=int, default=64)
    ap.add_argument("--budget", type=float, default=60.0, help="seconds per run (the population's: shared)")
    ap.add_argument("--torch", default="torch", help="the PyTorch-PPO collector to time one seed at a time")
    ap.add_argument("--torch-seeds", type=int, default=8)
    a = ap.parse_args(argv)
    s = PPOSettings()
    seeds = list(range(a.seeds))

    t = time.perf_counter()
    pop = train_population([TrainRun("jax", a.num_envs, seed=k, settings=s, max_seconds=a.budget) for k in seeds])
    total = time.perf_counter() - t
    compile_s = pop[0].compile_s
    print(_line(f"jax, population of {a.seeds} (one program)", a.seeds, sum(r.solved for r in pop), compile_s,
                max(r.wall_s for r in pop)), f"[process {total:.1f} s, gymnasium checks included]", flush=True)

    t = time.perf_counter()
    one = [train(TrainRun("jax", a.num_envs, seed=k, settings=s, max_seconds=a.budget)) for k in seeds]
    total = time.perf_counter() - t
    print(_line(f"jax, {a.seeds} seeds one at a time", a.seeds, sum(r.solved for r in one), one[0].compile_s,
                sum(r.wall_s for r in one)), f"[process {total:.1f} s, gymnasium checks included]", flush=True)

    t = time.perf_counter()
    th = [train(TrainRun(a.torch, a.num_envs, seed=k, settings=s, max_seconds=a.budget)) for k in range(a.torch_seeds)]
    total = time.perf_counter() - t
    print(_line(f"{a.torch} (PyTorch PPO), {a.torch_seeds} one at a time", a.torch_seeds, sum(r.solved for r in th),
                max(r.compile_s for r in th), sum(r.wall_s for r in th)), f"[process {total:.1f} s]", flush=True)


if __name__ == "__main__":
    main()
