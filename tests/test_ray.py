"""Sweeps on a real Ray cluster (``studylib.harness.ray_engine``).

One local cluster for the whole session (2 CPUs, one ``studylib_slot``; its start takes about
3 s on 2 shared cores, printed with ``-s``), which the command line reuses in-process: a sweep
through it gives the rows and provenance a sweep without Ray gives; the book's plans measured
through it are what a build then only reads; a worker killed in the middle of a point loses only
that point, retried or resumed, each point saved exactly once. A second, slot-less cluster
(started by a subprocess) and an unreachable address are refused in one line, writing nothing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import ray

from studylib import book
from studylib.__main__ import main
from studylib.harness.data import provenance, store
from studylib.harness import ray_engine, sweep
from studylib.harness.sweep import Keying, keyed_by
from studylib.settings import point_key

ROOT = Path(__file__).resolve().parent.parent
GRID = ["--impl", "cpp", "--num-envs", "8,16", "--steps", "1,2", "--policy", "none", "--repeats", "1",
        "--min-seconds", "0.01", "--no-progress"]


@pytest.fixture(scope="module")
def cluster():
    """A local Ray cluster for this module; its workers import this checkout (PYTHONPATH). Shut
    down after the module: a Ray driver left connected for the rest of the session was seen to hang
    a later vmapped XLA program (test_train_population's JAX test) in the same process."""
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *([old] if old else [])])
    t0 = time.monotonic()
    ray.init(num_cpus=2, resources={ray_engine.SLOT: 1}, include_dashboard=False, log_to_driver=False,
             logging_level="ERROR")
    print(f"\nRay cluster started in {time.monotonic() - t0:.1f} s")
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()
        if old is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = old


def _without_date(info: dict) -> dict:
    return {k: v for k, v in info.items() if k != "date"}


def test_sweep_through_ray_matches_a_local_sweep(cluster, tmp_path, monkeypatch):
    here = provenance.machine_key()
    assert main(["sweep", "s", *GRID, "--data-dir", str(tmp_path / "local")]) == 0

    def measured_in_the_driver(*args, **kwargs):
        raise AssertionError("a --ray sweep measured in the driver")

    monkeypatch.setattr(sweep, "_run_here", measured_in_the_driver)
    assert main(["sweep", "s", *GRID, "--data-dir", str(tmp_path / "ray"), "--ray", cluster]) == 0
    local = json.loads((tmp_path / "local" / here / "s.json").read_text())
    path = tmp_path / "ray" / here / "s.json"
    remote = json.loads(path.read_text())

    assert len(remote["rows"]) == 4
    assert sorted(map(point_key, remote["rows"])) == sorted(map(point_key, local["rows"]))  # the same points
    assert [sorted(r) for r in remote["rows"]] == [sorted(r) for r in local["rows"]]  # the same columns
    assert {r["machine"] for r in remote["rows"]} == {here}  # measured on this machine's node
    # The same provenance, torch's thread count included: Ray's OMP_NUM_THREADS=1 does not reach the timing.
    assert len(remote["runs"]) == 1 and {r["run_id"] for r in remote["rows"]} == {remote["runs"][0]["run_id"]}
    assert _without_date(remote["runs"][0]["provenance"]) == _without_date(local["runs"][0]["provenance"])
    assert remote["runs"][0]["provenance"]["torch_threads"] == provenance.machine_info()["torch_threads"]

    before = path.read_bytes()  # resumed through Ray: nothing measured, nothing written
    assert main(["sweep", "s", *GRID, "--data-dir", str(tmp_path / "ray"), "--ray", cluster]) == 0
    assert path.read_bytes() == before
    # nor where the points ask for shorter regions: the rows timed more carefully answer them
    cheaper = [*GRID[:GRID.index("--min-seconds") + 1], "0.005", *GRID[GRID.index("--min-seconds") + 2:]]
    assert main(["sweep", "s", *cheaper, "--data-dir", str(tmp_path / "ray"), "--ray", cluster]) == 0
    assert path.read_bytes() == before


