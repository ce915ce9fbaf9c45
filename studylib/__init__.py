"""Fast CartPole-v1 data collection in seven implementations: the five of Gleeson et al. (2022)
and two beyond the paper.

    import studylib
    env = studylib.make("cpp", 4096, seed=0)
    obs = env.reset()
    obs, reward, terminated, truncated = env.step(actions)
    env.rollout(1000, policy="none")      # K steps in as few backend calls as the impl allows

Implementations (``IMPLEMENTATIONS``), the paper's: ``gym`` (gymnasium objects, Python loop),
``cpp`` (multi-core C++ from the CUDA kernel's source), ``torch`` (eager, CPU or GPU), ``jax`` (K
steps in one XLA call), ``cuda`` (hand-written kernel via CuPy, K steps per launch; needs a GPU);
beyond the paper: ``torch-compile`` (``torch``'s step through ``torch.compile``) and ``fused``
(MLP inference and simulation in one kernel, K steps per call). Other libraries' CartPoles
(``settings.PEERS``: gymnasium-vector, gymnax, envpool) are in ``studylib.harness.peers``. What each
implementation can do (its devices, native build, profiler, the book's label and colour) is its
record, ``studylib.implspec.spec(name)``.
"""

from __future__ import annotations

from .envs.base import RolloutResult, VectorCartPole
from .sims.cartpole import CARTPOLE_V1, CartPoleParams
from .errors import ConfigError, DeviceUnavailableError, InsufficientMemoryError, StudyError
from .envs.registry import implementation_class, make, make_from
from .settings import IMPLEMENTATIONS, POLICIES, EnvSettings, MeasurePoint


__all__ = [
    "CARTPOLE_V1", "CartPoleParams", "ConfigError", "DeviceUnavailableError", "IMPLEMENTATIONS",
    "InsufficientMemoryError", "POLICIES", "RolloutResult", "StudyError", "VectorCartPole",
    "EnvSettings", "MeasurePoint", "implementation_class", "make", "make_from",
]
