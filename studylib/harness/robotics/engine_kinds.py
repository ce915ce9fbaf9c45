"""The robotics engines behind one interface (harness.robotics.engines holds their records and times them).

call() steps all N environments K steps; state() -> (qpos, qvel); sync() waits for the work;
close(). observe() -> the batch's observation and step_once(ctrl) -> one step of every environment:
what engine_policy.closed_loop runs the study's MLP with, from Python, between one-step calls.
MJX runs the policy inside its compiled call instead. Each ``make_*`` takes (model record,
MjModel, qpos, qvel, ctrl, seed, policy_seed: None for open-loop controls).
"""

from __future__ import annotations

import time

import numpy as np

from ...errors import ConfigError
from ..atari.engines import cores
from .engine_models import physics_states, positions_velocities
from .engine_policy import EnginePolicy, closed_loop


class _HostEngine:
    """call(): K steps of the given controls (open_loop: K one-step calls, unless the engine runs K
    steps in one), or, with a policy, closed_loop's K one-step calls."""

    compile_s = None
    policy: EnginePolicy | None = None
    device = "cpu"  # MuJoCo C and the Python loop step on the host's cores

    def call(self):
        if self.policy is None:
            self.open_loop()
        else:
            closed_loop(self, self.policy, self.ctrl.shape[1])

    def open_loop(self):
        for k in range(self.ctrl.shape[1]):
            self.step_once(self.ctrl[:, k])

    def advance(self, steps: int) -> None:
        """``steps`` one-step calls under the K open-loop controls, repeated: how an engine whose
        state cannot be set (envpool) is brought past its initial transient before it is timed."""
        for j in range(steps):
            self.step_once(self.ctrl[:, j % self.ctrl.shape[1]])

    def _policy_for(self, m, obs_width: int, policy_seed) -> None:
        """The study's MLP for this engine's observation width, or none (open-loop controls)."""
        self.policy = None if policy_seed is None else EnginePolicy.for_model(m, obs_width, policy_seed)

    def sync(self):
        pass  # every call returns with its work done

    def close(self):
        pass


class _PythonLoop(_HostEngine):
    """mujoco-python: one MjData per environment, ``mj_step`` from Python, controls written each step."""

    def __init__(self, m, qpos, qvel, ctrl, policy_seed=None):
        import mujoco

        self.m, self.ctrl, self.step = m, ctrl, mujoco.mj_step
        self.datas = [mujoco.MjData(m) for _ in range(len(qpos))]
        for d, q, v in zip(self.datas, qpos, qvel):
            d.qpos[:], d.qvel[:] = q, v
        self._policy_for(m, m.nq + m.nv, policy_seed)

    def observe(self):
        return np.array([np.concatenate([d.qpos, d.qvel]) for d in self.datas])

    def step_once(self, ctrl):
        m, step = self.m, self.step
        for d, u in zip(self.datas, ctrl):
            d.ctrl[:] = u
            step(m, d)

    def state(self):
        return np.array([d.qpos for d in self.datas]), np.array([d.qvel for d in self.datas])


class _Rollout(_HostEngine):
    """mujoco-rollout: a persistent ``Rollout`` pool of one thread per core and one MjData per
    thread; each call continues from the last call's final states (``mjSTATE_FULLPHYSICS``:
    time, qpos, qvel, act, ...). A call starts with a zero solver warm start (rollout's default)."""

    def __init__(self, m, qpos, qvel, ctrl, policy_seed=None):
        import mujoco
        from mujoco import rollout

        self.m, self.ctrl, n = m, np.ascontiguousarray(ctrl), len(qpos)
        self.pool = rollout.Rollout(nthread=cores())
        self.datas = [mujoco.MjData(m) for _ in range(cores())]
        self.x0 = physics_states(m, qpos, qvel)
        steps = 1 if policy_seed is not None else ctrl.shape[1]  # a policy: one step a call
        self.out = np.empty((n, steps, self.x0.shape[1]))
        self.sensors = np.empty((n, steps, m.nsensordata))
        self._policy_for(m, m.nq + m.nv, policy_seed)

    def open_loop(self):
        self.pool.rollout(self.m, self.datas, self.x0, self.ctrl, state=self.out, sensordata=self.sensors)
        self.x0[:] = self.out[:, -1]

    def observe(self):
        return self.x0[:, 1:1 + self.m.nq + self.m.nv]  # FULLPHYSICS: time, qpos, qvel, ...

    def step_once(self, ctrl):
        self.pool.rollout(self.m, self.datas, self.x0, np.ascontiguousarray(ctrl[:, None, :], np.float64),
                          state=self.out, sensordata=self.sensors)
        self.x0[:] = self.out[:, -1]

    def state(self):
        return positions_velocities(self.m, self.x0)

    def close(self):
        self.pool.close()


