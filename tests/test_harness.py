"""Measurement harness: the JSON contract, provenance, sweeps (resume, atomic writes, kill), bad input."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from studylib import MeasurePoint
from studylib.__main__ import main
from studylib.errors import ConfigError, DeviceUnavailableError, InsufficientMemoryError, StudyError
from studylib.harness import measure, sweep
from studylib.harness.data import provenance, store
from studylib.harness.sweep import grid_points
from tests.conftest import default_device

FAST = dict(repeats=2, min_seconds=0.01)
ROW_KEYS = {"impl", "num_envs", "steps", "state_factor", "compute_factor", "policy", "device", "device_name",
            "samples_per_s", "samples_per_s_min", "samples_per_s_max", "repeats", "calls_per_repeat",
            "compile_s", "episodes_finished"}
PROVENANCE_KEYS = {"cpu_model", "cores", "gpu", "os", "python", "packages", "commit", "dirty", "date"}
HUGE_N = 2**45  # far beyond any machine's memory by every impl's estimate_bytes


def _check_row(row, **expected):
    assert ROW_KEYS <= set(row) and set(measure.ROW_KEYS) <= set(row)  # the columns an empty sweep still has
    for k, v in expected.items():
        assert row[k] == v, k
    assert row["samples_per_s_min"] <= row["samples_per_s"] <= row["samples_per_s_max"]
    assert row["samples_per_s"] > 0 and row["calls_per_repeat"] >= 1 and row["compile_s"] >= 0
    assert row["device"] == default_device(row["impl"])  # the device it ran on: a GPU where there is one
    # adaptive: regions are not tiny. The calibration region reached min_seconds; a timed region at
    # the same calls may run faster once warm (seen: 4.8 ms against 10 ms for jax in a CI run), so
    # the bound is a factor 10, which a calibration that stopped early (one call of microseconds)
    # still fails by orders of magnitude
    assert row["seconds_per_repeat"] * 10 >= row["min_seconds"]
    json.dumps(row)  # JSON-serialisable as is


# ---- measure ----------------------------------------------------------------------------------

def test_measure_contract_and_resets_during_measurement():
    row = measure.measure(MeasurePoint.of("cpp", 16, 4, policy="none", **FAST))
    _check_row(row, impl="cpp", num_envs=16, steps=4, policy="none", repeats=2, state_factor=1, compute_factor=1)
    assert row["episodes_finished"] > 0  # envs reset during the timed region: no fixed point
    assert len(row["samples_per_s_all"]) == 2


def test_a_sweep_that_holds_none_of_its_points_still_has_the_rows_columns(tmp_path):
    """Another machine's snapshot without this sweep reads as an empty frame with every row's columns,
    so a chapter's selections and groupings answer "not measured" instead of a KeyError (a GPU
    machine's snapshot that held the chain alone once crashed the findings that way)."""
    (tmp_path / "other-box").mkdir()
    (tmp_path / "other-box" / "machine.json").write_text(json.dumps({"cores": 2}))
    df = sweep.sweep("fig4", [MeasurePoint.of("cpp", 16, 4, **FAST)], data_dir=tmp_path, progress=False,
                     machine="other-box")
    assert df.empty and list(df.columns[:len(measure.ROW_KEYS)]) == list(measure.ROW_KEYS)
    assert df.groupby(["impl", "num_envs"])["samples_per_s"].max().empty


def test_rows_of_an_earlier_state_factor_never_stand_for_todays():
    """Rows measured when S meant S CartPoles have no ``state_layout``: with S > 1 their key is not
    a point's of today (paper §4.2's S), at S = 1 (CartPole-v1 under both meanings) it is."""
    from studylib.settings import point_key

    for s, same in ((1, True), (64, False)):
        point = MeasurePoint.of("cpp", 64, 10, state_factor=s, policy="none")
        old_row = {k: v for k, v in point.flat().items() if k != "state_layout"}
        assert (point_key(old_row) == point.key()) is same
        assert point_key({**old_row, "state_layout": point.flat()["state_layout"]}) == point.key()


def test_measure_jax_compile_timed_separately():
    row = measure.measure(MeasurePoint.of("jax", 8, 3, **FAST))
    _check_row(row, impl="jax", steps=3)
    assert row["compile_s"] > 0  # XLA compile measured on its own, not inside samples_per_s


