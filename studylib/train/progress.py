"""One clock for every trainer: what counts in wall_s, when to check, when to stop, what to report.

The rule, the same for the PyTorch PPO, the JAX PPO and the peers:

* ``compile_s``: compilation and first-call costs before the first environment step (jit
  tracing, torch.compile, a native library build), reported apart.
* ``wall_s`` starts at the first environment step and includes everything after it: collection,
  learning and the greedy checks. A check runs after every ``ceil(eval_every_samples / batch)``
  updates; the run is solved in training at the first check whose mean greedy return over
  ``eval_episodes`` episodes is at least ``solve_return`` and a second check of as many episodes
  from other reset draws confirms it (``unconfirmed_checks`` counts the first checks it did not
  confirm), and ``wall_s`` stops there.
* The run stops unsolved when its time budget or ``max_samples`` is spent (``stopped`` says which).
* Afterwards, untimed: ``eval_return``, the greedy actor's mean return over 100 episodes of
  gymnasium's own CartPole-v1. ``solved`` needs both the training check and this >= 475.
"""

from __future__ import annotations

import math
import sys
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

from .evaluate import greedy_check, greedy_checks, gymnasium_return
from .settings import TrainRun

CONFIRM_STREAM = 1  # the confirming check's reset draws: a stream no first check uses
FINAL_EPISODES = 100  # the final confirmation on gymnasium's CartPoleEnv
LOG_EVERY_S = 1.0  # a progress line at most this often (and at every check)


@dataclass
class TrainResult:
    """What one training run did; ``as_dict`` is the CLI's JSON line and a data file's row."""

    collector: str
    num_envs: int
    seed: int
    solved: bool  # solved in training AND eval_return >= solve_return
    wall_s: float  # to solve (first env step -> passing check), else the run's whole wall-clock
    compile_s: float  # before the first env step, not in wall_s
    samples: int  # transitions collected until solved (or stopped)
    updates: int
    eval_return: float  # mean greedy return, 100 episodes of gymnasium's own env (CartPole; the chain's MuJoCo), untimed
    solved_in_training: bool
    stopped: str  # "solved" | "max_seconds" | "max_samples"
    collect_s: float  # parts of wall_s: collection, learning, greedy checks
    learn_s: float
    eval_s: float
    samples_per_s: float  # samples / wall_s
    updates_per_s: float
    batch_size: int  # samples per update (N * T)
    device: str
    bootstraps_truncation: bool  # GAE bootstrapped truncated episodes (else: treated as terminal)
    curve: list = field(default_factory=list)  # [wall_s, samples, updates, greedy return, training mean return]
    unconfirmed_checks: int = 0  # greedy checks >= solve_return whose second, independent check failed
    population: int = 1  # seeds trained together in one program (wall_s then shared by all of them)
    trainer: str = ""  # "torch-ppo" | "jax-ppo" | "sb3-ppo" | "torch-ppo-cleanrl-settings" | the populations'
    settings: dict = field(default_factory=dict)
    budget_s: float = math.nan
    provenance: dict = field(default_factory=dict)
    peer: dict = field(default_factory=dict)  # a peer trainer's own settings and task (empty for ours)
    actor: dict | None = field(default=None, repr=False)  # the trained actor's arrays (not in as_dict)

    def as_dict(self) -> dict:
        d = asdict(self)
        d.pop("actor")
        return d


