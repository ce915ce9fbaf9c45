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
  mjx             MuJoCo XLA: ``jax.jit(jax.vmap(lax.scan of mjx.step over K))`` on JAX's default
                  device (the CPU here, the GPU where jax has one: the row's ``device``), float32
                  (JAX's default), the Newton solver (MJX has no PGS: humanoid.xml's is replaced),
                  its compile timed apart (the "XLA" row).
  mjx-unfused     the same program compiled without XLA's HLO pass "fusion" (``compiler_options``
                  ``xla_disable_hlo_passes=fusion``): on the n-link chain XLA:CPU's fused program
                  slows by orders of magnitude from n = 6 on (engine_kinds.UNFUSED), so MJX at its
                  best there is this one; a second "XLA" row, not MJX's default.
  envpool         envpool's ``<Task>-v5`` MuJoCo environments (its own bundled MuJoCo and XMLs),
                  threads = cores, frame_skip 1 so that one step is one physics step, no early
                  termination where its config allows.
  gymnasium-async gymnasium's AsyncVectorEnv of ``<Task>-v5``, one process per environment (the
                  gym row vectorized as gymnasium users do): only where ``gymnasium.envs.mujoco``
                  imports (it needs ``imageio``; without it, it reports that reason).

A sample is one physics step (``mj_step``) of one environment: samples/s = N x K / seconds per
call; a gymnasium environment step is ``frame_skip`` of them (engine_models). Every engine is timed
in steady state: one whose state can be set starts from the same states past the initial transient
(engine_models.steady_state: drawn from long MuJoCo C trajectories, 1.5 s of simulated time in),
envpool steps its own environments as long before its clock starts; the contacts of a row are
counted on the states its timed regions step through (before the first and after each, outside the
clock), or, for an engine that hides its state, on MuJoCo C's run of the same model in steady
state. Left out, a large-N row would time a few early, contact-poor steps per environment and a
small-N one thousands. With policy "none" every engine applies the same
controls (engine_models.controls) open loop, repeated every call; with policy "mlp" the study's
MLP chooses them from the engine's observation (harness.robotics.engine_policy): inside MJX's compiled
call, from Python between one-step calls for the others. No engine resets an environment.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from ...errors import ConfigError
from ..atari.engines import cores
from .engine_kinds import make_envpool, make_gymnasium_async, make_mjx, make_python, make_rollout
from .engine_models import (contacts, controls, describe, initial_state, load, model_record, steady_state,
                            warm_steps)
from ..timing import time_regions

POLICIES = ("none", "mlp")  # open-loop controls (simulation only), or the study's MLP on the batch


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
    make: Callable  # (this record, model record, MjModel, qpos, qvel, ctrl, seed, policy_seed) -> its engine (above)
    needs: tuple[str, ...]  # the modules it imports (their distributions' versions are recorded)
    vectorized: bool = True  # steps N environments per call; False: N = 1 only
    steps_per_call: bool = False  # runs K steps in one call (a C loop, an XLA scan); False: K calls of one step
    policy_in_call: bool = False  # a policy runs inside its call (traced into XLA); False: from Python between steps
    threaded: bool = False  # C++ threads, one per core
    compiles: bool = False  # XLA: a new (model, N, K) is a compile, timed apart (compile_s)
    solver: str = "xml"  # the solver setting it runs (engine_models.SOLVERS): mjx forces "newton"
    settable_state: bool = True  # starts from given (qpos, qvel) and reports them: in the agreement
    check_model: Callable | None = None  # record -> a reason it cannot step this model, or None
    # The longest n-link chain a chapter plans it on (None: every n). MJX's default program: 4, since
    # XLA:CPU's fused program for the chain's step ran 10x slower than without fusion at n = 6 and
    # over 1,000x at n = 8 on the Zen 4 (engine_kinds.UNFUSED): a point there would take hours.
    chain_links_max: int | None = None
    unfused_of: str | None = None  # the engine whose XLA program this one compiles without the "fusion" pass

    def unavailable(self, model: str) -> str | None:
        """Why it cannot run ``model`` here (a reason string), or None."""
        reason = missing(*self.needs)
        if reason is None and self.check_model is not None:
            reason = self.check_model(model_record(model))
        return reason

    def not_planned(self, model: str) -> str | None:
        """Why a chapter does not plan it on ``model`` though it could run it (a chain longer than
        ``chain_links_max``), or None."""
        links = model_record(model).chain_links
        if self.chain_links_max is None or links is None or links <= self.chain_links_max:
            return None
        instead = [e.name for e in ENGINES.values() if e.unfused_of == self.name]
        return (f"not planned beyond n = {self.chain_links_max} links: XLA:CPU's default program for the chain's "
                "step slows by orders of magnitude with n (benchmarks/mjx_fusion.py)"
                + (f"; {', '.join(instead)} runs it" if instead else ""))

    def threads(self) -> int | None:
        return cores() if self.threaded else None

    def solver_for(self, requested: str | None) -> str:
        """The solver setting it runs for ``requested`` (None: its own): MJX's "newton" whatever is asked."""
        return self.solver if self.solver == "newton" else (requested or self.solver)


