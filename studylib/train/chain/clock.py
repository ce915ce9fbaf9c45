"""The chain's clock: ``progress.Clock``'s rule (what counts in wall_s, when to check, when to
stop) with the chain's evaluators (``chain_evaluate``).

* the check after every ``eval_every_samples``: the cheap deterministic screen on the ``cpp``
  chain (timed, in wall_s); where it reaches the threshold, gymnasium's judge (100 MuJoCo
  episodes, confirmed by 100 more from other seeds) runs with the clock paused. Solved in
  training when the judge says so; ``unconfirmed_checks`` counts the screens it did not confirm.
* the final ``eval_return`` (untimed): the judge's first evaluation when solved, else the mean
  over 100 gymnasium episodes of the last policy.
"""

from __future__ import annotations

import time

from .evaluate import JUDGE_EPISODES, gymnasium_returns, judge, screen_return
from .settings import ChainRun
from ..progress import Clock, SharedTime


class ChainClock(Clock):
    judged_on = "gymnasium ChainMujocoEnv"

    def __init__(self, run: ChainRun, *, log=None, progress=None):
        self._time = SharedTime()  # paused while the judge runs
        super().__init__(run, num_envs=run.n, batch_size=run.settings.batch_size, log=log, now=self._time.now)
        self.judgement = None  # the judge's verdict that solved the run
        # progress(samples, training mean return, screen or None): a progress bar's update; with
        # one, ``log`` gets only the checks' lines and the result's
        self.progress = progress

    def _maybe_log(self, force=False, greedy=None) -> None:
        if self.progress is not None and self._t0 is not None:
            self.progress(self.samples, self.train_return, greedy)
            if not force:
                return
        super()._maybe_log(force, greedy)

    def check(self, policy_arrays: dict) -> bool:
        with self.phase("eval"):
            screen = screen_return(policy_arrays, self.s.eval_episodes, seed=self.check_seed())
        confirm = None
        if screen >= self.s.solve_return:
            t = time.perf_counter()
            verdict = judge(policy_arrays, self.s.solve_return, seed=self.run.seed)
            self._time.pause(time.perf_counter() - t)
            if verdict.solved:
                self.judgement = verdict
            # record_check passes when both the screen and ``confirm`` reach the threshold
            confirm = verdict.first if verdict.second is None else min(verdict.first, verdict.second)
        return self.record_check(screen, confirm)

    def final_return(self, policy_arrays: dict) -> float:
        if self.judgement is not None and self.solved_in_training:
            return self.judgement.first
        return float(gymnasium_returns(policy_arrays, JUDGE_EPISODES, seed=self.run.seed).mean())
