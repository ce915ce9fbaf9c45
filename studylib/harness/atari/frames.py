"""Atari data collection on the CPU: the system of the CuLE slides (Dalton et al., GTC 2018), run
where no GPU is: ALE emulators with the standard preprocessing, stepped by three vector
environments, with and without the Nature-CNN policy, inference only. This module owns the ROMs,
the points and their timing (``measure``) and where a step's time goes (``measure_breakdown``);
the engines themselves (gym, gym-async, ale-vector, envpool: how each is built, what it runs on)
are the records of studylib/harness/atari/engines.py, and every check of an implementation reads
its record, never its name.

The slides' terms: slide 23 contrasts the gym loop, "for agent in (0, agents): action.cpu() #
transfer to CPU ... env.step(action.numpy()) ... observation.cuda() # transfer back GPU", with
CuLE's "parallel call to all agents"; slide 24 is "FRAMES PER SECOND Breakout, inference only (no
training)" at 1, 1024, 4096 and 32768 environments.

Implementations (``IMPLS``): the engines of ``atari_engines.ENGINES``, in its order.

**Frames are emulator frames**: one agent step of one environment is ``FRAMESKIP`` = 4 frames, as
CuLE and envpool count them; ``frames_per_s = 4 x agent steps per second``.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import ConfigError
from .engines import (ENGINES, FRAMESKIP, IMPLS, NOOP_MAX, SCREEN, STACK, AtariEngine, cores, envpool_task,
                      quiet_ale)

POLICIES = ("none", "cnn")  # none: uniform random actions; cnn: the Nature CNN's greedy action


# -- the ROMs ---------------------------------------------------------------------------------------


def roms_dir() -> Path:
    """Where ale-py keeps the ROMs its wheel ships (108 ``.bin`` files; nothing is downloaded)."""
    import ale_py.roms

    return Path(ale_py.roms.__file__).parent


def known_games() -> tuple[str, ...]:
    import ale_py.roms

    return tuple(sorted(ale_py.roms.get_all_rom_ids()))


def rom_path(game: str) -> Path:
    """The ROM file of ALE game id ``game`` (e.g. "breakout"); ConfigError (one line) for an
    unknown id or a ROM missing from this installation."""
    games = known_games()
    if game not in games:
        raise ConfigError(f"unknown Atari game {game!r}; ALE game ids look like breakout, pong, space_invaders "
                          f"({len(games)} known)")
    path = roms_dir() / f"{game}.bin"
    if not path.is_file():
        raise ConfigError(f"the ROM of Atari game {game!r} is missing: no {path} (ale-py's wheel ships it; "
                          f"reinstall ale-py)")
    return path


# -- the settings of one measurement ----------------------------------------------------------------


@dataclass(frozen=True)
class AtariPoint:
    """One measurement: frames per second of ``impl`` on ``game`` with ``num_envs`` environments."""

    game: str  # ALE game id: "breakout", "pong", ...
    impl: str  # one of IMPLS
    num_envs: int  # N environments stepped per call
    policy: str = "none"  # one of POLICIES
    repeats: int = 3  # timed regions (median reported)
    min_seconds: float = 0.2  # minimum length of one timed region
    seed: int = 0

    def __post_init__(self):
        if self.impl not in IMPLS:
            raise ConfigError(f"unknown Atari implementation {self.impl!r}; valid: {', '.join(IMPLS)}")
        if self.policy not in POLICIES:
            raise ConfigError(f"unknown Atari policy {self.policy!r}; valid: {', '.join(POLICIES)}")
        if isinstance(self.num_envs, bool) or not isinstance(self.num_envs, int) or self.num_envs < 1:
            raise ConfigError(f"num_envs must be a positive integer, got {self.num_envs!r}")
        engine = ENGINES[self.impl]
        if not engine.vectorized and self.num_envs != 1:
            raise ConfigError(f"{engine.title} (impl {self.impl}) runs N = 1 only")
        if not (isinstance(self.repeats, int) and self.repeats >= 1 and self.min_seconds > 0):
            raise ConfigError(f"repeats must be >= 1 and min_seconds > 0, got {self.repeats!r}, {self.min_seconds!r}")
        rom_path(self.game)
        if engine.check_game is not None:
            engine.check_game(self.game)

    def columns(self) -> dict:
        return {"game": self.game, "impl": self.impl, "num_envs": self.num_envs, "policy": self.policy}

    def describe(self) -> str:
        return f"{self.game} {self.impl} N={self.num_envs} policy={self.policy}"


# -- the environments -------------------------------------------------------------------------------


def make_env(impl: str, game: str, num_envs: int, seed: int = 0):
    """``impl``'s environment (``atari_engines``): ``reset(seed) -> obs`` and ``step(actions) -> obs``,
    obs a uint8 array (N, 4, 84, 84); ``num_actions``; ``close()``."""
    rom_path(game)
    quiet_ale()
    if impl not in ENGINES:
        raise ConfigError(f"unknown Atari implementation {impl!r}; valid: {', '.join(IMPLS)}")
    return ENGINES[impl].make(game, num_envs, seed)


# -- the policy -------------------------------------------------------------------------------------


def nature_cnn(num_actions: int):
    """The network of Mnih et al. (2015), Nature 518, "Methods: Model architecture": "The input to
    the neural network consists of an 84 x 84 x 4 image ... The first hidden layer convolves 32
    filters of 8 x 8 with stride 4 ... and applies a rectifier nonlinearity. The second hidden
    layer convolves 64 filters of 4 x 4 with stride 2, again followed by a rectifier nonlinearity.
    This is followed by a third convolutional layer that convolves 64 filters of 3 x 3 with stride
    1 followed by a rectifier. The final hidden layer is fully-connected and consists of 512
    rectifier units. The output layer is a fully-connected linear layer with a single output for
    each valid action." Input: uint8 frames scaled to [0, 1] by ``policy_input``."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(STACK, 32, 8, stride=4), nn.ReLU(),
        nn.Conv2d(32, 64, 4, stride=2), nn.ReLU(),
        nn.Conv2d(64, 64, 3, stride=1), nn.ReLU(),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 512), nn.ReLU(),
        nn.Linear(512, num_actions),
    ).eval()


