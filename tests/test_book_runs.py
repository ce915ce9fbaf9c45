"""The book's chapters run on their own: two chapters under nbval (tiny preset), typed chapter
parameters, and a default-preset rebuild over the committed snapshot that measures nothing.

Kept apart from ``test_book.py`` (whose module fixture builds the whole tiny book, the suite's
longest item) so that a second test worker runs these beside that build.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
import sys

import pytest

from studylib.errors import ConfigError
from tests.snapshot_cases import GPU_SNAPSHOTS
from tests.test_book import ROOT, _env

# Two chapters of different kinds, in one pytest run: one that measures and one that reads the
# data and the settings only. The book's build (test_book.py) executes every chapter; nbval here
# checks that the root conftest.py collects jupytext chapters, so the cheapest of each kind.
NBVAL_CHAPTERS = ["fusion", "methodology"]


def test_chapters_execute_under_nbval(tmp_path):
    """``pytest --nbval-lax book/<chapter>.md ...`` (collected by the root conftest.py) at the tiny
    preset: every code cell of each chapter passes."""
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval-lax", "-q", "-n", "0", "-p", "no:cacheprovider", "--rootdir", str(ROOT),
         *(f"book/{c}.md" for c in NBVAL_CHAPTERS)],
        cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=600,
    )
    assert r.returncode == 0, f"nbval failed:\n{r.stdout[-6000:]}\n{r.stderr[-3000:]}"
    cells = {c: len(re.findall(r"```\{code-cell\}", (ROOT / "book" / f"{c}.md").read_text())) for c in NBVAL_CHAPTERS}
    passed = re.search(r"(\d+) passed", r.stdout)
    assert passed and int(passed.group(1)) == sum(cells.values()), f"nbval ran {passed and passed.group(1)} cells of {cells}:\n{r.stdout[-2000:]}"


def test_chapter_parameters_are_typed_and_checked(tmp_path):
    import dataclasses

    from studylib import book
    from studylib.errors import ConfigError

    P = book.params("complexity", preset="tiny", data_dir=tmp_path, state_factor="[1, 2]", steps="4,1")
    assert P.state_factor == (1, 2) and P.steps == (1, 4) and P.compute_factor == (1, 4)  # the tiny preset's
    assert not hasattr(P, "profile_num_envs") and P.cap_for("cpp") == 2**14  # one type per chapter
    P = book.params("overheads", preset="tiny", data_dir=tmp_path, profile_num_envs="8")
    assert P.profile_num_envs == 8 and P.profile_steps == (1, 4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        P.steps = (1,)
    with pytest.raises(ConfigError, match="no parameter 'brax_envs'"):
        book.params("fusion", preset="tiny", brax_envs=["ant"])
    with pytest.raises(ConfigError, match="unknown preset"):
        book.params("fusion", preset="huge")


def test_committed_data_resumes_without_measuring(tmp_path, monkeypatch):
    """A default-preset build over the newest committed snapshot, on its machine, reads every point
    (sweeps, profiles, Brax, ceilings) and measures and writes nothing. Whatever machine runs the
    suite poses as the snapshot's (its recorded identity: cores, cache, CPU), so the check is the
    same on every host without a CUDA device."""
    from studylib import book
    from studylib.harness.data import provenance, store
    from studylib.harness.model import roofline
    from studylib.harness import sweep
    from studylib.harness.data.provenance import machine_key
    from tests.snapshot_cases import SNAPSHOT, identity_of

    if book.presets.cuda_ok()[0]:
        pytest.skip("a CUDA device adds cuda points the CPU snapshot does not have")
    monkeypatch.setattr(provenance, "machine_identity", lambda: identity_of(SNAPSHOT))
    assert machine_key() == SNAPSHOT  # the folder's name is its recorded identity's key
    folder = tmp_path / machine_key()
    shutil.copytree(ROOT / "data" / SNAPSHOT, folder)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}

    def no_measuring(*args, **kwargs):
        raise AssertionError(f"a rebuild on the committed data measured {args[1]}")

    monkeypatch.setattr(sweep, "_measure_or_skip", no_measuring)
    saved = {p.stem: json.loads(p.read_text()) for p in folder.glob("*.json")}
    P = {ch: book.params(ch, preset="default", data_dir=tmp_path)
         for ch in ("cartpole", "vectorization", "overheads", "fusion", "complexity", "beyond", "chain", "engines")}
    counts = {
        "fig4": len(book.vectorization_data(P["vectorization"])), "fig4_k": len(book.overheads_data(P["overheads"])),
        "fig8": len(book.fusion_data(P["fusion"])), "fig9": len(book.complexity_data(P["complexity"])),
        "beyond": len(book.beyond_data(P["beyond"])), "fig2_cartpole": len(book.cartpole_fig2_data(P["cartpole"])),
        "fig56_profile": len(book.profile_data(P["overheads"])), "fig2_brax": len(book.brax_data(P["cartpole"])),
    }
    from studylib.book.pages import chain, engines

    if all(r.get("episode_rules") is None for r in saved["chain"]["rows"]):
        # A snapshot from before the chain was an environment (the committed Intel one): its rows are
        # of the physics alone (no episode_rules column), so they stand for none of today's points,
        # which a build on its machine measures (into data/.local, the checkout left as it was).
        assert chain.chain_points(P["chain"])[0] and saved["chain"]["rows"]
        del saved["chain"], saved["chain_predictions"]
    else:
        predicted, measured = chain.chain_data(P["chain"])
        counts.update(chain_predictions=len(predicted), chain=len(measured))
    planned = engines.engine_data(P["engines"])
    beyond = engines.beyond_the_plan(P["engines"], planned)
    counts.update(engines=len(planned) + len(beyond))
    # every saved point is one the plans ask for (the engines' others: measured by a rerun, shown as
    # such; the chain's at the n and policies of its wider grid: read beside the plan; at an n the
    # chapter no longer reads: kept, not shown) ...
    planned_links = set(chain.beyond_plan(P["chain"])[0].links)
    for name in ("chain", "chain_predictions"):
        if name in saved:
            saved[name]["rows"] = [r for r in saved[name]["rows"] if r.get("links") in planned_links]
    assert counts == {name: len(saved[name]["rows"]) for name in counts}
    key = lambda r: tuple(r.get(c, "none") for c in ("engine", "model", "num_envs", "steps", "policy"))  # noqa: E731
    assert len(engines.engine_predictions(P["engines"])) == len(planned)  # ... and every engine row its prediction
    assert {key(r) for r in saved["engine_predictions"]["rows"]} == {key(r) for r in saved["engines"]["rows"]}
    ceil = book.roofline_data(P["beyond"])
    assert roofline.from_rows(store.read(folder / "beyond_roofline.json")["rows"]) == ceil
    assert ceil["fma_flops_per_s"] and ceil["memory_bytes_per_s"] and ceil["gemm_steps_per_s"]
    findings = book.findings(preset="default", data_dir=tmp_path)
    assert {"F.1", "F.2", "F.3", "F.4"} <= set(findings["finding"]) and (findings["verdict"] != "not measured").all()
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before  # nothing written, no lock taken


@pytest.mark.parametrize("key", __import__("tests.snapshot_cases", fromlist=["SNAPSHOTS"]).SNAPSHOTS)
def test_committed_snapshot_is_current_and_complete_from_another_machine(key, tmp_path, monkeypatch):
    """Every committed snapshot, read as data by a machine that is not its own (a Zen 3 posed
    through a fake cpuinfo, whatever runs the suite): ``data check`` finds it current, and the
    findings of its default preset are all measured, with nothing measured or written here. A
    snapshot of a lent GPU machine holds the chapters its lease fitted: those of its chapters
    are complete, and a chapter page asked for one it lacks refuses in one line."""
    from studylib import book
    from studylib.harness.data import snapshots
    from studylib.harness import sweep
    from studylib.harness.data.provenance import machine_key
    from tests.cpuinfo_cases import ZEN3

    (tmp_path / "cpuinfo").write_text(ZEN3)
    monkeypatch.setenv("STUDYLIB_CPUINFO", str(tmp_path / "cpuinfo"))
    assert machine_key() != key
    state = snapshots.snapshot(ROOT / "data", key)
    assert state.current, state.line()
    monkeypatch.setattr(sweep, "_measure_or_skip", lambda *a, **k: pytest.fail(f"measured {a[1]}"))
    before = {p.name: p.read_bytes() for p in (ROOT / "data" / key).iterdir()}
    if key not in GPU_SNAPSHOTS:
        findings = book.findings(preset="default", data_dir=ROOT / "data", machine=key)
        assert {"F.1", "F.2", "F.3", "F.4"} <= set(findings["finding"]) and (findings["verdict"] != "not measured").all()
    held = []
    for ch in book.CHAPTERS.values():
        if not ch.files or "machine" not in {f.name for f in dataclasses.fields(ch.params_type)}:
            continue  # a page that measures nothing, or one that plots this machine's runs only
        try:
            P = book.params(ch.name, preset="default", data_dir=ROOT / "data", machine=key)
        except ConfigError as e:  # a chapter its snapshot lacks: one line; a CPU build has every finding's
            assert "\n" not in str(e) and (key in GPU_SNAPSHOTS or not ch.findings), f"{key}: {e}"
            continue
        held.append(ch.name)
        if ch.findings:
            frame = book.findings_frame(ch.findings(P))
            assert len(frame) and (frame["verdict"] != "not measured").all(), f"{key}: {ch.name}"
    assert {c for c in held if book.CHAPTERS[c].files}, f"{key} holds no chapter"
    assert {p.name: p.read_bytes() for p in (ROOT / "data" / key).iterdir()} == before
