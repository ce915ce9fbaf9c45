"""The Atari engines the harness times (studylib.harness.atari.frames), one record each (``AtariEngine``):
how its vector environment is built, stepped and closed, whether it steps more than one
environment, the threads or processes it runs on, and what it needs installed. Every engine's
environment has the same interface: ``reset(seed) -> obs`` and ``step(actions) -> obs``, obs a
uint8 array (N, 4, 84, 84); ``num_actions``; ``close()``.

Engines (``ENGINES``, in ``IMPLS``' order):
  gym         one gymnasium ALE environment (``ale_py.env.AtariEnv``, frameskip 1) wrapped by
              ``AtariPreprocessing`` and ``FrameStackObservation``, stepped from Python: N = 1 only
              (``vectorized=False``).
  gym-async   gymnasium's ``AsyncVectorEnv`` over N such environments, one process each
              (``process_per_env``): the "traditional" loop of the CuLE slides (one emulator per
              CPU worker, observations copied between processes).
  ale-vector  ale-py's threaded C++ ``AtariVectorEnv`` (derived from envpool), threads = cores
              (``threaded``).
  envpool     envpool's Atari (``<Game>-v5``), threads = cores; a game must be one of its tasks
              (``check_game``).

Every one uses the same preprocessing: frameskip 4 with a max over the last two frames, 84x84
grey, 4 stacked frames, up to 30 no-op resets, no sticky actions, full episodes (no life loss).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ...errors import ConfigError

FRAMESKIP = 4  # emulator frames per agent step (frames counted = agent steps x FRAMESKIP)
SCREEN = 84  # observations are SCREEN x SCREEN grey
STACK = 4  # frames stacked per observation
NOOP_MAX = 30


def cores() -> int:
    """The cores this process may run on: the thread count of the threaded vector environments."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def quiet_ale() -> None:
    """ALE prints a banner on stderr with every emulator it loads; only its errors are wanted."""
    import ale_py

    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)


def envpool_task(game: str) -> str:
    """envpool's task id of an ALE game id: "space_invaders" -> "SpaceInvaders-v5"."""
    return "".join(part.capitalize() for part in game.split("_")) + "-v5"


def check_envpool_task(game: str) -> None:
    """ConfigError unless envpool lists a task for ALE game id ``game``."""
    import envpool

    if envpool_task(game) not in envpool.list_all_envs():
        raise ConfigError(f"envpool has no Atari task {envpool_task(game)!r} for game {game!r}")


# -- the environments, behind one interface ---------------------------------------------------------


def _single_env(game: str):
    """One gymnasium ALE environment with the standard preprocessing (module level: picklable for
    AsyncVectorEnv's worker processes)."""
    import ale_py.env
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

    env = ale_py.env.AtariEnv(game=game, frameskip=1, repeat_action_probability=0.0, obs_type="rgb")
    env = AtariPreprocessing(env, noop_max=NOOP_MAX, frame_skip=FRAMESKIP, screen_size=SCREEN, grayscale_obs=True,
                             terminal_on_life_loss=False, scale_obs=False)
    return FrameStackObservation(env, stack_size=STACK)


class _SingleAsVector:
    """Engine gym: one environment behind the vector interface (N = 1, reset when an episode ends)."""

    def __init__(self, game: str):
        self.env = _single_env(game)
        self.num_actions = int(self.env.action_space.n)

    def reset(self, seed):
        obs, _ = self.env.reset(seed=seed)
        return np.asarray(obs)[None]

    def step(self, actions):
        obs, _, terminated, truncated, _ = self.env.step(int(actions[0]))
        if terminated or truncated:
            obs, _ = self.env.reset()
        return np.asarray(obs)[None]

    def close(self):
        self.env.close()


class _Vector:
    """A gymnasium-style vector environment (gym-async, ale-vector, envpool) as (reset, step)."""

    def __init__(self, env, num_actions: int):
        self.env, self.num_actions = env, num_actions

    def reset(self, seed):
        obs, _ = self.env.reset(seed=seed)
        return obs

    def step(self, actions):
        return self.env.step(actions)[0]

    def close(self):
        self.env.close()


class _EnvpoolVector(_Vector):
    """envpool's vector environment: seeded at creation, so ``reset`` ignores its seed."""

    def reset(self, seed):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self.env.reset()[0]


def _make_gym(game: str, num_envs: int, seed: int):
    return _SingleAsVector(game)


def _make_gym_async(game: str, num_envs: int, seed: int):
    from gymnasium.vector import AsyncVectorEnv

    env = AsyncVectorEnv([functools.partial(_single_env, game)] * num_envs)
    return _Vector(env, int(env.single_action_space.n))


def _make_ale_vector(game: str, num_envs: int, seed: int):
    import ale_py

    env = ale_py.AtariVectorEnv(game, num_envs, num_threads=cores(), img_height=SCREEN, img_width=SCREEN,
                                grayscale=True, stack_num=STACK, frameskip=FRAMESKIP, maxpool=True,
                                noop_max=NOOP_MAX, repeat_action_probability=0.0, episodic_life=False)
    return _Vector(env, int(env.single_action_space.n))


def _make_envpool(game: str, num_envs: int, seed: int):
    import envpool

    check_envpool_task(game)
    env = envpool.make_gymnasium(envpool_task(game), num_envs=num_envs, num_threads=cores(), seed=seed,
                                 img_height=SCREEN, img_width=SCREEN, gray_scale=True, stack_num=STACK,
                                 frame_skip=FRAMESKIP, noop_max=NOOP_MAX, repeat_action_probability=0.0,
                                 episodic_life=False)
    return _EnvpoolVector(env, int(env.action_space.n))


# -- the records ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AtariEngine:
    """One Atari engine: what the harness needs to know about it, so that no check is by name."""

    name: str  # the implementation's name in IMPLS and in the data
    title: str  # what it is, in words
    make: Callable  # (game, num_envs, seed) -> its environment (the interface above); the ROM already checked
    needs: tuple[str, ...]  # the distributions it needs installed (their versions are recorded)
    vectorized: bool = True  # steps N environments per call; False: N = 1 only
    threaded: bool = False  # C++ threads, one per core: reports threads = cores()
    process_per_env: bool = False  # one worker process per environment: reports processes = N
    check_game: Callable[[str], None] | None = None  # ConfigError for a game it lacks (beyond ale-py's ROMs)

    def threads(self) -> int | None:
        """The threads it steps on (None: not a threaded engine)."""
        return cores() if self.threaded else None

    def processes(self, num_envs: int) -> int:
        """The processes it steps ``num_envs`` environments in."""
        return num_envs if self.process_per_env else 1


ENGINES = {e.name: e for e in (
    AtariEngine("gym", "the single gymnasium environment", _make_gym, ("ale-py", "gymnasium"), vectorized=False),
    AtariEngine("gym-async", "gymnasium's AsyncVectorEnv", _make_gym_async, ("ale-py", "gymnasium"),
                process_per_env=True),
    AtariEngine("ale-vector", "ale-py's AtariVectorEnv", _make_ale_vector, ("ale-py",), threaded=True),
    AtariEngine("envpool", "envpool's Atari", _make_envpool, ("envpool",), threaded=True,
                check_game=check_envpool_task),
)}
IMPLS = tuple(ENGINES)
