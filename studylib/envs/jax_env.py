"""``jax``: the N x (4*S) state matrix with jax.numpy; K steps, inference included, in one jitted call.

The physics is ``studylib.sims.cartpole.integrate`` with ``xp=jax.numpy`` on the CartPole's 4
columns; the state factor's carried columns are sign-flipped every step (``episodes.advance``),
inside the scan, so XLA loads and stores all 4*S floats of every row per step. ``rollout(K)`` traces one
step and wraps it in ``lax.scan``, so a rollout is one Python->XLA call whatever K is (paper F.2),
and XLA compiles it once per (K, policy). Resets draw from ``jax.random`` keyed by ``seed``.

A ``step`` is one jitted call too, returning the observations with the flags; with
``arrays="native"`` its jax arrays are returned as they are (on the env's device, immutable), and
actions and restart masks are taken as jax arrays on that device. ``restart`` draws the new
episodes' states from the counter hash keyed by (seed, env, episode), as cpp, cuda and fused do
(the same states): a jax.random draw of all N rows would cost more than the rest of the restart.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ..arrays import JaxKind
from . import footprint
from .base import VectorCartPole, VectorEnv, restart_rows
from ..sims.cartpole import RESET_HIGH, RESET_LOW, STATE_SIZE
from ..episodes import RESET_SALT, advance, hash4, hash_actions
from ..devices import resolve_jax_device
from ..policy import GAUSSIAN_LOG_STD, mlp_logits


@partial(jax.jit, static_argnums=(1, 2))
def _first_carry(seed, num_envs: int, row_len: int):
    """A reset's carry (state, elapsed, episode, key) and observations, as one program (op by op,
    its draws and zeros compiled 5 programs for every new N). ``seed``: a uint64 (a Python int
    over 2^31 overflows a traced argument), which jax.random.key reads as it reads the int."""
    key, draw = jax.random.split(jax.random.key(seed))
    state = jax.random.uniform(draw, (num_envs, row_len), jnp.float32, RESET_LOW, RESET_HIGH)
    zeros = jnp.zeros(num_envs, jnp.int32)
    return (state, zeros, zeros.astype(jnp.uint32), key), state[:, :STATE_SIZE]


class _OnJaxDevice:
    """Where a jax implementation runs and what it hands out: the requested device as jax resolves
    it (``self._jax_device``), and jax arrays on it (arrays="native"). CartPole's class and the
    generic one share it."""

    def _resolve_device(self, device):
        self._jax_device = resolve_jax_device(device)
        return "cuda" if self._jax_device.platform == "gpu" else self._jax_device.platform

    def _native_kind(self):
        return JaxKind(self._jax_device)


class _JaxCarried:
    """What a jax implementation does with its carry (``self._carry``, the states first) and its
    jitted ``self._rollout_fn(carry, num_steps, policy) -> (carry, episodes done)``: CartPole's class
    and the generic one share it."""

    def get_state(self):
        return np.array(self._carry[0])

    def compile(self, num_steps: int, policy: str = "mlp"):
        """Compile the rollout for (K, policy) ahead of time (the harness times this separately)."""
        return self._rollout_fn.lower(self._carry, num_steps=num_steps, policy=policy).compile()

    def _rollout(self, num_steps, policy):
        self._carry, done = self._rollout_fn(self._carry, num_steps=num_steps, policy=policy)
        return int(done)  # int() waits for the result

    def synchronize(self):
        jax.block_until_ready(self._carry)


class JaxCartPole(_OnJaxDevice, _JaxCarried, VectorCartPole):
    name = "jax"

    @classmethod
    def estimate_bytes(cls, num_envs, state_factor, params=None):
        return footprint.jax_cartpole(num_envs, state_factor, params)

    def __init__(self, settings):
        super().__init__(settings)
        put = partial(jax.device_put, device=self._jax_device)
        self._layers = put([(jnp.asarray(w), jnp.asarray(b)) for w, b in self.policy_weights.layers()])
        self._env_index = put(jnp.arange(self.num_envs, dtype=jnp.uint32))
        self._put = put
        # One compiled function per (K, policy), one for explicit-action steps, one for restarts.
        self._rollout_fn = jax.jit(self._rollout_pure, static_argnames=("num_steps", "policy"))
        self._step_fn = jax.jit(self._step_pure)
        self._restart_fn = jax.jit(self._restart_pure)
        self._ones = put(jnp.ones(self.num_envs, jnp.float32))  # every step's reward (immutable, shared)
        self._reset()

    # ---- pure functions (traced by XLA) -------------------------------------------------------
    def _advance(self, carry, actions):
        """One vectorized step with a same-step reset (episodes.advance). carry = (state, elapsed,
        episode, key); returns (carry, (terminated, truncated, final_obs))."""
        state, elapsed, episode, key = carry
        key, draw = jax.random.split(key)
        fresh = jax.random.uniform(draw, (state.shape[0], STATE_SIZE), state.dtype, RESET_LOW, RESET_HIGH)
        out = advance(state, elapsed, episode, actions, fresh, state_factor=self.state_factor,
                      compute_factor=self.compute_factor, p=self.params, xp=jnp)
        return (out.state, out.elapsed, out.episode, key), (out.terminated, out.truncated, out.final_obs)

    def _step_pure(self, carry, actions):
        """``_advance`` with the observations (the CartPoles of the new state) among the outputs."""
        carry, (terminated, truncated, final_obs) = self._advance(carry, actions)
        return carry, (carry[0][:, :STATE_SIZE], terminated, truncated, final_obs)

    def _restart_pure(self, carry, final_obs, mask, seed):
        state, elapsed, episode, key = carry
        fresh = self._reset_values(seed, episode + 1, STATE_SIZE)  # the next episode's CartPoles (used where mask)
        state, elapsed, episode, final_obs = restart_rows(state, elapsed, episode, final_obs, mask, fresh, jnp)
        return (state, elapsed, episode, key), state[:, :STATE_SIZE], final_obs

    def _reset_values(self, seed, episode, columns):
        """cp_reset_value of cuda/cartpole.cuh for every env and the first ``columns`` components of
        ``episode`` (N,): the draws of episodes.reset_values_numpy, in jax.numpy."""
        u32 = jnp.uint32
        component = jnp.arange(columns, dtype=u32)[None, :]
        bits = hash4(seed ^ u32(RESET_SALT), self._env_index[:, None], episode[:, None], component) >> u32(8)
        return (bits.astype(jnp.int32) - 2**23).astype(jnp.float32) * (jnp.float32(0.1) / jnp.float32(2**24))

    def _actions(self, carry, policy):
        state, elapsed, episode, _ = carry
        if policy == "mlp":
            return jnp.argmax(mlp_logits(self._layers, state[:, :STATE_SIZE], xp=jnp), axis=1)
        return hash_actions(jnp.uint32(self.seed), self._env_index, episode, elapsed.astype(jnp.uint32))

    def _rollout_pure(self, carry, *, num_steps, policy):
        def body(c, _):
            c, (terminated, truncated, _) = self._advance(c, self._actions(c, policy))
            return c, jnp.sum(terminated | truncated, dtype=jnp.int32)

        carry, done_per_step = jax.lax.scan(body, carry, None, length=num_steps)
        return carry, jnp.sum(done_per_step, dtype=jnp.int32)

    # ---- API ------------------------------------------------------------------------------------
    def _reset(self):
        self._carry, self._final_obs = self._put(_first_carry(np.uint64(self.seed), self.num_envs, self.row_len))
        self._seed = self._put(jnp.uint32(self.seed))  # keys the restarts' draws until the next reset
        return self._host(self._final_obs)

    def _host(self, array):
        return array if self._native else np.array(array)  # a writable copy, as every implementation returns

    def _step(self, actions):
        actions = actions if self._native else self._put(actions)
        self._carry, (obs, terminated, truncated, self._final_obs) = self._step_fn(self._carry, actions)
        reward = self._ones if self._native else np.ones(self.num_envs, np.float32)
        return self._host(obs), reward, self._host(terminated), self._host(truncated)

    def final_obs(self):
        return self._final_obs if self._native else np.array(self._final_obs)

    def _restart(self, mask):
        mask = mask if self._native else self._put(mask)
        self._carry, obs, self._final_obs = self._restart_fn(self._carry, self._final_obs, mask, self._seed)
        return self._host(obs)

    def _set_state(self, states):
        self._carry = (self._put(jnp.asarray(states, dtype=jnp.float32)), *self._carry[1:])



class JaxEnv(_OnJaxDevice, _JaxCarried, VectorEnv):
    """``jax`` for any simulator whose record names an array-form episode module (the n-link
    chain's): K environment steps (the policy's controls, physics, observation, reward,
    termination, truncation, the same-step reset to the hashed draws) in one jitted ``lax.scan``
    call, as CartPole's; ``step`` one jitted call. The physics is the module's ``xla_step``: XLA's
    fastest formulation of it (the chain's: ``dynamics_xla``)."""

    name = "jax"

    @classmethod
    def estimate_bytes(cls, num_envs, state_factor, params=None):
        return footprint.array_rules(num_envs, state_factor, params)

    def __init__(self, settings):
        super().__init__(settings)
        self.rules = self.sim.episode_rules()
        self._put = partial(jax.device_put, device=self._jax_device)
        self._layers = self._put([(jnp.asarray(w), jnp.asarray(b)) for w, b in self.policy_weights.layers()])
        self._env_index = self._put(jnp.arange(self.num_envs, dtype=jnp.uint32))
        self.log_std = GAUSSIAN_LOG_STD
        self._physics = self.rules.xla_step(self.params)
        self._rollout_fn = jax.jit(self._rollout_pure, static_argnames=("num_steps", "policy"))
        self._step_fn = jax.jit(self._step_pure)
        self._restart_fn = jax.jit(self._restart_pure)
        # the reset as one program: op by op, each of its ~40 operations compiles for every new N
        # (about 1 s of an environment's creation on 2 cores, against ~0.1 s)
        self._reset_fn = jax.jit(self._reset_pure)
        self._reset()

    # ---- pure functions (traced by XLA); carry = (state, elapsed, episode, obs, seed) -----------
    def _advance(self, carry, actions):
        state, elapsed, episode, _, seed = carry
        out = self.rules.step_with_reset(state, elapsed, episode, actions, seed, self._env_index, self.params,
                                         jnp, step=self._physics)
        return (out.state, out.elapsed, out.episode, out.observation, seed), out

    def _step_pure(self, carry, actions):
        carry, out = self._advance(carry, actions.astype(jnp.float32))
        return carry, (out.observation, out.reward.astype(jnp.float32), out.terminated, out.truncated, out.final_obs)

    def _rollout_pure(self, carry, *, num_steps, policy):
        def body(c, _):
            state, elapsed, episode, obs, seed = c
            actions = self.rules.controls(policy, obs, seed, self._env_index, episode, elapsed.astype(jnp.uint32),
                                          self._layers, self.log_std, jnp)
            c, out = self._advance(c, actions)
            return c, jnp.sum(out.done, dtype=jnp.int32)

        carry, done_per_step = jax.lax.scan(body, carry, None, length=num_steps)
        return carry, jnp.sum(done_per_step, dtype=jnp.int32)

    def _restart_pure(self, carry, final_obs, mask):
        state, elapsed, episode, obs, seed = carry
        fresh = self.rules.reset_states(seed, self._env_index, episode + 1, self.params, jnp)
        state = jnp.where(mask[:, None], fresh, state)
        obs = self.rules.observation(state, self.params, jnp)
        carry = (state, jnp.where(mask, 0, elapsed), episode + mask, obs, seed)
        return carry, obs, jnp.where(mask[:, None], obs, final_obs)

    def _reset_pure(self, seed):
        zeros = jnp.zeros(self.num_envs, jnp.int32)
        state = self.rules.reset_states(seed, self._env_index, zeros.astype(jnp.uint32), self.params, jnp)
        obs = self.rules.observation(state, self.params, jnp)
        return (state, zeros, zeros.astype(jnp.uint32), obs, seed), obs

    # ---- API ------------------------------------------------------------------------------------
    def _reset(self):
        self._carry, obs = self._put(self._reset_fn(jnp.uint32(self.seed)))
        self._final_obs = obs
        return self._host(obs)

    def _host(self, array):
        return array if self._native else np.array(array)

    def _step(self, actions):
        actions = actions if self._native else self._put(actions)
        self._carry, (obs, reward, terminated, truncated, self._final_obs) = self._step_fn(self._carry, actions)
        return self._host(obs), self._host(reward), self._host(terminated), self._host(truncated)

    def final_obs(self):
        return self._final_obs if self._native else np.array(self._final_obs)

    def _restart(self, mask):
        mask = mask if self._native else self._put(mask)
        self._carry, obs, self._final_obs = self._restart_fn(self._carry, self._final_obs, mask)
        return self._host(obs)

    def _set_state(self, states):
        state = self._put(jnp.asarray(states, dtype=jnp.float32))
        self._carry = (state, *self._carry[1:3], self.rules.observation(state, self.params, jnp), self._carry[4])

