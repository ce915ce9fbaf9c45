"""Measurements that stay true: rows reused only when measured by code of today's semantics
(harness.data.semantics), committed snapshots never rewritten by a build (harness.data.store's local copy),
and ``python -m studylib data check`` (harness.data.snapshots, cli.data): the snapshots, and whether one
serves this machine, posed as a snapshot's host through ``$STUDYLIB_CPUINFO``."""

from __future__ import annotations

import io
import json
import re
import subprocess

import pytest

from studylib.cli import data as data_cli
from studylib.harness.data import identity, provenance, semantics, store
from studylib.harness import sweep
from tests.snapshot_cases import CPU_SNAPSHOTS, ROOT, SNAPSHOTS, cpuinfo_of, machine_json

KEYING = sweep.Keying(dict, sweep.keyed_by("i"), lambda item: f"item {item['i']}", "calibration")
ITEMS = [{"i": 0}, {"i": 1}]


def measure(item):
    return {**item, "value": 10 + item["i"]}


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def test_a_row_of_other_semantics_is_measured_again_and_replaced(tmp_path, monkeypatch):
    log = []
    first = sweep.run("f", ITEMS, measure, KEYING, data_dir=tmp_path, progress=False, log=log.append)
    assert first.measured == 2 and first.reused == 0 and log == ["f: 0 rows reused, 2 measured"]
    again = sweep.run("f", ITEMS, measure, KEYING, data_dir=tmp_path, progress=False, log=log.append)
    assert again.measured == 0 and again.reused == 2 and len(log) == 1  # nothing measured: nothing logged
    monkeypatch.setitem(semantics.VERSIONS, "calibration", semantics.VERSIONS["calibration"] + 1)
    bumped = sweep.run("f", ITEMS, measure, KEYING, data_dir=tmp_path, progress=False, log=log.append)
    why = f"measured by calibration semantics version 1, today's is {semantics.VERSIONS['calibration']}"
    assert bumped.measured == 2 and bumped.reused == 0 and bumped.stale == [why, why]
    assert log[-1] == f"f: 0 rows reused, 2 measured (2 stale: {why})"
    rows = json.loads((tmp_path / provenance.machine_key() / "f.json").read_text())["rows"]
    assert [r["semantics"] for r in rows] == [semantics.stamp("calibration")] * 2  # replaced, not duplicated


def test_staleness_reasons():
    assert semantics.staleness({"semantics": semantics.stamp("throughput")}) == ""
    assert semantics.staleness({}) == "measured before rows recorded their semantics"
    assert "version 0" in semantics.staleness({"semantics": "throughput/0"})
    assert "does not measure" in semantics.staleness({"semantics": "warp/1"})
    assert "in a file of 'profile' rows" in semantics.staleness({"semantics": semantics.stamp("throughput")}, "profile")
    with pytest.raises(KeyError, match="kinds: throughput"):
        sweep.Keying(dict, sweep.keyed_by("i"), str, "nonsense")  # refused where it is made


def test_another_machines_stale_rows_are_left_out_saying_why(tmp_path):
    folder = tmp_path / "elsewhere_1c_nogpu"
    folder.mkdir()
    doc = {"format": store.FORMAT, "sweep": "f", "machine": folder.name, "runs": [], "skipped": [],
           "rows": [{"i": 0, "value": 1.0, "semantics": semantics.stamp("calibration")}, {"i": 1, "value": 2.0}]}
    (folder / "f.json").write_text(json.dumps(doc))
    result = sweep.run("f", ITEMS, measure, KEYING, data_dir=tmp_path, progress=False, machine=folder.name)
    assert [r["i"] for r in result.rows] == [0] and result.measured == 0
    assert result.skipped == [{"i": 1, "reason": "stale on elsewhere_1c_nogpu: measured before rows recorded their "
                                               "semantics", "error": "Stale"}]
    assert store.load("f", data_dir=tmp_path)["i"].tolist() == [0]


