"""One frozen record per simulator (``SimSpec``): what it is, read by every layer instead of its name.

A simulator is its record plus its dynamics: the array formulation in Python (numpy, float64: the
reference every implementation matches, shared by torch and jax through an ``xp`` argument), one
C/CUDA header shared by the CPU build, the CUDA kernel and the fused kernel, and the reference
engine its implementations are checked against transition for transition. The record says what
the rest of the study needs without importing any of that: state and observation sizes, actions,
reward and termination, the knobs it takes, where its dynamics are, and the work of one step
(flops, transcendentals, bytes), from which the cost model prices it before anything is measured.
Core layer: no framework is imported here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import ConfigError

KNOBS = ("state_factor", "compute_factor")  # the paper's S and C (§4.2), where a simulator takes them
LANGUAGES = ("python", "c")  # python: a module of array dynamics; c: a header under cuda/ (CPU and CUDA builds)


@dataclass(frozen=True)
class SimSpec:
    """What one simulator is (checked once, here)."""

    name: str  # the name the settings, the command line (--sim) and the data rows use
    title: str  # as the book names it
    state_size: int  # floats of one instance's state (before the state factor S)
    observation_size: int  # floats of an observation
    num_actions: int  # a discrete action space of this many actions (0 for a continuous one)
    params_type: type  # the frozen dataclass of its physical constants (EnvSettings.params)
    default_params: object  # its reference constants (an instance of params_type)
    reward: str  # the reward, as its reference states it
    termination: str  # when an episode ends (and its truncation)
    reference: str  # the engine every implementation is checked against
    dynamics: dict  # LANGUAGES -> where its dynamics are ("python": module, "c": header under cuda/)
    knobs: tuple  # which of KNOBS it takes
    physics_flops: Callable[[int], int]  # flops of one step at compute factor C (transcendentals apart)
    transcendentals: Callable[[int], int]  # sin/cos/... of one step at compute factor C
    unfused_bytes: Callable[[int], int]  # bytes one step moves when its state is not kept in cache, at S
    policies: tuple = ("mlp", "none")  # what its implementations run between steps ("none": hashed inputs)
    # The columns that tell one of its parameter sets from another in a data row (e.g. the chain's
    # {"links": 8}); a row's key ends with them, so rows of two sizes never stand for each other.
    variant: Callable[[object], dict] = lambda params: {}
    # ... and back: the parameters of a variant's columns (a row's, or the command line's --links)
    params_of: Callable[[dict], object] = lambda columns: None

    def __post_init__(self):
        if not self.name or not isinstance(self.name, str):
            raise ConfigError(f"a simulator's name must be a non-empty string, got {self.name!r}")
        for what in ("state_size", "observation_size"):
            if not isinstance(getattr(self, what), int) or getattr(self, what) < 1:
                raise ConfigError(f"{self.name}: {what} must be a positive integer, got {getattr(self, what)!r}")
        if not isinstance(self.default_params, self.params_type):
            raise ConfigError(f"{self.name}: default_params must be a {self.params_type.__name__}")
        if not set(self.dynamics) <= set(LANGUAGES) or "python" not in self.dynamics:
            raise ConfigError(f"{self.name}: dynamics must name its python module (and may name a c header), "
                              f"got {sorted(self.dynamics)}")
        if not self.policies or not set(self.policies) <= {"mlp", "none"}:
            raise ConfigError(f"{self.name}: policies must be among mlp, none, got {self.policies!r}")
        if not set(self.knobs) <= set(KNOBS):
            raise ConfigError(f"{self.name}: knobs must be among {', '.join(KNOBS)}, got {self.knobs!r}")

    @property
    def variant_keys(self) -> tuple[str, ...]:
        """The row columns of ``variant`` (those of its reference parameters)."""
        return tuple(self.variant(self.default_params))