ENGINES = {e.name: e for e in (
    RoboticsEngine("mujoco-python", "mj_step in a Python loop", "gym", make_python, ("mujoco",), vectorized=False),
    RoboticsEngine("mujoco-rollout", "mujoco.rollout's threaded Rollout", "C++", make_rollout, ("mujoco.rollout",),
                   threaded=True, steps_per_call=True),
    RoboticsEngine("mjx", "MuJoCo XLA (jit, vmap, scan) on JAX's default device", "XLA", make_mjx, ("jax", "mujoco.mjx"),
                   compiles=True, solver="newton", steps_per_call=True, policy_in_call=True, chain_links_max=4),
    RoboticsEngine("mjx-unfused", "MuJoCo XLA compiled without XLA's fusion pass", "XLA", make_mjx,
                   ("jax", "mujoco.mjx"), compiles=True, solver="newton", steps_per_call=True, policy_in_call=True,
                   unfused_of="mjx"),
    RoboticsEngine("envpool", "envpool's MuJoCo v5 tasks", "C++", make_envpool, ("envpool",), threaded=True,
                   settable_state=False, check_model=_envpool_task_missing),
    RoboticsEngine("gymnasium-async", "gymnasium's AsyncVectorEnv of <Task>-v5", "gym", make_gymnasium_async,
                   ("gymnasium.envs.mujoco",), settable_state=False, check_model=_gym_task_missing),
)}


def engine_record(name: str) -> RoboticsEngine:
    if name not in ENGINES:
        raise ConfigError(f"unknown robotics engine {name!r}; valid: {', '.join(ENGINES)}")
    return ENGINES[name]


def check_policy(policy: str) -> str:
    if policy not in POLICIES:
        raise ConfigError(f"unknown engine policy {policy!r}; valid: {', '.join(POLICIES)}")
    return policy


