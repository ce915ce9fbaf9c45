"""The gymnasium adapter's ``step`` loop: numpy arrays vs native arrays, and against an older tree.

    python benchmarks/gym_step.py                                  # this tree: numpy vs native
    python benchmarks/gym_step.py --before 8542698 --rounds 21    # and the adapter of a git revision

Times ``envs.step(actions[t])`` of ``gymnasium.make_vec("studylib/CartPole-v1", num_envs=N,
impl=...)`` in the default autoreset mode (NEXT_STEP), with random actions generated before the
timed loop (numpy int64 for the numpy path; int32 torch tensors or jax arrays on the env's device
for the native path). Variants:

``before``  the numpy path of the tree at ``--before`` (``git archive`` of that revision)
``numpy``   this tree, ``arrays="numpy"`` (the default)
``native``  this tree, ``arrays="native"``

Each variant lives in its own process, which makes every implementation's envs once and then
times blocks of ``--steps`` steps on request. The parent asks for one block of each variant in
turn (the order rotates from round to round), so a variant is never timed in a quieter or busier
stretch of a shared machine than the others; the figures are the medians over the rounds, with
the minimum beside them. Prints figures only: nothing here is a test, nothing is saved.
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
ACTION_ROWS = 16  # pre-generated action vectors, used in turn
PAUSE_S = 0.05  # before each block: the other workers' spinning OpenMP threads go to sleep


def _worker(impls, num_envs, steps, native, device) -> None:
    """Make the envs, say "ready", then answer each line naming an implementation with the
    seconds per step of one block of ``steps`` steps (the tree on PYTHONPATH is the one timed)."""
    import gymnasium
    import numpy as np

    import studylib.adapters.gym_vector  # noqa: F401  (registers the id)

    loops = {}
    for impl in impls:
        kwargs = {"arrays": "native"} if native else {}
        envs = gymnasium.make_vec("studylib/CartPole-v1", num_envs=num_envs, impl=impl, device=device, **kwargs)
        envs.reset(seed=0)
        actions = list(np.random.default_rng(0).integers(0, 2, (ACTION_ROWS, num_envs)))
        wait = lambda obs: obs  # noqa: E731  (numpy results are on the host when step returns)
        if native:
            kind = envs.unwrapped.env.array_kind
            if impl == "jax":
                import jax

                actions, wait = [jax.device_put(a.astype(np.int32), kind.device) for a in actions], jax.block_until_ready
            else:
                import torch

                actions = [torch.from_numpy(a.astype(np.int32)).to(kind.device) for a in actions]
                wait = (lambda obs: torch.cuda.synchronize()) if kind.device.type == "cuda" else wait
        loops[impl] = (envs, actions, wait)

    def block(impl) -> float:
        envs, actions, wait = loops[impl]
        time.sleep(PAUSE_S)
        start = time.perf_counter()
        for t in range(steps):
            obs = envs.step(actions[t % ACTION_ROWS])[0]
        wait(obs)
        return (time.perf_counter() - start) / steps

    for impl in impls:
        block(impl)  # warm-up: compilation, caches, first allocations
    print("ready", flush=True)
    for line in sys.stdin:
        print(json.dumps(block(line.strip())), flush=True)


def _export(rev: str, into: Path) -> Path:
    """``studylib/`` and ``cuda/`` of git revision ``rev``, unpacked into ``into``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "studylib", "cuda"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


class _Variant:
    """A worker process timing one tree in one arrays mode."""

    def __init__(self, name: str, tree: Path, native: bool, args):
        cmd = [sys.executable, __file__, "--worker", "--impl", ",".join(args.impl), "--num-envs",
               str(args.num_envs), "--steps", str(args.steps), "--device", args.device]
        self.name = name
        self.proc = subprocess.Popen(cmd + (["--native"] if native else []), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(tree)})
        if self.proc.stdout.readline().strip() != "ready":
            raise SystemExit(f"error: the {name} worker ({tree}) did not start")

    def time(self, impl: str) -> float:
        self.proc.stdin.write(impl + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--impl", default=",".join(IMPLS), type=lambda s: s.split(","))
    parser.add_argument("--num-envs", type=int, default=2**16)
    parser.add_argument("--steps", type=int, default=20, help="steps per timed block")
    parser.add_argument("--rounds", type=int, default=21, help="timed blocks per implementation and variant")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--before", metavar="REV", help="also time the numpy path of this git revision")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--native", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker(args.impl, args.num_envs, args.steps, args.native, args.device)
        return

    with tempfile.TemporaryDirectory() as tmp:
        specs = [("numpy", ROOT, False), ("native", ROOT, True)]
        if args.before:
            specs.insert(0, ("before", _export(args.before, Path(tmp)), False))
        variants = [_Variant(*spec, args) for spec in specs]
        times = {v.name: {impl: [] for impl in args.impl} for v in variants}
        for r in range(args.rounds):
            order = variants[r % len(variants):] + variants[:r % len(variants)]  # no variant always first
            for impl in args.impl:
                for v in order:
                    times[v.name][impl].append(v.time(impl))
        for v in variants:
            v.close()

    names = [v.name for v in variants]
    print(f"gymnasium adapter step loop, NEXT_STEP, N = {args.num_envs}, device {args.device}: ms per step, "
          f"median (min) of {args.rounds} blocks of {args.steps} steps, variants alternating block by block")
    print(f"{'impl':8s}" + "".join(f"{name:>18s}" for name in names) + "   ratios of the medians")
    for impl in args.impl:
        med = {name: statistics.median(times[name][impl]) for name in names}
        row = f"{impl:8s}" + "".join(f"{1e3 * med[n]:9.3f} ({1e3 * min(times[n][impl]):.3f})".rjust(18) for n in names)
        ratios = [f"numpy/native {med['numpy'] / med['native']:.2f}x"]
        if "before" in med:
            ratios += [f"before/numpy {med['before'] / med['numpy']:.2f}x", f"before/native {med['before'] / med['native']:.2f}x"]
        print(row + "   " + ", ".join(ratios))


if __name__ == "__main__":
    main()
