"""The study's settings, each a frozen dataclass checked once, where it is made.

``EnvSettings`` holds what makes a set of environments (the paper's knobs N, S, C and the rest);
``MeasurePoint`` adds what one throughput measurement needs (steps per call K, the policy, the
timing budget). The CLI, the harness, the book and the tests build these objects; nothing below
them checks a value again (cleanrl's ``Args`` and gymnax's ``EnvParams`` are the models).

    s = EnvSettings("cpp", 4096, state_factor=8)            # ConfigError here if anything is off
    point = MeasurePoint(s, steps=1000, policy="none")
    point.key()                                             # the identity of a measured point

The names of the peers live here and the implementations' records in ``studylib.implspec`` (the
core layer), so that a setting can be checked without importing any implementation;
``studylib.envs.registry`` maps them to classes.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, replace

from . import sims
from .errors import ConfigError
from .implspec import IMPLEMENTATIONS, spec

PEERS = ("gymnasium-vector", "gymnax", "envpool")  # other libraries' CartPoles (simulation only)
POLICIES = ("mlp", "none")  # "none": hashed actions inside the simulation (paper Fig 8/9)
DEVICES = (None, "cpu", "cuda")  # None: the implementation's default
# What reset/step return and take: numpy arrays on the host, or the implementation's own arrays
# on its device (torch tensors; jax arrays for jax), see studylib/arrays.py.
ARRAYS = ("numpy", "native")
MAX_SEED = 2**32 - 1
# What the state factor S means in a measured row: the paper's (a row of 4*S floats, the CartPole
# and 4*(S-1) carried floats, studylib.sims.cartpole). Rows measured with S > 1 under an earlier
# meaning (S independent CartPoles) have no such column, so their keys differ and no sweep reads
# them as today's S; at S = 1 both meanings are CartPole-v1, so those rows stay valid.
STATE_LAYOUT = "cartpole+carried"


def positive_int(name: str, value) -> int:
    """Accept Python/numpy integers >= 1 (not bools, not floats); raise ConfigError otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigError(f"{name} must be a positive integer, got {value!r} ({type(value).__name__})")
    if value < 1:
        raise ConfigError(f"{name} must be a positive integer, got {value}")
    return int(value)


def check_seed(seed, name: str = "seed") -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed <= MAX_SEED:
        raise ConfigError(f"{name} must be an integer in [0, 2**32 - 1], got {seed!r}")
    return int(seed)


def check_policy(policy) -> str:
    if policy not in POLICIES:
        raise ConfigError(f"unknown policy {policy!r}; valid: {', '.join(POLICIES)}")
    return policy


def check_impl(impl, *, peers: bool = False) -> str:
    if impl in IMPLEMENTATIONS or (peers and impl in PEERS):
        return impl
    valid = ", ".join(IMPLEMENTATIONS)
    raise ConfigError(f"unknown implementation {impl!r}; valid: {valid}" + (f" (peers: {', '.join(PEERS)})" if peers else ""))


def check_sim(name, impl: str) -> str:
    """A registered simulator (studylib.sims) that ``impl`` implements (a peer: CartPole only)."""
    record = sims.sim(name)
    implemented = [s for s in sims.names() if spec(impl).implements(s)] if impl in IMPLEMENTATIONS else [sims.DEFAULT]
    if record.name not in implemented:
        raise ConfigError(f"{impl!r} does not implement simulator {record.name!r}; it implements "
                          f"{', '.join(implemented)}")
    return record.name


def check_device(device) -> str | None:
    """None, 'cpu' or 'cuda' ('cuda:0' and 'gpu' are read as 'cuda')."""
    if device in ("gpu", "cuda:0"):
        return "cuda"
    if device not in DEVICES:
        raise ConfigError(f"unknown device {device!r}; valid: cpu, cuda (or None for the implementation's default)")
    return device


