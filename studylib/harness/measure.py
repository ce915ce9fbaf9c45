"""Measure the data-collection throughput (samples/s) of one MeasurePoint; return one row.

    from studylib import MeasurePoint
    from studylib.harness.measure import measure
    row = measure(MeasurePoint.of("jax", 4096, 100, policy="mlp"))   # the dict --json prints

What is measured (paper section 3.3): samples/s = N * K * calls / seconds, where one call is
``env.rollout(K, policy)``: K steps of all N environments, policy inference included unless
``policy="none"``. Timed by ``harness.timing`` (warm-up apart, adaptive timed regions, each ending
with ``env.synchronize()``; ``samples_per_s`` is the median over ``repeats`` regions).

One-time costs are excluded from the timing and reported apart: ``setup_s`` (creating the
environments), ``compile_s`` (ahead-of-time compile via ``env.compile`` where the implementation
has one: XLA for jax and the gymnax peer, inductor for torch-compile; the host C++ build of the
implementation's own library on the CPU, its record's ``native_library``, when this call
triggered it, 0 when cached; the NVRTC build of a GPU kernel is part of ``setup_s``)
and ``warmup_s`` (the first call). The same environments keep running through warm-up,
calibration and repeats: episodes end and environments reset during the measurement
(``episodes_finished`` counts them), so the state never sits at a fixed point.
"""

from __future__ import annotations

import statistics
import time

from ..devices import check_device_for, default_device
from ..errors import check_fits_in_memory
from ..implspec import spec
from .peers import make_peer_from, peer_class
from ..envs.registry import estimate_bytes, make_from
from ..settings import POINT_KEYS, MeasurePoint
from .data.provenance import cpu_model, gpu_name, machine_key, now_utc
from .timing import TIMER, time_regions


def check_feasible(point: MeasurePoint) -> None:
    """What can be refused before allocating: an impl/device pair that cannot work, a missing CUDA
    device (DeviceUnavailableError), too little memory by ``estimate_bytes``
    (InsufficientMemoryError). The point's values themselves were checked when it was built."""
    e = point.env
    check_device_for(e.impl, e.device)
    needed = peer_class(e.impl).estimate_bytes(e.num_envs, e.state_factor) if e.is_peer else \
        estimate_bytes(e.impl, e.sim, e.num_envs, e.state_factor, e.params)
    check_fits_in_memory(point.describe(), needed)


def _device_name(device: str) -> str:
    return (gpu_name() or "cuda") if device.startswith("cuda") else cpu_model()


def _native_build_s(e) -> float:
    """Build the host C++ library ``e``'s implementation loads on the CPU (its record's
    ``native_library``), timed: its build seconds when this call built it, 0 when it was built
    earlier in this process or a cached build was loaded. Other implementations: 0."""
    library = None if e.is_peer else spec(e.impl).native_library
    if library is None or (e.device or default_device(e.impl)) != "cpu":
        return 0.0
    from .. import native

    hits = native.build_info.cache_info().hits
    info = native.build_info(library)
    return 0.0 if native.build_info.cache_info().hits > hits else float(info["build_seconds"])


def _make(point: MeasurePoint):
    """(environments, setup_s, build_s): the implementation's own native build triggered here is
    a compile cost, timed before the environments are made, not setup."""
    e = point.env
    build_s = _native_build_s(e)
    t0 = time.perf_counter()
    env = make_peer_from(e) if e.is_peer else make_from(e)
    return env, time.perf_counter() - t0, build_s


# the columns of every row ``measure`` writes (a sweep that holds none of its points still has them)
ROW_KEYS = ("impl", "num_envs", "steps", "state_factor", "compute_factor", "policy", "device", "device_requested",
            "device_name", "samples_per_s", "samples_per_s_min", "samples_per_s_max", "samples_per_s_all",
            "rel_spread", "repeats", "calls_per_repeat", "seconds_per_repeat", "min_seconds", "compile_s",
            "setup_s", "warmup_s", "episodes_finished", "seed", "state_layout", "machine", "date", "timer")


def measure(point: MeasurePoint) -> dict:
    """One row (a flat, JSON-serialisable dict). Keys: impl, num_envs, steps, state_factor,
    compute_factor, policy, device (resolved), device_requested, device_name, samples_per_s (median
    over repeats), samples_per_s_min/max/all, rel_spread ((max-min)/median), repeats,
    calls_per_repeat, seconds_per_repeat (median), min_seconds, compile_s, setup_s, warmup_s,
    episodes_finished (during the timed repeats), seed, state_layout, machine, date, timer."""
    check_feasible(point)
    e, k, policy = point.env, point.steps, point.policy
    env, setup_s, compile_s = _make(point)
    if hasattr(env, "compile"):  # jax, torch-compile, gymnax: ahead-of-time compile, timed apart
        t0 = time.perf_counter()
        env.compile(k, policy)
        compile_s = time.perf_counter() - t0

    t = time_regions(lambda: env.rollout(k, policy).episodes_finished, repeats=point.repeats,
                     min_seconds=point.min_seconds, sync=env.synchronize)
    sps = t.summary(e.num_envs * k)
    flat = point.flat()
    row = {
        **{key: flat[key] for key in ("impl", "num_envs", "steps", "state_factor", "compute_factor", "policy")},
        "device": env.device,
        "device_requested": e.device,
        "device_name": _device_name(env.device),
        "samples_per_s": sps["median"],
        "samples_per_s_min": sps["min"],
        "samples_per_s_max": sps["max"],
        "samples_per_s_all": sps["all"],
        "rel_spread": (sps["max"] - sps["min"]) / sps["median"],
        "repeats": point.repeats,
        "calls_per_repeat": t.calls,
        "seconds_per_repeat": statistics.median(t.seconds),
        "min_seconds": point.min_seconds,
        "compile_s": compile_s,
        "setup_s": setup_s,
        "warmup_s": t.warmup_s,
        "episodes_finished": t.counted,
        "seed": e.seed,
        "state_layout": flat["state_layout"],  # what S means (settings.STATE_LAYOUT): part of the key
        **{key: flat[key] for key in flat if key not in POINT_KEYS and key not in ("state_layout",)},  # sim, variant
        "machine": machine_key(),
        "date": now_utc(),
        "timer": TIMER,
    }
    del env
    return row
