"""Our implementations under gymnasium's API: ``studylib/CartPole-v1`` for ``make_vec`` and ``make``.

    import gymnasium, studylib.adapters.gym_vector                      # the import registers the id
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
    The fastest mode: the adapter adds nothing to the implementation's step.
DISABLED
    As NEXT_STEP's ending step; the finished envs must then be reset with
    ``reset(options={"reset_mask": mask})`` before the next ``step``.

``reset(options={"reset_mask": mask})`` works in every mode. The implementations always reset a
terminated env inside the step, and count episode steps for the time limit themselves. For
NEXT_STEP and DISABLED the adapter returns ``env.final_obs()`` as the observation and starts the
finished envs' next episodes one call late with ``env.restart(mask)``: one call, whatever the
number of envs finishing, that draws fresh states for the masked envs, zeroes their step counters
and makes their final observations the new first ones, inside the implementation (nothing
crosses to the host).

Arrays: ``arrays="numpy"`` (the default) returns numpy arrays, as gymnasium's API expects.
``arrays="native"`` returns the implementation's own arrays on its device and takes actions and
reset masks as such: torch tensors (torch, torch-compile, cpp, fused, cuda) or jax arrays (jax);
no step copies anything to the host, the bookkeeping above included (on a GPU the adapter does
not look at the flags; DISABLED's check that finished envs were reset does, one wait per step).
An observation may then be a view valid until the next step (see ``studylib.VectorCartPole``).
The spaces stay gymnasium's (``action_space.sample()`` is numpy: sample on the device instead).
SAME_STEP's info is then dense, every step: ``info["final_obs"]`` the (N, 4) final observations
and ``info["_final_obs"]`` the done mask (an object array per env would be built on the host).

Seeding, as gymnasium: ``reset(seed=s)`` seeds ``self.np_random`` and the implementation's own
reset draw (all envs at once, fast at any N); ``reset()`` draws a fresh seed from ``np_random``;
``reset(seed=[s_0, ..., s_{N-1}])`` starts env i exactly where gymnasium's CartPole-v1 seeded with
``s_i`` starts. Restarts draw from the implementation's own generator, which ``reset`` seeds; a
masked reset given a seed draws its states as a full reset with that seed would.
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

from ..sims.cartpole import CARTPOLE_V1, RESET_HIGH, RESET_LOW, STATE_SIZE
from ..errors import ConfigError
from ..envs.registry import make
from ..settings import MAX_SEED, check_seed, positive_int
from .gym_single import OneEnvOfAnImplementation
from .rendering import CartPoleRenderer, check_render_mode

ENV_ID = "studylib/CartPole-v1"
# The implementation's time limit under the single env, whose time limit is gymnasium's TimeLimit
# wrapper (int32 counters).
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


def _draw_rows(rng: np.random.Generator, shape, low=RESET_LOW, high=RESET_HIGH) -> np.ndarray:
    """CartPole-v1's reset draw, as gymnasium's CartPoleEnv.reset makes it (float64, uniform)."""
    return rng.uniform(low=low, high=high, size=shape)


class StudylibVectorEnv(VectorEnv):
    """``num_envs`` CartPole-v1 environments of studylib implementation ``impl``.

    ``autoreset_mode``: an ``AutoresetMode`` or its value; ``arrays``: "numpy" or "native" (see
    the module's doc). Keyword arguments go to ``studylib.make`` (device, state_factor,
    compute_factor, policy_seed); ``max_episode_steps`` replaces CartPole-v1's 500.
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": ["rgb_array"], "render_fps": 50}

    def __init__(self, num_envs: int = 1, impl: str = "cpp", *, autoreset_mode=AutoresetMode.NEXT_STEP,
                 seed: int = 0, device=None, state_factor: int = 1, compute_factor: int = 1,
                 policy_seed: int = 0, max_episode_steps: int | None = None, render_mode: str | None = None,
                 arrays: str = "numpy"):
        self.autoreset_mode = check_autoreset_mode(autoreset_mode)
        check_render_mode(render_mode, self.metadata["render_modes"])
        params = self._params()
        if max_episode_steps is not None:
            params = dataclasses.replace(params, max_episode_steps=positive_int("max_episode_steps", max_episode_steps))
        self.impl = impl
        self.env = make(impl, num_envs, seed=seed, device=device, state_factor=state_factor,
                        compute_factor=compute_factor, policy_seed=policy_seed, params=params, arrays=arrays,
                        sim=self.sim)
        self.arrays = self.env.arrays
        self._kind = self.env.array_kind  # checks and operations for the arrays the adapter returns
        self._xp = self._kind.xp
        self._same_step = self.autoreset_mode == AutoresetMode.SAME_STEP
        self._disabled = self.autoreset_mode == AutoresetMode.DISABLED
        self.max_episode_steps = params.max_episode_steps
        self.metadata = {**type(self).metadata, "autoreset_mode": self.autoreset_mode}
        self.num_envs = self.env.num_envs
        self.render_mode = render_mode
        self._renderer = None
        self.single_observation_space, self.single_action_space = self._spaces(params)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        # NEXT_STEP / DISABLED: the envs that finished on the last step (restarted by the next
        # step, or by reset(reset_mask) when DISABLED), in the implementation's arrays.
        self._finished = self._kind.zeros_bool(self.num_envs)
        self._obs = None  # the last observations returned (a partial reset returns them for the rest)
        self._stepper = None
        stepper = getattr(getattr(self.env, "backend", None), "stepper", None)
        # numpy arrays that the next step rewrites (cpp, fused on the CPU): copied before they are
        # returned, as gymnasium's vector envs return fresh arrays.
        self._env_views = stepper is not None and self.arrays == "numpy"
        if stepper is not None and self.arrays == "numpy" and self.autoreset_mode == AutoresetMode.NEXT_STEP:
            # The thin path (cuda/step_binding.cpp): NEXT_STEP's bookkeeping below, done in C++ on
            # buffers preallocated once (what it returns are fresh copies of them, as gymnasium's
            # vector envs return fresh arrays). Anything it does not take
            # (actions that are not a numpy array (N,) of 0/1, a profiling hook) comes here.
            self._stepper = stepper
            self._finished = stepper_finished = self.env.backend.finished
            stepper_finished[:] = False
            stepper.set_fallbacks(None, StudylibVectorEnv.step.__get__(self))
            stepper.set_guard(vars(self.env), self.env.step)  # steps aside if they are replaced
            self.step = stepper.next_step

    # ---- what differs between simulators (StudylibChainVectorEnv overrides these) ----------------
    sim = "cartpole"

    def _params(self):
        """The simulator's constants before ``max_episode_steps`` (CartPole-v1's)."""
        return CARTPOLE_V1

    def _spaces(self, params):
        """(single observation space, single action space), gymnasium's CartPole-v1's."""
        return observation_space(params), spaces.Discrete(2)

    def _draw(self, rng: np.random.Generator, rows: int) -> np.ndarray:
        """``rows`` new episodes' state rows (float64), as gymnasium's reset draws them."""
        return _draw_rows(rng, (rows, self.env.row_len))

    def _observations(self, rows: np.ndarray):
        """The observations (in the implementation's arrays) of state rows (float64)."""
        return self._kind.from_numpy(rows[:, :STATE_SIZE].astype(np.float32))

    def _actions(self, actions):
        """Actions as the implementation's ``step`` takes them (the chain's (N, 1) Box as (N,))."""
        return actions

    def _set_finished(self, value) -> None:
        """The envs that finished on the last step; in place where the thin path reads them."""
        if self._stepper is not None:
            self._finished[...] = value
        else:
            self._finished = value

    @property
    def _last_obs(self):
        """The last observations returned (after the thin path's step, its final-observation
        buffer holds them)."""
        if self._stepper is not None and self.env.backend._status[1]:
            return self.env.backend.next_obs
        return self._obs

    def _remember_obs(self, obs) -> None:
        self._obs = obs
        if self._stepper is not None:
            self.env.backend._status[1] = 0

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
        try:
            mask = self._kind.check_mask(options["reset_mask"], self.num_envs)
        except ConfigError as e:
            raise ConfigError(f"options['reset_mask']: {e}") from None
        if self._last_obs is None:
            raise ConfigError("a partial reset (options['reset_mask']) needs a full reset() first")
        return mask

    def _fresh_rows(self, index, seeds=None) -> np.ndarray:
        """New episodes' states for envs ``index``: env i from gymnasium's ``np_random(seeds[i])``
        where a seed list gives one (CartPoleEnv.reset(seed=seeds[i]) draws the same), else from
        ``self.np_random``."""
        if seeds is None:
            return self._draw(self.np_random, len(index))
        rngs = (self.np_random if seeds[i] is None else seeding.np_random(seeds[i])[0] for i in index)
        return np.array([self._draw(rng, 1)[0] for rng in rngs]).reshape(len(index), -1)

    def _restart_masked(self, mask, seed, seeds):
        """Observations (N, 4) after new episodes start in the envs of ``mask``: the
        implementation's own draw, or with a seed the rows ``_fresh_rows`` draws."""
        first = self.env.restart(mask)  # step counters to 0 (and a draw the seeded case replaces)
        if seed is None:
            return first
        index = np.flatnonzero(self._kind.to_numpy(mask))
        state = self.env.get_state()
        state[index] = self._fresh_rows(index, seeds)
        self.env.set_state(state)
        return self._observations(state)

    def reset(self, *, seed=None, options: dict | None = None):
        """Reset every env (or those of ``options["reset_mask"]``); returns (obs (N, 4) float32, {})."""
        seed, mask = self._check_seed(seed), self._check_mask(options)  # nothing changes before both pass
        seeds = seed if isinstance(seed, list) else None
        super().reset(seed=None if seeds else seed)  # seeds np_random from one int, as gymnasium
        if seeds and any(s is not None for s in seeds):  # a seed list seeds the implementation's draws too
            self._np_random = np.random.default_rng([s for s in seeds if s is not None])
            self._np_random_seed = -1  # gymnasium's value for "not seeded from one int"
        if mask is not None:
            last = self._last_obs
            obs = self._xp.where(mask[:, None], self._restart_masked(mask, seed, seeds), last)
            self._set_finished(self._finished & ~mask)
        else:
            # One seed: the implementation's own draw for all envs (fast at any N).
            self.env.seed = seed if isinstance(seed, int) else int(self.np_random.integers(0, MAX_SEED + 1))
            obs = self.env.reset()
            self._set_finished(self._kind.zeros_bool(self.num_envs))
            if seeds:
                rows = self._fresh_rows(np.arange(self.num_envs), seeds)
                self.env.set_state(rows)
                obs = self._observations(rows)
        self._remember_obs(obs)
        return obs, {}

    # ---- step -------------------------------------------------------------------------------------
    def step(self, actions):
        """One step of every env; returns (obs, reward, terminated, truncated, info) in the
        declared autoreset mode (see the module's doc)."""
        if self._disabled and self._kind.any(self._finished):
            finished = np.flatnonzero(self._kind.to_numpy(self._finished)).tolist()
            raise ConfigError(f"envs {finished[:8]} finished their episodes; reset them with "
                              "reset(options={'reset_mask': mask}) before stepping (autoreset_mode DISABLED)")
        obs, reward, terminated, truncated = self.env.step(self._actions(actions))  # a ConfigError steps nothing
        if self._env_views:  # the implementation's thin step returns views of its buffers
            obs, reward, terminated, truncated = obs.copy(), reward.copy(), terminated.copy(), truncated.copy()
        if self._same_step:
            info = self._final_info(terminated | truncated)
        else:
            obs, reward, terminated, truncated = self._late_restart(reward, terminated, truncated)
            info = {}
        self._remember_obs(obs)
        return obs, reward, terminated, truncated, info

    def _late_restart(self, reward, terminated, truncated):
        """NEXT_STEP / DISABLED after the implementation's step: the terminal observations, and
        (NEXT_STEP) the new episodes of the envs that finished on the previous step, whose action
        was ignored: ``env.restart`` overwrites the implementation's step of them."""
        restart = self._finished
        if self._stepper is not None:  # its buffer is rewritten in place below; env.restart may keep the mask
            restart = restart.copy()
        # maybe_any: on a GPU True without looking at the mask (looking would wait for the device)
        if not self._disabled and self._kind.maybe_any(restart):
            self.env.restart(restart)  # their final_obs() becomes the new episodes' first observations
            reward = self._xp.where(restart, 0, reward)
            terminated, truncated = terminated & ~restart, truncated & ~restart
        self._set_finished(terminated | truncated)
        return self.env.final_obs(), reward, terminated, truncated

    def _final_info(self, done) -> dict:
        """SAME_STEP's info. numpy: for the finished envs only, as SyncVectorEnv's ``_add_info``
        builds it from CartPoleEnv's (empty) step info (an object array of (4,) terminal
        observations). native: dense, every step (see the module's doc)."""
        if self.arrays == "native":
            return {"final_obs": self.env.final_obs(), "_final_obs": done, "final_info": {}, "_final_info": done}
        if not done.any():
            return {}
        final_obs = self.env.final_obs()
        boxed = np.full(self.num_envs, None, dtype=object)
        for i in np.flatnonzero(done):
            boxed[i] = final_obs[i]
        return {"final_obs": boxed, "_final_obs": done.copy(), "final_info": {}, "_final_info": done.copy()}

    def render(self):
        """``render_mode="rgb_array"``: one frame per env (a tuple of uint8 arrays) of the last
        observations, drawn by ``_new_renderer``'s renderer (CartPole's: gymnasium's own CartPole-v1
        renderer, (400, 600, 3), needing pygame as gymnasium's CartPole-v1 does); None without a
        render mode."""
        if self.render_mode is None:
            return None
        if self._renderer is None:
            self._renderer = self._new_renderer()
        obs = self._kind.to_numpy(self._last_obs) if self._last_obs is not None else \
            np.zeros((self.num_envs, *self.single_observation_space.shape))
        return tuple(self._renderer.frame(row) for row in obs)

    def _new_renderer(self):
        """What draws one env's frame from its observation (``frame(obs)``, ``close()``)."""
        return CartPoleRenderer(self.render_mode)

    def close_extras(self, **kwargs):
        if self._renderer is not None:
            self._renderer.close()
        self.__dict__.pop("step", None)  # the thin path's, bound to the closed env's buffers
        self._stepper = None
        self.env = None