@pytest.mark.parametrize("kwargs, err", [
    (dict(impl="nope", num_envs=4, steps=1), ConfigError),
    (dict(impl="cpp", num_envs=0, steps=1), ConfigError),
    (dict(impl="cpp", num_envs=4, steps=1.5), ConfigError),
    (dict(impl="cpp", num_envs=4, steps=1, state_factor=-1), ConfigError),
    (dict(impl="cpp", num_envs=4, steps=1, compute_factor="2"), ConfigError),
    (dict(impl="cpp", num_envs=4, steps=1, policy="random"), ConfigError),
    (dict(impl="cpp", num_envs=4, steps=1, repeats=0), ConfigError),
    (dict(impl="cpp", num_envs=4, steps=1, min_seconds=0), ConfigError),
    (dict(impl="torch", num_envs=HUGE_N, steps=1), InsufficientMemoryError),
    (dict(impl="cuda", num_envs=4, steps=1), DeviceUnavailableError),
    (dict(impl="torch", num_envs=4, steps=1, device="cuda"), DeviceUnavailableError),
    (dict(impl="jax", num_envs=4, steps=1, device="cuda"), DeviceUnavailableError),
])
def test_measure_bad_input(kwargs, err):
    from studylib.harness.data.provenance import gpu_name

    if err is DeviceUnavailableError and gpu_name():
        pytest.skip("this machine has a CUDA device")
    with pytest.raises(err):  # bad values when the point is built, the rest before allocating
        measure.measure(MeasurePoint.of(**kwargs))


def test_timing_loop_warms_up_apart_and_grows_regions():
    import time as _time

    from studylib.harness.timing import time_regions

    calls = []

    def call():
        calls.append(1)
        _time.sleep(0.001)
        return 2  # e.g. episodes finished by this call

    t = time_regions(call, repeats=3, min_seconds=0.02)
    assert t.calls > 1 and len(t.seconds) == 3 and all(dt >= 0.02 for dt in t.seconds)
    assert t.counted == 2 * 3 * t.calls  # only the timed regions are counted, not warm-up or calibration
    assert len(calls) > 1 + 3 * t.calls  # warm-up and calibration calls happened besides
    assert 0 < t.warmup_s < min(t.seconds)
    s = t.summary(10)
    assert s["min"] <= s["median"] <= s["max"] and s["all"] == t.rates(10) and len(s["all"]) == 3
    assert t.best_seconds_per_call == min(t.seconds) / t.calls


def test_the_calibrations_last_region_is_the_first_repeat():
    """Calls of at least 1 ms: region(1) after the warm-up calls for ceil(1.2 * 20 ms / its time)
    <= 24 calls (on a loaded machine, where a 1 ms sleep can take several, one more growth step
    may come first); the region that first lasts 20 ms ends the calibration, and that region (its
    calls, warmed up, synchronised) is the first of the three timed, so only two more run."""
    import time as _time

    from studylib.harness.timing import time_regions

    calls, syncs = [], []
    t = time_regions(lambda: calls.append(_time.sleep(0.001)), repeats=3, min_seconds=0.02,
                     sync=lambda: syncs.append(len(calls)))
    assert 1 < t.calls <= 24 and len(t.seconds) == 3
    sizes = [b - a for a, b in zip([0, *syncs], syncs)]  # every region's calls, each synchronised
    assert sum(sizes) == len(calls) and sizes[:2] == [1, 1]  # the warm-up, then region(1)
    first = sizes.index(t.calls)  # the calibration's last region, the first repeat
    growing = sizes[1:first]  # the calibration's regions before its last, each smaller than the next
    # three regions of its calls; six where a stall on a loaded machine had the repeats timed again
    assert sizes[first:] in ([t.calls] * 3, [t.calls] * 6) and growing == sorted(set(growing))


def test_a_stall_in_calibration_does_not_leave_tiny_regions():
    """A calibration region that reaches min_seconds only because one call stalled (here the 2nd
    call ever sleeps 50 ms; the others take microseconds) would fix one call per region: the timed
    regions show it, and the calls are grown and the repeats timed again."""
    import time as _time

    from studylib.harness.timing import time_regions

    calls = []

    def call():
        calls.append(1)
        if len(calls) == 2:  # the calibration's first region
            _time.sleep(0.05)
        return 1

    t = time_regions(call, repeats=3, min_seconds=0.02)
    assert t.calls > 100 and all(dt >= 0.02 / 4 for dt in t.seconds)
    assert t.counted == 3 * t.calls  # only the final timed regions are counted