def policy_input(obs):
    """The host copy the policy needs: the uint8 observation batch as float32 in [0, 1]."""
    import torch

    return torch.from_numpy(np.ascontiguousarray(obs)).float().div_(255.0)


def greedy_actions(model, x) -> np.ndarray:
    """Inference only (slide 24): the argmax action of every environment."""
    return model(x).argmax(1).numpy()


# -- frames per second ------------------------------------------------------------------------------


class _OpenEnv:
    """The environment of the last measurement, kept open for the next one with the same (impl,
    game, N): consecutive points that differ only in the policy share one (costly) construction."""

    key = None
    env = None
    setup_s = None

    @classmethod
    def get(cls, impl, game, num_envs, seed):
        key = (impl, game, num_envs, seed)
        if cls.key != key:
            cls.close()
            t0 = time.perf_counter()
            cls.env = make_env(impl, game, num_envs, seed)
            cls.env.reset(seed)
            cls.key, cls.setup_s = key, time.perf_counter() - t0
        return cls.env, cls.setup_s

    @classmethod
    def close(cls):
        if cls.env is not None:
            cls.env.close()
        cls.key = cls.env = cls.setup_s = None


close_open_env = _OpenEnv.close


def measure(point: AtariPoint) -> dict:
    """Frames per second of one point: the median over ``repeats`` timed regions of at least
    ``min_seconds`` each (after one untimed warm-up region), each region whole agent steps of all N
    environments. With the CNN, each step is: observation batch -> float tensor -> forward ->
    greedy actions -> ``env.step``; without it, uniform random actions."""
    import torch

    env, setup_s = _OpenEnv.get(point.impl, point.game, point.num_envs, point.seed)
    engine = ENGINES[point.impl]  # what it reports running on: its record's, not its name's
    rng = np.random.default_rng(point.seed)
    model = nature_cnn(env.num_actions) if point.policy == "cnn" else None
    obs = env.step(rng.integers(0, env.num_actions, point.num_envs))

    def region(seconds):
        nonlocal obs
        steps, t0 = 0, time.perf_counter()
        while True:
            if model is None:
                actions = rng.integers(0, env.num_actions, point.num_envs)
            else:
                with torch.inference_mode():
                    actions = greedy_actions(model, policy_input(obs))
            obs = env.step(actions)
            steps += 1
            elapsed = time.perf_counter() - t0
            if elapsed >= seconds:
                return steps / elapsed

    region(min(point.min_seconds, 0.1))  # warm-up
    rates = [region(point.min_seconds) for _ in range(point.repeats)]
    steps_per_s = statistics.median(rates) * point.num_envs
    return {**point.columns(), "frames_per_s": steps_per_s * FRAMESKIP, "agent_steps_per_s": steps_per_s,
            "frames_per_s_min": min(rates) * point.num_envs * FRAMESKIP,
            "frames_per_s_max": max(rates) * point.num_envs * FRAMESKIP, "frameskip": FRAMESKIP,
            "threads": engine.threads(), "processes": engine.processes(point.num_envs),
            "torch_threads": torch.get_num_threads(), "setup_s": setup_s, "repeats": point.repeats,
            "min_seconds": point.min_seconds, "seed": point.seed, "versions": versions()}


