"""The shape every implementation of the n-link chain shares (studylib.sims.chain): make -> reset ->
rollout K steps, the sibling of ``VectorCartPole`` for a simulator without a policy yet.

The chain has a continuous action (the slider's motor, ctrl in [-1, 1]) and no trained policy in
this study, so its implementations run the paper's "no policy" configuration only (Fig 8, 9:
"actions ... generated inside the simulation"): the control of environment ``i`` at its step ``t``
is ``hash_ctrl(seed, i, t)`` (cuda/chain.cuh's ch_hash_ctrl, bit for bit in every implementation),
held for the environment step's ``frame_skip`` mj_steps. Physics only: no reward, termination or
reset in the timed loop (the C/CUDA header ports the dynamics, not v5's episode rules), so every
implementation does exactly the same work and its states can be compared with the float64
reference step for step. ``episodes_finished`` is therefore 0.

Subclasses (chain_envs.py, one per implementation record that names the chain in ``sims``)
implement ``_put``, ``get_state`` and ``_rollout``; the initial states, the step counter and the
public API live here once.
"""

from __future__ import annotations

import abc

import numpy as np

from ..devices import check_gpu_for, check_requested_device, default_device
from ..errors import ConfigError, check_fits_in_memory
from ..settings import EnvSettings, positive_int
from .base import RolloutResult, checked_states

RESET_NOISE = 0.1  # InvertedDoublePendulum-v5's reset_noise_scale: qpos + U(±0.1), qvel + 0.1 N(0, 1)
MAX_LINKS_BYTES = 2 * (64 + 1) * 8 * 8  # bytes per environment the estimate allows (n ≤ 64, float64, 8 copies)


def initial_states(num_envs: int, seed: int, links: int) -> np.ndarray:
    """(N, 2(n+1)) float64: v5's reset draws around the upright chain at rest (init_qpos = 0),
    from ``seed``'s own generator, so every implementation starts from the same states."""
    rng = np.random.default_rng(seed)
    n1 = links + 1
    qpos = rng.uniform(-RESET_NOISE, RESET_NOISE, (num_envs, n1))
    qvel = RESET_NOISE * rng.standard_normal((num_envs, n1))
    return np.concatenate([qpos, qvel], axis=1)


def reference_states(links: int, num_envs: int, steps: int, seed: int = 0) -> np.ndarray:
    """What every implementation must reach: ``steps`` environment steps of the float64 reference
    (studylib.sims.chain, checked against MuJoCo's mj_step) from ``initial_states`` with the
    hashed controls of ``seed``."""
    from ..native.chain import hash_ctrl
    from ..sims import chain

    p = chain.ChainParams(links=links)
    state = initial_states(num_envs, seed, links)
    for t in range(steps):
        state = chain.physics_step(state, hash_ctrl(seed, np.arange(num_envs), t).astype(np.float64), p,
                                   steps=p.frame_skip)
    return state


class VectorChain(abc.ABC):
    """N chains of ``settings.params.links`` links stepped together, policy "none".

    Public API: reset() -> states (N, 2(n+1)) numpy; set_state(states); get_state() -> numpy;
    rollout(K, policy="none") -> RolloutResult: K environment steps in as few backend calls as the
    implementation can; synchronize() waits for queued device work (timing).
    """

    name: str = ""
    dtype = np.float32

    def __init__(self, settings: EnvSettings):
        """``settings`` were checked when they were made; only the memory is checked here."""
        self.settings = settings
        self.num_envs = settings.num_envs
        self.seed = settings.seed
        self.params = settings.params
        self.links = self.params.links
        self.row_len = self.params.state_size
        check_fits_in_memory(f"{self.name} chain with N={self.num_envs}", self.estimate_bytes(self.num_envs, 1))
        check_requested_device(self.name, settings.device)
        self.device = self._resolve_device(settings.device)
        self.steps_taken = 0  # the control stream's step index: the next step's t in hash_ctrl
        self.reset()

    @classmethod
    def estimate_bytes(cls, num_envs: int, state_factor: int) -> int:
        return num_envs * MAX_LINKS_BYTES

    # ---- hooks -------------------------------------------------------------------------------
    def _resolve_device(self, device) -> str:
        """As VectorCartPole's: the one asked for, else the record's first that works here."""
        check_gpu_for(self.name, device)
        return device or default_device(self.name)

    @abc.abstractmethod
    def _put(self, states: np.ndarray) -> None:
        """Hold ``states`` (N, 2(n+1)) float64 as this implementation's own state."""

    @abc.abstractmethod
    def get_state(self) -> np.ndarray:
        """The state (N, 2(n+1)) as numpy."""

    @abc.abstractmethod
    def _rollout(self, num_steps: int) -> None:
        """K environment steps from ``steps_taken`` on, controls hash_ctrl(seed, env, steps_taken + k)."""

    def synchronize(self) -> None:
        """Block until queued device work is done (no-op where execution is synchronous)."""

    # ---- public API --------------------------------------------------------------------------
    def reset(self) -> np.ndarray:
        """Every chain at v5's reset draw of ``seed``; the control stream restarts at step 0."""
        states = initial_states(self.num_envs, self.seed, self.links)
        self.steps_taken = 0
        self._put(states)
        return states

    def set_state(self, states) -> None:
        """Overwrite every chain's state (N, 2(n+1)); the control stream goes on where it was."""
        self._put(checked_states(states, self.num_envs, self.row_len))

    def rollout(self, num_steps, policy: str = "none") -> RolloutResult:
        """K environment steps of every chain with the hashed controls (policy "none" only)."""
        num_steps = positive_int("num_steps", num_steps)
        if policy != "none":
            raise ConfigError(f"the chain runs policy 'none' only (hashed controls), got {policy!r}")
        self._rollout(num_steps)
        self.steps_taken += num_steps
        return RolloutResult(self.num_envs, num_steps, 0)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(links={self.links}, num_envs={self.num_envs}, seed={self.seed}, device={self.device!r})"
