"""Our implementations under gymnasium's API: ``studylib/CartPole-v1`` for ``make_vec`` and ``make``.

    import gymnasium, studylib.gym_vector                      # the import registers the id
    envs = gymnasium.make_vec("studylib/CartPole-v1", num_envs=4096, impl="fused")
    obs, info = envs.reset(seed=0)
    obs, reward, terminated, truncated, info = envs.step(envs.action_space.sample())
    env = gymnasium.make("studylib/CartPole-v1", impl="jax")   # one env, for check_env and friends

``StudylibVectorEnv`` wraps ``studylib.make(impl, num_envs, ...)`` (any of
``studylib.IMPLEMENTATIONS``) in ``gymnasium.vector.VectorEnv``. Its ``autoreset_mode``
(gymnasium's ``AutoresetMode``, declared in ``metadata``) is one of

NEXT_STEP (the default, as gymnasium's CartPole-v1)
    The step that ends an episode returns its terminal observation; the next ``step`` ignores that
    env's action and returns the next episode's first observation with reward 0 and no flags.
    gymnasium's vector wrappers (RecordEpisodeStatistics, NormalizeObservation, NormalizeReward)
    are written for this mode.
SAME_STEP
    The implementations' own rule (studylib/episodes.py), passed through untouched: the step that
    ends an episode returns its reward and flags with the next episode's first observation, and
    ``info["final_obs"]`` / ``info["final_info"]`` as gymnasium's ``SyncVectorEnv`` builds them.
    The fastest mode: no state crosses between the adapter and the implementation.
DISABLED
    As NEXT_STEP's ending step; the finished envs must then be reset with
    ``reset(options={"reset_mask": mask})`` before the next ``step``.

The implementations always reset a terminated env inside the step. For NEXT_STEP and DISABLED the
adapter therefore keeps the episode bookkeeping itself: it counts episode steps (the
implementation runs without a time limit), returns ``env.final_obs()`` as the observation, and
restarts finished envs one call late by writing freshly drawn states with ``set_state``.

Seeding, as gymnasium: ``reset(seed=s)`` seeds ``self.np_random`` and the implementation's own
reset draw (all envs at once, fast at any N); ``reset()`` draws a fresh seed from ``np_random``;
``reset(seed=[s_0, ..., s_{N-1}])`` starts env i exactly where gymnasium's CartPole-v1 seeded with
``s_i`` starts. The adapter's own restarts draw from ``np_random``.
"""

from __future__ import annotations

import dataclasses
import numbers

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.envs.classic_control.utils import maybe_parse_reset_bounds
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from .dynamics import CARTPOLE_V1, RESET_HIGH, RESET_LOW, STATE_SIZE
from .errors import ConfigError
from .registry import make
from .settings import MAX_SEED, check_seed, positive_int

ENV_ID = "studylib/CartPole-v1"
# The implementation's time limit where the adapter counts episode steps itself (int32 counters).
NO_TIME_LIMIT = 2**31 - 1


def observation_space(p=CARTPOLE_V1) -> spaces.Box:
    """gymnasium's CartPole-v1 observation space (angle and position bounds at twice the
    termination thresholds, velocities unbounded)."""
    high = np.array([p.x_threshold * 2, np.inf, p.theta_threshold_radians * 2, np.inf], dtype=np.float32)
    return spaces.Box(-high, high, dtype=np.float32)


def check_autoreset_mode(mode) -> AutoresetMode:
    """An ``AutoresetMode`` or its value ("NextStep", "SameStep", "Disabled")."""
    try:
        return AutoresetMode(mode)
    except ValueError:
        valid = ", ".join(f"AutoresetMode.{m.name}" for m in AutoresetMode)
        raise ConfigError(f"unknown autoreset_mode {mode!r}; valid: {valid}") from None


def _host(array, dtype):
    """Every array the adapter returns passes here once: the implementation's array as numpy, as
    gymnasium's API expects (the one place a later ``arrays=`` option switches)."""
    return np.asarray(array, dtype=dtype)


def _draw_rows(rng: np.random.Generator, shape, low=RESET_LOW, high=RESET_HIGH) -> np.ndarray:
    """CartPole-v1's reset draw, as gymnasium's CartPoleEnv.reset makes it (float64, uniform)."""
    return rng.uniform(low=low, high=high, size=shape)


