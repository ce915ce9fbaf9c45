"""Overhead profiler for paper Fig 5 (time breakdown) and Fig 6 (backend calls vs kernel launches).

``profile(MeasurePoint)`` profiles ONE collection, ``env.rollout(K, policy)`` followed by
``env.synchronize()``, after warm-up (compile, first call), and returns a dict:

  total_s      wall time of the profiled collection (profilers slow it down), the fastest of 3
               profiled runs, the estimate least disturbed by other processes on the machine.
  total_s_unprofiled  the same collection without any profiler: the fastest of 3 timed regions
               of ``harness.timing``, per collection.
  device_s     wall time during which at least one compute kernel was running: the union of the
               kernel intervals (on a GPU: the CUDA kernels CUPTI records; on the CPU, which is then
               the "device": XLA CPU thunks, ATen leaf kernels, the C++ simulation calls).
  backend_s    wall time inside a Python->backend call (the union of their intervals) that is not
               already device_s: framework dispatch, argument handling, allocation, waiting.
  python_s     the rest: total_s - |backend calls U kernels|, i.e. the interpreter running the
               data-collection loop (for gym this includes the whole gymnasium simulation).
  The three partition total_s, with priority device > backend > python where they overlap (as
  RL-Scope attributes overlapped time in the paper's Fig 5).

  backend_calls    Python->backend calls per collection (paper Fig 6 "Backend"):
                   * torch, gym: calls from Python into the torch API, counted with a
                     ``TorchFunctionMode`` (torch.* functions, Tensor methods and operators,
                     ``int(tensor)``; calls torch makes internally are not counted).
                   * jax: executions of a compiled XLA program (outer ``PjitFunction`` events of
                     the jax.profiler trace) plus device->host fetches (``np.asarray(jax.Array)``
                     events, e.g. ``int(done)``).
                   * cpp: ctypes calls into the C++ library plus the torch API calls of inference.
                   * cuda: launches of the hand-written kernel from Python (CuPy ``RawKernel``
                     calls); CuPy's own inference calls are not counted (they are in
                     kernel_launches).
  kernel_launches  kernels executed per collection (paper Fig 6 "CUDA"):
                   * on a GPU: CUDA kernels recorded by CUPTI (torch.profiler for torch, gym, cuda;
                     the GPU plane of the jax.profiler trace for jax). Measured.
                   * on the CPU there are no launches; the counted equivalent is one execution of
                     a compiled kernel on the data:
                     - jax: XLA:CPU thunk executions recorded in the jax.profiler trace (one per
                       fusion / copy / dot / custom call executed, loop bodies counted once per
                       iteration; control-flow thunks ``while``/``call`` not counted). Measured.
                     - torch, gym: ATen operators that reach a backend kernel, counted with a
                       ``TorchDispatchMode`` (after decomposition, below autograd), excluding view
                       and metadata ops (no kernel on a GPU either) and ``_local_scalar_dense``
                       (a device->host copy). Each would be >= 1 CUDA kernel on a GPU. Measured.
                     - cpp: ``cartpole_rollout`` C++ calls (one OpenMP parallel region over all
                       environments each: the CPU form of one kernel launch) plus the ATen
                       kernels of inference.
                   ``kernel_counter`` in the result names the counter used; ``counts_on_gpu`` says
                   whether kernel_launches are real GPU launches. A CPU count is never a GPU one.

The profiler costs time: ``slowdown(row)`` is the profiled collection's time over the unprofiled
one's (measured here: 2.0x for a jax K = 1 collection at N = 2^10, 3.2x for torch), and
``cpu_share_bounds(row)`` the interval an unprofiled collection's CPU-bound share must lie in. The
chapters print both beside the breakdown.

The point of the paper's F.2: for jax backend_calls stay constant in K (one XLA call runs all K
steps) while kernel_launches grow linearly in K (no fusion across steps); for torch both grow
linearly. ``profile_sweep`` runs K = 1, 10, 100, ... on one set of environments to show whether
that holds on this machine.
"""

from __future__ import annotations

import collections
import glob
import re
import tempfile

from ..errors import ConfigError, InstrumentUnavailableError
from ..implspec import spec
from ..envs.registry import make_from
from ..settings import EnvSettings, MeasurePoint
from .measure import check_feasible
from .timing import time_regions

COLLECTION = "studylib_collection"
UNPROFILED_MIN_SECONDS = 0.01  # per timed region of the unprofiled collection
_NO_KERNEL_OPS = {"_local_scalar_dense"}
_JAX_NOT_KERNEL = re.compile(r"^(end: |ThreadpoolListener|ThunkExecutor|SlinkyThreadPool|"
                             r"(while|call|conditional)(\.\d+)?$)")


