"""CartPole-v1 as a pure JAX function pair in gymnax's shape, for training loops that jit everything.

    import jax, studylib.adapters.jax_functional as env
    params = env.default_params
    obs, state = env.reset(key, params)                          # one env; vmap for a batch
    obs, state, reward, terminated, truncated, info = env.step(key, state, action, params)
    step_n = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))  # N envs, inside lax.scan

The API is gymnax 1.0's environment object's, so gymnax-based code (PureJaxRL's wrappers and
loops) runs this module where it had ``gymnax.make("CartPole-v1")[0]``: ``reset``/``step`` (with
``params=None`` meaning ``default_params``), ``reset_env``/``step_env`` (no autoreset),
``get_obs``, ``is_terminal``, ``is_truncated``, ``discount``, ``name``, ``num_actions``,
``obs_shape``, ``default_params`` and the spaces ``action_space(params)``,
``observation_space(params)``, ``state_space(params)``: gymnax's own jittable space classes when
gymnax is installed (``sample(key)``, ``contains`` inside ``jit``; gymnax-based code checks them
with ``isinstance``), else a mirror of them defined here. The step is ``studylib.episodes.advance``, the episode rule the
``jax`` implementation runs, on a batch of one; the physics is ``studylib.sims.cartpole.integrate``.

Autoreset, as gymnax: inside ``step``, SAME_STEP. A step that ends the episode returns its reward
(1, as every CartPole-v1 step) and flags with the first observation of the next episode, and
``info["final_observation"]`` holds the observation at the end of the step before that reset
(gymnax's key). ``info`` also has gymnax's ``discount`` (0 on termination), ``terminated`` and
``truncated``. ``key`` in ``step`` is used only for the reset draw, uniform in [-0.05, 0.05] as
CartPole-v1; the jax implementation draws for all its envs at once, so the two match transition
by transition but not in their reset draws.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct
from gymnasium import spaces as gymnasium_spaces

from ..sims.cartpole import CARTPOLE_V1, RESET_HIGH, RESET_LOW, STATE_SIZE, CartPoleParams
from ..sims import cartpole as dynamics
from ..sims.cartpole import carry, integrate
from ..episodes import advance
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

    # Derived constants: CartPoleParams' own definitions (studylib.sims.cartpole), not typed in again.
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
    floats, ``studylib.sims.cartpole``) and the steps into its episode."""

    cartpole: jax.Array  # (4*S,) float32: x, x_dot, theta, theta_dot, then 4*(S-1) carried floats
    time: jax.Array  # int32, gymnax's name for the steps taken in this episode


default_params = EnvParams()


def _draw(key, size: int) -> jax.Array:
    return jax.random.uniform(key, (size,), jnp.float32, RESET_LOW, RESET_HIGH)


name = "CartPole-v1"  # gymnax's env.name
obs_shape = (STATE_SIZE,)  # gymnax's env.obs_shape


def _params(params: EnvParams | None) -> EnvParams:
    """gymnax's rule: ``params=None`` means the default parameters."""
    return default_params if params is None else params


@jax.jit
def reset(key: jax.Array, params: EnvParams | None = None) -> tuple[jax.Array, EnvState]:
    """A new episode drawn from ``key``: (observation (4,) float32, state)."""
    return reset_env(key, _params(params))


def reset_env(key: jax.Array, params: EnvParams | None = None) -> tuple[jax.Array, EnvState]:
    """gymnax's ``reset_env``: the reset itself (``reset`` is this, jitted)."""
    cartpole = _draw(key, STATE_SIZE * _params(params).state_factor)  # the CartPole and the carried floats
    return cartpole[:STATE_SIZE], EnvState(cartpole, jnp.zeros((), jnp.int32))


def step_env(key: jax.Array, state: EnvState, action, params: EnvParams | None = None):
    """gymnax's ``step_env``: one step with no reset, (obs, state, reward, terminated, info); the
    state after an ending step is the ended episode's (``step`` adds the reset). ``key`` is unused
    (CartPole's step is deterministic)."""
    params = _params(params)
    force = jnp.where(jnp.asarray(action) == 1, params.force_mag, -params.force_mag)
    cartpole = integrate(state.cartpole[:STATE_SIZE], force, params.compute_factor, params, jnp)
    carried = carry(state.cartpole[STATE_SIZE:], jnp)  # the state factor's floats (studylib.sims.cartpole)
    next_state = EnvState(jnp.concatenate((cartpole, carried)), state.time + 1)
    terminated = is_terminal(next_state, params)
    info = {"discount": discount(next_state, params)}
    return get_obs(next_state, params), next_state, jnp.ones((), jnp.float32), terminated, info


def get_obs(state: EnvState, params: EnvParams | None = None, key=None) -> jax.Array:
    """gymnax's ``get_obs``: the CartPole of the state, (4,) float32."""
    return state.cartpole[:STATE_SIZE]


