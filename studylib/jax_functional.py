"""CartPole-v1 as a pure JAX function pair in gymnax's shape, for training loops that jit everything.

    import jax, studylib.jax_functional as env
    params = env.default_params
    obs, state = env.reset(key, params)                          # one env; vmap for a batch
    obs, state, reward, terminated, truncated, info = env.step(key, state, action, params)
    step_n = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))  # N envs, inside lax.scan

The API is gymnax 1.0's ``Environment.reset``/``step`` (the module itself stands in for gymnax's
env object: ``default_params``, ``num_actions``, ``action_space(params)``,
``observation_space(params)``). The step is ``studylib.episodes.advance``, the episode rule the
``jax`` implementation runs, on a batch of one; the physics is ``studylib.dynamics.integrate``.

Autoreset, as gymnax: inside ``step``, SAME_STEP. A step that ends the episode returns its reward
(1, as every CartPole-v1 step) and flags with the first observation of the next episode, and
``info["final_observation"]`` holds the observation at the end of the step before that reset
(gymnax's key). ``info`` also has gymnax's ``discount`` (0 on termination), ``terminated`` and
``truncated``. ``key`` in ``step`` is used only for the reset draw, uniform in [-0.05, 0.05] as
CartPole-v1; the jax implementation draws for all its envs at once, so the two match transition
by transition but not in their reset draws.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from flax import struct
from gymnasium import spaces

from .dynamics import CARTPOLE_V1, RESET_HIGH, RESET_LOW, STATE_SIZE, CartPoleParams
from .episodes import advance
from .gym_vector import observation_space as _gymnasium_observation_space

num_actions = 2  # 0: push left, 1: push right


@struct.dataclass
class EnvParams:
    """CartPole-v1's constants (``CartPoleParams``' fields and values) as a pytree, so a training
    loop can pass them through ``jit`` and ``vmap`` (gymnax's ``EnvParams``). The paper's knobs S
    and C shape the computation, so they are static: changing them recompiles."""

    gravity: float = CARTPOLE_V1.gravity
    masscart: float = CARTPOLE_V1.masscart
    masspole: float = CARTPOLE_V1.masspole
    length: float = CARTPOLE_V1.length
    force_mag: float = CARTPOLE_V1.force_mag
    tau: float = CARTPOLE_V1.tau
    x_threshold: float = CARTPOLE_V1.x_threshold
    theta_threshold_radians: float = CARTPOLE_V1.theta_threshold_radians
    max_episode_steps: int = CARTPOLE_V1.max_episode_steps
    state_factor: int = struct.field(pytree_node=False, default=1)  # S: 4*(S-1) carried floats per env
    compute_factor: int = struct.field(pytree_node=False, default=1)  # C Euler sub-steps per step

    # Derived constants: CartPoleParams' own definitions (studylib.dynamics), not typed in again.
    total_mass = CartPoleParams.total_mass
    polemass_length = CartPoleParams.polemass_length

    @classmethod
    def from_cartpole(cls, p: CartPoleParams = CARTPOLE_V1, *, state_factor: int = 1,
                      compute_factor: int = 1) -> "EnvParams":
        """The functional env's parameters for ``CartPoleParams`` ``p`` and the knobs S and C."""
        return cls(**{name: getattr(p, name) for name in CartPoleParams.__dataclass_fields__},
                   state_factor=state_factor, compute_factor=compute_factor)


@struct.dataclass
class EnvState:
    """One environment: its state row (the CartPole, observed, then the state factor's carried
    floats, ``studylib.dynamics``) and the steps into its episode."""

    cartpole: jax.Array  # (4*S,) float32: x, x_dot, theta, theta_dot, then 4*(S-1) carried floats
    time: jax.Array  # int32, gymnax's name for the steps taken in this episode


default_params = EnvParams()


def _draw(key, size: int) -> jax.Array:
    return jax.random.uniform(key, (size,), jnp.float32, RESET_LOW, RESET_HIGH)


@jax.jit
def reset(key: jax.Array, params: EnvParams = default_params) -> tuple[jax.Array, EnvState]:
    """A new episode drawn from ``key``: (observation (4,) float32, state)."""
    cartpole = _draw(key, STATE_SIZE * params.state_factor)  # the CartPole and the carried floats
    return cartpole[:STATE_SIZE], EnvState(cartpole, jnp.zeros((), jnp.int32))


@jax.jit
def step(key: jax.Array, state: EnvState, action, params: EnvParams = default_params):
    """One step with ``action`` (0 or 1) and the same-step reset of the CartPole (drawn from
    ``key``) if it ends the episode: (obs, state, reward, terminated, truncated, info), as gymnax's
    ``step``."""
    # A batch of one through the implementations' episode step; ``episode`` (which keys the
    # cpp/cuda reset draws) has no use here: ``key`` is this env's randomness.
    out = advance(state.cartpole[None], state.time[None], jnp.zeros(1, jnp.uint32),
                  jnp.asarray(action)[None], _draw(key, STATE_SIZE)[None], state_factor=params.state_factor,
                  compute_factor=params.compute_factor, p=params, xp=jnp)
    terminated, truncated = out.terminated[0], out.truncated[0]
    info = {"discount": 1.0 - terminated.astype(jnp.float32), "terminated": terminated,
            "truncated": truncated, "final_observation": out.final_obs[0]}
    next_state = EnvState(out.state[0], out.elapsed[0])
    return next_state.cartpole[:STATE_SIZE], next_state, jnp.ones((), jnp.float32), terminated, truncated, info


def action_space(params: EnvParams | None = None) -> spaces.Discrete:
    """gymnax's ``action_space(params)``: push left (0) or right (1)."""
    return spaces.Discrete(num_actions)


def observation_space(params: EnvParams = default_params) -> spaces.Box:
    """gymnax's ``observation_space(params)``: CartPole-v1's (4,) float32 box."""
    return _gymnasium_observation_space(params)