def check_arrays(arrays, impl: str) -> str:
    if arrays not in ARRAYS:
        raise ConfigError(f"unknown arrays {arrays!r}; valid: {', '.join(map(repr, ARRAYS))}")
    if arrays == "native" and impl in IMPLEMENTATIONS and not spec(impl).native_arrays:
        raise ConfigError(f"arrays='native' needs device arrays; {impl!r} steps Python objects whose arrays "
                          "are numpy: use arrays='numpy'")
    if arrays == "native" and impl in PEERS:
        raise ConfigError(f"arrays='native' is for studylib's implementations; peer {impl!r} is measured as it ships")
    return arrays


def check_min_seconds(min_seconds) -> float:
    if isinstance(min_seconds, bool) or not isinstance(min_seconds, numbers.Real) \
            or not math.isfinite(min_seconds) or min_seconds <= 0:
        raise ConfigError(f"min_seconds must be a positive number, got {min_seconds!r}")
    return float(min_seconds)


@dataclass(frozen=True)
class EnvSettings:
    """N environments of one implementation: the paper's knobs N, S and C (studylib.sims.cartpole)."""

    impl: str  # one of IMPLEMENTATIONS (or PEERS, for the harness)
    num_envs: int  # N
    state_factor: int = 1  # S: state rows of 4*S floats, the CartPole and 4*(S-1) carried (sims/cartpole.py)
    compute_factor: int = 1  # C: Euler sub-steps of tau/C per step (sims/cartpole.py)
    seed: int = 0  # episode 0 of every env draws its reset state from this
    device: str | None = None  # None: the implementation's default ('cuda' where it can and one exists)
    policy_seed: int = 0  # the MLP's weights (policy.mlp_weights)
    params: object = None  # the simulator's constants (its record's params_type); None: its reference ones
    arrays: str = "numpy"  # one of ARRAYS: what reset/step/final_obs/restart return and take
    sim: str = sims.DEFAULT  # the simulator (studylib.sims): its record says what it is and takes

    def __post_init__(self):
        fix = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731 (frozen)
        fix("impl", check_impl(self.impl, peers=True))
        fix("num_envs", positive_int("num_envs", self.num_envs))
        fix("state_factor", positive_int("state_factor", self.state_factor))
        fix("compute_factor", positive_int("compute_factor", self.compute_factor))
        fix("seed", check_seed(self.seed))
        fix("device", check_device(self.device))
        fix("policy_seed", check_seed(self.policy_seed, "policy_seed"))
        fix("sim", check_sim(self.sim, self.impl))
        record = sims.sim(self.sim)
        for knob in sims.KNOBS:
            if knob not in record.knobs and getattr(self, knob) != 1:
                has = f"its knobs: {', '.join(record.knobs)}" if record.knobs else "it has neither S nor C"
                raise ConfigError(f"simulator {record.name!r} takes no {knob} ({has})")
        params = record.default_params if self.params is None else self.params
        if not isinstance(params, record.params_type):
            raise ConfigError(f"params must be a {record.params_type.__name__}, got {type(params).__name__}")
        fix("params", replace(params, max_episode_steps=positive_int("max_episode_steps", params.max_episode_steps)))
        fix("arrays", check_arrays(self.arrays, self.impl))
        if self.impl in PEERS and (self.state_factor != 1 or self.compute_factor != 1 or self.device == "cuda"):
            raise ConfigError(f"peer {self.impl!r} is measured as it ships: S=1, C=1, on the CPU")

    @property
    def is_peer(self) -> bool:
        return self.impl in PEERS

    def replace(self, **changes) -> "EnvSettings":
        """A copy with some fields changed (checked again, as any new settings)."""
        return replace(self, **changes)