# ---- interval arithmetic ----------------------------------------------------------------------

def _union(intervals):
    merged = []
    for s, e in sorted(i for i in intervals if i[1] > i[0]):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return merged


def _length(intervals) -> float:
    return sum(e - s for s, e in _union(intervals))


def _clip(intervals, lo, hi):
    return [(max(s, lo), min(e, hi)) for s, e in intervals if e > lo and s < hi]


def _partition(total, backend_iv, device_iv, window):
    lo, hi = window
    device = _length(_clip(device_iv, lo, hi))
    both = _length(_clip(list(backend_iv) + list(device_iv), lo, hi))
    return {"python_s": max(0.0, total - both), "backend_s": max(0.0, both - device), "device_s": device}


# ---- torch-family counting (torch, gym, cpp, cuda) ------------------------------------------------

def _install_native_proxies(env, counts, record):
    """Count (and, when a torch.profiler records, mark as ``native::<name>`` ranges) the native
    calls of cpp/cuda/fused through their backend's ``call_hook``; returns a function undoing it."""
    backend = getattr(env, "backend", None)
    if backend is None:
        return lambda: None
    previous = backend.call_hook

    def hook(name, fn, *args):
        label = f"{backend.api}.{name}"
        counts[label] += 1
        if record[0]:
            import torch

            with torch.profiler.record_function(f"native::{label}"):
                return fn(*args)
        return fn(*args)

    backend.call_hook = hook
    return lambda: setattr(backend, "call_hook", previous)


def _native_kernel_calls(counts) -> int:
    """Calls of a rollout entry point (cartpole_rollout, fused_rollout): one kernel launch each."""
    return sum(v for k, v in counts.items() if k.endswith("_rollout"))


