"""A saved row timed at least as carefully serves (``harness.data.store``'s module doc): a point
asking for fewer or shorter timed regions than a saved row of the same point is read, not measured;
one asking for more or longer ones is measured."""

from __future__ import annotations

import shutil

import pytest

from studylib.harness import sweep
from studylib.harness.data import provenance
from studylib.harness.sweep import Keying, grid_points, keyed_by, timing_in

COLUMNS = ("impl", "num_envs", "repeats", "min_seconds")
KEYING = Keying(dict, keyed_by(*COLUMNS), str, "throughput", timing=timing_in(COLUMNS))


def _item(n=16, repeats=3, min_seconds=0.1, impl="cpp"):
    return {"impl": impl, "num_envs": n, "repeats": repeats, "min_seconds": min_seconds}


def _measure_into(tmp_path, items, keying=KEYING):
    measured = []

    def fake(item):
        measured.append(item)
        return {**item, "samples_per_s": 100.0 * item["repeats"] * item["min_seconds"]}

    result = sweep.run("t", items, fake, keying, data_dir=tmp_path, progress=False, log=lambda m: None)
    return result, measured


def test_a_more_carefully_timed_row_serves_and_a_less_careful_one_does_not(tmp_path):
    _measure_into(tmp_path, [_item(repeats=5, min_seconds=0.5), _item(n=32, repeats=2, min_seconds=0.05)])
    asked = [_item(repeats=3, min_seconds=0.1), _item(n=32, repeats=3, min_seconds=0.05),
             _item(n=32, repeats=2, min_seconds=0.1), _item(n=32, repeats=2, min_seconds=0.05)]
    result, measured = _measure_into(tmp_path, asked)
    # N = 16: the (5, 0.5) row answers (3, 0.1); N = 32: (2, 0.05) answers neither more repeats nor
    # longer regions, and answers itself
    assert measured == asked[1:3]
    assert [(r["num_envs"], r["repeats"], r["min_seconds"]) for r in result.rows] == [
        (16, 5, 0.5), (32, 3, 0.05), (32, 2, 0.1), (32, 2, 0.05)]
    assert result.reused == 2 and result.measured == 2


def test_the_most_careful_row_serves_and_other_items_never_do(tmp_path):
    _measure_into(tmp_path, [_item(repeats=3, min_seconds=0.2), _item(repeats=5, min_seconds=0.5),
                             _item(impl="jax", repeats=9, min_seconds=9.0)])
    result, measured = _measure_into(tmp_path, [_item(repeats=1, min_seconds=0.01), _item(impl="torch")])
    assert [(r["impl"], r["repeats"], r["min_seconds"]) for r in result.rows] == [("cpp", 5, 0.5), ("torch", 3, 0.1)]
    assert measured == [_item(impl="torch")]  # a row of another implementation serves no point of torch


def test_keys_without_timing_match_exactly(tmp_path):
    untimed = Keying(dict, keyed_by(*COLUMNS), str, "throughput")
    _measure_into(tmp_path, [_item(repeats=5, min_seconds=0.5)], untimed)
    _, measured = _measure_into(tmp_path, [_item()], untimed)
    assert measured == [_item()]


def test_a_snapshot_read_and_a_sweep_of_points_use_the_rule(tmp_path, monkeypatch):
    grid = {"impl": ["cpp"], "num_envs": [8], "steps": [1, 2], "policy": ["none"]}
    saved = sweep.sweep("s", grid_points(grid, repeats=3, min_seconds=0.02), data_dir=tmp_path, progress=False)

    def boom(*a, **k):
        raise AssertionError("a point served by a more carefully timed row was measured")

    monkeypatch.setattr(sweep, "measure", boom)
    cheaper = grid_points(grid, repeats=2, min_seconds=0.01)
    again = sweep.sweep("s", cheaper, data_dir=tmp_path, progress=False)
    assert list(again["samples_per_s"]) == list(saved["samples_per_s"]) and set(again["repeats"]) == {3}
    shutil.copytree(tmp_path / provenance.machine_key(), tmp_path / "another-host")  # another machine's snapshot
    read = sweep.sweep("s", cheaper, data_dir=tmp_path, progress=False, machine="another-host")
    assert list(read["samples_per_s"]) == list(saved["samples_per_s"]) and not read.attrs["skipped"]
    with pytest.raises(AssertionError, match="more carefully timed"):  # longer regions than saved: measured
        sweep.sweep("s", grid_points(grid, repeats=3, min_seconds=0.05), data_dir=tmp_path, progress=False)