@pytest.fixture
def repo_with_snapshot(tmp_path):
    """A git repository whose data/<this machine>/ holds a committed snapshot of one current row."""
    repo = tmp_path / "repo"
    data = repo / "data"
    sweep.run("f", ITEMS[:1], measure, KEYING, data_dir=data, progress=False, log=lambda m: None)
    (repo / ".gitignore").write_text("data/.local/\ndata/**/.*.lock\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "snapshot")
    store.is_tracked.cache_clear()
    return repo


def test_a_build_over_a_committed_snapshot_writes_beside_it(repo_with_snapshot):
    from studylib.book.notes import provenance_sentence

    repo, data = repo_with_snapshot, repo_with_snapshot / "data"
    committed = data / provenance.machine_key()
    before = {p.name: p.read_bytes() for p in committed.iterdir() if not p.name.startswith(".")}
    result = sweep.run("f", ITEMS, measure, KEYING, data_dir=data, progress=False, log=lambda m: None)
    assert result.measured == 1 and result.reused == 1
    assert {p.name: p.read_bytes() for p in committed.iterdir() if not p.name.startswith(".")} == before
    assert _git(repo, "status", "--porcelain") == ""  # the checkout stays clean
    local = data / store.LOCAL / provenance.machine_key()
    assert store.machine_folder(data, provenance.machine_key()) == local
    assert [r["i"] for r in json.loads((local / "f.json").read_text())["rows"]] == [0, 1]
    assert sweep.run("f", ITEMS, measure, KEYING, data_dir=data, progress=False).measured == 0  # read from the copy
    assert store.load("f", data_dir=data)["i"].tolist() == [0, 1]
    assert f"local copy `{local}`" in provenance_sentence("vectorization", data)  # the page says which it shows


def test_a_build_that_measures_nothing_copies_nothing(repo_with_snapshot):
    data = repo_with_snapshot / "data"
    assert sweep.run("f", ITEMS[:1], measure, KEYING, data_dir=data, progress=False).measured == 0
    assert not (data / store.LOCAL).exists()


def _check(data_dir) -> tuple[int, str]:
    out = io.StringIO()
    return data_cli.main(["check", "--data-dir", str(data_dir)], out=out), out.getvalue()


def test_data_check_lists_snapshots_and_fails_on_a_stale_one(tmp_path, monkeypatch):
    sweep.run("f", ITEMS, measure, KEYING, data_dir=tmp_path, progress=False, log=lambda m: None)
    code, text = _check(tmp_path)
    key = provenance.machine_key()
    assert code == 0 and text.startswith(f"{key}: current (not committed); ") and "2 rows" in text
    assert "1 of 1 snapshot(s) current" in text
    info = json.loads((tmp_path / key / "machine.json").read_text())
    assert (info["commit"] or "unknown")[:10] in text and identity.is_complete(info)

    monkeypatch.setitem(semantics.VERSIONS, "calibration", 99)
    code, text = _check(tmp_path)
    assert code == 1 and f"{key}: STALE" in text and "2 of 2 rows stale (2: measured by calibration semantics" in text

    old = tmp_path / "amd-epyc_2c_nogpu"  # a folder named before the identity: the name merges hardware
    old.mkdir()
    (old / "machine.json").write_text(json.dumps({"cpu_model": "AMD EPYC", "cores": 2, "gpu": None}))
    monkeypatch.setitem(semantics.VERSIONS, "calibration", 1)
    code, text = _check(tmp_path)
    assert code == 1 and "amd-epyc_2c_nogpu: STALE" in text and "identity incomplete" in text


def test_data_check_from_the_command_line(tmp_path, capsys):
    from studylib.__main__ import main

    assert main(["data", "check", "--data-dir", str(tmp_path / "absent")]) == 2
    assert main(["data", "frobnicate"]) == 2
    assert main(["data", "check", "--data-dir", str(tmp_path)]) == 0  # an empty folder: nothing stale
    capsys.readouterr()
    assert main(["data", "check", "--machine", "x"]) == 2  # one line, as every other command's bad input
    assert capsys.readouterr().err == "error: python -m studylib data: unrecognized arguments: --machine x\n"
    assert main(["data"]) == 2 and capsys.readouterr().err == "error: python -m studylib data: choose a command: check\n"


def test_data_check_judges_the_committed_snapshot_not_the_local_copy(repo_with_snapshot, monkeypatch):
    """A build on a machine whose committed snapshot went stale measures into the local copy; the
    check still reports the committed snapshot stale (it is what a clone gets), naming the copy."""
    data = repo_with_snapshot / "data"
    monkeypatch.setitem(semantics.VERSIONS, "calibration", semantics.VERSIONS["calibration"] + 1)
    assert sweep.run("f", ITEMS, measure, KEYING, data_dir=data, progress=False, log=lambda m: None).measured == 2
    code, text = _check(data)
    local = data / store.LOCAL / provenance.machine_key()
    assert code == 1 and f"{provenance.machine_key()}: STALE (committed; the builds here read its local copy {local}" in text
    assert "1 of 1 rows stale" in text


@pytest.fixture
def no_measuring(monkeypatch):
    """A check that measures or trains anything fails."""
    import studylib.train
    from studylib.train import chapter

    monkeypatch.setattr(sweep, "_measure_or_skip", lambda *a, **k: pytest.fail(f"measured {a[1]}"))
    monkeypatch.setattr(chapter, "train", lambda run: pytest.fail(f"trained {run}"))
    monkeypatch.setattr(studylib.train, "train_population", lambda *a, **k: pytest.fail("trained a population"))
    from studylib.train.chain import results as robot_results

    monkeypatch.setattr(robot_results, "train_row", lambda run: pytest.fail(f"trained {run}"))


def _pose(tmp_path, monkeypatch, text: str) -> None:
    if provenance.gpu_name():
        pytest.skip("a GPU enters the key (and the plans): no committed snapshot has one")
    (tmp_path / "cpuinfo").write_text(text)
    monkeypatch.setenv("STUDYLIB_CPUINFO", str(tmp_path / "cpuinfo"))
    monkeypatch.delenv("STUDYLIB_PRESET", raising=False)  # what a plain build measures: the default preset


@pytest.mark.parametrize("key", CPU_SNAPSHOTS)  # a GPU host cannot be posed: the GPU stays this machine's
def test_posing_as_a_snapshots_host_serves_it(key, tmp_path, monkeypatch, no_measuring):
    """A cpuinfo file of a committed snapshot's host (its recorded identity, the last-level cache
    on the ``cache size`` line, as Intel's kernel prints it) makes this machine that host: its key
    is the snapshot's folder, whatever machine runs the suite, and ``data check`` says the
    committed snapshot serves it, listing what a build would still measure."""
    _pose(tmp_path, monkeypatch, cpuinfo_of(key))
    assert provenance.machine_key() == key and provenance.machine_info()["cores"] == machine_json(key)["cores"]
    code, text = _check(ROOT / "data")
    assert code == 0 and f"this machine: {key} (posing as the host of $STUDYLIB_CPUINFO={tmp_path / 'cpuinfo'})" in text
    chain = store.read(ROOT / "data" / key / "chain.json")["rows"]
    still = {}  # what a snapshot from before a chapter's data still lacks
    from studylib import book
    from studylib.book.pages import chain as chain_page

    P = book.params("chain", preset="default")
    if all(r.get("episode_rules") is None for r in chain):  # a snapshot from before the chain was an environment
        points = len(chain_page.chain_points(P)[0])
        still.update(chain_predictions=points, chain=points)
    if not (ROOT / "data" / key / "chain_engines.json").exists():  # from before MuJoCo ran the chain at every n
        still["chain_engines"] = len(chain_page.chain_engine_items(P))
    if not (ROOT / "data" / key / "chain_formulations.json").exists():  # from before XLA's formulations were measured
        still["chain_formulations"] = len(P.formulations) * len(P.formulation_links)
    if not (ROOT / "data" / key / "engines.json").exists():  # its engines rows were timed from the reset pose
        from studylib import book
        from studylib.book.pages import engines

        planned = len(engines.engine_items(book.params("engines", preset="default"))[0])
        if not (ROOT / "data" / key / "engine_predictions.json").exists():
            still["engine_predictions"] = planned
        still["engines"] = planned
    if not (ROOT / "data" / key / "training_robot.json").exists():  # from before the robot chapter
        from studylib.train.chain import chapter as robot

        still["training_robot"] = len(robot.params(preset="default").runs())
    calibration = store.read(ROOT / "data" / key / "costmodel_calibration.json")["rows"]
    from studylib.harness.model import calibrate

    saved_keys = {calibrate.KEYING.row_key(r) for r in calibration}
    missing = [i for i in calibrate.items() if calibrate.KEYING.row_key(i) not in saved_keys]
    if missing:  # from before the model's version 2 (gym_mujoco_python_s) or 3 (the host-run policy's timer)
        still["costmodel_calibration"] = len(missing)
    if still:
        assert f"served: partly, by the committed snapshot {key}" in text
        listed = re.search(r"would measure (\d+) rows: (.*)", text)
        assert listed and int(listed[1]) == sum(still.values()), text
        assert dict((f, int(c)) for f, c in (x.rsplit(" ", 1) for x in listed[2].strip().split(", "))) == still
    else:
        assert f"served: yes, by the committed snapshot {key}" in text and "a build at preset 'default' would " \
            "measure none" in text


def test_data_check_says_when_no_snapshot_serves_this_machine(tmp_path, monkeypatch, no_measuring):
    from tests.cpuinfo_cases import ZEN3

    _pose(tmp_path, monkeypatch, ZEN3)  # a host of no committed snapshot
    data = tmp_path / "data"
    data.mkdir()
    code, text = _check(data)
    lines = text.splitlines()
    assert code == 0 and lines[1:3] == ["0 of 0 snapshot(s) current",
                                        (f"this machine: {provenance.machine_key()} (posing as the host of "
                                         f"$STUDYLIB_CPUINFO={tmp_path / 'cpuinfo'})")]
    assert lines[3] == "  served: no (no committed snapshot has this key)"
    assert lines[4].startswith("  a build at preset 'default' would measure ") and "fig4 40" in lines[4]
    assert "training" in lines[4]  # the training runs too, counted, not trained
    assert "the rows of chain, laid out once those are measured (calibration incomplete" in text
    assert list(data.iterdir()) == []  # nothing written


def test_posing_as_another_host_measures_nothing(tmp_path, monkeypatch):
    """Posing as a host (``$STUDYLIB_CPUINFO``), a sweep reads that host's folder and measures
    nothing: this machine's numbers under another host's key would be wrong numbers. The items
    the host's snapshot lacks are listed as not measured on it; no file is written."""
    from studylib.harness import sweep
    from studylib.settings import EnvSettings, MeasurePoint
    from tests.cpuinfo_cases import ZEN3

    _pose(tmp_path, monkeypatch, ZEN3)
    monkeypatch.setattr(sweep, "_measure_or_skip", lambda *a, **k: pytest.fail(f"measured {a[1]}"))
    data = tmp_path / "data"
    data.mkdir()
    points = [MeasurePoint(EnvSettings("cpp", 8), 1, "none", repeats=1, min_seconds=0.01)]
    df = sweep.sweep("posed", points, data_dir=data, progress=False)
    assert len(df) == 0 and sweep.read_only()
    assert [s["reason"] for s in df.attrs["skipped"]] == [f"not measured on {provenance.machine_key()}"]
    assert list(data.iterdir()) == []
    monkeypatch.delenv("STUDYLIB_CPUINFO")
    assert not sweep.read_only()

