"""The shape every implementation shares: make -> reset -> step -> rollout K steps.

Subclasses (gym_env.py, cpp_env.py, torch_env.py, jax_env.py, cuda_env.py) implement the
underscored hooks; argument checking, the memory check and the public API live here once.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

import numpy as np

from .dynamics import STATE_SIZE
from .errors import ConfigError, check_fits_in_memory
from .policy import mlp_weights
from .settings import EnvSettings, check_policy, positive_int


@dataclass(frozen=True)
class RolloutResult:
    """What one ``rollout`` call did. ``episodes_finished`` doubles as a checksum of the work."""

    num_envs: int
    num_steps: int
    episodes_finished: int

    @property
    def samples(self) -> int:  # transitions collected: every step of every env is one sample
        return self.num_envs * self.num_steps


class VectorCartPole(abc.ABC):
    """N CartPole-v1 environments (each S copies, C sub-steps) stepped together.

    Public API (used by the harness, the book and the tests):
      reset() -> obs (N, 4);  step(actions) -> (obs, reward, terminated, truncated);
      set_state(states (N, 4S)); get_state() -> numpy (N, 4S);
      rollout(K, policy="mlp"|"none") -> RolloutResult, in as few backend calls as possible;
      synchronize() waits for queued device work (timing).
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
        self.row_len = STATE_SIZE * self.state_factor
        check_fits_in_memory(
            f"{self.name} with N={self.num_envs}, S={self.state_factor}",
            self.estimate_bytes(self.num_envs, self.state_factor),
        )
        self.policy_weights = mlp_weights(settings.policy_seed)
        self.device = self._resolve_device(settings.device)

    # ---- hooks -------------------------------------------------------------------------------
    @classmethod
    @abc.abstractmethod
    def estimate_bytes(cls, num_envs: int, state_factor: int) -> int:
        """Memory this implementation needs for N envs of factor S (checked before allocating)."""

    @abc.abstractmethod
    def _resolve_device(self, device: str | None) -> str:
        """The device this implementation runs on, from the requested None / 'cpu' / 'cuda'."""

    @abc.abstractmethod
    def _reset(self): ...

    @abc.abstractmethod
    def _step(self, actions: np.ndarray): ...

    @abc.abstractmethod
    def _set_state(self, states: np.ndarray) -> None: ...

    @abc.abstractmethod
    def get_state(self) -> np.ndarray:
        """The full state (N, 4S) as numpy (float32, or float64 for gym)."""

    @abc.abstractmethod
    def _rollout(self, num_steps: int, policy: str) -> int:
        """Run K steps with the MLP or hashed actions; return the number of episodes finished."""

    def final_obs(self):
        """Observations (N, 4) at the end of the last ``step``, before its same-step reset: a
        finished env's terminal observation (gymnasium's ``final_obs``); equal to the returned
        observation for the others."""
        raise NotImplementedError(f"{self.name} does not record final observations yet")

    def synchronize(self) -> None:
        """Block until queued device work is done (no-op where execution is synchronous)."""

    # ---- public API --------------------------------------------------------------------------
    def reset(self):
        """Reset every env (episode 0 draws from this env's seed); return observations (N, 4)."""
        return self._reset()

    def step(self, actions):
        """One step with actions (N,) in {0, 1}; finished envs are reset in the same step."""
        return self._step(self.check_actions(actions))

    def set_state(self, states) -> None:
        """Overwrite the physical state (N, 4S) of every env (CuLE-style seeding from a
        reference); episode counters (steps into the episode) are left as they are."""
        states = np.asarray(states, dtype=np.float64)
        if states.shape != (self.num_envs, self.row_len):
            raise ConfigError(f"states must have shape ({self.num_envs}, {self.row_len}), got {states.shape}")
        if not np.all(np.isfinite(states)):
            raise ConfigError("states must be finite")
        self._set_state(states)

    def rollout(self, num_steps, policy: str = "mlp") -> RolloutResult:
        """Collect K steps for all envs with the MLP policy (or hashed actions with "none")."""
        num_steps = positive_int("num_steps", num_steps)
        done = self._rollout(num_steps, check_policy(policy))
        return RolloutResult(self.num_envs, num_steps, int(done))

    def check_actions(self, actions) -> np.ndarray:
        a = np.asarray(actions)
        if a.shape != (self.num_envs,):
            raise ConfigError(f"actions must have shape ({self.num_envs},), got {a.shape}")
        if a.dtype == bool:
            a = a.astype(np.int32)
        if not np.issubdtype(a.dtype, np.integer):
            raise ConfigError(f"actions must be integers 0 or 1, got dtype {a.dtype}")
        if a.size and (a.min() < 0 or a.max() > 1):
            raise ConfigError("actions must be 0 (push left) or 1 (push right)")
        return a.astype(np.int32, copy=False)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(num_envs={self.num_envs}, state_factor={self.state_factor}, "
                f"compute_factor={self.compute_factor}, seed={self.seed}, device={self.device!r})")
