"""The "Across machines" page's helpers (``studylib.book.pages.machines``): which machine folders it finds,
their provenance, and F.1–F.4 read from each snapshot without measuring. The page itself executes
with the other chapters (tests/test_book.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from studylib.book.pages import machines
from studylib.book import presets
from studylib.harness.data import provenance, store
from studylib.harness import sweep

from tests.snapshot_cases import ROOT, SNAPSHOT  # the complete default-preset snapshot

TWIN = "twin-machine_2c_nogpu"  # a copy of the committed snapshot under another key


def _snapshots(root: Path) -> dict:
    return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("STUDYLIB_DATA_DIR", str(tmp_path))
    shutil.copytree(ROOT / "data" / SNAPSHOT, tmp_path / TWIN)
    (tmp_path / "no-machine-json").mkdir()  # not a machine folder
    return tmp_path


def test_machine_folders_are_the_data_folder_then_the_repository(data_dir):
    folders = presets.machine_folders()
    assert folders[TWIN] == data_dir / TWIN and folders[SNAPSHOT] == ROOT / "data" / SNAPSHOT
    assert list(folders)[0] == TWIN and "no-machine-json" not in folders
    shutil.copytree(ROOT / "data" / SNAPSHOT, data_dir / SNAPSHOT)
    assert presets.machine_folders()[SNAPSHOT] == data_dir / SNAPSHOT  # the build's data folder first


def test_provenance_of_each_machine(data_dir):
    table = machines.provenance(presets.machine_folders()).set_index("machine")
    info = json.loads((ROOT / "data" / SNAPSHOT / "machine.json").read_text())
    row = table.loc[SNAPSHOT]
    assert row["cpu"] == info["cpu_model"] and row["cores"] == info["cores"] and row["gpu"] == "none"
    assert info["commit"][:10] in row["commits"] and row["torch"] == info["packages"]["torch"]
    assert row["points"] == sum(len(store.read(p)["rows"]) for p in (ROOT / "data" / SNAPSHOT).glob("*.json")
                                if p.name != "machine.json")  # earlier formats read as the one format
    assert bool(row["this build"]) == (SNAPSHOT == provenance.machine_key())


def test_findings_of_every_machine_read_without_measuring(data_dir, monkeypatch):
    def no_measuring(*args, **kwargs):
        raise AssertionError("the Across machines page measured")

    monkeypatch.setattr(sweep, "_measure_or_skip", no_measuring)
    before = _snapshots(data_dir) | _snapshots(ROOT / "data")
    folders = {k: v for k, v in presets.machine_folders().items() if k in (SNAPSHOT, TWIN)}
    assert machines.best_preset(SNAPSHOT, folders[SNAPSHOT]) == ("default", 1.0)  # measured with `default`
    F = machines.findings_by_machine(folders)
    assert set(F["machine"]) == {SNAPSHOT, TWIN} and set(F["preset"]) == {"default"}
    assert {"F.1", "F.2", "F.3", "F.4"} <= set(F["finding"])
    assert F["paper_value"].notna().all() and (F["ours_value"] > 0).all()
    by = {m: F[F["machine"] == m].reset_index(drop=True) for m in (SNAPSHOT, TWIN)}
    assert by[SNAPSHOT]["ours"].tolist() == by[TWIN]["ours"].tolist()  # the same data, the same numbers
    assert _snapshots(data_dir) | _snapshots(ROOT / "data") == before  # nothing written


def test_verdicts_side_by_side_mark_differences(data_dir):
    """One row per comparison, one column per machine; a machine whose snapshot gives another verdict
    is marked as differing, one that measured nothing of it is "—"."""
    folders = {k: v for k, v in presets.machine_folders().items() if k in (SNAPSHOT, TWIN)}
    F = machines.findings_by_machine(folders)
    V = machines.verdicts_by_machine(F)
    assert V["key"].is_unique and set(V["key"]) == set(F["key"]) and {SNAPSHOT, TWIN} <= set(V.columns)
    assert (V["differs"] == machines.SAME).all()  # the same data
    flipped = F["key"].iloc[0]
    changed = F.copy()
    mask = (changed["machine"] == TWIN) & (changed["key"] == flipped)
    changed.loc[mask, "verdict"] = "reproduced" if F.loc[mask, "verdict"].iloc[0] != "reproduced" else "partly reproduced"
    changed = changed[(changed["machine"] == SNAPSHOT) | (changed["key"] != F["key"].iloc[-1])]
    V = machines.verdicts_by_machine(changed).set_index("key")
    assert V.loc[flipped, "differs"] == machines.DIFFERS and V.loc[flipped, TWIN].startswith(
        changed.loc[mask, "verdict"].iloc[0])
    assert V.loc[F["key"].iloc[-1], "differs"] == machines.ONE_MACHINE and V.loc[F["key"].iloc[-1], TWIN] == "—"
    assert (V.drop(index=[flipped, F["key"].iloc[-1]])["differs"] == machines.SAME).all()


def _chain_row(impl, links, num_envs, steps, rate, policy="none", device="cuda"):
    return {"impl": impl, "links": links, "num_envs": num_envs, "steps": steps, "policy": policy, "device": device,
            "samples_per_s": rate}


def _gpu_box(tmp_path) -> Path:
    """A GPU machine's folder holding chain rows: cuda, jax and torch on its GPU, and host rows."""
    folder = tmp_path / "gpu-box"
    folder.mkdir()
    rows = [_chain_row("cuda", n, 4096, k, r) for n, k, r in
            [(1, 1, 1e7), (1, 100, 4e8), (2, 1, 8e6), (2, 100, 2e8), (4, 1, 5e6), (4, 100, 5e7), (16, 1, 1e6)]]
    rows += [_chain_row("jax", n, 4096, k, r) for n, k, r in [(1, 1, 2e7), (1, 100, 1e8), (2, 100, 2.5e7), (4, 100, 1e6)]]
    rows += [_chain_row("torch", 1, 4096, 100, 1e6), _chain_row("cuda", 1, 4096, 100, 3e6, policy="mlp"),
             _chain_row("cpp", 1, 4096, 100, 1e9, device="cpu"),  # the host's: not a GPU row
             _chain_row("jax", 1, 256, 100, 5e5, device="cpu")]
    (folder / "chain.json").write_text(json.dumps({"format": "studylib-sweep/1", "sweep": "chain", "runs": [],
                                                   "rows": rows}))
    (folder / "machine.json").write_text(json.dumps({"gpu": "Some GPU", "cores": 16}))
    return folder


