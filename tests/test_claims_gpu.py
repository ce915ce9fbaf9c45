"""The findings' reasons on a GPU machine's rows speak of the GPU: read from the committed GPU
snapshot, whose rows carry device 'cuda' (a reason written for the CPU would say 'the same CPU
cores' of two implementations that both ran on the GPU)."""

from pathlib import Path

import pytest

from studylib.book.pages import machines
from tests.snapshot_cases import CARTPOLE_GPU_SNAPSHOTS, ROOT


@pytest.mark.parametrize("key", CARTPOLE_GPU_SNAPSHOTS)
def test_a_gpu_snapshots_reasons_speak_of_the_gpu(key):
    F = machines.findings_by_machine({key: ROOT / "data" / key}).set_index("key")
    reasons = " ".join(F["reason"])
    assert "CPU cores" not in F.loc["f2_xla_over_torch", "reason"] and "same GPU" in F.loc["f2_xla_over_torch", "reason"]
    assert "on this GPU" in F.loc["f3_xla_k1_to_k1000", "reason"]
    assert "GB/s measured" not in reasons  # the host CPU's roofline bounds nothing on the GPU
    assert "f2_cpu_share_k1" not in F.index or "0%" not in F.loc["f2_cpu_share_k1", "reason"]


@pytest.mark.parametrize("key", CARTPOLE_GPU_SNAPSHOTS)
def test_a_gpu_snapshots_headlines_are_its_rows_ratios(key):
    """F.3's fusion alone and F.1's GPU over gym recomputed from the snapshot's rows by hand."""
    import pandas as pd

    from studylib.harness.data import store

    F = machines.findings_by_machine({key: ROOT / "data" / key}).set_index("key")
    fig8 = pd.DataFrame(store.read(Path(ROOT / "data" / key / "fig8.json"))["rows"])
    cuda = fig8[(fig8["impl"] == "cuda")].pivot_table(index="num_envs", columns="steps", values="samples_per_s")
    assert F.loc["f3_fusion", "ours_value"] == pytest.approx((cuda[1000] / cuda[1]).median(), rel=1e-9)
    fig4 = pd.DataFrame(store.read(Path(ROOT / "data" / key / "fig4.json"))["rows"])
    best = fig4.groupby(["impl", "num_envs"])["samples_per_s"].max().unstack(0)
    gpu = best[["torch", "jax"]].max(axis=1)  # the paper's F.1 is PyTorch and XLA on the GPU
    assert F.loc["f1_gpu_over_gym", "ours_value"] == pytest.approx((gpu / best["gym"]).dropna().max(), rel=1e-9)
