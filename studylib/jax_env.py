"""``jax``: the N x (4*S) state matrix with jax.numpy; K steps, inference included, in one jitted call.

The physics is ``studylib.dynamics.integrate`` with ``xp=jax.numpy``. ``rollout(K)`` traces one
step and wraps it in ``lax.scan``, so a rollout is one Python->XLA call whatever K is (paper F.2),
and XLA compiles it once per (K, policy). Resets draw from ``jax.random`` keyed by ``seed``.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .base import VectorCartPole
from .dynamics import RESET_HIGH, RESET_LOW, STATE_SIZE
from .episodes import advance, hash_actions
from .devices import resolve_jax_device
from .policy import mlp_logits


class JaxCartPole(VectorCartPole):
    name = "jax"

    @classmethod
    def estimate_bytes(cls, num_envs, state_factor):
        return num_envs * (4 * 4 * state_factor * 16 + 4 * 64 * 4 + 64)

    def _resolve_device(self, device):
        self._jax_device = resolve_jax_device(device)
        return "cuda" if self._jax_device.platform == "gpu" else self._jax_device.platform

    def __init__(self, settings):
        super().__init__(settings)
        put = partial(jax.device_put, device=self._jax_device)
        self._layers = put([(jnp.asarray(w), jnp.asarray(b)) for w, b in self.policy_weights.layers()])
        self._env_index = put(jnp.arange(self.num_envs, dtype=jnp.uint32))
        self._put = put
        # One compiled function per (K, policy) and one for explicit-action steps.
        self._rollout_fn = jax.jit(self._rollout_pure, static_argnames=("num_steps", "policy"))
        self._step_fn = jax.jit(self._advance)
        self._reset()

    # ---- pure functions (traced by XLA) -------------------------------------------------------
    def _advance(self, carry, actions):
        """One vectorized step with a same-step reset (episodes.advance). carry = (state, elapsed,
        episode, key); returns (carry, (terminated, truncated, final_obs))."""
        state, elapsed, episode, key = carry
        key, draw = jax.random.split(key)
        fresh = jax.random.uniform(draw, state.shape, state.dtype, RESET_LOW, RESET_HIGH)
        out = advance(state, elapsed, episode, actions, fresh, state_factor=self.state_factor,
                      compute_factor=self.compute_factor, p=self.params, xp=jnp)
        return (out.state, out.elapsed, out.episode, key), (out.terminated, out.truncated, out.final_obs)

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
        key, draw = jax.random.split(jax.random.key(self.seed))
        state = jax.random.uniform(draw, (self.num_envs, self.row_len), jnp.float32, RESET_LOW, RESET_HIGH)
        zeros = jnp.zeros(self.num_envs, jnp.int32)
        self._carry = self._put((state, zeros, zeros.astype(jnp.uint32), key))
        self._final_obs = self._carry[0][:, :STATE_SIZE]
        return np.asarray(state[:, :STATE_SIZE])

    def _step(self, actions):
        self._carry, (terminated, truncated, self._final_obs) = self._step_fn(self._carry, self._put(jnp.asarray(actions)))
        obs = np.asarray(self._carry[0][:, :STATE_SIZE])
        return obs, np.ones(self.num_envs, np.float32), np.asarray(terminated), np.asarray(truncated)

    def final_obs(self):
        return np.array(self._final_obs)

    def _set_state(self, states):
        self._carry = (self._put(jnp.asarray(states, dtype=jnp.float32)), *self._carry[1:])

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
