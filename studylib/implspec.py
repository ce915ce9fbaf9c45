"""One frozen record per implementation: what it can do, read by every layer instead of its name.

    from studylib.implspec import spec
    spec("cpp").devices          # ('cpu',)
    spec("fused").native_library  # 'fused_cpu'

The devices, builds, profiler, roofline, the book's order, labels and colours, and which chapters
run an implementation all read these records (``studylib.envs.registry`` maps a record to its class).
Adding an implementation is one ``register(ImplSpec(...))``: it then appears in
``IMPLEMENTATIONS``, the command line, the sweeps and the charts. Core layer: no framework is
imported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .errors import ConfigError
from .records import Records

FAMILIES = ("python", "kernel", "torch", "xla")  # how a step is executed (see ImplSpec.family)
# How one call of K steps reaches the hardware, as the cost model prices it (ImplSpec.dispatch):
#   python-loop  a Python call per environment per step (gymnasium's objects), the policy batched
#   eager        every framework operation a Python call, one after another (PyTorch eager)
#   compiled     one call of a compiled program runs all K steps (XLA's lax.scan)
#   native       one native call: K steps in one kernel for the policies the kernel runs
#                (fused_policies), else one call per step with the policy between steps
DISPATCHES = ("python-loop", "eager", "compiled", "native")
GPU_PROBES = ("torch", "jax", "cupy")  # the framework asked whether a GPU works
PROFILERS = ("torch", "jax")  # harness.profiler's two ways of counting


@dataclass(frozen=True)
class ImplSpec:
    """What one implementation is and can do (checked once, here)."""

    name: str
    factory: str  # "module:Class" of its VectorCartPole subclass; a module starting with "." is in studylib
    family: str  # "python" (gymnasium objects), "kernel" (cuda/*.cu, CPU or GPU build), "torch", "xla"
    devices: tuple[str, ...]  # in order of preference: the default is the first one that works here
    gpu_probe: str | None  # the framework asked whether "cuda" works here (None: CPU only)
    label: str  # its name in the book's tables and legends
    color: str  # its colour in every chart
    order: int  # its place in the book's tables and legends (ascending)
    in_paper: bool  # one of the five implementations Gleeson et al. (2022) measure
    native_library: str | None = None  # the host C++ library (studylib.native) it loads on the CPU;
    # built on first use, and that build is reported as ``compile_s``, apart from ``setup_s``
    profiler: str = "torch"  # how harness.profiler counts its calls and kernels: "torch" or "jax"
    # Policies for which one call of K steps runs as one kernel over blocks of environments held in
    # cache (the roofline's memory ceiling then does not apply at K > 1).
    fused_policies: tuple[str, ...] = ()
    samples_in_kernel: bool = False  # ``collect`` samples the policy's actions inside its kernel
    native_arrays: bool = True  # arrays="native" hands out device arrays (False: numpy already)
    dispatch: str | None = None  # how a call reaches the hardware (DISPATCHES), as harness.model.costmodel prices
    # it; None: the cost model does not price it (its calls are counted for no dispatch it knows)
    max_envs: int | None = None  # the largest N the study measures or projects it at (None: no limit)
    sims: tuple[str, ...] = ("cartpole",)  # the simulators (studylib.sims) it implements by name
    # The class of each simulator it implements with a class other than ``factory``'s: (sim,
    # "module:Class") pairs (a sibling of the same shape, in the same implementation module: e.g.
    # gym_env's GymChain beside GymCartPole).
    sim_factories: tuple[tuple[str, str], ...] = ()
    # "module:Class" of its generic class, which runs ANY simulator whose record carries array-form
    # episode rules (``SimSpec.episode``: the chain's, a new simulator's) with no code of its own
    # (torch_env.TorchEnv, jax_env.JaxEnv, torch_compile_env.TorchCompileEnv); None: only ``sims``.
    rules_factory: str | None = None

    def __post_init__(self):
        if not self.name or not isinstance(self.name, str):
            raise ConfigError(f"an implementation's name must be a non-empty string, got {self.name!r}")
        if ":" not in self.factory:
            raise ConfigError(f"{self.name}: factory must read 'module:Class', got {self.factory!r}")
        if self.family not in FAMILIES:
            raise ConfigError(f"{self.name}: family must be one of {', '.join(FAMILIES)}, got {self.family!r}")
        if not self.devices or not set(self.devices) <= {"cpu", "cuda"}:
            raise ConfigError(f"{self.name}: devices must be 'cpu' and/or 'cuda', got {self.devices!r}")
        if ("cuda" in self.devices) != (self.gpu_probe is not None) or \
                (self.gpu_probe is not None and self.gpu_probe not in GPU_PROBES):
            raise ConfigError(f"{self.name}: a GPU implementation names its gpu_probe ({', '.join(GPU_PROBES)}), "
                              f"a CPU-only one none; got {self.gpu_probe!r} for devices {self.devices!r}")
        if self.profiler not in PROFILERS:
            raise ConfigError(f"{self.name}: profiler must be one of {', '.join(PROFILERS)}, got {self.profiler!r}")
        if self.dispatch is not None and self.dispatch not in DISPATCHES:
            raise ConfigError(f"{self.name}: dispatch must be one of {', '.join(DISPATCHES)}, got {self.dispatch!r}")
        if any(":" not in f or sim not in self.sims for sim, f in self.sim_factories):
            raise ConfigError(f"{self.name}: sim_factories must read ((sim, 'module:Class'), ...) for sims it "
                              f"implements ({', '.join(self.sims)})")
        if self.max_envs is not None and (not isinstance(self.max_envs, int) or self.max_envs < 1):
            raise ConfigError(f"{self.name}: max_envs must be a positive integer or None, got {self.max_envs!r}")

    def implements(self, sim: str) -> bool:
        """Whether it runs registered simulator ``sim``: one of ``sims``, or any simulator with
        array-form episode rules where it has a ``rules_factory``."""
        from . import sims

        return sim in self.sims or (self.rules_factory is not None and sims.sim(sim).episode is not None)

    def factory_for(self, sim: str) -> str:
        """The "module:Class" of its class for simulator ``sim`` (one it ``implements``)."""
        if sim in dict(self.sim_factories):
            return dict(self.sim_factories)[sim]
        return self.factory if sim in self.sims or self.rules_factory is None else self.rules_factory

    @property
    def gpu_only(self) -> bool:
        return self.devices == ("cuda",)

    @property
    def cpu_only(self) -> bool:
        return self.devices == ("cpu",)


_SPECS = Records("implementation")
register = _SPECS.register  # add an implementation (its name must be new); it joins IMPLEMENTATIONS at once
unregister = _SPECS.unregister


def spec(name: str) -> ImplSpec:
    """The record of implementation ``name`` (ConfigError for an unknown name)."""
    return _SPECS.get_record(name)


def specs() -> list[ImplSpec]:
    """Every record, in registration order."""
    return list(_SPECS.values())


def book_order(names=None) -> list[str]:
    """``names`` (default: every implementation) that are implementations, in the book's order."""
    names = list(_SPECS) if names is None else [n for n in names if n in _SPECS]
    return sorted(names, key=lambda n: _SPECS[n].order)