def test_measure_through_ray_leaves_nothing_for_the_book(cluster, tmp_path, capsys):
    """The book's plans (a sweep and the profiler's own items) measured on the cluster are all a
    chapter at the same preset then asks for."""
    data = tmp_path / "data"
    assert main(["measure", "--chapters", "overheads", "--preset", "tiny", "--data-dir", str(data), "--ray",
                 cluster, "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "fig4_k:" in out and "fig56_profile:" in out and "0 lost" in out
    folder = data / provenance.machine_key()
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    P = book.params("overheads", preset="tiny", data_dir=data)
    with sweep.session(engine=sweep.READ_ONLY):
        df, prof = book.overheads_data(P), book.profile_data(P)
    assert len(df) == 8 and not df.attrs["skipped"] and len(prof) == 4
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


# ---- a worker killed in the middle of a point ------------------------------------------------------

KEYING = Keying(lambda item: {"i": item["i"]}, keyed_by("i"), lambda item: f"item {item['i']}", "calibration")


def _sleepy(item: dict) -> dict:
    """A stand-in measurement run on a Ray worker: item 1 waits, to be killed, until marked killed."""
    marks = Path(item["marks"])
    (marks / f"started-{item['i']}-{os.getpid()}").touch()
    if item["i"] == 1 and not (marks / "killed").exists():
        time.sleep(120)
    return {"i": item["i"], "pid": os.getpid(), "machine": provenance.machine_key()}


def _kill_item_1(marks: Path, out: list) -> None:
    """SIGKILL the worker process that runs item 1, as soon as it starts."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        started = list(marks.glob("started-1-*"))
        if started:
            pid = int(started[0].name.rsplit("-", 1)[1])
            (marks / "killed").touch()
            os.kill(pid, signal.SIGKILL)
            out.append(pid)
            return
        time.sleep(0.05)


def _sweep_killing_item_1(cluster, name, data_dir, marks, max_retries):
    marks.mkdir()
    items = [{"i": i, "marks": str(marks)} for i in range(3)]
    killed, logs = [], []
    killer = threading.Thread(target=_kill_item_1, args=(marks, killed))
    killer.start()
    try:
        with ray_engine.connect(cluster, max_retries=max_retries) as engine, sweep.session(engine=engine):
            result = sweep.run(name, items, _sleepy, KEYING, data_dir=data_dir, progress=False, log=logs.append)
    finally:
        killer.join()
    assert killed, "item 1 never started"
    return items, result, killed[0], logs


def _saved(data_dir, name) -> dict:
    return json.loads((Path(data_dir) / provenance.machine_key() / f"{name}.json").read_text())  # valid JSON


def test_killed_worker_loses_only_its_point(cluster, tmp_path):
    # Without retries the killed point is lost, reported, and measured by the next run.
    items, result, killed, logs = _sweep_killing_item_1(cluster, "lost", tmp_path, tmp_path / "a", max_retries=0)
    assert [r["i"] for r in result.rows] == [0, 2] and result.lost == [items[1]] and result.measured == 2
    assert any(line.startswith("lost item 1") for line in logs)
    first = _saved(tmp_path, "lost")
    assert sorted(r["i"] for r in first["rows"]) == [0, 2]
    with ray_engine.connect(cluster) as engine, sweep.session(engine=engine):
        again = sweep.run("lost", items, _sleepy, KEYING, data_dir=tmp_path, progress=False)
    assert [r["i"] for r in again.rows] == [0, 1, 2] and again.measured == 1 and not again.lost
    doc = _saved(tmp_path, "lost")
    assert sorted(r["i"] for r in doc["rows"]) == [0, 1, 2]  # every point exactly once
    assert doc["rows"][:2] == first["rows"]  # what was saved stays as it was

    # With retries Ray runs the killed point again on a new worker: the sweep finishes in one go.
    items, result, killed, logs = _sweep_killing_item_1(cluster, "retried", tmp_path, tmp_path / "b", max_retries=1)
    assert [r["i"] for r in result.rows] == [0, 1, 2] and not result.lost and result.measured == 3
    assert result.rows[1]["pid"] != killed and len(list((tmp_path / "b").glob("started-1-*"))) == 2
    assert sorted(r["i"] for r in _saved(tmp_path, "retried")["rows"]) == [0, 1, 2]


# ---- clusters that cannot measure ------------------------------------------------------------------

def _one_error_line(err: str) -> str:
    lines = [line for line in err.strip().splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("address, message", [("127.0.0.1:9", "cannot reach a Ray cluster at 127.0.0.1:9"),
                                              ("no-port-here", "takes 'local' or a cluster's HOST:PORT")])
def test_unreachable_address_is_one_line(cluster, address, message, tmp_path, capsys):
    assert main(["sweep", "x", *GRID, "--data-dir", str(tmp_path), "--ray", address]) == 2
    assert message in _one_error_line(capsys.readouterr().err)
    assert not list(tmp_path.iterdir())  # nothing written


def test_cluster_without_the_slot_is_one_line(tmp_path):
    """A second cluster, without the slot resource: its own process starts it and runs the CLI on it."""
    script = textwrap.dedent(f"""
        import sys
        import ray
        from studylib.__main__ import main
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
        rc = main(["sweep", "x", *{GRID!r}, "--data-dir", {str(tmp_path)!r},
                   "--ray", ray.get_runtime_context().gcs_address])
        ray.shutdown()
        sys.exit(rc)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 2, r.stderr[-3000:]
    assert "has no node with the 'studylib_slot' resource" in _one_error_line(r.stderr)
    assert not list(tmp_path.iterdir())


# ---- the store: rows measured elsewhere ------------------------------------------------------------

def test_rows_keep_the_provenance_of_the_node_that_measured_them(tmp_path):
    here = provenance.machine_info()
    other_commit = {**here, "commit": "0" * 40}
    f = store.DataFile(tmp_path, "p", keyed_by("i"), kind="calibration")
    with f.locked({"points": 3}):
        f.add_row((0,), {"i": 0})  # this process
        f.add_row((1,), {"i": 1}, info=other_commit)  # a node of this machine kind at another commit
        f.add_row((2,), {"i": 2}, info={**here, "date": "2000-01-01"})  # this provenance, another date: same run
        with pytest.raises(RuntimeError, match="cannot go into"):
            f.add_row((3,), {"i": 3}, info={**here, "machine_key": "elsewhere_1c_nogpu"})
    doc = json.loads(f.path.read_text())
    commit_of = {r["run_id"]: r["provenance"]["commit"] for r in doc["runs"]}
    assert len(doc["runs"]) == 2 and [commit_of[r["run_id"]] for r in doc["rows"]] == [here["commit"], "0" * 40,
                                                                                        here["commit"]]
    elsewhere = store.DataFile(tmp_path, "p", keyed_by("i"), kind="calibration", machine="elsewhere_1c_nogpu")
    with elsewhere.locked({"points": 1}):
        elsewhere.add_row((0,), {"i": 0}, info={**here, "machine_key": "elsewhere_1c_nogpu"})
    assert json.loads((tmp_path / "elsewhere_1c_nogpu" / "machine.json").read_text())["machine_key"] == "elsewhere_1c_nogpu"
    assert len(store.load("p", data_dir=tmp_path)) == 4
