"""The roofline: ceilings measured by code that is none of the implementations (peak FMA, stream
bandwidth), the work of a step from studylib.costs, the binding ceiling of each kind of
measurement, and the cache size the complexity chapter sizes its memory regime from."""

import pytest

from studylib import costs, native
from studylib.harness.data import provenance
from studylib.harness.model import roofline

CEIL = {"memory_bytes_per_s": 4.8e10, "fma_flops_per_s": 2.6e11, "gemm_steps_per_s": {2**12: 2e6, 2**16: 3e6}}
COMPUTE = 2.6e11 / costs.physics_flops(1, 1)  # 1e10 steps/s at S = C = 1


def _row(impl, steps, policy="none", s=1, c=1, n=2**16):
    return dict(impl=impl, num_envs=n, steps=steps, state_factor=s, compute_factor=c, policy=policy)


def test_bound_selection():
    assert roofline.bound_for(_row("cpp", 1000), CEIL) == ("compute", pytest.approx(COMPUTE))  # fused: in cache
    assert roofline.bound_for(_row("jax", 1000), CEIL) == ("memory", pytest.approx(4.8e10 / 48))  # a pass per step
    assert roofline.bound_for(_row("cpp", 1), CEIL)[0] == "memory"  # unfused cpp
    # the paper's S: memory traffic only, once per K-step call when fused
    assert roofline.bound_for(_row("cpp", 1000, s=64), CEIL) == ("compute", pytest.approx(COMPUTE))
    assert roofline.bound_for(_row("cpp", 10, s=4096), CEIL) == ("memory", pytest.approx(4.8e10 * 10 / (32 * 4096 + 16)))
    assert roofline.bound_for(_row("cpp", 1, s=64), CEIL) == ("memory", pytest.approx(4.8e10 / (32 * 64 + 16)))
    assert roofline.bound_for(_row("cpp", 1, c=1024), CEIL) == ("compute", pytest.approx(COMPUTE / 1024))
    mlp = 2.6e11 / (costs.physics_flops() + costs.MLP_FLOPS)
    assert roofline.bound_for(_row("torch", 1, "mlp"), CEIL) == ("compute", pytest.approx(mlp))  # inference dominates
    # cpp with a policy runs one step per call; fused keeps its block in cache whatever the policy
    assert "memory" in roofline.ceilings_for(_row("cpp", 100, "mlp"), CEIL)
    fused = roofline.ceilings_for(_row("fused", 100, "mlp"), CEIL)
    assert fused["memory"] == pytest.approx(100 * roofline.ceilings_for(_row("fused", 1, "mlp"), CEIL)["memory"])
    assert roofline.bound_for(_row("fused", 100, "mlp"), CEIL)[0] == "compute"
    assert roofline.balance(CEIL) == pytest.approx(2.6e11 / 4.8e10)


def test_measured_ceilings_are_physical():
    """Positive, and the FMA rate below what any core could do (2 FMA units x 16 lanes x 2 flops x
    5 GHz): a rate above it would mean the compiler removed the chains."""
    assert roofline.memory_bandwidth(16 * 2**20) > 1e8
    assert roofline.gemm_steps_per_s(256) > 1e3
    fma = roofline.fma_flops_per_s(2**16)
    assert 1e9 < fma < provenance.cpu_cores() * 2 * 16 * 2 * 5e9


def test_fma_library_counts_its_flops():
    lib = native.library("fma_peak")
    assert lib.fma_peak_flops(2000) == 2 * lib.fma_peak_flops(1000) > 0
    assert lib.fma_peak(10) != lib.fma_peak(1000)  # the chains really run: the result depends on the length


def test_ceiling_rows_round_trip():
    items = roofline.ceiling_items([2**16, 2**12, 2**12])
    assert [i["ceiling"] for i in items] == ["memory", "fma", "gemm", "gemm"]
    assert [i["num_envs"] for i in items[2:]] == [2**12, 2**16]
    assert roofline.ceiling_items() == items[:2]
    rows = [{**i, "value": v} for i, v in zip(items, [4.8e10, 2.6e11, 2e6, 3e6])]
    rows.append({"ceiling": "physics", "state_factor": 1, "compute_factor": 1, "value": 1e9})  # earlier files
    assert roofline.from_rows(rows) == CEIL
    row = roofline.measure_ceiling({"ceiling": "gemm", "num_envs": 64})
    assert row["ceiling"] == "gemm" and row["num_envs"] == 64 and row["value"] > 1e3


def _cache_dir(tmp_path, caches):
    for i, (level, kind, size) in enumerate(caches):
        d = tmp_path / f"index{i}"
        d.mkdir(parents=True)
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    return str(tmp_path)


def test_last_level_cache_from_sysfs(tmp_path):
    read = provenance.last_level_cache_bytes.__wrapped__
    d = _cache_dir(tmp_path / "a", [(1, "Data", "32K"), (1, "Instruction", "32K"), (2, "Unified", "1024K"),
                                    (3, "Unified", "32768K")])
    assert read(d) == 32 * 2**20
    assert read(_cache_dir(tmp_path / "b", [(1, "Data", "48K"), (2, "Unified", "2M")])) == 2 * 2**20
    assert read(str(tmp_path / "none")) is None
    assert provenance.machine_info()["llc_bytes"] == provenance.last_level_cache_bytes()
