"""``python -m studylib.train``: train PPO on CartPole-v1 with one collector until solved.

    python -m studylib.train --collector fused --num-envs 4096 --seed 0 [--json] [--save policy.npz] [--max-seconds S]
    python -m studylib.train --sim chain --links 2 --collector fused --seed 0   # continuous PPO (chain_cli)

Progress lines go to stderr (updates, samples, samples/s, mean training return, greedy checks);
the result goes to stdout: one JSON line with ``--json`` (collector, num_envs, seed, solved,
wall_s, compile_s, samples, updates, eval_return, provenance, ...), else one sentence.
``--save`` writes the actor (W1 b1 W2 b2 W3 b3) as ``.npz`` after training, atomically.

Exit status: 0 when training ran (solved or not: ``--max-seconds`` reached is a result, not an
error); 2 for bad input (unknown collector, N <= 0, a GPU collector without a GPU, an unwritable
``--save`` path), checked before anything runs or is written, reported in one line.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..cli.options import EXIT_USAGE, OneLineParser, UsageError
from ..errors import StudyError
from .chain.settings import CHAIN_TRAINERS
from .settings import COLLECTORS, PEER_TRAINERS, TRAINERS, collector_spec


def _parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m studylib.train", description="PPO on CartPole-v1 with one collector, until solved.")
    p.add_argument("--collector", required=True, metavar="NAME",
                   help=f"one of {', '.join(COLLECTORS)} (jax: the fully jitted JAX PPO); peers: {', '.join(PEER_TRAINERS)}")
    p.add_argument("--num-envs", type=int, default=None, metavar="N", help="environments per update (default: the settings')")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print the result as one JSON line on stdout")
    p.add_argument("--save", default=None, metavar="PATH.npz", help="write the trained actor here (W1 b1 W2 b2 W3 b3)")
    p.add_argument("--max-seconds", type=float, default=None, metavar="S",
                   help="training wall-clock budget (default: the settings'); reaching it ends with solved: false")
    p.add_argument("--sim", choices=("cartpole", "chain"), default="cartpole",
                   help="cartpole (CartPole-v1, the default) or chain (the n-link chain, continuous actions)")
    p.add_argument("--links", type=int, default=None, metavar="n",
                   help=f"the chain's links, 1 to 32 (default 2: InvertedDoublePendulum-v5); with --sim chain, whose "
                        f"collectors are {', '.join(CHAIN_TRAINERS)}")
    return p


def _preflight(args):
    """Every check that can fail, before training starts: settings, GPU, the --save path (the
    trainers' modules, which import torch and jax, are not imported for these)."""
    from .settings import TrainRun, check_save_path

    if args.sim == "chain":
        from .chain.cli import chain_run

        run = chain_run(args)
        if args.save is not None:
            check_save_path(args.save)
        return run
    if args.links is not None:
        raise UsageError("--links is the chain's: give it with --sim chain")
    if args.collector not in TRAINERS:
        raise UsageError(f"unknown collector {args.collector!r}; valid: {', '.join(COLLECTORS)} "
                          f"(peers: {', '.join(PEER_TRAINERS)})")
    run = TrainRun(args.collector, args.num_envs, seed=args.seed, max_seconds=args.max_seconds)
    if not run.is_peer and collector_spec(run.collector).gpu_only:
        from ..devices import require_cuda

        cpu = [c for c in COLLECTORS if "cpu" in collector_spec(c).devices]
        require_cuda(f"the {run.collector} collector runs on a GPU (use {', '.join(cpu)} here)")
    if args.save is not None:
        check_save_path(args.save)
    return run


def main(argv=None) -> int:
    try:
        args = _parser().parse_args(argv)
        run = _preflight(args)  # before the trainers' imports (torch, jax): bad input answers at once
        if args.sim == "chain":
            return _main_chain(args, run)
        from . import train
        from .progress import stderr_log

        result = train(run, log=stderr_log)
        if args.save is not None:
            from .cartpole.actor_critic import save_npz

            save_npz(args.save, result.actor)
    except StudyError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps(result.as_dict(), default=float))
    else:
        what = f"solved in {result.wall_s:.2f} s" if result.solved else f"not solved ({result.stopped}) after {result.wall_s:.2f} s"
        print(f"{result.collector} N={result.num_envs} seed={result.seed}: {what}, {result.samples:,d} samples, "
              f"{result.updates} updates, compile {result.compile_s:.2f} s; greedy return on gymnasium's CartPole-v1: "
              f"{result.eval_return:.1f}" + (f"; actor saved to {args.save}" if args.save else ""))
    return 0


def _main_chain(args, run) -> int:
    """Train a checked chain run with a progress bar; the result as for CartPole (JSON or a sentence)."""
    from . import train_chain
    from .chain.cli import SampleBar, sentence
    from .chain.policy import save_policy

    bar = SampleBar(run)
    try:
        result = train_chain(run, log=bar.write, progress=bar)
    finally:
        bar.close()
    if args.save is not None and result.actor is None:
        print(f"warning: --save: this run's policy has no array form ({result.peer.get('env')} acts outside [-1, 1]); "
              "nothing saved", file=sys.stderr)
        args.save = None
    if args.save is not None:
        save_policy(args.save, result.actor)
    print(json.dumps(result.as_dict(), default=float) if args.json else sentence(result, args.save))
    return 0
