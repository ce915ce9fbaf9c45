"""What collecting one PPO trajectory of the chain costs with each collector of the PyTorch PPO, in
one run: ``fused`` (the whole trajectory in one kernel call, the actions sampled inside it) against
``fused-step`` (the same kernel stepped once per step, the actions sampled in PyTorch) and the
others, on the robot chapter's settings (N = 8 environments, T = 256 steps: 2,048 samples).

    python benchmarks/chain_collect.py                       # n = 2, every CPU collector, 3 rounds
    python benchmarks/chain_collect.py --links 1 --collectors fused,fused-step --rounds 5

Each round collects one trajectory with every collector, in an order that alternates from round
to round, with the same untrained policy (``ChainTorchPPO``'s initial model). Printed: the median
over rounds of the seconds per trajectory and microseconds per sample, with min-max, and each
collector's time over ``fused``'s. What is timed is ``collector.collect(model, T)`` whole: the
observation normalization and reward scaling included, as the trainers' clock times it. Figures
only: nothing is saved, nothing here is a test.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from studylib.train.chain.collectors import make_collector
from studylib.train.chain.ppo_torch import ChainTorchPPO
from studylib.train.chain.settings import ChainPPOSettings

CPU_COLLECTORS = ("fused", "fused-step", "cpp", "torch", "torch-compile", "gym")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--links", type=int, default=2)
    ap.add_argument("--collectors", default=",".join(CPU_COLLECTORS))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)  # as the robot study's runs
    s = ChainPPOSettings(links=args.links)
    names = args.collectors.split(",")
    model = ChainTorchPPO(s, seed=0).model
    collectors = {name: make_collector(name, s, seed=0) for name in names}
    for c in collectors.values():
        c.warm_up()
        c.collect(model, s.num_steps)  # first calls (torch-compile's compilation among them)
    times = {name: [] for name in names}
    for r in range(args.rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            start = time.perf_counter()
            collectors[name].collect(model, s.num_steps)
            times[name].append(time.perf_counter() - start)
    samples = s.num_envs * s.num_steps
    base = statistics.median(times[names[0]])
    print(f"n = {args.links}, N = {s.num_envs}, T = {s.num_steps} ({samples} samples per trajectory), "
          f"{args.rounds} rounds, one torch thread")
    for name in names:
        t = times[name]
        med = statistics.median(t)
        print(f"  {name:14s} {med * 1e3:8.2f} ms per trajectory ({min(t) * 1e3:.2f}-{max(t) * 1e3:.2f}), "
              f"{med / samples * 1e6:7.2f} us per sample, {med / base:6.2f}x {names[0]}'s")


if __name__ == "__main__":
    main()
