"""Implementation records -> classes, imported on demand (so that ``gym`` needs no jax), and ``make``.

The records themselves (``ImplSpec``: devices, builds, profiler, the book's label, colour and
order) are in ``studylib.implspec`` (core layer, so that settings can check a name without this
module); ``register`` adds one, and the new implementation is then made, measured and charted
like the others."""

from __future__ import annotations

from importlib import import_module

from ..errors import ConfigError
from ..implspec import IMPLEMENTATIONS, ImplSpec, register, spec, specs, unregister  # noqa: F401 (re-exported)
from ..settings import EnvSettings, check_impl
from . import footprint


def implementation_class(impl: str, sim: str = "cartpole"):
    """The class of implementation ``impl`` for simulator ``sim`` (its record's ``factory_for``:
    a VectorEnv subclass: CartPole's class or, for another simulator, its sibling or the generic class)."""
    module, cls = spec(check_impl(impl)).factory_for(sim).split(":")
    return getattr(import_module(module, __package__ if module.startswith(".") else None), cls)


def estimate_bytes(impl: str, sim: str, num_envs: int, state_factor: int, params=None) -> int:
    """The memory N environments of ``impl`` for ``sim`` need (its class's ``estimate_bytes``),
    computed without importing the implementation's module where ``footprint`` has its class's
    formula: a request too large is then refused before torch or jax is imported."""
    factory = spec(check_impl(impl)).factory_for(sim)
    formula = footprint.BY_FACTORY.get(factory)
    if formula is None:
        return implementation_class(impl, sim).estimate_bytes(num_envs, state_factor, params)
    return formula(num_envs, state_factor, params)


def make_from(settings: EnvSettings):
    """The environments ``settings`` describes (an implementation; peers: ``studylib.harness.peers``)."""
    if settings.is_peer:
        raise ConfigError(f"{settings.impl!r} is a peer library's CartPole; use studylib.harness.peers.make_peer")
    return implementation_class(settings.impl, settings.sim)(settings)


def make(impl: str, num_envs: int, *, seed: int = 0, device=None, state_factor: int = 1,
         compute_factor: int = 1, policy_seed: int = 0, params=None,
         arrays: str = "numpy", sim: str = "cartpole"):
    """Create ``num_envs`` environments of implementation ``impl`` (CartPole-v1 unless ``sim`` says).

    ``arrays``: "numpy" (the default: numpy arrays on the host) or "native" (the implementation's
    own arrays on its device, no host copy: torch tensors for torch, torch-compile, cpp, fused and
    cuda, jax arrays for jax; not gym). ``sim``: the simulator (``studylib.sims``), one the
    implementation's record names; ``params``: its constants (None: its reference ones, e.g.
    CartPole-v1's; ``ChainParams(links=8)`` for an 8-link chain). See ``VectorCartPole``.
    """
    check_impl(impl)
    return make_from(EnvSettings(impl, num_envs, state_factor=state_factor, compute_factor=compute_factor,
                                 seed=seed, device=device, policy_seed=policy_seed, params=params, arrays=arrays,
                                 sim=sim))