def is_terminal(state: EnvState, params: EnvParams | None = None) -> jax.Array:
    """gymnax 1.0's ``is_terminal``: the natural ending (pole or cart out of bounds), not the time limit."""
    return dynamics.is_terminated(get_obs(state), _params(params))


def is_terminated(state: EnvState, params: EnvParams | None = None) -> jax.Array:
    """gymnax 1.0's ``is_terminated(state, params)``, its name for the natural ending: ``is_terminal``."""
    return is_terminal(state, params)


def is_truncated(state: EnvState, params: EnvParams | None = None) -> jax.Array:
    """gymnax's ``is_truncated``: the time limit reached."""
    return state.time >= _params(params).max_episode_steps


def discount(state: EnvState, params: EnvParams | None = None) -> jax.Array:
    """gymnax's ``discount``: 0 in a terminal state, else 1."""
    return jax.lax.select(is_terminal(state, params), 0.0, 1.0)


@jax.jit
def step(key: jax.Array, state: EnvState, action, params: EnvParams | None = None):
    """One step with ``action`` (0 or 1) and the same-step reset of the CartPole (drawn from
    ``key``) if it ends the episode: (obs, state, reward, terminated, truncated, info), as gymnax's
    ``step``."""
    params = _params(params)
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


def _space_classes():
    """gymnax's jittable space classes if gymnax is installed, else this module's mirror of them."""
    try:
        from gymnax.environments import spaces as gymnax_spaces
    except ImportError:
        return _MirrorSpaces
    return gymnax_spaces


class _MirrorSpaces:
    """gymnax's Discrete, Box and Dict (gymnax/environments/spaces.py), for an install without
    gymnax: jittable ``sample(key)`` and ``contains(x)``."""

    class Discrete:
        def __init__(self, num_categories: int, *, dtype=jnp.int32):
            self.n, self.shape, self.dtype = num_categories, (), jnp.dtype(dtype)

        def sample(self, key):
            return jax.random.randint(key, shape=self.shape, minval=0, maxval=self.n, dtype=self.dtype)

        def contains(self, x):
            x = jnp.asarray(x, dtype=self.dtype)
            return jnp.logical_and(x >= 0, x < self.n)

    class Box:
        def __init__(self, low, high, shape, dtype=jnp.float32):
            self.low, self.high, self.shape, self.dtype = low, high, shape, dtype

        def sample(self, key):
            return jax.random.uniform(key, shape=self.shape, minval=self.low, maxval=self.high).astype(self.dtype)

        def contains(self, x):
            return jnp.logical_and(jnp.all(x >= self.low), jnp.all(x <= self.high))

    class Dict:
        def __init__(self, spaces):
            self.spaces, self.num_spaces = spaces, len(spaces)

        def sample(self, key):
            keys = jax.random.split(key, self.num_spaces)
            return {k: space.sample(keys[i]) for i, (k, space) in enumerate(self.spaces.items())}

        def contains(self, x):
            return jnp.all(jnp.array([space.contains(getattr(x, k)) for k, space in self.spaces.items()]))


def action_space(params: EnvParams | None = None):
    """gymnax's ``action_space(params)``: push left (0) or right (1), a jittable Discrete(2)."""
    return _space_classes().Discrete(num_actions)


def observation_space(params: EnvParams | None = None):
    """gymnax's ``observation_space(params)``: CartPole-v1's (4,) float32 box (the bounds of
    gymnasium's CartPole-v1, whose ``observation_space`` ``gymnasium_observation_space`` returns)."""
    box = gymnasium_observation_space(params)
    # gymnasium's infinite velocity bounds as float32's largest, as gymnax's CartPole: an infinite
    # bound would make ``sample`` draw NaN
    high = jnp.minimum(jnp.asarray(box.high), jnp.finfo(jnp.float32).max)
    return _space_classes().Box(-high, high, obs_shape, jnp.float32)


def state_space(params: EnvParams | None = None):
    """gymnax's ``state_space(params)``: the state row (4S,) and the steps into the episode."""
    params = _params(params)
    spaces = _space_classes()
    high = jnp.tile(jnp.asarray(observation_space(params).high), params.state_factor)
    high = jnp.minimum(high, jnp.finfo(jnp.float32).max)
    return spaces.Dict({"cartpole": spaces.Box(-high, high, (STATE_SIZE * params.state_factor,), jnp.float32),
                        "time": spaces.Discrete(params.max_episode_steps)})


def gymnasium_observation_space(params: EnvParams | None = None) -> gymnasium_spaces.Box:
    """The observation space as a gymnasium Box (what the gymnasium adapter declares)."""
    return _gymnasium_observation_space(_params(params))
