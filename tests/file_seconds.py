"""Each test file's seconds in a fresh run on 2 cores (``file_seconds.json``), and the order the
suite runs its files in: longest first.

With ``--dist loadfile`` a file runs whole on one pytest-xdist worker, and xdist hands the files
out in collection order (``--no-loadscope-reorder``; its own order is by number of tests). Longest
first, the last files handed out are short and both workers end within seconds of each other; in
xdist's order a one-test file of 27 s (``test_train_chain_jax.py``) came last and one worker ran
alone for 26 s. A file missing from the table runs after those listed, in collection order.

Rewrite the table from a run's JUnit report::

    python -m pytest --junitxml=/tmp/suite.xml && python -m tests.file_seconds /tmp/suite.xml
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

TABLE = Path(__file__).with_name("file_seconds.json")


def seconds_by_file() -> dict[str, float]:
    return json.loads(TABLE.read_text()) if TABLE.is_file() else {}


def longest_files_first(items, seconds: dict[str, float]) -> list:
    """``items`` (pytest items) grouped by file, the files by descending ``seconds`` (by file
    name), unlisted files last; the order within a file and among unlisted files is kept."""
    first_seen = {}
    for i, item in enumerate(items):
        first_seen.setdefault(item.path.name, i)
    return sorted(items, key=lambda item: (-seconds.get(item.path.name, 0.0), first_seen[item.path.name]))


def from_junit(path: str) -> dict[str, float]:
    import xml.etree.ElementTree as ET

    total = Counter()
    for case in ET.parse(path).iter("testcase"):
        module = [part for part in case.get("classname", "").split(".") if part.startswith("test_")]
        if module:  # "tests.test_x" or "tests.test_x.TestClass"
            total[f"{module[0]}.py"] += float(case.get("time", 0.0))
    return {name: round(s, 1) for name, s in sorted(total.items(), key=lambda kv: -kv[1])}


if __name__ == "__main__":
    table = from_junit(sys.argv[1])
    TABLE.write_text(json.dumps(table, indent=1) + "\n")
    print(f"{TABLE}: {len(table)} files, {sum(table.values()):.0f} s in all")
