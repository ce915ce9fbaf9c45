"""The cost model's calibration (``studylib.harness.model.costmodel``): microbenchmarks and counts, never the
throughputs the model predicts. Each item is measured once per machine into
``<data_dir>/<machine>/costmodel_calibration.json`` through ``harness.sweep`` (resumable, with
provenance, like every other measurement); the ceilings come from ``beyond_roofline.json``
(``harness.model.roofline``: FMA peak and stream bandwidth), measured there if absent.

Timed items (seconds; ``harness.timing``, the fastest of 100 timed regions of at least 0.5 ms: an
overhead is what an undisturbed call costs, and short regions are the likeliest to run without
another process taking the core):

``torch_op_s``        one eager PyTorch op that does no work: ``x.add_(0)`` on a 1-element tensor
``jax_call_s``        one call of a jitted JAX function of a scalar, result waited for
``native_call_s``     one ctypes call into the C++ library that opens an OpenMP parallel region
                      over every core and does no work (``fma_peak(0)``): what a cpp call pays
                      before its first step
``xla_kernel_s``      one kernel inside a compiled ``lax.scan``: chained 8x8 matrix-vector products,
                      which XLA does not fuse (one kernel each, negligible work): what XLA pays per
                      kernel inside a compiled loop on the CPU (a scan of 256 iterations less a scan
                      of one, the two timed in turn as ``gym_mujoco_python_s``'s pair)
``gym_env_step_s``    one ``CartPoleEnv.step`` of gymnasium in a Python loop over 64 objects
                      (reset when an episode ends): the scalar simulator's cost per environment
``gym_mujoco_python_s`` the Python of one gymnasium ``MujocoEnv`` step beyond its physics: a step of
                      gymnasium's own ``InvertedDoublePendulum-v5`` (the v5 step the chain's
                      ``ChainMujocoEnv`` generalizes: observation with sin/cos and clipping, reward
                      from the tip's position) in a Python loop over 16 objects (reset when an
                      episode ends), less its ``mujoco.mj_step(model, data, nstep=frame_skip)``
                      timed alone (the two timed in turn, 100 rounds of a call of each, the
                      fastest of each): what gymnasium adds to MuJoCo's physics per environment step
                      (model version 2 prices a MuJoCo simulator's gym row with it)
``transcendental_s``  one float32 sin or cos on this machine (numpy on a cache-resident array,
                      one core, divided by the cores): the work ``costs`` counts apart from flops
``host_policy_s``     per simulator, at N = 16 and 4096: one call of the MLP policy of the record
                      that runs it on the host between native one-step calls (cpp's
                      ``policy_actions``: the chain's noise drawn in numpy, the MLP in PyTorch),
                      the environment built and reset, no step taken; with the policy's flops per
                      environment (model version 3 prices that record's MLP points with it)

Counted items (per call and per step of our implementations, at N = 8):

``calls``    Python->backend calls (torch API calls, native calls, XLA executions) and device
             kernels (ATen kernels, XLA:CPU thunks, native rollout calls) of torch, cpp and gym
             (``profiler``'s TorchFunctionMode / TorchDispatchMode counters) and of jax (its
             jax.profiler trace), at K = 2 and K = 6: per step = the difference / 4, per call =
             what K = 2 leaves.

The host clock (``/proc/cpuinfo``) is recorded for the rule that carries host costs to another CPU.
"""

from __future__ import annotations

import numpy as np

from ...settings import POLICIES
from ..data.provenance import cpu_cores, now_utc
from ..sweep import Keying, keyed_by, run
from ..timing import time_regions
from . import costmodel

NAME = "costmodel_calibration"
COUNTED_IMPLS = ("torch", "cpp", "gym", "jax")
COUNT_N, COUNT_K = 8, (2, 6)
MIN_SECONDS, REPEATS = 0.0005, 100


def _best(call, per_call: float = 1.0) -> float:
    """Seconds per unit of work of the fastest of REPEATS timed regions of ``call``."""
    def timed():
        call()  # what it returns is not a count

    t = time_regions(timed, repeats=REPEATS, min_seconds=MIN_SECONDS)
    return t.best_seconds_per_call / per_call


def torch_op_s() -> float:
    import torch

    x = torch.zeros(1)
    return _best(lambda: x.add_(0))


def jax_call_s() -> float:
    import jax

    f = jax.jit(lambda x: x + 1)
    x = jax.numpy.float32(0)
    f(x).block_until_ready()
    return _best(lambda: f(x).block_until_ready())


def native_call_s() -> float:
    from ...native import library

    lib = library("fma_peak")
    return _best(lambda: lib.fma_peak(0))


