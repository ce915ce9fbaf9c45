"""The n-link chain in four implementations, siblings of ``VectorChain``'s shape (chain_base.py),
each the chain's class of one implementation record (``ImplSpec.sim_factories``):

``LoopChain``   gym's row: Python objects, one environment at a time (float64 Python floats through
                studylib.sims.chain's own formulas, as gymnasium's CartPole steps Python floats);
                the controls of a step hashed for all environments at once (numpy).
``TorchChain``  PyTorch eager: the same array formulation on (N,) float32 tensors, one per
                coordinate, every operation a kernel, K steps a Python loop.
``JaxChain``    XLA: the same formulation jitted with ``lax.scan`` over K steps (the frame-skip
                mj_steps a ``fori_loop``), one call per K.
``CppChain``    the C build of cuda/chain.cuh (library chain_cpu: OpenMP over blocks of
                environments, SIMD lanes within one), one native call per K steps.

All four step the same controls, ``hash_ctrl(seed, env, t)``, so their states agree with the
float64 reference to float32 rounding grown by the chain's chaos (tests/test_chain_envs.py).
"""

from __future__ import annotations

import math

import numpy as np

from ..episodes import MASK32
from ..native import chain as native_chain
from ..sims import chain as dynamics
from .chain_base import VectorChain


class _PyFloats:
    """The array namespace of studylib.sims.chain for Python floats (one environment)."""

    sin, cos, sqrt = staticmethod(math.sin), staticmethod(math.cos), staticmethod(math.sqrt)

    @staticmethod
    def clip(x, lo, hi):
        return min(max(x, lo), hi)


class LoopChain(VectorChain):
    name = "gym"
    dtype = np.float64

    def _resolve_device(self, device) -> str:
        return "cpu"  # Python floats: its record's GPU is for CartPole's policy

    def _put(self, states):
        n1 = self.links + 1
        self._q = [list(map(float, row[:n1])) for row in states]
        self._v = [list(map(float, row[n1:])) for row in states]

    def get_state(self):
        return np.array([q + v for q, v in zip(self._q, self._v)], dtype=np.float64)

    def _rollout(self, num_steps):
        p, xp, env = self.params, _PyFloats, np.arange(self.num_envs)
        for k in range(num_steps):
            ctrl = native_chain.hash_ctrl(self.seed, env, self.steps_taken + k).tolist()
            for i in range(self.num_envs):
                q, v, force = self._q[i], self._v[i], dynamics.actuator_force(ctrl[i], p, xp)
                for _ in range(p.frame_skip):
                    q, v = dynamics.rk4_step(q, v, force, p, xp)
                self._q[i], self._v[i] = q, v


def _torch_hash_ctrl(seed: int, env, step: int):
    """hash_ctrl on int64 tensors (32-bit wrap after each multiply), bit for bit."""
    import torch

    bits = native_chain.ctrl_bits(seed, env, torch.full_like(env, step & MASK32), wrap=lambda t: t & MASK32)
    return bits.to(torch.float32) * native_chain.CTRL_UNIT - 1.0


class TorchChain(VectorChain):
    name = "torch"

    def _resolve_device(self, device) -> str:
        from ..devices import resolve_torch_device

        return resolve_torch_device(device)

    def _put(self, states):
        import torch

        # one contiguous (N,) tensor per coordinate (structure of arrays), as rk4_step takes them
        rows = torch.as_tensor(states, dtype=torch.float32, device=self.device)
        self._columns = [rows[:, i].contiguous() for i in range(self.row_len)]
        self._env = torch.arange(self.num_envs, dtype=torch.int64, device=self.device)

    def get_state(self):
        import torch

        return torch.stack(self._columns, dim=1).cpu().numpy()

    def _rollout(self, num_steps):
        import torch

        p, n1, cols = self.params, self.links + 1, self._columns
        qpos, qvel = cols[:n1], cols[n1:]
        with torch.inference_mode():
            for k in range(num_steps):
                ctrl = _torch_hash_ctrl(self.seed, self._env, self.steps_taken + k)
                force = dynamics.actuator_force(ctrl, p, torch)
                for _ in range(p.frame_skip):
                    qpos, qvel = dynamics.rk4_step(qpos, qvel, force, p, torch)
        self._columns = list(qpos) + list(qvel)

    def synchronize(self):
        if str(self.device).startswith("cuda"):
            import torch

            torch.cuda.synchronize()


