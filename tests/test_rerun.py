"""``python -m studylib.book rerun``: what a chapter declares is accepted, anything else refused with
one line naming the chapter's parameters, and a refusal runs and writes nothing."""

from __future__ import annotations

import re

import pytest

from studylib.book import rerun
from studylib.errors import ConfigError

BOOK = rerun.repo_root() / "book"


def test_every_chapter_with_parameters_can_be_rerun():
    chapters = rerun.rerunnable_chapters()
    assert {"beyond", "intro", "vectorization", "complexity", "methodology"} <= set(chapters)
    assert rerun.declared_parameters((BOOK / "beyond.md").read_text()).keys() >= {"peer_num_envs", "peer_steps"}


@pytest.mark.parametrize("chapter, parameters", [
    ("vectorization", {"num_envs": [1, 64], "steps": "[1, 100]", "impls": ["cpp", "jax"]}),
    ("beyond", {"peer_steps": 100, "peer_num_envs": [4096]}),
    ("complexity", {"state_factor": [1, 16], "preset": "tiny"}),
    ("intro", {"preset": "paper"}),
    ("methodology", {"data_dir": "/tmp/elsewhere"}),
    ("training", {"seeds": "[0, 1]", "collectors": ["fused"], "preset": "tiny"}),
])
def test_declared_parameters_of_the_right_type_are_accepted(chapter, parameters):
    assert rerun.check_parameters(chapter, parameters) == parameters


@pytest.mark.parametrize("chapter, parameters, message", [
    ("vectorization", {"nosuch": 3}, "has no parameter 'nosuch'; its parameters: preset, num_envs, steps, impls, data_dir"),
    ("vectorization", {"num_envs": "abc"}, "'num_envs' must be a list of positive integers"),
    ("vectorization", {"steps": [1, 0]}, "'steps' must be a list of positive integers"),
    ("vectorization", {"impls": ["cpp", "nope"]}, "unknown implementation 'nope'"),
    ("beyond", {"peer_steps": 1.5}, "'peer_steps' must be a positive integer"),
    ("training", {"seeds": "abc"}, "'seeds' must be a list of integers ≥ 0, got 'abc'"),
    ("training", {"collectors": ["gym", "nope"]}, "unknown trainer 'nope'"),
    ("training", {"sweep_num_envs": [8, 0]}, "'sweep_num_envs' must be a list of positive integers"),
    ("beyond", {"state_factor": [1]}, "has no parameter 'state_factor'"),
    ("intro", {"preset": "huge"}, "unknown preset 'huge'"),
    ("methodology", {"data_dir": 3}, "'data_dir' must be a folder"),
    ("nosuch", {}, "no chapter 'nosuch'"),
    ("chain", {"links": [2, 33]}, "'links' must be a list of links from 1 to 32, got [2, 33]"),
    ("robot", {"links": "[40]"}, "'links' must be a list of links from 1 to 32, got [40]"),
])
def test_undeclared_or_mistyped_parameters_are_refused(chapter, parameters, message):
    with pytest.raises(ConfigError, match=re.escape(message)) as e:
        rerun.check_parameters(chapter, parameters)
    assert "\n" not in str(e.value)


def test_refusal_exits_2_and_writes_nothing(capsys, monkeypatch):
    def no_papermill(*args, **kwargs):
        raise AssertionError("a refused rerun executed the chapter")

    import papermill

    monkeypatch.setattr(papermill, "execute_notebook", no_papermill)
    before = {p.name: p.read_bytes() for p in BOOK.glob("*.md")}
    assert rerun.main(["rerun", "vectorization", "-p", "nosuch", "3", "--no-build"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "its parameters: preset, num_envs" in err
    # argparse's refusals too: one line, exit status 2 (no usage block), as python -m studylib's
    for argv in (["rerun", "nosuch"], ["rerun"], ["rerun", "vectorization", "-p", "num_envs"], ["frob"]):
        assert rerun.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("error: python -m studylib.book") and err.count("\n") == 1, (argv, err)
    assert {p.name: p.read_bytes() for p in BOOK.glob("*.md")} == before


def test_beyond_is_accepted_by_the_command_line(monkeypatch):
    calls = []
    monkeypatch.setattr(rerun, "rerun", lambda chapter, parameters, **kw: calls.append((chapter, parameters, kw)))
    assert rerun.main(["rerun", "beyond", "-p", "peer_steps", "100", "--no-build"]) == 0
    assert calls == [("beyond", {"peer_steps": 100}, {"build": False, "reset": False})]


def test_injected_cell_round_trip():
    text = (BOOK / "fusion.md").read_text()
    injected = rerun.inject_parameters(text, {"num_envs": [4, 64]})
    assert "num_envs = [4, 64]" in injected and injected.count(":tags: [injected-parameters]") == 1
    again = rerun.inject_parameters(injected, {"steps": [1, 10]})
    assert "num_envs = [4, 64]" not in again and again.count(":tags: [injected-parameters]") == 1
    assert rerun.inject_parameters(again, {}) == text