class StudylibVectorEnv(VectorEnv):
    """``num_envs`` CartPole-v1 environments of studylib implementation ``impl``.

    ``autoreset_mode``: an ``AutoresetMode`` or its value (see the module's doc). Keyword
    arguments go to ``studylib.make`` (device, state_factor, compute_factor, policy_seed);
    ``max_episode_steps`` replaces CartPole-v1's 500.
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 1, impl: str = "cpp", *, autoreset_mode=AutoresetMode.NEXT_STEP,
                 seed: int = 0, device=None, state_factor: int = 1, compute_factor: int = 1,
                 policy_seed: int = 0, max_episode_steps: int | None = None, render_mode: str | None = None):
        self.autoreset_mode = check_autoreset_mode(autoreset_mode)
        if render_mode is not None:
            raise ConfigError(f"render_mode {render_mode!r} is not supported (no rendering)")
        params = CARTPOLE_V1
        if max_episode_steps is not None:
            params = dataclasses.replace(params, max_episode_steps=positive_int("max_episode_steps", max_episode_steps))
        self._same_step = self.autoreset_mode == AutoresetMode.SAME_STEP
        inner = params if self._same_step else dataclasses.replace(params, max_episode_steps=NO_TIME_LIMIT)
        self.impl = impl
        self.env = make(impl, num_envs, seed=seed, device=device, state_factor=state_factor,
                        compute_factor=compute_factor, policy_seed=policy_seed, params=inner)
        self.max_episode_steps = params.max_episode_steps
        self.metadata = {**type(self).metadata, "autoreset_mode": self.autoreset_mode}
        self.num_envs = self.env.num_envs
        self.render_mode = None
        self.single_observation_space = observation_space(params)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.single_action_space = spaces.Discrete(2)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        # NEXT_STEP / DISABLED bookkeeping: steps into each episode, and the envs that finished
        # on the last step (restarted by the next step, or by reset(reset_mask) when DISABLED).
        self._elapsed = np.zeros(self.num_envs, np.int64)
        self._finished = np.zeros(self.num_envs, bool)
        self._obs = None  # the last observations returned (a partial reset returns them for the rest)

    # ---- reset ------------------------------------------------------------------------------------
    def _check_seed(self, seed):
        """None, one seed, or a list of num_envs seeds (each an int or None), as gymnasium."""
        if seed is None or isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
            return seed if seed is None else check_seed(seed)
        if not isinstance(seed, (list, tuple)):
            raise ConfigError(f"seed must be an integer, a list of {self.num_envs} seeds, or None; got {seed!r}")
        if len(seed) != self.num_envs:
            raise ConfigError(f"a seed list needs one seed per env: {self.num_envs}, got {len(seed)}")
        return [None if s is None else check_seed(s, f"seed[{i}]") for i, s in enumerate(seed)]

    def _check_mask(self, options):
        if not options:
            return None
        unknown = set(options) - {"reset_mask"}
        if unknown:
            raise ConfigError(f"unknown reset option(s) {sorted(unknown)}; supported: reset_mask")
        mask = options["reset_mask"]
        if not (isinstance(mask, np.ndarray) and mask.dtype == bool and mask.shape == (self.num_envs,)):
            raise ConfigError(f"options['reset_mask'] must be a bool numpy array of shape ({self.num_envs},)")
        if self._same_step:
            raise ConfigError("options['reset_mask'] needs autoreset_mode NEXT_STEP or DISABLED "
                              "(under SAME_STEP the implementation keeps the episode counters)")
        if self._obs is None:
            raise ConfigError("a partial reset (options['reset_mask']) needs a full reset() first")
        return mask

    def _fresh_rows(self, index, seeds=None) -> np.ndarray:
        """New episodes' states for envs ``index``: env i from gymnasium's ``np_random(seeds[i])``
        where a seed list gives one (CartPoleEnv.reset(seed=seeds[i]) draws the same), else from
        ``self.np_random``."""
        if seeds is None:
            return _draw_rows(self.np_random, (len(index), self.env.row_len))
        rngs = (self.np_random if seeds[i] is None else seeding.np_random(seeds[i])[0] for i in index)
        return np.array([_draw_rows(rng, self.env.row_len) for rng in rngs]).reshape(len(index), -1)

    def _restart(self, mask, rows) -> np.ndarray:
        """Start new episodes in the envs of ``mask`` from ``rows``; returns their observations."""
        state = self.env.get_state()
        state[mask] = rows
        self.env.set_state(state)
        self._elapsed[mask] = 0
        self._finished[mask] = False
        return rows[:, :STATE_SIZE].astype(np.float32)

    def reset(self, *, seed=None, options: dict | None = None):
        """Reset every env (or those of ``options["reset_mask"]``); returns (obs (N, 4) float32, {})."""
        seed, mask = self._check_seed(seed), self._check_mask(options)  # nothing changes before both pass
        seeds = seed if isinstance(seed, list) else None
        super().reset(seed=None if seeds else seed)  # seeds np_random from one int, as gymnasium
        if seeds and any(s is not None for s in seeds):  # a seed list seeds the adapter's restarts too
            self._np_random = np.random.default_rng([s for s in seeds if s is not None])
            self._np_random_seed = -1  # gymnasium's value for "not seeded from one int"
        if mask is not None:
            obs = self._obs.copy()
            obs[mask] = self._restart(mask, self._fresh_rows(np.flatnonzero(mask), seeds))
        else:
            # One seed: the implementation's own draw for all envs (fast at any N).
            self.env.seed = seed if isinstance(seed, int) else int(self.np_random.integers(0, MAX_SEED + 1))
            obs = _host(self.env.reset(), np.float32)
            self._elapsed[:] = 0
            self._finished[:] = False
            if seeds:
                obs = self._restart(np.ones(self.num_envs, bool), self._fresh_rows(np.arange(self.num_envs), seeds))
        self._obs = obs
        return obs, {}

    # ---- step -------------------------------------------------------------------------------------
    def step(self, actions):
        """One step of every env; returns (obs, reward, terminated, truncated, info) in the
        declared autoreset mode (see the module's doc)."""
        actions = self.env.check_actions(actions)  # a ConfigError here steps nothing
        if self.autoreset_mode == AutoresetMode.DISABLED and self._finished.any():
            raise ConfigError(f"envs {np.flatnonzero(self._finished).tolist()[:8]} finished their episodes; reset them "
                              "with reset(options={'reset_mask': mask}) before stepping (autoreset_mode DISABLED)")
        obs, reward, terminated, truncated = self.env.step(actions)
        reward, terminated = _host(reward, np.float32), _host(terminated, bool)
        if self._same_step:
            obs, truncated = _host(obs, np.float32), _host(truncated, bool)
            done = terminated | truncated
            info = self._final_info(_host(self.env.final_obs(), np.float32), done) if done.any() else {}
        else:
            obs, reward, terminated, truncated = self._step_late_reset(reward, terminated)
            info = {}
        self._obs = obs
        return obs, reward, terminated, truncated, info

    def _step_late_reset(self, reward, terminated):
        """NEXT_STEP / DISABLED after the implementation's step: the terminal observations, the
        adapter's time limit, and the restart of the envs that finished on the previous step (their
        action was ignored: the implementation's step of them is overwritten)."""
        obs = _host(self.env.final_obs(), np.float32).copy()
        self._elapsed += 1
        truncated = self._elapsed >= self.max_episode_steps
        restart = self._finished.copy()
        if restart.any():
            obs[restart] = self._restart(restart, self._fresh_rows(np.flatnonzero(restart)))
            reward = np.where(restart, np.float32(0), reward)
            terminated, truncated = terminated & ~restart, truncated & ~restart
        self._finished = terminated | truncated
        return obs, reward, terminated, truncated

    def _final_info(self, final_obs, done) -> dict:
        """SAME_STEP's info for the finished envs, built as SyncVectorEnv's ``_add_info`` builds it
        from CartPoleEnv's (empty) step info: an object array of (4,) terminal observations."""
        boxed = np.full(self.num_envs, None, dtype=object)
        for i in np.flatnonzero(done):
            boxed[i] = final_obs[i]
        return {"final_obs": boxed, "_final_obs": done.copy(), "final_info": {}, "_final_info": done.copy()}

    def close_extras(self, **kwargs):
        self.env = None


class StudylibCartPoleEnv(gymnasium.Env):
    """One CartPole-v1 environment: implementation ``impl`` with ``num_envs=1``, for
    ``gymnasium.make`` (``check_env``, single-env wrappers, ``SyncVectorEnv``).

    As gymnasium's CartPoleEnv: ``reset`` draws the state from ``self.np_random`` (so a seed gives
    gymnasium's CartPole-v1's very first state, and ``options`` may set "low"/"high"), the time
    limit is the ``TimeLimit`` wrapper ``make`` adds (the implementation runs without one), and
    the step that terminates returns the terminal observation. Stepping on after that is refused:
    the implementation has already started its next episode.
    """

    metadata = {"render_modes": []}

    def __init__(self, impl: str = "cpp", *, device=None, state_factor: int = 1, compute_factor: int = 1,
                 render_mode: str | None = None):
        if render_mode is not None:
            raise ConfigError(f"render_mode {render_mode!r} is not supported (no rendering)")
        self.impl = impl
        self.env = make(impl, 1, device=device, state_factor=state_factor, compute_factor=compute_factor,
                        params=dataclasses.replace(CARTPOLE_V1, max_episode_steps=NO_TIME_LIMIT))
        self.render_mode = None
        self.observation_space = observation_space()
        self.action_space = spaces.Discrete(2)
        self._ended = True  # until the first reset

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        low, high = maybe_parse_reset_bounds(options, RESET_LOW, RESET_HIGH)
        state = _draw_rows(self.np_random, (self.env.row_len,), low, high)
        self.env.set_state(state[None])
        self._ended = False
        return state[:STATE_SIZE].astype(np.float32), {}

    def step(self, action):
        if not self.action_space.contains(action):
            raise ConfigError(f"action must be 0 (push left) or 1 (push right), got {action!r}")
        if self._ended:
            raise ConfigError("the episode has terminated (or reset() was never called): call reset() first")
        _, reward, terminated, _ = self.env.step(np.array([action]))
        self._ended = bool(terminated[0])
        return _host(self.env.final_obs()[0], np.float32), float(reward[0]), self._ended, False, {}


def register() -> None:
    """Register ``studylib/CartPole-v1`` with gymnasium (done once, on importing this module), with
    CartPole-v1's time limit and reward threshold."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point=f"{__name__}:StudylibCartPoleEnv",
                           vector_entry_point=f"{__name__}:StudylibVectorEnv",
                           max_episode_steps=CARTPOLE_V1.max_episode_steps,
                           reward_threshold=gymnasium.spec("CartPole-v1").reward_threshold)


register()
