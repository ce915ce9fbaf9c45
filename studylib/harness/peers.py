"""Peer CartPole implementations, measured by our harness with their own semantics (simulation only).

These are other libraries' CartPoles, not ours: they are not held to our conformance tests and
keep their own episode rules. The harness measures them beside ``studylib.IMPLEMENTATIONS``
(``settings.PEERS``: simulation only, S = C = 1, on the CPU, refused otherwise where the settings
are built):

``gymnasium-vector``  gymnasium's numpy-vectorized ``CartPoleVectorEnv`` (NEXT_STEP autoreset),
                      one Python call per step, actions from a numpy RNG.
``gymnax``            gymnax's CartPole-v1 (JAX), ``vmap`` over envs and ``lax.scan`` over the K
                      steps in one jitted call, random actions from ``jax.random``.
``envpool``           envpool's C++ CartPole-v1 thread pool (one thread per core), one call per step.

Each has the slice of our environment API the harness uses: ``rollout(K, policy="none")``,
``synchronize()``, ``device``, ``estimate_bytes`` (and ``compile`` for gymnax).

    env = make_peer("gymnax", 4096, seed=0)        # or make_peer_from(EnvSettings("gymnax", 4096))
"""

from __future__ import annotations

import importlib
import os

import numpy as np

from ..envs.base import RolloutResult
from ..errors import ConfigError, PackageUnavailableError
from ..settings import PEERS, EnvSettings, positive_int


class Peer:
    name = ""
    device = "cpu"

    def __init__(self, settings: EnvSettings):
        self.settings = settings
        self.num_envs = settings.num_envs
        self.seed = settings.seed

    @classmethod
    def estimate_bytes(cls, num_envs, state_factor=1):
        return num_envs * 4 * 4 * 16  # float32 state and a few temporaries

    def rollout(self, num_steps, policy="none") -> RolloutResult:
        num_steps = positive_int("num_steps", num_steps)
        return RolloutResult(self.num_envs, num_steps, int(self._rollout(num_steps)))

    def synchronize(self):
        pass


class GymnasiumVector(Peer):
    name = "gymnasium-vector"

    def __init__(self, settings):
        super().__init__(settings)
        from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv

        self._env = CartPoleVectorEnv(num_envs=self.num_envs)
        self._env.reset(seed=self.seed)
        self._rng = np.random.default_rng(self.seed)

    def _rollout(self, num_steps):
        done = 0
        for _ in range(num_steps):
            _, _, terminated, truncated, _ = self._env.step(self._rng.integers(0, 2, self.num_envs))
            done += int(np.count_nonzero(terminated | truncated))
        return done


class Gymnax(Peer):
    name = "gymnax"

    def __init__(self, settings):
        super().__init__(settings)
        gymnax = _peer_package("gymnax")
        import jax

        self._jax = jax
        env, params = gymnax.make("CartPole-v1")
        key, reset_key = jax.random.split(jax.random.key(self.seed))
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(reset_key, self.num_envs), params)
        self._carry = (state, key)

        def rollout(carry, num_steps):
            def body(c, _):
                state, key = c
                key, act_key, step_key = jax.random.split(key, 3)
                actions = jax.random.randint(act_key, (self.num_envs,), 0, 2)
                _, state, _, terminated, truncated, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                    jax.random.split(step_key, self.num_envs), state, actions, params)
                return (state, key), (terminated | truncated).sum()

            carry, dones = jax.lax.scan(body, carry, None, length=num_steps)
            return carry, dones.sum()

        self._fn = jax.jit(rollout, static_argnums=1)

    def compile(self, num_steps, policy="none"):
        return self._fn.lower(self._carry, num_steps).compile()

    def _rollout(self, num_steps):
        self._carry, done = self._fn(self._carry, num_steps)
        return int(done)

    def synchronize(self):
        self._jax.block_until_ready(self._carry)


class EnvPool(Peer):
    name = "envpool"

    def __init__(self, settings):
        super().__init__(settings)
        import warnings

        envpool = _peer_package("envpool")

        with warnings.catch_warnings():  # envpool builds float64 Box bounds; gymnasium warns
            warnings.simplefilter("ignore", UserWarning)
            self._env = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=self.num_envs,
                                     batch_size=self.num_envs, num_threads=os.cpu_count() or 1, seed=self.seed)
            self._env.reset()
        self._rng = np.random.default_rng(self.seed)

    def _rollout(self, num_steps):
        done = 0
        for _ in range(num_steps):
            _, _, terminated, truncated, _ = self._env.step(self._rng.integers(0, 2, self.num_envs, dtype=np.int32))
            done += int(np.count_nonzero(terminated | truncated))
        return done


def _peer_package(module: str):
    """Import a peer's library, or say in one line that it is not installed here (a skip reason)."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise PackageUnavailableError(f"{module} is not installed here ({e})") from e


_CLASSES = {cls.name: cls for cls in (GymnasiumVector, Gymnax, EnvPool)}
assert tuple(_CLASSES) == PEERS, "settings.PEERS and the peer classes must list the same names"


def peer_class(name: str) -> type[Peer]:
    if name not in _CLASSES:
        raise ConfigError(f"unknown peer {name!r}; valid: {', '.join(PEERS)}")
    return _CLASSES[name]


def make_peer_from(settings: EnvSettings) -> Peer:
    """The peer environments ``settings`` describes (checked where the settings were built)."""
    return peer_class(settings.impl)(settings)


def make_peer(name: str, num_envs: int, *, seed: int = 0) -> Peer:
    return make_peer_from(EnvSettings(peer_class(name).name, num_envs, seed=seed))