_MJX_CACHE: dict = {}  # (model name, N, K, policy seed, XLA options) -> (init, compiled step, compile seconds, policy)

# XLA's options for ``mjx-unfused``: its HLO pass "fusion" left out. On the n-link chain, XLA:CPU's
# fused program for MJX's step grows in run time far faster than its work with n (16 chains, one
# step on the 2-core Zen 4: 1.0 ms at n = 4, 38 ms at n = 6, 6.1 s at n = 8, while XLA's own
# cost analysis counts 38k, 65k and 102k flops per environment step); without the pass, 4.1, 3.8
# and 6.5 ms (benchmarks/mjx_fusion.py prints these on the machine it runs on).
UNFUSED = (("xla_disable_hlo_passes", "fusion"),)


def _mjx_compiled(name, m, n, steps, policy_seed=None, xla_options=()):
    import jax
    from mujoco import mjx

    key = (name, n, steps, policy_seed, xla_options)
    if key not in _MJX_CACHE:
        mx = mjx.put_model(m)
        d0 = mjx.make_data(mx)
        policy = None if policy_seed is None else EnginePolicy.for_model(m, m.nq + m.nv, policy_seed)

        def rollout(d, ctrl):  # one environment, K steps (with a policy: K inferences too, in the scan)
            def body(d, u):
                if policy is not None:
                    u = policy(jax.numpy.concatenate([d.qpos, d.qvel]), xp=jax.numpy)
                return mjx.step(mx, d.replace(ctrl=u)), None
            return jax.lax.scan(body, d, ctrl)[0]

        init = jax.jit(jax.vmap(lambda q, v: d0.replace(qpos=q, qvel=v)))
        data = init(np.zeros((n, m.nq), np.float32), np.zeros((n, m.nv), np.float32))
        t0 = time.perf_counter()
        step = jax.jit(jax.vmap(rollout)).lower(data, np.zeros((n, steps, m.nu), np.float32)).compile(
            compiler_options=dict(xla_options) or None)
        _MJX_CACHE[key] = (init, step, time.perf_counter() - t0, policy)
        return (*_MJX_CACHE[key], True)
    return (*_MJX_CACHE[key], False)


class _Mjx:
    """mjx: the batch of N ``mjx.Data`` stays in JAX arrays between calls; ``sync`` waits for it.
    ``compile_s`` is the XLA compile of this (model, N, K, policy), measured once per process
    (cached); ``compiled_now`` says whether this construction paid it. A policy runs inside the call."""

    def __init__(self, m, qpos, qvel, ctrl, name, policy_seed=None, xla_options=()):
        import jax

        init, self.fn, self.compile_s, self.policy, self.compiled_now = _mjx_compiled(name, m, len(qpos), ctrl.shape[1],
                                                                                      policy_seed, xla_options)
        self.device = jax.default_backend()  # "cpu" or "gpu": where its XLA program runs
        self.data = init(qpos.astype(np.float32), qvel.astype(np.float32))
        self.ctrl = jax.numpy.asarray(ctrl, np.float32)

    def call(self):
        self.data = self.fn(self.data, self.ctrl)

    def state(self):
        return np.asarray(self.data.qpos, np.float64), np.asarray(self.data.qvel, np.float64)

    def sync(self):
        self.data.qpos.block_until_ready()

    def close(self):
        pass