def test_the_chain_on_a_gpu_sets_cuda_beside_jax_and_torch_at_each_point(tmp_path):
    folder = _gpu_box(tmp_path)
    frame = machines.chain_on_gpu({"gpu-box": folder, "cpu-box": tmp_path / "none"}).set_index(["links", "steps"])
    assert list(frame.columns[:1]) == ["machine"] and set(frame["machine"]) == {"gpu-box"}
    one = frame.loc[(1, 100)]
    assert (one["cuda"], one["jax"], one["torch"], one["cuda with the MLP"]) == (4e8, 1e8, 1e6, 3e6)
    assert one["cuda / jax"] == 4.0 and one["cuda / torch"] == 400.0 and one["cuda K gain"] == 40.0
    assert frame.loc[(1, 1), "cuda / jax"] == 0.5 and frame.loc[(1, 1), "cuda K gain"] == 1.0
    assert frame.loc[(16, 1), "jax"] != frame.loc[(16, 1), "jax"]  # not measured: NaN, no ratio made up
    assert one["jax formulation"] == "aba_unrolled" and frame.loc[(4, 100), "jax formulation"] == "aba"
    (key, line), = machines.chain_gpu_summary(frame.reset_index()).items()
    assert key == "gpu-box"
    # K = 100 at N = 4096, split by jax's formulation, each n named; cuda's K gain over every n there
    assert "K = 100" in line and "`aba_unrolled` formulation, 4× to 8× (n = 1: 4×, n = 2: 8×)" in line
    assert "`aba` formulation, 50× to 50× (n = 4: 50×)" in line
    assert "from K = 1 to K = 100 there: 10× to 40× (n = 1: 40×, n = 2: 25×, n = 4: 10×)" in line
    assert machines.chain_on_gpu({}).empty and machines.chain_gpu_summary(machines.chain_on_gpu({})) == {}


def test_the_first_page_tells_each_gpus_robot_result(tmp_path):
    """The introduction's machines sentence (overview.machines_text): a GPU snapshot without CartPole
    sweeps says so, then gives the chain's cuda-over-jax summary of that machine; this build's own
    machine is not repeated there."""
    from studylib.book.pages import overview

    folders = {"gpu-box": _gpu_box(tmp_path)}
    text = overview.machines_text(folders, this="cpu-box")
    assert "**1** machines' measurements" in text and "Some GPU (`gpu-box`) holds no F.1 or F.3 sweep of CartPole" in text
    assert "The robot on that GPU" in text and machines.chain_gpu_summary(machines.chain_on_gpu(folders))["gpu-box"] in text
    assert "The robot" not in overview.machines_text(folders, this="gpu-box")


def test_a_chapter_asked_for_a_snapshot_that_lacks_it_refuses_in_one_line(tmp_path, monkeypatch):
    """book.params, as a chapter page calls it with ``machine``: a snapshot holding none of the
    chapter's own files is refused in one line naming them (the pages crashed deep inside on such
    GPU snapshots); a file another chapter writes too (beyond_roofline.json) does not count as the
    chapter's; a chapter the snapshot holds resolves."""
    from studylib import book
    from studylib.errors import ConfigError

    monkeypatch.setenv("STUDYLIB_DATA_DIR", str(tmp_path))
    folder = _gpu_box(tmp_path)  # chain.json alone
    (folder / "beyond_roofline.json").write_text("{}")
    assert book.params("chain", preset="default", machine="gpu-box").machine == "gpu-box"
    for chapter, files in (("vectorization", "fig4.json"), ("beyond", "beyond.json"),
                           ("complexity", "fig9.json"), ("engines", "engine_predictions.json, engines.json")):
        with pytest.raises(ConfigError) as e:
            book.params(chapter, preset="default", machine="gpu-box")
        assert f"holds none of the {chapter} chapter's files ({files})" in str(e.value) and "\n" not in str(e.value)
    assert book.params("vectorization", preset="default").machine is None  # this machine: measured, never refused
