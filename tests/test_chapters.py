"""The chapter registry (``book.chapters``): one record per page of the book, which every list of
chapters is read from, and each chapter's parameters: one frozen type, parsed from its annotations,
matching what its page's ``parameters`` cell declares and passes."""

from __future__ import annotations

import ast
import dataclasses
import re

import pytest

from studylib import book
from studylib.book import rerun
from studylib.book.chapters import CHAPTERS, REFERENCE_PAGES, measured_chapters
from studylib.errors import ConfigError
from studylib.harness import params as typed
from studylib.harness.presets import PRESETS

BOOK = rerun.repo_root() / "book"
CODE_CELL = re.compile(r"```\{code-cell\}[^\n]*\n(?::tags: [^\n]*\n)?(.*?)\n```\n", flags=re.S)


def test_the_registry_is_the_table_of_contents():
    toc = (BOOK / "_toc.yml").read_text()
    order = [re.search(r"^root: (\S+)", toc, re.M).group(1), *re.findall(r"- file: (\S+)", toc)]
    assert list(CHAPTERS) == [page for page in order if page not in REFERENCE_PAGES]
    assert set(REFERENCE_PAGES) <= set(order) and not set(REFERENCE_PAGES) & set(CHAPTERS)
    assert set(CHAPTERS) | set(REFERENCE_PAGES) == {p.stem for p in BOOK.glob("*.md")}
    assert rerun.rerunnable_chapters() == list(CHAPTERS)  # every page has a parameters cell


def _params_call(name: str):
    """The keywords of the call that builds chapter ``name``'s parameters in its page."""
    for body in CODE_CELL.findall((BOOK / f"{name}.md").read_text()):
        try:
            tree = ast.parse(body)
        except SyntaxError:  # a cell with IPython magics
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "params":
                return {k.arg for k in node.keywords}
    return None


@pytest.mark.parametrize("name", list(CHAPTERS))
def test_a_chapters_parameters_cell_is_what_its_type_accepts_and_all_of_it_is_passed(name):
    declared = rerun.declared_parameters((BOOK / f"{name}.md").read_text())
    assert set(declared) <= set(CHAPTERS[name].params_type.parameters())
    if CHAPTERS[name].plans:  # a page that measures builds its parameters from all of them
        assert _params_call(name) == set(declared)  # no declared parameter silently ignored
    P = CHAPTERS[name].params(**{**declared, "preset": "tiny"})  # what the cell's defaults build
    assert P.chapter == name and P.preset == "tiny"


@pytest.mark.parametrize("name", [ch.name for ch in measured_chapters()])
def test_every_preset_of_every_chapter_makes_its_frozen_type(name, tmp_path):
    ch = CHAPTERS[name]
    assert set(ch.presets) == set(PRESETS)
    for preset, values in ch.presets.items():
        assert set(values) <= set(ch.params_type.parameters())
        P = ch.params(preset=preset, data_dir=tmp_path)
        assert isinstance(P, ch.params_type) and dataclasses.is_dataclass(P)
        with pytest.raises(dataclasses.FrozenInstanceError):
            P.preset = "other"


def test_the_training_chapters_paper_preset_runs_every_trainer():
    from studylib.train.settings import COLLECTORS, PEER_TRAINERS

    assert tuple(PRESETS["paper"]["training"]["collectors"]) == COLLECTORS
    assert tuple(PRESETS["paper"]["training"]["peers"]) == PEER_TRAINERS


def test_every_committed_data_file_is_read_by_a_chapter():
    read = {f for ch in CHAPTERS.values() for f in ch.files}
    for folder in (rerun.repo_root() / "data").glob("*/"):
        assert {p.stem for p in folder.glob("*.json")} - {"machine"} <= read, folder.name


def test_the_findings_come_from_the_chapters_that_compute_them():
    assert [ch.name for ch in CHAPTERS.values() if ch.findings] == ["vectorization", "overheads", "fusion", "complexity"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Toy(typed.TypedParams):
    num_envs: typed.Sizes
    seeds: typed.Seeds = ()
    budget_s: typed.PositiveFloat = 1.0
    names: typed.Names = ()
    cap: typed.Caps = dataclasses.field(default_factory=dict)
    gpu: typed.PositiveFloat | None = None


def test_typed_parameters_parse_from_their_annotations():
    t = _Toy(num_envs="[64, 8, 8]", seeds="0,1", budget_s="0.5", names="ant", cap="{'*': 4}", gpu="1e12")
    assert t == _Toy(num_envs=(8, 64), seeds=(0, 1), budget_s=0.5, names=("ant",), cap={"*": 4}, gpu=1e12)
    assert _Toy(num_envs=4).num_envs == (4,) and _Toy(num_envs=[1], gpu=None).gpu is None


@pytest.mark.parametrize("given, message", [
    ({"num_envs": "abc"}, "parameter 'num_envs' must be a list of positive integers (at least one), got 'abc'"),
    ({"num_envs": []}, "'num_envs' must be a list of positive integers (at least one)"),
    ({"num_envs": [1, True]}, "'num_envs' must be a list of positive integers"),
    ({"num_envs": [1], "seeds": [-1]}, "'seeds' must be a list of integers ≥ 0"),
    ({"num_envs": [1], "budget_s": 0}, "'budget_s' must be a positive number, got 0"),
    ({"num_envs": [1], "cap": {"*": 0}}, "'cap' must be a dict of names -> positive integers"),
    ({"num_envs": [1], "gpu": "fast"}, "'gpu' must be a positive number or None"),
])
def test_a_value_of_the_wrong_type_is_refused_in_one_line(given, message):
    with pytest.raises(ConfigError) as e:
        _Toy(**given)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_book_params_is_the_registrys():
    assert book.params("fusion", preset="tiny") == CHAPTERS["fusion"].params(preset="tiny")
    with pytest.raises(ConfigError, match="unknown chapter 'nosuch'"):
        book.params("nosuch")


def test_no_committed_page_carries_a_reruns_parameters():
    """``rerun`` writes its parameters into the page (a cell tagged injected-parameters) for the
    reader who asked; a page committed with one would build every reader's book with them."""
    from pathlib import Path

    pages = sorted((Path(__file__).resolve().parent.parent / "book").glob("*.md"))
    assert pages and [p.name for p in pages if ":tags: [injected-parameters]" in p.read_text()] == []
