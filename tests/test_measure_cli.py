"""``python -m studylib measure``: the book's measurement plans without the book's toolchain, into
the files a build then only reads; where ``sweep`` and ``measure`` write by default; and the
chapters' ``machine`` parameter, which reads another machine's snapshot without measuring."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from studylib import book
from studylib.__main__ import _data_dir, main
from studylib.errors import ConfigError
from studylib.harness.data import provenance
from studylib.harness import sweep

ROOT = Path(__file__).resolve().parent.parent
from tests.cpuinfo_cases import ZEN3  # noqa: E402
from tests.snapshot_cases import SNAPSHOT  # noqa: E402
BOOK_ONLY = ("altair", "IPython", "papermill", "jupyter_book", "myst_nb", "jupytext", "nbformat", "vl_convert")

# Runs the command line with the book's toolchain unimportable (a sys.meta_path finder refuses it).
BLOCKED = textwrap.dedent("""
    import importlib.abc, sys
    BLOCKED = {blocked!r}

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"{{name}} is blocked: measure must run without the book's toolchain")

    sys.meta_path.insert(0, Block())
    try:
        import altair
    except ModuleNotFoundError:
        pass
    else:
        raise SystemExit("the blocker does not block")
    from studylib.__main__ import main
    rc = main({argv!r})
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    assert not loaded, loaded
    sys.exit(rc)
""")


def test_measure_needs_no_book_toolchain_and_the_build_then_reads(tmp_path, monkeypatch, capsys):
    data = tmp_path / "data"
    argv = ["measure", "--chapters", "fusion", "--preset", "tiny", "--data-dir", str(data), "--no-progress"]
    r = subprocess.run([sys.executable, "-c", BLOCKED.format(blocked=BOOK_ONLY, argv=argv)], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "fig8: 0 rows reused, 12 measured; 0 skipped, 0 lost" in r.stdout
    folder = data / provenance.machine_key()
    before = {p.name: p.read_bytes() for p in folder.iterdir()}

    # Measuring again measures nothing; the chapter's plan at the same preset finds every point.
    assert main(argv) == 0
    assert "fig8: 12 rows reused, 0 measured; 0 skipped" in capsys.readouterr().out

    def no_measuring(*args, **kwargs):
        raise AssertionError(f"the chapter measured {args[1]} that `measure` had measured")

    monkeypatch.setattr(sweep, "_measure_or_skip", no_measuring)
    df = book.fusion_data(book.params("fusion", preset="tiny", data_dir=data))
    assert len(df) == 12 and not df.attrs["skipped"]
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


@pytest.mark.parametrize("argv, message", [
    (["measure", "--chapters", "fusion,nope"], "unknown --chapters 'nope'"),
    (["measure", "--preset", "huge"], "unknown preset 'huge'"),
    (["measure", "--chapters", "intro"], "valid: cartpole, vectorization, overheads, fusion, complexity, beyond, chain, engines, atari, model, training"),
])
def test_measure_bad_input_is_one_line(argv, message, tmp_path, capsys):
    assert main([*argv, "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error:") and message in err
    assert not list(tmp_path.iterdir())


def test_sweep_and_measure_write_where_the_book_reads(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # not the current directory ...
    monkeypatch.delenv("STUDYLIB_DATA_DIR", raising=False)
    assert _data_dir(argparse.Namespace(data_dir=None)) == ROOT / "data"  # ... but the repository's data/
    monkeypatch.setenv("STUDYLIB_DATA_DIR", str(tmp_path / "env"))
    assert main(["sweep", "e", "--impl", "cpp", "--num-envs", "8", "--steps", "1", "--repeats", "1",
                 "--min-seconds", "0.01", "--no-progress"]) == 0
    assert (tmp_path / "env" / provenance.machine_key() / "e.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["env"]


def test_chapter_reads_another_machines_snapshot_without_measuring(tmp_path, monkeypatch):
    (tmp_path / "cpuinfo").write_text(ZEN3)  # whatever runs the suite poses as a host of no committed snapshot
    monkeypatch.setenv("STUDYLIB_CPUINFO", str(tmp_path / "cpuinfo"))
    assert provenance.machine_key() != SNAPSHOT
    tmp_path = tmp_path / "data"
    tmp_path.mkdir()
    monkeypatch.setenv("STUDYLIB_DATA_DIR", str(tmp_path))  # empty: the snapshot is in the repository's data/
    committed = ROOT / "data" / SNAPSHOT
    before = {p.name: p.read_bytes() for p in committed.iterdir()}
    P = book.params("fusion", preset="default", machine=SNAPSHOT)
    assert P.machine == SNAPSHOT and P.data_dir == ROOT / "data" and "cuda" not in P.impls  # it has no GPU
    assert SNAPSHOT in P.describe()
    saved = json.loads((committed / "fig8.json").read_text())["rows"]
    df = book.fusion_data(P)
    assert len(df) == len(saved) and set(df["machine"]) == {SNAPSHOT}
    prof = book.profile_data(book.params("overheads", preset="default", machine=SNAPSHOT))
    assert len(prof) == len(json.loads((committed / "fig56_profile.json").read_text())["rows"])

    # points the snapshot lacks are listed, not measured; the tiny preset's points at N = 64, K = 1 (1
    # region of 0.01 s) are answered by the snapshot's rows of them timed more carefully (harness.data.store)
    tiny = book.fusion_data(book.params("fusion", preset="tiny", machine=SNAPSHOT))
    assert {s["reason"] for s in tiny.attrs["skipped"]} == {f"not measured on {SNAPSHOT}"}
    assert len(tiny) and set(zip(tiny["num_envs"], tiny["steps"])) == {(64, 1)} and (tiny["repeats"] > 1).all()
    assert not list(tmp_path.iterdir()) and {p.name: p.read_bytes() for p in committed.iterdir()} == before

    assert book.params("fusion", preset="tiny", machine=provenance.machine_key()).machine is None  # this machine
    with pytest.raises(ConfigError, match=f"no machine 'nowhere'.*present: .*{SNAPSHOT}"):
        book.params("fusion", machine="nowhere")


def test_measure_help_names_the_chapters_it_takes():
    from studylib.__main__ import MEASURED_CHAPTERS
    from studylib.book.chapters import measured_chapters

    assert MEASURED_CHAPTERS == tuple(ch.name for ch in measured_chapters())


def test_bench_of_the_chain_names_each_rows_n(capsys):
    """`bench --sim chain --links 1,2`: each row of the table says which n it measured (the table
    once printed the chain's rows without their n, so a run at six n read as six unlabelled rows)."""
    from studylib.__main__ import main

    assert main(["bench", "--impl", "cpp", "--sim", "chain", "--links", "1,2", "--num-envs", "8", "--steps", "2",
                 "--policy", "none", "--repeats", "1", "--min-seconds", "0.01"]) == 0
    header, *lines = capsys.readouterr().out.strip().splitlines()[:3]
    cells = header.split()
    assert cells[:4] == ["impl", "sim", "episode_rules", "links"]
    assert [line.split()[:4] for line in lines] == [["cpp", "chain", "v5", "1"], ["cpp", "chain", "v5", "2"]]