def versions() -> dict:
    from importlib import metadata

    out = {}
    for name in (*sorted({need for engine in ENGINES.values() for need in engine.needs}), "torch"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:  # pragma: no cover
            out[name] = None
    return out


# -- where the time goes ----------------------------------------------------------------------------

LOOPS = ("python-loop", "ale-vector")
PHASES = ("emulation", "preprocessing", "host copies", "inference")


@dataclass(frozen=True)
class BreakdownPoint:
    """Where one CNN-driven collection step spends its time, phase by phase.

    loop python-loop: N ``ale_py.ALEInterface`` emulators stepped one after the other in this
    process (the slides' "for agent in (0, agents)"), every phase timed on its own:
    emulation = the ``act`` calls (4 frames, and resets), preprocessing = reading the last two
    screens in grey, their max, the 84x84 ``cv2.resize`` (INTER_AREA, as AtariPreprocessing) and
    the frame stack, host copies = gathering the N stacks into one batch and converting it to the
    policy's float tensor, inference = the CNN forward pass and the greedy action.
    loop ale-vector: the threaded C++ vector environment, where emulation and preprocessing run
    together inside one ``step`` call (timed as "emulation" + "preprocessing" together, reported
    under "env step"), then the same host copies and inference.
    """

    game: str
    loop: str
    num_envs: int
    min_seconds: float = 0.5
    seed: int = 0

    def __post_init__(self):
        if self.loop not in LOOPS:
            raise ConfigError(f"unknown loop {self.loop!r}; valid: {', '.join(LOOPS)}")
        if isinstance(self.num_envs, bool) or not isinstance(self.num_envs, int) or self.num_envs < 1:
            raise ConfigError(f"num_envs must be a positive integer, got {self.num_envs!r}")
        rom_path(self.game)

    def columns(self) -> dict:
        return {"game": self.game, "loop": self.loop, "num_envs": self.num_envs}

    def describe(self) -> str:
        return f"breakdown {self.game} {self.loop} N={self.num_envs}"


def timer_cost_s(calls: int = 20000) -> float:
    """The cost of one ``time.perf_counter()`` call here (median of 5 runs), to state what the
    breakdown's instrument adds to the time it measures."""
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            time.perf_counter()
        runs.append((time.perf_counter() - t0) / calls)
    return statistics.median(runs)


class _PythonLoopEnv:
    """One ALE emulator with the standard preprocessing written out, so each phase can be timed."""

    def __init__(self, game: str, seed: int):
        import ale_py

        quiet_ale()
        self.ale = ale_py.ALEInterface()
        self.ale.setInt("random_seed", seed)
        self.ale.setFloat("repeat_action_probability", 0.0)
        self.ale.loadROM(str(rom_path(game)))
        self.actions = self.ale.getMinimalActionSet()
        h, w = self.ale.getScreenDims()
        self.screens = np.zeros((2, h, w), np.uint8)
        self.stack = np.zeros((STACK, SCREEN, SCREEN), np.uint8)

    def step(self, action: int, clock: list) -> None:
        """One agent step; adds (emulation, preprocessing) seconds to ``clock``."""
        import cv2

        ale, a = self.ale, self.actions[action]
        t0 = time.perf_counter()
        for _ in range(FRAMESKIP - 1):
            ale.act(a)
        t1 = time.perf_counter()
        ale.getScreenGrayscale(self.screens[0])
        t2 = time.perf_counter()
        ale.act(a)
        if ale.game_over():
            ale.reset_game()
        t3 = time.perf_counter()
        ale.getScreenGrayscale(self.screens[1])
        frame = cv2.resize(np.maximum(self.screens[0], self.screens[1]), (SCREEN, SCREEN),
                           interpolation=cv2.INTER_AREA)
        self.stack[:-1] = self.stack[1:]
        self.stack[-1] = frame
        t4 = time.perf_counter()
        clock[0] += (t1 - t0) + (t3 - t2)
        clock[1] += (t2 - t1) + (t4 - t3)


def measure_breakdown(point: BreakdownPoint) -> dict:
    """Seconds per collection step (all N environments) in each phase, over at least
    ``min_seconds`` after a warm-up step, and each phase's share of the instrumented step. The
    instrument: ``time.perf_counter`` around every phase (python-loop: 5 calls per environment
    and 4 per step; ale-vector: 4 per step); ``instrument_share`` is their measured cost over the
    step's time."""
    import torch

    n = point.num_envs
    rng = np.random.default_rng(point.seed)
    clock = [0.0, 0.0, 0.0, 0.0]  # emulation, preprocessing, host copies, inference
    if point.loop == "python-loop":
        envs = [_PythonLoopEnv(point.game, point.seed + i) for i in range(n)]
        num_actions, vec = len(envs[0].actions), None
        timer_calls = 5 * n + 4
    else:
        vec = make_env("ale-vector", point.game, n, point.seed)
        vec.reset(point.seed)
        num_actions, envs = vec.num_actions, None
        timer_calls = 4
    model = nature_cnn(num_actions)
    actions = rng.integers(0, num_actions, n)

    def one_step():
        nonlocal actions
        t0 = time.perf_counter()
        if envs is not None:
            for env, a in zip(envs, actions):
                env.step(int(a), clock)
            t1 = time.perf_counter()
            batch = np.stack([env.stack for env in envs])
        else:
            batch = vec.step(actions)
            t1 = time.perf_counter()
            clock[0] += t1 - t0  # the whole C++ step: emulation and preprocessing together
        x = policy_input(batch)
        t2 = time.perf_counter()
        with torch.inference_mode():
            actions = greedy_actions(model, x)
        t3 = time.perf_counter()
        clock[2] += t2 - t1
        clock[3] += t3 - t2

    try:
        one_step()  # warm-up
        clock[:] = [0.0] * 4
        steps, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < point.min_seconds:
            one_step()
            steps += 1
        wall = time.perf_counter() - t0
        inference_one_thread = _inference_seconds(model, policy_input(batch_of(n)), threads=1)
    finally:
        if vec is not None:
            vec.close()
    per_step = [c / steps for c in clock]
    timed = sum(per_step)
    env_step = per_step[0] + per_step[1]
    shares = {ph: s / timed for ph, s in zip(PHASES, per_step)}
    if point.loop == "ale-vector":  # not separable inside the C++ call
        shares["emulation"] = shares["preprocessing"] = None
    return {**point.columns(), "steps": steps, "wall_s": wall, "step_s": wall / steps, "env_step_s": env_step,
            "emulation_s": per_step[0] if point.loop == "python-loop" else None,
            "preprocessing_s": per_step[1] if point.loop == "python-loop" else None,
            "host_copies_s": per_step[2], "inference_s": per_step[3], "inference_one_thread_s": inference_one_thread,
            "share_env_step": env_step / timed, **{f"share_{k.replace(' ', '_')}": v for k, v in shares.items()},
            "frames_per_s": n * FRAMESKIP * steps / wall, "timer_calls_per_step": timer_calls,
            "instrument_share": timer_calls * timer_cost_s() / (wall / steps), "threads": cores(),
            "torch_threads": torch.get_num_threads(), "min_seconds": point.min_seconds, "seed": point.seed,
            "versions": versions()}


def batch_of(n: int) -> np.ndarray:
    """A batch of n observations (their content does not change the CNN's cost)."""
    return np.zeros((n, STACK, SCREEN, SCREEN), np.uint8)


def _inference_seconds(model, x, threads: int, calls: int = 3) -> float:
    """Median seconds of one forward pass + greedy action with torch on ``threads`` threads (the
    thread count is restored after). The breakdown records it beside the step's inference time
    (torch's default, threads = cores): where other work shares the cores, torch's threads wait for
    one another at every parallel region, and the one-thread time shows how much of the
    inference time is that waiting."""
    import torch

    saved = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        times = []
        with torch.inference_mode():
            greedy_actions(model, x)
            for _ in range(calls):
                t0 = time.perf_counter()
                greedy_actions(model, x)
                times.append(time.perf_counter() - t0)
    finally:
        torch.set_num_threads(saved)
    return statistics.median(times)


def limiting_phase(row: dict, inference: str = "inference_s") -> str:
    """The phase that takes the largest share of a breakdown row's step: "env step" (emulation and
    preprocessing together), "host copies" or "inference" (its time from column ``inference``: the
    loop's, or "inference_one_thread_s", the same forward pass on one thread)."""
    parts = {"env step": row["env_step_s"], "host copies": row["host_copies_s"], "inference": row[inference]}
    return max(parts, key=parts.get)

