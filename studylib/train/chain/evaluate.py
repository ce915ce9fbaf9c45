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


def play(act, make_env, episodes: int, seed: int = 0, seed_offset: int = EVAL_SEED_OFFSET) -> np.ndarray:
    """The undiscounted returns of ``episodes`` whole episodes of ``make_env()`` (a gymnasium
    environment with its TimeLimit), episode i reset with seed ``seed * episodes + i +
    seed_offset``, ``act(observations (E, d)) -> actions (E, action size)`` deciding every step;
    the episodes step in lockstep so the policy runs batched."""
    envs = [make_env() for _ in range(episodes)]
    obs = np.stack([env.reset(seed=seed * episodes + i + seed_offset)[0] for i, env in enumerate(envs)])
    returns = np.zeros(episodes)
    alive = np.ones(episodes, dtype=bool)
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
    links = links_of(check_policy_arrays(arrays))
    return play(array_policy(arrays), lambda: chain_env(links), episodes, seed, seed_offset)


# The transfer check at n = 2: gymnasium's own InvertedDoublePendulum-v5 (its slider limit
# included), whose observation has the chain's layout (v5's _get_obs, the constraint force last).
TRANSFER_ENV = "InvertedDoublePendulum-v5"


def transfer_returns(arrays: dict, episodes: int = JUDGE_EPISODES, seed: int = 0) -> np.ndarray:
    """The deterministic returns of an n = 2 policy on gymnasium's own ``TRANSFER_ENV``."""
    import gymnasium

    if links_of(check_policy_arrays(arrays)) != 2:
        raise ValueError("the transfer check is gymnasium's InvertedDoublePendulum-v5: n = 2 only")
    return play(array_policy(arrays), lambda: gymnasium.make(TRANSFER_ENV), episodes, seed)


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
