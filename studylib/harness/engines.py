"""The robotics engines RL users step MuJoCo models with, one record each (``RoboticsEngine``), and
the one function that times them (``measure_engine``), with the package's timing loop
(studylib.harness.timing), so every engine is timed the same way.

The paper's Fig 2 compares a Python loop ("gym"), C++ and XLA on CartPole and says CartPole "is
representative of robotics physics simulators commonly used in RL". Its three rows, for MuJoCo:

  mujoco-python   ``mujoco.mj_step`` in a Python loop over N ``MjData``, one step per call, the
                  controls written from Python: gymnasium's MujocoEnv.step (the "gym" row). Its
                  record runs N = 1 only (``vectorized=False``), as a gymnasium environment does.
  mujoco-rollout  ``mujoco.rollout``'s ``Rollout`` class: "a rollout object containing a thread pool
                  for parallel rollouts" (persistent, one thread per core), N open-loop trajectories
                  of K steps in one C++ call (the "C++" row).
  mjx             MuJoCo XLA: ``jax.jit(jax.vmap(lax.scan of mjx.step over K))`` on the CPU, float32
                  (JAX's default), the Newton solver (MJX has no PGS: humanoid.xml's is replaced),
                  its compile timed apart (the "XLA" row).
  envpool         envpool's ``<Task>-v5`` MuJoCo environments (its own bundled MuJoCo and XMLs),
                  threads = cores, frame_skip 1 so that one step is one physics step, no early
                  termination where its config allows.
  gymnasium-async gymnasium's AsyncVectorEnv of ``<Task>-v5``: only where ``gymnasium.envs.mujoco``
                  imports (it needs ``imageio``, not installed here: it reports that reason).

A sample is one physics step (``mj_step``) of one environment: samples/s = N x K / seconds per
call; a gymnasium environment step is ``frame_skip`` of them (engine_models). Every engine starts
from the same states (engine_models.initial_state) and applies the same controls
(engine_models.controls) open loop, repeated every call; no engine resets an environment.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import ConfigError
from .atari_engines import cores
from .engine_models import controls, describe, initial_state, load, model_record
from .timing import time_regions


def missing(*modules: str) -> str | None:
    """Why an engine cannot run here (its first module that does not import), or None. What an
    import prints is kept out of the caller's output (mujoco.mjx prints that its optional Warp
    backend is missing; a chapter page would show it)."""
    import contextlib
    import importlib
    import io

    for name in modules:
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                importlib.import_module(name)
        except Exception as e:  # an optional engine degrades to a reason, never a traceback
            return f"{name} does not import: {type(e).__name__}: {e}"
    return None


# -- the engines, behind one interface: call() steps all N environments K steps; state() -> (qpos, qvel) --


class _PythonLoop:
    """mujoco-python: one MjData per environment, ``mj_step`` from Python, controls written each step."""

    compile_s = None

    def __init__(self, m, qpos, qvel, ctrl):
        import mujoco

        self.m, self.ctrl, self.step = m, ctrl, mujoco.mj_step
        self.datas = [mujoco.MjData(m) for _ in range(len(qpos))]
        for d, q, v in zip(self.datas, qpos, qvel):
            d.qpos[:], d.qvel[:] = q, v

    def call(self):
        m, step = self.m, self.step
        for k in range(self.ctrl.shape[1]):
            for d, u in zip(self.datas, self.ctrl[:, k]):
                d.ctrl[:] = u
                step(m, d)

    def state(self):
        return np.array([d.qpos for d in self.datas]), np.array([d.qvel for d in self.datas])

    def sync(self):
        pass

    def close(self):
        pass


class _Rollout:
    """mujoco-rollout: a persistent ``Rollout`` pool of one thread per core and one MjData per
    thread; each call continues from the last call's final states (``mjSTATE_FULLPHYSICS``:
    time, qpos, qvel, act, ...). A call starts with a zero solver warm start (rollout's default)."""

    compile_s = None

    def __init__(self, m, qpos, qvel, ctrl):
        import mujoco
        from mujoco import rollout

        self.m, self.ctrl, n = m, np.ascontiguousarray(ctrl), len(qpos)
        self.pool = rollout.Rollout(nthread=cores())
        self.datas = [mujoco.MjData(m) for _ in range(cores())]
        spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        d = self.datas[0]
        self.x0 = np.empty((n, mujoco.mj_stateSize(m, spec)))
        for i in range(n):
            d.qpos[:], d.qvel[:] = qpos[i], qvel[i]
            mujoco.mj_getState(m, d, self.x0[i], spec)
        mujoco.mj_resetData(m, d)
        self.out = np.empty((n, ctrl.shape[1], self.x0.shape[1]))
        self.sensors = np.empty((n, ctrl.shape[1], m.nsensordata))

    def call(self):
        self.pool.rollout(self.m, self.datas, self.x0, self.ctrl, state=self.out, sensordata=self.sensors)
        self.x0[:] = self.out[:, -1]

    def state(self):
        nq, nv = self.m.nq, self.m.nv  # FULLPHYSICS begins: time (1), qpos (nq), qvel (nv)
        return self.x0[:, 1:1 + nq].copy(), self.x0[:, 1 + nq:1 + nq + nv].copy()

    def sync(self):
        pass

    def close(self):
        self.pool.close()


_MJX_CACHE: dict = {}  # (model name, N, K) -> compiled step and its compile seconds: one compile per shape


def _mjx_compiled(name, m, n, steps):
    import jax
    from mujoco import mjx

    key = (name, n, steps)
    if key not in _MJX_CACHE:
        mx = mjx.put_model(m)
        d0 = mjx.make_data(mx)

        def rollout(d, ctrl):  # one environment, K steps
            def body(d, u):
                return mjx.step(mx, d.replace(ctrl=u)), None
            return jax.lax.scan(body, d, ctrl)[0]

        init = jax.jit(jax.vmap(lambda q, v: d0.replace(qpos=q, qvel=v)))
        data = init(np.zeros((n, m.nq), np.float32), np.zeros((n, m.nv), np.float32))
        t0 = time.perf_counter()
        step = jax.jit(jax.vmap(rollout)).lower(data, np.zeros((n, steps, m.nu), np.float32)).compile()
        _MJX_CACHE[key] = (init, step, time.perf_counter() - t0)
        return (*_MJX_CACHE[key], True)
    return (*_MJX_CACHE[key], False)


class _Mjx:
    """mjx: the batch of N ``mjx.Data`` stays in JAX arrays between calls; ``sync`` waits for it.
    ``compile_s`` is the XLA compile of this (model, N, K), measured once per process (cached);
    ``compiled_now`` says whether this construction paid it."""

    def __init__(self, m, qpos, qvel, ctrl, name):
        import jax

        init, self.fn, self.compile_s, self.compiled_now = _mjx_compiled(name, m, len(qpos), ctrl.shape[1])
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


class _Envpool:
    """envpool: its own XMLs and MuJoCo build, so its initial state is its own (reset noise,
    seeded) and ``state`` is unavailable: it takes no part in the agreement."""

    compile_s = None

    def __init__(self, task, num_envs, seed, ctrl):
        import envpool

        config = envpool.make_spec(task).config._asdict()
        extra = {k: v for k, v in (("terminate_when_unhealthy", False), ("max_episode_steps", 2**30))
                 if k in config}  # no resets inside a timed region where the task allows
        self.env = envpool.make_gymnasium(task, num_envs=num_envs, num_threads=min(cores(), num_envs), seed=seed,
                                          frame_skip=1, **extra)
        self.env.reset()
        self.ctrl = ctrl

    def call(self):
        for k in range(self.ctrl.shape[1]):
            self.env.step(self.ctrl[:, k])

    def state(self):
        raise ConfigError("envpool does not expose its MuJoCo state")

    def sync(self):
        pass

    def close(self):
        self.env.close()


class _GymnasiumAsync(_Envpool):
    """gymnasium-async: AsyncVectorEnv of ``<Task>-v5`` with frame_skip 1 (untested here: its
    MuJoCo package does not import without imageio)."""

    def __init__(self, task, num_envs, seed, ctrl):
        import gymnasium

        self.env = gymnasium.make_vec(task, num_envs=num_envs, vectorization_mode="async", frame_skip=1)
        self.env.reset(seed=seed)
        self.ctrl = ctrl


def _make_python(rec, m, qpos, qvel, ctrl, seed):
    return _PythonLoop(m, qpos, qvel, ctrl)


def _make_rollout(rec, m, qpos, qvel, ctrl, seed):
    return _Rollout(m, qpos, qvel, ctrl)


def _make_mjx(rec, m, qpos, qvel, ctrl, seed):
    return _Mjx(m, qpos, qvel, ctrl, rec.name)


def _make_envpool(rec, m, qpos, qvel, ctrl, seed):
    return _Envpool(rec.envpool_task, len(qpos), seed, ctrl)


def _make_gymnasium_async(rec, m, qpos, qvel, ctrl, seed):
    return _GymnasiumAsync(rec.envpool_task, len(qpos), seed, ctrl)


def _envpool_task_missing(rec) -> str | None:
    if rec.envpool_task is None:
        return f"{rec.name} has no envpool or gymnasium task"
    import envpool

    if rec.envpool_task not in envpool.list_all_envs():
        return f"envpool {envpool.__version__} has no task {rec.envpool_task}"
    return None


def _gym_task_missing(rec) -> str | None:
    return f"{rec.name} has no gymnasium task" if rec.envpool_task is None else None


# -- the records ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RoboticsEngine:
    """One robotics engine: what measure_engine and the agreement need to know, so that no check is
    by name."""

    name: str  # the engine's name in the data
    title: str  # what it is, in words
    paper_row: str  # the row of the paper's Fig 2 it plays: "gym", "C++" or "XLA"
    make: Callable  # (model record, MjModel, qpos, qvel, ctrl, seed) -> its engine (interface above)
    needs: tuple[str, ...]  # the modules it imports (their distributions' versions are recorded)
    vectorized: bool = True  # steps N environments per call; False: N = 1 only
    steps_per_call: bool = False  # runs K steps in one call (a C loop, an XLA scan); False: K calls of one step
    threaded: bool = False  # C++ threads, one per core
    compiles: bool = False  # XLA: a new (model, N, K) is a compile, timed apart (compile_s)
    solver: str = "xml"  # the solver setting it runs (engine_models.SOLVERS): mjx forces "newton"
    settable_state: bool = True  # starts from given (qpos, qvel) and reports them: in the agreement
    check_model: Callable | None = None  # record -> a reason it cannot step this model, or None

    def unavailable(self, model: str) -> str | None:
        """Why it cannot run ``model`` here (a reason string), or None."""
        reason = missing(*self.needs)
        if reason is None and self.check_model is not None:
            reason = self.check_model(model_record(model))
        return reason

    def threads(self) -> int | None:
        return cores() if self.threaded else None


ENGINES = {e.name: e for e in (
    RoboticsEngine("mujoco-python", "mj_step in a Python loop", "gym", _make_python, ("mujoco",), vectorized=False),
    RoboticsEngine("mujoco-rollout", "mujoco.rollout's threaded Rollout", "C++", _make_rollout, ("mujoco.rollout",),
                   threaded=True, steps_per_call=True),
    RoboticsEngine("mjx", "MuJoCo XLA on the CPU (jit, vmap, scan)", "XLA", _make_mjx, ("jax", "mujoco.mjx"),
                   compiles=True, solver="newton", steps_per_call=True),
    RoboticsEngine("envpool", "envpool's MuJoCo v5 tasks", "C++", _make_envpool, ("envpool",), threaded=True,
                   settable_state=False, check_model=_envpool_task_missing),
    RoboticsEngine("gymnasium-async", "gymnasium's AsyncVectorEnv of <Task>-v5", "gym", _make_gymnasium_async,
                   ("gymnasium.envs.mujoco",), settable_state=False, check_model=_gym_task_missing),
)}


def engine_record(name: str) -> RoboticsEngine:
    if name not in ENGINES:
        raise ConfigError(f"unknown robotics engine {name!r}; valid: {', '.join(ENGINES)}")
    return ENGINES[name]


def build(engine: str, model: str, num_envs: int, steps: int, seed: int = 0, pattern: str = "random",
          solver: str | None = None, state: tuple | None = None):
    """``engine``'s instance for (model, N, seed), stepping K = ``steps`` per call, from
    ``state`` = (qpos, qvel) or engine_models.initial_state; ``solver`` overrides the record's
    (the C engines may run Newton too). ConfigError for a bad N or an unavailable engine."""
    rec = engine_record(engine)
    for what, v in (("num_envs", num_envs), ("steps", steps)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ConfigError(f"{what} must be a positive integer, got {v!r}")
    if not rec.vectorized and num_envs != 1:
        raise ConfigError(f"{rec.title} (engine {rec.name}) runs N = 1 only, got N = {num_envs}")
    reason = rec.unavailable(model)
    if reason is not None:
        raise ConfigError(f"engine {rec.name} cannot run {model}: {reason}")
    m = load(model, "newton" if rec.solver == "newton" else (solver or rec.solver))
    qpos, qvel = state if state is not None else initial_state(m, num_envs, seed)
    ctrl = controls(m, num_envs, steps, seed, pattern)
    return rec.make(model_record(model), m, qpos, qvel, ctrl, seed), m, ctrl


def c_reference(m, qpos, qvel, ctrl, steps: int):
    """MuJoCo C, float64: environment 0 from (qpos[0], qvel[0]) stepped ``steps`` times by
    ``mujoco.mj_step``, step j with ``ctrl[0, j % K]`` (the engines repeat their K controls every
    call). Returns (qpos, qvel, mean ``d.ncon`` per step)."""
    import mujoco

    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = qpos[0], qvel[0]
    total = 0
    for j in range(steps):
        d.ctrl[:] = ctrl[0, j % ctrl.shape[1]]
        mujoco.mj_step(m, d)
        total += d.ncon
    return d.qpos.copy(), d.qvel.copy(), total / steps


def contacts_per_step(m, qpos, qvel, ctrl, steps: int) -> float:
    """Mean ``d.ncon`` of MuJoCo C over ``steps`` steps of environment 0 (its state and controls):
    what a contact-rich model costs per step, the same number whichever engine is timed."""
    return c_reference(m, qpos, qvel, ctrl, steps)[2]


def measure_engine(engine: str, model: str, num_envs: int, steps: int, repeats: int = 3, min_seconds: float = 0.2,
                   seed: int = 0, pattern: str = "random", solver: str | None = None,
                   contact_steps: int = 1000) -> dict:
    """One row: samples/s (physics steps of one environment) of ``engine`` on ``model``, N
    environments and K = ``steps`` per call, the median, min and max over ``repeats`` timed regions
    of timing.time_regions; compile_s (XLA) apart from setup_s (the rest of the construction) and
    from the warm-up call. An engine that cannot run here gives a row with its ``reason``."""
    rec = engine_record(engine)
    row = {"engine": rec.name, "paper_row": rec.paper_row, **describe(model), "num_envs": num_envs, "steps": steps,
           "threads": rec.threads(), "cores": cores(), "pattern": pattern, "seed": seed, "versions": versions(),
           "repeats": repeats, "min_seconds": min_seconds}
    reason = rec.unavailable(model)
    if reason is not None:
        return {**row, "reason": reason, "samples_per_s": None}
    t0 = time.perf_counter()
    inst, m, ctrl = build(engine, model, num_envs, steps, seed, pattern, solver)
    compile_s = inst.compile_s
    setup_s = time.perf_counter() - t0 - (compile_s if getattr(inst, "compiled_now", False) else 0.0)
    try:
        t = time_regions(inst.call, repeats=repeats, min_seconds=min_seconds, sync=inst.sync)
    finally:
        inst.close()
    s = t.summary(num_envs * steps)
    qpos, qvel = initial_state(m, 1, seed)  # environment 0's, as every engine starts it
    return {**row, "reason": None, "solver": describe_solver(m), "samples_per_s": s["median"],
            "samples_per_s_min": s["min"], "samples_per_s_max": s["max"], "compile_s": compile_s,
            "setup_s": setup_s, "warmup_s": t.warmup_s, "calls_per_region": t.calls,
            "contacts_per_step": contacts_per_step(m, qpos, qvel, ctrl[:1], contact_steps)}


def describe_solver(m) -> str:
    from .engine_models import SOLVER_NAMES

    return SOLVER_NAMES.get(int(m.opt.solver), str(m.opt.solver))


def versions() -> dict:
    from importlib import metadata

    out = {}
    for name in ("mujoco", "jax", "jaxlib", "envpool", "gymnasium", "numpy"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out
