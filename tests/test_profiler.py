"""Overhead profiler (paper Fig 5/6): counters grow with K where they must and stay constant where
they must, and the time breakdown partitions the collection's wall time."""

from __future__ import annotations

import json

import pytest

from studylib import EnvSettings, MeasurePoint
from studylib.__main__ import main
from studylib.errors import ConfigError
from studylib.harness import profiler
from tests.conftest import default_device

KS = [1, 4, 16]


def _by_k(df, col):
    return dict(zip(df["steps"], df[col]))


def _check_breakdown(df):
    for r in df.to_dict("records"):
        parts = r["python_s"] + r["backend_s"] + r["device_s"]
        assert min(r["python_s"], r["backend_s"], r["device_s"]) >= 0
        assert parts == pytest.approx(r["total_s"], rel=1e-6, abs=1e-9)
        assert r["device"] == default_device(r["impl"])  # a GPU where there is one
        assert r["counts_on_gpu"] is (r["device"] == "cuda")


def test_jax_backend_calls_constant_kernels_linear():
    df = profiler.profile_sweep(EnvSettings("jax", 32), KS, policy="mlp")
    calls, launches = _by_k(df, "backend_calls"), _by_k(df, "kernel_launches")
    # F.2: one XLA execution (+ one device->host fetch of the episode count) whatever K is ...
    assert calls[1] == calls[4] == calls[16] and 1 <= calls[1] <= 3
    assert all(r["detail"]["xla_executions"] == 1 for r in df.to_dict("records"))
    # ... while the kernels executed grow linearly with K (no fusion across steps).
    assert launches[1] < launches[4] < launches[16]
    assert 3.0 < launches[16] / launches[4] < 4.6
    per_step = (launches[16] - launches[4]) / 12
    assert per_step > 5
    _check_breakdown(df)


def test_torch_both_counters_linear():
    df = profiler.profile_sweep(EnvSettings("torch", 32), KS, policy="mlp")
    for col in ("backend_calls", "kernel_launches"):
        c = _by_k(df, col)
        assert c[1] > 10  # every op of every step is its own call from Python
        assert c[16] - c[4] == pytest.approx(4 * (c[4] - c[1]), rel=0.05)  # (16-4) = 4 * (4-1)
        assert 3.6 < c[16] / c[4] < 4.1
    _check_breakdown(df)


def test_cpp_fused_without_policy_unfused_with_policy():
    fused = profiler.profile_sweep(EnvSettings("cpp", 32), KS, policy="none")
    assert set(fused["backend_calls"]) == {1} and set(fused["kernel_launches"]) == {1}
    unfused = profiler.profile_sweep(EnvSettings("cpp", 32), [1, 4], policy="mlp")
    calls = _by_k(unfused, "backend_calls")
    assert calls[4] == 4 * calls[1]
    launches = _by_k(unfused, "kernel_launches")
    assert launches[4] == 4 * launches[1]
    assert all(r["detail"]["native_calls"] == r["steps"] for r in unfused.to_dict("records"))


def test_gym_without_policy_calls_no_backend():
    df = profiler.profile_sweep(EnvSettings("gym", 8), [1, 4], policy="none")
    assert set(df["backend_calls"]) == {0} and set(df["kernel_launches"]) == {0}
    assert (df["python_s"] > 0).all()  # the simulation is Python


def test_profile_keys_and_bad_input():
    r = profiler.profile(MeasurePoint.of("cpp", 16, 2, policy="none"))
    assert {"python_s", "backend_s", "device_s", "total_s", "backend_calls", "kernel_launches",
            "kernel_counter", "backend_counter"} <= set(r)
    assert 0 < r["total_s_unprofiled"] and r["steps"] == 2 and r["policy"] == "none"
    with pytest.raises(ConfigError):
        profiler.profile(MeasurePoint.of("cpp", 16, 0))
    with pytest.raises(ConfigError):
        profiler.profile_sweep(EnvSettings("nope", 16), [1])
    with pytest.raises(ConfigError):
        profiler.profile_sweep(EnvSettings("cpp", 16), [1, 0])
    with pytest.raises(ConfigError):
        profiler.profile_sweep(EnvSettings("cpp", 16), [])


def test_cli_profile_json(capsys):
    rc = main(["profile", "--impl", "cpp", "--num-envs", "16", "--steps", "1,2", "--policy", "none", "--json"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert rc == 0 and len(lines) == 2
    assert [json.loads(l)["steps"] for l in lines] == [1, 2]


def test_slowdown_and_cpu_share_bounds():
    # The committed snapshot's jax K = 1 row: 922 µs profiled, 461 µs unprofiled, 519 µs in kernels.
    row = {"total_s": 922e-6, "total_s_unprofiled": 461e-6, "device_s": 519e-6, "python_s": 300e-6, "backend_s": 103e-6}
    assert profiler.slowdown(row) == pytest.approx(2.0)
    profiled, low, high = profiler.cpu_share_bounds(row)
    assert profiled == pytest.approx(403 / 922)
    assert low == 0.0  # the kernels alone, as profiled, outlast the whole unprofiled call
    assert high == pytest.approx(403 / 461)
    # No slowdown: the interval closes on the profiled share.
    same = {**row, "total_s_unprofiled": 922e-6}
    profiled, low, high = profiler.cpu_share_bounds(same)
    assert low == pytest.approx(profiled) and high == pytest.approx(profiled)
    # A small slowdown gives a narrow interval that contains the profiled share.
    mild = {**row, "total_s_unprofiled": 900e-6}
    profiled, low, high = profiler.cpu_share_bounds(mild)
    assert low < profiled < high and high - low < 0.05


def test_a_gpu_trace_without_kernels_is_refused_not_saved_as_an_idle_gpu():
    """On an H100 jax.profiler recorded no kernel after torch.profiler had used CUPTI in the same
    process, and the device's share read 0 %: such a trace is refused with the reason."""
    from studylib.errors import InstrumentUnavailableError
    from studylib.harness.profiler import check_gpu_trace
    from studylib.harness.sweep import SKIP_ERRORS

    with pytest.raises(InstrumentUnavailableError, match="CUPTI tracer did not start"):
        check_gpu_trace([])
    check_gpu_trace([("fusion_1", 0, 10)])
    assert issubclass(InstrumentUnavailableError, SKIP_ERRORS)  # a sweep saves the reason, the run goes on