class Clock:
    """Times a run by the rule above and prints progress lines through ``log`` (None: silent)."""

    def __init__(self, run: TrainRun, *, num_envs: int, batch_size: int, log=None, peer: dict | None = None,
                 now=time.perf_counter, population: int = 1):
        self.run, self.s = run, run.settings
        self._now = now  # a population's clocks share one time source (paused while a seed is judged)
        self.population = population
        self.unconfirmed = 0
        self.num_envs, self.batch_size = num_envs, batch_size
        self.log = log
        self.peer = peer or {}  # a peer trainer's own settings and name, reported instead of ours
        self.updates_per_check = max(1, math.ceil(self.s.eval_every_samples / batch_size))
        self.max_samples = self.peer.get("max_samples", self.s.max_samples)
        self.parts = {"collect": 0.0, "learn": 0.0, "eval": 0.0}
        self.samples = self.updates = 0
        self.curve, self.train_return = [], math.nan
        self.solved_in_training, self.stopped = False, ""
        self.bootstraps_truncation = False
        self._t0 = None
        self._last_log = -math.inf

    # ---- the clock ----------------------------------------------------------------------------
    def start(self, *, compile_s: float, device: str) -> None:
        self.compile_s, self.device = float(compile_s), str(device)
        self._t0 = self._now()

    def elapsed(self) -> float:
        return self._now() - self._t0

    @contextmanager
    def phase(self, name: str):
        t = time.perf_counter()
        try:
            yield
        finally:
            self.parts[name] += time.perf_counter() - t

    # ---- bookkeeping --------------------------------------------------------------------------
    def add_update(self, samples: int, mean_return: float = math.nan, *, bootstraps_truncation: bool,
                   updates: int = 1) -> None:
        """Count ``updates`` updates (a jitted chunk does several) that used ``samples`` samples;
        ``mean_return``: of the training episodes that ended in them (nan if none did)."""
        self.samples += int(samples)
        self.updates += int(updates)
        self.bootstraps_truncation = bool(bootstraps_truncation)
        if math.isfinite(mean_return):
            self.train_return = float(mean_return)
        self._maybe_log()

    @property
    def threshold(self) -> float:
        """The return that solves: the settings' (a peer on another task may have its own)."""
        return self.s.solve_return

    def check_due(self) -> bool:
        return self.updates % self.updates_per_check == 0

    def set_parts(self, collect_s: float, learn_s: float) -> None:
        """For a trainer whose collection and learning run as one program (the JAX PPO): the
        split of their common time, estimated by timing collection alone."""
        self.parts["collect"], self.parts["learn"] = collect_s, learn_s

    def check(self, actor_arrays: dict) -> bool:
        """The greedy check (timed, in wall_s); True when it passes AND a second, independent check
        (other reset draws) confirms it: one pass of a noisy check is often luck."""
        with self.phase("eval"):
            greedy = greedy_check(actor_arrays, self.s.eval_episodes, seed=self.check_seed())
            confirm = None
            if greedy >= self.threshold:
                confirm = greedy_check(actor_arrays, self.s.eval_episodes, seed=self.check_seed(), stream=CONFIRM_STREAM)
        return self.record_check(greedy, confirm)

    def check_seed(self) -> int:
        """The reset draws of the next check: the run's seed and the check's number."""
        return self.run.seed * 1_000_003 + len(self.curve)

    def record_check(self, greedy: float, confirm: float | None) -> bool:
        """Record a check made elsewhere (a population checks all its seeds at once): ``greedy``
        with ``check_seed()``'s draws, ``confirm`` (when greedy passed) with ``CONFIRM_STREAM``'s."""
        passed = greedy >= self.threshold
        if passed:
            passed = confirm is not None and confirm >= self.threshold
            self.unconfirmed += not passed
        wall = self.elapsed()
        self.curve.append([wall, self.samples, self.updates, greedy, self.train_return])
        self.solved_in_training = passed
        if self.solved_in_training:
            self.stopped = "solved"
            self._wall = wall
        self._maybe_log(force=True, greedy=greedy)
        return self.solved_in_training

    def out_of_budget(self) -> bool:
        if self.elapsed() >= self.run.budget_seconds:
            self.stopped = "max_seconds"
        elif self.samples >= self.max_samples:
            self.stopped = "max_samples"
        return bool(self.stopped)

    def _maybe_log(self, force=False, greedy=None) -> None:
        if self.log is None or self._t0 is None:
            return
        wall = self.elapsed()
        if not force and wall - self._last_log < LOG_EVERY_S:
            return
        self._last_log = wall
        mean = f"{self.train_return:6.1f}" if math.isfinite(self.train_return) else "     -"
        line = (f"[{self.run.collector} N={self.num_envs} seed={self.run.seed}] {wall:7.2f} s  updates {self.updates:6d}  "
                f"samples {self.samples:10,d}  {self.samples / max(wall, 1e-9):10,.0f} samples/s  mean return {mean}")
        if greedy is not None:
            line += f"  greedy {greedy:6.1f}"
        self.log(line)

    # ---- the end ------------------------------------------------------------------------------
    judged_on = "gymnasium CartPole-v1"  # what final_return plays

    def final_return(self, actor_arrays: dict) -> float:
        """The untimed final verdict: the greedy return over 100 episodes of gymnasium's CartPole-v1."""
        return gymnasium_return(actor_arrays, FINAL_EPISODES, seed=self.run.seed)

    def finish(self, actor_arrays: dict, *, trainer: str) -> TrainResult:
        """Stop the clock; confirm on gymnasium's CartPoleEnv (untimed); the result."""
        from .results import provenance

        wall = self._wall if self.solved_in_training else self.elapsed()
        if not self.stopped:  # the trainer ended on its own (a peer at its total_timesteps) unless time ran out
            self.stopped = "max_seconds" if self.elapsed() >= self.run.budget_seconds else "max_samples"
        eval_return = self.final_return(actor_arrays)
        solved = self.solved_in_training and eval_return >= self.threshold
        if self.log is not None:
            self.log(f"[{self.run.collector} N={self.num_envs} seed={self.run.seed}] "
                     + (f"solved in {wall:.2f} s" if solved else f"not solved ({self.stopped}) after {wall:.2f} s")
                     + f", {self.samples:,d} samples, {self.updates} updates; {self.judged_on} greedy return "
                     f"{eval_return:.1f} over {FINAL_EPISODES} episodes (compile {self.compile_s:.2f} s, not counted)")
        settings = self.peer.get("settings", {**self.s.as_dict(), "num_envs": self.num_envs})
        return TrainResult(
            collector=self.run.collector, num_envs=self.num_envs, seed=self.run.seed, solved=bool(solved),
            wall_s=wall, compile_s=self.compile_s, samples=self.samples, updates=self.updates,
            eval_return=eval_return, solved_in_training=self.solved_in_training, stopped=self.stopped,
            collect_s=self.parts["collect"], learn_s=self.parts["learn"], eval_s=self.parts["eval"],
            samples_per_s=self.samples / wall if wall > 0 else math.nan,
            updates_per_s=self.updates / wall if wall > 0 else math.nan, batch_size=self.batch_size,
            device=self.device, bootstraps_truncation=self.bootstraps_truncation, curve=self.curve,
            unconfirmed_checks=self.unconfirmed, population=self.population,
            trainer=trainer, settings=settings, budget_s=self.run.budget_seconds, provenance=provenance(),
            actor=actor_arrays,
        )