# ---- provenance --------------------------------------------------------------------------------

def test_provenance_fields():
    info = provenance.machine_info()
    assert PROVENANCE_KEYS <= set(info)
    assert {"numpy", "torch", "jax", "jaxlib", "gymnasium", "cupy"} <= set(info["packages"])
    assert info["cores"] >= 1 and info["python"].count(".") == 2
    assert info["commit"] is None or re.fullmatch(r"[0-9a-f]{40}", info["commit"])
    key = provenance.machine_key()
    assert key == provenance.machine_key() == info["machine_key"]
    assert re.fullmatch(r"[a-z0-9_-]+", key) and ("nogpu" in key) == (info["gpu"] is None)


# ---- sweeps -------------------------------------------------------------------------------------

GRID = {"impl": ["cpp"], "num_envs": [8, 16], "steps": [1, 2], "policy": ["none"]}


def _sweep_file(data_dir, name) -> Path:
    return Path(data_dir) / provenance.machine_key() / f"{name}.json"


def test_sweep_provenance_and_resume(tmp_path, monkeypatch):
    df = sweep.sweep("s1", grid_points(GRID, **FAST), data_dir=tmp_path, progress=False)
    assert len(df) == 4 and set(df["num_envs"]) == {8, 16} and set(df["machine"]) == {provenance.machine_key()}
    path = _sweep_file(tmp_path, "s1")
    doc = json.loads(path.read_text())
    assert doc["format"] == store.FORMAT
    run = doc["runs"][0]
    assert PROVENANCE_KEYS <= set(run["provenance"])
    assert run["parameters"]["grid"]["repeats"] == [2] * 4 and run["parameters"]["points"] == 4
    assert run["parameters"]["grid"]["impl"] == ["cpp"] * 4
    assert (tmp_path / provenance.machine_key() / "machine.json").exists()

    # Rerunning the same sweep measures nothing, returns the same rows and leaves the file as it was.
    def boom(*a, **k):
        raise AssertionError("resumed sweep re-measured a done point")

    before = path.read_bytes()
    monkeypatch.setattr(sweep, "measure", boom)
    again = sweep.sweep("s1", grid_points(GRID, **FAST), data_dir=tmp_path, progress=False)
    assert sorted(again["samples_per_s"]) == sorted(df["samples_per_s"])
    assert path.read_bytes() == before
    doc = json.loads(path.read_text())
    assert len(doc["rows"]) == 4 and len(doc["runs"]) == 1

    # A new point resumes the file: one more run, the old rows kept.
    monkeypatch.undo()
    more = sweep.sweep("s1", grid_points({**GRID, "num_envs": [8, 16, 32]}, **FAST), data_dir=tmp_path, progress=False)
    assert len(more) == 6
    doc = json.loads(path.read_text())
    assert len(doc["rows"]) == 6 and len(doc["runs"]) == 2
    assert sum(r["run_id"] == doc["runs"][0]["run_id"] for r in doc["rows"]) == 4

    loaded = store.load("s1", data_dir=tmp_path)
    assert len(loaded) == 6 and {"machine", "commit", "dirty"} <= set(loaded.columns)


def test_sweep_skips_infeasible_points_saying_why(tmp_path):
    messages = []
    grid = {"impl": ["cpp", "cuda"], "num_envs": [8, HUGE_N], "steps": [1]}
    df = sweep.sweep("s2", grid_points(grid, **FAST), data_dir=tmp_path, progress=False, log=messages.append)
    from studylib.harness.data.provenance import gpu_name

    measured = {(r["impl"], r["num_envs"]) for r in df.to_dict("records")}
    assert ("cpp", 8) in measured and ("cpp", HUGE_N) not in measured
    reasons = {(s["impl"], s["num_envs"]): s["reason"] for s in df.attrs["skipped"]}
    assert "memory" in reasons[("cpp", HUGE_N)]
    if not gpu_name():
        assert "no CUDA device" in reasons[("cuda", 8)]
    assert len(messages) == len(reasons) + 1 and all(m.startswith("skipped ") for m in messages[:-1])
    assert messages[-1] == "s2: 0 rows reused, 1 measured"  # the run's one line on what it reused
    assert len(store.load_skipped("s2", data_dir=tmp_path)) == len(reasons)