def xla_kernel_s(iterations: int = 256, kernels: int = 16) -> float:
    """Per kernel: (a scan of ``iterations`` iterations - a scan of one) / (iterations - 1) /
    ``kernels``, each iteration ``kernels`` chained 8x8 matrix-vector products (XLA runs each as its
    own kernel: a dot is not fused with its neighbours; 128 flops, negligible work)."""
    import jax
    import jax.numpy as jnp

    w = jnp.eye(8, dtype=jnp.float32)

    def body(c, _):
        for _ in range(kernels):
            c = w @ c
        return c, None

    def loop(k):
        return jax.jit(lambda x: jax.lax.scan(body, x, None, length=k)[0])

    long, short = loop(iterations), loop(1)
    x = jnp.ones(8, jnp.float32)
    t_long, t_short = _fastest_in_turn((lambda: long(x).block_until_ready(), lambda: short(x).block_until_ready()), 1)
    return max(t_long - t_short, 0.0) / (iterations - 1) / kernels


def gym_env_step_s(num_envs: int = 64, steps: int = 8) -> float:
    from gymnasium.envs.classic_control.cartpole import CartPoleEnv

    envs = [CartPoleEnv() for _ in range(num_envs)]
    for i, e in enumerate(envs):
        e.reset(seed=i)

    def run_steps():
        for _ in range(steps):
            for e in envs:
                if e.step(0)[2]:
                    e.reset()

    return _best(run_steps, num_envs * steps)


def gym_mujoco_python_s(num_envs: int = 16, steps: int = 8) -> float:
    # 16 objects, not CartPole's 64: 100 regions of 64 x 8 steps and of the physics alone took 7-9 s
    # of a calibration. Over 16 the Python is that of objects in cache: 17-19 us on the Zen 4 in two
    # runs, where its committed 18.4 us was measured over 64; over 64 the same day, 28 and 32 us (64
    # MjData and env objects outgrow the cache: a cost the model does not price per object)
    import gymnasium as gym
    import mujoco

    envs = [gym.make("InvertedDoublePendulum-v5").unwrapped for _ in range(num_envs)]
    for i, e in enumerate(envs):
        e.reset(seed=i)
    action = np.zeros(1)

    def env_steps():
        for _ in range(steps):
            for e in envs:
                if e.step(action)[2]:
                    e.reset()

    datas = [mujoco.MjData(e.model) for e in envs]  # the physics alone, on data of its own

    def physics():  # what MujocoEnv.do_simulation calls, from the model's initial state each time
        for e, d in zip(envs, datas):
            mujoco.mj_resetData(e.model, d)  # (a memset: about 1/100 of the 8 steps after it)
            for _ in range(steps):
                mujoco.mj_step(e.model, d, nstep=e.frame_skip)

    per_env_step, per_physics = _fastest_in_turn((env_steps, physics), num_envs * steps)
    return max(per_env_step - per_physics, 0.0)


def _fastest_in_turn(calls, per_call: float) -> list[float]:
    """Seconds per unit of work of the fastest of REPEATS timed regions of each of ``calls``, timed
    in turn (one region of each per round, after two untimed calls of each): a difference of two
    such times is not the first timed in a quiet spell less the second in a busy one. (Timed one
    after the other, in a test session beside the other worker, the physics alone once came out
    slower than the whole step.) A region is as many calls as reach MIN_SECONDS, as ``_best``'s,
    counted once from the second untimed call (the first may compile; one call where a call lasts
    that long already)."""
    import math
    import time

    reps = []
    for call in calls:
        call()
        start = time.perf_counter()
        call()
        reps.append(max(1, math.ceil(MIN_SECONDS / max(time.perf_counter() - start, 1e-9))))
    fastest = [float("inf")] * len(calls)
    for _ in range(REPEATS):
        for i, call in enumerate(calls):
            start = time.perf_counter()
            for _ in range(reps[i]):
                call()
            fastest[i] = min(fastest[i], (time.perf_counter() - start) / reps[i])
    return [f / per_call for f in fastest]


def transcendental_s(size: int = 4096) -> float:
    x = np.linspace(-1, 1, size, dtype=np.float32)
    out = np.empty_like(x)

    def both():
        np.sin(x, out=out)
        np.cos(x, out=out)

    return _best(both, 2 * size) / cpu_cores()


HOST_POLICY_N = (16, 4096)  # the timer's two N: the fixed cost, then its growth with N


def host_policy_record(sim: str):
    """The record that runs ``sim``'s MLP on the host between native one-step calls (dispatch
    "native" without the MLP in its kernel, on the CPU), or None."""
    from ...implspec import specs

    found = [r for r in specs() if r.dispatch == "native" and "mlp" not in r.fused_policies and not r.gpu_only
             and r.implements(sim)]
    return min(found, key=lambda r: r.order) if found else None


