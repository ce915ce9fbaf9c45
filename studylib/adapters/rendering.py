"""What the gymnasium adapters draw with: the single envs' ``render`` and ``close``
(``RendersItsObservation``), the render-mode check, and CartPole's renderer (gymnasium's own,
drawing the observations we give it). The chain's renderer is MuJoCo's (``gym_chain.ChainRenderer``)."""

from __future__ import annotations

import gymnasium
import numpy as np

from ..errors import ConfigError


class RendersItsObservation:
    """A single env's ``render`` (its ``self._obs`` drawn by the renderer ``_new_renderer()`` makes at
    the first frame; None and gymnasium's warning, naming ``render_id``, without a render mode;
    before the first reset, the frame of ``_obs_before_reset()``: None as gymnasium's CartPole-v1
    returns while its state is None, or the chain's initial pose)."""

    render_id: str
    _renderer = None

    def _obs_before_reset(self):
        return None

    def render(self):
        if self.render_mode is None:
            gymnasium.logger.warn("You are calling render method without specifying any render mode. "
                                  "You can specify the render_mode at initialization, "
                                  f'e.g. gymnasium.make("{self.render_id}", render_mode="rgb_array")')
            return None
        obs = self._obs_before_reset() if self._obs is None else self._obs
        if obs is None:
            return None
        if self._renderer is None:
            self._renderer = self._new_renderer()
        return self._renderer.frame(obs)

    def close(self):
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None


def check_render_mode(render_mode, supported) -> None:
    if render_mode is not None and render_mode not in supported:
        raise ConfigError(f"render_mode {render_mode!r} is not supported; valid: None, {', '.join(map(repr, supported))}")


class CartPoleRenderer:
    """gymnasium's CartPole-v1 renderer (``CartPoleEnv.render``) drawing the observations we give it."""

    def __init__(self, render_mode: str):
        from gymnasium.envs.classic_control.cartpole import CartPoleEnv

        self._env = CartPoleEnv(render_mode=render_mode)

    def frame(self, obs):
        self._env.state = np.asarray(obs, dtype=np.float64)
        return self._env.render()

    def close(self) -> None:
        self._env.close()