def test_skipped_point_is_retried_without_rewriting_the_file(tmp_path):
    from studylib.harness.data.provenance import gpu_name

    messages = []
    grid = {"impl": ["cpp"], "num_envs": [HUGE_N], "steps": [1]}
    first = sweep.sweep("s3", grid_points(grid, **FAST), data_dir=tmp_path, progress=False, log=messages.append)
    path = _sweep_file(tmp_path, "s3")
    before = path.read_bytes()
    again = sweep.sweep("s3", grid_points(grid, **FAST), data_dir=tmp_path, progress=False, log=messages.append)
    assert len(first) == len(again) == 0 and len(messages) == 2  # checked again, refused again
    [a], [b] = ([s["reason"] for s in r.attrs["skipped"]] for r in (again, first))
    assert sweep.same_refusal(a, b) and "memory" in a  # the memory available may have moved between the two
    assert path.read_bytes() == before  # the same refusal changes nothing
    assert not sweep.same_refusal(a, a.replace("memory", "time"))  # another reason is not the same refusal
    assert len(json.loads(before)["runs"]) == 1


LEGACY = {
    "p.json": {"format": "studylib-profile/1", "runs": [{"provenance": {"commit": "abc"}, "todo": {}}],
               "rows": [{"impl": "jax", "num_envs": 16, "steps": 1, "total_s": 1.0}]},
    "r.json": {"format": "studylib-roofline/1", "machine": {"commit": "abc"}, "memory_bytes_per_s": 5e10,
               "physics_steps_per_s": [{"state_factor": 1, "compute_factor": 1, "steps_per_s": 1e9}],
               "gemm_steps_per_s": [{"num_envs": 1024, "steps_per_s": 2e7}]},
}


def test_earlier_formats_are_read_and_resumed(tmp_path):
    from studylib.harness.model import roofline

    folder = tmp_path / provenance.machine_key()
    folder.mkdir()
    for name, doc in LEGACY.items():
        (folder / name).write_text(json.dumps(doc))
    doc = store.read(folder / "p.json")
    assert doc["format"] == store.FORMAT and doc["rows"] == LEGACY["p.json"]["rows"] and doc["skipped"] == []
    ceil = roofline.from_rows(store.read(folder / "r.json")["rows"])
    assert ceil == {"memory_bytes_per_s": 5e10, "fma_flops_per_s": None, "gemm_steps_per_s": {1024: 2e7}}  # physics: no longer a ceiling

    # resuming an earlier file: its rows are found by key but carry no semantics stamp, so they are
    # stale and measured again (replaced, not duplicated); the new rows are in the one format
    keying = sweep.Keying(dict, sweep.keyed_by("impl", "num_envs", "steps"), str, "throughput")
    items = [{"impl": "jax", "num_envs": 16, "steps": k} for k in (1, 2)]
    measured, log = [], []

    def fake(item):
        measured.append(item)
        return {**item, "total_s": 2.0}

    assert store.load("p", data_dir=tmp_path).empty  # a stale row is not loaded as a measurement
    result = sweep.run("p", items, fake, keying, data_dir=tmp_path, progress=False, log=log.append)
    assert measured == items and [r["total_s"] for r in result.rows] == [2.0, 2.0]
    assert result.reused == 0 and result.stale == ["measured before rows recorded their semantics"]
    assert log == ["p: 0 rows reused, 2 measured (1 stale: measured before rows recorded their semantics)"]
    on_disk = json.loads((folder / "p.json").read_text())
    assert on_disk["format"] == store.FORMAT and len(on_disk["rows"]) == 2 and len(on_disk["runs"]) == 2
    assert {r["semantics"] for r in on_disk["rows"]} == {"throughput/1"}
    assert store.load("p", data_dir=tmp_path)["commit"].tolist() == [on_disk["runs"][1]["provenance"]["commit"]] * 2
    with pytest.raises(store.DataDirError, match="not a studylib data file"):
        (folder / "x.json").write_text('{"format": "other/1"}')
        store.read(folder / "x.json")


