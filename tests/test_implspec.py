"""One record per implementation: a toy registered here, in a few lines, appears in
``IMPLEMENTATIONS``, the bench CLI, a sweep, a chapter's list and a chart, with no other file
changed; and the records say what the code does (devices, builds, roofline)."""

from __future__ import annotations

import json

import pytest

import studylib
from studylib import ConfigError, implspec
from studylib.__main__ import main
from studylib.implspec import ImplSpec, spec
from studylib.envs.torch_env import TorchCartPole

TOY_COLOR = "#010203"


class ToyCartPole(TorchCartPole):
    """The toy: torch's environments under another name (CPU only by its record)."""

    name = "toy"


TOY = ImplSpec("toy", f"{__name__}:ToyCartPole", "torch", ("cpu",), None, label="toy (a test's)", color=TOY_COLOR,
               order=99, in_paper=False)


@pytest.fixture
def toy():
    implspec.register(TOY)
    yield TOY
    implspec.unregister(TOY.name)


def test_a_toy_appears_everywhere(toy, tmp_path, capsys):
    assert "toy" in studylib.IMPLEMENTATIONS and studylib.IMPLEMENTATIONS[-1] == "toy"
    assert studylib.implementation_class("toy") is ToyCartPole
    with pytest.raises(ConfigError, match="toy runs on cpu only"):
        studylib.make("toy", 4, device="cuda")

    assert main(["bench", "--impl", "toy", "--num-envs", "8", "--steps", "2", "--policy", "none", "--repeats", "1",
                 "--min-seconds", "0.01", "--json"]) == 0
    (row,) = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    assert row["impl"] == "toy" and row["device"] == "cpu" and row["samples_per_s"] > 0 and row["compile_s"] == 0

    assert main(["sweep", "toys", "--impl", "toy,torch", "--num-envs", "4", "--steps", "1", "--policy", "none",
                 "--repeats", "1", "--min-seconds", "0.01", "--data-dir", str(tmp_path), "--no-progress"]) == 0
    from studylib import book
    from studylib.harness.data.provenance import machine_key

    rows = json.loads((tmp_path / machine_key() / "toys.json").read_text())
    rows = rows["rows"] if isinstance(rows, dict) else rows
    assert sorted(r["impl"] for r in rows) == ["torch", "toy"]

    import altair as alt
    import pandas as pd

    chart = alt.Chart(pd.DataFrame(rows)).mark_line().encode(book.x_n(), book.y_rate("samples/s"),
                                                             book.impl_color(["torch", "toy"]))
    color = chart.to_dict()["encoding"]["color"]
    assert dict(zip(color["scale"]["domain"], color["scale"]["range"])) == {"torch": spec("torch").color,
                                                                           "toy": TOY_COLOR}
    assert color["legend"]["labelExpr"] == 'datum.label == "toy" ? "toy (a test\'s)" : (datum.label)'
    assert "labelExpr" not in book.impl_color(["torch", "jax"]).to_dict()["legend"]  # labels = names
    vl_convert = pytest.importorskip("vl_convert")
    svg = vl_convert.vegalite_to_svg(book.finish(chart, "toys").to_json())  # drawn as the book draws it
    assert "toy (a test's)" in svg and TOY_COLOR in svg
    # Beyond the paper, on the CPU, stepping arrays: the "Beyond the paper" chapter runs it.
    assert "toy" in book.plans.beyond_impls(book.params("beyond", preset="tiny", data_dir=tmp_path))


def test_unregistered_toy_is_gone():
    assert "toy" not in studylib.IMPLEMENTATIONS
    with pytest.raises(ConfigError, match="unknown implementation 'toy'"):
        studylib.make("toy", 4)


def test_records_are_checked_once():
    with pytest.raises(ConfigError, match="family"):
        ImplSpec("x", "m:C", "python-ish", ("cpu",), None, label="x", color="#000", order=0, in_paper=False)
    with pytest.raises(ConfigError, match="gpu_probe"):
        ImplSpec("x", "m:C", "torch", ("cuda", "cpu"), None, label="x", color="#000", order=0, in_paper=False)
    with pytest.raises(ConfigError, match="already registered"):
        implspec.register(spec("cpp"))


def test_records_say_what_the_code_does():
    from studylib import native
    from studylib.book.figures import charts
    from studylib.harness.model.roofline import keeps_state_in_cache

    # Every native library a record names exists; the fused kernels' records say when state stays in cache.
    assert {s.native_library for s in implspec.specs() if s.native_library} <= set(native.LIBRARIES)
    row = {"steps": 1000, "policy": "mlp"}
    assert [i for i in studylib.IMPLEMENTATIONS if keeps_state_in_cache({**row, "impl": i})] == ["fused"]
    assert keeps_state_in_cache({**row, "impl": "cpp", "policy": "none"})
    assert not keeps_state_in_cache({**row, "impl": "fused", "steps": 1})
    # The book's palette: one colour per name, implementations' from their records.
    colors = charts.impl_colors()
    assert len(set(colors.values())) == len(colors) and colors["jax"] == spec("jax").color
    assert studylib.book.IMPL_ORDER == ["gym", "cpp", "torch", "jax", "cuda"]  # the paper's five, in its order


def test_compile_time_counts_each_implementations_own_build(monkeypatch):
    """``compile_s`` holds the build of the library the implementation itself loads (fused's
    ``fused_cpu`` as cpp's ``cartpole_cpu``), once per process; not "any library was built"."""
    from functools import lru_cache

    from studylib import native
    from studylib.harness import measure
    from studylib.settings import EnvSettings

    built = []

    @lru_cache(maxsize=None)
    def fake_build_info(name):
        built.append(name)
        return {"build_seconds": 1.5, "cached": False}

    monkeypatch.setattr(native, "build_info", fake_build_info)
    fake_build_info("cartpole_cpu")  # another library built earlier in this process
    assert measure._native_build_s(EnvSettings("fused", 4, device="cpu")) == 1.5
    assert measure._native_build_s(EnvSettings("fused", 4, device="cpu")) == 0.0  # built already
    assert measure._native_build_s(EnvSettings("torch", 4, device="cpu")) == 0.0
    assert built == ["cartpole_cpu", "fused_cpu"]
