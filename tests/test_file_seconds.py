"""The suite's file order (tests/file_seconds.py): every test file has its seconds, and the longest
run first."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from tests.file_seconds import from_junit, longest_files_first, seconds_by_file

TESTS = Path(__file__).resolve().parent


def test_every_test_file_and_only_those_has_its_seconds():
    listed = set(seconds_by_file())
    files = {p.name for p in TESTS.glob("test_*.py")}
    assert files - listed == set(), "not in tests/file_seconds.json (python -m tests.file_seconds <junit.xml>)"
    assert listed - files == set(), "tests/file_seconds.json names files that are gone"


def _item(name, test):
    return SimpleNamespace(path=Path("tests") / name, name=test)


def test_longest_files_first_keeps_each_files_order_and_puts_the_unlisted_last():
    items = [_item("test_a.py", "1"), _item("test_b.py", "1"), _item("test_new.py", "1"), _item("test_a.py", "2"),
             _item("test_c.py", "1"), _item("test_b.py", "2"), _item("test_other.py", "1")]
    ordered = longest_files_first(items, {"test_a.py": 1.0, "test_b.py": 30.0, "test_c.py": 5.0})
    assert [(i.path.name, i.name) for i in ordered] == [
        ("test_b.py", "1"), ("test_b.py", "2"), ("test_c.py", "1"), ("test_a.py", "1"), ("test_a.py", "2"),
        ("test_new.py", "1"), ("test_other.py", "1")]


def test_the_table_is_read_from_a_junit_report(tmp_path):
    report = tmp_path / "suite.xml"
    report.write_text('<testsuites><testsuite>'
                      '<testcase classname="tests.test_x" name="a" time="1.25"/>'
                      '<testcase classname="tests.test_x.TestGroup" name="b" time="2"/>'
                      '<testcase classname="tests.test_y" name="c" time="7"/>'
                      '</testsuite></testsuites>')
    assert from_junit(str(report)) == {"test_y.py": 7.0, "test_x.py": 3.2}
