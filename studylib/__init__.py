"""Fast CartPole-v1 data collection in the five implementations of Gleeson et al. (2022).

    import studylib
    env = studylib.make("cpp", 4096, seed=0)
    obs = env.reset()
    obs, reward, terminated, truncated = env.step(actions)
    env.rollout(1000, policy="none")      # K steps in as few backend calls as the impl allows

Implementations (``IMPLEMENTATIONS``): ``gym`` (gymnasium objects, Python loop), ``cpp``
(multi-core C++ from the CUDA kernel's source), ``torch`` (eager, CPU or GPU), ``jax`` (K steps in
one XLA call), ``cuda`` (hand-written kernel via CuPy, K steps per launch; needs a GPU).
"""

from __future__ import annotations

from importlib import import_module

from .base import RolloutResult, VectorCartPole
from .dynamics import CARTPOLE_V1, CartPoleParams
from .errors import ConfigError, DeviceUnavailableError, InsufficientMemoryError, StudyError
from .policy import POLICIES

# name -> (module, class); modules are imported on demand so that e.g. `gym` needs no jax.
_REGISTRY = {
    "gym": ("gym_env", "GymCartPole"),
    "cpp": ("cpp_env", "CppCartPole"),
    "torch": ("torch_env", "TorchCartPole"),
    "jax": ("jax_env", "JaxCartPole"),
    "cuda": ("cuda_env", "CudaCartPole"),
    "torch-compile": ("torch_compile_env", "TorchCompileCartPole"),
    "fused": ("fused_env", "FusedCartPole"),
}
IMPLEMENTATIONS = tuple(_REGISTRY)


def implementation_class(impl: str) -> type[VectorCartPole]:
    if impl not in _REGISTRY:
        raise ConfigError(f"unknown implementation {impl!r}; valid: {', '.join(IMPLEMENTATIONS)}")
    module, cls = _REGISTRY[impl]
    return getattr(import_module(f".{module}", __name__), cls)


def make(impl: str, num_envs: int, *, seed: int = 0, device=None, state_factor: int = 1,
         compute_factor: int = 1, policy_seed: int = 0) -> VectorCartPole:
    """Create ``num_envs`` CartPole-v1 environments of implementation ``impl`` (see module doc)."""
    return implementation_class(impl)(
        num_envs, seed=seed, device=device, state_factor=state_factor,
        compute_factor=compute_factor, policy_seed=policy_seed,
    )


__all__ = [
    "CARTPOLE_V1", "CartPoleParams", "ConfigError", "DeviceUnavailableError", "IMPLEMENTATIONS",
    "InsufficientMemoryError", "POLICIES", "RolloutResult", "StudyError", "VectorCartPole",
    "implementation_class", "make",
]