def host_policy_s(sim: str, num_envs: int) -> dict:
    """{"value": seconds of one host-run policy call of ``sim`` at ``num_envs``, "record": the
    implementation's, "policy_flops"} ("record", not "impl": the row is keyed by the item's columns)."""
    from ... import costs, sims
    from ...envs.registry import make_from
    from ...settings import MeasurePoint

    record, simulator = host_policy_record(sim), sims.sim(sim)
    env = make_from(MeasurePoint.of(record.name, num_envs, 1, policy="mlp", sim=sim).env)
    flops = costs.policy_flops("mlp", simulator.policy_sizes(env.params))
    return {"value": _best(env.policy_actions), "record": record.name, "policy_flops": flops}


def host_policy_items() -> list[dict]:
    from ... import sims

    return [{"quantity": costmodel.HOST_POLICY, "sim": s, "num_envs": n} for s in sims.names() if host_policy_record(s)
            for n in HOST_POLICY_N]


# the timed items, in the order they are measured and saved: each named by its function
TIMED_ITEMS = {f.__name__: f for f in (torch_op_s, jax_call_s, native_call_s, xla_kernel_s, gym_env_step_s,
                                       transcendental_s, gym_mujoco_python_s)}
TIMED = tuple(TIMED_ITEMS)


def _counts_at(impl: str, policy: str, k: int, sim: str | None = None, params=None) -> tuple[float, float]:
    """(Python->backend calls, device kernels) of one rollout of ``k`` steps at N = COUNT_N (of
    simulator ``sim`` with ``params``; None: CartPole-v1)."""
    from ...implspec import spec
    from ...envs.registry import make_from
    from ...settings import MeasurePoint
    from .. import profiler

    point = MeasurePoint.of(impl, COUNT_N, k, policy=policy, sim=sim or "cartpole", params=params)
    env = make_from(point.env)
    env.rollout(k, policy)  # warm-up (jax: compiles): first-call work is not per-step work
    env.synchronize()
    if spec(impl).profiler == "jax":
        _, _, calls, kernels, _, _ = profiler._profile_jax(env, k, policy)
        return calls, kernels
    api, kernels, native = profiler._count_torch_family(env, k, policy)
    return (sum(api.values()) + sum(native.values()),
            sum(kernels.values()) + profiler._native_kernel_calls(native))


def count_calls(impl: str, policy: str, sim: str | None = None, params=None) -> dict:
    """Calls and kernels per call and per step of ``impl`` (see the module doc), on CartPole-v1 or
    on simulator ``sim`` with ``params``."""
    (c_lo, k_lo), (c_hi, k_hi) = (_counts_at(impl, policy, k, sim, params) for k in COUNT_K)
    span = COUNT_K[1] - COUNT_K[0]
    calls_step, kernels_step = (c_hi - c_lo) / span, (k_hi - k_lo) / span
    return {"calls_per_step": calls_step, "calls_per_call": max(0.0, c_lo - COUNT_K[0] * calls_step),
            "kernels_per_step": kernels_step, "kernels_per_call": max(0.0, k_lo - COUNT_K[0] * kernels_step)}


def host_clock_hz() -> float | None:
    """This CPU's clock as /proc/cpuinfo reports it (the first core), None where it does not."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("cpu MHz"):
                    return float(line.split(":", 1)[1]) * 1e6
    except (OSError, ValueError):
        pass
    return None


def items() -> list[dict]:
    return ([{"quantity": q} for q in TIMED] + [{"quantity": "host_clock_hz"}]
            + [{"quantity": "calls", "impl": i, "policy": p} for i in COUNTED_IMPLS for p in POLICIES]
            + host_policy_items())


def measure_item(item: dict) -> dict:
    q = item["quantity"]
    if q == "calls":
        return {**item, **count_calls(item["impl"], item["policy"]), "date": now_utc()}
    if q == costmodel.HOST_POLICY:
        return {**item, **host_policy_s(item["sim"], item["num_envs"]), "date": now_utc()}
    value = host_clock_hz() if q == "host_clock_hz" else TIMED_ITEMS[q]()
    return {**item, "value": value, "date": now_utc()}


KEYING = Keying(dict, keyed_by("quantity", "impl", "policy", "sim", "num_envs"), lambda i: f"calibration {i}", "calibration")


def calibration_rows(data_dir, machine=None) -> list[dict]:
    """The calibration rows of ``machine`` (None: this one, measuring what is not saved)."""
    return run(NAME, items(), measure_item, KEYING, data_dir=data_dir, progress=False, log=lambda m: None,
               machine=machine).rows


def ceiling_rows(data_dir, machine=None) -> list[dict]:
    """The FMA peak and stream bandwidth rows (``beyond_roofline.json``, shared with the roofline)."""
    from . import roofline

    keying = Keying(dict, keyed_by(*roofline.CEILING_KEYS), lambda i: f"ceiling {i}", "ceiling")
    return run("beyond_roofline", roofline.ceiling_items(), roofline.measure_ceiling, keying, data_dir=data_dir,
               progress=False, log=lambda m: None, machine=machine).rows