def test_atomic_write_keeps_old_file_on_failure(tmp_path, monkeypatch):
    path = tmp_path / "x.json"
    store.atomic_write_json(path, {"a": 1})

    def broken_dump(obj, f, **kw):
        f.write('{"a": 2, "half')
        raise OSError("disk full")

    monkeypatch.setattr(store.json, "dump", broken_dump)
    with pytest.raises(OSError):
        store.atomic_write_json(path, {"a": 2})
    assert json.loads(path.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]  # no temporary left behind


def test_sweep_killed_midway_leaves_valid_file_and_resumes(tmp_path):
    grid = {"impl": ["cpp"], "num_envs": [8, 16, 32, 64], "steps": [1, 2, 3], "policy": ["none"]}
    script = textwrap.dedent(f"""
        from studylib.harness.sweep import grid_points, sweep
        sweep("killed", grid_points({grid!r}, repeats=3, min_seconds=0.05), data_dir={str(tmp_path)!r},
              progress=False)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    path = _sweep_file(tmp_path, "killed")
    deadline = time.monotonic() + 40
    try:
        while time.monotonic() < deadline:
            if path.exists() and json.loads(path.read_text())["rows"]:
                break
            assert proc.poll() is None, proc.stderr.read().decode()
            time.sleep(0.02)
        else:
            pytest.fail("the sweep wrote no point in time")
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL

    doc = json.loads(path.read_text())  # parses: nothing half-written
    first = doc["rows"]
    assert 1 <= len(first) < 12
    first_run = doc["runs"][0]["run_id"]

    df = sweep.sweep("killed", grid_points(grid, repeats=3, min_seconds=0.05), data_dir=tmp_path, progress=False)
    assert len(df) == 12
    doc = json.loads(path.read_text())
    assert len(doc["rows"]) == 12  # no duplicates
    assert sum(r["run_id"] == first_run for r in doc["rows"]) == len(first)  # done points not redone
    assert len(store.load("killed", data_dir=tmp_path)) == 12


def test_load_merges_machines(tmp_path):
    sweep.sweep("m", grid_points({"impl": ["cpp"], "num_envs": [8], "steps": [1]}, **FAST), data_dir=tmp_path,
                progress=False)
    here = provenance.machine_key()
    other = tmp_path / "other-machine_64c_some-gpu"
    other.mkdir()
    (other / "m.json").write_text((tmp_path / here / "m.json").read_text())
    df = store.load("m", data_dir=tmp_path)
    assert sorted(df["machine"]) == sorted([here, other.name])
    assert len(store.load("m", data_dir=tmp_path, machine=here)) == 1
    with pytest.raises(ConfigError):
        store.load("absent", data_dir=tmp_path)


def test_sweep_bad_grid_and_unwritable_folder(tmp_path):
    with pytest.raises(ConfigError, match="valid: impl"):
        grid_points({"impl": ["cpp"], "num_envs": [8], "steps": [1], "color": ["red"]})
    with pytest.raises(ConfigError):
        grid_points({"impl": ["cpp"], "num_envs": [8.0], "steps": [1]})
    with pytest.raises(ConfigError):
        sweep.sweep("../escape", grid_points(GRID), data_dir=tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(store.DataDirError, match="not writable"):
        sweep.sweep("g", grid_points(GRID), data_dir=blocker / "data")
    assert not list(tmp_path.glob("**/*.json"))  # nothing written anywhere


def test_corrupt_sweep_file_is_refused_not_overwritten(tmp_path):
    folder = tmp_path / provenance.machine_key()
    folder.mkdir()
    (folder / "c.json").write_text('{"rows": [')
    with pytest.raises(StudyError, match="not valid JSON"):
        sweep.sweep("c", grid_points(GRID, **FAST), data_dir=tmp_path, progress=False)
    assert (folder / "c.json").read_text() == '{"rows": ['


# ---- CLI (the same code) -------------------------------------------------------------------------

def test_cli_bench_json(capsys):
    rc = main(["bench", "--impl", "cpp,torch", "--num-envs", "2^3", "--steps", "1,2", "--policy", "none",
               "--repeats", "2", "--min-seconds", "0.01", "--json"])
    out = capsys.readouterr().out.strip().splitlines()
    assert rc == 0 and len(out) == 4
    rows = [json.loads(line) for line in out]
    for row in rows:
        _check_row(row, num_envs=8, policy="none", repeats=2)
    assert {(r["impl"], r["steps"]) for r in rows} == {("cpp", 1), ("cpp", 2), ("torch", 1), ("torch", 2)}


def test_cli_bench_table(capsys):
    rc = main(["bench", "--impl", "cpp", "--num-envs", "8", "--steps", "2", "--repeats", "1", "--min-seconds", "0.01"])
    out = capsys.readouterr().out
    assert rc == 0 and "samples/s" in out and "cpp" in out


def test_cli_sweep_writes_and_resumes(tmp_path, capsys):
    args = ["sweep", "cli", "--impl", "cpp", "--num-envs", "2^3..2^4", "--steps", "1", "--repeats", "1",
            "--min-seconds", "0.01", "--data-dir", str(tmp_path), "--no-progress"]
    assert main(args) == 0
    assert main(args + ["--json"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len([json.loads(l) for l in lines if l.startswith("{")]) == 2
    assert len(json.loads(_sweep_file(tmp_path, "cli").read_text())["rows"]) == 2


BAD = [
    (["bench", "--impl", "nope", "--num-envs", "8", "--steps", "1"], "valid: gym, cpp, torch, jax, cuda"),
    (["bench", "--impl", "cpp", "--num-envs", "1.5", "--steps", "1"], "positive integer"),
    (["bench", "--impl", "cpp", "--num-envs", "0", "--steps", "1"], "positive integer"),
    (["bench", "--impl", "cpp", "--num-envs", "8", "--steps", "-2"], "positive integer"),
    (["bench", "--impl", "cpp", "--num-envs", "8", "--steps", "x"], "positive integer"),
    (["bench", "--impl", "cpp", "--num-envs", "8", "--steps", "1", "--state-factor", "0"], "positive integer"),
    (["bench", "--impl", "cpp", "--num-envs", "8", "--steps", "1", "--compute-factor", "2.5"], "positive integer"),
    (["bench", "--impl", "cpp", "--num-envs", "8", "--steps", "1", "--repeats", "0"], "positive integer"),
    (["bench", "--impl", "cpp", "--num-envs", "8", "--steps", "1", "--policy", "greedy"], "valid: mlp, none"),
    (["bench", "--impl", "torch", "--num-envs", "8", "--steps", "1", "--device", "cuda"], "no CUDA device"),
    (["bench", "--impl", "cuda", "--num-envs", "8", "--steps", "1"], "no CUDA device"),
    (["bench", "--impl", "cpp", "--num-envs", "8", "--steps", "1", "--device", "tpu"], "valid: cpu, cuda"),
    (["bench", "--impl", "torch", "--num-envs", "2^45", "--steps", "1"], "memory"),
    (["bench", "--impl", "cpp", "--num-envs", "8"], "required"),
    (["bench", "--impl", "cpp", "--num-envs", "8", "--steps", "1", "--bogus"], "unrecognized"),
    (["frobnicate"], "invalid choice"),
    ([], "choose a command"),
    (["profile", "--impl", "jax", "--num-envs", "8", "--steps", "0"], "positive integer"),
    (["sweep", "bad/name", "--impl", "cpp", "--num-envs", "8", "--steps", "1"], "sweep name"),
]


@pytest.mark.parametrize("argv, message", BAD, ids=[" ".join(a) or "empty" for a, _ in BAD])
def test_cli_bad_input_one_line_exit_2(argv, message, capsys, tmp_path, monkeypatch):
    from studylib.harness.data.provenance import gpu_name

    if "no CUDA device" in message and gpu_name():
        pytest.skip("this machine has a CUDA device")
    monkeypatch.chdir(tmp_path)
    rc = main(argv)
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert rc == 2
    assert len(err.splitlines()) == 1 and err.startswith("error:") and "Traceback" not in err
    assert message in err
    assert captured.out == ""
    assert not list(tmp_path.iterdir())  # nothing written (no data/ folder)


def test_cli_unwritable_data_dir(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    rc = main(["sweep", "x", "--impl", "cpp", "--num-envs", "8", "--steps", "1", "--data-dir", str(blocker / "d")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "not writable" in err


def test_cli_subprocess_no_traceback():
    proc = subprocess.run([sys.executable, "-m", "studylib", "bench", "--impl", "jax", "--num-envs", "-4",
                           "--steps", "1"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    lines = [l for l in proc.stderr.splitlines() if not l.startswith("USDT")]
    assert len(lines) == 1 and "Traceback" not in proc.stderr and "positive integer" in lines[0]