@dataclass(frozen=True)
class MeasurePoint:
    """One throughput measurement: ``env.rollout(steps, policy)`` timed ``repeats`` times, each
    timed region at least ``min_seconds`` long (studylib.harness.measure)."""

    env: EnvSettings
    steps: int  # K: steps per rollout call
    policy: str = "mlp"  # "mlp" (inference in the loop) or "none" (simulation only)
    repeats: int = 5  # timed regions (the median is reported)
    min_seconds: float = 0.2  # minimum length of one timed region

    def __post_init__(self):
        fix = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731 (frozen)
        if not isinstance(self.env, EnvSettings):
            raise ConfigError(f"env must be an EnvSettings, got {type(self.env).__name__}")
        fix("steps", positive_int("steps", self.steps))
        fix("policy", check_policy(self.policy))
        fix("repeats", positive_int("repeats", self.repeats))
        fix("min_seconds", check_min_seconds(self.min_seconds))
        if self.env.is_peer and self.policy != "none":
            raise ConfigError(f"peer {self.env.impl!r} is measured as it ships: simulation only (policy none)")
        record = sims.sim(self.env.sim)
        if self.policy not in record.policies:
            raise ConfigError(f"simulator {record.name!r} runs policy {' or '.join(record.policies)} only, "
                              f"got {self.policy!r}")

    @classmethod
    def of(cls, impl, num_envs, steps, *, state_factor=1, compute_factor=1, policy="mlp", device=None,
           seed=0, repeats=5, min_seconds=0.2, sim=sims.DEFAULT, params=None) -> "MeasurePoint":
        """A point from flat values (the columns of a data file's row); ``params``: the simulator's
        constants (None: its reference ones)."""
        env = EnvSettings(impl, num_envs, state_factor=state_factor, compute_factor=compute_factor,
                          seed=seed, device=device, sim=sim, params=params)
        return cls(env, steps, policy=policy, repeats=repeats, min_seconds=min_seconds)

    def flat(self) -> dict:
        """The point's parameters as the flat columns of a data row (``device`` as requested)."""
        e = self.env
        return {"impl": e.impl, "num_envs": e.num_envs, "steps": self.steps, "state_factor": e.state_factor,
                "compute_factor": e.compute_factor, "policy": self.policy, "device": e.device,
                "repeats": self.repeats, "min_seconds": self.min_seconds, "seed": e.seed,
                "state_layout": STATE_LAYOUT, "sim": e.sim, **sims.sim(e.sim).variant(e.params)}

    def key(self) -> tuple:
        """Identity of a measured point: a resumed sweep skips a point whose key is saved."""
        return point_key(self.flat())

    def describe(self) -> str:
        e = self.env
        variant = "".join(f" {k}={v}" for k, v in sims.sim(e.sim).variant(e.params).items())
        return ((f"{e.sim}{variant} " if e.sim != sims.DEFAULT else "")
                + f"{e.impl} N={e.num_envs} K={self.steps} S={e.state_factor} C={e.compute_factor} "
                f"policy={self.policy} device={e.device or 'default'}")


POINT_KEYS = ("impl", "num_envs", "steps", "state_factor", "compute_factor", "policy", "device",
              "repeats", "min_seconds", "seed")


def point_key(row: dict) -> tuple:
    """The key of a saved row (its ``device_requested`` is the device that was asked for). With
    S > 1 the key ends with the row's ``state_layout`` (``STATE_LAYOUT``; None in rows measured
    before it), so a row of an earlier meaning of S never stands for a point of today's; a row of
    another simulator than CartPole ends with its ``sim`` and its variant's columns (the chain's links)."""
    values = []
    for k in POINT_KEYS:
        v = row.get("device_requested", row.get("device")) if k == "device" else row.get(k)
        values.append(float(v) if k == "min_seconds" and v is not None else v)
    if row.get("state_factor", 1) != 1:
        values.append(row.get("state_layout"))
    if row.get("sim", sims.DEFAULT) != sims.DEFAULT:  # a CartPole row (or one saved before rows named it) has no sim
        values.append(("sim", row["sim"], *((k, row.get(k)) for k in sorted(sims.sim(row["sim"]).variant_keys))))
    return tuple(values)


def as_dict(settings) -> dict:
    return asdict(settings)
