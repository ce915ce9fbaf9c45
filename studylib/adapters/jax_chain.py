"""The n-link chain as a pure JAX function pair in gymnax's shape, as ``jax_functional`` is CartPole's:

    import jax, studylib.adapters.jax_chain as jax_chain
    env, params = jax_chain.make(links=2)                       # gymnax.make's pair
    obs, state = env.reset(key, params)                         # one env; vmap for a batch
    obs, state, reward, terminated, truncated, info = env.step(key, state, action, params)
    step_n = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))

``action`` is one control, a float (or shape (1,)) in [-1, 1] (beyond, the motor clamps it to ±1, as
MuJoCo's ctrlrange does in v5): ``action_space(params)`` is a
jittable Box(-1, 1, (1,)) (gymnax's own space classes where gymnax is installed). The step is
``studylib.sims.chain.episode.advance`` (v5's observation, reward, termination, truncation at
``params.max_episode_steps``) on a batch of one, with XLA's formulation of the physics
(``studylib.sims.chain.episode.xla_step``) — the episode rule the ``jax`` implementation runs.

Autoreset, as gymnax: inside ``step``, SAME_STEP, ``info["final_observation"]`` the observation
before that reset; ``key`` is used only for the reset draw (v5's: qpos + U(±0.1), qvel +
0.1 N(0, 1)). The number of links shapes every array, so it is the env object's (``make(links)``),
not a field of the traced ``EnvParams``.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from flax import struct

from ..sims.chain import ChainParams, dynamics
from ..sims.chain.episode import RESET_NOISE, advance, xla_step
from .jax_functional import _space_classes


@struct.dataclass
class EnvParams:
    """What a training loop may change without recompiling: the time limit (v5's 1000)."""

    max_episode_steps: int = ChainParams().max_episode_steps


@struct.dataclass
class EnvState:
    """One chain: its state (qpos, qvel: 2(n+1) float32) and the steps into its episode."""

    qpos_qvel: jax.Array
    time: jax.Array  # int32, gymnax's name for the steps taken in this episode


class ChainFunctional:
    """gymnax 1.0's environment object for the n-link chain (``links`` 1 to 32)."""

    num_actions = 1  # one continuous control (gymnax's num_actions of a Box is its size)

    def __init__(self, links: int = 2):
        self.chain = ChainParams(links=links)
        self.name = "InvertedDoublePendulum-v5" if links == 2 else f"Chain{links}-v0"
        self.obs_shape = (self.chain.observation_size,)
        self._env_step = xla_step(self.chain)

    @property
    def default_params(self) -> EnvParams:
        return EnvParams()

    def _p(self, params):
        """The chain's constants with ``params``' time limit (a traced value inside jit)."""
        return self.chain if params is None else _TimeLimited(self.chain, params.max_episode_steps)

    def _draw(self, key) -> jax.Array:
        n1 = self.chain.links + 1
        k_pos, k_vel = jax.random.split(key)
        qpos = jax.random.uniform(k_pos, (n1,), jnp.float32, -RESET_NOISE, RESET_NOISE)
        return jnp.concatenate((qpos, RESET_NOISE * jax.random.normal(k_vel, (n1,), jnp.float32)))

    @partial(jax.jit, static_argnums=0)
    def reset(self, key, params: EnvParams | None = None):
        return self.reset_env(key, params)

    def reset_env(self, key, params: EnvParams | None = None):
        """A new episode drawn from ``key`` (v5's reset): (observation (3n+3,), state)."""
        state = EnvState(self._draw(key), jnp.zeros((), jnp.int32))
        return self.get_obs(state), state

    def get_obs(self, state: EnvState, params=None, key=None) -> jax.Array:
        return dynamics.observation(state.qpos_qvel[None], self.chain, jnp)[0]

    def step_env(self, key, state: EnvState, action, params: EnvParams | None = None):
        """One step with no reset: (obs, state, reward, terminated, info)."""
        ctrl = jnp.reshape(jnp.asarray(action, jnp.float32), (1,))
        nxt, obs, reward, terminated = self._env_step(state.qpos_qvel[None], ctrl, self.chain, jnp)
        return obs[0], EnvState(nxt[0], state.time + 1), reward[0], terminated[0], \
            {"discount": 1.0 - terminated[0].astype(jnp.float32)}

    @partial(jax.jit, static_argnums=0)
    def step(self, key, state: EnvState, action, params: EnvParams | None = None):
        """One step with ``action`` and the same-step reset (drawn from ``key``) if it ends the
        episode: (obs, state, reward, terminated, truncated, info), as gymnax's ``step``."""
        params = self.default_params if params is None else params
        ctrl = jnp.reshape(jnp.asarray(action, jnp.float32), (1,))
        physics = lambda s, a, _p, xp: self._env_step(s, a, self.chain, xp)  # noqa: E731 (its constants)
        out = advance(state.qpos_qvel[None], state.time[None], jnp.zeros(1, jnp.uint32), ctrl,
                      self._draw(key)[None], self._p(params), jnp, physics)
        terminated, truncated = out.terminated[0], out.truncated[0]
        info = {"discount": 1.0 - terminated.astype(jnp.float32), "terminated": terminated,
                "truncated": truncated, "final_observation": out.final_obs[0]}
        return out.observation[0], EnvState(out.state[0], out.elapsed[0]), out.reward[0], terminated, truncated, info

    def is_terminal(self, state: EnvState, params=None) -> jax.Array:
        """The natural ending, read at the state (v5 reads the tip at the last RK4 stage: within
        about 1e-5 m of it, so near the threshold the two may differ)."""
        _, y = dynamics.tip(state.qpos_qvel[None, :self.chain.links + 1], self.chain, jnp)
        return dynamics.is_terminated(y[0], self.chain)

    def is_truncated(self, state: EnvState, params: EnvParams | None = None) -> jax.Array:
        return state.time >= (self.default_params if params is None else params).max_episode_steps

    def discount(self, state: EnvState, params=None) -> jax.Array:
        return jax.lax.select(self.is_terminal(state, params), 0.0, 1.0)

    def action_space(self, params=None):
        return _space_classes().Box(-1.0, 1.0, (1,), jnp.float32)

    def observation_space(self, params=None):
        big = jnp.finfo(jnp.float32).max  # v5's infinite bounds, finite so that ``sample`` draws no NaN
        return _space_classes().Box(-big, big, self.obs_shape, jnp.float32)

    def state_space(self, params: EnvParams | None = None):
        spaces, big = _space_classes(), jnp.finfo(jnp.float32).max
        return spaces.Dict({"qpos_qvel": spaces.Box(-big, big, (self.chain.state_size,), jnp.float32),
                            "time": spaces.Discrete((self.default_params if params is None else params).max_episode_steps)})


class _TimeLimited:
    """The chain's constants with a (possibly traced) time limit: what ``end_of_step`` reads."""

    def __init__(self, chain: ChainParams, max_episode_steps):
        self._chain, self.max_episode_steps = chain, max_episode_steps

    def __getattr__(self, name):
        return getattr(self._chain, name)


def make(links: int = 2) -> tuple[ChainFunctional, EnvParams]:
    """gymnax.make's pair for the n-link chain."""
    env = ChainFunctional(links)
    return env, env.default_params
