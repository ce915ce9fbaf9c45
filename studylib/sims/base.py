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
    # The work of one environment step, of its parameters (an instance of params_type: the chain's
    # grows with n) and a knob: nothing is priced by a shim of fixed size.
    physics_flops: Callable[[object, int], int]  # flops at compute factor C (transcendentals apart)
    transcendentals: Callable[[object, int], int]  # sin/cos/sqrt/... at compute factor C
    unfused_bytes: Callable[[object, int], int]  # bytes moved when its state is not kept in cache, at S
    policies: tuple = ("mlp", "none")  # what its implementations run between steps ("none": hashed inputs)
    # The columns that tell one of its parameter sets from another in a data row (e.g. the chain's
    # {"links": 8}); a row's key ends with them, so rows of two sizes never stand for each other.
    variant: Callable[[object], dict] = lambda params: {}
    # ... and back: the parameters of a variant's columns (a row's, or the command line's --links)
    params_of: Callable[[dict], object] = lambda columns: None
    # (state floats, observation floats) of one instance with these parameters (None: the fixed
    # state_size and observation_size above; the chain's grow with n)
    sizes_of: Callable[[object], tuple[int, int]] | None = None
    # the flags the command line adds for the variant's columns: (column, help) each (the chain's --links)
    variant_flags: tuple = ()
    # Its episode rules in array form (numpy, torch, jax.numpy): a ``studylib.sims.rules.EpisodeRules``
    # or where one is ("module:NAME", imported on first use), which the generic array
    # implementations (torch_env.TorchEnv, jax_env.JaxEnv, torch_compile_env.TorchCompileEnv) run
    # (the recipe in studylib/sims/__init__.py). None: its implementations are classes of their own
    # (CartPole's, whose S and C knobs reshape the step).
    episode: object = None
    # The MuJoCo model its ``gym`` row steps, of its parameters: (its MJCF, mj_steps per environment
    # step). None: its gym row steps Python (CartPole's gymnasium CartPoleEnv). The cost model
    # (version 2) prices such a row with MuJoCo's own timer of that model's mj_step.
    mujoco_mjcf: Callable[[object], tuple[str, int]] | None = None

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

    def episode_rules(self):
        """Its ``EpisodeRules`` (``episode``, imported on first use where it names a module)."""
        if self.episode is None:
            raise ConfigError(f"simulator {self.name!r} has no array-form episode rules")
        if not isinstance(self.episode, str):
            return self.episode
        from importlib import import_module

        module, name = self.episode.split(":")
        return getattr(import_module(module), name)

    @property
    def continuous(self) -> bool:
        """Its actions are floats in Box(-1, 1) (one control), not one of ``num_actions`` choices."""
        return self.num_actions == 0

    def sizes(self, params) -> tuple[int, int]:
        """(state floats, observation floats) of one instance with ``params`` (S = 1)."""
        return (self.state_size, self.observation_size) if self.sizes_of is None else self.sizes_of(params)

    def policy_sizes(self, params, hidden: int = 64) -> tuple[int, int, int, int]:
        """The policy MLP's layer widths: observation -> 64 -> 64 -> the logits of each discrete
        action, or the mean of the one continuous control."""
        return (self.sizes(params)[1], hidden, hidden, 1 if self.continuous else self.num_actions)

    @property
    def variant_keys(self) -> tuple[str, ...]:
        """The row columns of ``variant`` (those of its reference parameters)."""
        return tuple(self.variant(self.default_params))