def build(engine: str, model: str, num_envs: int, steps: int, seed: int = 0, pattern: str = "random",
          solver: str | None = None, state: tuple | None = None, policy: str = "none"):
    """``engine``'s instance for (model, N, seed), stepping K = ``steps`` per call, from
    ``state`` = (qpos, qvel) or engine_models.steady_state (an engine that hides its state: its own); ``solver`` overrides the record's
    (the C engines may run Newton too); ``policy`` "mlp": the study's MLP (weights from ``seed``)
    chooses the controls. ConfigError for a bad N, policy or an unavailable engine."""
    rec = engine_record(engine)
    check_policy(policy)
    for what, v in (("num_envs", num_envs), ("steps", steps)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ConfigError(f"{what} must be a positive integer, got {v!r}")
    if not rec.vectorized and num_envs != 1:
        raise ConfigError(f"{rec.title} (engine {rec.name}) runs N = 1 only, got N = {num_envs}")
    reason = rec.unavailable(model)
    if reason is not None:
        raise ConfigError(f"engine {rec.name} cannot run {model}: {reason}")
    m = load(model, rec.solver_for(solver))
    if state is None:  # an engine that hides its state takes only N from it (it steps its own past the transient)
        state = steady_state(m, num_envs, seed, pattern) if rec.settable_state else initial_state(m, num_envs, seed)
    qpos, qvel = state
    ctrl = controls(m, num_envs, steps, seed, pattern)
    return rec.make(rec, model_record(model), m, qpos, qvel, ctrl, seed, seed if policy == "mlp" else None), m, ctrl


def c_reference(m, qpos, qvel, ctrl, steps: int):
    """MuJoCo C, float64: environment 0 from (qpos[0], qvel[0]) stepped ``steps`` times by
    ``mujoco.mj_step``, step j with ``ctrl[0, j % K]`` (the engines repeat their K controls every
    call). Returns (qpos, qvel, contacts, step_s): contacts, the mean ``d.ncon`` per step (what a
    contact-rich model costs, whichever engine is timed); step_s, the mean seconds per step by
    MuJoCo's own ``mjTIMER_STEP`` after the first tenth of the steps (C time inside ``mj_step``,
    Python's call overhead excluded; MuJoCo's timers are its own instrumentation, on in every
    build, a clock read per timed stage)."""
    import mujoco

    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = qpos[0], qvel[0]
    total, timer, warm = 0, d.timer[mujoco.mjtTimer.mjTIMER_STEP], (0.0, 0)
    for j in range(steps):
        if j == steps // 10:  # the timer's first tenth (cold caches) left out of the mean
            warm = (timer.duration, timer.number)
        d.ctrl[:] = ctrl[0, j % ctrl.shape[1]]
        mujoco.mj_step(m, d)
        total += d.ncon
    return d.qpos.copy(), d.qvel.copy(), total / steps, (timer.duration - warm[0]) / max(timer.number - warm[1], 1)


_REFERENCE_RUNS: dict = {}  # (model, solver, seed, pattern, K, steps) -> (contacts per step, mj_step_s)


def reference_run(m, model, solver, seed, pattern, k, steps) -> tuple[float, float]:
    """``c_reference``'s contacts per step and MuJoCo's timer for environment 0 under the first
    environment's K controls, run once per process for the same arguments: the rows of one model,
    K and seed share it (it is the model's, whichever engine is timed)."""
    key = (model, solver, seed, pattern, k, steps)
    if key not in _REFERENCE_RUNS:
        qpos, qvel = steady_state(m, 1, seed, pattern)  # environment 0's, as every engine starts it
        _REFERENCE_RUNS[key] = c_reference(m, qpos, qvel, controls(m, 1, k, seed, pattern), steps)[2:]
    return _REFERENCE_RUNS[key]


def measure_engine(engine: str, model: str, num_envs: int, steps: int, repeats: int = 3, min_seconds: float = 0.2,
                   seed: int = 0, pattern: str = "random", solver: str | None = None,
                   contact_steps: int = 1000, policy: str = "none") -> dict:
    """One row: samples/s (physics steps of one environment) of ``engine`` on ``model``, N
    environments and K = ``steps`` per call, the median, min and max over ``repeats`` timed regions
    of timing.time_regions; compile_s (XLA) apart from setup_s (the rest of the construction) and
    from the warm-up call; with ``policy`` "mlp", the MLP's inference inside the timed calls. Timed
    in steady state (module docstring): ``warm_s`` the seconds that took (apart from setup_s),
    ``warm_steps`` its mj_steps; ``contacts_per_step`` the mean ``d.ncon`` of the timed states
    (``contacts_from`` says where it was counted). The row also holds MuJoCo's own timer of
    ``mj_step`` in C (``mj_step_s``: seconds per step of one environment in steady state, from
    MuJoCo C's reference run). An engine that cannot run here gives a row with its ``reason``."""
    rec = engine_record(engine)
    check_policy(policy)
    row = {"engine": rec.name, "paper_row": rec.paper_row, **describe(model), "num_envs": num_envs, "steps": steps,
           "policy": policy, "threads": rec.threads(), "cores": cores(), "pattern": pattern, "seed": seed,
           "versions": versions(), "repeats": repeats, "min_seconds": min_seconds}
    reason = rec.unavailable(model)
    if reason is not None:
        return {**row, "reason": reason, "samples_per_s": None}
    m = load(model, rec.solver_for(solver))
    t0 = time.perf_counter()
    state = steady_state(m, num_envs, seed, pattern) if rec.settable_state else None
    warm_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    inst, m, ctrl = build(engine, model, num_envs, steps, seed, pattern, solver, state=state, policy=policy)
    compile_s = inst.compile_s
    setup_s = time.perf_counter() - t0 - (compile_s if getattr(inst, "compiled_now", False) else 0.0)
    seen = []  # (mean contacts, states looked at) of the states the timed regions stepped through

    def count_contacts(first: bool):
        if first:  # the timed regions start (again, where time_regions discarded a first attempt)
            seen.clear()
        seen.append(contacts(m, inst.state()[0]))

    try:
        if not rec.settable_state:
            t0 = time.perf_counter()
            inst.advance(warm_steps(m))
            warm_s = time.perf_counter() - t0
        t = time_regions(inst.call, repeats=repeats, min_seconds=min_seconds, sync=inst.sync,
                         between=count_contacts if rec.settable_state else None)
    finally:
        inst.close()
    s = t.summary(num_envs * steps)
    pol = inst.policy
    reference_contacts, step_s = reference_run(m, model, rec.solver_for(solver), seed, pattern, steps, contact_steps)
    timed_contacts = sum(c * n for c, n in seen) / sum(n for _, n in seen) if seen else None
    return {**row, "reason": None, "solver": describe_solver(m), "samples_per_s": s["median"],
            "samples_per_s_min": s["min"], "samples_per_s_max": s["max"], "compile_s": compile_s,
            "setup_s": setup_s, "warmup_s": t.warmup_s, "calls_per_region": t.calls, "device": inst.device,
            "policy_obs_width": None if pol is None else int(pol.weights[0][0].shape[0]),
            "policy_flops_per_sample": None if pol is None else pol.flops_per_sample(),
            "contacts_per_step": reference_contacts if timed_contacts is None else timed_contacts,
            "contacts_from": "MuJoCo C in steady state" if timed_contacts is None else "the timed states",
            "warm_steps": warm_steps(m), "warm_s": warm_s, "mj_step_s": step_s}


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
