"""What the two single envs for ``gymnasium.make`` share (``gym_vector.StudylibCartPoleEnv``,
``gym_chain.StudylibChainEnv``): one environment of an implementation made with ``num_envs=1``,
started from a state row (by ``reset`` or by setting its state) and stepped until the step that
terminates.

That step returns the terminal observation, as gymnasium's envs do; stepping on after it is refused,
because the implementation has already begun its next episode (its autoreset) and the terminal
state is gone. gymnasium calls stepping on undefined; a ConfigError says which call starts again.

A single env copies (``copy.deepcopy``) and pickles, as gymnasium's CartPoleEnv does and as
planning code (tree search from a copied env) expects: the copy is a new implementation env made
from the same ``EnvSettings``, at the same state row, with the same ``np_random`` and episode
status. (The vector envs do not: their state lives in buffers, devices and compiled programs.)
"""

from __future__ import annotations

import gymnasium
import numpy as np

from ..envs.registry import make_from
from ..errors import ConfigError
from .rendering import RendersItsObservation


class OneEnvOfAnImplementation(RendersItsObservation, gymnasium.Env):
    """A sibling sets ``env`` (the implementation's one env), ``render_mode``, the two spaces,
    ``restart`` (the calls that start stepping again, for the refusals) and ``_observe(row)``
    (a state row's observation, float32); it draws its own reset states."""

    restart: str
    _obs: np.ndarray | None = None  # what render() draws; None until the first reset
    _ended = True  # until the first reset

    def _observe(self, row: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _step_info(self, reward: float) -> dict:
        """The info dict of a step that returned ``reward`` and left ``self._obs``, ``self._ended``:
        none by default (gymnasium's CartPole-v1 returns {})."""
        return {}

    def _start_from(self, row: np.ndarray) -> None:
        """The implementation's one environment at ``row`` (one state row), stepping from it."""
        self.env.set_state(row[None])
        self._obs, self._ended = self._observe(row), False

    def _refuse_unless_running(self, doing: str) -> None:
        if self._obs is None:
            raise ConfigError(f"reset() was never called: call reset() before {doing}")
        if self._ended:
            raise ConfigError(f"the episode has terminated and the implementation has begun its next one: "
                              f"call {self.restart} before {doing}")

    def _step_one(self, actions: np.ndarray):
        """gymnasium's five-tuple for one step of the implementation with ``actions`` (a batch of one,
        checked by the sibling)."""
        self._refuse_unless_running("step()")
        _, rewards, terminated, _ = self.env.step(actions)
        reward, self._ended = float(rewards[0]), bool(terminated[0])
        self._obs = self.env.final_obs()[0].copy()
        if self.render_mode == "human":  # as gymnasium's envs: a human-mode frame per call
            self.render()
        return self._obs.copy(), reward, self._ended, False, self._step_info(reward)

    def __getstate__(self) -> dict:
        """Everything but the implementation env (and a renderer), which travel as its settings and
        its one state row (None before the first reset)."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("env", "_renderer")}
        state["_settings"] = self.env.settings
        state["_row"] = None if self._obs is None else np.array(self.env.get_state()[0])
        return state

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        settings, row = state.pop("_settings"), state.pop("_row")
        self.__dict__.update(state)
        self.env = make_from(settings)
        if row is not None:
            self.env.set_state(row[None])
