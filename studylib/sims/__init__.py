"""The simulators, one module each with its record (``SimSpec``) and its array dynamics.

    from studylib.sims import sim
    sim("cartpole").state_size            # 4
    sim("cartpole").physics_flops(1)      # 26: one Euler step, sin/cos apart

Adding a simulator: a module here with its dynamics and one ``register(SimSpec(...))``, plus its
C/CUDA header under ``cuda/``; the settings (``EnvSettings.sim``), the command line (``--sim``), the
data rows (their ``sim`` column) and the cost model read its record.
"""

from __future__ import annotations

from ..records import Records
from .base import KNOBS, LANGUAGES, SimSpec

_SIMS = Records("simulator")
register = _SIMS.register  # add a simulator (its name must be new)
unregister = _SIMS.unregister


def sim(name: str) -> SimSpec:
    """The record of simulator ``name`` (ConfigError naming the valid ones for an unknown name)."""
    return _SIMS.get_record(name)


def names() -> tuple[str, ...]:
    return tuple(_SIMS)


from .cartpole import CARTPOLE  # noqa: E402
from .chain import CHAIN  # noqa: E402

register(CARTPOLE)
register(CHAIN)

DEFAULT = CARTPOLE.name

__all__ = ["CARTPOLE", "CHAIN", "DEFAULT", "KNOBS", "LANGUAGES", "SimSpec", "names", "register", "sim", "unregister"]