# gymnasium's Env again among the direct bases (already OneEnvOfAnImplementation's): skrl's
# wrap_env tells gymnasium's API from an env's direct bases alone.
class StudylibCartPoleEnv(OneEnvOfAnImplementation, gymnasium.Env):
    """One CartPole-v1 environment: implementation ``impl`` with ``num_envs=1``, for
    ``gymnasium.make`` (``check_env``, single-env wrappers, ``SyncVectorEnv``).

    As gymnasium's CartPoleEnv: ``reset`` draws the state from ``self.np_random`` (so a seed gives
    gymnasium's CartPole-v1's very first state, and ``options`` may set "low"/"high"), the time
    limit is the ``TimeLimit`` wrapper ``make`` adds (the implementation runs without one), and
    the step that terminates returns the terminal observation. Stepping on after that is refused
    (gym_single.py; setting ``state`` first steps on from it). ``state`` reads and sets the CartPole
    as gymnasium's ``CartPoleEnv.state`` does (None before the first reset, as there).

    Rendering as gymnasium's CartPole-v1, by its own renderer (needs pygame, as it does): "rgb_array"
    frames of the current observation, (400, 600, 3) uint8; "human" draws them in a window.
    """

    metadata = {"render_modes": ["human", "rgb_array"], "render_fps": 50}
    render_id = ENV_ID
    restart = "reset() (or set state)"

    def __init__(self, impl: str = "cpp", *, device=None, state_factor: int = 1, compute_factor: int = 1,
                 render_mode: str | None = None):
        check_render_mode(render_mode, self.metadata["render_modes"])
        self.impl = impl
        self.env = make(impl, 1, device=device, state_factor=state_factor, compute_factor=compute_factor,
                        params=dataclasses.replace(CARTPOLE_V1, max_episode_steps=NO_TIME_LIMIT))
        self.render_mode = render_mode
        self.observation_space = observation_space()
        self.action_space = spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        low, high = maybe_parse_reset_bounds(options, RESET_LOW, RESET_HIGH)
        self._start_from(_draw_rows(self.np_random, (self.env.row_len,), low, high))
        if self.render_mode == "human":  # as gymnasium's CartPoleEnv: a human-mode frame per call
            self.render()
        return self._obs.copy(), {}

    def step(self, action):
        if not self.action_space.contains(action):
            raise ConfigError(f"action must be 0 (push left) or 1 (push right), got {action!r}")
        return self._step_one(np.array([action]))

    def _observe(self, row: np.ndarray) -> np.ndarray:
        return row[:STATE_SIZE].astype(np.float32)

    def _new_renderer(self):
        return CartPoleRenderer(self.render_mode)

    @property
    def state(self) -> np.ndarray | None:
        """The CartPole (x, x_dot, theta, theta_dot) as gymnasium's ``CartPoleEnv.state``, float64: the
        current one, or the terminal one after the step that terminated; None before the first
        reset. A copy: assign a whole array to set it (``env.unwrapped.state = ...``, as people set
        gymnasium's)."""
        if self._obs is None:
            return None
        return (self._obs if self._ended else self.env.get_state()[0, :STATE_SIZE]).astype(np.float64)

    @state.setter
    def state(self, value) -> None:
        """Step on from this CartPole (four finite floats; the carried floats of S > 1 stay)."""
        try:
            value = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            value = None
        if value is None or value.shape != (STATE_SIZE,) or not np.all(np.isfinite(value)):
            raise ConfigError(f"state must be {STATE_SIZE} finite floats (x, x_dot, theta, theta_dot), got {value!r}")
        row = self.env.get_state()[0].astype(np.float64)
        row[:STATE_SIZE] = value
        self._start_from(row)


def register() -> None:
    """Register ``studylib/CartPole-v1`` with gymnasium (done once, on importing this module), with
    CartPole-v1's time limit and reward threshold."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point=f"{__name__}:StudylibCartPoleEnv",
                           vector_entry_point=f"{__name__}:StudylibVectorEnv",
                           max_episode_steps=CARTPOLE_V1.max_episode_steps,
                           reward_threshold=gymnasium.spec("CartPole-v1").reward_threshold)


register()
