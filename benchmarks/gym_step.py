"""The gymnasium adapter's ``step`` loop: numpy arrays vs native arrays, and against an older tree.

    python benchmarks/gym_step.py                                  # this tree: numpy vs native
    python benchmarks/gym_step.py --before 8542698 --rounds 5     # and the adapter of a git revision

Times ``envs.step(actions[t])`` of ``gymnasium.make_vec("studylib/CartPole-v1", num_envs=N,
impl=...)`` in the default autoreset mode (NEXT_STEP), random actions generated before the timed
loop (numpy int64 for the numpy path; int32 torch tensors or jax arrays on the env's device for
the native path). Variants:

``before``  the numpy path of the tree at ``--before`` (``git archive`` of that revision)
``numpy``   this tree, ``arrays="numpy"`` (the default)
``native``  this tree, ``arrays="native"``

Each round runs every variant in its own process (the variants' order rotates from round to
round), each process timing every implementation; the figures are the medians over rounds, with
the spread (min-max). Prints figures only: nothing here is a test, nothing is saved.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMPLS = ("cpp", "fused", "torch", "jax")


def _worker(impls, num_envs, steps, warmup, native, device) -> dict:
    """Seconds per step of each implementation, in this process (the tree on PYTHONPATH)."""
    import gymnasium
    import numpy as np

    import studylib.gym_vector  # noqa: F401  (registers the id)

    out = {}
    for impl in impls:
        kwargs = {"arrays": "native"} if native else {}
        envs = gymnasium.make_vec("studylib/CartPole-v1", num_envs=num_envs, impl=impl, device=device, **kwargs)
        envs.reset(seed=0)
        actions = np.random.default_rng(0).integers(0, 2, (warmup + steps, num_envs))
        if native and impl == "jax":
            import jax

            kind = envs.unwrapped.env.array_kind
            actions = [jax.device_put(a.astype(np.int32), kind.device) for a in actions]
            done = jax.block_until_ready
        elif native:
            import torch

            device_of = envs.unwrapped.env.array_kind.device
            actions = [torch.from_numpy(a.astype(np.int32)).to(device_of) for a in actions]
            done = (lambda x: torch.cuda.synchronize()) if device_of.type == "cuda" else (lambda x: x)
        else:
            done = lambda x: x  # noqa: E731  (numpy results are on the host when step returns)
        for t in range(warmup):
            envs.step(actions[t])
        start = time.perf_counter()
        for t in range(warmup, warmup + steps):
            obs = envs.step(actions[t])[0]
        done(obs)
        out[impl] = (time.perf_counter() - start) / steps
        envs.close()
    return out


def _export(rev: str, into: Path) -> Path:
    """``studylib/`` and ``cuda/`` of git revision ``rev``, unpacked into ``into``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "studylib", "cuda"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def _run(tree: Path, native: bool, args) -> dict:
    cmd = [sys.executable, __file__, "--worker", "--impl", ",".join(args.impl), "--num-envs", str(args.num_envs),
           "--steps", str(args.steps), "--warmup", str(args.warmup), "--device", args.device]
    cmd += ["--native"] if native else []
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"error: the {'native' if native else 'numpy'} run of {tree} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--impl", default=",".join(IMPLS), type=lambda s: s.split(","))
    parser.add_argument("--num-envs", type=int, default=2**16)
    parser.add_argument("--steps", type=int, default=100, help="timed steps per implementation and run")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--before", metavar="REV", help="also time the numpy path of this git revision")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--native", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(_worker(args.impl, args.num_envs, args.steps, args.warmup, args.native, args.device)))
        return

    with tempfile.TemporaryDirectory() as tmp:
        variants = {"numpy": (ROOT, False), "native": (ROOT, True)}
        if args.before:
            variants = {"before": (_export(args.before, Path(tmp)), False), **variants}
        names = list(variants)
        times = {name: {impl: [] for impl in args.impl} for name in names}
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]  # rotate: no variant always first
            for name in order:
                for impl, seconds in _run(*variants[name], args).items():
                    times[name][impl].append(seconds)
            print(f"round {r + 1}/{args.rounds} done ({' -> '.join(order)})", file=sys.stderr)

    print(f"gymnasium adapter step loop, NEXT_STEP, N = {args.num_envs}, device {args.device}, "
          f"{args.steps} timed steps per run, median of {args.rounds} rounds (min-max); ms per step")
    header = f"{'impl':8s}" + "".join(f"{name:>24s}" for name in names)
    print(header + ("    numpy/native" if "native" in names else ""))
    for impl in args.impl:
        row = f"{impl:8s}"
        for name in names:
            ms = [1e3 * s for s in times[name][impl]]
            row += f"{statistics.median(ms):10.3f} ({min(ms):.2f}-{max(ms):.2f})".rjust(24)
        med = {name: statistics.median(times[name][impl]) for name in names}
        row += f"{med['numpy'] / med['native']:14.2f}x"
        if "before" in med:
            row += f"   before/numpy {med['before'] / med['numpy']:.2f}x  before/native {med['before'] / med['native']:.2f}x"
        print(row)


if __name__ == "__main__":
    main()
