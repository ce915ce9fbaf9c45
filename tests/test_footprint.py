"""Memory footprints: every implementation class's ``estimate_bytes`` is its ``envs.footprint``
formula, and a request too large for the machine is refused before torch or jax is imported."""

from __future__ import annotations

import subprocess
import sys

import pytest

from studylib import implspec, sims
from studylib.envs import footprint
from studylib.envs.registry import estimate_bytes, implementation_class
from studylib.implspec import ImplSpec, specs
from studylib.sims.chain import ChainParams


def _pairs():
    return [(r.name, s) for r in specs() for s in sims.names() if r.implements(s)]


def _params(sim):
    return ChainParams(links=5) if sim == "chain" else None


@pytest.mark.parametrize("impl,sim", _pairs())
def test_each_class_estimates_by_its_footprint(impl, sim):
    """The records' own classes all have a formula (so the check never imports them), and the
    class, once imported, says the same bytes at every N and S."""
    assert implspec.spec(impl).factory_for(sim) in footprint.BY_FACTORY
    cls = implementation_class(impl, sim)
    for num_envs, state_factor in ((1, 1), (4096, 1), (3, 64)):
        if sim != "cartpole" and state_factor != 1:
            continue
        expected = cls.estimate_bytes(num_envs, state_factor, _params(sim))
        assert estimate_bytes(impl, sim, num_envs, state_factor, _params(sim)) == expected > 0


class _Registered(implementation_class("torch")):
    """A class registered from outside the library: no footprint formula of its own here."""

    name = "outside"

    @classmethod
    def estimate_bytes(cls, num_envs, state_factor, params=None):
        return 12345 * num_envs


def test_a_class_without_a_formula_is_asked_itself():
    record = ImplSpec("outside", f"{__name__}:_Registered", "torch", ("cpu",), None, label="outside",
                      color="#010204", order=98, in_paper=False)
    implspec.register(record)
    try:
        assert estimate_bytes("outside", "cartpole", 10, 1) == 123450
    finally:
        implspec.unregister("outside")


# For each implementation and simulator, a request of far more memory than any machine has, checked
# as the command line checks it; then which frameworks the process had imported.
_REFUSE = """
import sys
from studylib.errors import InsufficientMemoryError
from studylib.harness.measure import check_feasible
from studylib.settings import MeasurePoint
from studylib.sims.chain import ChainParams
for impl, sim in {pairs!r}:
    params = ChainParams(links=8) if sim == "chain" else None
    try:
        check_feasible(MeasurePoint.of(impl, 2**45, 1, sim=sim, params=params))
    except InsufficientMemoryError:
        continue
    raise SystemExit(f"{{impl}} {{sim}}: not refused")
print(sorted(m for m in ("torch", "jax", "cupy") if m in sys.modules))
"""


def test_a_request_too_large_is_refused_before_torch_or_jax_is_imported():
    pairs = [(i, s) for i, s in _pairs() if "cpu" in implspec.spec(i).devices]
    proc = subprocess.run([sys.executable, "-c", _REFUSE.format(pairs=pairs)], capture_output=True, text=True,
                          check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:] + proc.stdout[-500:]
    assert proc.stdout.strip().splitlines()[-1] == "[]", proc.stdout
