"""The roofline picks the ceiling that binds each kind of measurement, from measured ceilings."""

from studylib.harness import roofline

CEIL = {"memory_bytes_per_s": 4.8e10, "physics_steps_per_s": {(1, 1): 1e9, (8, 1): 1.2e8},
        "gemm_steps_per_s": {2**12: 2e6, 2**16: 3e6}}


def _row(impl, steps, policy="none", s=1, n=2**16):
    return dict(impl=impl, num_envs=n, steps=steps, state_factor=s, compute_factor=1, policy=policy)


def test_bound_selection():
    assert roofline.bound_for(_row("cpp", 1000), CEIL) == ("physics", 1e9)  # fused: in cache
    assert roofline.bound_for(_row("jax", 1000), CEIL) == ("memory", 4.8e10 / 48)  # a pass per step
    assert roofline.bound_for(_row("cpp", 1), CEIL)[0] == "memory"  # unfused cpp
    assert roofline.bound_for(_row("torch", 1, "mlp", n=2**12), CEIL) == ("gemm", 2e6)
    assert roofline.bound_for(_row("cpp", 1000, s=8), CEIL) == ("physics", 1.2e8)


def test_measured_ceilings_are_positive():
    assert roofline.memory_bandwidth(16 * 2**20) > 1e8
    assert roofline.gemm_steps_per_s(256) > 1e3
    assert roofline.physics_steps_per_s(steps=20) > 1e5


def test_ceiling_rows_round_trip():
    items = roofline.ceiling_items([2**16, 2**12, 2**12])
    assert [i["ceiling"] for i in items] == ["memory", "physics", "gemm", "gemm"]
    assert [i["num_envs"] for i in items[2:]] == [2**12, 2**16]
    rows = [{**i, "value": v} for i, v in zip(items, [4.8e10, 1e9, 2e6, 3e6])]
    ceil = roofline.from_rows(rows)
    assert ceil["memory_bytes_per_s"] == 4.8e10 and ceil["physics_steps_per_s"] == {(1, 1): 1e9}
    assert ceil["gemm_steps_per_s"] == {2**12: 2e6, 2**16: 3e6}
    assert roofline.bound_for(_row("torch", 1, "mlp", n=2**16), ceil) == ("gemm", 3e6)
    row = roofline.measure_ceiling({"ceiling": "gemm", "num_envs": 64})
    assert row["ceiling"] == "gemm" and row["num_envs"] == 64 and row["value"] > 1e3
