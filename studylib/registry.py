"""Implementation names -> classes, imported on demand (so that ``gym`` needs no jax), and ``make``."""

from __future__ import annotations

from importlib import import_module

from .dynamics import CARTPOLE_V1, CartPoleParams
from .errors import ConfigError
from .settings import IMPLEMENTATIONS, EnvSettings, check_impl

_CLASSES = {
    "gym": ("gym_env", "GymCartPole"),
    "cpp": ("cpp_env", "CppCartPole"),
    "torch": ("torch_env", "TorchCartPole"),
    "jax": ("jax_env", "JaxCartPole"),
    "cuda": ("cuda_env", "CudaCartPole"),
    "torch-compile": ("torch_compile_env", "TorchCompileCartPole"),
    "fused": ("fused_env", "FusedCartPole"),
}
assert tuple(_CLASSES) == IMPLEMENTATIONS, "settings.IMPLEMENTATIONS and the registry must list the same names"


def implementation_class(impl: str):
    """The VectorCartPole subclass of implementation ``impl``."""
    module, cls = _CLASSES[check_impl(impl)]
    return getattr(import_module(f".{module}", __package__), cls)


def make_from(settings: EnvSettings):
    """The environments ``settings`` describes (an implementation; peers: ``studylib.peers``)."""
    if settings.is_peer:
        raise ConfigError(f"{settings.impl!r} is a peer library's CartPole; use studylib.peers.make_peer")
    return implementation_class(settings.impl)(settings)


def make(impl: str, num_envs: int, *, seed: int = 0, device=None, state_factor: int = 1,
         compute_factor: int = 1, policy_seed: int = 0, params: CartPoleParams = CARTPOLE_V1,
         arrays: str = "numpy"):
    """Create ``num_envs`` CartPole-v1 environments of implementation ``impl`` (see the package doc).

    ``arrays``: "numpy" (the default: numpy arrays on the host) or "native" (the implementation's
    own arrays on its device, no host copy: torch tensors for torch, torch-compile, cpp, fused and
    cuda, jax arrays for jax; not gym). See ``VectorCartPole``.
    """
    check_impl(impl)
    return make_from(EnvSettings(impl, num_envs, state_factor=state_factor, compute_factor=compute_factor,
                                 seed=seed, device=device, policy_seed=policy_seed, params=params, arrays=arrays))
