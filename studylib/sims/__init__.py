"""The simulators, one module or folder each with its record (``SimSpec``) and its array dynamics.

    from studylib.sims import sim
    sim("cartpole").state_size                        # 4
    sim("chain").physics_flops(sim("chain").params_of({"links": 8}), 1)   # one 8-link step, sin/cos apart

The settings (``EnvSettings.sim``), the command line (``--sim`` and the record's variant flags,
the chain's ``--links``), the data rows (their ``sim`` column and the variant's), the
implementations and the cost model read its record; none asks for a simulator by name.

Adding a simulator (tests/test_third_simulator.py holds the code to this recipe with a toy defined
in the test file alone):

1. A folder ``studylib/sims/<name>/`` (the chain's is the model): ``model.py``, its constants as a
   frozen dataclass checked once where it is made (with ``max_episode_steps``); ``dynamics.py``, its
   physics as pure functions of (..., p, xp) for numpy (float64: the reference, checked against the
   engine it reproduces), torch and jax.numpy; ``episode.py``, the three functions of an
   ``EpisodeRules`` (``studylib.sims.rules``: ``reset_states`` from the counter hash, its draws
   through ``rules.reset_uniforms``, which makes its indices on the environments' device,
   ``observation``, ``env_step`` -> (next state, final observation, reward, terminated)), from which
   the rules add truncation, the same-step autoreset, the counters, the no-policy controls and the
   Gaussian policy's noise.
2. Its record in the folder's ``__init__.py``, registered below: sizes (``sizes_of``), actions
   (``num_actions``; 0: one continuous control in Box(-1, 1)), ``episode`` (where its
   ``EpisodeRules`` is), the work of a step of its parameters (``physics_flops``,
   ``transcendentals``, ``unfused_bytes``), the ``variant`` columns that key its rows and the
   ``variant_flags`` the command line adds.
3. That is all for the generic array implementations (``torch``, ``torch-compile``, ``jax``: their
   records' ``rules_factory``), which run it at once. A native build adds ``cuda/<name>.cuh`` (the
   same rules once in C, for the CPU build, the CUDA kernel and the fused kernel) and its binding
   ``studylib/sims/<name>/native.py``, and names its classes in the native implementations'
   records (``sims``, ``sim_factories``); the gym row wraps the engine its physics reproduces.
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
from .rules import EpisodeRules  # noqa: E402,F401 (what a new simulator's episode rules are)
from .chain import CHAIN  # noqa: E402

register(CARTPOLE)
register(CHAIN)

DEFAULT = CARTPOLE.name

__all__ = ["CARTPOLE", "CHAIN", "DEFAULT", "KNOBS", "LANGUAGES", "SimSpec", "names", "register", "sim", "unregister"]