def _count_torch_family(env, steps, policy):
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    api = collections.Counter()
    kernels = collections.Counter()

    class FunctionCounter(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            api[getattr(func, "__qualname__", None) or getattr(func, "__name__", str(func))] += 1
            return func(*args, **(kwargs or {}))

    class DispatchCounter(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func.overloadpacket.__name__
            if not func.is_view and name not in _NO_KERNEL_OPS:
                kernels[str(func)] += 1
            return func(*args, **(kwargs or {}))

    native = collections.Counter()
    restore = _install_native_proxies(env, native, [False])
    try:
        with FunctionCounter(), DispatchCounter():
            env.rollout(steps, policy)
            env.synchronize()
    finally:
        restore()
    del torch
    return api, kernels, native


def _time_torch_family(env, steps, policy):
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, record_function

    on_gpu = env.device.startswith("cuda")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    native = collections.Counter()
    restore = _install_native_proxies(env, native, [True])
    try:
        with torch.profiler.profile(activities=activities) as prof:
            with record_function(COLLECTION):
                env.rollout(steps, policy)
                env.synchronize()
    finally:
        restore()
    events = list(prof.events())
    window_ev = next(e for e in events if e.name == COLLECTION and e.device_type == DeviceType.CPU)
    window = (window_ev.time_range.start, window_ev.time_range.end)
    total = (window[1] - window[0]) * 1e-6  # profiler times are in microseconds

    def iv(e):
        return (e.time_range.start, e.time_range.end)

    cpu = [e for e in events if e.device_type == DeviceType.CPU and e is not window_ev]
    top = [e for e in cpu if e.cpu_parent is not None and e.cpu_parent.name == COLLECTION]
    if on_gpu:
        gpu_kernels = [e for e in events if e.device_type == DeviceType.CUDA]
        device_iv = [iv(e) for e in gpu_kernels]
        n_gpu = len(gpu_kernels)
    else:
        device_iv = [iv(e) for e in cpu
                     if e.name.startswith("native::") and e.name.endswith("_rollout")
                     or (not e.cpu_children and e.name.startswith("aten::") and not _is_view_name(e.name))]
        n_gpu = None
    parts = _partition(window[1] - window[0], [iv(e) for e in top], device_iv, window)
    parts = {k: v * 1e-6 for k, v in parts.items()}
    return total, parts, n_gpu


_VIEW_NAMES = {"view", "reshape", "_reshape_alias", "as_strided", "slice", "select", "unsqueeze", "squeeze",
               "expand", "t", "transpose", "permute", "alias", "detach", "lift_fresh", "_unsafe_view",
               "unbind", "split", "chunk", "narrow", "result_type", "empty", "empty_strided",
               "resolve_conj", "resolve_neg", "_local_scalar_dense", "item", "numpy_T"}


def _is_view_name(name: str) -> bool:
    return name.split("::", 1)[-1] in _VIEW_NAMES


# ---- jax ---------------------------------------------------------------------------------------------

def check_gpu_trace(kernels) -> None:
    """A collection on a GPU launches kernels: a trace with none inside the collection means the
    profiler's CUPTI tracer did not start (seen on an H100: jax.profiler's subscription fails once
    torch.profiler has used CUPTI in the same process), not that the GPU was idle. Refuse it, so a
    zero is never saved as the device's share."""
    if not kernels:
        raise InstrumentUnavailableError(
            "jax.profiler recorded no GPU kernel in the collection: its CUPTI tracer did not start (another "
            "profiler in this process, torch.profiler, may hold CUPTI); profile jax on the GPU in a process of its own")


def _profile_jax(env, steps, policy):
    import jax
    from jax.profiler import ProfileData, ProfileOptions

    on_gpu = env.device.startswith("cuda")
    opts = ProfileOptions()
    opts.python_tracer_level = 0  # C++ TraceMe events only: the python tracer would dominate the time
    with tempfile.TemporaryDirectory(prefix="studylib-jaxprof-") as d:
        jax.profiler.start_trace(d, profiler_options=opts)
        try:
            with jax.profiler.TraceAnnotation(COLLECTION):
                env.rollout(steps, policy)
                env.synchronize()
        finally:
            jax.profiler.stop_trace()
        files = glob.glob(f"{d}/**/*.xplane.pb", recursive=True)
        if not files:
            raise RuntimeError("jax.profiler wrote no trace")
        data = ProfileData.from_file(files[0])
        host_lines, gpu_events = [], []
        for plane in data.planes:
            for line in plane.lines:
                evs = [(ev.name, ev.start_ns, ev.end_ns) for ev in line.events]
                if plane.name.startswith("/device:GPU"):
                    if "stream" in line.name.lower() and "xla" not in line.name.lower():
                        gpu_events += evs
                elif plane.name.startswith("/host"):
                    host_lines.append((line.name, evs))
    window = None
    for name, evs in host_lines:
        for ev in evs:
            if ev[0] == COLLECTION:
                window = (ev[1], ev[2])
    if window is None:
        raise RuntimeError("jax.profiler trace lacks the collection annotation")
    lo, hi = window

    def inside(ev):
        return ev[1] >= lo and ev[2] <= hi

    caller, kernels = [], []
    for name, evs in host_lines:
        evs = [ev for ev in evs if inside(ev) and ev[0] != COLLECTION]
        if name == "python" or any(ev[0].startswith("PjitFunction(") for ev in evs):
            caller += evs
        elif name.startswith("tf_XLA") and not on_gpu:
            kernels += [ev for ev in evs if not _JAX_NOT_KERNEL.match(ev[0])]
    # Top-level dispatches: PjitFunction events not nested in another PjitFunction event.
    pjit = sorted((ev for ev in caller if ev[0].startswith("PjitFunction(")), key=lambda e: (e[1], -e[2]))
    dispatches, end = 0, -1
    for ev in pjit:
        if ev[1] >= end:
            dispatches += 1
            end = ev[2]
    fetches = sum(1 for ev in caller if ev[0] == "np.asarray(jax.Array)")
    if on_gpu:
        kernels = [ev for ev in gpu_events if inside(ev)]
        check_gpu_trace(kernels)
    total = (hi - lo) * 1e-9
    parts = _partition(hi - lo, [(s, e) for _, s, e in caller], [(s, e) for _, s, e in kernels], window)
    parts = {k: v * 1e-9 for k, v in parts.items()}
    detail = {"xla_executions": dispatches, "device_to_host": fetches}
    return total, parts, dispatches + fetches, len(kernels), detail, collections.Counter(ev[0] for ev in kernels)


# ---- the profiler's own cost --------------------------------------------------------------------

def slowdown(row) -> float:
    """How much slower the profiled collection ran than the same collection unprofiled:
    ``total_s / total_s_unprofiled`` (both the fastest of 3). The breakdown (python_s, backend_s,
    device_s) exists only for the profiled run; the counts (backend_calls, kernel_launches) are
    exact either way, since counting does not depend on timing."""
    return float(row["total_s"]) / float(row["total_s_unprofiled"])


def cpu_share_bounds(row) -> tuple[float, float, float]:
    """The share of a collection spent outside kernels (Python + backend), as profiled, and the
    interval an UNPROFILED collection's share must lie in, assuming only that the profiler adds
    time and never removes it (every part of the unprofiled call is at most its profiled length):

      low  = max(0, 1 - device_s / total_s_unprofiled)   all the added time was outside kernels
      high = min(1, (python_s + backend_s) / total_s_unprofiled)   all of it was in kernels

    Returns (profiled, low, high). With no slowdown the interval closes on the profiled share."""
    total, clean = float(row["total_s"]), float(row["total_s_unprofiled"])
    cpu = float(row["python_s"]) + float(row["backend_s"])
    low = min(max(0.0, 1.0 - float(row["device_s"]) / clean), 1.0)
    high = min(1.0, cpu / clean)
    return cpu / total, low, max(low, high)


# ---- public API -----------------------------------------------------------------------------------

def _time_clean(env, steps, policy) -> float:
    def collect():
        env.rollout(steps, policy)

    t = time_regions(collect, repeats=3, min_seconds=UNPROFILED_MIN_SECONDS, sync=env.synchronize)
    return t.best_seconds_per_call


def _profile_env(env, steps, policy) -> dict:
    by_jax = spec(env.name).profiler == "jax"  # else torch.profiler and the torch counters
    if by_jax:
        env.compile(steps, policy)
    env.rollout(steps, policy)  # warm-up: compile, first call, allocator
    env.synchronize()
    clean = _time_clean(env, steps, policy)
    on_gpu = env.device.startswith("cuda")
    if by_jax:
        runs = [_profile_jax(env, steps, policy) for _ in range(3)]
        total, parts, calls, launches, detail, top_kernels = min(runs, key=lambda r: r[0])
        counter = ("CUDA kernels on the GPU plane of the jax.profiler trace" if on_gpu
                   else "XLA:CPU thunk executions in the jax.profiler trace")
        call_counter = "XLA program executions + device->host fetches (jax.profiler trace)"
        detail["top_kernels"] = dict(top_kernels.most_common(5))
    else:
        api, kernels, native = _count_torch_family(env, steps, policy)
        total, parts, n_gpu = min((_time_torch_family(env, steps, policy) for _ in range(3)), key=lambda r: r[0])
        native_calls = sum(native.values())
        calls = sum(api.values()) + native_calls
        if on_gpu:
            launches, counter = n_gpu, "CUDA kernels recorded by CUPTI (torch.profiler)"
        else:
            launches = sum(kernels.values()) + _native_kernel_calls(native)
            counter = "ATen kernels dispatched (TorchDispatchMode, views excluded)"
            backend = getattr(env, "backend", None)
            if backend is not None:
                counter += f" + {backend.rollout_entry} calls"
        call_counter = "torch API calls from Python (TorchFunctionMode)"
        if getattr(env, "backend", None) is not None:
            call_counter += f" + native calls ({env.backend.api})"
        detail = {"torch_api_calls": sum(api.values()), "native_calls": native_calls,
                  "aten_kernels": sum(kernels.values()),
                  "top_api_calls": dict(api.most_common(5)), "top_kernels": dict(kernels.most_common(5))}
    return {
        "impl": env.name, "num_envs": env.num_envs, "steps": steps, "state_factor": env.state_factor,
        "compute_factor": env.compute_factor, "policy": policy, "device": env.device,
        "python_s": parts["python_s"], "backend_s": parts["backend_s"], "device_s": parts["device_s"],
        "total_s": total, "total_s_unprofiled": clean,
        "backend_calls": int(calls), "kernel_launches": int(launches),
        "backend_calls_per_step": calls / steps, "kernel_launches_per_step": launches / steps,
        "backend_counter": call_counter, "kernel_counter": counter, "counts_on_gpu": on_gpu,
        "detail": detail,
    }


def profile(point: MeasurePoint) -> dict:
    """Time breakdown and call/launch counts of one collection of K steps (see module doc).

    Keys: python_s, backend_s, device_s, total_s, total_s_unprofiled, backend_calls,
    kernel_launches, *_per_step, backend_counter / kernel_counter (what was counted),
    counts_on_gpu, detail (sub-counts and the most frequent calls/kernels), and the parameters.
    (``point.repeats`` and ``point.min_seconds`` do not apply: see the module doc.)
    """
    check_feasible(point)
    return _profile_env(make_from(point.env), point.steps, point.policy)


def profile_sweep(env: EnvSettings, steps_list, policy="mlp"):
    """``profile`` for each K in ``steps_list`` on one set of environments; a DataFrame, one row per K.

    Use it for Fig 5 (python_s/backend_s/device_s vs K) and Fig 6 (backend_calls and
    kernel_launches vs K).
    """
    import pandas as pd

    points = [MeasurePoint(env, k, policy) for k in steps_list]
    if not points:
        raise ConfigError("steps_list is empty")
    for p in points:
        check_feasible(p)
    envs = make_from(env)
    return pd.DataFrame([_profile_env(envs, p.steps, p.policy) for p in points])
