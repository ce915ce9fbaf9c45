"""How a trained chain policy is judged: deterministic episodes, mean return, the threshold.

Two evaluators, one rule (the mean undiscounted return of whole episodes from fresh resets, at
most 1000 steps, the action the Gaussian's mean: ``chain_policy.deterministic_actions``):

``screen_return``  the check made *during* training (timed: it is part of a run's wall-clock),
                   cheap: ``episodes`` chains of the ``cpp`` implementation stepped together
                   (v5's rules, checked against MuJoCo elsewhere) until each one's first episode
                   ends. It only decides when the judge is called.
``judge``          the verdict: gymnasium itself, ``ChainMujocoEnv`` (a gymnasium MujocoEnv of the
                   same XML, stepped by MuJoCo's mj_step) under gymnasium's ``TimeLimit(1000)``.
                   Solved when the mean return over 100 episodes reaches the threshold AND a
                   second, independent evaluation of 100 episodes (other reset seeds) confirms it.
                   Its episodes are dealt to one process per core (``play_policy``).

``ChainClock``     the run's clock: ``progress.Clock``'s rule (what counts in wall_s, when to
                   check, when to stop) with the two evaluators above. After every
                   ``eval_every_samples`` the screen runs (timed, in wall_s); where it reaches the
                   threshold, the judge runs with the clock paused. Solved in training when the
                   judge says so; ``unconfirmed_checks`` counts the screens it did not confirm.
                   The final ``eval_return`` (untimed): the judge's first evaluation when solved,
                   else the mean over 100 gymnasium episodes of the last policy.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from ...sims.chain import ChainParams
from ..progress import Clock, SharedTime
from .policy import check_policy_arrays, deterministic_actions, links_of
from .settings import ChainRun

JUDGE_EPISODES = 100
EVAL_SEED_OFFSET = 1_000_003  # evaluation resets never share seeds with training's
CONFIRM_SEED_OFFSET = 7_000_001  # the confirming evaluation's reset seeds: none the first one uses


def screen_return(arrays: dict, episodes: int, seed: int) -> float:
    """Mean deterministic return of ``episodes`` episodes on the cpp chain (seeded resets)."""
    from ...envs.registry import make

    arrays = check_policy_arrays(arrays)
    env = make("cpp", episodes, sim="chain", params=ChainParams(links=links_of(arrays)),
               seed=(seed + EVAL_SEED_OFFSET) & 0xFFFFFFFF)
    obs = env.reset()
    returns = np.zeros(episodes)
    alive = np.ones(episodes, dtype=bool)
    while alive.any():
        obs, reward, terminated, truncated = env.step(deterministic_actions(arrays, obs).astype(np.float32))
        returns += np.where(alive, reward, 0.0)
        alive &= ~(np.asarray(terminated) | np.asarray(truncated))
    return float(returns.mean())


def play(act, make_env, episodes: int, seed: int = 0, seed_offset: int = EVAL_SEED_OFFSET,
         indices: range | None = None) -> np.ndarray:
    """The undiscounted returns of ``episodes`` whole episodes of ``make_env()`` (a gymnasium
    environment with its TimeLimit), episode i reset with seed ``seed * episodes + i +
    seed_offset``, ``act(observations (E, d)) -> actions (E, action size)`` deciding every step;
    the episodes step in lockstep so the policy runs batched. ``indices``: the episodes i played
    (default: all), so that a share of them gives the same returns as in the whole."""
    indices = range(episodes) if indices is None else indices
    envs = [make_env() for _ in indices]
    obs = np.stack([env.reset(seed=seed * episodes + i + seed_offset)[0] for i, env in zip(indices, envs)])
    returns = np.zeros(len(envs))
    alive = np.ones(len(envs), dtype=bool)
    while alive.any():
        idx = np.flatnonzero(alive)
        actions = np.asarray(act(obs[idx]), dtype=np.float64).reshape(len(idx), -1)
        for i, a in zip(idx, actions):
            o, r, terminated, truncated, _ = envs[i].step(a)
            obs[i] = o
            returns[i] += r
            alive[i] = not (terminated or truncated)
    for env in envs:
        env.close()
    return returns


# The judge's episodes, dealt to processes: gymnasium's MuJoCo step is Python and one core's (160 us
# an environment step at n = 1 on a 2-core Zen 3: 35 s for a run's 200 episodes), and the run's
# clock is paused while the judge plays, so the other cores are idle. One process per core this
# process may use ($OMP_NUM_THREADS where set, as the study's thread pools read it: the tests' one
# per worker), at most one per MIN_EPISODES_PER_PROCESS episodes; spawned once and kept.
MIN_EPISODES_PER_PROCESS = 25
_POOL = {}


def _spawn_is_safe() -> bool:
    """Whether a spawned process can start here without running the caller's script again: spawn
    re-imports ``__main__`` in every child, which runs a script's top level where it has no
    ``if __name__ == "__main__"`` guard. Safe under Jupyter, ``python -c`` and the REPL (no main
    file) and ``python -m`` (the module is imported under another name); not for a script run by
    its path, whose episodes are played here."""
    import sys

    main = sys.modules.get("__main__")
    return getattr(main, "__spec__", None) is not None or not getattr(main, "__file__", None)


def judge_processes(episodes: int) -> int:
    """How many processes play ``episodes`` judge episodes (1: here, in this process)."""
    import os

    if not _spawn_is_safe():
        return 1
    cores = int(os.environ.get("OMP_NUM_THREADS") or 0) or os.cpu_count() or 1
    return max(1, min(cores, episodes // MIN_EPISODES_PER_PROCESS))


def _ignore_interrupts() -> None:
    """A judge process ignores Ctrl-C (SIGINT), which reaches the whole process group: the caller
    that started it handles it (and a Jupyter kernel's shutdown, which sends it too)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _pool(processes: int):
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    if processes not in _POOL:  # spawn: this process holds torch's and XLA's threads, which fork would copy half-made
        import atexit

        _POOL[processes] = ProcessPoolExecutor(processes, mp_context=get_context("spawn"),
                                               initializer=_ignore_interrupts)
        atexit.register(_POOL[processes].shutdown)  # before the interpreter's teardown, which the pool's threads outlive
    return _POOL[processes]


def _make_env(env: str | int):
    """A judge's environment: ``chain_env(links)`` for an int, else the gymnasium id ``env``."""
    if isinstance(env, int):
        return chain_env(env)
    import gymnasium

    return gymnasium.make(env)


def _play_share(arrays: dict, env, episodes: int, seed: int, seed_offset: int, indices: range) -> np.ndarray:
    return play(array_policy(arrays), lambda: _make_env(env), episodes, seed, seed_offset, indices)


def play_policy(arrays: dict, env, episodes: int, seed: int = 0, seed_offset: int = EVAL_SEED_OFFSET) -> np.ndarray:
    """``play`` of the deterministic policy of ``arrays`` on ``_make_env(env)``, its episodes dealt
    to ``judge_processes`` processes in contiguous shares: the same episodes (reset seeds) as
    played here, their returns equal to the policy's rounding (its matrix products round with
    the batch's size, which a long episode's chaos can carry to about 1e-4 of a return)."""
    arrays = check_policy_arrays(arrays)
    processes = judge_processes(episodes)
    if processes == 1:
        return _play_share(arrays, env, episodes, seed, seed_offset, range(episodes))
    bounds = np.linspace(0, episodes, processes + 1).astype(int)
    shares = [_pool(processes).submit(_play_share, arrays, env, episodes, seed, seed_offset, range(lo, hi))
              for lo, hi in pairwise(bounds)]
    return np.concatenate([share.result() for share in shares])


def chain_env(links: int):
    """``ChainMujocoEnv(links)`` under ``TimeLimit(1000)``: gymnasium's MujocoEnv of the chain."""
    from gymnasium.wrappers import TimeLimit

    from ...sims.chain.mujoco_env import ChainMujocoEnv

    return TimeLimit(ChainMujocoEnv(links=links), max_episode_steps=ChainParams(links=links).max_episode_steps)


def array_policy(arrays: dict):
    """The deterministic policy of ``arrays`` as ``play``'s ``act``."""
    arrays = check_policy_arrays(arrays)
    return lambda obs: deterministic_actions(arrays, obs)[:, None]


def gymnasium_returns(arrays: dict, episodes: int = JUDGE_EPISODES, seed: int = 0,
                      seed_offset: int = EVAL_SEED_OFFSET) -> np.ndarray:
    """The deterministic returns of ``episodes`` episodes of ``ChainMujocoEnv`` under
    ``TimeLimit(1000)`` (``play``'s seeds)."""
    return play_policy(arrays, links_of(check_policy_arrays(arrays)), episodes, seed, seed_offset)


# The transfer check at n = 2: gymnasium's own InvertedDoublePendulum-v5 (its slider limit
# included), whose observation has the chain's layout (v5's _get_obs, the constraint force last).
TRANSFER_ENV = "InvertedDoublePendulum-v5"


def transfer_returns(arrays: dict, episodes: int = JUDGE_EPISODES, seed: int = 0) -> np.ndarray:
    """The deterministic returns of an n = 2 policy on gymnasium's own ``TRANSFER_ENV``."""
    if links_of(check_policy_arrays(arrays)) != 2:
        raise ValueError("the transfer check is gymnasium's InvertedDoublePendulum-v5: n = 2 only")
    return play_policy(arrays, TRANSFER_ENV, episodes, seed)


def transfer(arrays: dict, trained_on: str | None, seed: int = 0) -> dict:
    """The transfer check of an n = 2 policy (untimed): its mean deterministic return over 100
    episodes of the n = 2 environment it was not judged on: gymnasium's own v5 for a policy
    trained on the chain, the chain for one trained on v5 (``trained_on``, a peer's ``env``)."""
    if trained_on == TRANSFER_ENV:
        return {"transfer_env": "ChainMujocoEnv(links=2)", "transfer_return": float(gymnasium_returns(arrays, seed=seed).mean())}
    return {"transfer_env": TRANSFER_ENV, "transfer_return": float(transfer_returns(arrays, seed=seed).mean())}


@dataclass(frozen=True)
class Judgement:
    """gymnasium's verdict on a policy: two independent evaluations and whether both pass."""

    first: float  # mean return, 100 episodes
    second: float | None  # the confirming evaluation's mean (None: not run, the first failed)
    threshold: float
    episodes: int

    @property
    def solved(self) -> bool:
        return self.first >= self.threshold and self.second is not None and self.second >= self.threshold


def judge(arrays: dict, threshold: float, seed: int = 0, episodes: int = JUDGE_EPISODES, returns=None) -> Judgement:
    """Solved when the mean return over ``episodes`` gymnasium episodes reaches ``threshold`` and
    a second evaluation from other reset seeds confirms it (run only if the first passes).
    ``returns(policy, episodes, seed, seed_offset)``: what plays them (``gymnasium_returns``)."""
    returns = gymnasium_returns if returns is None else returns
    first = float(returns(arrays, episodes, seed, EVAL_SEED_OFFSET).mean())
    second = None
    if first >= threshold:
        second = float(returns(arrays, episodes, seed, CONFIRM_SEED_OFFSET).mean())
    return Judgement(first, second, float(threshold), episodes)


class ChainClock(Clock):
    judged_on = "gymnasium ChainMujocoEnv"

    def __init__(self, run: ChainRun, *, log=None, progress=None, num_envs: int | None = None,
                 batch_size: int | None = None, peer: dict | None = None):
        """``num_envs``, ``batch_size``, ``peer``: a peer's own (``Clock``'s), else the run's."""
        self._time = SharedTime()  # paused while the judge runs
        super().__init__(run, num_envs=num_envs or run.n, batch_size=batch_size or run.settings.batch_size, log=log,
                         peer=peer, now=self._time.now)
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

    # What a peer that trains on another gymnasium environment overrides (``peers.sb3``): the
    # screen's and the judge's episodes (and ``Clock.threshold``).
    def screen(self, policy) -> float:
        return screen_return(policy, self.s.eval_episodes, seed=self.check_seed())

    def returns(self, policy, episodes: int, seed: int, seed_offset: int) -> np.ndarray:
        return gymnasium_returns(policy, episodes, seed, seed_offset)

    def check(self, policy) -> bool:
        with self.phase("eval"):
            screen = self.screen(policy)
        confirm = None
        if screen >= self.threshold:
            t = time.perf_counter()
            verdict = judge(policy, self.threshold, seed=self.run.seed, returns=self.returns)
            self._time.pause(time.perf_counter() - t)
            if verdict.solved:
                self.judgement = verdict
            # record_check passes when both the screen and ``confirm`` reach the threshold
            confirm = verdict.first if verdict.second is None else min(verdict.first, verdict.second)
        return self.record_check(screen, confirm)

    def final_return(self, policy) -> float:
        if self.judgement is not None and self.solved_in_training:
            return self.judgement.first
        return float(self.returns(policy, JUDGE_EPISODES, self.run.seed, EVAL_SEED_OFFSET).mean())