class _Envpool(_HostEngine):
    """envpool: its own XMLs and MuJoCo build, so its initial state is its own (reset noise,
    seeded) and ``state`` is unavailable: it takes no part in the agreement. Its observation is
    its task's gymnasium-v5 observation (what a policy reads)."""

    def __init__(self, m, task, num_envs, seed, ctrl, policy_seed=None):
        import envpool

        config = envpool.make_spec(task).config._asdict()
        extra = {k: v for k, v in (("terminate_when_unhealthy", False), ("max_episode_steps", 2**30))
                 if k in config}  # no resets inside a timed region where the task allows
        self.env = envpool.make_gymnasium(task, num_envs=num_envs, num_threads=min(cores(), num_envs), seed=seed,
                                          frame_skip=1, **extra)
        self.obs = self.env.reset()[0]
        self.ctrl = ctrl
        self._policy_for(m, self.obs.shape[1], policy_seed)

    def observe(self):
        return self.obs

    def step_once(self, ctrl):
        self.obs = self.env.step(ctrl)[0]

    def state(self):
        raise ConfigError("envpool does not expose its MuJoCo state")

    def close(self):
        self.env.close()


def _no_early_end(task: str) -> dict:
    """``terminate_when_unhealthy=False`` where the v5 task's constructor takes it (hopper,
    walker2d, humanoid: as envpool's rows); the pendulums end an episode when they fall and reset."""
    import inspect

    import gymnasium
    from gymnasium.envs.registration import load_env_creator

    params = inspect.signature(load_env_creator(gymnasium.spec(task).entry_point)).parameters
    return {"terminate_when_unhealthy": False} if "terminate_when_unhealthy" in params else {}


class _GymnasiumAsync(_Envpool):
    """gymnasium-async: gymnasium's AsyncVectorEnv of ``<Task>-v5`` (one process per environment,
    spawned; pipes between them), frame_skip 1, no time limit, no early termination where the task
    allows; its observation is the task's own."""

    def __init__(self, m, task, num_envs, seed, ctrl, policy_seed=None):
        import gymnasium

        # spawned, not forked: the chapter's process runs JAX's threads (MJX), and a fork of a
        # threaded process may copy a held lock into the child
        self.env = gymnasium.make_vec(task, num_envs=num_envs, vectorization_mode="async",
                                      vector_kwargs={"context": "spawn"}, frame_skip=1, max_episode_steps=2**30,
                                      **_no_early_end(task))
        self.obs = self.env.reset(seed=seed)[0]
        self.ctrl = ctrl
        self._policy_for(m, self.obs.shape[1], policy_seed)


# each: (engine record, model record, MjModel, qpos, qvel, ctrl, seed, policy_seed: None for open-loop
# controls) -> engine


def make_python(engine, rec, m, qpos, qvel, ctrl, seed, policy_seed):
    return _PythonLoop(m, qpos, qvel, ctrl, policy_seed)


def make_rollout(engine, rec, m, qpos, qvel, ctrl, seed, policy_seed):
    return _Rollout(m, qpos, qvel, ctrl, policy_seed)


def make_mjx(engine, rec, m, qpos, qvel, ctrl, seed, policy_seed):
    """MJX's program, or (an engine record that names the program it compiles without fusion,
    ``unfused_of``) the same without XLA's "fusion" pass."""
    return _Mjx(m, qpos, qvel, ctrl, rec.name, policy_seed, UNFUSED if engine.unfused_of else ())


def make_envpool(engine, rec, m, qpos, qvel, ctrl, seed, policy_seed):
    return _Envpool(m, rec.envpool_task, len(qpos), seed, ctrl, policy_seed)


def make_gymnasium_async(engine, rec, m, qpos, qvel, ctrl, seed, policy_seed):
    return _GymnasiumAsync(m, rec.envpool_task, len(qpos), seed, ctrl, policy_seed)
