"""No capability decided by an implementation's name: outside the records, the implementations' own
modules and the findings, the package reads a record's fields (``implspec.ImplSpec``: dispatch,
fused_policies, devices, max_envs, family ...; the Atari engines' records) instead of comparing an
implementation's name with a string. A new implementation or simulator then gets the right answer
everywhere, not a silent fall-through.

The check walks studylib/ with ``ast``: a comparison (``==``, ``!=``, ``in``, ``not in``) of an
implementation's name (a string constant, or a tuple/list/set of them) with an operand that holds an
implementation (its source mentions ``impl``) fails, unless the file is one of ``ALLOWED``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "studylib"

# Where a name may decide: the records and the implementations' own modules (each knows itself),
# and the findings, whose text is about the paper's named implementations (F.1 "over gym", F.2
# "XLA against PyTorch").
ALLOWED = ("implspec.py", "envs/", "native/", "book/claims/findings.py", "book/claims/base.py", "book/claims/f1.py",
           "book/claims/f2.py", "book/claims/f3.py", "book/claims/f4.py", "book/claims/chain.py", "book/claims/paper.py",
           "harness/atari/engines.py")


def implementation_names() -> set[str]:
    from studylib.harness.atari import frames as atari
    from studylib.implspec import IMPLEMENTATIONS
    from studylib.settings import PEERS

    return set(IMPLEMENTATIONS) | set(PEERS) | set(atari.IMPLS)


def _names(node, names) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value} & names
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return set().union(*(_names(e, names) for e in node.elts)) if node.elts else set()
    return set()


def _holds_an_implementation(node) -> bool:
    """Whether an operand holds an implementation's name: its source mentions ``impl`` and it is
    not a field of a record (``spec(impl).profiler == "jax"`` reads the record)."""
    code = ast.unparse(node)
    return bool(re.search(r"impl", code)) and not re.fullmatch(r"spec\(.*\)\.\w+", code)


def name_checks(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, code) of each comparison of an implementation's name with an implementation."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        if any(_names(o, names) for o in operands) and any(
                _holds_an_implementation(o) for o in operands if not _names(o, names)):
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_the_check_finds_what_it_is_for():
    names = {"gym", "cpp", "fused"}
    assert name_checks('if impl == "gym": pass', names) == [(1, "impl == 'gym'")]
    assert name_checks('x = r["impl"] in ("cpp", "fused")', names) == [(1, "r['impl'] in ('cpp', 'fused')")]
    assert name_checks('y = point.impl != "gym"', names)
    assert not name_checks('if device == "cuda": pass', names | {"cuda"})  # a device, not an implementation
    assert not name_checks('z = spec(impl).dispatch == "native"', names)  # a record's field


def test_no_capability_is_decided_by_an_implementations_name():
    names = implementation_names()
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if any(rel == a or (a.endswith("/") and rel.startswith(a)) for a in ALLOWED):
            continue
        offenders += [f"studylib/{rel}:{line}: {code}" for line, code in name_checks(path.read_text(), names)]
    assert not offenders, "capability checks by implementation name (read the record instead):\n" + "\n".join(offenders)


@pytest.mark.parametrize("place", ALLOWED)
def test_every_allowed_place_exists(place):
    assert (PACKAGE / place).exists(), f"ALLOWED names {place}, which is gone: remove it from the list"
