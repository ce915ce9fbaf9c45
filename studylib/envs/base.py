"""The shape every implementation of every simulator shares: make -> reset -> step -> rollout K steps.

Subclasses, one per implementation and simulator (gym_env.py, cpp_env.py, torch_env.py, jax_env.py,
cuda_env.py, torch_compile_env.py, fused_env.py; each named by its record in ``studylib.implspec``,
which lists the simulators it serves), implement the underscored hooks; argument checking (the
requested device against the record's devices, actions against the simulator's action space), the
sizes (from the simulator's record, ``studylib.sims``), the memory check and the public API live
here once.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

import numpy as np

from ..arrays import NumpyKind
from ..devices import check_gpu_for, check_requested_device, default_device
from ..sims.cartpole import STATE_SIZE
from ..errors import ConfigError, check_fits_in_memory
from ..policy import mlp_weights
from .. import sims
from ..settings import EnvSettings, check_policy, positive_int


def restart_rows(state, elapsed, episode, final_obs, mask, fresh, xp=np):
    """The array family's masked restart (``VectorCartPole.restart``), as ``episodes.advance``
    resets: the CartPoles of ``mask`` take ``fresh`` (N, 4) (their carried floats stay), their
    step counter 0, episode counter + 1 and final observation ``fresh``. Returns (state, elapsed,
    episode, final_obs); pure, for numpy, torch and jax.numpy alike."""
    rows = mask[:, None]
    cartpole = xp.where(rows, fresh, state[:, :STATE_SIZE])
    if state.shape[1] > STATE_SIZE:
        cartpole = xp.concatenate((cartpole, state[:, STATE_SIZE:]), axis=1)
    return cartpole, xp.where(mask, 0, elapsed), episode + mask, xp.where(rows, fresh, final_obs)


def checked_states(states, num_envs: int, row_len: int) -> np.ndarray:
    """``states`` as float64 (N, row_len), finite: what ``set_state`` takes (ConfigError otherwise)."""
    states = np.asarray(states, dtype=np.float64)
    if states.shape != (num_envs, row_len):
        raise ConfigError(f"states must have shape ({num_envs}, {row_len}), got {states.shape}")
    if not np.all(np.isfinite(states)):
        raise ConfigError("states must be finite")
    return states


@dataclass(frozen=True)
class RolloutResult:
    """What one ``rollout`` call did. ``episodes_finished`` doubles as a checksum of the work."""

    num_envs: int
    num_steps: int
    episodes_finished: int

    @property
    def samples(self) -> int:  # transitions collected: every step of every env is one sample
        return self.num_envs * self.num_steps


class VectorEnv(abc.ABC):
    """N environments of one simulator stepped together: CartPole-v1 (state factor S: rows of 4*S
    floats; C sub-steps) or the n-link chain (rows of 2(n+1) floats, observations of 3n+3).

    Public API (used by the harness, the book, the gymnasium adapter and the tests), with D the
    simulator's observation size (``observation_size``) and R its state row (``row_len``):
      reset() -> obs (N, D);  step(actions) -> (obs, reward, terminated, truncated);
      final_obs() -> (N, D);  restart(mask) -> obs (N, D): new episodes for some envs;
      set_state(states (N, R)); get_state() -> numpy (N, R);
      rollout(K, policy="mlp"|"none") -> RolloutResult, in as few backend calls as possible;
      synchronize() waits for queued device work (timing).

    Arrays (``settings.arrays``, checked by ``self.array_kind``, studylib/arrays.py): with
    "numpy" reset/step/final_obs/restart return writable numpy arrays and take numpy (or
    array-like) actions and numpy masks; the arrays are the caller's to keep, except those of
    ``step`` of cpp and fused on the CPU: its thin path (cuda/step_binding.cpp) returns the same
    four arrays every call, views of buffers made once and rewritten by the next step (copy what
    you keep; gymnasium's adapter copies them for its callers). With "native" they take and return the implementation's own arrays on its
    device, with no host copy: torch tensors for torch, torch-compile, cpp, fused and cuda; jax
    arrays for jax. Then a returned array may be a view of the environment's own buffer, valid
    until the next call that changes the environments (clone it to keep it): cpp and fused on
    the CPU return views of the state and final-observation buffers the C++ code writes in
    place, so a step copies nothing (cuda and fused on a GPU: the same, by DLPack); torch and
    torch-compile return a view of the new state tensor each step makes on the device; jax's
    arrays are immutable. ``get_state``/``set_state`` stay numpy in both.
    """

    name: str = ""
    dtype = np.float32  # of the simulation state; gym's is float64

    def __init__(self, settings: EnvSettings):
        """``settings`` were checked when they were made; only the memory is checked here."""
        self.settings = settings
        self.num_envs = settings.num_envs
        self.state_factor = settings.state_factor
        self.compute_factor = settings.compute_factor
        self.seed = settings.seed  # reset() draws episode 0 from it (the gymnasium adapter re-seeds it)
        self.params = settings.params
        self.sim = sims.sim(settings.sim)  # the simulator's record (studylib.sims): what it is and what a step costs
        self.state_size, self.observation_size = self.sim.sizes(self.params)
        self.row_len = self.state_size * self.state_factor
        check_fits_in_memory(
            f"{self.name} {self.sim.name} with N={self.num_envs}, S={self.state_factor}"
            + "".join(f", {k}={v}" for k, v in self.sim.variant(self.params).items()),
            self.estimate_bytes(self.num_envs, self.state_factor, self.params),
        )
        self.policy_weights = mlp_weights(settings.policy_seed, self.sim.policy_sizes(self.params))
        check_requested_device(self.name, settings.device)  # the record's devices (studylib.implspec)
        self.device = self._resolve_device(settings.device)
        self.arrays = settings.arrays
        self._native = self.arrays == "native"
        self.array_kind = self._native_kind() if self._native else NumpyKind()

    # ---- hooks -------------------------------------------------------------------------------
    @classmethod
    @abc.abstractmethod
    def estimate_bytes(cls, num_envs: int, state_factor: int, params=None) -> int:
        """Memory this implementation needs for N envs of factor S and the simulator's ``params``
        (checked before allocating)."""

    def _resolve_device(self, device: str | None) -> str:
        """The device this implementation runs on, from the requested None / 'cpu' / 'cuda': the one
        asked for, else the first of its record's ``devices`` that works here (``devices.default_device``);
        'cuda' without a GPU its framework sees is refused in one line. Implementations whose framework
        resolves devices itself (torch, jax) override this."""
        check_gpu_for(self.name, device)
        return device or default_device(self.name)

    def _native_kind(self):
        """The ArrayKind of this implementation's own arrays on ``self.device`` (arrays="native").
        EnvSettings refuses "native" for an implementation without arrays of its own (gym)."""
        raise ConfigError(f"{self.name} has no arrays of its own: use arrays='numpy'")

    @abc.abstractmethod
    def _reset(self): ...

    @abc.abstractmethod
    def _step(self, actions): ...

    @abc.abstractmethod
    def _restart(self, mask):
        """Start the next episode of the envs of ``mask`` (checked): a fresh reset draw from this
        env's own generator, step counter 0, episode counter + 1, final_obs their new first
        observation; return the observations (N, D)."""

    @abc.abstractmethod
    def _set_state(self, states: np.ndarray) -> None: ...

    @abc.abstractmethod
    def get_state(self) -> np.ndarray:
        """The full state (N, R) as numpy (float32, or float64 for gym)."""

    @abc.abstractmethod
    def _rollout(self, num_steps: int, policy: str) -> int:
        """Run K steps with the MLP or hashed actions; return the number of episodes finished."""

    @abc.abstractmethod
    def final_obs(self):
        """Observations (N, D) at the end of the last ``step``, before its same-step reset: a
        finished env's terminal observation (gymnasium's ``final_obs``); equal to the returned
        observation for the others. A ``restart`` replaces the restarted envs' with their new first
        observation (the episode that ended there is over): after it, final_obs() is what
        gymnasium's NEXT_STEP mode returns."""

    def synchronize(self) -> None:
        """Block until queued device work is done (no-op where execution is synchronous)."""

    # ---- public API --------------------------------------------------------------------------
    def reset(self):
        """Reset every env (episode 0 draws from this env's seed); return observations (N, D)."""
        return self._reset()

    def step(self, actions):
        """One step with actions (N,): in {0, 1} for CartPole, floats in [-1, 1] for a continuous
        simulator (the chain's control); finished envs are reset in the same step. Bad actions
        (shape, dtype, range, non-finite, type or device for arrays="native") raise ConfigError,
        nothing stepped."""
        return self._step(self.check_actions(actions))

    def restart(self, mask):
        """Start a new episode in the envs where ``mask`` (N,) bool is true: a fresh reset draw from
        this env's own generator (seeded by ``seed``), step counter 0, and their ``final_obs()``
        the new first observation; the others are left as they are. Returns the observations
        (N, D) of every env. One call, whatever the mask (the gymnasium adapter's restarts and
        masked resets)."""
        return self._restart(self.array_kind.check_mask(mask, self.num_envs))

    def set_state(self, states) -> None:
        """Overwrite the physical state (N, R) of every env (CuLE-style seeding from a
        reference); episode counters (steps into the episode) are left as they are."""
        self._set_state(checked_states(states, self.num_envs, self.row_len))

    def rollout(self, num_steps, policy: str = "mlp") -> RolloutResult:
        """Collect K steps for all envs with the MLP policy (or hashed actions with "none")."""
        num_steps = positive_int("num_steps", num_steps)
        done = self._rollout(num_steps, check_policy(policy))
        return RolloutResult(self.num_envs, num_steps, int(done))

    def check_actions(self, actions):
        """``actions`` as ``_step`` takes them (numpy int32 or float32, or the native array unchanged)."""
        if self.sim.continuous:
            return self.array_kind.check_controls(actions, self.num_envs)
        return self.array_kind.check_actions(actions, self.num_envs)

    def __reduce__(self):
        """Not pickled nor copied (``pickle``, ``copy.deepcopy``, Ray's and multiprocessing's
        arguments): the environments live in C buffers, device arrays and compiled programs that
        a copy would share or lose. A TypeError, as pickle's own for such objects, naming what
        travels instead."""
        raise TypeError(
            f"studylib's {self.name} environments cannot be pickled or copied (their state lives in native buffers, "
            "device arrays and compiled programs): pass what makes them instead (a function calling studylib.make "
            "or gymnasium.make, as gymnasium's AsyncVectorEnv and SB3's SubprocVecEnv take, or the EnvSettings), "
            "and carry the physical state with get_state() and set_state()")

    def __repr__(self) -> str:
        variant = "".join(f"{k}={v}, " for k, v in self.sim.variant(self.params).items())
        return (f"{type(self).__name__}({variant}num_envs={self.num_envs}, state_factor={self.state_factor}, "
                f"compute_factor={self.compute_factor}, seed={self.seed}, device={self.device!r})")


VectorCartPole = VectorEnv  # its name before it served every simulator