class JaxChain(VectorChain):
    name = "jax"
    # compiled programs of every instance in this process, by (params, N, K, seed, device): a new
    # instance of a shape seen before (a check after a measurement) compiles nothing
    _PROGRAMS: dict = {}

    def _resolve_device(self, device) -> str:
        from ..devices import resolve_jax_device

        self._jax_device = resolve_jax_device(device)
        return "cuda" if self._jax_device.platform == "gpu" else self._jax_device.platform

    def _put(self, states):
        import jax
        import jax.numpy as jnp

        self._state = jax.device_put(jnp.asarray(states, dtype=jnp.float32), self._jax_device)
        self._env = jax.device_put(jnp.arange(self.num_envs, dtype=jnp.uint32), self._jax_device)

    def get_state(self):
        return np.asarray(self._state)

    def _program(self, num_steps):
        import jax
        import jax.numpy as jnp

        p, u32, n1 = self.params, jnp.uint32, self.links + 1

        def env_step(columns, t):
            bits = native_chain.ctrl_bits(self.seed, self._env, t)  # the scalars broadcast over the environments
            ctrl = bits.astype(jnp.float32) * jnp.float32(native_chain.CTRL_UNIT) - jnp.float32(1.0)
            force = dynamics.actuator_force(ctrl, p, jnp)

            def mj_step(_, cols):
                qpos, qvel = dynamics.rk4_step(list(cols[:n1]), list(cols[n1:]), force, p, jnp)
                return tuple(qpos + qvel)

            # the frame_skip mj_steps a loop, not unrolled: XLA's compile time grows with the
            # program (n = 8 unrolled: about a minute on 2 cores; looped: 13 s)
            return jax.lax.fori_loop(0, p.frame_skip, mj_step, columns), None

        def rollout(state, first):
            # the scan carries one array per coordinate (structure of arrays): on XLA's CPU backend
            # about twice the throughput of carrying the (N, 2(n+1)) rows and slicing columns
            columns = tuple(state[:, i] for i in range(2 * n1))
            columns = jax.lax.scan(env_step, columns, first + jnp.arange(num_steps, dtype=u32))[0]
            return jnp.stack(columns, axis=1)

        return jax.jit(rollout)

    def compile(self, num_steps: int, policy: str = "none") -> None:
        """Compile the K-step program ahead of the timing (measure reports it as compile_s)."""
        import jax.numpy as jnp

        key = self._key(num_steps)
        if key not in self._PROGRAMS:
            self._PROGRAMS[key] = self._program(num_steps).lower(self._state, jnp.uint32(0)).compile()

    def _key(self, num_steps: int) -> tuple:
        return (self.params, self.num_envs, num_steps, self.seed, str(self._jax_device))

    def _rollout(self, num_steps):
        import jax.numpy as jnp

        self.compile(num_steps)
        self._state = self._PROGRAMS[self._key(num_steps)](self._state, jnp.uint32(self.steps_taken & MASK32))

    def synchronize(self):
        self._state.block_until_ready()


class CppChain(VectorChain):
    name = "cpp"

    def _resolve_device(self, device) -> str:
        return "cpu"

    def _put(self, states):
        native_chain.check_links(self.params)
        self._state = np.ascontiguousarray(states, dtype=np.float32)
        self._params = native_chain.params_array(self.params)
        self._args = native_chain.ChainArgs(state=self._state.ctypes.data, params=self._params.ctypes.data,
                                            n=self.num_envs, links=self.links, seed=self.seed & MASK32,
                                            policy=native_chain.POLICY_HASH)

    def get_state(self):
        return self._state.copy()

    def _rollout(self, num_steps):
        self._args.num_steps, self._args.first_step = num_steps, self.steps_taken & MASK32
        native_chain.call_rollout(self._args)
