"""The chain's side of ``python -m studylib train --sim chain``: its run from the options (checked
before anything runs), a progress bar over the sample budget, and the result's sentence.

    python -m studylib train --sim chain --links 2 --collector fused --seed 0 [--num-envs N]
        [--json] [--save policy.npz] [--max-seconds S]
"""

from __future__ import annotations

import math
import sys

from .settings import ChainPPOSettings, ChainRun


def chain_run(args) -> ChainRun:
    """The run the options describe: ConfigError (one line) for links outside 1..32, a collector
    the chain does not train with, or a bad N; nothing has run yet."""
    settings = ChainPPOSettings(links=2 if args.links is None else args.links)
    if args.num_envs is not None:
        settings = settings.replace(num_envs=args.num_envs)
    return ChainRun(args.collector, seed=args.seed, settings=settings, max_seconds=args.max_seconds)


class SampleBar:
    """A tqdm bar on stderr over the run's sample budget: samples, the training episodes' mean
    return, the last deterministic screen. Callable as ``ChainClock``'s ``progress``."""

    def __init__(self, run: ChainRun):
        from tqdm.auto import tqdm

        self.bar = tqdm(total=run.settings.max_samples, unit="sample", unit_scale=True, file=sys.stderr,
                        desc=f"{run.collector} n={run.settings.links} seed={run.seed}", mininterval=0.5, leave=True)
        self.screen = math.nan

    def __call__(self, samples: int, train_return: float, screen: float | None) -> None:
        if screen is not None:
            self.screen = screen
        self.bar.update(samples - self.bar.n)
        self.bar.set_postfix_str(f"return {train_return:8.1f}  screen {self.screen:8.1f}", refresh=False)

    def write(self, line: str) -> None:
        self.bar.write(line, file=sys.stderr)

    def close(self) -> None:
        self.bar.close()


def sentence(result, save) -> str:
    what = f"solved in {result.wall_s:.2f} s" if result.solved else f"not solved ({result.stopped}) after {result.wall_s:.2f} s"
    links = result.settings["links"]
    return (f"{result.collector} n={links} N={result.num_envs} seed={result.seed}: {what}, {result.samples:,d} samples, "
            f"{result.updates} updates (collection {result.collect_s:.2f} s, learning {result.learn_s:.2f} s), compile "
            f"{result.compile_s:.2f} s; deterministic return over 100 episodes of gymnasium's "
            f"{result.peer.get('env') or f'ChainMujocoEnv (n = {links})'}: {result.eval_return:.1f}"
            + (f"; policy saved to {save}" if save else ""))