class _Names(Sequence):
    """The registered names, read live (a tuple's equality and repr), so that a registration made
    after ``from studylib.settings import IMPLEMENTATIONS`` is seen there too."""

    def __getitem__(self, i):
        return tuple(_SPECS)[i]

    def __len__(self):
        return len(_SPECS)

    def __contains__(self, name):
        return name in _SPECS

    def __eq__(self, other):
        return tuple(self) == (tuple(other) if isinstance(other, (tuple, list, _Names)) else other)

    __hash__ = None

    def __repr__(self):
        return repr(tuple(self))


IMPLEMENTATIONS = _Names()

CHAIN_TOO = ("cartpole", "chain")  # the n-link chain (studylib.sims.chain) beside CartPole

for _record in (
    # gym: Python objects, one call per environment-step; past 2^16 environments a point takes minutes
    ImplSpec("gym", ".gym_env:GymCartPole", "python", ("cuda", "cpu"), "torch", label="gym", color="#7f7f7f",
             order=0, in_paper=True, native_arrays=False, dispatch="python-loop", max_envs=2**16,
             sims=CHAIN_TOO, sim_factories=(("chain", ".gym_env:GymChain"),)),
    ImplSpec("cpp", ".cpp_env:CppCartPole", "kernel", ("cpu",), None, label="cpp", color="#d62728", order=1,
             in_paper=True, native_library="cartpole_cpu", fused_policies=("none",), dispatch="native",
            sims=CHAIN_TOO, sim_factories=(("chain", ".cpp_env:CppChain"),)),
    ImplSpec("torch", ".torch_env:TorchCartPole", "torch", ("cuda", "cpu"), "torch", label="torch",
             color="#ff7f0e", order=2, in_paper=True, dispatch="eager", rules_factory=".torch_env:TorchEnv"),
    ImplSpec("jax", ".jax_env:JaxCartPole", "xla", ("cuda", "cpu"), "jax", label="jax", color="#1f77b4", order=3,
             in_paper=True, profiler="jax", dispatch="compiled", rules_factory=".jax_env:JaxEnv"),
    ImplSpec("cuda", ".cuda_env:CudaCartPole", "kernel", ("cuda",), "cupy", label="cuda", color="#2ca02c",
             order=4, in_paper=True, fused_policies=("none",), dispatch="native",
             sims=CHAIN_TOO, sim_factories=(("chain", ".cuda_env:CudaChain"),)),
    ImplSpec("torch-compile", ".torch_compile_env:TorchCompileCartPole", "torch", ("cuda", "cpu"), "torch",
             label="torch-compile", color="#9467bd", order=5, in_paper=False,
             rules_factory=".torch_compile_env:TorchCompileEnv"),
    ImplSpec("fused", ".fused_env:FusedCartPole", "kernel", ("cuda", "cpu"), "cupy", label="fused",
             color="#8c564b", order=6, in_paper=False, native_library="fused_cpu",
             fused_policies=("none", "mlp"), samples_in_kernel=True, dispatch="native",
             sims=CHAIN_TOO, sim_factories=(("chain", ".fused_env:FusedChain"),)),
):
    register(_record)
