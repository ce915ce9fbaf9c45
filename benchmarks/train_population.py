"""Seeds solved per minute: a population of seeds in one program against the same seeds one at a
time, for the fully jitted JAX PPO and for the batched PyTorch PPO.

    python benchmarks/train_population.py                           # 32 JAX seeds, 32 PyTorch seeds, N = 64
    python benchmarks/train_population.py --seeds 64 --torch gym --torch-seeds 8 --single fused

The populations are ``studylib.train.train_population`` (JAX: PureJaxRL's shape, the program
vmapped over the seeds' keys, compiled once; PyTorch: ``population_torch``, stacked weights and
batched matmuls, all seeds' environments stepped in one call). One at a time is
``studylib.train.train`` per seed in this process (JAX's compiled program is reused after the first
seed). Every run follows the training chapter's rule (progress.Clock: greedy check, a second check
confirming it, gymnasium's CartPoleEnv as the judge, untimed). ``wall`` is the rule's clock: for a
population the shared clock until its last seed finished, for one at a time the sum of the runs'
clocks; ``process`` is the whole call (compile, warm-up and gymnasium's judging included). Seeds
solved per minute = 60 * solved / wall (and / (wall + compile)). ``--single`` adds a collector
timed one at a time only (e.g. ``fused``, which has no population). Prints figures only.
"""

from __future__ import annotations

import argparse
import time

from studylib.train import PPOSettings, TrainRun, train, train_population


def _line(name: str, results, compile_s: float, wall_s: float, process_s: float) -> str:
    seeds, solved = len(results), sum(r.solved for r in results)
    per_min = 60 * solved / wall_s if wall_s > 0 else float("nan")
    with_compile = 60 * solved / (wall_s + compile_s)
    return (f"{name:<38} {solved:3d}/{seeds:<3d} solved  compile {compile_s:6.1f} s  wall {wall_s:7.1f} s  "
            f"{per_min:7.1f} seeds solved/min ({with_compile:6.1f} with compile)  [process {process_s:.1f} s]")


def _population(collector: str, seeds, n: int, s: PPOSettings, budget: float):
    runs = [TrainRun(collector, n, seed=k, settings=s, max_seconds=budget) for k in seeds]
    t = time.perf_counter()
    results = train_population(runs)
    process = time.perf_counter() - t
    return _line(f"{collector}, population of {len(runs)} (one program)", results, results[0].compile_s,
                 max(r.wall_s for r in results), process)


def _one_at_a_time(collector: str, seeds, n: int, s: PPOSettings, budget: float):
    t = time.perf_counter()
    results = [train(TrainRun(collector, n, seed=k, settings=s, max_seconds=budget)) for k in seeds]
    process = time.perf_counter() - t
    return _line(f"{collector}, {len(results)} seeds one at a time", results, sum(r.compile_s for r in results),
                 sum(r.wall_s for r in results), process)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=32, help="JAX seeds (population size)")
    ap.add_argument("--num-envs", type=int, default=64)
    ap.add_argument("--budget", type=float, default=60.0, help="seconds per run (a population's: shared)")
    ap.add_argument("--torch", default="torch", help="the PyTorch-PPO collector run as a population and one at a time")
    ap.add_argument("--torch-seeds", type=int, default=32)
    ap.add_argument("--single", default=None, help="a PyTorch-PPO collector timed one at a time only (e.g. fused)")
    a = ap.parse_args(argv)
    s = PPOSettings()
    print(f"N = {a.num_envs}, T = {s.num_steps}, budget {a.budget:.0f} s per run; wall: the rule's clock, "
          f"compile apart", flush=True)
    jax_seeds, torch_seeds = range(a.seeds), range(a.torch_seeds)
    print(_population("jax", jax_seeds, a.num_envs, s, a.budget), flush=True)
    print(_one_at_a_time("jax", jax_seeds, a.num_envs, s, a.budget), flush=True)
    print(_population(a.torch, torch_seeds, a.num_envs, s, a.budget), flush=True)
    print(_one_at_a_time(a.torch, torch_seeds, a.num_envs, s, a.budget), flush=True)
    if a.single:
        print(_one_at_a_time(a.single, torch_seeds, a.num_envs, s, a.budget), flush=True)


if __name__ == "__main__":
    main()