class SharedTime:
    """One clock for a population; paused while a finished seed is judged on gymnasium (untimed)."""

    def __init__(self):
        self.paused_s = 0.0

    def now(self) -> float:
        return time.perf_counter() - self.paused_s

    def pause(self, seconds: float) -> None:
        self.paused_s += seconds


def check_population(clocks: list[Clock], actors: list[dict], s) -> list[bool]:
    """``Clock.check`` for several seeds of a population at once: every seed's greedy check in one
    batched call, then the confirming check of those that passed (the draws ``Clock.check`` would
    use); recorded on each clock (``record_check``), whose eval part gets the time. True: solved."""
    t = time.perf_counter()
    greedy = greedy_checks(actors, s.eval_episodes, [c.check_seed() for c in clocks])
    confirm = [None] * len(clocks)
    passed = [k for k, g in enumerate(greedy) if g >= s.solve_return]
    if passed:
        again = greedy_checks([actors[k] for k in passed], s.eval_episodes, [clocks[k].check_seed() for k in passed],
                              stream=CONFIRM_STREAM)
        for k, g in zip(passed, again):
            confirm[k] = float(g)
    for c in clocks:
        c.parts["eval"] += time.perf_counter() - t
    return [c.record_check(float(g), cf) for c, g, cf in zip(clocks, greedy, confirm)]


def stderr_log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
